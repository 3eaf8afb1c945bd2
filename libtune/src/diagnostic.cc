#include "onnx_light/tune/diagnostic.h"

#include "onnx_light/tune/reports.h"

namespace onnx_light::tune {

std::string_view cache_layer_name(CacheLayer layer) { return layer == CacheLayer::user ? "user" : "system"; }

nlohmann::json Diagnostic::to_json() const {
  nlohmann::json object = key ? key_to_json(*key) : nlohmann::json::object();
  object["message"] = message;
  if (profile) {
    object["profile"] = *profile;
    object["layer"] = layer ? cache_layer_name(*layer) : "user";
    object["field"] = field;
  }
  return object;
}

nlohmann::json diagnostics_to_json(const std::vector<Diagnostic>& diagnostics) {
  nlohmann::json array = nlohmann::json::array();
  for (const auto& diagnostic : diagnostics) array.push_back(diagnostic.to_json());
  return array;
}

}  // namespace onnx_light::tune
