#pragma once
// Building small tensors from value lists and reading them back, for operator tests.
#include <cstddef>
#include <vector>

#include "onnx_light/runtime/tensor.h"

namespace onnx_light::test {

template <typename T>
runtime::Tensor tensor(runtime::ElementType type, const runtime::Shape& shape, const std::vector<T>& values) {
  runtime::Tensor t(type, shape);
  for (std::size_t i = 0; i < values.size(); ++i) t.data<T>()[i] = values[i];
  return t;
}
inline runtime::Tensor floats(const runtime::Shape& shape, const std::vector<float>& v) {
  return tensor(runtime::ElementType::float32, shape, v);
}
inline runtime::Tensor int64s(const runtime::Shape& shape, const std::vector<int64_t>& v) {
  return tensor(runtime::ElementType::int64, shape, v);
}
inline runtime::Tensor u8(const runtime::Shape& shape, const std::vector<uint8_t>& v) {
  return tensor(runtime::ElementType::uint8, shape, v);
}
inline runtime::Tensor i8(const runtime::Shape& shape, const std::vector<int8_t>& v) {
  return tensor(runtime::ElementType::int8, shape, v);
}

template <typename T>
std::vector<T> values(const runtime::Tensor& t) {
  return std::vector<T>(t.data<T>(), t.data<T>() + t.element_count());
}

}  // namespace onnx_light::test
