#pragma once
// Depthwise convolution rows over float32, one set per instruction set (see README.md). The
// caller (kernels/depthwise_conv.cc) pads and splits the input plane by stride phase so that
// every tap of an output row reads a contiguous run: tap t of output j is src[t][j].
#include <cstddef>
#include <cstdint>

namespace onnx_light::runtime::kernels::simd {

// Activations the row applies itself, with exactly the scalar expressions of kernels/epilogue.cc;
// the others are left to the caller (dwconv_f32_none).
inline constexpr int dwconv_f32_none = 0;
inline constexpr int dwconv_f32_relu = 1;
inline constexpr int dwconv_f32_clip = 2;          // min(max(v, alpha), beta)
inline constexpr int dwconv_f32_leaky_relu = 3;    // v < 0 ? alpha * v : v
inline constexpr int dwconv_f32_hard_sigmoid = 4;  // max(0, min(1, alpha * v + beta))
inline constexpr int dwconv_f32_hard_swish = 5;    // v * max(0, min(1, v / 6 + 0.5))

struct DwconvF32Row {
  const float* const* src;  // taps pointers
  const float* weights;     // taps weights
  int64_t taps;
  int64_t n;                // outputs of the row
  float bias;
  const float* z;  // n residual values, or null
  int activation;
  float alpha, beta;
  float* y;
};

// y[j] = act((acc + bias) + z[j]) for j < n, acc the fma chain over t ascending of src[t][j] *
// weights[t] from 0 (z omitted when null; act the identity for dwconv_f32_none);
// the chain is the same for every j, so results do not depend on where a vector starts.
void dwconv_f32_row_avx2(const DwconvF32Row& row);
void dwconv_f32_row_avx512(const DwconvF32Row& row);

}  // namespace onnx_light::runtime::kernels::simd
