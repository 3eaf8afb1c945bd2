#pragma once
// The fused epilogue contract between the graph optimizer and the kernels that apply it as they
// store (FusedConv, FusedGemm, FusedMatMul in domain "com.onnx_light"):
//   Y = activation(op(X, W, ...) + B + Z) * post_scale + post_shift
// B is the operator's own bias (per output channel), Z an optional residual of Y's shape (added
// before the activation, as ONNX Runtime's FusedConv "Z" input). The node carries
//   activation:        string, one of "Identity" (default), "Relu", "Clip", "LeakyRelu",
//                      "Sigmoid", "HardSigmoid", "HardSwish", "Tanh", "SiLU"
//   activation_params: floats; Clip {min, max}; LeakyRelu {alpha}; HardSigmoid {alpha, beta}
//   post_affine:       floats {scale, shift}, optional: a scalar Mul and/or Add after the
//                      activation (PaddleOCR's learnable affine block writes one after every
//                      activation), applied as two roundings like the nodes it replaces
// Each activation computes exactly what the ONNX operator's kernel in unary.cc computes, so a
// fused graph matches the unfused one to rounding of the fused adds.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "onnx_light/runtime/kernel.h"

namespace onnx_light::runtime::kernels {

inline constexpr std::string_view kFusedDomain = "com.onnx_light";

enum class Activation { identity, relu, clip, leaky_relu, sigmoid, hard_sigmoid, hard_swish, tanh, silu };

struct Epilogue {
  Activation activation = Activation::identity;
  float alpha = 0.0f;  // Clip min, LeakyRelu alpha, HardSigmoid alpha
  float beta = 0.0f;   // Clip max, HardSigmoid beta
  float post_scale = 1.0f;
  float post_shift = 0.0f;
  bool post_affine = false;

  // Nothing at all to apply (no activation, no post affine).
  bool is_identity() const { return activation == Activation::identity && !post_affine; }
  // Exactly a Relu: the fast paths that store Relu inside a micro-kernel.
  bool is_relu_only() const { return activation == Activation::relu && !post_affine; }
  // "Relu", "Clip(0,6)": for labels and profiles.
  std::string describe() const;
};

// Parses a node's `activation`/`activation_params`; throws ModelError naming `label` and the field.
Epilogue parse_epilogue(std::string_view activation, const std::vector<float>& params, const std::string& label);
// The same from a fused node's attributes, with its optional `post_affine`.
Epilogue parse_epilogue_attributes(const KernelCreateInfo& info);
// The ONNX op type and params that `parse_epilogue` accepts for an activation, for the optimizer.
std::string_view activation_name(Activation activation);

// The vector loops' code for an activation (simd/activation_f32.h), or -1 where only the scalar
// pass (apply_activation) has it: sigmoid, tanh, silu.
int f32_activation_code(Activation activation);

// Applies the activation and the post affine in place to n contiguous values (no bias, no residual).
void apply_activation(const Epilogue& epilogue, float* values, int64_t n);

}  // namespace onnx_light::runtime::kernels
