#pragma once
// The fused epilogue contract between the graph optimizer and the kernels that apply it as they
// store (FusedConv, FusedGemm, FusedMatMul in domain "com.onnx_light"):
//   Y = activation(op(X, W, ...) + B + Z)
// B is the operator's own bias (per output channel), Z an optional residual of Y's shape (added
// before the activation, as ONNX Runtime's FusedConv "Z" input). The node carries
//   activation:        string, one of "Identity" (default), "Relu", "Clip", "LeakyRelu",
//                      "Sigmoid", "HardSigmoid", "HardSwish", "Tanh", "SiLU"
//   activation_params: floats; Clip {min, max}; LeakyRelu {alpha}; HardSigmoid {alpha, beta}
// Each activation computes exactly what the ONNX operator's kernel in unary.cc computes, so a
// fused graph matches the unfused one to rounding of the fused adds.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace onnx_light::runtime::kernels {

inline constexpr std::string_view kFusedDomain = "com.onnx_light";

enum class Activation { identity, relu, clip, leaky_relu, sigmoid, hard_sigmoid, hard_swish, tanh, silu };

struct Epilogue {
  Activation activation = Activation::identity;
  float alpha = 0.0f;  // Clip min, LeakyRelu alpha, HardSigmoid alpha
  float beta = 0.0f;   // Clip max, HardSigmoid beta

  bool is_identity() const { return activation == Activation::identity; }
  // "Relu", "Clip(0,6)": for labels and profiles.
  std::string describe() const;
};

// Parses a node's `activation`/`activation_params`; throws ModelError naming `label` and the field.
Epilogue parse_epilogue(std::string_view activation, const std::vector<float>& params, const std::string& label);
// The ONNX op type and params that `parse_epilogue` accepts for an activation, for the optimizer.
std::string_view activation_name(Activation activation);

// Applies the activation in place to n contiguous values (no bias, no residual).
void apply_activation(const Epilogue& epilogue, float* values, int64_t n);

}  // namespace onnx_light::runtime::kernels
