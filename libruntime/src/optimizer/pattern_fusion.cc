// all: decomposed LayerNormalization and GELU, as exporters write them, into one node each.
#include <cmath>

#include "kernels/epilogue.h"
#include "optimizer/passes.h"

namespace onnx_light::runtime::optimizer {

namespace {

using kernels::kFusedDomain;

bool near_pattern_constant(float a, double b) { return std::fabs(static_cast<double>(a) - b) <= 1e-5 * std::max(1.0, std::fabs(b)); }

// The node reading `value` as `op` with the other operand a constant scalar near `c`; -1 otherwise.
int scalar_op(GraphEdit& g, const std::string& value, std::string_view op, double c) {
  const int r = g.only_reader(value);
  if (r < 0 || !is_op(g.node(r), op)) return -1;
  const std::string other = other_input(g.node(r), value);
  if (other.empty() || ((op == "Div" || op == "Sub" || op == "Pow") && g.node(r).input(0) != value)) return -1;
  auto v = g.scalar(other);
  return v && near_pattern_constant(*v, c) ? r : -1;
}

// ReduceMean over exactly the last axis with keepdims; rank from the inferred shape of its input.
bool reduces_last_axis(GraphEdit& g, const onnx::NodeProto& n) {
  if (!is_op(n, "ReduceMean") || n.input_size() < 1 || n.output_size() != 1) return false;
  if (int_attribute(n, "keepdims", 1) != 1) return false;
  std::vector<int64_t> axes;
  if (const auto* a = find_attribute(n, "axes")) {
    axes.assign(a->ints().begin(), a->ints().end());
  } else if (n.input_size() > 1 && !n.input(1).empty()) {
    auto t = g.constant(n.input(1));
    if (!t || t->element_type() != ElementType::int64) return false;
    axes.assign(t->data<int64_t>(), t->data<int64_t>() + t->element_count());
  }
  if (axes.size() != 1) return false;
  if (axes[0] == -1) return true;
  const ValueShape* s = g.shape(n.input(0));
  return s != nullptr && s->has_shape && axes[0] == static_cast<int64_t>(s->dims.size()) - 1;
}

}  // namespace

int64_t fuse_layer_norm(GraphEdit& g) {
  const bool standard = g.opset() >= 17;
  if (!standard && !g.table().implements(kFusedDomain, "LayerNormalization")) return 0;
  int64_t fused = 0;
  for (int i = 0; i < g.node_count(); ++i) {
    if (g.removed(i)) continue;
    const onnx::NodeProto& mean = g.node(i);
    if (!reduces_last_axis(g, mean)) continue;
    const std::string x = mean.input(0);
    // D = X - mean, read by Pow(D, 2) and Div(D, sqrt(...)).
    const int sub = g.only_reader(mean.output(0));
    if (sub < 0 || !is_op(g.node(sub), "Sub") || g.node(sub).input(0) != x || g.node(sub).input(1) != mean.output(0)) continue;
    const std::string d = g.node(sub).output(0);
    const auto& d_readers = g.readers(d);
    if (d_readers.size() != 2 || g.is_graph_output(d)) continue;
    int pow = -1, div = -1;
    for (int r : d_readers) {
      if (is_op(g.node(r), "Pow") && g.node(r).input(0) == d) pow = r;
      if (is_op(g.node(r), "Div") && g.node(r).input(0) == d) div = r;
    }
    if (pow < 0 || div < 0 || !near_pattern_constant(g.scalar(g.node(pow).input(1)).value_or(0), 2.0)) continue;
    const int var = g.only_reader(g.node(pow).output(0));
    if (var < 0 || !reduces_last_axis(g, g.node(var))) continue;
    const int add_eps = g.only_reader(g.node(var).output(0));
    if (add_eps < 0 || !is_op(g.node(add_eps), "Add")) continue;
    auto eps = g.scalar(other_input(g.node(add_eps), g.node(var).output(0)));
    const int sqrt = g.only_reader(g.node(add_eps).output(0));
    if (!eps || sqrt < 0 || !is_op(g.node(sqrt), "Sqrt")) continue;
    if (g.only_reader(g.node(sqrt).output(0)) != div || g.node(div).input(1) != g.node(sqrt).output(0)) continue;
    // Then * gamma and optionally + beta, constant vectors over the last axis.
    const int mul = g.only_reader(g.node(div).output(0));
    if (mul < 0 || !is_op(g.node(mul), "Mul")) continue;
    const std::string gamma = other_input(g.node(mul), g.node(div).output(0));
    auto gamma_value = g.constant(gamma);
    if (!gamma_value || gamma_value->rank() != 1 || gamma_value->element_type() != ElementType::float32) continue;
    std::vector<int> nodes{i, sub, pow, var, add_eps, sqrt, div, mul};
    std::string out = g.node(mul).output(0), beta;
    if (const int add = g.only_reader(out); add >= 0 && is_op(g.node(add), "Add")) {
      const std::string b = other_input(g.node(add), out);
      auto beta_value = g.constant(b);
      if (beta_value && beta_value->rank() == 1 && beta_value->element_count() == gamma_value->element_count() &&
          beta_value->element_type() == ElementType::float32) {
        beta = b;
        nodes.push_back(add);
        out = g.node(add).output(0);
      }
    }
    // The last axis must be gamma's length. Exporters often compute the shape feeding this (Reshape
    // to Shape(x)-derived dims), so it is unknown here: then a gamma longer than 1 is enough, since
    // the only other length the decomposed graph accepts, 1 (broadcast), makes the fused kernel
    // reject the input with an error naming the node instead of returning different values.
    const ValueShape* xs = g.shape(x);
    const bool last_known = xs != nullptr && xs->has_shape && !xs->dims.empty() && xs->dims.back() >= 0;
    if (last_known ? xs->dims.back() != gamma_value->element_count() : gamma_value->element_count() < 2) continue;
    // The first node becomes LayerNormalization; the others go.
    auto& node = g.node(i);
    node.clear_attribute();
    node.clear_input();
    node.set_op_type("LayerNormalization");
    node.set_domain(standard ? "" : std::string(kFusedDomain));
    node.add_input(x);
    node.add_input(gamma);
    if (!beta.empty()) node.add_input(beta);
    node.set_output(0, out);
    auto* axis = node.add_attribute();
    axis->set_name("axis");
    axis->set_type(onnx::AttributeProto::INT);
    axis->set_i(-1);
    auto* epsilon = node.add_attribute();
    epsilon->set_name("epsilon");
    epsilon->set_type(onnx::AttributeProto::FLOAT);
    epsilon->set_f(*eps);
    for (std::size_t k = 1; k < nodes.size(); ++k) g.remove(nodes[k]);
    if (!standard) g.import_domain(std::string(kFusedDomain));
    g.index();
    ++fused;
  }
  return fused;
}

int64_t fuse_gelu(GraphEdit& g) {
  if (!g.table().implements(kFusedDomain, "Gelu")) return 0;
  int64_t fused = 0;
  for (int i = 0; i < g.node_count(); ++i) {
    if (g.removed(i)) continue;
    const onnx::NodeProto& erf = g.node(i);
    if (!is_op(erf, "Erf") || erf.input_size() != 1 || erf.output_size() != 1) continue;
    // Erf(x / sqrt(2)) or Erf(x * (1 / sqrt(2))).
    const int scale = g.producer(erf.input(0));
    if (scale < 0 || !g.sole_reader(erf.input(0), i)) continue;
    const auto& sn = g.node(scale);
    std::string x;
    if (is_op(sn, "Div") && sn.input_size() == 2 && near_pattern_constant(g.scalar(sn.input(1)).value_or(0), std::sqrt(2.0)))
      x = sn.input(0);
    else if (is_op(sn, "Mul") && sn.input_size() == 2) {
      for (int k = 0; k < 2; ++k)
        if (near_pattern_constant(g.scalar(sn.input(1 - k)).value_or(0), 1.0 / std::sqrt(2.0))) x = sn.input(k);
    }
    if (x.empty() || g.is_constant(x)) continue;
    const int one = scalar_op(g, erf.output(0), "Add", 1.0);
    if (one < 0) continue;
    const std::string e1 = g.node(one).output(0);
    const int m1 = g.only_reader(e1);
    if (m1 < 0 || !is_op(g.node(m1), "Mul")) continue;
    const std::string other = other_input(g.node(m1), e1);
    std::vector<int> nodes{i, scale, one, m1};
    std::string out;
    if (other == x) {
      // (x * (1 + erf)) * 0.5
      const int half = scalar_op(g, g.node(m1).output(0), "Mul", 0.5);
      if (half < 0) continue;
      nodes.push_back(half);
      out = g.node(half).output(0);
    } else if (const int h = g.producer(other); h >= 0 && is_op(g.node(h), "Mul") && g.sole_reader(other, m1) &&
                                               !other_input(g.node(h), x).empty() &&
                                               near_pattern_constant(g.scalar(other_input(g.node(h), x)).value_or(0), 0.5)) {
      // (x * 0.5) * (1 + erf)
      nodes.push_back(h);
      out = g.node(m1).output(0);
    } else if (near_pattern_constant(g.scalar(other).value_or(0), 0.5)) {
      // x * ((1 + erf) * 0.5)
      const int mx = g.only_reader(g.node(m1).output(0));
      if (mx < 0 || other_input(g.node(mx), g.node(m1).output(0)) != x || !is_op(g.node(mx), "Mul")) continue;
      nodes.push_back(mx);
      out = g.node(mx).output(0);
    } else {
      continue;
    }
    auto& node = g.node(i);
    node.set_op_type("Gelu");
    node.set_domain(std::string(kFusedDomain));
    node.set_input(0, x);
    node.set_output(0, out);
    for (std::size_t k = 1; k < nodes.size(); ++k) g.remove(nodes[k]);
    g.import_domain(std::string(kFusedDomain));
    g.index();
    ++fused;
  }
  return fused;
}

}  // namespace onnx_light::runtime::optimizer
