#include "kernels/elementwise.h"

namespace onnx_light::runtime::kernels {

void ThresholdKernel::apply_tuning(const TuningValues& values) {
  if (auto it = values.find("parallel.minimum_elements"); it != values.end())
    if (const auto* v = std::get_if<int64_t>(&it->second)) minimum_elements_ = *v;
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

}  // namespace onnx_light::runtime::kernels
