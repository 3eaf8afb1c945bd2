#include "optimizer/batch_norm.h"

#include <cmath>

namespace onnx_light::runtime::optimizer {

int batch_norm_producer(GraphEdit& g, int i) {
  const onnx::NodeProto& bn = g.node(i);
  if (!is_op(bn, "BatchNormalization") || bn.input_size() != 5 || bn.output_size() < 1) return -1;
  if (int_attribute(bn, "training_mode", 0) != 0) return -1;
  for (int k = 1; k < bn.output_size(); ++k)
    if (!bn.output(k).empty() && (!g.readers(bn.output(k)).empty() || g.is_graph_output(bn.output(k)))) return -1;
  const int p = g.producer(bn.input(0));
  return p >= 0 && g.sole_reader(bn.input(0), i) ? p : -1;
}

std::optional<BatchNormAffine> batch_norm_affine(GraphEdit& g, const onnx::NodeProto& bn, int64_t channels) {
  std::vector<Tensor> params;  // gamma, beta, mean, var
  for (int k = 1; k < 5; ++k) {
    auto t = g.constant(bn.input(k));
    if (!t || t->element_type() != ElementType::float32 || t->element_count() != channels) return std::nullopt;
    params.push_back(*t);
  }
  const double eps = float_attribute(bn, "epsilon", 1e-5f);
  BatchNormAffine a;
  a.scale.resize(static_cast<std::size_t>(channels));
  a.shift.resize(a.scale.size());
  for (int64_t c = 0; c < channels; ++c) {
    const auto j = static_cast<std::size_t>(c);
    a.scale[j] = params[0].data<float>()[c] / std::sqrt(static_cast<double>(params[3].data<float>()[c]) + eps);
    a.shift[j] = params[1].data<float>()[c] - params[2].data<float>()[c] * a.scale[j];
  }
  return a;
}

}  // namespace onnx_light::runtime::optimizer
