#pragma once
// One message of a report. Messages name the file, profile, key and field at fault and say what
// to do; the structured fields let scripts act on them without parsing the text.
#include <cstddef>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "onnx_light/runtime/tuning_key.h"

namespace onnx_light::tune {

// The layer of a cache profile: the user's cache or the read-only system cache under it.
enum class CacheLayer { user, system };
std::string_view cache_layer_name(CacheLayer layer);

struct Diagnostic {
  std::string message;
  std::optional<runtime::TuningKey> key;  // the key concerned, when known
  std::optional<std::size_t> profile;     // 0-based index of the profile in its file
  std::optional<CacheLayer> layer;        // with `profile`: the file it is in
  std::string field;                      // with `profile`: "host.vendor", "values.parallel.minimum_elements"

  // {"message"} plus the key fields (+ device_name) when `key` is set, plus "profile", "layer"
  // and "field" when `profile` is set.
  nlohmann::json to_json() const;
};

nlohmann::json diagnostics_to_json(const std::vector<Diagnostic>& diagnostics);

}  // namespace onnx_light::tune
