// Per-tensor QuantizeLinear / DequantizeLinear on AVX-512 (quantize_f32.h).
#include <immintrin.h>

#include <cstdint>

#include "kernels/simd/ops_f32_avx512.h"
#include "kernels/simd/quantize_f32.h"

namespace onnx_light::runtime::kernels::simd {

namespace {

// Whole vectors, then the rest under a mask: `step(i, mask)` for each 16 elements from i.
template <typename Step>
inline void for_each_vector(int64_t n, Step step) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) step(i, static_cast<__mmask16>(0xFFFF));
  if (i < n) step(i, Avx512::mask(n - i));
}

// round(x / scale) + zero, clamped to [lo, hi]: MAXPS returns its second operand when the first is
// NaN, so NaN becomes lo as in the portable saturate_round.
inline __m512i quantized(__m512 x, __m512 scale, __m512 zero, __m512 lo, __m512 hi) {
  const __m512 r = _mm512_roundscale_ps(_mm512_div_ps(x, scale), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  return _mm512_cvtps_epi32(_mm512_min_ps(_mm512_max_ps(_mm512_add_ps(r, zero), lo), hi));
}

template <bool kSigned, typename Q>
void quantize(const float* x, int64_t n, float scale, float zero, Q* y) {
  const __m512 vs = _mm512_set1_ps(scale), vz = _mm512_set1_ps(zero);
  const __m512 lo = _mm512_set1_ps(kSigned ? -128.0f : 0.0f), hi = _mm512_set1_ps(kSigned ? 127.0f : 255.0f);
  for_each_vector(n, [&](int64_t i, __mmask16 m) {
    const __m512i q = quantized(_mm512_maskz_loadu_ps(m, x + i), vs, vz, lo, hi);
    // In range by the clamp: the narrowing conversion is exact.
    _mm512_mask_cvtepi32_storeu_epi8(y + i, m, q);
  });
}

}  // namespace

void quantize_f32_u8_avx512(const float* x, int64_t n, float scale, float zero, uint8_t* y) {
  quantize<false>(x, n, scale, zero, y);
}

void quantize_f32_s8_avx512(const float* x, int64_t n, float scale, float zero, int8_t* y) {
  quantize<true>(x, n, scale, zero, y);
}

void dequantize_u8_f32_avx512(const uint8_t* x, int64_t n, int32_t zero, float scale, float* y) {
  const __m512i vz = _mm512_set1_epi32(zero);
  const __m512 vs = _mm512_set1_ps(scale);
  for_each_vector(n, [&](int64_t i, __mmask16 m) {
    const __m512i v = _mm512_cvtepu8_epi32(_mm_maskz_loadu_epi8(m, x + i));
    _mm512_mask_storeu_ps(y + i, m, _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_sub_epi32(v, vz)), vs));
  });
}

void dequantize_s8_f32_avx512(const int8_t* x, int64_t n, int32_t zero, float scale, float* y) {
  const __m512i vz = _mm512_set1_epi32(zero);
  const __m512 vs = _mm512_set1_ps(scale);
  for_each_vector(n, [&](int64_t i, __mmask16 m) {
    const __m512i v = _mm512_cvtepi8_epi32(_mm_maskz_loadu_epi8(m, x + i));
    _mm512_mask_storeu_ps(y + i, m, _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_sub_epi32(v, vz)), vs));
  });
}

}  // namespace onnx_light::runtime::kernels::simd
