#include "onnx_light/runtime/tuning_key.h"

#include <fmt/format.h>

#include "onnx_light/runtime/element_type.h"

namespace onnx_light::runtime {

bool TuningKey::same_identity(const TuningKey& other) const {
  return library == other.library && kernel == other.kernel && implementation == other.implementation &&
         element_type == other.element_type && device == other.device;
}

std::string TuningKey::to_string() const {
  std::string type_name = is_valid_element_type(element_type)
                              ? std::string(element_type_name(static_cast<ElementType>(element_type)))
                              : fmt::format("type{}", element_type);
  return fmt::format("{}/{}/{}/{}/{}/abi{}", library, kernel, implementation, type_name, device_name(device),
                     tuning_abi);
}

std::string device_name(int32_t device) {
  return device == kCpuDevice ? std::string("CPU") : fmt::format("device{}", device);
}

std::size_t TuningKeyHash::operator()(const TuningKey& key) const {
  std::size_t h = std::hash<std::string>{}(key.library);
  auto mix = [&h](std::size_t v) { h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2); };
  mix(std::hash<std::string>{}(key.kernel));
  mix(std::hash<std::string>{}(key.implementation));
  mix(std::hash<int32_t>{}(key.element_type));
  mix(std::hash<int32_t>{}(key.device));
  mix(std::hash<int32_t>{}(key.tuning_abi));
  return h;
}

}  // namespace onnx_light::runtime
