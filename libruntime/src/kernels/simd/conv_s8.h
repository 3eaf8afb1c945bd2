#pragma once
// QLinearConv and ConvInteger on AVX-512 VNNI (*_avx512vnni) and AVX-VNNI (*_avxvnni: 256-bit, no
// AVX-512 instruction; the same layouts and bits), ../quantized_conv.cc: the convolution as one
// integer GEMM per (image, group, block of output positions), weights as gemm_s8.h's packed A
// (output channels are its rows), the im2col of the activations as its packed B (output positions
// are its columns), so the product lands in NCHW order. These are the B packer and the epilogues
// that undo the operand shifts and zero points (see gemm_s8.h) and requantize.
#include <cstddef>
#include <cstdint>

#include "kernels/simd/gemm_s8.h"

namespace onnx_light::runtime::kernels::simd {

// gemm_s8_pack_b_avx512vnni's result (the same bytes and column sums), four rows and 32 columns
// at a time: b(kk, j) = b[rows[kk] + j] for kk < k, j < n (uint8 when b_unsigned, else int8);
// `rows` holds each row's offset from b (a matrix, or shifted windows of padded planes).
void conv_s8_pack_b_avx512vnni(const uint8_t* b, const int64_t* rows, int b_unsigned, int64_t k, int64_t n,
                               int8_t* packed, int32_t* col_sums);
void conv_s8_pack_b_avxvnni(const uint8_t* b, const int64_t* rows, int b_unsigned, int64_t k, int64_t n,
                            int8_t* packed, int32_t* col_sums);

// Four byte rows rows[d * row_stride + j] (j < n) as n words (rows 0-3 of column j, each byte
// XOR flip): the channel-interleaved planes conv_s8_gemm_windows_avx512vnni reads; sums[j] += the
// signed sum of word j's four shifted bytes.
void conv_s8_interleave4_avx512vnni(const uint8_t* rows, int64_t row_stride, uint8_t flip, int64_t n, uint8_t* out,
                                    int32_t* sums);
void conv_s8_interleave4_avxvnni(const uint8_t* rows, int64_t row_stride, uint8_t flip, int64_t n, uint8_t* out,
                                 int32_t* sums);

// gemm_u8s8_avx512vnni with B read in place: depth group g of columns [j, j + 32) is the 128 bytes
// at b + offsets[g] + 4 * j (32 words of four shifted bytes, the packed-B panel layout), e.g. a
// tap's window of channel-interleaved padded planes. `packed_a` packed over 4 * groups depth;
// b must be readable up to 4 * (n rounded up to 32) bytes past every offset.
void conv_s8_gemm_windows_avx512vnni(const uint8_t* packed_a, int64_t m, int64_t groups, const uint8_t* b,
                                     const int64_t* offsets, int64_t n, int32_t* c, int64_t ldc);
void conv_s8_gemm_windows_avxvnni(const uint8_t* packed_a, int64_t m, int64_t groups, const uint8_t* b,
                                  const int64_t* offsets, int64_t n, int32_t* c, int64_t ldc);

// y[j] = c[j] + constant + alpha * col_sums[j] for j < n, in int32 with wraparound (y may be c).
void conv_s8_correct_s32_avx512vnni(const int32_t* c, int64_t n, const int32_t* col_sums, int32_t alpha,
                                    int32_t constant, int32_t* y);
void conv_s8_correct_s32_avxvnni(const int32_t* c, int64_t n, const int32_t* col_sums, int32_t alpha,
                                 int32_t constant, int32_t* y);

// A depthwise (one input plane per output channel) stride-1 convolution over a padded plane
// (width padded_width, padded with x's zero point, rows and columns enough for every tap):
// out[oy * ow + ox] = sum over (ky, kx) of (x(oy + ky * dh, ox + kx * dw) - x_zero) * taps[ky * kw + kx],
// exact in int32 (taps are w - w_zero, within [-255, 255]); vpdpwssd on 16 positions at a time.
void conv_s8_depthwise_avx512vnni(const uint8_t* padded, int64_t padded_width, int x_signed, int32_t x_zero,
                                  const int32_t* taps, int64_t kh, int64_t kw, int64_t dh, int64_t dw, int64_t oh,
                                  int64_t ow, int32_t* out);
void conv_s8_depthwise_avxvnni(const uint8_t* padded, int64_t padded_width, int x_signed, int32_t x_zero,
                               const int32_t* taps, int64_t kh, int64_t kw, int64_t dh, int64_t dw, int64_t oh,
                               int64_t ow, int32_t* out);

// The same sums plus `bias`, requantized as conv_s8_requantize_*: y[oy * ow + ox] uint8, or int8
// when y_signed.
void conv_s8_depthwise_requantize_avx512vnni(const uint8_t* padded, int64_t padded_width, int x_signed, int32_t x_zero,
                                             const int32_t* taps, int64_t kh, int64_t kw, int64_t dh, int64_t dw,
                                             int64_t oh, int64_t ow, int32_t bias, float multiplier, float zero,
                                             int y_signed, uint8_t* y);
void conv_s8_depthwise_requantize_avxvnni(const uint8_t* padded, int64_t padded_width, int x_signed, int32_t x_zero,
                                          const int32_t* taps, int64_t kh, int64_t kw, int64_t dh, int64_t dw,
                                          int64_t oh, int64_t ow, int32_t bias, float multiplier, float zero,
                                          int y_signed, uint8_t* y);

// y[j] = saturate(nearbyint(float(c[j] + constant + alpha * col_sums[j]) * multiplier) + zero), the
// sum wrapping in int32: bit for bit the portable QLinearConv's expression.
void conv_s8_requantize_u8_avx512vnni(const int32_t* c, int64_t n, const int32_t* col_sums, int32_t alpha,
                                      int32_t constant, float multiplier, float zero, uint8_t* y);
void conv_s8_requantize_u8_avxvnni(const int32_t* c, int64_t n, const int32_t* col_sums, int32_t alpha,
                                   int32_t constant, float multiplier, float zero, uint8_t* y);
void conv_s8_requantize_s8_avx512vnni(const int32_t* c, int64_t n, const int32_t* col_sums, int32_t alpha,
                                      int32_t constant, float multiplier, float zero, int8_t* y);
void conv_s8_requantize_s8_avxvnni(const int32_t* c, int64_t n, const int32_t* col_sums, int32_t alpha,
                                   int32_t constant, float multiplier, float zero, int8_t* y);

// One ISA's functions above (and its GEMM), for ../quantized_conv.cc, registered once per ISA.
struct ConvS8Functions {
  const GemmS8Functions* gemm;
  decltype(&conv_s8_pack_b_avx512vnni) pack_b;
  decltype(&conv_s8_interleave4_avx512vnni) interleave4;
  decltype(&conv_s8_gemm_windows_avx512vnni) gemm_windows;
  decltype(&conv_s8_correct_s32_avx512vnni) correct_s32;
  decltype(&conv_s8_depthwise_avx512vnni) depthwise;
  decltype(&conv_s8_depthwise_requantize_avx512vnni) depthwise_requantize;
  decltype(&conv_s8_requantize_u8_avx512vnni) requantize_u8;
  decltype(&conv_s8_requantize_s8_avx512vnni) requantize_s8;
};

inline constexpr ConvS8Functions kConvS8Avx512Vnni{&kGemmS8Avx512Vnni,
                                                   conv_s8_pack_b_avx512vnni,
                                                   conv_s8_interleave4_avx512vnni,
                                                   conv_s8_gemm_windows_avx512vnni,
                                                   conv_s8_correct_s32_avx512vnni,
                                                   conv_s8_depthwise_avx512vnni,
                                                   conv_s8_depthwise_requantize_avx512vnni,
                                                   conv_s8_requantize_u8_avx512vnni,
                                                   conv_s8_requantize_s8_avx512vnni};
inline constexpr ConvS8Functions kConvS8AvxVnni{&kGemmS8AvxVnni,
                                                conv_s8_pack_b_avxvnni,
                                                conv_s8_interleave4_avxvnni,
                                                conv_s8_gemm_windows_avxvnni,
                                                conv_s8_correct_s32_avxvnni,
                                                conv_s8_depthwise_avxvnni,
                                                conv_s8_depthwise_requantize_avxvnni,
                                                conv_s8_requantize_u8_avxvnni,
                                                conv_s8_requantize_s8_avxvnni};

}  // namespace onnx_light::runtime::kernels::simd
