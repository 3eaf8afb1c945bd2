#pragma once
// LayerNormalization over float32 rows, one definition per ISA (layernorm_f32_avx2.cc,
// layernorm_f32_avx512.cc). Called by ../normalization.cc only after the kernel table has checked
// the host's features. Each row's sums use lane-wise accumulators in a fixed order and a fixed
// horizontal tree, so a row's result never depends on which thread runs it.
#include <cstdint>

namespace onnx_light::runtime::kernels::simd {

// `rows` contiguous rows of `length` floats: y = (x - mean) * inv * scale + bias (bias may be
// null), inv = 1 / sqrt(mean((x - mean)^2) + epsilon); scale and bias hold `length` floats.
// mean_out / inv_out (may be null) receive each row's mean and inv. x and y may be the same buffer.
void layer_norm_rows_f32_avx2(const float* x, float* y, int64_t rows, int64_t length, const float* scale,
                              const float* bias, float epsilon, float* mean_out, float* inv_out);
void layer_norm_rows_f32_avx512(const float* x, float* y, int64_t rows, int64_t length, const float* scale,
                                const float* bias, float epsilon, float* mean_out, float* inv_out);

}  // namespace onnx_light::runtime::kernels::simd
