// Nearest 2x rows with AVX-512: 16 inputs per load, two lane permutes give the 32 repeated outputs,
// four 64-byte stores write them to both rows (the SSE2 loop needs sixteen 16-byte stores).
#include <immintrin.h>

#include <cstdint>

#include "resize_f32.h"

namespace onnx_light::runtime::kernels::simd {

namespace {

inline void repeat2_row(const float* in, float* a, float* b, int64_t in_w) {
  const __m512i first_half = _mm512_setr_epi32(0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7);
  const __m512i second_half = _mm512_setr_epi32(8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13, 14, 14, 15, 15);
  int64_t i = 0;
  for (; i + 16 <= in_w; i += 16) {
    const __m512 v = _mm512_loadu_ps(in + i);
    const __m512 lo = _mm512_permutexvar_ps(first_half, v), hi = _mm512_permutexvar_ps(second_half, v);
    _mm512_storeu_ps(a + 2 * i, lo);
    _mm512_storeu_ps(a + 2 * i + 16, hi);
    _mm512_storeu_ps(b + 2 * i, lo);
    _mm512_storeu_ps(b + 2 * i + 16, hi);
  }
  if (i < in_w) {  // 1..15 inputs left: masked load, masked stores of their 2..30 outputs
    const int rest = static_cast<int>(in_w - i), outs = 2 * rest;
    const __m512 v = _mm512_maskz_loadu_ps(static_cast<__mmask16>((1u << rest) - 1u), in + i);
    const __m512 lo = _mm512_permutexvar_ps(first_half, v), hi = _mm512_permutexvar_ps(second_half, v);
    const auto lo_mask = static_cast<__mmask16>(outs >= 16 ? 0xFFFFu : (1u << outs) - 1u);
    const auto hi_mask = static_cast<__mmask16>(outs <= 16 ? 0u : (1u << (outs - 16)) - 1u);
    _mm512_mask_storeu_ps(a + 2 * i, lo_mask, lo);
    _mm512_mask_storeu_ps(a + 2 * i + 16, hi_mask, hi);
    _mm512_mask_storeu_ps(b + 2 * i, lo_mask, lo);
    _mm512_mask_storeu_ps(b + 2 * i + 16, hi_mask, hi);
  }
}

}  // namespace

void repeat2_rows_f32_avx512(const float* in, int64_t in_w, int64_t rows, float* out) {
  for (int64_t r = 0; r < rows; ++r) repeat2_row(in + r * in_w, out + 4 * r * in_w, out + (4 * r + 2) * in_w, in_w);
}

}  // namespace onnx_light::runtime::kernels::simd
