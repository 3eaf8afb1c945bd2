#pragma once
// Checked int64 arithmetic for shapes and sizes: element counts, byte sizes, strides, pads and
// output dims. Every operand here comes from a model's inputs or attributes, so an overflow is
// an input the runtime cannot hold: it throws InputError (the session prefixes the node's label)
// naming the quantity and the operands, never wraps and never reaches signed-overflow UB.
#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <string_view>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "onnx_light/runtime/error.h"
#include "onnx_light/runtime/tensor.h"

namespace onnx_light::runtime {

// `what` names the quantity in the message, e.g. "output dimension 0 (4 x repeats 2^62)".
inline int64_t checked_add(int64_t a, int64_t b, std::string_view what) {
  int64_t sum = 0;
  if (__builtin_add_overflow(a, b, &sum))
    throw InputError(fmt::format("{} overflows 64-bit integers ({} + {})", what, a, b));
  return sum;
}

inline int64_t checked_sub(int64_t a, int64_t b, std::string_view what) {
  int64_t difference = 0;
  if (__builtin_sub_overflow(a, b, &difference))
    throw InputError(fmt::format("{} overflows 64-bit integers ({} - {})", what, a, b));
  return difference;
}

inline int64_t checked_mul(int64_t a, int64_t b, std::string_view what) {
  int64_t product = 0;
  if (__builtin_mul_overflow(a, b, &product))
    throw InputError(fmt::format("{} overflows 64-bit integers ({} * {})", what, a, b));
  return product;
}

namespace checked_math_detail {

// The exact product of `values` into `product`; false when it does not fit int64. Any zero makes it
// 0 however large the rest are, and the order of the factors does not matter.
inline bool exact_product(std::span<const int64_t> values, int64_t& product) {
  product = 0;
  for (int64_t v : values)
    if (v == 0) return true;
  // Multiply magnitudes as uint64 (|INT64_MIN| fits there), then apply the sign.
  uint64_t magnitude = 1;
  bool negative = false;
  for (int64_t v : values) {
    negative = negative != (v < 0);
    const uint64_t m = v < 0 ? uint64_t{0} - static_cast<uint64_t>(v) : static_cast<uint64_t>(v);
    if (__builtin_mul_overflow(magnitude, m, &magnitude)) return false;
  }
  constexpr auto kMax = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
  if (magnitude > kMax + (negative ? 1 : 0)) return false;
  if (!negative) product = static_cast<int64_t>(magnitude);
  else product = magnitude == kMax + 1 ? std::numeric_limits<int64_t>::min() : -static_cast<int64_t>(magnitude);
  return true;
}

}  // namespace checked_math_detail

// The exact product of `values` (1 for none; 0 when any is 0, however large the rest). Exact
// whatever the order: 2^62 * 2 * -1 is INT64_MIN although 2^62 * 2 alone overflows.
inline int64_t checked_product(std::span<const int64_t> values, std::string_view what) {
  int64_t product = 0;
  if (!checked_math_detail::exact_product(values, product))
    throw InputError(fmt::format("{} overflows 64-bit integers (product of [{}])", what, fmt::join(values, ", ")));
  return product;
}

// The element count of `shape`; negative dims are refused. `what` names the shape's owner.
inline int64_t checked_element_count(std::span<const int64_t> shape, std::string_view what) {
  for (std::size_t d = 0; d < shape.size(); ++d)
    if (shape[d] < 0)
      throw InputError(fmt::format("{} [{}]: dimension {} is negative ({})", what, fmt::join(shape, ", "), d, shape[d]));
  int64_t count = 0;
  if (!checked_math_detail::exact_product(shape, count))
    throw InputError(fmt::format("the element count of {} [{}] overflows 64-bit integers", what, fmt::join(shape, ", ")));
  return count;
}

// count * element_size bytes, refused past what a pointer difference can address (PTRDIFF_MAX,
// less the block a tensor's storage is rounded up to): such a tensor cannot exist whatever the
// machine's memory.
inline int64_t checked_byte_count(int64_t count, std::size_t element_size, std::string_view what) {
  constexpr auto kMaxBytes = static_cast<uint64_t>(std::numeric_limits<std::ptrdiff_t>::max()) - kTensorAlignment;
  int64_t bytes = 0;
  if (count < 0 || __builtin_mul_overflow(count, static_cast<int64_t>(element_size), &bytes) ||
      static_cast<uint64_t>(bytes) > kMaxBytes)
    throw InputError(fmt::format("{} of {} elements of {} bytes is too large to address", what, count, element_size));
  return bytes;
}

}  // namespace onnx_light::runtime
