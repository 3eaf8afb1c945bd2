#pragma once
// The pass structure of Softmax, LogSoftmax and exp over float32 rows, written once over an ISA's
// vector operations. Included only by softmax_f32_avx2.cc and softmax_f32_avx512.cc, each of which
// defines an ops struct V:
//
//   Reg, Mask, kLanes                    the vector, its tail mask, floats per vector
//   load, store, set1, zero, add, sub, mul, div, max
//   tail_mask(rem)                       lanes [0, rem) set, 0 < rem <= kLanes
//   load_or(mask, p, fill)               p's lanes in mask, `fill` elsewhere; reads nothing outside
//   store_masked(p, mask, v), keep(mask, v) (lanes outside mask become +0)
//   exp_nonpositive, exp_general, hsum, hmax (fixed horizontal trees)
//
// Everything here has internal linkage, so each ISA file compiles its own copy with its own
// flags; a shared inline copy could be the one the linker keeps for both (see README.md).
#include <cstdint>

namespace onnx_light::runtime::kernels::simd {
namespace {  // NOLINT(google-build-namespaces,cert-dcl59-cpp): one copy per ISA file, on purpose

template <typename V>
inline float row_max(const float* x, int64_t n) {
  constexpr int64_t L = V::kLanes;
  const typename V::Reg ninf = V::set1(-__builtin_inff());
  typename V::Reg m0 = ninf, m1 = ninf, m2 = ninf, m3 = ninf;
  int64_t i = 0;
  for (; i + 4 * L <= n; i += 4 * L) {
    m0 = V::max(m0, V::load(x + i));
    m1 = V::max(m1, V::load(x + i + L));
    m2 = V::max(m2, V::load(x + i + 2 * L));
    m3 = V::max(m3, V::load(x + i + 3 * L));
  }
  for (; i + L <= n; i += L) m0 = V::max(m0, V::load(x + i));
  if (i < n) m0 = V::max(m0, V::load_or(V::tail_mask(n - i), x + i, ninf));
  return V::hmax(V::max(V::max(m0, m1), V::max(m2, m3)));
}

// y = a * y (kScale) or y = x - a. Exact per element, so the split into vectors does not matter.
template <typename V, bool kScale>
inline void row_finish(const float* x, float* y, int64_t n, float a) {
  constexpr int64_t L = V::kLanes;
  const typename V::Reg va = V::set1(a);
  auto one = [&](int64_t i) { return kScale ? V::mul(V::load(y + i), va) : V::sub(V::load(x + i), va); };
  int64_t i = 0;
  for (; i + 2 * L <= n; i += 2 * L) {
    V::store(y + i, one(i));
    V::store(y + i + L, one(i + L));
  }
  for (; i + L <= n; i += L) V::store(y + i, one(i));
  if (i < n) {
    const typename V::Mask mask = V::tail_mask(n - i);
    const typename V::Reg in = V::load_or(mask, kScale ? y + i : x + i, V::zero());
    V::store_masked(y + i, mask, kScale ? V::mul(in, va) : V::sub(in, va));
  }
}

// Rows software-pipelined: while the exp pass of row r runs (bound by the FP ports), the same
// loop finishes row r - 1 (scale or shift) and takes the maximum of row r + 1 (loads and one max
// per vector), so the two cheap passes hide in the expensive one. Each row's maximum and sum use
// the same four accumulators, order and horizontal tree as row_max, whichever row is its
// neighbour, so the result of a row does not depend on how rows are split over threads.
template <typename V, bool kLog>
void rows(const float* x, float* y, int64_t count, int64_t length) {
  using Reg = typename V::Reg;
  constexpr int64_t L = V::kLanes;
  if (count <= 0) return;
  const int64_t blocked = length / (4 * L) * (4 * L);
  const Reg ninf = V::set1(-__builtin_inff());
  float max = row_max<V>(x, length);
  float prev_a = 0;  // row r - 1's scale (1 / sum) or shift (max + log sum)
  for (int64_t r = 0; r < count; ++r) {
    const float* xr = x + r * length;
    float* yr = y + r * length;
    const bool has_prev = r > 0, has_next = r + 1 < count;
    const float* xp = xr - length;  // row r - 1
    float* yp = yr - length;
    const float* xn = xr + length;  // row r + 1
    const Reg vm = V::set1(max);
    const Reg va = V::set1(prev_a);
    Reg s0 = V::zero(), s1 = s0, s2 = s0, s3 = s0;
    Reg m0 = ninf, m1 = ninf, m2 = ninf, m3 = ninf;
    for (int64_t i = 0; i < blocked; i += 4 * L) {
      const Reg e0 = V::exp_nonpositive(V::sub(V::load(xr + i), vm));
      const Reg e1 = V::exp_nonpositive(V::sub(V::load(xr + i + L), vm));
      const Reg e2 = V::exp_nonpositive(V::sub(V::load(xr + i + 2 * L), vm));
      const Reg e3 = V::exp_nonpositive(V::sub(V::load(xr + i + 3 * L), vm));
      if (has_prev) {
        for (int64_t k = i; k < i + 4 * L; k += L) {
          if constexpr (kLog) V::store(yp + k, V::sub(V::load(xp + k), va));
          else V::store(yp + k, V::mul(V::load(yp + k), va));
        }
      }
      if constexpr (!kLog) {
        V::store(yr + i, e0);
        V::store(yr + i + L, e1);
        V::store(yr + i + 2 * L, e2);
        V::store(yr + i + 3 * L, e3);
      }
      if (has_next) {
        m0 = V::max(m0, V::load(xn + i));
        m1 = V::max(m1, V::load(xn + i + L));
        m2 = V::max(m2, V::load(xn + i + 2 * L));
        m3 = V::max(m3, V::load(xn + i + 3 * L));
      }
      s0 = V::add(s0, e0);
      s1 = V::add(s1, e1);
      s2 = V::add(s2, e2);
      s3 = V::add(s3, e3);
    }
    // The rest of each row into the first accumulator, as row_max does.
    if (has_prev && blocked < length) row_finish<V, !kLog>(xp + blocked, yp + blocked, length - blocked, prev_a);
    int64_t i = blocked;
    for (; i + L <= length; i += L) {
      const Reg e = V::exp_nonpositive(V::sub(V::load(xr + i), vm));
      if constexpr (!kLog) V::store(yr + i, e);
      s0 = V::add(s0, e);
      if (has_next) m0 = V::max(m0, V::load(xn + i));
    }
    if (i < length) {
      const typename V::Mask mask = V::tail_mask(length - i);
      const Reg e = V::keep(mask, V::exp_nonpositive(V::sub(V::load_or(mask, xr + i, V::zero()), vm)));
      if constexpr (!kLog) V::store_masked(yr + i, mask, e);
      s0 = V::add(s0, e);
      if (has_next) m0 = V::max(m0, V::load_or(mask, xn + i, ninf));
    }
    const float sum = V::hsum(V::add(V::add(s0, s1), V::add(s2, s3)));
    prev_a = kLog ? max + __builtin_logf(sum) : 1.0f / sum;
    if (has_next) max = V::hmax(V::max(V::max(m0, m1), V::max(m2, m3)));
  }
  const int64_t last = (count - 1) * length;
  row_finish<V, !kLog>(x + last, y + last, length, prev_a);
}

// Up to kLanes strided rows at once, one per lane (lanes outside `mask` read and write nothing).
template <typename V, bool kLog>
inline void strided_block(const float* x, float* y, int64_t length, int64_t stride, typename V::Mask mask) {
  using Reg = typename V::Reg;
  constexpr int64_t L = V::kLanes;
  auto at = [&](const float* p, int64_t k) { return V::load_or(mask, p + k * stride, V::zero()); };
  Reg m = at(x, 0);
  for (int64_t k = 1; k < length; ++k) m = V::max(m, at(x, k));
  Reg s = V::zero();
  for (int64_t k = 0; k < length; ++k) {
    const Reg e = V::exp_nonpositive(V::sub(at(x, k), m));
    if constexpr (!kLog) V::store_masked(y + k * stride, mask, e);
    s = V::add(s, e);
  }
  if constexpr (kLog) {
    float sum[L], max[L], shift[L];
    V::store(sum, s);
    V::store(max, m);
    for (int64_t j = 0; j < L; ++j) shift[j] = max[j] + __builtin_logf(sum[j]);
    const Reg c = V::load(shift);
    for (int64_t k = 0; k < length; ++k) V::store_masked(y + k * stride, mask, V::sub(at(x, k), c));
  } else {
    const Reg inv = V::div(V::set1(1.0f), s);
    for (int64_t k = 0; k < length; ++k) V::store_masked(y + k * stride, mask, V::mul(at(y, k), inv));
  }
}

template <typename V, bool kLog>
void strided(const float* x, float* y, int64_t length, int64_t stride, int64_t count) {
  constexpr int64_t L = V::kLanes;
  for (int64_t j = 0; j < count; j += L) {
    const int64_t rem = count - j < L ? count - j : L;
    strided_block<V, kLog>(x + j, y + j, length, stride, V::tail_mask(rem));
  }
}

// y[i] = f(x[i]) over whole vectors, then one masked tail.
template <typename V, typename F>
inline void map(const float* x, float* y, int64_t n, F f) {
  constexpr int64_t L = V::kLanes;
  int64_t i = 0;
  for (; i + L <= n; i += L) V::store(y + i, f(V::load(x + i)));
  if (i < n) {
    const typename V::Mask mask = V::tail_mask(n - i);
    V::store_masked(y + i, mask, f(V::load_or(mask, x + i, V::zero())));
  }
}

}  // namespace
}  // namespace onnx_light::runtime::kernels::simd
