// Float reductions with AVX2 (8 lanes). See reduce_f32.h.
#include <immintrin.h>

#include <cstddef>
#include <cstdint>

#include "kernels/simd/reduce_f32.h"

namespace onnx_light::runtime::kernels::simd {

namespace {

const int32_t kTailMask[16] = {-1, -1, -1, -1, -1, -1, -1, -1, 0, 0, 0, 0, 0, 0, 0, 0};

inline __m256i tail_mask(int64_t rem) {
  return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(kTailMask + 8 - rem));
}

inline __m256 abs_ps(__m256 v) { return _mm256_andnot_ps(_mm256_set1_ps(-0.0f), v); }

// One op: its identity, its lane step, and its horizontal tree.
template <int kOp>
struct Op {
  static __m256 identity() {
    if constexpr (kOp == kReduceF32Max) return _mm256_set1_ps(-__builtin_inff());
    else if constexpr (kOp == kReduceF32Min) return _mm256_set1_ps(__builtin_inff());
    else return _mm256_setzero_ps();
  }
  // a (op) x; for max/min a NaN in x replaces a, and a NaN in a stays (as the portable step).
  static __m256 step(__m256 a, __m256 x) {
    if constexpr (kOp == kReduceF32Sum) {
      return _mm256_add_ps(a, x);
    } else if constexpr (kOp == kReduceF32SumSquare) {
      // Fused explicitly: the compiler would contract a separate multiply and add in some loops
      // and not others, and a column's result would then depend on where a vector tail falls.
      return _mm256_fmadd_ps(x, x, a);
    } else if constexpr (kOp == kReduceF32AbsSum) {
      return _mm256_add_ps(a, abs_ps(x));
    } else {
      // max_ps(x, a) is (x > a ? x : a) and returns a when either is NaN.
      const __m256 m = kOp == kReduceF32Max ? _mm256_max_ps(x, a) : _mm256_min_ps(x, a);
      const __m256 x_nan = _mm256_cmp_ps(x, x, _CMP_UNORD_Q);
      const __m256 a_nan = _mm256_cmp_ps(a, a, _CMP_UNORD_Q);
      return _mm256_blendv_ps(m, x, _mm256_andnot_ps(a_nan, x_nan));
    }
  }
  static float horizontal(__m256 v) {
    __m128 s = step128(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = step128(s, _mm_movehl_ps(s, s));
    s = step128(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
  }
  static __m128 step128(__m128 a, __m128 b) {
    if constexpr (kOp == kReduceF32Max || kOp == kReduceF32Min) {
      const __m128 m = kOp == kReduceF32Max ? _mm_max_ps(b, a) : _mm_min_ps(b, a);
      const __m128 b_nan = _mm_cmp_ps(b, b, _CMP_UNORD_Q);
      const __m128 a_nan = _mm_cmp_ps(a, a, _CMP_UNORD_Q);
      return _mm_blendv_ps(m, b, _mm_andnot_ps(a_nan, b_nan));
    } else {
      return _mm_add_ps(a, b);
    }
  }
};

// Max / min of a row: plain vmaxps/vminps chains (one uop each) with NaN tracked on the side by
// an unordered compare, instead of the portable-exact step (three dependent uops per vector).
template <int kOp>
float extreme_row(const float* x, int64_t n) {
  const __m256 init = Op<kOp>::identity();
  const auto pick = [](__m256 a, __m256 b) { return kOp == kReduceF32Max ? _mm256_max_ps(a, b) : _mm256_min_ps(a, b); };
  __m256 a0 = init, a1 = init, a2 = init, a3 = init;
  __m256 nan0 = _mm256_setzero_ps(), nan1 = nan0;
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    const __m256 v0 = _mm256_loadu_ps(x + i), v1 = _mm256_loadu_ps(x + i + 8);
    const __m256 v2 = _mm256_loadu_ps(x + i + 16), v3 = _mm256_loadu_ps(x + i + 24);
    a0 = pick(a0, v0);
    a1 = pick(a1, v1);
    a2 = pick(a2, v2);
    a3 = pick(a3, v3);
    nan0 = _mm256_or_ps(nan0, _mm256_cmp_ps(v0, v1, _CMP_UNORD_Q));
    nan1 = _mm256_or_ps(nan1, _mm256_cmp_ps(v2, v3, _CMP_UNORD_Q));
  }
  for (; i + 8 <= n; i += 8) {
    const __m256 v = _mm256_loadu_ps(x + i);
    a0 = pick(a0, v);
    nan0 = _mm256_or_ps(nan0, _mm256_cmp_ps(v, v, _CMP_UNORD_Q));
  }
  if (i < n) {
    const __m256i mask = tail_mask(n - i);
    const __m256 v = _mm256_blendv_ps(init, _mm256_maskload_ps(x + i, mask), _mm256_castsi256_ps(mask));
    a0 = pick(a0, v);
    nan0 = _mm256_or_ps(nan0, _mm256_cmp_ps(v, v, _CMP_UNORD_Q));
  }
  if (_mm256_movemask_ps(_mm256_or_ps(nan0, nan1)) != 0) return __builtin_nanf("");
  return Op<kOp>::horizontal(pick(pick(a0, a1), pick(a2, a3)));
}

template <int kOp>
float reduce_row(const float* x, int64_t n) {
  if constexpr (kOp == kReduceF32Max || kOp == kReduceF32Min) return extreme_row<kOp>(x, n);
  using O = Op<kOp>;
  __m256 a0 = O::identity(), a1 = a0, a2 = a0, a3 = a0;
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    a0 = O::step(a0, _mm256_loadu_ps(x + i));
    a1 = O::step(a1, _mm256_loadu_ps(x + i + 8));
    a2 = O::step(a2, _mm256_loadu_ps(x + i + 16));
    a3 = O::step(a3, _mm256_loadu_ps(x + i + 24));
  }
  for (; i + 8 <= n; i += 8) a0 = O::step(a0, _mm256_loadu_ps(x + i));
  if (i < n) {
    const __m256i mask = tail_mask(n - i);
    // Lanes past the end hold the identity, which leaves every op unchanged.
    const __m256 v = _mm256_blendv_ps(O::identity(), _mm256_maskload_ps(x + i, mask), _mm256_castsi256_ps(mask));
    a0 = O::step(a0, v);
  }
  return O::horizontal(_mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3)));
}

template <int kOp>
void rows(const float* x, float* y, int64_t count, int64_t length) {
  for (int64_t r = 0; r < count; ++r) y[r] = reduce_row<kOp>(x + r * length, length);
}

template <int kOp>
void accumulate(float* acc, const float* x, int64_t n) {
  using O = Op<kOp>;
  int64_t j = 0;
  for (; j + 32 <= n; j += 32) {
    _mm256_storeu_ps(acc + j, O::step(_mm256_loadu_ps(acc + j), _mm256_loadu_ps(x + j)));
    _mm256_storeu_ps(acc + j + 8, O::step(_mm256_loadu_ps(acc + j + 8), _mm256_loadu_ps(x + j + 8)));
    _mm256_storeu_ps(acc + j + 16, O::step(_mm256_loadu_ps(acc + j + 16), _mm256_loadu_ps(x + j + 16)));
    _mm256_storeu_ps(acc + j + 24, O::step(_mm256_loadu_ps(acc + j + 24), _mm256_loadu_ps(x + j + 24)));
  }
  for (; j + 8 <= n; j += 8) _mm256_storeu_ps(acc + j, O::step(_mm256_loadu_ps(acc + j), _mm256_loadu_ps(x + j)));
  if (j < n) {
    const __m256i mask = tail_mask(n - j);
    _mm256_maskstore_ps(acc + j, mask, O::step(_mm256_maskload_ps(acc + j, mask), _mm256_maskload_ps(x + j, mask)));
  }
}

}  // namespace

void reduce_rows_f32_avx2(int op, const float* x, float* y, int64_t count, int64_t length) {
  switch (op) {
    case kReduceF32Sum: rows<kReduceF32Sum>(x, y, count, length); break;
    case kReduceF32SumSquare: rows<kReduceF32SumSquare>(x, y, count, length); break;
    case kReduceF32AbsSum: rows<kReduceF32AbsSum>(x, y, count, length); break;
    case kReduceF32Max: rows<kReduceF32Max>(x, y, count, length); break;
    default: rows<kReduceF32Min>(x, y, count, length); break;
  }
}

void accumulate_f32_avx2(int op, float* acc, const float* x, int64_t n) {
  switch (op) {
    case kReduceF32Sum: accumulate<kReduceF32Sum>(acc, x, n); break;
    case kReduceF32SumSquare: accumulate<kReduceF32SumSquare>(acc, x, n); break;
    case kReduceF32AbsSum: accumulate<kReduceF32AbsSum>(acc, x, n); break;
    case kReduceF32Max: accumulate<kReduceF32Max>(acc, x, n); break;
    default: accumulate<kReduceF32Min>(acc, x, n); break;
  }
}

}  // namespace onnx_light::runtime::kernels::simd
