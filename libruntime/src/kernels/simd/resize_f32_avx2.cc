// Nearest 2x rows with AVX2: 8 inputs per load, two lane permutes give the 16 repeated outputs,
// four 32-byte stores write them to both rows; the last 1..7 inputs are moved one by one.
#include <immintrin.h>

#include <cstdint>

#include "resize_f32.h"

namespace onnx_light::runtime::kernels::simd {

namespace {

inline void repeat2_row(const float* in, float* a, float* b, int64_t in_w) {
  const __m256i first_half = _mm256_setr_epi32(0, 0, 1, 1, 2, 2, 3, 3);
  const __m256i second_half = _mm256_setr_epi32(4, 4, 5, 5, 6, 6, 7, 7);
  int64_t i = 0;
  for (; i + 8 <= in_w; i += 8) {
    const __m256 v = _mm256_loadu_ps(in + i);
    const __m256 lo = _mm256_permutevar8x32_ps(v, first_half), hi = _mm256_permutevar8x32_ps(v, second_half);
    _mm256_storeu_ps(a + 2 * i, lo);
    _mm256_storeu_ps(a + 2 * i + 8, hi);
    _mm256_storeu_ps(b + 2 * i, lo);
    _mm256_storeu_ps(b + 2 * i + 8, hi);
  }
  for (; i < in_w; ++i) a[2 * i] = a[2 * i + 1] = b[2 * i] = b[2 * i + 1] = in[i];
}

}  // namespace

void repeat2_rows_f32_avx2(const float* in, int64_t in_w, int64_t rows, float* out) {
  for (int64_t r = 0; r < rows; ++r) repeat2_row(in + r * in_w, out + 4 * r * in_w, out + (4 * r + 2) * in_w, in_w);
}

}  // namespace onnx_light::runtime::kernels::simd
