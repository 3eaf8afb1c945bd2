#include "kernels/elementwise.h"

#include <cmath>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "kernels/kernel_util.h"
#include "onnx_light/runtime/error.h"

namespace onnx_light::runtime::kernels {

void ThresholdKernel::apply_tuning(const TuningValues& values) {
  read_tuning(values, "parallel.minimum_elements", minimum_elements_);
}

TuningKey elementwise_key(const std::string& op_type, ElementType type, int tuning_abi,
                          const std::string& implementation) {
  TuningKey key;
  key.kernel = op_type;
  key.implementation = implementation;
  key.element_type = static_cast<int32_t>(type);
  key.tuning_abi = tuning_abi;
  return key;
}

namespace {

std::string one_node_model(int opset, const std::string& inputs, const std::string& outputs, const std::string& node) {
  return fmt::format("<ir_version: 8, opset_import: [\"\" : {}]>\ncalibration ({}) => ({}) {{ {} }}", opset, inputs,
                     outputs, node);
}

template <typename T>
void replace_zeros(Tensor& t) {
  T* p = t.data<T>();
  for (int64_t i = 0; i < t.element_count(); ++i)
    if (p[i] == T{0}) p[i] = T{1};
}

// Integer zeros become 1; floating types may divide by zero (inf is defined there).
void make_nonzero(Tensor& t) {
  switch (t.element_type()) {
    case ElementType::int8: replace_zeros<int8_t>(t); break;
    case ElementType::int16: replace_zeros<int16_t>(t); break;
    case ElementType::int32: replace_zeros<int32_t>(t); break;
    case ElementType::int64: replace_zeros<int64_t>(t); break;
    case ElementType::uint8: replace_zeros<uint8_t>(t); break;
    case ElementType::uint16: replace_zeros<uint16_t>(t); break;
    case ElementType::uint32: replace_zeros<uint32_t>(t); break;
    case ElementType::uint64: replace_zeros<uint64_t>(t); break;
    default: break;
  }
}

}  // namespace

CalibrationWorkloadFunction unary_workload(const std::string& op_type, ElementType type, int opset) {
  return [op_type, type, opset](int64_t n, int, uint32_t seed) {
    const auto name = element_type_name(type);
    CalibrationWorkload w;
    w.model_text = one_node_model(opset, fmt::format("{}[{}] x", name, n), fmt::format("{}[{}] y", name, n),
                                  fmt::format("y = {}(x)", op_type));
    w.inputs.emplace_back("x", random_tensor(type, {n}, seed));
    w.description = fmt::format("{}[{}]", name, n);
    w.work_size = n;
    return w;
  };
}

CalibrationWorkloadFunction binary_workload(const std::string& op_type, ElementType type, int opset) {
  return [op_type, type, opset](int64_t n, int variant, uint32_t seed) {
    const auto name = element_type_name(type);
    Shape a{n}, b{n};
    if (variant == 1) b = {1};
    if (variant == 2) {
      int64_t rows = std::max<int64_t>(1, static_cast<int64_t>(std::sqrt(static_cast<double>(n))));
      a = {rows, 1};
      b = {1, std::max<int64_t>(1, n / rows)};
    }
    if (variant < 0 || variant > 2) throw InvalidValueError(fmt::format("{}: no calibration variant {}", op_type, variant));
    Shape y = variant == 2 ? Shape{a[0], b[1]} : Shape{n};
    CalibrationWorkload w;
    w.model_text = one_node_model(opset,
                                  fmt::format("{}[{}] a, {}[{}] b", name, fmt::join(a, ","), name, fmt::join(b, ",")),
                                  fmt::format("{}[{}] y", name, fmt::join(y, ",")),
                                  fmt::format("y = {}(a, b)", op_type));
    w.inputs.emplace_back("a", random_tensor(type, a, seed));
    Tensor right = random_tensor(type, b, seed + 77);
    // Keep divisors away from zero so integer Div cannot fail during calibration.
    if (op_type == "Div" || op_type == "Mod") make_nonzero(right);
    w.inputs.emplace_back("b", std::move(right));
    w.description = fmt::format("{}[{}] {} {}[{}]", name, fmt::join(a, ","), op_type, name, fmt::join(b, ","));
    w.work_size = shape_element_count(y);
    return w;
  };
}

void check_input_type(const KernelExecution& execution, std::size_t index, const Tensor& t, ElementType expected) {
  if (t.element_type() != expected)
    throw InputError(fmt::format("{}: input {} is {} but must be {}", execution.label(), index, t.describe(),
                                 element_type_name(expected)));
}

}  // namespace onnx_light::runtime::kernels
