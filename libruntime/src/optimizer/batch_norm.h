#pragma once
// What the BatchNormalization foldings share (conv_folding.cc, gemm_folding.cc): recognising an
// inference BatchNormalization that can disappear into its producer, and its per-channel affine.
#include <optional>
#include <vector>

#include "optimizer/graph_edit.h"

namespace onnx_light::runtime::optimizer {

// Y = X * scale[c] + shift[c], computed in double: scale = gamma / sqrt(var + eps),
// shift = beta - mean * scale.
struct BatchNormAffine {
  std::vector<double> scale, shift;
};

// The producer of node `bn`'s X when `bn` is an inference BatchNormalization that only Y is read
// from and the sole reader of X; -1 otherwise.
int batch_norm_producer(GraphEdit& g, int bn);

// The affine of `bn` when its four parameters are float32 constants of `channels` values.
std::optional<BatchNormAffine> batch_norm_affine(GraphEdit& g, const onnx::NodeProto& bn, int64_t channels);

}  // namespace onnx_light::runtime::optimizer
