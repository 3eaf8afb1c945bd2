#pragma once
// The loop of conv_f32_direct.h written once over an ops struct (Avx2 / Avx512).
#include <cstddef>
#include <cstdint>

#include "kernels/simd/activation_f32.h"
#include "kernels/simd/conv_f32_direct.h"
#include "kernels/simd/tap_fma_chains.h"

namespace onnx_light::runtime::kernels::simd {
namespace {

// acc + bias for G output pixels of one row into tile[0..G): each tap's weight vector loaded once
// for G independent FMA chains, each fed by one broadcast input value.
template <typename Ops, int G>
inline void conv_direct_pixels(const ConvF32DirectBlock& b, const float* origin, typename Ops::V bias,
                               typename Ops::V* tile) {
  typename Ops::V acc[G];
  const int64_t stride = b.stride_w;
  tap_fma_chains<Ops, G>(
      b.weights, b.tap_offsets, b.taps,
      [origin, stride](int g, int64_t offset) { return Ops::set1(origin[offset + g * stride]); }, acc);
#pragma GCC unroll 16
  for (int g = 0; g < G; ++g) tile[g] = Ops::add(acc[g], bias);
}

// tile[pixel][map] for `count` pixels from `at` in the band's planes: transposed to the maps' rows,
// then the residual, activation and post affine (known at compile time: a switch per stored vector
// was 14% of a stem's time), stored (masked for a row's last pixels).
template <typename Ops, int kActivation, bool kAffine>
inline void conv_direct_store(const ConvF32DirectBlock& b, typename Ops::V* tile, int64_t at, int64_t count) {
  using V = typename Ops::V;
  constexpr int64_t L = Ops::width;
  Ops::transpose(tile);
  const DwconvF32Epilogue& e = b.epilogue;
  if (count == L && b.z == nullptr) {
    for (int64_t l = 0; l < b.valid; ++l) {
      V v = apply_f32_activation<Ops>(kActivation, e.alpha, e.beta, tile[l]);
      if constexpr (kAffine) v = Ops::add(Ops::mul(v, Ops::set1(e.post_scale)), Ops::set1(e.post_shift));
      Ops::store(b.y[l] + at, v);
    }
    return;
  }
  const typename Ops::Mask m = Ops::mask(count);
  for (int64_t l = 0; l < b.valid; ++l) {
    V v = tile[l];
    if (b.z != nullptr) v = Ops::add(v, count == L ? Ops::load(b.z[l] + at) : Ops::load_partial(b.z[l] + at, m));
    v = apply_f32_activation<Ops>(kActivation, e.alpha, e.beta, v);
    if constexpr (kAffine) v = Ops::add(Ops::mul(v, Ops::set1(e.post_scale)), Ops::set1(e.post_shift));
    if (count == L) Ops::store(b.y[l] + at, v);
    else Ops::store_partial(b.y[l] + at, v, m);
  }
}

template <typename Ops, int kActivation, bool kAffine>
void conv_direct_fixed(const ConvF32DirectBlock& b) {
  using V = typename Ops::V;
  constexpr int64_t L = Ops::width;
  const V bias = Ops::load(b.bias);
  V tile[L];
  for (int64_t oy = 0; oy < b.out_h; ++oy) {
    const float* row = b.x + oy * b.stride_h * b.pitch;
    int64_t ox = 0;
    for (; ox + L <= b.out_w; ox += L) {
      conv_direct_pixels<Ops, L>(b, row + ox * b.stride_w, bias, tile);
      conv_direct_store<Ops, kActivation, kAffine>(b, tile, oy * b.out_w + ox, L);
    }
    if (ox < b.out_w) {  // the row's last pixels one at a time (their inputs end at the pitch)
      const int64_t count = b.out_w - ox;
      for (int64_t p = 0; p < L; ++p) tile[p] = Ops::zero();
      for (int64_t p = 0; p < count; ++p) conv_direct_pixels<Ops, 1>(b, row + (ox + p) * b.stride_w, bias, tile + p);
      conv_direct_store<Ops, kActivation, kAffine>(b, tile, oy * b.out_w + ox, count);
    }
  }
}

// Dispatches once per block on the epilogue's activation.
template <typename Ops>
void conv_direct(const ConvF32DirectBlock& b) {
  with_fixed_epilogue(b.epilogue.activation, b.epilogue.post_affine,
                      [&](auto e) { conv_direct_fixed<Ops, decltype(e)::activation, decltype(e)::affine>(b); });
}

}  // namespace
}  // namespace onnx_light::runtime::kernels::simd
