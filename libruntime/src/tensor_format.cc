#include "onnx_light/runtime/tensor_format.h"

#include <fmt/format.h>

#include "kernels/element_traits.h"

namespace onnx_light::runtime {

namespace {

template <typename F>
auto visit_element(const Tensor& t, int64_t i, F&& f) {
  using namespace kernels;
  switch (t.element_type()) {
    case ElementType::float32: return f(t.data<float>()[i]);
    case ElementType::float64: return f(t.data<double>()[i]);
    case ElementType::float16: return f(half_to_float(t.data<uint16_t>()[i]));
    case ElementType::bfloat16: return f(bfloat16_to_float(t.data<uint16_t>()[i]));
    case ElementType::int8: return f(static_cast<int64_t>(t.data<int8_t>()[i]));
    case ElementType::int16: return f(static_cast<int64_t>(t.data<int16_t>()[i]));
    case ElementType::int32: return f(static_cast<int64_t>(t.data<int32_t>()[i]));
    case ElementType::int64: return f(t.data<int64_t>()[i]);
    case ElementType::uint8: return f(static_cast<uint64_t>(t.data<uint8_t>()[i]));
    case ElementType::uint16: return f(static_cast<uint64_t>(t.data<uint16_t>()[i]));
    case ElementType::uint32: return f(static_cast<uint64_t>(t.data<uint32_t>()[i]));
    case ElementType::uint64: return f(t.data<uint64_t>()[i]);
    case ElementType::boolean: return f(t.data<bool>()[i]);
    default: return f(std::string("?"));
  }
}

}  // namespace

std::string format_element(const Tensor& tensor, int64_t index) {
  return visit_element(tensor, index, [](auto v) -> std::string {
    if constexpr (std::is_same_v<decltype(v), bool>) return v ? "true" : "false";
    else if constexpr (std::is_same_v<decltype(v), float>) return fmt::format("{:.6g}", v);
    else if constexpr (std::is_same_v<decltype(v), double>) return fmt::format("{:.10g}", v);
    else return fmt::format("{}", v);
  });
}

double element_as_double(const Tensor& tensor, int64_t index) {
  return visit_element(tensor, index, [](auto v) -> double {
    if constexpr (std::is_same_v<decltype(v), std::string>) return 0.0;
    else return static_cast<double>(v);
  });
}

std::string format_preview(const Tensor& tensor, int64_t limit) {
  const int64_t n = tensor.element_count();
  std::string out = "[";
  for (int64_t i = 0; i < n && i < limit; ++i) out += (i ? ", " : "") + format_element(tensor, i);
  if (n > limit) out += fmt::format(", ... {} more", n - limit);
  return out + "]";
}

}  // namespace onnx_light::runtime
