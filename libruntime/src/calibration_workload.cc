#include "onnx_light/runtime/calibration_workload.h"

#include <cmath>
#include <cstring>

#include <fmt/format.h>

#include "onnx_light/runtime/error.h"

namespace onnx_light::runtime {

namespace {

template <typename T>
void fill_ints(Tensor& t, uint32_t& state, int64_t low, int64_t span) {
  T* p = t.data<T>();
  for (int64_t i = 0; i < t.element_count(); ++i) {
    state ^= state << 13;
    state ^= state >> 17;
    state ^= state << 5;
    p[i] = static_cast<T>(low + static_cast<int64_t>(state % static_cast<uint32_t>(span)));
  }
}

}  // namespace

Tensor random_tensor(ElementType type, const Shape& shape, uint32_t seed) {
  Tensor t(type, shape);
  uint32_t s = seed == 0 ? 0x9e3779b9u : seed;
  auto next_unit = [&s] {
    s ^= s << 13;
    s ^= s >> 17;
    s ^= s << 5;
    return static_cast<float>(s / 4294967296.0 * 2 - 1);
  };
  const int64_t n = t.element_count();
  switch (type) {
    case ElementType::float32:
      for (int64_t i = 0; i < n; ++i) t.data<float>()[i] = next_unit();
      break;
    case ElementType::float64:
      for (int64_t i = 0; i < n; ++i) t.data<double>()[i] = next_unit();
      break;
    case ElementType::float16:
    case ElementType::bfloat16: {
      // Values in [-1, 1) with few mantissa bits are exact in both formats.
      for (int64_t i = 0; i < n; ++i) {
        float v = std::round(next_unit() * 256.0f) / 256.0f;
        uint32_t bits;
        std::memcpy(&bits, &v, 4);
        uint16_t out;
        if (type == ElementType::bfloat16) {
          out = static_cast<uint16_t>(bits >> 16);
        } else {
          // Exact conversion: |v| <= 1 with 8 fractional bits fits half precisely.
          uint32_t sign = (bits >> 16) & 0x8000u;
          uint32_t exponent = (bits >> 23) & 0xffu;
          uint32_t mantissa = bits & 0x7fffffu;
          if (exponent == 0) out = static_cast<uint16_t>(sign);
          else out = static_cast<uint16_t>(sign | ((exponent - 112) << 10) | (mantissa >> 13));
        }
        t.data<uint16_t>()[i] = out;
      }
      break;
    }
    case ElementType::int8: fill_ints<int8_t>(t, s, -10, 21); break;
    case ElementType::int16: fill_ints<int16_t>(t, s, -100, 201); break;
    case ElementType::int32: fill_ints<int32_t>(t, s, -100, 201); break;
    case ElementType::int64: fill_ints<int64_t>(t, s, -100, 201); break;
    case ElementType::uint8: fill_ints<uint8_t>(t, s, 0, 21); break;
    case ElementType::uint16: fill_ints<uint16_t>(t, s, 0, 201); break;
    case ElementType::uint32: fill_ints<uint32_t>(t, s, 0, 201); break;
    case ElementType::uint64: fill_ints<uint64_t>(t, s, 0, 201); break;
    case ElementType::boolean: fill_ints<bool>(t, s, 0, 2); break;
    default: throw UnsupportedError(fmt::format("cannot make random data of type {}", element_type_name(type)));
  }
  return t;
}

}  // namespace onnx_light::runtime
