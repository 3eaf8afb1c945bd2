#include "onnx_light/tune/classification.h"

#include <algorithm>
#include <iterator>
#include <map>
#include <optional>
#include <unordered_map>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace onnx_light::tune {

std::string_view profile_class_name(ProfileClass value) {
  switch (value) {
    case ProfileClass::loaded: return "loaded";
    case ProfileClass::stale: return "stale";
    case ProfileClass::incompatible: return "incompatible";
    case ProfileClass::invalid: return "invalid";
  }
  return "unknown";
}

std::string describe_profile(const CacheProfile& profile, std::size_t index, const std::filesystem::path& path) {
  const bool has_key = !profile.key.kernel.empty();
  return fmt::format("profile {}{} in {}", index, has_key ? fmt::format(" ({})", profile.key.to_string()) : "",
                     path.string());
}

namespace {

// The first field of the profile's class that keeps it from matching `b`, for a diagnostic that
// points at it.
std::string first_difference(const HostDescriptor& a, const HostDescriptor& b) {
  if (a.architecture != b.architecture) return "architecture";
  if (a.match == HostMatch::isa) return "features";
  if (a.match != HostMatch::exact) {
    if (a.vendor != b.vendor) return "vendor";
    if (a.match == HostMatch::microarchitecture) return "microarchitecture";
    return a.family != b.family ? "family" : "model";
  }
  if (a.vendor != b.vendor) return "vendor";
  if (a.family != b.family) return "family";
  if (a.model != b.model) return "model";
  if (a.stepping != b.stepping) return "stepping";
  if (a.microarchitecture != b.microarchitecture) return "microarchitecture";
  if (a.features != b.features) return "features";
  if (a.l1d_cache_bytes != b.l1d_cache_bytes) return "l1d_cache_bytes";
  if (a.l2_cache_bytes != b.l2_cache_bytes) return "l2_cache_bytes";
  if (a.l3_cache_bytes != b.l3_cache_bytes) return "l3_cache_bytes";
  if (a.physical_cores != b.physical_cores) return "physical_cores";
  if (a.logical_cores != b.logical_cores) return "logical_cores";
  return "effective_threads";
}

std::string field_value(const HostDescriptor& host, const std::string& field) {
  if (field == "architecture") return host.architecture;
  if (field == "vendor") return host.vendor;
  if (field == "family") return fmt::format("{}", host.family);
  if (field == "model") return fmt::format("{}", host.model);
  if (field == "stepping") return fmt::format("{}", host.stepping);
  if (field == "microarchitecture") return host.microarchitecture;
  if (field == "features") return fmt::format("[{}]", fmt::join(host.features, " "));
  if (field == "l1d_cache_bytes") return fmt::format("{}", host.l1d_cache_bytes);
  if (field == "l2_cache_bytes") return fmt::format("{}", host.l2_cache_bytes);
  if (field == "l3_cache_bytes") return fmt::format("{}", host.l3_cache_bytes);
  if (field == "physical_cores") return fmt::format("{}", host.physical_cores);
  if (field == "logical_cores") return fmt::format("{}", host.logical_cores);
  return fmt::format("{}", host.effective_threads);
}

}  // namespace

Classification classify_profile(const CacheProfile& profile, std::size_t index, CacheLayer layer,
                                const std::filesystem::path& path, const SchemaIndex& schemas,
                                const HostDescriptor& machine) {
  Classification result;
  // Formatted only for profiles that get a diagnostic: most are loaded and need none.
  std::string where_text;
  auto where = [&]() -> const std::string& {
    if (where_text.empty()) where_text = describe_profile(profile, index, path);
    return where_text;
  };
  auto add = [&](std::string field, std::string message) {
    Diagnostic diagnostic;
    diagnostic.message = std::move(message);
    if (!profile.key.kernel.empty()) diagnostic.key = profile.key;
    diagnostic.profile = index;
    diagnostic.layer = layer;
    diagnostic.field = std::move(field);
    result.diagnostics.push_back(std::move(diagnostic));
  };
  if (!profile.readable()) {
    result.value = ProfileClass::invalid;
    for (const auto& problem : profile.problems) {
      add(problem.field, fmt::format("{}: {}; fix or delete this profile (it is kept as written)", where(),
                                     problem.message));
    }
    return result;
  }
  const runtime::TuningSchema* schema = schemas.find(profile.key);
  if (schema == nullptr) {
    if (schemas.is_stale(profile.key)) {
      result.value = ProfileClass::stale;
      add("tuning_abi", fmt::format("{}: tuning_abi {} is outdated (this build registers {}); set or calibrate the "
                                    "kernel again; 'onnx-light-tune remove --stale' drops old ABIs",
                                    where(), profile.key.tuning_abi, fmt::join(*schemas.registered_abis(profile.key), ", ")));
    } else {
      result.value = ProfileClass::incompatible;
      add("", fmt::format("{}: no registered kernel has this key (unknown kernel, implementation, element type, "
                          "device or library); it is kept for the build that wrote it",
                          where()));
    }
    return result;
  }
  if (!profile.host.matches(machine)) {
    result.value = ProfileClass::incompatible;
    const std::string field = first_difference(profile.host, machine);
    if (profile.host.match == HostMatch::exact) {
      add("host." + field, fmt::format("{}: written on another machine (host.{} is {}, here {}); it is kept for "
                                       "that machine",
                                       where(), field, field_value(profile.host, field), field_value(machine, field)));
    } else if (field == "features") {
      std::vector<std::string> lacking;
      std::set_difference(profile.host.features.begin(), profile.host.features.end(), machine.features.begin(),
                          machine.features.end(), std::back_inserter(lacking));
      add("host.features", fmt::format("{}: an isa profile for machines with [{}]; this one lacks {}; it is kept for "
                                       "those machines",
                                       where(), fmt::join(profile.host.features, " "), fmt::join(lacking, " ")));
    } else {
      add("host." + field, fmt::format("{}: a {} profile of another class of machines (host.{} is {}, here {}); it "
                                       "is kept for that class",
                                       where(), host_match_name(profile.host.match), field,
                                       field_value(profile.host, field), field_value(machine, field)));
    }
    return result;
  }
  for (const auto& [name, value] : profile.values) {
    if (schema->find(name) == nullptr) {
      add("values." + name,
          fmt::format("{}: unknown parameter '{}' (parameters: {})", where(), name, fmt::join(schema->parameter_names(), ", ")));
    }
  }
  for (const auto& spec : schema->parameters) {
    const auto it = profile.values.find(spec.name);
    if (it == profile.values.end()) {
      add("values." + spec.name, fmt::format("{}: parameter '{}' is missing; 'onnx-light-tune set' writes complete "
                                             "profiles",
                                             where(), spec.name));
      continue;
    }
    if (runtime::value_type_of(it->second) != spec.type) {
      add("values." + spec.name, fmt::format("{}: '{}' must be {}, got {} {}", where(), spec.name,
                                             runtime::value_type_name(spec.type),
                                             runtime::value_type_name(runtime::value_type_of(it->second)),
                                             runtime::format_value(it->second)));
      continue;
    }
    if (std::string message = spec.validate(it->second); !message.empty()) {
      add("values." + spec.name, fmt::format("{}: {}", where(), message));
    }
  }
  result.value = result.diagnostics.empty() ? ProfileClass::loaded : ProfileClass::invalid;
  return result;
}


namespace {

// classify_profiles with the machine each profile is judged against given by `machine_of`.
template <typename MachineOf>
std::vector<Classification> classify_each(const CacheFile& file, CacheLayer layer, const SchemaIndex& schemas,
                                          const MachineOf& machine_of) {
  std::vector<Classification> result;
  result.reserve(file.profiles.size());
  // (key, host) -> first index; hashed, since ordering hosts compares their feature lists.
  std::unordered_multimap<std::size_t, std::size_t> first;
  first.reserve(file.profiles.size());
  for (std::size_t i = 0; i < file.profiles.size(); ++i) {
    const CacheProfile& profile = file.profiles[i];
    if (profile.readable()) {
      const std::size_t hash = profile_identity_hash(profile);
      std::optional<std::size_t> earlier;
      for (auto [it, end] = first.equal_range(hash); it != end && !earlier; ++it) {
        if (same_profile_identity(file.profiles[it->second], profile)) earlier = it->second;
      }
      if (earlier) {
        Classification duplicate;
        duplicate.value = ProfileClass::invalid;
        Diagnostic diagnostic;
        diagnostic.message = fmt::format("{}: same key and host as profile {}, which is used; delete one of them",
                                         describe_profile(profile, i, file.path), *earlier);
        diagnostic.key = profile.key;
        diagnostic.profile = i;
        diagnostic.layer = layer;
        result.push_back(std::move(duplicate));
        result.back().diagnostics.push_back(std::move(diagnostic));
        continue;
      }
      first.emplace(hash, i);
    }
    result.push_back(classify_profile(profile, i, layer, file.path, schemas, machine_of(profile)));
  }
  return result;
}

}  // namespace

std::vector<Classification> classify_profiles(const CacheFile& file, CacheLayer layer, const SchemaIndex& schemas,
                                              const HostDescriptor& machine) {
  return classify_each(file, layer, schemas, [&](const CacheProfile&) -> const HostDescriptor& { return machine; });
}

std::vector<Classification> validate_profiles(const CacheFile& file, const SchemaIndex& schemas) {
  return classify_each(file, CacheLayer::user, schemas,
                       [](const CacheProfile& profile) -> const HostDescriptor& { return profile.host; });
}

}  // namespace onnx_light::tune
