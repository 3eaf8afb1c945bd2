// all: MatMul + Add into Gemm, and the epilogue fusion of Conv / Gemm / MatMul: a bias (MatMul),
// a residual Add of a same-shape value, then an activation, into FusedConv / FusedGemm /
// FusedMatMul of domain com.onnx_light (contract: kernels/epilogue.h):
//   Y = activation(op(X, W) + bias + Z)
#include <cmath>
#include <limits>

#include "kernels/epilogue.h"
#include "onnx_light/runtime/cpu_features.h"
#include "optimizer/passes.h"

namespace onnx_light::runtime::optimizer {

namespace {

using kernels::kFusedDomain;

bool near_activation_constant(float a, double b) { return std::fabs(static_cast<double>(a) - b) <= 1e-6 * std::max(1.0, std::fabs(b)); }

struct Activation {
  std::string name;            // epilogue.h activation name
  std::vector<float> params;
  std::vector<int> nodes;      // consumed
  std::string output;          // the value the fused node now writes
};

// Mul(a, b) with {a, b} == {x, y} in either order.
bool is_product_of(const onnx::NodeProto& n, const std::string& x, const std::string& y) {
  return is_op(n, "Mul") && n.input_size() == 2 &&
         ((n.input(0) == x && n.input(1) == y) || (n.input(0) == y && n.input(1) == x));
}

// x * Clip(x + 3, 0, 6) / 6 (or * (1/6), or x * (Clip(...) / 6)) from the Add node `add` reading x.
std::optional<Activation> decomposed_hard_swish(GraphEdit& g, const std::string& x, int add, int mul) {
  const auto& a = g.node(add);
  if (!is_op(a, "Add") || other_input(a, x).empty() || !near_activation_constant(g.scalar(other_input(a, x)).value_or(0), 3.0)) return std::nullopt;
  const int clip = g.only_reader(a.output(0));
  if (clip < 0 || !is_op(g.node(clip), "Clip") || g.node(clip).input(0) != a.output(0)) return std::nullopt;
  auto bounds = clip_bounds(g, g.node(clip));
  if (!bounds || bounds->first != 0.0f || bounds->second != 6.0f) return std::nullopt;
  auto divides_by_six = [&](int n, const std::string& v) {
    const auto& d = g.node(n);
    if (is_op(d, "Div") && d.input_size() == 2 && d.input(0) == v) return near_activation_constant(g.scalar(d.input(1)).value_or(0), 6.0);
    if (is_op(d, "Mul") && !other_input(d, v).empty()) return near_activation_constant(g.scalar(other_input(d, v)).value_or(0), 1.0 / 6.0);
    return false;
  };
  const std::string c = g.node(clip).output(0);
  const int after_clip = g.only_reader(c);
  if (after_clip < 0) return std::nullopt;
  // x * Clip(...) then / 6
  if (after_clip == mul && is_product_of(g.node(mul), x, c)) {
    const int div = g.only_reader(g.node(mul).output(0));
    if (div < 0 || !divides_by_six(div, g.node(mul).output(0))) return std::nullopt;
    return Activation{"HardSwish", {}, {add, clip, mul, div}, g.node(div).output(0)};
  }
  // Clip(...) / 6 then x * that
  if (divides_by_six(after_clip, c)) {
    const std::string q = g.node(after_clip).output(0);
    if (g.only_reader(q) == mul && is_product_of(g.node(mul), x, q))
      return Activation{"HardSwish", {}, {add, clip, after_clip, mul}, g.node(mul).output(0)};
  }
  return std::nullopt;
}

// The activation applied to `x`, which the fused node will write, when every reader of x belongs
// to it and its intermediates have no other reader.
std::optional<Activation> match_activation(GraphEdit& g, const std::string& x) {
  if (g.is_graph_output(x)) return std::nullopt;
  const auto& readers = g.readers(x);
  if (readers.size() == 1) {
    const int r = readers[0];
    const auto& n = g.node(r);
    if (n.input_size() < 1 || n.input(0) != x || n.output_size() < 1) return std::nullopt;
    const std::string y = n.output(0);
    if (n.input_size() == 1 && n.output_size() == 1) {
      for (const char* op : {"Relu", "Sigmoid", "Tanh", "HardSwish"})
        if (is_op(n, op)) return Activation{op, {}, {r}, y};
      if (is_op(n, "LeakyRelu")) return Activation{"LeakyRelu", {float_attribute(n, "alpha", 0.01f)}, {r}, y};
      if (is_op(n, "HardSigmoid"))
        return Activation{"HardSigmoid", {float_attribute(n, "alpha", 0.2f), float_attribute(n, "beta", 0.5f)}, {r}, y};
    }
    if (is_op(n, "Clip") && n.output_size() == 1) {
      auto bounds = clip_bounds(g, n);
      if (bounds) return Activation{"Clip", {bounds->first, bounds->second}, {r}, y};
    }
    return std::nullopt;
  }
  if (readers.size() != 2) return std::nullopt;
  for (int first = 0; first < 2; ++first) {
    const int gate = readers[static_cast<std::size_t>(first)], mul = readers[static_cast<std::size_t>(1 - first)];
    const auto& gn = g.node(gate);
    if (gn.output_size() != 1 || gn.input_size() < 1) continue;
    // x * Sigmoid(x) and x * HardSigmoid(x) with HardSwish's constants.
    const bool sigmoid = is_op(gn, "Sigmoid");
    const bool hard = is_op(gn, "HardSigmoid") && near_activation_constant(float_attribute(gn, "alpha", 0.2f), 1.0 / 6.0) &&
                      float_attribute(gn, "beta", 0.5f) == 0.5f;
    if ((sigmoid || hard) && gn.input(0) == x && g.only_reader(gn.output(0)) == mul &&
        is_product_of(g.node(mul), x, gn.output(0)))
      return Activation{sigmoid ? "SiLU" : "HardSwish", {}, {gate, mul}, g.node(mul).output(0)};
    if (auto hs = decomposed_hard_swish(g, x, gate, mul)) return hs;
  }
  return std::nullopt;
}

// The other operand of the two-input node `n` reading `value`, when a shape-keeping scalar.
std::optional<float> output_preserving_scalar(GraphEdit& g, const onnx::NodeProto& n, const std::string& value) {
  if (n.input_size() != 2 || n.output_size() != 1) return std::nullopt;
  return shape_keeping_scalar(g, other_input(n, value), value);
}

void set_string(onnx::NodeProto& node, const std::string& name, const std::string& value) {
  auto* a = node.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::STRING);
  a->set_s(value);
}

void set_floats(onnx::NodeProto& node, const std::string& name, const std::vector<float>& values) {
  auto* a = node.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::FLOATS);
  for (float v : values) a->add_floats(v);
}

// FusedGemm / FusedMatMul wrap the table's Gemm / MatMul: fuse only when the table would run the
// same implementation either way (a table restricted to one implementation of the plain op, as
// tests build, keeps running that one).
bool same_implementation(GraphEdit& g, const std::string& op) {
  const CpuFeatures& features = host_cpu_features();
  const KernelChoice plain = g.table().choose("", op, g.opset(), ElementType::float32, features);
  const KernelChoice fused = g.table().choose(kFusedDomain, "Fused" + op, 1, ElementType::float32, features);
  return plain.def != nullptr && fused.def != nullptr && plain.def->implementation == fused.def->implementation;
}

}  // namespace

int64_t matmul_add_to_gemm(GraphEdit& g) {
  int64_t fused = 0;
  for (int i = 0; i < g.node_count(); ++i) {
    if (g.removed(i)) continue;
    const onnx::NodeProto& mm = g.node(i);
    if (!is_op(mm, "MatMul") || mm.input_size() != 2 || mm.output_size() != 1) continue;
    const std::string y = mm.output(0);
    const int add = g.only_reader(y);
    if (add < 0 || !is_op(g.node(add), "Add")) continue;
    const std::string bias = other_input(g.node(add), y);
    const ValueShape* a = g.shape(mm.input(0));
    const ValueShape* b = g.shape(mm.input(1));
    auto c = g.constant(bias);
    // 2-D A and B only (Gemm has no batch), bias [N] or [1, N] so the output shape is unchanged.
    if (!c || a == nullptr || b == nullptr || !a->has_shape || !b->has_shape || a->dims.size() != 2 ||
        b->dims.size() != 2 || c->element_type() != ElementType::float32 || b->dims[1] < 0 ||
        c->element_count() != b->dims[1] || c->rank() == 0 || c->rank() > 2 || (c->rank() == 2 && c->shape()[0] != 1))
      continue;
    auto& node = g.node(i);
    node.set_op_type("Gemm");
    node.add_input(bias);
    node.set_output(0, g.node(add).output(0));
    g.remove(add);
    g.index();
    ++fused;
  }
  return fused;
}

int64_t fuse_epilogues(GraphEdit& g) {
  const bool conv_kernel = g.table().implements(kFusedDomain, "FusedConv");
  const bool gemm_kernel = same_implementation(g, "Gemm");
  const bool matmul_kernel = same_implementation(g, "MatMul");
  int64_t fused = 0;
  for (int i = 0; i < g.node_count(); ++i) {
    if (g.removed(i)) continue;
    const onnx::NodeProto& op = g.node(i);
    const bool conv = is_op(op, "Conv") && conv_kernel;
    const bool gemm = is_op(op, "Gemm") && gemm_kernel;
    const bool matmul = is_op(op, "MatMul") && matmul_kernel && op.input_size() == 2;
    // A MatMul reading float32 weights writes float32 even where inference lost the activations'
    // type (exporters feed it Reshapes to Shape(x)-derived dims).
    const bool float_out = is_float32(g, op.output(0)) || (matmul && is_float32(g, op.input(1)) && g.is_constant(op.input(1)));
    if (!(conv || gemm || matmul) || op.output_size() != 1 || !float_out) continue;
    std::string out = op.output(0);
    std::vector<int> consumed;
    std::string bias, residual;
    // MatMul's bias: Add of a constant [N].
    if (matmul) {
      const int add = g.only_reader(out);
      const ValueShape* b = g.shape(op.input(1));
      if (add >= 0 && is_op(g.node(add), "Add") && b != nullptr && b->has_shape && !b->dims.empty()) {
        const std::string c_name = other_input(g.node(add), out);
        auto c = g.constant(c_name);
        // B of rank >= 2 keeps N as the output's last axis, whatever A's shape, so a bias [N] adds along it.
        if (c && c->element_type() == ElementType::float32 && c->rank() == 1 && c->element_count() == b->dims.back() &&
            b->dims.size() >= 2) {
          bias = c_name;
          consumed.push_back(add);
          out = g.node(add).output(0);
        }
      }
    }
    // The residual: Add of a value of exactly the output's shape (no broadcast).
    if (const int add = g.only_reader(out); add >= 0 && is_op(g.node(add), "Add")) {
      const std::string z = other_input(g.node(add), out);
      const ValueShape* zs = g.shape(z);
      const ValueShape* ys = g.shape(out);
      if (!z.empty() && zs != nullptr && ys != nullptr && same_shape(*zs, *ys) && is_float32(g, z)) {
        residual = z;
        consumed.push_back(add);
        out = g.node(add).output(0);
      }
    }
    auto activation = match_activation(g, out);
    if (activation) {
      consumed.insert(consumed.end(), activation->nodes.begin(), activation->nodes.end());
      out = activation->output;
    }
    // Then a scalar Mul and/or Add (PaddleOCR's learnable affine block after each activation).
    std::optional<std::pair<float, float>> post;
    if (const int mul = g.only_reader(out); mul >= 0 && is_op(g.node(mul), "Mul")) {
      if (auto scale = output_preserving_scalar(g, g.node(mul), out)) {
        post = {*scale, 0.0f};
        consumed.push_back(mul);
        out = g.node(mul).output(0);
      }
    }
    if (const int add = g.only_reader(out); add >= 0 && is_op(g.node(add), "Add")) {
      if (auto shift = output_preserving_scalar(g, g.node(add), out)) {
        post = {post ? post->first : 1.0f, *shift};
        consumed.push_back(add);
        out = g.node(add).output(0);
      }
    }
    if (consumed.empty()) continue;
    auto& node = g.node(i);
    const std::string original = node.op_type();
    node.set_domain(std::string(kFusedDomain));
    node.set_op_type("Fused" + original);
    // Inputs: X, W, bias (Conv's B, Gemm's C, MatMul's folded Add), then Z.
    while (node.input_size() < 3) node.add_input();
    if (original == "MatMul") node.set_input(2, bias);
    if (!residual.empty()) node.add_input(residual);
    while (node.input_size() > 0 && node.input(node.input_size() - 1).empty()) node.mutable_input()->RemoveLast();
    if (activation) {
      set_string(node, "activation", activation->name);
      if (!activation->params.empty()) set_floats(node, "activation_params", activation->params);
    }
    if (post) set_floats(node, "post_affine", {post->first, post->second});
    node.set_output(0, out);
    for (int n : consumed) g.remove(n);
    g.import_domain(std::string(kFusedDomain));
    g.index();
    ++fused;
  }
  return fused;
}

}  // namespace onnx_light::runtime::optimizer
