#pragma once
// The fused activations that SIMD loops apply in registers (depthwise rows, GEMM stores), written
// once over an ops struct (ops_f32_avx2.h, ops_f32_avx512.h) with exactly the scalar expressions of
// kernels/epilogue.cc, so that every path stores the same bits.
#include <cstdint>

namespace onnx_light::runtime::kernels::simd {

inline constexpr int f32_activation_none = 0;
inline constexpr int f32_activation_relu = 1;
inline constexpr int f32_activation_clip = 2;          // min(max(v, alpha), beta)
inline constexpr int f32_activation_leaky_relu = 3;    // v < 0 ? alpha * v : v
inline constexpr int f32_activation_hard_sigmoid = 4;  // max(0, min(1, alpha * v + beta))
inline constexpr int f32_activation_hard_swish = 5;    // v * max(0, min(1, v / 6 + 0.5))

namespace {

// NaN and signed zeros as the scalar std::min / std::max forms: Ops::max(a, b) and Ops::min(a, b)
// return b when unordered. Relu here is max(0, v) (the depthwise rows' form).
template <typename Ops>
inline typename Ops::V apply_f32_activation(int activation, float alpha, float beta, typename Ops::V v) {
  using V = typename Ops::V;
  switch (activation) {
    case f32_activation_relu: return Ops::max(Ops::zero(), v);
    case f32_activation_clip: return Ops::min(Ops::set1(beta), Ops::max(Ops::set1(alpha), v));
    case f32_activation_leaky_relu: return Ops::select_negative(v, Ops::mul(Ops::set1(alpha), v), v);
    case f32_activation_hard_sigmoid: {
      const V t = Ops::add(Ops::mul(Ops::set1(alpha), v), Ops::set1(beta));
      return Ops::max(Ops::min(t, Ops::set1(1.0f)), Ops::zero());
    }
    case f32_activation_hard_swish: {
      const V t = Ops::add(Ops::div(v, Ops::set1(6.0f)), Ops::set1(0.5f));
      return Ops::mul(v, Ops::max(Ops::min(t, Ops::set1(1.0f)), Ops::zero()));
    }
    default: return v;
  }
}

}  // namespace
}  // namespace onnx_light::runtime::kernels::simd
