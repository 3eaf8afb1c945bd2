#pragma once
// A dense 2-D convolution over float32 with few input channels (a CNN's stem: 3 channels, 3x3
// stride 2), computed directly with the output maps blocked: one vector holds one output pixel of
// `lanes` consecutive maps (16 with AVX-512, 8 with AVX2), and every (channel, ky, kx) tap is one
// broadcast input value times the tap's per-map weight vector. No im2col matrix, no GEMM packing:
// the stem's GEMM has a depth of 27, too shallow for the packed driver's register tile to pay for
// its packing. The caller (kernels/direct_conv.cc) pads the input rows of a band into a scratch
// plane per channel.
#include <cstdint>

#include "kernels/simd/dwconv_f32_blocked.h"

namespace onnx_light::runtime::kernels::simd {

struct ConvF32DirectBlock {
  const float* x;              // padded input rows of a band, channel-major: [channels][rows][pitch]
  int64_t pitch;
  const float* weights;        // [taps][lanes], taps in (channel, ky, kx) order
  const int64_t* tap_offsets;  // per tap, in floats from an output's first input value
  int64_t taps;
  const float* bias;           // [lanes]
  int64_t stride_h, stride_w, out_h, out_w;
  DwconvF32Epilogue epilogue;
  float* const* y;             // `valid` output planes, at the band's first row (out_w per row)
  const float* const* z;       // their residual planes, or null
  int64_t valid;               // maps of this block (lanes past it are computed and dropped)
};

// y[m][p] = epilogue(acc + bias[m] + z[m][p]), acc the FMA chain over the taps in order from
// zero. Each row's pixels are computed `lanes` at a time and transposed in registers into the
// maps' rows, so the blocked result never goes through memory.
void conv_f32_direct_avx2(const ConvF32DirectBlock& block);
void conv_f32_direct_avx512(const ConvF32DirectBlock& block);

}  // namespace onnx_light::runtime::kernels::simd
