#pragma once
// The loops of conv_s8.h written once over an ISA's vector operations (Ops: s8_ops_avx512vnni.h,
// s8_ops_avxvnni.h). Internal linkage (anonymous namespace, see README.md): each ISA file compiles
// its own copy with its own flags.
#include <immintrin.h>

#include <cstddef>
#include <cstdint>

#include "kernels/simd/gemm_s8.h"
#include "kernels/simd/gemm_s8_tile.h"

namespace onnx_light::runtime::kernels::simd {
namespace {

// Bytes (r0[j], r1[j], r2[j], r3[j]) as word j of o[0..3] (8 words each, columns in order): two
// interleaving steps within 128-bit lanes, then the lanes put in column order. AVX2 on both ISAs.
inline void s8_interleave4x32(__m256i r0, __m256i r1, __m256i r2, __m256i r3, __m256i (&o)[4]) {
  const __m256i t01l = _mm256_unpacklo_epi8(r0, r1), t01h = _mm256_unpackhi_epi8(r0, r1);
  const __m256i t23l = _mm256_unpacklo_epi8(r2, r3), t23h = _mm256_unpackhi_epi8(r2, r3);
  const __m256i w0 = _mm256_unpacklo_epi16(t01l, t23l);  // columns 0-3 | 16-19
  const __m256i w1 = _mm256_unpackhi_epi16(t01l, t23l);  // 4-7 | 20-23
  const __m256i w2 = _mm256_unpacklo_epi16(t01h, t23h);  // 8-11 | 24-27
  const __m256i w3 = _mm256_unpackhi_epi16(t01h, t23h);  // 12-15 | 28-31
  o[0] = _mm256_permute2x128_si256(w0, w1, 0x20);
  o[1] = _mm256_permute2x128_si256(w2, w3, 0x20);
  o[2] = _mm256_permute2x128_si256(w0, w1, 0x31);
  o[3] = _mm256_permute2x128_si256(w2, w3, 0x31);
}

// conv_s8_interleave4_*.
template <typename Ops>
void s8_interleave4(const uint8_t* rows, int64_t row_stride, uint8_t flip, int64_t n, uint8_t* out, int32_t* sums) {
  const __m256i vflip = _mm256_set1_epi8(static_cast<char>(flip));
  const __m256i ones = _mm256_set1_epi8(1);
  for (int64_t j0 = 0; j0 < n; j0 += 32) {
    const int64_t valid = n - j0;
    __m256i o[4];
    s8_interleave4x32(Ops::shifted_bytes32_n(rows + j0, valid, vflip, flip),
                      Ops::shifted_bytes32_n(rows + row_stride + j0, valid, vflip, flip),
                      Ops::shifted_bytes32_n(rows + 2 * row_stride + j0, valid, vflip, flip),
                      Ops::shifted_bytes32_n(rows + 3 * row_stride + j0, valid, vflip, flip), o);
    for (int64_t q = 0; q < 4; ++q) {
      const int64_t count = n - j0 - 8 * q;  // columns of this quarter
      if (count <= 0) break;
      Ops::store_bytes32_n(out + (j0 + 8 * q) * 4, o[q], count >= 8 ? 32 : 4 * count);
      const __m256i word_sums = Ops::dpbusd8(_mm256_setzero_si256(), ones, o[q]);
      int32_t* s = sums + j0 + 8 * q;
      Ops::store8_n(s, _mm256_add_epi32(Ops::load8_n(s, count), word_sums), count);
    }
  }
}

// conv_s8_pack_b_*: gemm_s8_pack_b's bytes and column sums, four rows and 32 columns at a time.
template <typename Ops>
void s8_conv_pack_b(const uint8_t* b, const int64_t* rows, int b_unsigned, int64_t k, int64_t n, int8_t* packed,
                    int32_t* col_sums) {
  const uint8_t flip = b_unsigned ? 0x80 : 0x00;
  const __m256i vflip = _mm256_set1_epi8(static_cast<char>(flip));
  const __m256i ones = _mm256_set1_epi8(1);
  const int64_t groups = (k + 3) / 4;
  // Row kk's 32 bytes from column j0, shifted; 0 past the matrix.
  auto row = [&](int64_t kk, int64_t j0) {
    return kk < k ? Ops::shifted_bytes32_n(b + rows[kk] + j0, n - j0, vflip, flip) : _mm256_setzero_si256();
  };
  for (int64_t j0 = 0; j0 < n; j0 += kGemmS8Nr) {
    __m256i s0 = _mm256_setzero_si256(), s1 = s0, s2 = s0, s3 = s0;
    for (int64_t g = 0; g < groups; ++g) {
      const int64_t kk = g * 4;
      __m256i o[4];
      s8_interleave4x32(row(kk, j0), row(kk + 1, j0), row(kk + 2, j0), row(kk + 3, j0), o);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(packed), o[0]);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(packed + 32), o[1]);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(packed + 64), o[2]);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(packed + 96), o[3]);
      packed += kGemmS8Nr * 4;
      // Column sums of the shifted bytes: 1 (unsigned) times each signed byte, four per word.
      s0 = Ops::dpbusd8(s0, ones, o[0]);
      s1 = Ops::dpbusd8(s1, ones, o[1]);
      s2 = Ops::dpbusd8(s2, ones, o[2]);
      s3 = Ops::dpbusd8(s3, ones, o[3]);
    }
    Ops::store8_n(col_sums + j0, s0, n - j0);
    Ops::store8_n(col_sums + j0 + 8, s1, n - j0 - 8);
    Ops::store8_n(col_sums + j0 + 16, s2, n - j0 - 16);
    Ops::store8_n(col_sums + j0 + 24, s3, n - j0 - 24);
  }
}

// c[j] + constant + alpha * col_sums[j], kLanes of them from j, in int32 with wraparound.
template <typename Ops>
inline typename Ops::V s8_corrected(const int32_t* c, const int32_t* col_sums, int64_t j, int64_t count,
                                    typename Ops::V alpha, typename Ops::V constant) {
  const typename Ops::V sum = Ops::add(Ops::load_n(c + j, count), constant);
  return Ops::add(sum, Ops::mullo(alpha, Ops::load_n(col_sums + j, count)));
}

// conv_s8_correct_s32_*.
template <typename Ops>
void s8_correct(const int32_t* c, int64_t n, const int32_t* col_sums, int32_t alpha, int32_t constant, int32_t* y) {
  const typename Ops::V va = Ops::set1(alpha), vc = Ops::set1(constant);
  for (int64_t j = 0; j < n; j += Ops::kLanes) Ops::store_n(y + j, s8_corrected<Ops>(c, col_sums, j, n - j, va, vc), n - j);
}

// conv_s8_requantize_*.
template <typename Ops, bool kSigned>
void s8_requantize_corrected(const int32_t* c, int64_t n, const int32_t* col_sums, int32_t alpha, int32_t constant,
                             float multiplier, float zero, uint8_t* y) {
  const typename Ops::V va = Ops::set1(alpha), vc = Ops::set1(constant);
  const typename Ops::F vm = Ops::set1f(multiplier), vz = Ops::set1f(zero);
  for (int64_t j = 0; j < n; j += Ops::kLanes)
    Ops::template requantize_store_n<kSigned>(s8_corrected<Ops>(c, col_sums, j, n - j, va, vc), vm, vz, y + j, n - j);
}

// conv_s8_depthwise_*: X's signedness and the output (0: int32 sums, 1: uint8, 2: int8 requantized
// with bias, multiplier and zero) fixed at compile time, kK (3) for a kK x kK kernel whose taps the
// compiler unrolls and keeps in registers, 0 for any other.
template <typename Ops, bool kXSigned, int kOut, int kK = 0>
void s8_depthwise(const uint8_t* padded, int64_t padded_width, int32_t x_zero, const int32_t* taps, int64_t kh,
                  int64_t kw, int64_t dh, int64_t dw, int64_t oh, int64_t ow, int32_t bias, float multiplier, float zero,
                  void* out) {
  using V = typename Ops::V;
  const V vbias = Ops::set1(bias);
  const typename Ops::F vm = Ops::set1f(multiplier), vq = Ops::set1f(zero);
  const int64_t count = kh * kw;
  // Tap t as an int32 lane whose high 16 bits are 0: vpdpwssd then adds lo(x) * tap + hi(x) * 0,
  // the exact product of the 16-bit (x - x_zero) and the tap.
  // X enters as it is: sum (x - x_zero) * tap = sum x * tap - x_zero * sum tap, all exact in int32.
  int32_t held[64];
  uint32_t tap_sum = 0;
  for (int64_t t = 0; t < count; ++t) {
    if (t < 64) held[t] = taps[t] & 0xFFFF;
    tap_sum += static_cast<uint32_t>(taps[t]);
  }
  const V start = Ops::set1(static_cast<int32_t>(0u - static_cast<uint32_t>(x_zero) * tap_sum));
  if constexpr (kK != 0) {
    kh = kw = kK;  // the compiler unrolls the taps and keeps them in registers
  }
  V fixed[kK == 0 ? 1 : kK * kK];
  if constexpr (kK != 0)
    for (int t = 0; t < kK * kK; ++t) fixed[t] = Ops::set1(held[t]);
  for (int64_t oy = 0; oy < oh; ++oy)
    for (int64_t ox = 0; ox < ow; ox += Ops::kLanes) {
      const int64_t lanes = ow - ox;
      V acc = start;
      if constexpr (kK != 0) {
        for (int ky = 0; ky < kK; ++ky) {
          const uint8_t* row = padded + (oy + ky * dh) * padded_width + ox;
          for (int kx = 0; kx < kK; ++kx)
            acc = Ops::dpwssd(acc, Ops::template load_bytes_n<kXSigned>(row + kx * dw, lanes), fixed[ky * kK + kx]);
        }
      } else {
        for (int64_t ky = 0; ky < kh; ++ky) {
          const uint8_t* row = padded + (oy + ky * dh) * padded_width + ox;
          for (int64_t kx = 0; kx < kw; ++kx) {
            const int64_t t = ky * kw + kx;
            const V tap = Ops::set1(t < 64 ? held[t] : (taps[t] & 0xFFFF));
            acc = Ops::dpwssd(acc, Ops::template load_bytes_n<kXSigned>(row + kx * dw, lanes), tap);
          }
        }
      }
      if constexpr (kOut == 0) {
        Ops::store_n(static_cast<int32_t*>(out) + oy * ow + ox, acc, lanes);
      } else {
        Ops::template requantize_store_n<kOut == 2>(Ops::add(acc, vbias), vm, vq,
                                                    static_cast<uint8_t*>(out) + oy * ow + ox, lanes);
      }
    }
}

template <typename Ops>
void s8_depthwise_s32(const uint8_t* padded, int64_t padded_width, int x_signed, int32_t x_zero, const int32_t* taps,
                      int64_t kh, int64_t kw, int64_t dh, int64_t dw, int64_t oh, int64_t ow, int32_t* out) {
  if (kh == 3 && kw == 3) {
    if (x_signed) s8_depthwise<Ops, true, 0, 3>(padded, padded_width, x_zero, taps, kh, kw, dh, dw, oh, ow, 0, 0.0f, 0.0f, out);
    else s8_depthwise<Ops, false, 0, 3>(padded, padded_width, x_zero, taps, kh, kw, dh, dw, oh, ow, 0, 0.0f, 0.0f, out);
    return;
  }
  if (x_signed) s8_depthwise<Ops, true, 0>(padded, padded_width, x_zero, taps, kh, kw, dh, dw, oh, ow, 0, 0.0f, 0.0f, out);
  else s8_depthwise<Ops, false, 0>(padded, padded_width, x_zero, taps, kh, kw, dh, dw, oh, ow, 0, 0.0f, 0.0f, out);
}

template <typename Ops>
void s8_depthwise_requantize(const uint8_t* padded, int64_t padded_width, int x_signed, int32_t x_zero,
                             const int32_t* taps, int64_t kh, int64_t kw, int64_t dh, int64_t dw, int64_t oh, int64_t ow,
                             int32_t bias, float multiplier, float zero, int y_signed, uint8_t* y) {
#define ONNX_LIGHT_DEPTHWISE(X, O, K) \
  s8_depthwise<Ops, X, O, K>(padded, padded_width, x_zero, taps, kh, kw, dh, dw, oh, ow, bias, multiplier, zero, y)
  if (kh == 3 && kw == 3) {
    if (x_signed && y_signed) ONNX_LIGHT_DEPTHWISE(true, 2, 3);
    else if (x_signed) ONNX_LIGHT_DEPTHWISE(true, 1, 3);
    else if (y_signed) ONNX_LIGHT_DEPTHWISE(false, 2, 3);
    else ONNX_LIGHT_DEPTHWISE(false, 1, 3);
    return;
  }
  if (x_signed && y_signed) ONNX_LIGHT_DEPTHWISE(true, 2, 0);
  else if (x_signed) ONNX_LIGHT_DEPTHWISE(true, 1, 0);
  else if (y_signed) ONNX_LIGHT_DEPTHWISE(false, 2, 0);
  else ONNX_LIGHT_DEPTHWISE(false, 1, 0);
#undef ONNX_LIGHT_DEPTHWISE
}

}  // namespace
}  // namespace onnx_light::runtime::kernels::simd
