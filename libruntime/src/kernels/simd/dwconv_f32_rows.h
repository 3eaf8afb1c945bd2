#pragma once
// The depthwise row loop of dwconv_f32.h written once over an ops struct (Avx2 / Avx512); each ISA
// file compiles its own internal copy (anonymous namespace, see README.md).
#include <cstddef>
#include <cstdint>

#include "kernels/simd/dwconv_f32.h"

namespace onnx_light::runtime::kernels::simd {
namespace {

template <typename Ops>
inline typename Ops::V dwconv_epilogue(const DwconvF32Row& r, typename Ops::V acc, typename Ops::V z) {
  using V = typename Ops::V;
  V v = Ops::add(acc, Ops::set1(r.bias));
  if (r.z != nullptr) v = Ops::add(v, z);
  switch (r.activation) {
    case dwconv_f32_relu: return Ops::max(Ops::zero(), v);  // v < 0 ? 0 : v (NaN stays)
    case dwconv_f32_clip: return Ops::min(Ops::set1(r.beta), Ops::max(Ops::set1(r.alpha), v));
    case dwconv_f32_leaky_relu: return Ops::select_negative(v, Ops::mul(Ops::set1(r.alpha), v), v);
    case dwconv_f32_hard_sigmoid: {
      const V t = Ops::add(Ops::mul(Ops::set1(r.alpha), v), Ops::set1(r.beta));
      return Ops::max(Ops::min(t, Ops::set1(1.0f)), Ops::zero());
    }
    case dwconv_f32_hard_swish: {
      const V t = Ops::add(Ops::div(v, Ops::set1(6.0f)), Ops::set1(0.5f));
      return Ops::mul(v, Ops::max(Ops::min(t, Ops::set1(1.0f)), Ops::zero()));
    }
    default: return v;
  }
}

template <typename Ops>
void dwconv_row(const DwconvF32Row& r) {
  using V = typename Ops::V;
  constexpr int64_t w = Ops::width;
  const int64_t taps = r.taps;
  int64_t j = 0;
  // Four vectors at a time: each tap's weight is broadcast once for 4 independent FMA chains.
  for (; j + 4 * w <= r.n; j += 4 * w) {
    V a0 = Ops::zero(), a1 = Ops::zero(), a2 = Ops::zero(), a3 = Ops::zero();
    for (int64_t t = 0; t < taps; ++t) {
      const float* s = r.src[t] + j;
      const V k = Ops::set1(r.weights[t]);
      a0 = Ops::fma(Ops::load(s), k, a0);
      a1 = Ops::fma(Ops::load(s + w), k, a1);
      a2 = Ops::fma(Ops::load(s + 2 * w), k, a2);
      a3 = Ops::fma(Ops::load(s + 3 * w), k, a3);
    }
    const float* z = r.z != nullptr ? r.z + j : nullptr;
    Ops::store(r.y + j, dwconv_epilogue<Ops>(r, a0, z != nullptr ? Ops::load(z) : a0));
    Ops::store(r.y + j + w, dwconv_epilogue<Ops>(r, a1, z != nullptr ? Ops::load(z + w) : a1));
    Ops::store(r.y + j + 2 * w, dwconv_epilogue<Ops>(r, a2, z != nullptr ? Ops::load(z + 2 * w) : a2));
    Ops::store(r.y + j + 3 * w, dwconv_epilogue<Ops>(r, a3, z != nullptr ? Ops::load(z + 3 * w) : a3));
  }
  for (; j + w <= r.n; j += w) {
    V a = Ops::zero();
    for (int64_t t = 0; t < taps; ++t) a = Ops::fma(Ops::load(r.src[t] + j), Ops::set1(r.weights[t]), a);
    Ops::store(r.y + j, dwconv_epilogue<Ops>(r, a, r.z != nullptr ? Ops::load(r.z + j) : a));
  }
  if (j < r.n) {
    // The tail: masked loads never touch memory past the row.
    const int64_t rem = r.n - j;
    const typename Ops::Mask m = Ops::mask(rem);
    V a = Ops::zero();
    for (int64_t t = 0; t < taps; ++t) a = Ops::fma(Ops::load_partial(r.src[t] + j, m), Ops::set1(r.weights[t]), a);
    Ops::store_partial(r.y + j, dwconv_epilogue<Ops>(r, a, r.z != nullptr ? Ops::load_partial(r.z + j, m) : a), m);
  }
}

// Input row i (0..kernel_h) at column offset kx: tap (i, kx) of the upper row, (i - 1, kx) of the lower.
template <typename Ops>
void dwconv_rows2(const DwconvF32Row& r, const float* const* below_src, int64_t kw, const float* below_z,
                  float* below_y) {
  using V = typename Ops::V;
  constexpr int64_t w = Ops::width;
  const int64_t kh = r.taps / kw;
  auto src = [&](int64_t i, int64_t kx) { return i < kh ? r.src[i * kw + kx] : below_src[kx]; };
  DwconvF32Row below = r;
  below.z = below_z;
  below.y = below_y;
  int64_t j = 0;
  for (; j + 2 * w <= r.n; j += 2 * w) {
    V a0 = Ops::zero(), a1 = Ops::zero(), b0 = Ops::zero(), b1 = Ops::zero();
    for (int64_t i = 0; i <= kh; ++i)
      for (int64_t kx = 0; kx < kw; ++kx) {
        const float* s = src(i, kx) + j;
        const V v0 = Ops::load(s), v1 = Ops::load(s + w);
        if (i < kh) {
          const V k = Ops::set1(r.weights[i * kw + kx]);
          a0 = Ops::fma(v0, k, a0);
          a1 = Ops::fma(v1, k, a1);
        }
        if (i > 0) {
          const V k = Ops::set1(r.weights[(i - 1) * kw + kx]);
          b0 = Ops::fma(v0, k, b0);
          b1 = Ops::fma(v1, k, b1);
        }
      }
    Ops::store(r.y + j, dwconv_epilogue<Ops>(r, a0, r.z != nullptr ? Ops::load(r.z + j) : a0));
    Ops::store(r.y + j + w, dwconv_epilogue<Ops>(r, a1, r.z != nullptr ? Ops::load(r.z + j + w) : a1));
    Ops::store(below_y + j, dwconv_epilogue<Ops>(below, b0, below_z != nullptr ? Ops::load(below_z + j) : b0));
    Ops::store(below_y + j + w, dwconv_epilogue<Ops>(below, b1, below_z != nullptr ? Ops::load(below_z + j + w) : b1));
  }
  for (; j < r.n; j += w) {
    const int64_t rem = r.n - j < w ? r.n - j : w;
    const typename Ops::Mask m = Ops::mask(rem);
    V a = Ops::zero(), b = Ops::zero();
    for (int64_t i = 0; i <= kh; ++i)
      for (int64_t kx = 0; kx < kw; ++kx) {
        const V v = Ops::load_partial(src(i, kx) + j, m);
        if (i < kh) a = Ops::fma(v, Ops::set1(r.weights[i * kw + kx]), a);
        if (i > 0) b = Ops::fma(v, Ops::set1(r.weights[(i - 1) * kw + kx]), b);
      }
    Ops::store_partial(r.y + j, dwconv_epilogue<Ops>(r, a, r.z != nullptr ? Ops::load_partial(r.z + j, m) : a), m);
    Ops::store_partial(below_y + j,
                       dwconv_epilogue<Ops>(below, b, below_z != nullptr ? Ops::load_partial(below_z + j, m) : b), m);
  }
}

}  // namespace
}  // namespace onnx_light::runtime::kernels::simd
