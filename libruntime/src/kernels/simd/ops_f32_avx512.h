#pragma once
// The AVX-512 F vector operations (16 float lanes, mask registers) the ISA-generic loops of this
// folder are written over (dwconv_f32_rows.h, activation_f32.h). Include only from *_avx512.cc files.
// GCC 12's AVX-512 intrinsics start from _mm512_undefined_ps(), which -Wmaybe-uninitialized
// reports at every inlined use (GCC bug 105593, fixed in GCC 13); silenced for the includer.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>

#include <cstdint>

namespace onnx_light::runtime::kernels::simd {
namespace {

// The first `count` lanes (none for count <= 0, all from 16 on): masks for row edges computed from
// differences that may fall outside [0, 16].
inline __mmask16 avx512_lanes_below(int64_t count) {
  if (count >= 16) return static_cast<__mmask16>(0xFFFF);
  if (count <= 0) return 0;
  return static_cast<__mmask16>((1u << count) - 1u);
}

struct Avx512 {
  using V = __m512;
  using Mask = __mmask16;
  static constexpr int64_t width = 16;
  static V zero() { return _mm512_setzero_ps(); }
  static V set1(float v) { return _mm512_set1_ps(v); }
  static V load(const float* p) { return _mm512_loadu_ps(p); }
  static void store(float* p, V v) { _mm512_storeu_ps(p, v); }
  static Mask mask(int64_t rem) { return static_cast<Mask>((1u << rem) - 1u); }
  static V load_partial(const float* p, Mask m) { return _mm512_maskz_loadu_ps(m, p); }
  static void store_partial(float* p, V v, Mask m) { _mm512_mask_storeu_ps(p, m, v); }
  static V fma(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }
  static V add(V a, V b) { return _mm512_add_ps(a, b); }
  static V mul(V a, V b) { return _mm512_mul_ps(a, b); }
  static V div(V a, V b) { return _mm512_div_ps(a, b); }
  // max/min keep the x86 operand order: max(a, b) = a > b ? a : b, min(a, b) = a < b ? a : b.
  static V max(V a, V b) { return _mm512_max_ps(a, b); }
  static V min(V a, V b) { return _mm512_min_ps(a, b); }
  // v < 0 ? if_negative : otherwise
  static V select_negative(V v, V if_negative, V otherwise) {
    return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(v, _mm512_setzero_ps(), _CMP_LT_OQ), otherwise, if_negative);
  }
  // r[i][j] <- r[j][i] for a 16 x 16 block: pairs, then quads within 128-bit lanes, then lanes.
  static void transpose(V* r) {
    V t[16], u[16];
    for (int i = 0; i < 16; i += 2) {
      t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
      t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
    }
    for (int g = 0; g < 16; g += 4) {  // u[g + m], lane k: column 4k + m of rows g..g+3
      u[g] = _mm512_castpd_ps(_mm512_unpacklo_pd(_mm512_castps_pd(t[g]), _mm512_castps_pd(t[g + 2])));
      u[g + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(_mm512_castps_pd(t[g]), _mm512_castps_pd(t[g + 2])));
      u[g + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(_mm512_castps_pd(t[g + 1]), _mm512_castps_pd(t[g + 3])));
      u[g + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(_mm512_castps_pd(t[g + 1]), _mm512_castps_pd(t[g + 3])));
    }
    for (int m = 0; m < 4; ++m) {
      const V lo_a = _mm512_shuffle_f32x4(u[m], u[4 + m], 0x44), hi_a = _mm512_shuffle_f32x4(u[m], u[4 + m], 0xEE);
      const V lo_b = _mm512_shuffle_f32x4(u[8 + m], u[12 + m], 0x44), hi_b = _mm512_shuffle_f32x4(u[8 + m], u[12 + m], 0xEE);
      r[m] = _mm512_shuffle_f32x4(lo_a, lo_b, 0x88);
      r[4 + m] = _mm512_shuffle_f32x4(lo_a, lo_b, 0xDD);
      r[8 + m] = _mm512_shuffle_f32x4(hi_a, hi_b, 0x88);
      r[12 + m] = _mm512_shuffle_f32x4(hi_a, hi_b, 0xDD);
    }
  }
};

}  // namespace
}  // namespace onnx_light::runtime::kernels::simd
