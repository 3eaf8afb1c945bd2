// Softmax, LogSoftmax and exp over float32 with AVX2 + FMA (8 lanes): the vector operations and
// exp that the passes of softmax_f32_passes.h run on. See softmax_f32.h.
//
// exp(x): n = round(x * log2 e), r = x - n * ln 2 (ln 2 split into a 9-bit head, exact in
// n * head, and a tail), e^r by a degree-6 polynomial (Cephes expf coefficients, |r| <= ln2 / 2),
// then times 2^n built from exponent bits.
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
// 1.5 * 2^23: adding it rounds to an integer held in the low mantissa bits.
constexpr float kRoundMagic = 12582912.0f;
constexpr float kNonpositiveLower = -87.33654f;  // ln(FLT_MIN): below this the result is 0
constexpr float kGeneralLower = -104.0f;          // exp(-104) rounds to 0 in float
constexpr float kGeneralUpper = 89.0f;            // exp(89) overflows to +inf

const int32_t kTailMask[16] = {-1, -1, -1, -1, -1, -1, -1, -1, 0, 0, 0, 0, 0, 0, 0, 0};

// Lanes [0, rem) set, 0 < rem <= 8.
inline __m256i tail_mask(int64_t rem) {
  return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(kTailMask + 8 - rem));
}

// e^r for |r| <= ln2 / 2.
inline __m256 exp_poly(__m256 r) {
  __m256 p = _mm256_set1_ps(1.9875691500e-4f);
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.3981999507e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.3334519073e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.1665795894e-2f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6666665459e-1f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(5.0000001201e-1f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
  return _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
}

// exp for x <= 0 (NaN propagates, -inf and x < ln FLT_MIN give 0). For x in [ln FLT_MIN, 0],
// n is in [-126, 0], so 2^n is built directly from the biased exponent held in t's low bits;
// there is no clamp: lanes below (-inf included) compute garbage that the mask zeroes.
inline __m256 exp_nonpositive(__m256 x) {
  const __m256 keep = _mm256_cmp_ps(x, _mm256_set1_ps(kNonpositiveLower), _CMP_NLT_UQ);  // x >= lower or NaN
  // t = magic + 127 + n: its bits hold n + 127 in the low mantissa bits.
  const __m256 magic = _mm256_set1_ps(kRoundMagic + 127.0f);
  const __m256 t = _mm256_fmadd_ps(x, _mm256_set1_ps(kLog2e), magic);
  const __m256 n = _mm256_sub_ps(t, magic);
  __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(kLn2Hi), x);
  r = _mm256_fnmadd_ps(n, _mm256_set1_ps(kLn2Lo), r);
  const __m256 scale = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_castps_si256(t), 23));
  return _mm256_and_ps(_mm256_mul_ps(exp_poly(r), scale), keep);
}

// exp over the whole range: 2^n applied as 2^(n >> 1) * 2^(n - (n >> 1)) so that n in
// [-150, 129] stays representable (subnormal results round once; overflow gives +inf).
inline __m256 exp_general(__m256 x) {
  __m256 xc = _mm256_max_ps(_mm256_set1_ps(kGeneralLower), x);  // NaN stays NaN
  xc = _mm256_min_ps(_mm256_set1_ps(kGeneralUpper), xc);
  const __m256 magic = _mm256_set1_ps(kRoundMagic);
  const __m256 t = _mm256_fmadd_ps(xc, _mm256_set1_ps(kLog2e), magic);
  const __m256 n = _mm256_sub_ps(t, magic);
  __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(kLn2Hi), xc);
  r = _mm256_fnmadd_ps(n, _mm256_set1_ps(kLn2Lo), r);
  const __m256i ni = _mm256_sub_epi32(_mm256_castps_si256(t), _mm256_castps_si256(magic));
  const __m256i n1 = _mm256_srai_epi32(ni, 1);
  const __m256i n2 = _mm256_sub_epi32(ni, n1);
  const __m256i bias = _mm256_set1_epi32(127);
  const __m256 s1 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n1, bias), 23));
  const __m256 s2 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n2, bias), 23));
  return _mm256_mul_ps(_mm256_mul_ps(exp_poly(r), s1), s2);
}

// Fixed horizontal reductions.
inline float hsum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}
inline float hmax(__m256 v) {
  __m128 s = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_max_ps(s, _mm_movehl_ps(s, s));
  s = _mm_max_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

struct Avx2 {
  using Reg = __m256;
  using Mask = __m256i;
  static constexpr int64_t kLanes = 8;
  static Reg load(const float* p) { return _mm256_loadu_ps(p); }
  static void store(float* p, Reg v) { _mm256_storeu_ps(p, v); }
  static Reg set1(float v) { return _mm256_set1_ps(v); }
  static Reg zero() { return _mm256_setzero_ps(); }
  static Reg add(Reg a, Reg b) { return _mm256_add_ps(a, b); }
  static Reg sub(Reg a, Reg b) { return _mm256_sub_ps(a, b); }
  static Reg mul(Reg a, Reg b) { return _mm256_mul_ps(a, b); }
  static Reg div(Reg a, Reg b) { return _mm256_div_ps(a, b); }
  static Reg max(Reg a, Reg b) { return _mm256_max_ps(a, b); }
  static Mask tail_mask(int64_t rem) { return simd::tail_mask(rem); }
  static Reg load_or(Mask m, const float* p, Reg fill) {
    return _mm256_blendv_ps(fill, _mm256_maskload_ps(p, m), _mm256_castsi256_ps(m));
  }
  static void store_masked(float* p, Mask m, Reg v) { _mm256_maskstore_ps(p, m, v); }
  static Reg keep(Mask m, Reg v) { return _mm256_and_ps(v, _mm256_castsi256_ps(m)); }
  static Reg exp_nonpositive(Reg x) { return simd::exp_nonpositive(x); }
  static Reg exp_general(Reg x) { return simd::exp_general(x); }
  static float hsum(Reg v) { return simd::hsum(v); }
  static float hmax(Reg v) { return simd::hmax(v); }
};

}  // namespace

void exp_f32_avx2(const float* x, float* y, int64_t n) {
  map<Avx2>(x, y, n, [](__m256 v) { return Avx2::exp_general(v); });
}
void exp_span_f32_avx2(const float* x, float* y, int64_t n, bool) { exp_f32_avx2(x, y, n); }

void sigmoid_f32_avx2(const float* x, float* y, int64_t n, bool) {
  map<Avx2>(x, y, n, [](__m256 v) {
    const __m256 one = _mm256_set1_ps(1.0f);
    const __m256 e = Avx2::exp_general(_mm256_or_ps(v, _mm256_set1_ps(-0.0f)));  // exp(-|x|), in [0, 1]
    const __m256 numerator = _mm256_blendv_ps(one, e, _mm256_cmp_ps(v, _mm256_setzero_ps(), _CMP_LT_OQ));
    return _mm256_div_ps(numerator, _mm256_add_ps(one, e));
  });
}

void exp_nonpositive_f32_avx2(const float* x, float* y, int64_t n) {
  map<Avx2>(x, y, n, [](__m256 v) { return Avx2::exp_nonpositive(v); });
}

void softmax_rows_f32_avx2(const float* x, float* y, int64_t count, int64_t length) {
  rows<Avx2, false>(x, y, count, length);
}
void log_softmax_rows_f32_avx2(const float* x, float* y, int64_t count, int64_t length) {
  rows<Avx2, true>(x, y, count, length);
}
void softmax_strided_f32_avx2(const float* x, float* y, int64_t length, int64_t stride, int64_t count) {
  strided<Avx2, false>(x, y, length, stride, count);
}
void log_softmax_strided_f32_avx2(const float* x, float* y, int64_t length, int64_t stride, int64_t count) {
  strided<Avx2, true>(x, y, length, stride, count);
}

}  // namespace onnx_light::runtime::kernels::simd
