#pragma once
// Integer arithmetic with ONNX's wrap-around semantics and no undefined behaviour
// (signed overflow, INT_MIN / -1 and division by zero are all defined here).
#include <limits>
#include <type_traits>

#include "onnx_light/runtime/error.h"

namespace onnx_light::runtime::kernels {

template <typename T>
T wrap_add(T a, T b) {
  if constexpr (std::is_integral_v<T> && std::is_signed_v<T>) {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(static_cast<U>(static_cast<U>(a) + static_cast<U>(b)));
  } else {
    return static_cast<T>(a + b);
  }
}

template <typename T>
T wrap_sub(T a, T b) {
  if constexpr (std::is_integral_v<T> && std::is_signed_v<T>) {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(static_cast<U>(static_cast<U>(a) - static_cast<U>(b)));
  } else {
    return static_cast<T>(a - b);
  }
}

template <typename T>
T wrap_mul(T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    // Multiply in an unsigned type at least as wide as unsigned int, so promotion cannot overflow.
    using U = std::conditional_t<(sizeof(T) < sizeof(unsigned)), unsigned, std::make_unsigned_t<T>>;
    return static_cast<T>(static_cast<U>(static_cast<U>(a) * static_cast<U>(b)));
  } else {
    return a * b;
  }
}

template <typename T>
T wrap_neg(T a) {
  return wrap_sub(T{0}, a);
}

template <typename T>
T checked_div(T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    if (b == 0) throw InputError("integer division by zero");
    if constexpr (std::is_signed_v<T>)
      if (a == std::numeric_limits<T>::min() && b == T(-1)) return a;  // wraps, as two's complement does
    return static_cast<T>(a / b);
  } else {
    return a / b;
  }
}

}  // namespace onnx_light::runtime::kernels
