// all: BatchNormalization (inference) after a 2-D Gemm or MatMul with constant weights, folded into
// them. The product's output is [M, N] and BatchNormalization's channel axis is 1, so channel n is
// column n: B's column n (row n when transB) is scaled by s = scale / sqrt(var + eps) and the bias
// becomes C' = (beta * C - mean) * s + bn_bias with beta = 1 (a MatMul becomes a Gemm to carry it).
// Computed in double, rounded once; changes bits as the Conv folding does.
#include "optimizer/batch_norm.h"
#include "optimizer/passes.h"

namespace onnx_light::runtime::optimizer {

namespace {

// C as one value per column of an [M, N] output: absent, one element, [N] or [1, N].
std::optional<std::vector<double>> per_column(GraphEdit& g, const onnx::NodeProto& gemm, int64_t n) {
  std::vector<double> c(static_cast<std::size_t>(n), 0.0);
  if (gemm.input_size() < 3 || gemm.input(2).empty()) return c;
  auto t = g.constant(gemm.input(2));
  if (!t || t->element_type() != ElementType::float32) return std::nullopt;
  const bool scalar = t->element_count() == 1 && t->rank() <= 2;
  const bool row = t->element_count() == n && (t->rank() == 1 || (t->rank() == 2 && t->shape()[0] == 1));
  if (!scalar && !row) return std::nullopt;
  for (int64_t k = 0; k < n; ++k) c[static_cast<std::size_t>(k)] = t->data<float>()[scalar ? 0 : k];
  return c;
}

}  // namespace

int64_t fold_gemm_batch_norm(GraphEdit& g) {
  int64_t folded = 0;
  for (int i = 0; i < g.node_count(); ++i) {
    if (g.removed(i)) continue;
    const int p = batch_norm_producer(g, i);
    if (p < 0) continue;
    const onnx::NodeProto& prod = g.node(p);
    const bool gemm = is_op(prod, "Gemm"), matmul = is_op(prod, "MatMul");
    if (!(gemm || matmul) || prod.input_size() < 2 || prod.output_size() != 1) continue;
    // A must be 2-D (a MatMul of higher rank puts N on the last axis, not on BatchNorm's axis 1).
    const ValueShape* a = g.shape(prod.input(0));
    if (matmul && (a == nullptr || !a->has_shape || a->dims.size() != 2)) continue;
    auto w = g.constant(prod.input(1));
    if (!w || w->element_type() != ElementType::float32 || w->rank() != 2) continue;
    const bool trans_b = gemm && int_attribute(prod, "transB", 0) != 0;
    const int64_t n = trans_b ? w->shape()[0] : w->shape()[1];
    const int64_t k_dim = trans_b ? w->shape()[1] : w->shape()[0];
    auto bn = batch_norm_affine(g, g.node(i), n);
    if (!bn) continue;
    auto c = per_column(g, prod, n);
    if (!c) continue;
    const double beta = gemm ? float_attribute(prod, "beta", 1.0f) : 1.0;
    Tensor w2(ElementType::float32, w->shape());
    Tensor bias(ElementType::float32, {n});
    for (int64_t col = 0; col < n; ++col) {
      const auto j = static_cast<std::size_t>(col);
      const double s = bn->scale[j];
      bias.data<float>()[col] = static_cast<float>(beta * (*c)[j] * s + bn->shift[j]);
      for (int64_t k = 0; k < k_dim; ++k) {
        const int64_t at = trans_b ? col * k_dim + k : k * n + col;
        w2.data<float>()[at] = static_cast<float>(static_cast<double>(w->data<float>()[at]) * s);
      }
    }
    auto& node = g.node(p);
    const std::string w_name = g.fresh_name(node.input(1));
    g.add_initializer(w2, w_name);
    const std::string b_name = g.fresh_name(node.input(1) + "_bias");
    g.add_initializer(bias, b_name);
    node.set_input(1, w_name);
    while (node.input_size() < 3) node.add_input();
    node.set_input(2, b_name);
    if (matmul) node.set_op_type("Gemm");
    // beta now 1: C' already holds beta * C.
    for (auto& attr : *node.mutable_attribute())
      if (attr.name() == "beta") attr.set_f(1.0f);
    node.set_output(0, g.node(i).output(0));
    g.remove(i);
    g.index();
    ++folded;
  }
  return folded;
}

}  // namespace onnx_light::runtime::optimizer
