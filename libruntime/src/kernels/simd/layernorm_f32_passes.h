#pragma once
// The passes of LayerNormalization over float32 rows, written once over an ISA's ops struct
// (ops_f32_avx2.h, ops_f32_avx512.h). Included only by layernorm_f32_avx2.cc and
// layernorm_f32_avx512.cc; internal linkage, so each compiles its own copy with its own flags.
#include <cstdint>

namespace onnx_light::runtime::kernels::simd {
namespace {  // NOLINT(google-build-namespaces,cert-dcl59-cpp): one copy per ISA file, on purpose

// Sum of the lanes of v, pairwise in a fixed order.
template <typename Ops>
inline float lane_sum(typename Ops::V v) {
  float lanes[Ops::width];
  Ops::store(lanes, v);
  for (int64_t half = Ops::width / 2; half >= 1; half /= 2)
    for (int64_t i = 0; i < half; ++i) lanes[i] += lanes[i + half];
  return lanes[0];
}

// Sum over the row of f(x[i]) with four accumulators (f maps a vector to a vector; masked-off
// tail lanes are zeroed after f, so f may be anything).
template <typename Ops, typename F>
inline float row_sum(const float* x, int64_t n, F f) {
  using V = typename Ops::V;
  constexpr int64_t L = Ops::width;
  V s0 = Ops::zero(), s1 = s0, s2 = s0, s3 = s0;
  int64_t i = 0;
  for (; i + 4 * L <= n; i += 4 * L) {
    s0 = Ops::add(s0, f(Ops::load(x + i)));
    s1 = Ops::add(s1, f(Ops::load(x + i + L)));
    s2 = Ops::add(s2, f(Ops::load(x + i + 2 * L)));
    s3 = Ops::add(s3, f(Ops::load(x + i + 3 * L)));
  }
  for (; i + L <= n; i += L) s0 = Ops::add(s0, f(Ops::load(x + i)));
  if (i < n) {
    const typename Ops::Mask m = Ops::mask(n - i);
    // f of the zero-filled lanes is not zero in general: keep only the row's lanes.
    float tail[L];
    Ops::store(tail, f(Ops::load_partial(x + i, m)));
    for (int64_t k = n - i; k < L; ++k) tail[k] = 0.0f;
    s1 = Ops::add(s1, Ops::load(tail));
  }
  return lane_sum<Ops>(Ops::add(Ops::add(s0, s1), Ops::add(s2, s3)));
}

template <typename Ops>
void layer_norm_rows(const float* x, float* y, int64_t rows, int64_t n, const float* scale, const float* bias,
                     float epsilon, float* mean_out, float* inv_out) {
  using V = typename Ops::V;
  constexpr int64_t L = Ops::width;
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * n;
    float* yr = y + r * n;
    const float mean = row_sum<Ops>(xr, n, [](V v) { return v; }) / static_cast<float>(n);
    const V vneg_mean = Ops::set1(-mean);
    const float squares = row_sum<Ops>(xr, n, [&](V v) {
      const V d = Ops::add(v, vneg_mean);  // x - mean, exactly
      return Ops::mul(d, d);
    });
    // __builtin_sqrtf, not std::sqrt: no library inline compiled with this file's flags (README.md).
    const float inv = 1.0f / __builtin_sqrtf(squares / static_cast<float>(n) + epsilon);
    const V vinv = Ops::set1(inv);
    // The portable kernel's order: (x - mean) first (x * inv - mean * inv would cancel badly when
    // the row sits far from zero), then * inv, then * scale + bias in one FMA.
    auto one = [&](V v, V s, V b) { return Ops::fma(Ops::mul(Ops::add(v, vneg_mean), vinv), s, b); };
    int64_t i = 0;
    const V zero = Ops::zero();
    for (; i + L <= n; i += L)
      Ops::store(yr + i, one(Ops::load(xr + i), Ops::load(scale + i), bias != nullptr ? Ops::load(bias + i) : zero));
    if (i < n) {
      const typename Ops::Mask m = Ops::mask(n - i);
      const V b = bias != nullptr ? Ops::load_partial(bias + i, m) : zero;
      Ops::store_partial(yr + i, one(Ops::load_partial(xr + i, m), Ops::load_partial(scale + i, m), b), m);
    }
    if (mean_out != nullptr) mean_out[r] = mean;
    if (inv_out != nullptr) inv_out[r] = inv;
  }
}

}  // namespace
}  // namespace onnx_light::runtime::kernels::simd
