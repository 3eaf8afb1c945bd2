#pragma once
// The 6 x 32 vpdpbusd tile of gemm_s8.h written once, for the AVX-512 VNNI files only (the GEMM's
// packed B panels and the convolution's B read in place at per-group offsets). Internal linkage
// (anonymous namespace, see README.md): each including file compiles its own copy.
#include <immintrin.h>

#include <cstddef>
#include <cstdint>

#include "kernels/simd/gemm_s8.h"

namespace onnx_light::runtime::kernels::simd {
namespace {

// The low `count` of 16 lanes (0 to 16).
inline __mmask16 s8_lanes16(int64_t count) {
  if (count >= 16) return static_cast<__mmask16>(0xFFFF);
  if (count <= 0) return 0;
  return static_cast<__mmask16>((1u << count) - 1u);
}

// Four bytes of A broadcast to every lane, straight from memory.
inline __m512i s8_broadcast_word(const uint8_t* p) {
  int word;
  __builtin_memcpy(&word, p, 4);
  return _mm512_set1_epi32(word);
}

// acc += dot4(a, b) per lane. Written as asm because GCC 12 copies every accumulator through a
// spare register around _mm512_dpbusd_epi32 (two extra moves per product: half the throughput).
// A macro, not a function: the accumulators are register variables, whose address is never taken.
#define ONNX_LIGHT_DPBUSD(acc, a, b) asm("vpdpbusd %2, %1, %0" : "+v"(acc) : "v"(a), "v"(b))

// The raw sums of one 6-row A panel (`groups` depth groups) by 32 columns of B, whose group g's
// 128 bytes (32 words) are at b_at(g): rows' low 16 columns in lo, high 16 in hi. Twelve named
// accumulators rather than an array: with the asm above, an array would live in memory.
template <typename BAt>
__attribute__((always_inline)) inline void s8_tile_6x32(const uint8_t* pa, int64_t groups, BAt b_at,
                                                         __m512i (&lo)[kGemmS8Mr], __m512i (&hi)[kGemmS8Mr]) {
  static_assert(kGemmS8Mr == 6, "the tile below is written out for six rows");
  __m512i c00 = _mm512_setzero_si512(), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00;
  __m512i c30 = c00, c31 = c00, c40 = c00, c41 = c00, c50 = c00, c51 = c00;
  for (int64_t g = 0; g < groups; ++g) {
    const int8_t* pb = b_at(g);
    const __m512i b0 = _mm512_loadu_si512(pb);
    const __m512i b1 = _mm512_loadu_si512(pb + 64);
    __m512i a = s8_broadcast_word(pa);
    ONNX_LIGHT_DPBUSD(c00, a, b0);
    ONNX_LIGHT_DPBUSD(c01, a, b1);
    a = s8_broadcast_word(pa + 4);
    ONNX_LIGHT_DPBUSD(c10, a, b0);
    ONNX_LIGHT_DPBUSD(c11, a, b1);
    a = s8_broadcast_word(pa + 8);
    ONNX_LIGHT_DPBUSD(c20, a, b0);
    ONNX_LIGHT_DPBUSD(c21, a, b1);
    a = s8_broadcast_word(pa + 12);
    ONNX_LIGHT_DPBUSD(c30, a, b0);
    ONNX_LIGHT_DPBUSD(c31, a, b1);
    a = s8_broadcast_word(pa + 16);
    ONNX_LIGHT_DPBUSD(c40, a, b0);
    ONNX_LIGHT_DPBUSD(c41, a, b1);
    a = s8_broadcast_word(pa + 20);
    ONNX_LIGHT_DPBUSD(c50, a, b0);
    ONNX_LIGHT_DPBUSD(c51, a, b1);
    pa += kGemmS8Mr * 4;
  }
  lo[0] = c00, lo[1] = c10, lo[2] = c20, lo[3] = c30, lo[4] = c40, lo[5] = c50;
  hi[0] = c01, hi[1] = c11, hi[2] = c21, hi[3] = c31, hi[4] = c41, hi[5] = c51;
}

#undef ONNX_LIGHT_DPBUSD

// Stores `rows` rows and `n` columns (up to 32) of a tile at c (row stride ldc), corrected first
// when `correction` is given (indexed from the tile's first row i0 and column j0, gemm_s8.h).
inline void s8_store_tile(__m512i (&lo)[kGemmS8Mr], __m512i (&hi)[kGemmS8Mr], int32_t* c, int64_t ldc, int64_t rows,
                          int64_t n, const GemmS8Correction* correction, int64_t i0, int64_t j0) {
  const __mmask16 m0 = s8_lanes16(n), m1 = s8_lanes16(n - 16);
  if (correction != nullptr) {
    // Masked loads: the columns past n are neither read nor stored.
    const __m512i beta0 = _mm512_maskz_loadu_epi32(m0, correction->beta + j0);
    const __m512i beta1 = _mm512_maskz_loadu_epi32(m1, correction->beta + j0 + 16);
    const __m512i col0 = _mm512_maskz_loadu_epi32(m0, correction->col_sums + j0);
    const __m512i col1 = _mm512_maskz_loadu_epi32(m1, correction->col_sums + j0 + 16);
    for (int64_t r = 0; r < rows; ++r) {
      const __m512i term = _mm512_set1_epi32(correction->row_term[i0 + r]);
      const __m512i alpha = _mm512_set1_epi32(correction->row_alpha[i0 + r]);
      lo[r] = _mm512_add_epi32(_mm512_add_epi32(lo[r], _mm512_mullo_epi32(beta0, term)), _mm512_mullo_epi32(alpha, col0));
      hi[r] = _mm512_add_epi32(_mm512_add_epi32(hi[r], _mm512_mullo_epi32(beta1, term)), _mm512_mullo_epi32(alpha, col1));
    }
  }
  for (int64_t r = 0; r < rows; ++r) {
    _mm512_mask_storeu_epi32(c + r * ldc, m0, lo[r]);
    _mm512_mask_storeu_epi32(c + r * ldc + 16, m1, hi[r]);
  }
}

}  // namespace
}  // namespace onnx_light::runtime::kernels::simd
