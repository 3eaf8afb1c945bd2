// basic: constant folding, identity elimination, dead-node elimination. All bit-exact: folded
// nodes are evaluated by the session's own kernels, removed nodes copied their input unchanged.
#include <algorithm>

#include "onnx_light/runtime/error.h"
#include "onnx_light/runtime/graph_optimizer.h"
#include "onnx_light/runtime/session.h"
#include "onnx_light/runtime/tensor_proto.h"
#include "subgraph.h"
#include "optimizer/passes.h"

namespace onnx_light::runtime::optimizer {

namespace {

// Folded results larger than this stay nodes: a constant that big costs more to hold than to compute.
constexpr int64_t kMaxFoldedElements = int64_t{1} << 22;

bool nondeterministic(const onnx::NodeProto& node) {
  for (std::string_view op : {"RandomNormal", "RandomUniform", "RandomNormalLike", "RandomUniformLike", "Multinomial",
                              "Bernoulli"})
    if (node.op_type() == op) return true;
  return false;
}

// Evaluates one node over constant inputs with the kernel table itself (a one-node session with
// no optimization), so a folded value has exactly the bits the unoptimized graph computes.
std::optional<std::vector<Tensor>> evaluate(GraphEdit& g, const onnx::NodeProto& node) {
  onnx::ModelProto m;
  m.set_ir_version(g.model().ir_version());
  *m.mutable_opset_import() = g.model().opset_import();
  auto* graph = m.mutable_graph();
  graph->set_name("constant_folding");
  *graph->add_node() = node;
  std::set<std::string> seen;
  int64_t input_bytes = 0;
  for (const auto& in : node.input()) {
    if (in.empty() || !seen.insert(in).second) continue;
    auto t = g.constant(in);
    if (!t) return std::nullopt;
    input_bytes += static_cast<int64_t>(t->byte_size());
    *graph->add_initializer() = tensor_to_proto(*t, in);
  }
  std::vector<std::string> names;
  for (const auto& out : node.output())
    if (!out.empty()) {
      graph->add_output()->set_name(out);
      names.push_back(out);
    }
  if (names.empty()) return std::nullopt;
  try {
    RuntimeSessionOptions options;
    options.parameters = RuntimeParameters(1);
    options.kernels = &g.table();
    options.optimization = OptimizationLevel::none;
    // Larger results are not kept (below), so none is computed: a ConstantOfShape asking for
    // terabytes is left to the session, whose memory limit names the node at run time.
    options.max_memory_bytes = input_bytes + static_cast<int64_t>(names.size()) * kMaxFoldedElements * 8 + (int64_t{1} << 20);
    RuntimeSession session(model_from_proto(std::move(m), "constant folding"), std::move(options));
    RuntimeContext context;
    session.run(context);
    std::vector<Tensor> results;
    for (const auto& name : names) {
      const Tensor& t = context.get(name);
      if (t.element_count() > kMaxFoldedElements) return std::nullopt;
      results.push_back(t);
    }
    return results;
  } catch (const Error&) {
    return std::nullopt;  // left to the session, which reports it with the graph's context
  }
}

// Shape of a value whose shape is fully known (start/end as opset 15).
std::optional<Tensor> static_shape_of(GraphEdit& g, const onnx::NodeProto& node) {
  if (node.input_size() != 1) return std::nullopt;
  const ValueShape* s = g.shape(node.input(0));
  if (s == nullptr || !s->is_static()) return std::nullopt;
  const auto rank = static_cast<int64_t>(s->dims.size());
  auto clamp = [rank](int64_t v) { return std::clamp(v < 0 ? v + rank : v, int64_t{0}, rank); };
  const int64_t start = clamp(int_attribute(node, "start", 0));
  const int64_t end = clamp(int_attribute(node, "end", rank));
  Tensor t(ElementType::int64, {std::max<int64_t>(0, end - start)});
  for (int64_t d = start; d < end; ++d) t.data<int64_t>()[d - start] = s->dims[static_cast<std::size_t>(d)];
  return t;
}

// Removes node i, which copies x to y: readers of y read x; when y is a graph output (whose name
// must stay), x's producer writes y instead, provided x is an ordinary intermediate.
bool bypass(GraphEdit& g, int i, const std::string& x, const std::string& y) {
  if (!g.is_graph_output(y)) {
    g.remove(i);
    g.index();
    g.replace_reads(y, x);
    return true;
  }
  const int p = g.producer(x);
  if (p < 0 || g.is_graph_output(x) || g.is_graph_input(x)) return false;
  g.remove(i);
  g.index();
  g.replace_reads(x, y);
  auto& producer = g.node(p);
  for (int k = 0; k < producer.output_size(); ++k)
    if (producer.output(k) == x) producer.set_output(k, y);
  g.index();
  return true;
}

}  // namespace

int64_t fold_constants(GraphEdit& g) {
  int64_t folded = 0;
  for (bool changed = true; changed;) {
    changed = false;
    for (int i = 0; i < g.node_count(); ++i) {
      if (g.removed(i)) continue;
      const onnx::NodeProto& node = g.node(i);
      // A control-flow node's graphs read outer values a one-node session would not have.
      if (!(node.domain().empty() || node.domain() == "ai.onnx") || nondeterministic(node) || has_subgraphs(node))
        continue;
      std::optional<std::vector<Tensor>> values;
      if (is_op(node, "Constant") && node.output_size() == 1) {
        // The common form (a `value` tensor) needs no evaluation; the others go through a session.
        if (auto t = g.constant(node.output(0))) values = std::vector<Tensor>{*t};
        else values = evaluate(g, node);
      } else if (is_op(node, "Shape") && !g.is_constant(node.input(0))) {
        if (auto t = static_shape_of(g, node)) values = std::vector<Tensor>{*t};
      } else {
        const bool all_constant = std::all_of(node.input().begin(), node.input().end(), [&](const std::string& in) {
          return in.empty() || g.is_constant(in);
        });
        if (!all_constant || (node.input_size() == 0 && !is_op(node, "Constant"))) continue;
        values = evaluate(g, node);
      }
      if (!values) continue;
      std::size_t k = 0;
      for (const auto& out : node.output())
        if (!out.empty()) g.add_initializer((*values)[k++], out);
      g.remove(i);
      ++folded;
      changed = true;
    }
    g.index();
  }
  g.drop_unused_initializers();
  return folded;
}

int64_t eliminate_identities(GraphEdit& g) {
  int64_t removed = 0;
  for (int i = 0; i < g.node_count(); ++i) {
    if (g.removed(i)) continue;
    const onnx::NodeProto& node = g.node(i);
    if (node.input_size() < 1 || node.output_size() < 1 || node.input(0).empty() || node.output(0).empty()) continue;
    const std::string x = node.input(0), y = node.output(0);
    bool no_op = false;
    if (is_op(node, "Identity")) {
      no_op = node.input_size() == 1;
    } else if (is_op(node, "Dropout")) {
      // Inference Dropout copies its input; the mask output must be unused, training_mode false.
      const bool mask_unused = node.output_size() < 2 || node.output(1).empty() ||
                               (g.readers(node.output(1)).empty() && !g.is_graph_output(node.output(1)));
      bool training = false;
      if (node.input_size() >= 3 && !node.input(2).empty()) {
        auto t = g.constant(node.input(2));
        training = !t || t->element_count() != 1 || t->element_type() != ElementType::boolean || *t->data<bool>();
      }
      no_op = mask_unused && !training;
    } else if (is_op(node, "Cast")) {
      const ValueShape* s = g.shape(x);
      no_op = s != nullptr && s->element_type != 0 && int_attribute(node, "to", -1) == s->element_type;
    } else if (is_op(node, "Reshape") || is_op(node, "Squeeze") || is_op(node, "Unsqueeze") || is_op(node, "Flatten")) {
      const ValueShape* in = g.shape(x);
      const ValueShape* out = g.shape(y);
      no_op = node.output_size() == 1 && in != nullptr && out != nullptr && in->is_static() && out->is_static() &&
              in->dims == out->dims;
    }
    if (no_op && bypass(g, i, x, y)) ++removed;
  }
  return removed;
}

int64_t eliminate_dead_nodes(GraphEdit& g) {
  int64_t removed = 0;
  for (bool changed = true; changed;) {
    changed = false;
    for (int i = 0; i < g.node_count(); ++i) {
      if (g.removed(i)) continue;
      const auto& outs = g.node(i).output();
      const bool dead = std::all_of(outs.begin(), outs.end(), [&](const std::string& out) {
        return out.empty() || (g.readers(out).empty() && !g.is_graph_output(out));
      });
      if (!dead) continue;
      g.remove(i);
      ++removed;
      changed = true;
    }
    g.index();
  }
  g.drop_unused_initializers();
  return removed;
}

}  // namespace onnx_light::runtime::optimizer
