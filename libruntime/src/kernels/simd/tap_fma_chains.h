#pragma once
// The inner loop the direct convolutions share (depthwise blocked rows and groups, thin-group
// direct): G independent FMA chains over a kernel's taps, each tap's weight vector loaded once.
#include <cstddef>
#include <cstdint>

namespace onnx_light::runtime::kernels::simd {
namespace {

// acc[g] = sum over taps t, in order from zero, of weights[t] * input(g, tap_offsets[t]); the
// caller's `input` says how pixel g reads a tap (a vector of channels, or one broadcast value).
template <typename Ops, int G, typename Input>
inline void tap_fma_chains(const float* weights, const int64_t* tap_offsets, int64_t taps, const Input& input,
                           typename Ops::V* acc) {
  using V = typename Ops::V;
  constexpr int64_t L = Ops::width;
#pragma GCC unroll 16
  for (int g = 0; g < G; ++g) acc[g] = Ops::zero();
  for (int64_t t = 0; t < taps; ++t) {
    const V k = Ops::load(weights + t * L);
    const int64_t offset = tap_offsets[t];
#pragma GCC unroll 16
    for (int g = 0; g < G; ++g) acc[g] = Ops::fma(input(g, offset), k, acc[g]);
  }
}

}  // namespace
}  // namespace onnx_light::runtime::kernels::simd
