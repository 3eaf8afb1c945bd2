// Reading a host descriptor back from the JSON `onnx-light-tune host --json` prints, for
// `--as-host FILE`. Strict: a descriptor collected from a fleet is compared field by field with
// cached hosts, so a typo must fail loudly rather than make every profile silently foreign.
#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <limits>
#include <sstream>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "onnx_light/runtime/error.h"
#include "onnx_light/tune/host.h"

namespace onnx_light::tune {

namespace {

// The JSON type of a value, as a message names it.
std::string json_type(const nlohmann::json& value) {
  if (value.is_number_integer()) return "an integer";
  if (value.is_number_float()) return "a number with a fraction";
  if (value.is_string()) return "a string";
  if (value.is_boolean()) return "a boolean";
  if (value.is_null()) return "null";
  if (value.is_array()) return "an array";
  return "an object";
}

class HostJsonReader {
 public:
  HostJsonReader(const nlohmann::json& object, std::string_view source) : object_(object), source_(source) {}

  HostDescriptor read() {
    if (!object_.is_object()) {
      throw TypeMismatchError(fmt::format("{}: a host descriptor must be a JSON object (the output of "
                                          "'onnx-light-tune host --json'), got {}",
                                          source_, json_type(object_)));
    }
    for (const auto& [name, value] : object_.items()) {
      if (std::find(kFields.begin(), kFields.end(), name) == kFields.end() && name != "hostname" &&
          name != "idle_spin") {
        throw InvalidValueError(fmt::format("{}: unknown field '{}' (a host descriptor has {}, and optionally "
                                            "idle_spin and hostname)",
                                            source_, name, fmt::join(kFields, ", ")));
      }
    }
    HostDescriptor host;
    constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
    host.architecture = string("architecture");
    host.vendor = string("vendor");
    host.family = integer("family", 0, kMax);
    host.model = integer("model", 0, kMax);
    host.stepping = integer("stepping", 0, kMax);
    host.microarchitecture = string("microarchitecture");
    host.features = features();
    host.l1d_cache_bytes = integer("l1d_cache_bytes", 0, kMax);
    host.l2_cache_bytes = integer("l2_cache_bytes", 0, kMax);
    host.l3_cache_bytes = integer("l3_cache_bytes", 0, kMax);
    host.physical_cores = integer("physical_cores", 0, kMax);
    host.logical_cores = integer("logical_cores", 0, kMax);
    // The bounds the cache reader puts on a profile's effective_threads.
    host.effective_threads = integer("effective_threads", 1, int64_t{1} << 20);
    // Absent in descriptors written before it: those sessions ran the default spin.
    if (const auto it = object_.find("idle_spin"); it != object_.end()) {
      if (!it->is_boolean()) {
        throw TypeMismatchError(
            fmt::format("{}: field 'idle_spin' must be true or false, got {} ({})", source_, json_type(*it), it->dump()));
      }
      host.idle_spin = it->get<bool>();
    }
    if (const auto it = object_.find("hostname"); it != object_.end() && !it->is_string()) {
      throw TypeMismatchError(fmt::format("{}: field 'hostname' must be a string, got {}", source_, json_type(*it)));
    }
    return host;
  }

 private:
  // Every required field of HostDescriptor::to_json, in its order (idle_spin is optional).
  static constexpr std::array<std::string_view, 13> kFields{
      "architecture",    "vendor",         "family",         "model",          "stepping",
      "microarchitecture", "features",     "l1d_cache_bytes", "l2_cache_bytes", "l3_cache_bytes",
      "physical_cores",  "logical_cores",  "effective_threads"};

  const nlohmann::json& field(std::string_view name) const {
    const auto it = object_.find(name);
    if (it == object_.end()) {
      throw InvalidValueError(fmt::format("{}: field '{}' is missing (write the file with 'onnx-light-tune host "
                                          "--json')",
                                          source_, name));
    }
    return *it;
  }

  std::string string(std::string_view name) const {
    const nlohmann::json& value = field(name);
    if (!value.is_string()) {
      throw TypeMismatchError(fmt::format("{}: field '{}' must be a string, got {}", source_, name, json_type(value)));
    }
    return value.get<std::string>();
  }

  int64_t integer(std::string_view name, int64_t minimum, int64_t maximum) const {
    const nlohmann::json& value = field(name);
    if (!value.is_number_integer()) {
      throw TypeMismatchError(
          fmt::format("{}: field '{}' must be an integer, got {} ({})", source_, name, json_type(value), value.dump()));
    }
    // nlohmann stores every non-negative integer as unsigned: compare those as unsigned, so that
    // one above int64's range is out of range rather than wrapped.
    const bool fits = value.is_number_unsigned()
                          ? value.get<uint64_t>() <= static_cast<uint64_t>(maximum) &&
                                static_cast<int64_t>(value.get<uint64_t>()) >= minimum
                          : value.get<int64_t>() >= minimum && value.get<int64_t>() <= maximum;
    if (!fits) {
      throw InvalidValueError(fmt::format("{}: field '{}' = {} is out of range [{}, {}]", source_, name, value.dump(),
                                          minimum, maximum));
    }
    return value.get<int64_t>();
  }

  std::vector<std::string> features() const {
    const nlohmann::json& value = field("features");
    if (!value.is_array()) {
      throw TypeMismatchError(
          fmt::format("{}: field 'features' must be an array of strings, got {}", source_, json_type(value)));
    }
    std::vector<std::string> names;
    for (std::size_t i = 0; i < value.size(); ++i) {
      if (!value[i].is_string()) {
        throw TypeMismatchError(fmt::format("{}: field 'features' must be an array of strings; element {} is {}",
                                            source_, i, json_type(value[i])));
      }
      names.push_back(value[i].get<std::string>());
    }
    std::sort(names.begin(), names.end());
    names.erase(std::unique(names.begin(), names.end()), names.end());
    return names;
  }

  const nlohmann::json& object_;
  std::string_view source_;
};

}  // namespace

HostDescriptor host_from_json(const nlohmann::json& object, std::string_view source) {
  return HostJsonReader(object, source).read();
}

HostDescriptor read_host_file(const std::filesystem::path& path) {
  std::error_code error;
  if (!std::filesystem::exists(path, error) && !error) {
    throw NotFoundError(fmt::format("{}: no such host descriptor file (write one with 'onnx-light-tune host --json "
                                    "> FILE')",
                                    path.string()));
  }
  if (std::filesystem::is_directory(path, error)) {
    throw IoError(fmt::format("{}: is a directory, not a host descriptor file", path.string()));
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) throw IoError(fmt::format("{}: cannot open: {}", path.string(), std::strerror(errno)));
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) throw IoError(fmt::format("{}: cannot read: {}", path.string(), std::strerror(errno)));
  nlohmann::json object;
  try {
    object = nlohmann::json::parse(text.str());
  } catch (const nlohmann::json::parse_error& e) {
    // e.what() reads "[json.exception.parse_error.101] parse error at line 1, column 1: ..."
    std::string reason = e.what();
    if (const auto end = reason.find("] "); reason.starts_with("[json.") && end != std::string::npos) {
      reason.erase(0, end + 2);
    }
    throw InvalidValueError(fmt::format("{}: not a JSON host descriptor ({})", path.string(), reason));
  }
  return host_from_json(object, path.string());
}

runtime::CpuFeatures dispatch_features(const HostDescriptor& host) {
  runtime::CpuFeatures features;
  auto has = [&](std::string_view name) {
    return std::find(host.features.begin(), host.features.end(), name) != host.features.end();
  };
  // The descriptor's names (detect_features) for the fields CpuFeatures dispatches on.
  features.sse4_2 = has("sse4_2");
  features.avx = has("avx");
  features.avx2 = has("avx2");
  features.fma3 = has("fma");
  features.f16c = has("f16c");
  features.avx512f = has("avx512f");
  features.avx512bw = has("avx512bw");
  features.avx512vl = has("avx512vl");
  features.neon = has("neon");
  features.avx512vnni = has("avx512vnni");
  return features;
}

}  // namespace onnx_light::tune
