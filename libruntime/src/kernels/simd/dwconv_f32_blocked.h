#pragma once
// Depthwise convolution over channel blocks, one vector holding one pixel of `lanes` consecutive
// maps (16 with AVX-512, 8 with AVX2), as ONNX Runtime's NCHWc depthwise kernels run it: every tap
// is one full-vector load and one FMA with that tap's per-map weight vector, whatever the plane's
// width, stride or dilation. Narrow planes (7x7, 6x24) lose no lanes to row tails, stride 2 needs no
// phase split, and 5x5 needs no broadcast per tap. The caller (kernels/depthwise_conv.cc) reorders
// each block of NCHW planes into a zero-padded blocked plane and back with the functions here.
#include <cstdint>

#include "kernels/simd/activation_f32.h"

namespace onnx_light::runtime::kernels::simd {

inline constexpr int64_t dwconv_f32_block_lanes_avx2 = 8;
inline constexpr int64_t dwconv_f32_block_lanes_avx512 = 16;

// Copies planes[0..valid) (each h x w, row-major) into `dst`, a blocked plane of rows x pitch
// pixels: input pixel (r, c) goes to (r + pad_top, c + pad_left), or nowhere when that lies outside
// (an input the convolution never reads). Lanes from `valid` on are written as zeros. Positions no
// input pixel maps to (the pads) are not written: the caller zeroes them once.
void dwconv_f32_to_blocked_avx2(const float* const* planes, int64_t valid, int64_t h, int64_t w, float* dst,
                                int64_t rows, int64_t pitch, int64_t pad_top, int64_t pad_left);
void dwconv_f32_to_blocked_avx512(const float* const* planes, int64_t valid, int64_t h, int64_t w, float* dst,
                                  int64_t rows, int64_t pitch, int64_t pad_top, int64_t pad_left);

// The epilogue after the bias (and residual): an activation (f32_activation_*), then the post
// affine v * scale + shift as two roundings (the Mul and Add it replaces), exactly as
// kernels/epilogue.cc's apply_activation.
struct DwconvF32Epilogue {
  int activation = f32_activation_none;
  float alpha = 0.0f, beta = 0.0f;
  bool post_affine = false;
  float post_scale = 1.0f, post_shift = 0.0f;
};

struct DwconvF32Block {
  const float* x;              // blocked padded input, `pitch` pixels per row
  int64_t pitch;
  const float* weights;        // [taps][lanes]
  const int64_t* tap_offsets;  // per tap, in floats from an output's first input pixel
  int64_t taps;
  const float* bias;           // [lanes]
  int64_t stride_h, stride_w, out_h, out_w;
  DwconvF32Epilogue epilogue;  // none when the caller adds a residual first
  float* y;                    // [out_h * out_w][lanes]
  // 3 or 5 when the taps are kernel rows of that many adjacent pixels (dilation 1 across) at
  // stride_w 1 or 2: then each input pixel of a kernel row is loaded once for every output of a
  // group that reads it (5x5 at stride 1: 20 loads per row of 16 outputs instead of 80); 0: the
  // generic chains. The same FMA chain per output either way.
  int64_t row_taps = 0;
};
// y = epilogue(acc + bias) per pixel and lane, acc the FMA chain over the taps in order from zero:
// the chain of dwconv_f32_row, so the same bits as the row kernels and the scalar epilogue.
void dwconv_f32_block_avx2(const DwconvF32Block& block);
void dwconv_f32_block_avx512(const DwconvF32Block& block);

// Stores pixels [0, n) of the blocked `src` into planes[0..valid) (n contiguous values each). With
// `z` (residual planes, one per valid lane) each value becomes epilogue(value + z); without it
// values are copied as they are.
void dwconv_f32_from_blocked_avx2(const float* src, int64_t n, float* const* planes, int64_t valid,
                                  const float* const* z, const DwconvF32Epilogue& epilogue);
void dwconv_f32_from_blocked_avx512(const float* src, int64_t n, float* const* planes, int64_t valid,
                                    const float* const* z, const DwconvF32Epilogue& epilogue);

}  // namespace onnx_light::runtime::kernels::simd
