// Softmax, LogSoftmax and exp over float32 with AVX-512 F (16 lanes, masked tails). Same
// algorithm as softmax_f32_avx2.cc; 2^n is applied with vscalefps, which covers the whole
// range (subnormal results, overflow to +inf) in one instruction.
// GCC 12's AVX-512 intrinsics start from _mm512_undefined_ps(), which -Wmaybe-uninitialized
// reports at every inlined use (GCC bug 105593, fixed in GCC 13).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>

#include <cstddef>
#include <cstdint>

#include "kernels/simd/softmax_f32.h"

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

inline float row_max(const float* x, int64_t n) {
  const __m512 ninf = _mm512_set1_ps(-__builtin_inff());
  __m512 m0 = ninf, m1 = ninf, m2 = ninf, m3 = ninf;
  int64_t i = 0;
  for (; i + 64 <= n; i += 64) {
    m0 = _mm512_max_ps(m0, _mm512_loadu_ps(x + i));
    m1 = _mm512_max_ps(m1, _mm512_loadu_ps(x + i + 16));
    m2 = _mm512_max_ps(m2, _mm512_loadu_ps(x + i + 32));
    m3 = _mm512_max_ps(m3, _mm512_loadu_ps(x + i + 48));
  }
  for (; i + 16 <= n; i += 16) m0 = _mm512_max_ps(m0, _mm512_loadu_ps(x + i));
  if (i < n) m0 = _mm512_max_ps(m0, _mm512_mask_loadu_ps(ninf, tail_mask(n - i), x + i));
  return hmax(_mm512_max_ps(_mm512_max_ps(m0, m1), _mm512_max_ps(m2, m3)));
}

template <bool kStore>
inline float row_exp_sum(const float* x, float* y, int64_t n, float max) {
  const __m512 vm = _mm512_set1_ps(max);
  __m512 s0 = _mm512_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;
  int64_t i = 0;
  for (; i + 64 <= n; i += 64) {
    const __m512 e0 = exp_nonpositive(_mm512_sub_ps(_mm512_loadu_ps(x + i), vm));
    const __m512 e1 = exp_nonpositive(_mm512_sub_ps(_mm512_loadu_ps(x + i + 16), vm));
    const __m512 e2 = exp_nonpositive(_mm512_sub_ps(_mm512_loadu_ps(x + i + 32), vm));
    const __m512 e3 = exp_nonpositive(_mm512_sub_ps(_mm512_loadu_ps(x + i + 48), vm));
    if constexpr (kStore) {
      _mm512_storeu_ps(y + i, e0);
      _mm512_storeu_ps(y + i + 16, e1);
      _mm512_storeu_ps(y + i + 32, e2);
      _mm512_storeu_ps(y + i + 48, e3);
    }
    s0 = _mm512_add_ps(s0, e0);
    s1 = _mm512_add_ps(s1, e1);
    s2 = _mm512_add_ps(s2, e2);
    s3 = _mm512_add_ps(s3, e3);
  }
  for (; i + 16 <= n; i += 16) {
    const __m512 e = exp_nonpositive(_mm512_sub_ps(_mm512_loadu_ps(x + i), vm));
    if constexpr (kStore) _mm512_storeu_ps(y + i, e);
    s0 = _mm512_add_ps(s0, e);
  }
  if (i < n) {
    const __mmask16 mask = tail_mask(n - i);
    const __m512 e = _mm512_maskz_mov_ps(mask, exp_nonpositive(_mm512_sub_ps(_mm512_maskz_loadu_ps(mask, x + i), vm)));
    if constexpr (kStore) _mm512_mask_storeu_ps(y + i, mask, e);
    s0 = _mm512_add_ps(s0, e);
  }
  return hsum(_mm512_add_ps(_mm512_add_ps(s0, s1), _mm512_add_ps(s2, s3)));
}

template <bool kScale>
inline void row_finish(const float* x, float* y, int64_t n, float a) {
  const __m512 va = _mm512_set1_ps(a);
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    if constexpr (kScale) {
      _mm512_storeu_ps(y + i, _mm512_mul_ps(_mm512_loadu_ps(y + i), va));
      _mm512_storeu_ps(y + i + 16, _mm512_mul_ps(_mm512_loadu_ps(y + i + 16), va));
    } else {
      _mm512_storeu_ps(y + i, _mm512_sub_ps(_mm512_loadu_ps(x + i), va));
      _mm512_storeu_ps(y + i + 16, _mm512_sub_ps(_mm512_loadu_ps(x + i + 16), va));
    }
  }
  for (; i < n; i += 16) {
    const __mmask16 mask = n - i < 16 ? tail_mask(n - i) : static_cast<__mmask16>(0xFFFF);
    if constexpr (kScale) _mm512_mask_storeu_ps(y + i, mask, _mm512_mul_ps(_mm512_maskz_loadu_ps(mask, y + i), va));
    else _mm512_mask_storeu_ps(y + i, mask, _mm512_sub_ps(_mm512_maskz_loadu_ps(mask, x + i), va));
  }
}

// Rows software-pipelined: while the exp pass of row r runs (bound by the FP ports), the same
// loop finishes row r - 1 (scale or shift) and takes the maximum of row r + 1 (loads and one max
// per vector), so the two cheap passes hide in the expensive one. Every row still gets exactly
// the accumulators, order and horizontal trees of row_max / row_exp_sum / row_finish above, so
// the result of a row does not depend on its neighbours (nor on how rows are split over threads).
template <bool kLog>
void rows(const float* x, float* y, int64_t count, int64_t length) {
  if (count <= 0) return;
  const int64_t blocked = length & ~int64_t{63};
  const __m512 ninf = _mm512_set1_ps(-__builtin_inff());
  float max = row_max(x, length);
  float prev_a = 0;  // row r - 1's scale (1 / sum) or shift (max + log sum)
  for (int64_t r = 0; r < count; ++r) {
    const float* xr = x + r * length;
    float* yr = y + r * length;
    const bool has_prev = r > 0, has_next = r + 1 < count;
    const float* xp = xr - length;  // row r - 1
    float* yp = yr - length;
    const float* xn = xr + length;  // row r + 1
    const __m512 vm = _mm512_set1_ps(max);
    const __m512 va = _mm512_set1_ps(prev_a);
    __m512 s0 = _mm512_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;
    __m512 m0 = ninf, m1 = ninf, m2 = ninf, m3 = ninf;
    for (int64_t i = 0; i < blocked; i += 64) {
      const __m512 e0 = exp_nonpositive(_mm512_sub_ps(_mm512_loadu_ps(xr + i), vm));
      const __m512 e1 = exp_nonpositive(_mm512_sub_ps(_mm512_loadu_ps(xr + i + 16), vm));
      const __m512 e2 = exp_nonpositive(_mm512_sub_ps(_mm512_loadu_ps(xr + i + 32), vm));
      const __m512 e3 = exp_nonpositive(_mm512_sub_ps(_mm512_loadu_ps(xr + i + 48), vm));
      if (has_prev) {
        for (int64_t k = i; k < i + 64; k += 16) {
          if constexpr (kLog) _mm512_storeu_ps(yp + k, _mm512_sub_ps(_mm512_loadu_ps(xp + k), va));
          else _mm512_storeu_ps(yp + k, _mm512_mul_ps(_mm512_loadu_ps(yp + k), va));
        }
      }
      if constexpr (!kLog) {
        _mm512_storeu_ps(yr + i, e0);
        _mm512_storeu_ps(yr + i + 16, e1);
        _mm512_storeu_ps(yr + i + 32, e2);
        _mm512_storeu_ps(yr + i + 48, e3);
      }
      if (has_next) {
        m0 = _mm512_max_ps(m0, _mm512_loadu_ps(xn + i));
        m1 = _mm512_max_ps(m1, _mm512_loadu_ps(xn + i + 16));
        m2 = _mm512_max_ps(m2, _mm512_loadu_ps(xn + i + 32));
        m3 = _mm512_max_ps(m3, _mm512_loadu_ps(xn + i + 48));
      }
      s0 = _mm512_add_ps(s0, e0);
      s1 = _mm512_add_ps(s1, e1);
      s2 = _mm512_add_ps(s2, e2);
      s3 = _mm512_add_ps(s3, e3);
    }
    // The rest of each row exactly as the separate passes do it.
    if (has_prev && blocked < length) row_finish<!kLog>(xp + blocked, yp + blocked, length - blocked, prev_a);
    int64_t i = blocked;
    for (; i + 16 <= length; i += 16) {
      const __m512 e = exp_nonpositive(_mm512_sub_ps(_mm512_loadu_ps(xr + i), vm));
      if constexpr (!kLog) _mm512_storeu_ps(yr + i, e);
      s0 = _mm512_add_ps(s0, e);
      if (has_next) m0 = _mm512_max_ps(m0, _mm512_loadu_ps(xn + i));
    }
    if (i < length) {
      const __mmask16 mask = tail_mask(length - i);
      const __m512 e = _mm512_maskz_mov_ps(mask, exp_nonpositive(_mm512_sub_ps(_mm512_maskz_loadu_ps(mask, xr + i), vm)));
      if constexpr (!kLog) _mm512_mask_storeu_ps(yr + i, mask, e);
      s0 = _mm512_add_ps(s0, e);
      if (has_next) m0 = _mm512_max_ps(m0, _mm512_mask_loadu_ps(ninf, mask, xn + i));
    }
    const float sum = hsum(_mm512_add_ps(_mm512_add_ps(s0, s1), _mm512_add_ps(s2, s3)));
    prev_a = kLog ? max + __builtin_logf(sum) : 1.0f / sum;
    if (has_next) max = hmax(_mm512_max_ps(_mm512_max_ps(m0, m1), _mm512_max_ps(m2, m3)));
  }
  const int64_t last = (count - 1) * length;
  row_finish<!kLog>(x + last, y + last, length, prev_a);
}

template <bool kLog>
inline void strided_block(const float* x, float* y, int64_t length, int64_t stride, __mmask16 mask) {
  __m512 m = _mm512_maskz_loadu_ps(mask, x);
  for (int64_t k = 1; k < length; ++k) m = _mm512_max_ps(m, _mm512_maskz_loadu_ps(mask, x + k * stride));
  __m512 s = _mm512_setzero_ps();
  for (int64_t k = 0; k < length; ++k) {
    const __m512 e = exp_nonpositive(_mm512_sub_ps(_mm512_maskz_loadu_ps(mask, x + k * stride), m));
    if constexpr (!kLog) _mm512_mask_storeu_ps(y + k * stride, mask, e);
    s = _mm512_add_ps(s, e);
  }
  if constexpr (kLog) {
    alignas(64) float sum[16], max[16], shift[16];
    _mm512_store_ps(sum, s);
    _mm512_store_ps(max, m);
    for (int j = 0; j < 16; ++j) shift[j] = max[j] + __builtin_logf(sum[j]);
    const __m512 c = _mm512_load_ps(shift);
    for (int64_t k = 0; k < length; ++k)
      _mm512_mask_storeu_ps(y + k * stride, mask, _mm512_sub_ps(_mm512_maskz_loadu_ps(mask, x + k * stride), c));
  } else {
    const __m512 inv = _mm512_div_ps(_mm512_set1_ps(1.0f), s);
    for (int64_t k = 0; k < length; ++k)
      _mm512_mask_storeu_ps(y + k * stride, mask, _mm512_mul_ps(_mm512_maskz_loadu_ps(mask, y + k * stride), inv));
  }
}

template <bool kLog>
void strided(const float* x, float* y, int64_t length, int64_t stride, int64_t count) {
  for (int64_t j = 0; j < count; j += 16) {
    const int64_t rem = count - j < 16 ? count - j : 16;
    strided_block<kLog>(x + j, y + j, length, stride, tail_mask(rem));
  }
}

}  // namespace

void exp_f32_avx512(const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 mask = n - i < 16 ? tail_mask(n - i) : static_cast<__mmask16>(0xFFFF);
    _mm512_mask_storeu_ps(y + i, mask, exp_general(_mm512_maskz_loadu_ps(mask, x + i)));
  }
}

void exp_nonpositive_f32_avx512(const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 mask = n - i < 16 ? tail_mask(n - i) : static_cast<__mmask16>(0xFFFF);
    _mm512_mask_storeu_ps(y + i, mask, exp_nonpositive(_mm512_maskz_loadu_ps(mask, x + i)));
  }
}

void softmax_rows_f32_avx512(const float* x, float* y, int64_t count, int64_t length) { rows<false>(x, y, count, length); }
void log_softmax_rows_f32_avx512(const float* x, float* y, int64_t count, int64_t length) { rows<true>(x, y, count, length); }
void softmax_strided_f32_avx512(const float* x, float* y, int64_t length, int64_t stride, int64_t count) {
  strided<false>(x, y, length, stride, count);
}
void log_softmax_strided_f32_avx512(const float* x, float* y, int64_t length, int64_t stride, int64_t count) {
  strided<true>(x, y, length, stride, count);
}

}  // namespace onnx_light::runtime::kernels::simd
