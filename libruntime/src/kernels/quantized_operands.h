#pragma once
// What the integer kernels (quantization.cc, quantized_conv.cc) share: rounding to a quantized
// type, zero points read per tensor or per channel, the uint8/int8 operand dispatch, and the
// quantized output type a node's zero point gives.
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "kernels/kernel_util.h"
#include "onnx_light/runtime/error.h"
#include "onnx_light/runtime/kernel.h"

namespace onnx_light::runtime::kernels {

// round(v) to nearest even, saturated to Q's range; NaN saturates low.
template <typename Q>
Q saturate_round(float v) {
  const float r = std::nearbyint(v);
  constexpr auto lo = static_cast<float>(std::numeric_limits<Q>::min());
  constexpr auto hi = static_cast<float>(std::numeric_limits<Q>::max());
  if (!(r >= lo)) return std::numeric_limits<Q>::min();
  if (r > hi) return std::numeric_limits<Q>::max();
  return static_cast<Q>(r);
}

// A zero point's values as int32: empty when absent, else 1 (per tensor) or `per` values.
inline std::vector<int32_t> zero_points(const Tensor* t, int64_t per, const std::string& label, const char* what) {
  std::vector<int32_t> v;
  if (t == nullptr) return v;
  if (t->element_count() != 1 && t->element_count() != per)
    throw InputError(fmt::format("{}: {} {} must hold 1 or {} values", label, what, shape_to_string(t->shape()), per));
  for (int64_t i = 0; i < t->element_count(); ++i) v.push_back(static_cast<int32_t>(read_as_double(*t, i)));
  return v;
}

// Zero point i of `zeros` (empty: 0; one value: that one for every i).
inline int32_t zero_point_at(const std::vector<int32_t>& zeros, int64_t i) {
  return zeros.empty() ? 0 : zeros[zeros.size() == 1 ? 0 : static_cast<std::size_t>(i)];
}

// The second operand of an integer product is uint8 or int8 (the first one's type chose the kernel).
inline void check_second_int8_operand(ElementType b, const std::string& label) {
  if (b != ElementType::uint8 && b != ElementType::int8)
    throw InputError(fmt::format("{}: the second operand must be uint8 or int8, not {}", label, element_type_name(b)));
}

// Calls f(A{}, B{}) for the (uint8|int8) x (uint8|int8) types of the two operands.
template <typename F>
void dispatch_int8_pair(ElementType a, ElementType b, const std::string& label, F&& f) {
  check_second_int8_operand(b, label);
  auto with_b = [&](auto av) {
    if (b == ElementType::uint8) f(av, uint8_t{});
    else f(av, int8_t{});
  };
  if (a == ElementType::uint8) with_b(uint8_t{});
  else with_b(int8_t{});
}

// The quantized type of input `input` (a zero point), uint8 when it is omitted.
inline ElementType quantized_type(const KernelCreateInfo& info, std::size_t input) {
  const ElementType t = input < info.input_types.size() ? info.input_types[input] : ElementType::undefined;
  if (t == ElementType::undefined) return ElementType::uint8;
  if (t != ElementType::uint8 && t != ElementType::int8)
    throw UnsupportedError(fmt::format("{}: quantized type {} is not supported (uint8, int8)", info.node_label(),
                                       element_type_name(t)));
  return t;
}

}  // namespace onnx_light::runtime::kernels
