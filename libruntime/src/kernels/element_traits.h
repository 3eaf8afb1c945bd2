#pragma once
// Compile-time mapping between C++ element types and ElementType, plus the 16-bit float
// storage types (computed in float, stored rounded to nearest even).
#include <bit>
#include <cstdint>
#include <cstring>

#include "onnx_light/runtime/element_type.h"

namespace onnx_light::runtime::kernels {

struct Float16 {
  uint16_t bits;
};
struct BFloat16 {
  uint16_t bits;
};

float half_to_float(uint16_t h);
uint16_t float_to_half(float f);
inline float bfloat16_to_float(uint16_t b) { return std::bit_cast<float>(static_cast<uint32_t>(b) << 16); }
inline uint16_t float_to_bfloat16(float f) {
  uint32_t u = std::bit_cast<uint32_t>(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x40u);  // quiet NaN
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(u >> 16);
}

template <typename T>
struct ElementTraits;
#define ONNX_LIGHT_ELEMENT_TRAITS(CPP, ENUM)                 \
  template <>                                                \
  struct ElementTraits<CPP> {                                \
    static constexpr ElementType type = ElementType::ENUM;   \
  };
ONNX_LIGHT_ELEMENT_TRAITS(float, float32)
ONNX_LIGHT_ELEMENT_TRAITS(double, float64)
ONNX_LIGHT_ELEMENT_TRAITS(int8_t, int8)
ONNX_LIGHT_ELEMENT_TRAITS(int16_t, int16)
ONNX_LIGHT_ELEMENT_TRAITS(int32_t, int32)
ONNX_LIGHT_ELEMENT_TRAITS(int64_t, int64)
ONNX_LIGHT_ELEMENT_TRAITS(uint8_t, uint8)
ONNX_LIGHT_ELEMENT_TRAITS(uint16_t, uint16)
ONNX_LIGHT_ELEMENT_TRAITS(uint32_t, uint32)
ONNX_LIGHT_ELEMENT_TRAITS(uint64_t, uint64)
ONNX_LIGHT_ELEMENT_TRAITS(bool, boolean)
ONNX_LIGHT_ELEMENT_TRAITS(Float16, float16)
ONNX_LIGHT_ELEMENT_TRAITS(BFloat16, bfloat16)
#undef ONNX_LIGHT_ELEMENT_TRAITS

// The type arithmetic happens in: float for the 16-bit floats, the type itself otherwise.
template <typename T>
struct ComputeType {
  using type = T;
};
template <>
struct ComputeType<Float16> {
  using type = float;
};
template <>
struct ComputeType<BFloat16> {
  using type = float;
};
template <typename T>
using compute_t = typename ComputeType<T>::type;

template <typename T>
inline compute_t<T> load(T v) {
  if constexpr (std::is_same_v<T, Float16>) return half_to_float(v.bits);
  else if constexpr (std::is_same_v<T, BFloat16>) return bfloat16_to_float(v.bits);
  else return v;
}
template <typename T>
inline T store(compute_t<T> v) {
  if constexpr (std::is_same_v<T, Float16>) return Float16{float_to_half(v)};
  else if constexpr (std::is_same_v<T, BFloat16>) return BFloat16{float_to_bfloat16(v)};
  else return static_cast<T>(v);
}

template <typename T>
inline constexpr bool is_floating_v = std::is_floating_point_v<T> || std::is_same_v<T, Float16> || std::is_same_v<T, BFloat16>;

// Calls f(T{}) for each type in the list.
template <typename... Ts, typename F>
void for_each_type(F&& f) {
  (f(Ts{}), ...);
}

}  // namespace onnx_light::runtime::kernels
