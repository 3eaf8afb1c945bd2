#pragma once
// The AVX2 + FMA vector operations (8 float lanes) the ISA-generic loops of this folder are written
// over (dwconv_f32_rows.h, activation_f32.h). Include only from *_avx2.cc files (README.md).
#include <immintrin.h>

#include <cstdint>

namespace onnx_light::runtime::kernels::simd {
namespace {

struct Avx2 {
  using V = __m256;
  using Mask = __m256i;
  static constexpr int64_t width = 8;
  static V zero() { return _mm256_setzero_ps(); }
  static V set1(float v) { return _mm256_set1_ps(v); }
  static V load(const float* p) { return _mm256_loadu_ps(p); }
  static void store(float* p, V v) { _mm256_storeu_ps(p, v); }
  static Mask mask(int64_t rem) {
    // Lane i active when i < rem.
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(rem)), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  }
  static V load_partial(const float* p, Mask m) { return _mm256_maskload_ps(p, m); }
  static void store_partial(float* p, V v, Mask m) { _mm256_maskstore_ps(p, m, v); }
  static V fma(V a, V b, V c) { return _mm256_fmadd_ps(a, b, c); }
  static V add(V a, V b) { return _mm256_add_ps(a, b); }
  static V mul(V a, V b) { return _mm256_mul_ps(a, b); }
  static V div(V a, V b) { return _mm256_div_ps(a, b); }
  static V max(V a, V b) { return _mm256_max_ps(a, b); }
  static V min(V a, V b) { return _mm256_min_ps(a, b); }
  static V select_negative(V v, V if_negative, V otherwise) {
    return _mm256_blendv_ps(otherwise, if_negative, _mm256_cmp_ps(v, _mm256_setzero_ps(), _CMP_LT_OQ));
  }
  // r[i][j] <- r[j][i] for an 8 x 8 block: pairs, quads within 128-bit lanes, then lanes.
  static void transpose(V* r) {
    V t[8], u[8];
    for (int i = 0; i < 8; i += 2) {
      t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
      t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
    }
    for (int g = 0; g < 8; g += 4) {  // u[g + m], lane k: column 4k + m of rows g..g+3
      u[g] = _mm256_shuffle_ps(t[g], t[g + 2], 0x44);
      u[g + 1] = _mm256_shuffle_ps(t[g], t[g + 2], 0xEE);
      u[g + 2] = _mm256_shuffle_ps(t[g + 1], t[g + 3], 0x44);
      u[g + 3] = _mm256_shuffle_ps(t[g + 1], t[g + 3], 0xEE);
    }
    for (int m = 0; m < 4; ++m) {
      r[m] = _mm256_permute2f128_ps(u[m], u[4 + m], 0x20);
      r[4 + m] = _mm256_permute2f128_ps(u[m], u[4 + m], 0x31);
    }
  }
};

}  // namespace
}  // namespace onnx_light::runtime::kernels::simd
