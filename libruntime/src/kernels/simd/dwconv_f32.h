#pragma once
// Depthwise convolution rows over float32, one set per instruction set (see README.md). The
// caller (kernels/depthwise_conv.cc) pads and splits the input plane by stride phase so that
// every tap of an output row reads a contiguous run: tap t of output j is src[t][j].
#include <cstddef>
#include <cstdint>

#include "kernels/simd/activation_f32.h"
#include "kernels/simd/dwconv_f32_blocked.h"

namespace onnx_light::runtime::kernels::simd {

// Activations the row applies itself, with exactly the scalar expressions of kernels/epilogue.cc;
// the others are left to the caller (dwconv_f32_none).
inline constexpr int dwconv_f32_none = f32_activation_none;
inline constexpr int dwconv_f32_relu = f32_activation_relu;
inline constexpr int dwconv_f32_clip = f32_activation_clip;
inline constexpr int dwconv_f32_leaky_relu = f32_activation_leaky_relu;
inline constexpr int dwconv_f32_hard_sigmoid = f32_activation_hard_sigmoid;
inline constexpr int dwconv_f32_hard_swish = f32_activation_hard_swish;

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
  // After the activation: v * post_scale + post_shift as two roundings (the Mul and Add it replaces).
  bool post_affine = false;
  float post_scale = 1.0f, post_shift = 0.0f;
};

// y[j] = act((acc + bias) + z[j]) (then the post affine when set) for j < n, acc the fma chain over t ascending of src[t][j] *
// weights[t] from 0 (z omitted when null; act the identity for dwconv_f32_none);
// the chain is the same for every j, so results do not depend on where a vector starts.
void dwconv_f32_row_avx2(const DwconvF32Row& row);
void dwconv_f32_row_avx512(const DwconvF32Row& row);

// Two output rows at once for vertical stride and dilation 1, sharing each input row's loads:
// `first` as above (taps row-major over kernel_h x kernel_w), and the row below it, whose taps
// are `first`'s shifted down one input row; `below_src` holds only the last input row's kernel_w
// pointers (the others are first.src[kernel_w...]). Per output, the same FMA chain as
// dwconv_f32_row, so results are identical.
void dwconv_f32_rows2_avx2(const DwconvF32Row& first, const float* const* below_src, int64_t kernel_w,
                           const float* below_z, float* below_y);
void dwconv_f32_rows2_avx512(const DwconvF32Row& first, const float* const* below_src, int64_t kernel_w,
                             const float* below_z, float* below_y);

// The row functions to use for a kernel size: for 3x3 the taps are compile-time constants
// (unrolled, weights held in registers; `fixed` set), else dwconv_f32_row/rows2 above. Same
// contracts and bit-identical results.
struct DwconvF32Kernels {
  void (*row)(const DwconvF32Row&);
  void (*rows2)(const DwconvF32Row&, const float* const*, int64_t, const float*, float*);
  bool fixed;
  // 3x3 at vertical stride and dilation 1 (AVX-512 only, else null): four output rows, the input
  // rows `in_step` floats apart (tap row ky of output row q at src[ky * 3 + kx] + q * in_step), the
  // outputs and residual `out_step` apart. The same results as row.
  void (*rows4)(const DwconvF32Row&, int64_t in_step, int64_t out_step) = nullptr;
};
DwconvF32Kernels dwconv_f32_kernels_avx2(int64_t kernel_h, int64_t kernel_w);
DwconvF32Kernels dwconv_f32_kernels_avx512(int64_t kernel_h, int64_t kernel_w);

// One (image, map) plane of a 3x3, stride-2, dilation-1 depthwise convolution read straight from
// NCHW (AVX-512 only): for 16 outputs each input row's span is loaded once and deinterleaved by
// two permutes into the kx = 0 and 1 taps, the kx = 2 tap being the evens one lane on; two output
// rows share their common input row. No reorder and no scratch, where the blocked path transposes
// every input and output pixel (a stride-2 plane reads four input pixels per output). Pads: any on
// top, bottom and right, 0 or 1 on the left (dwconv_f32_plane_3x3s2_fits). Each output's FMA
// chain (taps row-major from zero, pad taps multiplying zeros) and its epilogue
// ((acc + bias) + z, then the activation and post affine) are the blocked path's, so the bits are
// the same.
struct DwconvF32Plane {
  const float* x;  // in_h x in_w
  int64_t in_h, in_w, pad_top, pad_left;
  const float* weights;  // kernel_h x kernel_w, row-major
  float bias;
  const float* z;  // out_h x out_w residual, or null
  DwconvF32Epilogue epilogue;
  int64_t out_h, out_w;
  float* y;
};
inline bool dwconv_f32_plane_3x3s2_fits(int64_t pad_left) { return pad_left == 0 || pad_left == 1; }
void dwconv_f32_plane_3x3s2_avx512(const DwconvF32Plane& plane);

// The same for a 3x3 stride-1 dilation-1 plane: tap kx of 16 outputs is one (unaligned) load of
// their input row, and four output rows at a time share each input row's loads. Pads: any, at most
// 2 on the left (dwconv_f32_plane_3x3s1_fits).
inline bool dwconv_f32_plane_3x3s1_fits(int64_t pad_left) { return pad_left >= 0 && pad_left <= 2; }
void dwconv_f32_plane_3x3s1_avx512(const DwconvF32Plane& plane);

}  // namespace onnx_light::runtime::kernels::simd
