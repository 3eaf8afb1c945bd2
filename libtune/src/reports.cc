#include "onnx_light/tune/reports.h"

#include <cstdint>
#include <variant>

namespace onnx_light::tune {

nlohmann::json key_to_json(const runtime::TuningKey& key) {
  return nlohmann::json{{"library", key.library},
                        {"kernel", key.kernel},
                        {"implementation", key.implementation},
                        {"element_type", key.element_type},
                        {"device", key.device},
                        {"device_name", runtime::device_name(key.device)},
                        {"tuning_abi", key.tuning_abi}};
}

nlohmann::json keys_to_json(const std::vector<runtime::TuningKey>& keys) {
  nlohmann::json array = nlohmann::json::array();
  for (const auto& key : keys) array.push_back(key_to_json(key));
  return array;
}

nlohmann::json value_to_json(const runtime::TuningValue& value) {
  return std::visit([](const auto& v) { return nlohmann::json(v); }, value);
}

nlohmann::json values_to_json(const runtime::TuningValues& values) {
  nlohmann::json object = nlohmann::json::object();
  for (const auto& [name, value] : values) object[name] = value_to_json(value);
  return object;
}

nlohmann::json KernelTuningEntry::to_json() const {
  nlohmann::json object = key_to_json(key);
  object["parameter_names"] = parameter_names;
  object["defaults"] = values_to_json(defaults);
  object["calibratable"] = calibratable;
  object["cached_values"] = cached_values ? values_to_json(*cached_values) : nlohmann::json(nullptr);
  object["active_values"] = values_to_json(active_values);
  object["active_source"] = runtime::tuning_source_name(active_source);
  return object;
}

namespace {

nlohmann::json entries_to_json(const std::vector<KernelTuningEntry>& entries) {
  nlohmann::json array = nlohmann::json::array();
  for (const auto& entry : entries) array.push_back(entry.to_json());
  return array;
}

}  // namespace

nlohmann::json KernelParametersReport::to_json() const {
  return nlohmann::json{{"cache_path", cache_path},
                        {"cache_status", file_status_name(cache_status)},
                        {"diagnostics", diagnostics_to_json(diagnostics)},
                        {"kernels", entries_to_json(kernels)}};
}

nlohmann::json ProposalReport::to_json() const {
  return nlohmann::json{{"cache_path", cache_path},
                        {"cache_status", file_status_name(cache_status)},
                        {"selected", entries_to_json(selected)},
                        {"covered", entries_to_json(covered)},
                        {"missing", entries_to_json(missing)},
                        {"calibratable", entries_to_json(calibratable)},
                        {"unsupported", entries_to_json(unsupported)},
                        {"diagnostics", diagnostics_to_json(diagnostics)}};
}

nlohmann::json LoadReport::to_json() const {
  return nlohmann::json{{"status", file_status_name(status)},
                        {"path", path},
                        {"published_generation", published_generation},
                        {"loaded", keys_to_json(loaded)},
                        {"stale", keys_to_json(stale)},
                        {"incompatible", keys_to_json(incompatible)},
                        {"invalid", keys_to_json(invalid)},
                        {"missing", keys_to_json(missing)},
                        {"diagnostics", diagnostics_to_json(diagnostics)}};
}

std::string_view value_origin_name(ValueOrigin origin) {
  switch (origin) {
    case ValueOrigin::user_cache: return "user cache";
    case ValueOrigin::system_cache: return "system cache";
    case ValueOrigin::default_value: return "default";
  }
  return "unknown";
}

nlohmann::json SetReport::to_json() const {
  return nlohmann::json{{"status", update_status_name(status)},
                        {"path", path},
                        {"values", values_to_json(values)},
                        {"updated", keys_to_json(updated)},
                        {"preserved", keys_to_json(preserved)},
                        {"pruned", keys_to_json(pruned)},
                        {"diagnostics", diagnostics_to_json(diagnostics)},
                        {"load", load ? load->to_json() : nlohmann::json(nullptr)}};
}

nlohmann::json InspectedProfile::to_json() const {
  nlohmann::json object = key_to_json(profile.key);
  profile.host.to_json(object);
  object["values"] = values_to_json(profile.values);
  object["local"] = local;
  object["classification"] = profile_class_name(classification);
  object["layer"] = cache_layer_name(layer);
  object["index"] = index;
  object["shadowed"] = shadowed;
  object["provenance"] = nlohmann::json{{"source", profile.provenance.source},
                                        {"written", profile.provenance.written},
                                        {"tool_version", profile.provenance.tool_version}};
  return object;
}

nlohmann::json InspectReport::to_json() const {
  nlohmann::json array = nlohmann::json::array();
  for (const auto& profile : profiles) array.push_back(profile.to_json());
  return nlohmann::json{{"status", file_status_name(status)},
                        {"path", path},
                        {"diagnostics", diagnostics_to_json(diagnostics)},
                        {"profiles", std::move(array)}};
}

nlohmann::json RemoveReport::to_json() const {
  return nlohmann::json{{"status", status},
                        {"path", path},
                        {"removed_files", removed_files},
                        {"removed", keys_to_json(removed)},
                        {"preserved", keys_to_json(preserved)},
                        {"diagnostics", diagnostics_to_json(diagnostics)}};
}

}  // namespace onnx_light::tune
