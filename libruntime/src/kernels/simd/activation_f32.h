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

// An activation code and the post-affine flag as compile-time constants, for loops specialised on
// their epilogue (no branch per vector).
template <int kActivation, bool kAffine>
struct FixedEpilogue {
  static constexpr int activation = kActivation;
  static constexpr bool affine = kAffine;
};

template <int kActivation, typename Body>
inline void with_fixed_affine(bool affine, const Body& body) {
  if (affine) body(FixedEpilogue<kActivation, true>{});
  else body(FixedEpilogue<kActivation, false>{});
}

// Calls body(FixedEpilogue<activation, affine>{}) once: the one dispatch of every specialised loop.
template <typename Body>
inline void with_fixed_epilogue(int activation, bool affine, const Body& body) {
  switch (activation) {
    case f32_activation_relu: return with_fixed_affine<f32_activation_relu>(affine, body);
    case f32_activation_clip: return with_fixed_affine<f32_activation_clip>(affine, body);
    case f32_activation_leaky_relu: return with_fixed_affine<f32_activation_leaky_relu>(affine, body);
    case f32_activation_hard_sigmoid: return with_fixed_affine<f32_activation_hard_sigmoid>(affine, body);
    case f32_activation_hard_swish: return with_fixed_affine<f32_activation_hard_swish>(affine, body);
    default: return with_fixed_affine<f32_activation_none>(affine, body);
  }
}

}  // namespace
}  // namespace onnx_light::runtime::kernels::simd
