// B packing, epilogues and depthwise loops of the VNNI integer convolution (conv_s8.h) on AVX-512
// VNNI: conv_s8_loops.h's algorithms over 16-lane zmm operations (s8_ops_avx512vnni.h).
#include <immintrin.h>

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"  // GCC bug 105593
#endif

#include <cstddef>
#include <cstdint>

#include "kernels/simd/conv_s8.h"
#include "kernels/simd/conv_s8_loops.h"
#include "kernels/simd/gemm_s8.h"
#include "kernels/simd/gemm_s8_tile.h"
#include "kernels/simd/s8_ops_avx512vnni.h"

namespace onnx_light::runtime::kernels::simd {

namespace {
using Ops = S8Avx512Vnni;
}  // namespace

void conv_s8_interleave4_avx512vnni(const uint8_t* rows, int64_t row_stride, uint8_t flip, int64_t n, uint8_t* out,
                                    int32_t* sums) {
  s8_interleave4<Ops>(rows, row_stride, flip, n, out, sums);
}

void conv_s8_gemm_windows_avx512vnni(const uint8_t* packed_a, int64_t m, int64_t groups, const uint8_t* b,
                                     const int64_t* offsets, int64_t n, int32_t* c, int64_t ldc) {
  s8_gemm_windows<Ops>(packed_a, m, groups, b, offsets, n, c, ldc);
}

void conv_s8_pack_b_avx512vnni(const uint8_t* b, const int64_t* rows, int b_unsigned, int64_t k, int64_t n,
                               int8_t* packed, int32_t* col_sums) {
  s8_conv_pack_b<Ops>(b, rows, b_unsigned, k, n, packed, col_sums);
}

void conv_s8_correct_s32_avx512vnni(const int32_t* c, int64_t n, const int32_t* col_sums, int32_t alpha,
                                    int32_t constant, int32_t* y) {
  s8_correct<Ops>(c, n, col_sums, alpha, constant, y);
}

void conv_s8_requantize_u8_avx512vnni(const int32_t* c, int64_t n, const int32_t* col_sums, int32_t alpha,
                                      int32_t constant, float multiplier, float zero, uint8_t* y) {
  s8_requantize_corrected<Ops, false>(c, n, col_sums, alpha, constant, multiplier, zero, y);
}

void conv_s8_requantize_s8_avx512vnni(const int32_t* c, int64_t n, const int32_t* col_sums, int32_t alpha,
                                      int32_t constant, float multiplier, float zero, int8_t* y) {
  s8_requantize_corrected<Ops, true>(c, n, col_sums, alpha, constant, multiplier, zero, reinterpret_cast<uint8_t*>(y));
}

void conv_s8_depthwise_avx512vnni(const uint8_t* padded, int64_t padded_width, int x_signed, int32_t x_zero,
                                  const int32_t* taps, int64_t kh, int64_t kw, int64_t dh, int64_t dw, int64_t oh,
                                  int64_t ow, int32_t* out) {
  s8_depthwise_s32<Ops>(padded, padded_width, x_signed, x_zero, taps, kh, kw, dh, dw, oh, ow, out);
}

void conv_s8_depthwise_requantize_avx512vnni(const uint8_t* padded, int64_t padded_width, int x_signed, int32_t x_zero,
                                             const int32_t* taps, int64_t kh, int64_t kw, int64_t dh, int64_t dw,
                                             int64_t oh, int64_t ow, int32_t bias, float multiplier, float zero,
                                             int y_signed, uint8_t* y) {
  s8_depthwise_requantize<Ops>(padded, padded_width, x_signed, x_zero, taps, kh, kw, dh, dw, oh, ow, bias, multiplier,
                               zero, y_signed, y);
}

}  // namespace onnx_light::runtime::kernels::simd
