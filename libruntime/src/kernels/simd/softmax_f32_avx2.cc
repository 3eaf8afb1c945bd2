// Softmax, LogSoftmax and exp over float32 with AVX2 + FMA (8 lanes). See softmax_f32.h.
//
// exp(x): n = round(x * log2 e), r = x - n * ln 2 (ln 2 split into a 9-bit head, exact in
// n * head, and a tail), e^r by a degree-6 polynomial (Cephes expf coefficients, |r| <= ln2 / 2),
// then times 2^n built from exponent bits.
#include <immintrin.h>

#include <cstddef>
#include <cstdint>

#include "kernels/simd/softmax_f32.h"

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

inline float row_max(const float* x, int64_t n) {
  const __m256 ninf = _mm256_set1_ps(-__builtin_inff());
  __m256 m0 = ninf, m1 = ninf, m2 = ninf, m3 = ninf;
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    m0 = _mm256_max_ps(m0, _mm256_loadu_ps(x + i));
    m1 = _mm256_max_ps(m1, _mm256_loadu_ps(x + i + 8));
    m2 = _mm256_max_ps(m2, _mm256_loadu_ps(x + i + 16));
    m3 = _mm256_max_ps(m3, _mm256_loadu_ps(x + i + 24));
  }
  for (; i + 8 <= n; i += 8) m0 = _mm256_max_ps(m0, _mm256_loadu_ps(x + i));
  if (i < n) {
    const __m256i mask = tail_mask(n - i);
    const __m256 v = _mm256_blendv_ps(ninf, _mm256_maskload_ps(x + i, mask), _mm256_castsi256_ps(mask));
    m0 = _mm256_max_ps(m0, v);
  }
  return hmax(_mm256_max_ps(_mm256_max_ps(m0, m1), _mm256_max_ps(m2, m3)));
}

// Sum of exp(x - max) over the row; stores the exponentials to y when kStore.
template <bool kStore>
inline float row_exp_sum(const float* x, float* y, int64_t n, float max) {
  const __m256 vm = _mm256_set1_ps(max);
  __m256 s0 = _mm256_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    const __m256 e0 = exp_nonpositive(_mm256_sub_ps(_mm256_loadu_ps(x + i), vm));
    const __m256 e1 = exp_nonpositive(_mm256_sub_ps(_mm256_loadu_ps(x + i + 8), vm));
    const __m256 e2 = exp_nonpositive(_mm256_sub_ps(_mm256_loadu_ps(x + i + 16), vm));
    const __m256 e3 = exp_nonpositive(_mm256_sub_ps(_mm256_loadu_ps(x + i + 24), vm));
    if constexpr (kStore) {
      _mm256_storeu_ps(y + i, e0);
      _mm256_storeu_ps(y + i + 8, e1);
      _mm256_storeu_ps(y + i + 16, e2);
      _mm256_storeu_ps(y + i + 24, e3);
    }
    s0 = _mm256_add_ps(s0, e0);
    s1 = _mm256_add_ps(s1, e1);
    s2 = _mm256_add_ps(s2, e2);
    s3 = _mm256_add_ps(s3, e3);
  }
  for (; i + 8 <= n; i += 8) {
    const __m256 e = exp_nonpositive(_mm256_sub_ps(_mm256_loadu_ps(x + i), vm));
    if constexpr (kStore) _mm256_storeu_ps(y + i, e);
    s0 = _mm256_add_ps(s0, e);
  }
  if (i < n) {
    const __m256i mask = tail_mask(n - i);
    __m256 e = exp_nonpositive(_mm256_sub_ps(_mm256_maskload_ps(x + i, mask), vm));
    e = _mm256_and_ps(e, _mm256_castsi256_ps(mask));
    if constexpr (kStore) _mm256_maskstore_ps(y + i, mask, e);
    s0 = _mm256_add_ps(s0, e);
  }
  return hsum(_mm256_add_ps(_mm256_add_ps(s0, s1), _mm256_add_ps(s2, s3)));
}

// y = a * y (kScale) or y = x - a.
template <bool kScale>
inline void row_finish(const float* x, float* y, int64_t n, float a) {
  const __m256 va = _mm256_set1_ps(a);
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    if constexpr (kScale) {
      _mm256_storeu_ps(y + i, _mm256_mul_ps(_mm256_loadu_ps(y + i), va));
      _mm256_storeu_ps(y + i + 8, _mm256_mul_ps(_mm256_loadu_ps(y + i + 8), va));
    } else {
      _mm256_storeu_ps(y + i, _mm256_sub_ps(_mm256_loadu_ps(x + i), va));
      _mm256_storeu_ps(y + i + 8, _mm256_sub_ps(_mm256_loadu_ps(x + i + 8), va));
    }
  }
  for (; i < n; ++i) y[i] = kScale ? y[i] * a : x[i] - a;
}

// Rows software-pipelined: while the exp pass of row r runs (bound by the FP ports), the same
// loop finishes row r - 1 (scale or shift) and takes the maximum of row r + 1 (loads and one max
// per vector), so the two cheap passes hide in the expensive one. Every row still gets exactly
// the accumulators, order and horizontal trees of row_max / row_exp_sum / row_finish above, so
// the result of a row does not depend on its neighbours (nor on how rows are split over threads).
template <bool kLog>
void rows(const float* x, float* y, int64_t count, int64_t length) {
  if (count <= 0) return;
  const int64_t blocked = length & ~int64_t{31};
  const __m256 ninf = _mm256_set1_ps(-__builtin_inff());
  float max = row_max(x, length);
  float prev_a = 0;  // row r - 1's scale (1 / sum) or shift (max + log sum)
  for (int64_t r = 0; r < count; ++r) {
    const float* xr = x + r * length;
    float* yr = y + r * length;
    const bool has_prev = r > 0, has_next = r + 1 < count;
    const float* xp = xr - length;  // row r - 1
    float* yp = yr - length;
    const float* xn = xr + length;  // row r + 1
    const __m256 vm = _mm256_set1_ps(max);
    const __m256 va = _mm256_set1_ps(prev_a);
    __m256 s0 = _mm256_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;
    __m256 m0 = ninf, m1 = ninf, m2 = ninf, m3 = ninf;
    for (int64_t i = 0; i < blocked; i += 32) {
      const __m256 e0 = exp_nonpositive(_mm256_sub_ps(_mm256_loadu_ps(xr + i), vm));
      const __m256 e1 = exp_nonpositive(_mm256_sub_ps(_mm256_loadu_ps(xr + i + 8), vm));
      const __m256 e2 = exp_nonpositive(_mm256_sub_ps(_mm256_loadu_ps(xr + i + 16), vm));
      const __m256 e3 = exp_nonpositive(_mm256_sub_ps(_mm256_loadu_ps(xr + i + 24), vm));
      if (has_prev) {
        for (int64_t k = i; k < i + 32; k += 8) {
          if constexpr (kLog) _mm256_storeu_ps(yp + k, _mm256_sub_ps(_mm256_loadu_ps(xp + k), va));
          else _mm256_storeu_ps(yp + k, _mm256_mul_ps(_mm256_loadu_ps(yp + k), va));
        }
      }
      if constexpr (!kLog) {
        _mm256_storeu_ps(yr + i, e0);
        _mm256_storeu_ps(yr + i + 8, e1);
        _mm256_storeu_ps(yr + i + 16, e2);
        _mm256_storeu_ps(yr + i + 24, e3);
      }
      if (has_next) {
        m0 = _mm256_max_ps(m0, _mm256_loadu_ps(xn + i));
        m1 = _mm256_max_ps(m1, _mm256_loadu_ps(xn + i + 8));
        m2 = _mm256_max_ps(m2, _mm256_loadu_ps(xn + i + 16));
        m3 = _mm256_max_ps(m3, _mm256_loadu_ps(xn + i + 24));
      }
      s0 = _mm256_add_ps(s0, e0);
      s1 = _mm256_add_ps(s1, e1);
      s2 = _mm256_add_ps(s2, e2);
      s3 = _mm256_add_ps(s3, e3);
    }
    // The rest of each row exactly as the separate passes do it.
    if (has_prev && blocked < length) row_finish<!kLog>(xp + blocked, yp + blocked, length - blocked, prev_a);
    int64_t i = blocked;
    for (; i + 8 <= length; i += 8) {
      const __m256 e = exp_nonpositive(_mm256_sub_ps(_mm256_loadu_ps(xr + i), vm));
      if constexpr (!kLog) _mm256_storeu_ps(yr + i, e);
      s0 = _mm256_add_ps(s0, e);
      if (has_next) m0 = _mm256_max_ps(m0, _mm256_loadu_ps(xn + i));
    }
    if (i < length) {
      const __m256i mask = tail_mask(length - i);
      __m256 e = exp_nonpositive(_mm256_sub_ps(_mm256_maskload_ps(xr + i, mask), vm));
      e = _mm256_and_ps(e, _mm256_castsi256_ps(mask));
      if constexpr (!kLog) _mm256_maskstore_ps(yr + i, mask, e);
      s0 = _mm256_add_ps(s0, e);
      if (has_next)
        m0 = _mm256_max_ps(m0, _mm256_blendv_ps(ninf, _mm256_maskload_ps(xn + i, mask), _mm256_castsi256_ps(mask)));
    }
    const float sum = hsum(_mm256_add_ps(_mm256_add_ps(s0, s1), _mm256_add_ps(s2, s3)));
    prev_a = kLog ? max + __builtin_logf(sum) : 1.0f / sum;
    if (has_next) max = hmax(_mm256_max_ps(_mm256_max_ps(m0, m1), _mm256_max_ps(m2, m3)));
  }
  const int64_t last = (count - 1) * length;
  row_finish<!kLog>(x + last, y + last, length, prev_a);
}

// Up to 8 strided rows at once (lanes [0, rem) of `mask`).
template <bool kLog>
inline void strided_block(const float* x, float* y, int64_t length, int64_t stride, __m256i mask) {
  __m256 m = _mm256_maskload_ps(x, mask);
  for (int64_t k = 1; k < length; ++k) m = _mm256_max_ps(m, _mm256_maskload_ps(x + k * stride, mask));
  __m256 s = _mm256_setzero_ps();
  for (int64_t k = 0; k < length; ++k) {
    const __m256 e = exp_nonpositive(_mm256_sub_ps(_mm256_maskload_ps(x + k * stride, mask), m));
    if constexpr (!kLog) _mm256_maskstore_ps(y + k * stride, mask, e);
    s = _mm256_add_ps(s, e);
  }
  if constexpr (kLog) {
    alignas(32) float sum[8], max[8], shift[8];
    _mm256_store_ps(sum, s);
    _mm256_store_ps(max, m);
    for (int j = 0; j < 8; ++j) shift[j] = max[j] + __builtin_logf(sum[j]);
    const __m256 c = _mm256_load_ps(shift);
    for (int64_t k = 0; k < length; ++k)
      _mm256_maskstore_ps(y + k * stride, mask, _mm256_sub_ps(_mm256_maskload_ps(x + k * stride, mask), c));
  } else {
    const __m256 inv = _mm256_div_ps(_mm256_set1_ps(1.0f), s);
    for (int64_t k = 0; k < length; ++k)
      _mm256_maskstore_ps(y + k * stride, mask, _mm256_mul_ps(_mm256_maskload_ps(y + k * stride, mask), inv));
  }
}

template <bool kLog>
void strided(const float* x, float* y, int64_t length, int64_t stride, int64_t count) {
  for (int64_t j = 0; j < count; j += 8) {
    const int64_t rem = count - j < 8 ? count - j : 8;
    strided_block<kLog>(x + j, y + j, length, stride, tail_mask(rem));
  }
}

}  // namespace

void exp_f32_avx2(const float* x, float* y, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, exp_general(_mm256_loadu_ps(x + i)));
  if (i < n) {
    const __m256i mask = tail_mask(n - i);
    _mm256_maskstore_ps(y + i, mask, exp_general(_mm256_maskload_ps(x + i, mask)));
  }
}

void exp_nonpositive_f32_avx2(const float* x, float* y, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, exp_nonpositive(_mm256_loadu_ps(x + i)));
  if (i < n) {
    const __m256i mask = tail_mask(n - i);
    _mm256_maskstore_ps(y + i, mask, exp_nonpositive(_mm256_maskload_ps(x + i, mask)));
  }
}

void softmax_rows_f32_avx2(const float* x, float* y, int64_t count, int64_t length) { rows<false>(x, y, count, length); }
void log_softmax_rows_f32_avx2(const float* x, float* y, int64_t count, int64_t length) { rows<true>(x, y, count, length); }
void softmax_strided_f32_avx2(const float* x, float* y, int64_t length, int64_t stride, int64_t count) {
  strided<false>(x, y, length, stride, count);
}
void log_softmax_strided_f32_avx2(const float* x, float* y, int64_t length, int64_t stride, int64_t count) {
  strided<true>(x, y, length, stride, count);
}

}  // namespace onnx_light::runtime::kernels::simd
