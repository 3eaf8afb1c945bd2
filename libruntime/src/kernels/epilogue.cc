#include "kernels/epilogue.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "kernels/simd/activation_f32.h"
#include "onnx_light/runtime/error.h"

namespace onnx_light::runtime::kernels {

namespace {

struct NamedActivation {
  std::string_view name;
  Activation activation;
  std::size_t params;  // how many activation_params it takes
};

constexpr NamedActivation kActivations[] = {
    {"Identity", Activation::identity, 0},      {"Relu", Activation::relu, 0},
    {"Clip", Activation::clip, 2},              {"LeakyRelu", Activation::leaky_relu, 1},
    {"Sigmoid", Activation::sigmoid, 0},        {"HardSigmoid", Activation::hard_sigmoid, 2},
    {"HardSwish", Activation::hard_swish, 0},   {"Tanh", Activation::tanh, 0},
    {"SiLU", Activation::silu, 0},
};

// The same expressions as unary.cc's SigmoidOp etc., so fused and unfused agree.
inline float sigmoid(float x) {
  if (x >= 0.0f) return 1.0f / (1.0f + std::exp(-x));
  float e = std::exp(x);
  return e / (1.0f + e);
}

template <typename F>
void for_each(float* values, int64_t n, F f) {
  for (int64_t i = 0; i < n; ++i) values[i] = f(values[i]);
}

}  // namespace

std::string_view activation_name(Activation activation) {
  for (const auto& a : kActivations)
    if (a.activation == activation) return a.name;
  return "Identity";
}

std::string Epilogue::describe() const {
  std::string text;
  switch (activation) {
    case Activation::clip: text = fmt::format("Clip({:g},{:g})", alpha, beta); break;
    case Activation::leaky_relu: text = fmt::format("LeakyRelu({:g})", alpha); break;
    case Activation::hard_sigmoid: text = fmt::format("HardSigmoid({:g},{:g})", alpha, beta); break;
    default: text = std::string(activation_name(activation));
  }
  if (post_affine) text += fmt::format(" *{:g} +{:g}", post_scale, post_shift);
  return text;
}

Epilogue parse_epilogue_attributes(const KernelCreateInfo& info) {
  const std::string label = info.node_label();
  std::vector<float> params;
  if (const auto* a = info.attribute("activation_params")) params.assign(a->floats().begin(), a->floats().end());
  Epilogue e = parse_epilogue(info.string_attribute("activation", "Identity"), params, label);
  if (const auto* a = info.attribute("post_affine")) {
    if (a->floats_size() != 2)
      throw ModelError(fmt::format("{}: attribute 'post_affine' has {} value(s); it takes {{scale, shift}}", label,
                                   a->floats_size()));
    e.post_scale = a->floats(0);
    e.post_shift = a->floats(1);
    e.post_affine = true;
  }
  return e;
}

Epilogue parse_epilogue(std::string_view activation, const std::vector<float>& params, const std::string& label) {
  for (const auto& a : kActivations) {
    if (a.name != activation) continue;
    if (params.size() != a.params)
      throw ModelError(fmt::format("{}: attribute 'activation_params' has {} value(s) but activation '{}' takes {}", label,
                                   params.size(), activation, a.params));
    Epilogue e;
    e.activation = a.activation;
    if (a.params > 0) e.alpha = params[0];
    if (a.params > 1) e.beta = params[1];
    return e;
  }
  throw ModelError(fmt::format("{}: attribute 'activation' = \"{}\" is not one of Identity, Relu, Clip, LeakyRelu, "
                               "Sigmoid, HardSigmoid, HardSwish, Tanh, SiLU",
                               label, activation));
}

namespace {

void apply_activation_only(const Epilogue& e, float* values, int64_t n) {
  switch (e.activation) {
    case Activation::identity: return;
    case Activation::relu: return for_each(values, n, [](float x) { return std::max(x, 0.0f); });
    case Activation::clip: {
      const float lo = e.alpha, hi = e.beta;
      return for_each(values, n, [lo, hi](float x) { return std::min(std::max(x, lo), hi); });
    }
    case Activation::leaky_relu: {
      const float a = e.alpha;
      return for_each(values, n, [a](float x) { return x < 0.0f ? a * x : x; });
    }
    case Activation::sigmoid: return for_each(values, n, [](float x) { return sigmoid(x); });
    case Activation::hard_sigmoid: {
      const float a = e.alpha, b = e.beta;
      return for_each(values, n, [a, b](float x) { return std::max(0.0f, std::min(1.0f, a * x + b)); });
    }
    case Activation::hard_swish:
      return for_each(values, n, [](float x) { return x * std::max(0.0f, std::min(1.0f, x / 6.0f + 0.5f)); });
    case Activation::tanh: return for_each(values, n, [](float x) { return std::tanh(x); });
    case Activation::silu: return for_each(values, n, [](float x) { return x * sigmoid(x); });
  }
}

}  // namespace

int f32_activation_code(Activation a) {
  switch (a) {
    case Activation::identity: return simd::f32_activation_none;
    case Activation::relu: return simd::f32_activation_relu;
    case Activation::clip: return simd::f32_activation_clip;
    case Activation::leaky_relu: return simd::f32_activation_leaky_relu;
    case Activation::hard_sigmoid: return simd::f32_activation_hard_sigmoid;
    case Activation::hard_swish: return simd::f32_activation_hard_swish;
    default: return -1;
  }
}

void apply_activation(const Epilogue& e, float* values, int64_t n) {
  apply_activation_only(e, values, n);
  if (!e.post_affine) return;
  // Two roundings, as the Mul and Add nodes it replaces (this file is built without FMA contraction).
  const float scale = e.post_scale, shift = e.post_shift;
  for_each(values, n, [scale, shift](float x) {
    const float scaled = x * scale;
    return scaled + shift;
  });
}

}  // namespace onnx_light::runtime::kernels
