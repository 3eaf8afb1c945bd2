// all: consecutive elementwise nodes on one shape into one com.onnx_light ElementwiseChain node
// (kernels/elementwise_chain.cc has the node contract), so a chain makes one pass over memory
// instead of one per node. Runs after the epilogue fusion: what Conv/Gemm/MatMul can absorb as they
// store is taken first; this catches what is left (an affine Mul/Add after an activation, x *
// Sigmoid(x) outside a Conv, scale/shift chains).
#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "kernels/epilogue.h"
#include "optimizer/passes.h"

namespace onnx_light::runtime::optimizer {

namespace {

using kernels::kFusedDomain;

struct Step {
  int node = -1;
  std::string op;
  std::string operand;  // binary steps: the other operand's value
  bool reversed = false;
  float alpha = 0.0f, beta = 0.0f;
};

// A binary step's other operand keeps the chain on `v`'s shape: one constant element of rank no
// higher than v's, or a float32 value of v's very shape.
bool operand_keeps_shape(GraphEdit& g, const std::string& operand, const std::string& v, const std::string& out) {
  if (!is_float32(g, operand)) return false;
  if (auto c = g.constant(operand); c && c->element_count() == 1) return shape_keeping_scalar(g, operand, v).has_value();
  const ValueShape *os = g.shape(operand), *vs = g.shape(v), *ys = g.shape(out);
  return os != nullptr && vs != nullptr && ys != nullptr && same_shape(*os, *vs) && same_shape(*ys, *vs);
}

// Node `n` as a chain step applied to `v`; nullopt when it is not one.
std::optional<Step> as_step(GraphEdit& g, int n, const std::string& v) {
  const onnx::NodeProto& node = g.node(n);
  if (node.output_size() != 1 || node.output(0).empty() || node.input_size() < 1 || !is_float32(g, node.output(0)))
    return std::nullopt;
  Step s;
  s.node = n;
  s.op = node.op_type();
  for (const char* op : {"Add", "Sub", "Mul", "Div"}) {
    if (!is_op(node, op)) continue;
    if (node.input_size() != 2) return std::nullopt;
    s.operand = other_input(node, v);
    if (s.operand.empty() || !operand_keeps_shape(g, s.operand, v, node.output(0))) return std::nullopt;
    s.reversed = node.input(1) == v;
    return s;
  }
  if (node.input_size() < 1 || node.input(0) != v) return std::nullopt;
  for (const char* op : {"Relu", "Sigmoid", "Tanh", "HardSwish", "Abs", "Neg", "Sqrt", "Exp"})
    if (is_op(node, op)) return node.input_size() == 1 ? std::optional<Step>(s) : std::nullopt;
  if (is_op(node, "LeakyRelu") && node.input_size() == 1) {
    s.alpha = float_attribute(node, "alpha", 0.01f);
    return s;
  }
  if (is_op(node, "HardSigmoid") && node.input_size() == 1) {
    s.alpha = float_attribute(node, "alpha", 0.2f);
    s.beta = float_attribute(node, "beta", 0.5f);
    return s;
  }
  if (is_op(node, "Clip")) {
    const auto bounds = clip_bounds(g, node);
    if (!bounds) return std::nullopt;
    s.alpha = bounds->first;
    s.beta = bounds->second;
    return s;
  }
  return std::nullopt;
}

// The chain's value entering node `n` when n can start a chain (the first input of n's shape).
std::optional<Step> first_step(GraphEdit& g, int n, std::string& x) {
  const onnx::NodeProto& node = g.node(n);
  for (int k = 0; k < std::min(node.input_size(), 2); ++k) {
    x = node.input(k);
    if (x.empty() || !is_float32(g, x)) continue;
    if (auto s = as_step(g, n, x)) return s;
  }
  return std::nullopt;
}

void add_attribute(onnx::NodeProto& node, const char* name, onnx::AttributeProto::AttributeType type) {
  auto* a = node.add_attribute();
  a->set_name(name);
  a->set_type(type);
}

}  // namespace

int64_t fuse_elementwise_chains(GraphEdit& g) {
  if (!g.table().implements(kFusedDomain, "ElementwiseChain")) return 0;
  int64_t fused = 0;
  std::vector<bool> taken(static_cast<std::size_t>(g.node_count()), false);
  for (int i = 0; i < g.node_count(); ++i) {
    if (g.removed(i) || taken[static_cast<std::size_t>(i)]) continue;
    std::string x;
    auto first = first_step(g, i, x);
    if (!first) continue;
    std::vector<Step> chain{*first};
    std::string value = g.node(i).output(0);
    for (int next = g.only_reader(value); next >= 0; next = g.only_reader(value)) {
      auto s = as_step(g, next, value);
      if (!s || taken[static_cast<std::size_t>(next)]) break;
      chain.push_back(*s);
      value = g.node(next).output(0);
    }
    if (chain.size() < 2) continue;
    // The fused node takes the last node's place: every operand is produced before it.
    onnx::NodeProto node;
    node.set_op_type("ElementwiseChain");
    node.set_domain(std::string(kFusedDomain));
    node.set_name(g.node(i).name());
    node.add_input(x);
    node.add_output(value);
    add_attribute(node, "ops", onnx::AttributeProto::STRINGS);
    add_attribute(node, "operands", onnx::AttributeProto::INTS);
    add_attribute(node, "reversed", onnx::AttributeProto::INTS);
    add_attribute(node, "params", onnx::AttributeProto::FLOATS);
    for (const Step& s : chain) {
      int operand = -1;
      if (!s.operand.empty()) {
        for (int k = 0; k < node.input_size() && operand < 0; ++k)
          if (node.input(k) == s.operand) operand = k;
        if (operand < 0) {
          operand = node.input_size();
          node.add_input(s.operand);
        }
      }
      node.mutable_attribute(0)->add_strings(s.op);
      node.mutable_attribute(1)->add_ints(operand);
      node.mutable_attribute(2)->add_ints(s.reversed ? 1 : 0);
      node.mutable_attribute(3)->add_floats(s.alpha);
      node.mutable_attribute(3)->add_floats(s.beta);
      taken[static_cast<std::size_t>(s.node)] = true;
    }
    const int last = chain.back().node;
    for (std::size_t k = 0; k + 1 < chain.size(); ++k) g.remove(chain[k].node);
    g.node(last) = std::move(node);
    g.import_domain(std::string(kFusedDomain));
    g.index();
    ++fused;
  }
  return fused;
}

}  // namespace onnx_light::runtime::optimizer
