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
  v = apply_f32_activation<Ops>(r.activation, r.alpha, r.beta, v);
  if (r.post_affine) v = Ops::add(Ops::mul(v, Ops::set1(r.post_scale)), Ops::set1(r.post_shift));
  return v;
}

// The same with the activation and post affine known at compile time: no switch per stored vector
// (3x3 rows on 32x112x112: 172 -> 157 us), the same expressions.
template <typename Ops, int kActivation, bool kAffine>
inline typename Ops::V dwconv_epilogue_fixed(const DwconvF32Row& r, typename Ops::V acc, typename Ops::V z) {
  using V = typename Ops::V;
  V v = Ops::add(acc, Ops::set1(r.bias));
  if (r.z != nullptr) v = Ops::add(v, z);
  v = apply_f32_activation<Ops>(kActivation, r.alpha, r.beta, v);
  if constexpr (kAffine) v = Ops::add(Ops::mul(v, Ops::set1(r.post_scale)), Ops::set1(r.post_shift));
  return v;
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

// dwconv_row with the tap count a compile-time constant (3x3): the taps unroll, their
// pointers and broadcast weights are set up once per row instead of once per vector block, so
// the inner loop is loads and FMAs only. The same FMA chain per output, so the same results.
template <typename Ops, int kTaps>
void dwconv_row_fixed(const DwconvF32Row& r) {
  using V = typename Ops::V;
  constexpr int64_t w = Ops::width;
  const float* s[kTaps];
  V k[kTaps];
  for (int t = 0; t < kTaps; ++t) {
    s[t] = r.src[t];
    k[t] = Ops::set1(r.weights[t]);
  }
  const float* z = r.z;
  int64_t j = 0;
  for (; j + 4 * w <= r.n; j += 4 * w) {
    V a0 = Ops::zero(), a1 = Ops::zero(), a2 = Ops::zero(), a3 = Ops::zero();
#pragma GCC unroll 9
    for (int t = 0; t < kTaps; ++t) {
      const float* p = s[t] + j;
      a0 = Ops::fma(Ops::load(p), k[t], a0);
      a1 = Ops::fma(Ops::load(p + w), k[t], a1);
      a2 = Ops::fma(Ops::load(p + 2 * w), k[t], a2);
      a3 = Ops::fma(Ops::load(p + 3 * w), k[t], a3);
    }
    Ops::store(r.y + j, dwconv_epilogue<Ops>(r, a0, z != nullptr ? Ops::load(z + j) : a0));
    Ops::store(r.y + j + w, dwconv_epilogue<Ops>(r, a1, z != nullptr ? Ops::load(z + j + w) : a1));
    Ops::store(r.y + j + 2 * w, dwconv_epilogue<Ops>(r, a2, z != nullptr ? Ops::load(z + j + 2 * w) : a2));
    Ops::store(r.y + j + 3 * w, dwconv_epilogue<Ops>(r, a3, z != nullptr ? Ops::load(z + j + 3 * w) : a3));
  }
  for (; j + w <= r.n; j += w) {
    V a = Ops::zero();
#pragma GCC unroll 9
    for (int t = 0; t < kTaps; ++t) a = Ops::fma(Ops::load(s[t] + j), k[t], a);
    Ops::store(r.y + j, dwconv_epilogue<Ops>(r, a, z != nullptr ? Ops::load(z + j) : a));
  }
  if (j < r.n) {
    const typename Ops::Mask m = Ops::mask(r.n - j);
    V a = Ops::zero();
#pragma GCC unroll 9
    for (int t = 0; t < kTaps; ++t) a = Ops::fma(Ops::load_partial(s[t] + j, m), k[t], a);
    Ops::store_partial(r.y + j, dwconv_epilogue<Ops>(r, a, z != nullptr ? Ops::load_partial(z + j, m) : a), m);
  }
}

// dwconv_rows2 with kernel kh x kw a compile-time constant: each of the kh + 1 input rows' loads
// feeds both output rows, with every branch on the tap resolved at compile time.
template <typename Ops, int kh, int kw, int kActivation, bool kAffine>
void dwconv_rows2_fixed_epilogue(const DwconvF32Row& r, const float* const* below_src, const float* below_z,
                                 float* below_y) {
  using V = typename Ops::V;
  constexpr int64_t w = Ops::width;
  constexpr int kTaps = kh * kw;
  const float* s[(kh + 1) * kw];
  V k[kTaps];
  for (int t = 0; t < kTaps; ++t) {
    s[t] = r.src[t];
    k[t] = Ops::set1(r.weights[t]);
  }
  for (int kx = 0; kx < kw; ++kx) s[kTaps + kx] = below_src[kx];
  DwconvF32Row below = r;
  below.z = below_z;
  below.y = below_y;
  const float* z = r.z;
  int64_t j = 0;
  for (; j + 2 * w <= r.n; j += 2 * w) {
    V a0 = Ops::zero(), a1 = Ops::zero(), b0 = Ops::zero(), b1 = Ops::zero();
#pragma GCC unroll 12
    for (int t = 0; t < (kh + 1) * kw; ++t) {
      const int i = t / kw;
      const V v0 = Ops::load(s[t] + j), v1 = Ops::load(s[t] + j + w);
      if (i < kh) {
        a0 = Ops::fma(v0, k[t], a0);
        a1 = Ops::fma(v1, k[t], a1);
      }
      if (i > 0) {
        b0 = Ops::fma(v0, k[t - kw], b0);
        b1 = Ops::fma(v1, k[t - kw], b1);
      }
    }
    Ops::store(r.y + j, dwconv_epilogue_fixed<Ops, kActivation, kAffine>(r, a0, z != nullptr ? Ops::load(z + j) : a0));
    Ops::store(r.y + j + w, dwconv_epilogue_fixed<Ops, kActivation, kAffine>(r, a1, z != nullptr ? Ops::load(z + j + w) : a1));
    Ops::store(below_y + j, dwconv_epilogue_fixed<Ops, kActivation, kAffine>(below, b0, below_z != nullptr ? Ops::load(below_z + j) : b0));
    Ops::store(below_y + j + w, dwconv_epilogue_fixed<Ops, kActivation, kAffine>(below, b1, below_z != nullptr ? Ops::load(below_z + j + w) : b1));
  }
  for (; j < r.n; j += w) {
    const typename Ops::Mask m = Ops::mask(r.n - j < w ? r.n - j : w);
    V a = Ops::zero(), b = Ops::zero();
#pragma GCC unroll 12
    for (int t = 0; t < (kh + 1) * kw; ++t) {
      const int i = t / kw;
      const V v = Ops::load_partial(s[t] + j, m);
      if (i < kh) a = Ops::fma(v, k[t], a);
      if (i > 0) b = Ops::fma(v, k[t - kw], b);
    }
    Ops::store_partial(r.y + j, dwconv_epilogue_fixed<Ops, kActivation, kAffine>(r, a, z != nullptr ? Ops::load_partial(z + j, m) : a), m);
    Ops::store_partial(below_y + j,
                       dwconv_epilogue_fixed<Ops, kActivation, kAffine>(below, b, below_z != nullptr ? Ops::load_partial(below_z + j, m) : b), m);
  }
}

// Dispatches once per call on the row's activation (the codes the rows apply themselves).
template <typename Ops, int kh, int kw>
void dwconv_rows2_fixed(const DwconvF32Row& r, const float* const* below_src, int64_t, const float* below_z,
                        float* below_y) {
  with_fixed_epilogue(r.activation, r.post_affine, [&](auto e) {
    dwconv_rows2_fixed_epilogue<Ops, kh, kw, decltype(e)::activation, decltype(e)::affine>(r, below_src, below_z, below_y);
  });
}

// Four output rows at once for a 3x3 kernel at vertical stride and dilation 1 (AVX-512): six input
// rows, each loaded once per column block, feed up to three output rows; half the loads of two row
// pairs (the unaligned tap loads, two thirds of them split across cache lines, bounded the pairs).
// Output row q's tap row ky is input row q + ky at r.src[ky * 3 + kx] + q * in_step; its outputs
// and residual at r.y / r.z + q * out_step. Per output, the same FMA chain as dwconv_f32_row.
template <typename Ops, int kActivation, bool kAffine>
void dwconv_rows4_3x3_epilogue(const DwconvF32Row& r, int64_t in_step, int64_t out_step) {
  using V = typename Ops::V;
  constexpr int64_t w = Ops::width;
  const float* s[6][3];
  for (int i = 0; i < 6; ++i)
    for (int kx = 0; kx < 3; ++kx) s[i][kx] = r.src[kx] + i * in_step;
  V k[9];
  for (int t = 0; t < 9; ++t) k[t] = Ops::set1(r.weights[t]);
  DwconvF32Row rows[4] = {r, r, r, r};
  for (int q = 1; q < 4; ++q) {
    rows[q].y = r.y + q * out_step;
    rows[q].z = r.z != nullptr ? r.z + q * out_step : nullptr;
  }
  // One column block: whole vectors (m null) or the row's masked tail.
  const auto block = [&](int64_t j, const typename Ops::Mask* m) {
    V a[4] = {Ops::zero(), Ops::zero(), Ops::zero(), Ops::zero()};
    // Input row i is tap row i - q of output row q (0 <= i - q < 3): chains stay in tap order.
#pragma GCC unroll 6
    for (int i = 0; i < 6; ++i)
#pragma GCC unroll 3
      for (int kx = 0; kx < 3; ++kx) {
        const V v = m == nullptr ? Ops::load(s[i][kx] + j) : Ops::load_partial(s[i][kx] + j, *m);
#pragma GCC unroll 4
        for (int q = 0; q < 4; ++q)
          if (i - q >= 0 && i - q < 3) a[q] = Ops::fma(v, k[(i - q) * 3 + kx], a[q]);
      }
#pragma GCC unroll 4
    for (int q = 0; q < 4; ++q) {
      const DwconvF32Row& o = rows[q];
      if (m == nullptr)
        Ops::store(o.y + j, dwconv_epilogue_fixed<Ops, kActivation, kAffine>(o, a[q], o.z != nullptr ? Ops::load(o.z + j) : a[q]));
      else
        Ops::store_partial(o.y + j,
                           dwconv_epilogue_fixed<Ops, kActivation, kAffine>(
                               o, a[q], o.z != nullptr ? Ops::load_partial(o.z + j, *m) : a[q]),
                           *m);
    }
  };
  int64_t j = 0;
  for (; j + w <= r.n; j += w) block(j, nullptr);
  if (j < r.n) {
    const typename Ops::Mask m = Ops::mask(r.n - j);
    block(j, &m);
  }
}

template <typename Ops>
void dwconv_rows4_3x3(const DwconvF32Row& r, int64_t in_step, int64_t out_step) {
  with_fixed_epilogue(r.activation, r.post_affine, [&](auto e) {
    dwconv_rows4_3x3_epilogue<Ops, decltype(e)::activation, decltype(e)::affine>(r, in_step, out_step);
  });
}

// The row functions for a kernel size: the fixed-tap ones for 3x3, else the generic ones. 5x5 was
// measured slower with fixed taps (25 weights + accumulators overflow the registers: dw5x5 on
// [1,480,6,80] 216 -> 271 us), so it keeps the generic rows.
template <typename Ops>
DwconvF32Kernels dwconv_kernels_for(int64_t kernel_h, int64_t kernel_w) {
  if (kernel_h == 3 && kernel_w == 3)
    return {dwconv_row_fixed<Ops, 9>, dwconv_rows2_fixed<Ops, 3, 3>, true,
            Ops::width >= 16 ? dwconv_rows4_3x3<Ops> : nullptr};  // AVX2's 16 registers: the pairs
  return {dwconv_row<Ops>, dwconv_rows2<Ops>, false, nullptr};
}

}  // namespace
}  // namespace onnx_light::runtime::kernels::simd
