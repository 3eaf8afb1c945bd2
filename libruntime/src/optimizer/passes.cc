// The pass list, in the order it runs. Each transform is a function of its own (passes.h).
#include <map>
#include <set>

#include <fmt/format.h>

#include "onnx_light/runtime/error.h"
#include "onnx_light/runtime/graph_optimizer.h"
#include "optimizer/passes.h"

namespace onnx_light::runtime {

namespace {

struct Pass {
  const char* name;
  OptimizationLevel level;  // the lowest level that runs it
  int64_t (*run)(optimizer::GraphEdit&);
  bool needs_shapes;  // re-infer shapes first (after passes that made shapes known)
};

constexpr Pass kPasses[] = {
    {"constant_folding", OptimizationLevel::basic, optimizer::fold_constants, true},
    {"identity_elimination", OptimizationLevel::basic, optimizer::eliminate_identities, true},
    {"dead_node_elimination", OptimizationLevel::basic, optimizer::eliminate_dead_nodes, false},
    {"conv_bn_folding", OptimizationLevel::all, optimizer::fold_conv_batch_norm, false},
    {"conv_mul_add_folding", OptimizationLevel::all, optimizer::fold_conv_mul_add, false},
    {"gemm_bn_folding", OptimizationLevel::all, optimizer::fold_gemm_batch_norm, false},
    {"matmul_add_to_gemm", OptimizationLevel::all, optimizer::matmul_add_to_gemm, false},
    {"layer_norm_fusion", OptimizationLevel::all, optimizer::fuse_layer_norm, false},
    {"gelu_fusion", OptimizationLevel::all, optimizer::fuse_gelu, false},
    {"epilogue_fusion", OptimizationLevel::all, optimizer::fuse_epilogues, false},
    {"elementwise_chain_fusion", OptimizationLevel::all, optimizer::fuse_elementwise_chains, false},
    {"dead_node_cleanup", OptimizationLevel::all, optimizer::eliminate_dead_nodes, false},
};

// The input counts the pattern matchers rely on, for the operators they inspect.
bool arity_ok(const onnx::NodeProto& n) {
  if (!(n.domain().empty() || n.domain() == "ai.onnx")) return true;
  struct Arity {
    std::string_view op;
    int min_inputs, max_inputs;
  };
  static constexpr Arity kArities[] = {
      {"Add", 2, 2},         {"Sub", 2, 2},         {"Mul", 2, 2},       {"Div", 2, 2},       {"Pow", 2, 2},
      {"Relu", 1, 1},        {"Sigmoid", 1, 1},     {"Tanh", 1, 1},      {"Erf", 1, 1},       {"Sqrt", 1, 1},
      {"HardSigmoid", 1, 1}, {"HardSwish", 1, 1},   {"LeakyRelu", 1, 1}, {"Identity", 1, 1},  {"Clip", 1, 3},
      {"ReduceMean", 1, 2},  {"MatMul", 2, 2},      {"Gemm", 2, 3},      {"Conv", 2, 3},      {"Shape", 1, 1},
      {"BatchNormalization", 5, 5}, {"Dropout", 1, 3}, {"Cast", 1, 1},   {"Reshape", 2, 2},   {"Squeeze", 1, 2},
      {"Unsqueeze", 1, 2},   {"Flatten", 1, 1},
  };
  for (const auto& a : kArities)
    if (n.op_type() == a.op)
      return n.input_size() >= a.min_inputs && n.input_size() <= a.max_inputs && n.output_size() >= 1 &&
             !n.output(0).empty() && !n.input(0).empty();
  return true;
}

// The optimizer only rewrites graphs the session would accept as written: each value produced
// once, every read provided, no cycle, every operator implemented. Anything else is left to the
// session, which reports every problem of the graph as written (rather than of a rewritten one
// whose dead, broken nodes were dropped).
bool well_formed(const onnx::ModelProto& model, const KernelTable& table) {
  const auto& graph = model.graph();
  std::set<std::string> available;
  for (const auto& i : graph.input()) available.insert(i.name());
  for (const auto& i : graph.initializer()) available.insert(i.name());
  std::map<std::string, int> producer;
  for (int i = 0; i < graph.node_size(); ++i) {
    const auto& n = graph.node(i);
    const bool constant = n.op_type() == "Constant" && (n.domain().empty() || n.domain() == "ai.onnx");
    if (!constant && !table.implements(n.domain(), n.op_type())) return false;
    if (!arity_ok(n)) return false;
    bool imported = false;
    for (const auto& o : model.opset_import())
      if (o.domain() == n.domain() || ((o.domain().empty() || o.domain() == "ai.onnx") &&
                                       (n.domain().empty() || n.domain() == "ai.onnx")))
        imported = true;
    if (!imported) return false;
    for (const auto& out : n.output())
      if (!out.empty() && (available.contains(out) || !producer.emplace(out, i).second)) return false;
  }
  // Kahn's order over the nodes.
  std::vector<int> missing(static_cast<std::size_t>(graph.node_size()), 0);
  std::multimap<std::string, int> waiting;
  std::vector<int> ready;
  for (int i = 0; i < graph.node_size(); ++i) {
    for (const auto& in : graph.node(i).input()) {
      if (in.empty() || available.contains(in)) continue;
      if (!producer.contains(in)) return false;
      ++missing[static_cast<std::size_t>(i)];
      waiting.emplace(in, i);
    }
    if (missing[static_cast<std::size_t>(i)] == 0) ready.push_back(i);
  }
  std::size_t ordered = 0;
  while (!ready.empty()) {
    const int i = ready.back();
    ready.pop_back();
    ++ordered;
    for (const auto& out : graph.node(i).output()) {
      auto [begin, end] = waiting.equal_range(out);
      for (auto it = begin; it != end; ++it)
        if (--missing[static_cast<std::size_t>(it->second)] == 0) ready.push_back(it->second);
    }
  }
  if (ordered != static_cast<std::size_t>(graph.node_size())) return false;
  for (const auto& o : graph.output())
    if (!available.contains(o.name()) && !producer.contains(o.name())) return false;
  return true;
}

}  // namespace

std::string_view optimization_level_name(OptimizationLevel level) {
  switch (level) {
    case OptimizationLevel::none: return "none";
    case OptimizationLevel::basic: return "basic";
    case OptimizationLevel::all: return "all";
  }
  return "all";
}

OptimizationLevel parse_optimization_level(std::string_view name) {
  for (auto level : {OptimizationLevel::none, OptimizationLevel::basic, OptimizationLevel::all})
    if (optimization_level_name(level) == name) return level;
  throw InvalidValueError(fmt::format("optimization level '{}' is not one of none, basic, all", name));
}

Model optimize_model(const Model& model, OptimizationLevel level, const KernelTable& table,
                     OptimizationReport& report) {
  report = OptimizationReport{};
  report.level = level;
  report.nodes_before = report.nodes_after = model.graph().node_size();
  if (level == OptimizationLevel::none || !well_formed(model.proto(), table)) return model;
  onnx::ModelProto proto = model.proto();
  optimizer::GraphEdit g(proto, table, model.external_data());
  for (const Pass& pass : kPasses) {
    if (static_cast<int>(pass.level) > static_cast<int>(level)) continue;
    if (pass.needs_shapes) g.infer_shapes();
    TransformReport r;
    r.name = pass.name;
    r.nodes_before = g.node_count();
    g.index();
    r.applied = pass.run(g);
    g.compact();
    r.nodes_after = g.node_count();
    report.transforms.push_back(std::move(r));
  }
  g.drop_unused_initializers();
  report.nodes_after = g.node_count();
  return model.with_proto(std::move(proto));
}

}  // namespace onnx_light::runtime
