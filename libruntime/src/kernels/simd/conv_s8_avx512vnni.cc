// B packing and epilogues of the VNNI integer convolution (conv_s8.h).
#include <immintrin.h>

#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"  // GCC bug 105593

#include <cstddef>
#include <cstdint>

#include "kernels/simd/conv_s8.h"
#include "kernels/simd/gemm_s8.h"
#include "kernels/simd/gemm_s8_tile.h"

namespace onnx_light::runtime::kernels::simd {

namespace {

inline __mmask32 byte_lanes(int64_t count) {
  if (count >= 32) return static_cast<__mmask32>(0xFFFFFFFFu);
  if (count <= 0) return 0;
  return static_cast<__mmask32>((1u << count) - 1u);
}

inline __mmask8 lanes8(int64_t count) {
  if (count >= 8) return static_cast<__mmask8>(0xFF);
  if (count <= 0) return 0;
  return static_cast<__mmask8>((1u << count) - 1u);
}

// Row kk's 32 bytes from column j0 (`valid` of them), shifted; 0 past the matrix.
inline __m256i row_bytes(const uint8_t* b, const int64_t* rows, int64_t kk, int64_t k, int64_t j0, __mmask32 valid,
                         __m256i flip) {
  if (kk >= k) return _mm256_setzero_si256();
  const __m256i v = _mm256_maskz_loadu_epi8(valid, b + rows[kk] + j0);
  return _mm256_maskz_mov_epi8(valid, _mm256_xor_si256(v, flip));
}

// y = saturate(nearbyint(float(sum) * m) + z), 16 lanes (as requantize in gemm_s8_avx512vnni.cc).
template <bool kSigned>
inline __m512i requantize16(__m512i sum, __m512 m, __m512 z) {
  const __m512 lo = _mm512_set1_ps(kSigned ? -128.0f : 0.0f), hi = _mm512_set1_ps(kSigned ? 127.0f : 255.0f);
  const __m512 product = _mm512_mul_ps(_mm512_cvtepi32_ps(sum), m);
  const __m512 r = _mm512_add_ps(_mm512_roundscale_ps(product, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC), z);
  // MAXPS returns its second operand for a NaN first one: NaN saturates low, as in the portable code.
  return _mm512_cvtps_epi32(_mm512_min_ps(_mm512_max_ps(r, lo), hi));
}

template <bool kSigned, typename Q>
void requantize_corrected(const int32_t* c, int64_t n, const int32_t* col_sums, int32_t alpha, int32_t constant,
                          float multiplier, float zero, Q* y) {
  const __m512i va = _mm512_set1_epi32(alpha), vc = _mm512_set1_epi32(constant);
  const __m512 vm = _mm512_set1_ps(multiplier), vz = _mm512_set1_ps(zero);
  for (int64_t j = 0; j < n; j += 16) {
    const __mmask16 m = s8_lanes16(n - j);
    __m512i sum = _mm512_add_epi32(_mm512_maskz_loadu_epi32(m, c + j), vc);
    sum = _mm512_add_epi32(sum, _mm512_mullo_epi32(va, _mm512_maskz_loadu_epi32(m, col_sums + j)));
    _mm512_mask_cvtepi32_storeu_epi8(y + j, m, requantize16<kSigned>(sum, vm, vz));
  }
}

// The GEMM's 6 x 32 tile (gemm_s8_tile.h) with each depth group's B at its own offset.
void window_tile(const uint8_t* pa, int64_t groups, const uint8_t* b, const int64_t* offsets, int32_t* c, int64_t ldc,
                 int64_t rows, int64_t n) {
  __m512i lo[kGemmS8Mr], hi[kGemmS8Mr];
  s8_tile_6x32(pa, groups, [b, offsets](int64_t g) { return reinterpret_cast<const int8_t*>(b + offsets[g]); }, lo, hi);
  s8_store_tile(lo, hi, c, ldc, rows, n, nullptr, 0, 0);
}

}  // namespace

void conv_s8_interleave4_avx512vnni(const uint8_t* rows, int64_t row_stride, uint8_t flip, int64_t n, uint8_t* out,
                                    int32_t* sums) {
  const __m256i vflip = _mm256_set1_epi8(static_cast<char>(flip));
  const __m256i ones = _mm256_set1_epi8(1);
  for (int64_t j0 = 0; j0 < n; j0 += 32) {
    const __mmask32 valid = byte_lanes(n - j0);
    const __m256i r0 = _mm256_xor_si256(_mm256_maskz_loadu_epi8(valid, rows + j0), vflip);
    const __m256i r1 = _mm256_xor_si256(_mm256_maskz_loadu_epi8(valid, rows + row_stride + j0), vflip);
    const __m256i r2 = _mm256_xor_si256(_mm256_maskz_loadu_epi8(valid, rows + 2 * row_stride + j0), vflip);
    const __m256i r3 = _mm256_xor_si256(_mm256_maskz_loadu_epi8(valid, rows + 3 * row_stride + j0), vflip);
    const __m256i t01l = _mm256_unpacklo_epi8(r0, r1), t01h = _mm256_unpackhi_epi8(r0, r1);
    const __m256i t23l = _mm256_unpacklo_epi8(r2, r3), t23h = _mm256_unpackhi_epi8(r2, r3);
    const __m256i w0 = _mm256_unpacklo_epi16(t01l, t23l), w1 = _mm256_unpackhi_epi16(t01l, t23l);
    const __m256i w2 = _mm256_unpacklo_epi16(t01h, t23h), w3 = _mm256_unpackhi_epi16(t01h, t23h);
    const __m256i o[4] = {_mm256_permute2x128_si256(w0, w1, 0x20), _mm256_permute2x128_si256(w2, w3, 0x20),
                          _mm256_permute2x128_si256(w0, w1, 0x31), _mm256_permute2x128_si256(w2, w3, 0x31)};
    for (int64_t q = 0; q < 4; ++q) {
      const int64_t count = n - j0 - 8 * q;  // columns of this quarter
      if (count <= 0) break;
      const __mmask8 m = lanes8(count);
      const __mmask32 bytes = count >= 8 ? static_cast<__mmask32>(0xFFFFFFFFu) : static_cast<__mmask32>((1u << (4 * count)) - 1u);
      _mm256_mask_storeu_epi8(out + (j0 + 8 * q) * 4, bytes, o[q]);
      const __m256i word_sums = _mm256_dpbusd_epi32(_mm256_setzero_si256(), ones, o[q]);
      int32_t* s = sums + j0 + 8 * q;
      _mm256_mask_storeu_epi32(s, m, _mm256_add_epi32(_mm256_maskz_loadu_epi32(m, s), word_sums));
    }
  }
}

void conv_s8_gemm_windows_avx512vnni(const uint8_t* packed_a, int64_t m, int64_t groups, const uint8_t* b,
                                     const int64_t* offsets, int64_t n, int32_t* c, int64_t ldc) {
  const int64_t a_panel = groups * kGemmS8Mr * 4;
  for (int64_t q = 0; q * kGemmS8Nr < n; ++q) {
    const int64_t j0 = q * kGemmS8Nr;
    const int64_t cols = n - j0 < kGemmS8Nr ? n - j0 : kGemmS8Nr;
    for (int64_t i = 0; i < m; i += kGemmS8Mr) {
      const int64_t rows = m - i < kGemmS8Mr ? m - i : kGemmS8Mr;
      window_tile(packed_a + (i / kGemmS8Mr) * a_panel, groups, b + j0 * 4, offsets, c + i * ldc + j0, ldc, rows, cols);
    }
  }
}

void conv_s8_pack_b_avx512vnni(const uint8_t* b, const int64_t* rows, int b_unsigned, int64_t k, int64_t n,
                               int8_t* packed, int32_t* col_sums) {
  const __m256i flip = _mm256_set1_epi8(b_unsigned ? static_cast<char>(0x80) : 0);
  const __m256i ones = _mm256_set1_epi8(1);
  const int64_t groups = (k + 3) / 4;
  for (int64_t j0 = 0; j0 < n; j0 += kGemmS8Nr) {
    const __mmask32 valid = byte_lanes(n - j0);
    __m256i s0 = _mm256_setzero_si256(), s1 = s0, s2 = s0, s3 = s0;
    for (int64_t g = 0; g < groups; ++g) {
      const int64_t kk = g * 4;
      const __m256i r0 = row_bytes(b, rows, kk, k, j0, valid, flip);
      const __m256i r1 = row_bytes(b, rows, kk + 1, k, j0, valid, flip);
      const __m256i r2 = row_bytes(b, rows, kk + 2, k, j0, valid, flip);
      const __m256i r3 = row_bytes(b, rows, kk + 3, k, j0, valid, flip);
      // Bytes (r0[j], r1[j], r2[j], r3[j]) as word j: two interleaving steps within 128-bit lanes,
      // then the lanes put in column order.
      const __m256i t01l = _mm256_unpacklo_epi8(r0, r1), t01h = _mm256_unpackhi_epi8(r0, r1);
      const __m256i t23l = _mm256_unpacklo_epi8(r2, r3), t23h = _mm256_unpackhi_epi8(r2, r3);
      const __m256i w0 = _mm256_unpacklo_epi16(t01l, t23l);  // columns 0-3 | 16-19
      const __m256i w1 = _mm256_unpackhi_epi16(t01l, t23l);  // 4-7 | 20-23
      const __m256i w2 = _mm256_unpacklo_epi16(t01h, t23h);  // 8-11 | 24-27
      const __m256i w3 = _mm256_unpackhi_epi16(t01h, t23h);  // 12-15 | 28-31
      const __m256i o0 = _mm256_permute2x128_si256(w0, w1, 0x20);
      const __m256i o1 = _mm256_permute2x128_si256(w2, w3, 0x20);
      const __m256i o2 = _mm256_permute2x128_si256(w0, w1, 0x31);
      const __m256i o3 = _mm256_permute2x128_si256(w2, w3, 0x31);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(packed), o0);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(packed + 32), o1);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(packed + 64), o2);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(packed + 96), o3);
      packed += kGemmS8Nr * 4;
      // Column sums of the shifted bytes: 1 (unsigned) times each signed byte, four per word.
      s0 = _mm256_dpbusd_epi32(s0, ones, o0);
      s1 = _mm256_dpbusd_epi32(s1, ones, o1);
      s2 = _mm256_dpbusd_epi32(s2, ones, o2);
      s3 = _mm256_dpbusd_epi32(s3, ones, o3);
    }
    _mm256_mask_storeu_epi32(col_sums + j0, lanes8(n - j0), s0);
    _mm256_mask_storeu_epi32(col_sums + j0 + 8, lanes8(n - j0 - 8), s1);
    _mm256_mask_storeu_epi32(col_sums + j0 + 16, lanes8(n - j0 - 16), s2);
    _mm256_mask_storeu_epi32(col_sums + j0 + 24, lanes8(n - j0 - 24), s3);
  }
}

void conv_s8_correct_s32_avx512vnni(const int32_t* c, int64_t n, const int32_t* col_sums, int32_t alpha,
                                    int32_t constant, int32_t* y) {
  const __m512i va = _mm512_set1_epi32(alpha), vc = _mm512_set1_epi32(constant);
  for (int64_t j = 0; j < n; j += 16) {
    const __mmask16 m = s8_lanes16(n - j);
    __m512i sum = _mm512_add_epi32(_mm512_maskz_loadu_epi32(m, c + j), vc);
    sum = _mm512_add_epi32(sum, _mm512_mullo_epi32(va, _mm512_maskz_loadu_epi32(m, col_sums + j)));
    _mm512_mask_storeu_epi32(y + j, m, sum);
  }
}

void conv_s8_requantize_u8_avx512vnni(const int32_t* c, int64_t n, const int32_t* col_sums, int32_t alpha,
                                      int32_t constant, float multiplier, float zero, uint8_t* y) {
  requantize_corrected<false>(c, n, col_sums, alpha, constant, multiplier, zero, y);
}

void conv_s8_requantize_s8_avx512vnni(const int32_t* c, int64_t n, const int32_t* col_sums, int32_t alpha,
                                      int32_t constant, float multiplier, float zero, int8_t* y) {
  requantize_corrected<true>(c, n, col_sums, alpha, constant, multiplier, zero, y);
}

namespace {

// The depthwise loop, X's signedness and the output (0: int32 sums, 1: uint8, 2: int8 requantized
// with bias, multiplier and zero) fixed at compile time.
template <bool kXSigned, int kOut, int kK = 0>
void depthwise(const uint8_t* padded, int64_t padded_width, int32_t x_zero, const int32_t* taps, int64_t kh, int64_t kw,
               int64_t dh, int64_t dw, int64_t oh, int64_t ow, int32_t bias, float multiplier, float zero, void* out) {
  const __m512i vbias = _mm512_set1_epi32(bias);
  const __m512 vm = _mm512_set1_ps(multiplier), vq = _mm512_set1_ps(zero);
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
  const __m512i start = _mm512_set1_epi32(static_cast<int32_t>(0u - static_cast<uint32_t>(x_zero) * tap_sum));
  if constexpr (kK != 0) {
    kh = kw = kK;  // the compiler unrolls the taps and keeps them in registers
  }
  __m512i fixed[kK == 0 ? 1 : kK * kK];
  if constexpr (kK != 0)
    for (int t = 0; t < kK * kK; ++t) fixed[t] = _mm512_set1_epi32(held[t]);
  for (int64_t oy = 0; oy < oh; ++oy)
    for (int64_t ox = 0; ox < ow; ox += 16) {
      const __mmask16 m = s8_lanes16(ow - ox);
      __m512i acc = start;
      if constexpr (kK != 0) {
        for (int ky = 0; ky < kK; ++ky) {
          const uint8_t* row = padded + (oy + ky * dh) * padded_width + ox;
          for (int kx = 0; kx < kK; ++kx) {
            const __m128i bytes = _mm_maskz_loadu_epi8(m, row + kx * dw);
            const __m512i x = kXSigned ? _mm512_cvtepi8_epi32(bytes) : _mm512_cvtepu8_epi32(bytes);
            acc = _mm512_dpwssd_epi32(acc, x, fixed[ky * kK + kx]);
          }
        }
      } else for (int64_t ky = 0; ky < kh; ++ky) {
        const uint8_t* row = padded + (oy + ky * dh) * padded_width + ox;
        for (int64_t kx = 0; kx < kw; ++kx) {
          const __m128i bytes = _mm_maskz_loadu_epi8(m, row + kx * dw);
          const __m512i x = kXSigned ? _mm512_cvtepi8_epi32(bytes) : _mm512_cvtepu8_epi32(bytes);
          const int64_t t = ky * kw + kx;
          const __m512i tap = _mm512_set1_epi32(t < 64 ? held[t] : (taps[t] & 0xFFFF));
          acc = _mm512_dpwssd_epi32(acc, x, tap);
        }
      }
      if constexpr (kOut == 0) {
        _mm512_mask_storeu_epi32(static_cast<int32_t*>(out) + oy * ow + ox, m, acc);
      } else {
        const __m512i q = requantize16<kOut == 2>(_mm512_add_epi32(acc, vbias), vm, vq);
        _mm512_mask_cvtepi32_storeu_epi8(static_cast<uint8_t*>(out) + oy * ow + ox, m, q);
      }
    }
}

}  // namespace

void conv_s8_depthwise_avx512vnni(const uint8_t* padded, int64_t padded_width, int x_signed, int32_t x_zero,
                                  const int32_t* taps, int64_t kh, int64_t kw, int64_t dh, int64_t dw, int64_t oh,
                                  int64_t ow, int32_t* out) {
  if (kh == 3 && kw == 3) {
    if (x_signed) depthwise<true, 0, 3>(padded, padded_width, x_zero, taps, kh, kw, dh, dw, oh, ow, 0, 0.0f, 0.0f, out);
    else depthwise<false, 0, 3>(padded, padded_width, x_zero, taps, kh, kw, dh, dw, oh, ow, 0, 0.0f, 0.0f, out);
    return;
  }
  if (x_signed) depthwise<true, 0>(padded, padded_width, x_zero, taps, kh, kw, dh, dw, oh, ow, 0, 0.0f, 0.0f, out);
  else depthwise<false, 0>(padded, padded_width, x_zero, taps, kh, kw, dh, dw, oh, ow, 0, 0.0f, 0.0f, out);
}

void conv_s8_depthwise_requantize_avx512vnni(const uint8_t* padded, int64_t padded_width, int x_signed, int32_t x_zero,
                                             const int32_t* taps, int64_t kh, int64_t kw, int64_t dh, int64_t dw,
                                             int64_t oh, int64_t ow, int32_t bias, float multiplier, float zero,
                                             int y_signed, uint8_t* y) {
  if (kh == 3 && kw == 3) {
    if (x_signed && y_signed) depthwise<true, 2, 3>(padded, padded_width, x_zero, taps, kh, kw, dh, dw, oh, ow, bias, multiplier, zero, y);
    else if (x_signed) depthwise<true, 1, 3>(padded, padded_width, x_zero, taps, kh, kw, dh, dw, oh, ow, bias, multiplier, zero, y);
    else if (y_signed) depthwise<false, 2, 3>(padded, padded_width, x_zero, taps, kh, kw, dh, dw, oh, ow, bias, multiplier, zero, y);
    else depthwise<false, 1, 3>(padded, padded_width, x_zero, taps, kh, kw, dh, dw, oh, ow, bias, multiplier, zero, y);
    return;
  }
  if (x_signed && y_signed) depthwise<true, 2>(padded, padded_width, x_zero, taps, kh, kw, dh, dw, oh, ow, bias, multiplier, zero, y);
  else if (x_signed) depthwise<true, 1>(padded, padded_width, x_zero, taps, kh, kw, dh, dw, oh, ow, bias, multiplier, zero, y);
  else if (y_signed) depthwise<false, 2>(padded, padded_width, x_zero, taps, kh, kw, dh, dw, oh, ow, bias, multiplier, zero, y);
  else depthwise<false, 1>(padded, padded_width, x_zero, taps, kh, kw, dh, dw, oh, ow, bias, multiplier, zero, y);
}

}  // namespace onnx_light::runtime::kernels::simd
