// Softmax, LogSoftmax and exp over float32 with AVX-512 F (16 lanes, masked tails): the vector
// operations and exp that the passes of softmax_f32_passes.h run on. 2^n is applied with
// vscalefps, which covers the whole range (subnormal results, overflow to +inf) in one instruction.
// GCC 12's AVX-512 intrinsics start from _mm512_undefined_ps(), which -Wmaybe-uninitialized
// reports at every inlined use (GCC bug 105593, fixed in GCC 13).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>

#include <cstddef>
#include <cstdint>

#include "kernels/simd/softmax_f32.h"
#include "kernels/simd/softmax_f32_passes.h"

namespace onnx_light::runtime::kernels::simd {

namespace {

constexpr float kLog2e = 1.44269504088896341f;
constexpr float kLn2Hi = 0.693359375f;
constexpr float kLn2Lo = -2.12194440e-4f;
constexpr float kNonpositiveLower = -87.33654f;  // ln(FLT_MIN): below this the result is 0
constexpr float kGeneralLower = -104.0f;          // exp(-104) rounds to 0 in float
constexpr float kGeneralUpper = 89.0f;            // exp(89) overflows to +inf

inline __mmask16 tail_mask(int64_t rem) { return static_cast<__mmask16>((1u << rem) - 1u); }

inline __m512 exp_poly(__m512 r) {
  __m512 p = _mm512_set1_ps(1.9875691500e-4f);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.3981999507e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.3334519073e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1665795894e-2f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666665459e-1f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.0000001201e-1f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
  return _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
}

// n = round(x log2 e), r = x - n ln 2.
inline __m512 reduce(__m512 x, __m512& n) {
  n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(kLog2e)), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  const __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(kLn2Hi), x);
  return _mm512_fnmadd_ps(n, _mm512_set1_ps(kLn2Lo), r);
}

// No clamp: lanes below ln FLT_MIN (-inf included) compute garbage that the mask zeroes.
// n = round(x log2 e) by the 1.5 * 2^23 rounding constant (two single-uop ops, where
// vrndscaleps is two uops).
inline __m512 exp_nonpositive(__m512 x) {
  const __mmask16 keep = _mm512_cmp_ps_mask(x, _mm512_set1_ps(kNonpositiveLower), _CMP_NLT_UQ);  // x >= lower or NaN
  const __m512 magic = _mm512_set1_ps(12582912.0f);
  const __m512 n = _mm512_sub_ps(_mm512_fmadd_ps(x, _mm512_set1_ps(kLog2e), magic), magic);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(kLn2Hi), x);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(kLn2Lo), r);
  return _mm512_maskz_scalef_ps(keep, exp_poly(r), n);
}

inline __m512 exp_general(__m512 x) {
  __m512 xc = _mm512_max_ps(_mm512_set1_ps(kGeneralLower), x);
  xc = _mm512_min_ps(_mm512_set1_ps(kGeneralUpper), xc);
  __m512 n;
  const __m512 r = reduce(xc, n);
  return _mm512_scalef_ps(exp_poly(r), n);
}

// Fixed horizontal trees (16 -> 8 -> 4 -> 2 -> 1).
inline float hsum(__m512 v) {
  const __m256 h = _mm256_add_ps(_mm512_castps512_ps256(v), _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1)));
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}
inline float hmax(__m512 v) {
  const __m256 h = _mm256_max_ps(_mm512_castps512_ps256(v), _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1)));
  __m128 s = _mm_max_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
  s = _mm_max_ps(s, _mm_movehl_ps(s, s));
  s = _mm_max_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

struct Avx512 {
  using Reg = __m512;
  using Mask = __mmask16;
  static constexpr int64_t kLanes = 16;
  static Reg load(const float* p) { return _mm512_loadu_ps(p); }
  static void store(float* p, Reg v) { _mm512_storeu_ps(p, v); }
  static Reg set1(float v) { return _mm512_set1_ps(v); }
  static Reg zero() { return _mm512_setzero_ps(); }
  static Reg add(Reg a, Reg b) { return _mm512_add_ps(a, b); }
  static Reg sub(Reg a, Reg b) { return _mm512_sub_ps(a, b); }
  static Reg mul(Reg a, Reg b) { return _mm512_mul_ps(a, b); }
  static Reg div(Reg a, Reg b) { return _mm512_div_ps(a, b); }
  static Reg max(Reg a, Reg b) { return _mm512_max_ps(a, b); }
  static Mask tail_mask(int64_t rem) { return simd::tail_mask(rem); }
  static Reg load_or(Mask m, const float* p, Reg fill) { return _mm512_mask_loadu_ps(fill, m, p); }
  static void store_masked(float* p, Mask m, Reg v) { _mm512_mask_storeu_ps(p, m, v); }
  static Reg keep(Mask m, Reg v) { return _mm512_maskz_mov_ps(m, v); }
  static Reg exp_nonpositive(Reg x) { return simd::exp_nonpositive(x); }
  static Reg exp_general(Reg x) { return simd::exp_general(x); }
  static float hsum(Reg v) { return simd::hsum(v); }
  static float hmax(Reg v) { return simd::hmax(v); }
};

}  // namespace

void exp_f32_avx512(const float* x, float* y, int64_t n) {
  map<Avx512>(x, y, n, [](__m512 v) { return Avx512::exp_general(v); });
}
void exp_span_f32_avx512(const float* x, float* y, int64_t n, bool) { exp_f32_avx512(x, y, n); }

void sigmoid_f32_avx512(const float* x, float* y, int64_t n, bool) {
  map<Avx512>(x, y, n, [](__m512 v) {
    const __m512 one = _mm512_set1_ps(1.0f);
    // exp(-|x|), in [0, 1]; the sign bit set with an integer OR (vorps needs AVX-512 DQ).
    const __m512 e = exp_general(
        _mm512_castsi512_ps(_mm512_or_epi32(_mm512_castps_si512(v), _mm512_set1_epi32(static_cast<int>(0x80000000u)))));
    const __m512 numerator = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(v, _mm512_setzero_ps(), _CMP_LT_OQ), one, e);
    return _mm512_div_ps(numerator, _mm512_add_ps(one, e));
  });
}

void exp_nonpositive_f32_avx512(const float* x, float* y, int64_t n) {
  map<Avx512>(x, y, n, [](__m512 v) { return Avx512::exp_nonpositive(v); });
}

void softmax_rows_f32_avx512(const float* x, float* y, int64_t count, int64_t length) {
  rows<Avx512, false>(x, y, count, length);
}
void log_softmax_rows_f32_avx512(const float* x, float* y, int64_t count, int64_t length) {
  rows<Avx512, true>(x, y, count, length);
}
void softmax_strided_f32_avx512(const float* x, float* y, int64_t length, int64_t stride, int64_t count) {
  strided<Avx512, false>(x, y, length, stride, count);
}
void log_softmax_strided_f32_avx512(const float* x, float* y, int64_t length, int64_t stride, int64_t count) {
  strided<Avx512, true>(x, y, length, stride, count);
}

}  // namespace onnx_light::runtime::kernels::simd
