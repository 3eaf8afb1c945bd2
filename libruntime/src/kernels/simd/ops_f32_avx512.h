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
};

}  // namespace
}  // namespace onnx_light::runtime::kernels::simd
