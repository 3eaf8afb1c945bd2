#include "onnx_light/tune/reports.h"

#include <charconv>
#include <cstdint>
#include <functional>
#include <ostream>
#include <variant>

#include <fmt/format.h>

#include "pretty_json.h"

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
  object["matched_by"] = matched_by ? nlohmann::json(host_match_name(*matched_by)) : nlohmann::json(nullptr);
  object["shadows"] = nlohmann::json::array();
  for (const auto& shadow : shadows) object["shadows"].push_back(shadow.to_json());
  object["active_values"] = values_to_json(active_values);
  object["active_source"] = runtime::tuning_source_name(active_source);
  return object;
}

nlohmann::json update_to_json(const UpdateResult& update) {
  auto keys_of = [](const std::vector<CacheProfile>& profiles) {
    std::vector<runtime::TuningKey> keys;
    for (const auto& p : profiles) keys.push_back(p.key);
    return keys_to_json(keys);
  };
  return {{"status", update_status_name(update.status)},
          {"path", update.path.string()},
          {"updated", keys_of(update.updated)},
          {"preserved", keys_of(update.preserved)},
          {"pruned", keys_of(update.pruned)},
          {"diagnostics", diagnostics_to_json(update.diagnostics)}};
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

nlohmann::json provenance_to_json(const Provenance& provenance) {
  return nlohmann::json{{"source", provenance.source},
                        {"written", provenance.written},
                        {"tool_version", provenance.tool_version},
                        {"hostname", provenance.hostname}};
}

nlohmann::json ShadowedProfile::to_json() const {
  return nlohmann::json{{"layer", cache_layer_name(layer)}, {"index", index}, {"matched_by", host_match_name(matched_by)}};
}

nlohmann::json profile_to_json(const CacheProfile& profile) {
  nlohmann::json object = key_to_json(profile.key);
  profile.host.to_json(object);
  object["match"] = host_match_name(profile.host.match);
  object["values"] = values_to_json(profile.values);
  object["provenance"] = provenance_to_json(profile.provenance);
  return object;
}

nlohmann::json InspectedProfile::to_json() const {
  nlohmann::json object = profile_to_json(profile);
  object["local"] = local;
  object["classification"] = profile_class_name(classification);
  object["layer"] = cache_layer_name(layer);
  object["index"] = index;
  object["shadowed"] = shadowed;
  object["matched_by"] = matched_by ? nlohmann::json(host_match_name(*matched_by)) : nlohmann::json(nullptr);
  object["in_force"] = in_force;
  object["shadowed_by"] = shadowed_by ? shadowed_by->to_json() : nlohmann::json(nullptr);
  object["shadows"] = nlohmann::json::array();
  for (const auto& shadow : shadows) object["shadows"].push_back(shadow.to_json());
  return object;
}

nlohmann::json InspectReport::to_json() const {
  nlohmann::json array = nlohmann::json::array();
  for (const auto& profile : profiles) array.push_back(profile.to_json());
  return nlohmann::json{{"status", file_status_name(status)},
                        {"path", path},
                        {"diagnostics", diagnostics_to_json(diagnostics)},
                        {"profiles", std::move(array)},
                        {"system_cache", system_path.empty() ? nlohmann::json()
                                                             : nlohmann::json{{"path", system_path},
                                                                              {"status", file_status_name(system_status)},
                                                                              {"profiles", system_profiles}}}};
}

nlohmann::json RemoveReport::to_json() const {
  nlohmann::json profiles = nlohmann::json::array();
  for (const auto& profile : removed_profiles) profiles.push_back(profile.to_json());
  return nlohmann::json{{"status", status},
                        {"path", path},
                        {"dry_run", dry_run},
                        {"removed_files", removed_files},
                        {"removed", keys_to_json(removed)},
                        {"preserved", keys_to_json(preserved)},
                        {"removed_profiles", std::move(profiles)},
                        {"removed_count", removed_profiles.size()},
                        {"preserved_count", preserved_profiles},
                        {"diagnostics", diagnostics_to_json(diagnostics)}};
}

namespace detail {

// Keys in the sorted order nlohmann's std::map gives; tests compare with to_json().dump(2).
// Diagnostic::to_json written directly: a fleet cache has one diagnostic per foreign profile.
void write_diagnostic(PrettyJson& w, const Diagnostic& d) {
  const runtime::TuningKey* k = d.key ? &*d.key : nullptr;
  w.open('{');
  if (k != nullptr) {
    w.key("device"), w.integer(k->device);
    w.key("device_name"), w.string(runtime::device_name(k->device));
    w.key("element_type"), w.integer(k->element_type);
  }
  if (d.profile) w.key("field"), w.string(d.field);
  if (k != nullptr) {
    w.key("implementation"), w.string(k->implementation);
    w.key("kernel"), w.string(k->kernel);
  }
  if (d.profile) w.key("layer"), w.string(d.layer ? cache_layer_name(*d.layer) : "user");
  if (k != nullptr) w.key("library"), w.string(k->library);
  w.key("message"), w.string(d.message);
  if (d.profile) w.key("profile"), w.integer(static_cast<int64_t>(*d.profile));
  if (k != nullptr) w.key("tuning_abi"), w.integer(k->tuning_abi);
  w.close('}');
}

}  // namespace detail

namespace {

using detail::PrettyJson;

// ShadowedProfile::to_json().
void write_shadow(PrettyJson& w, const ShadowedProfile& s) {
  w.open('{');
  w.key("index"), w.integer(static_cast<int64_t>(s.index));
  w.key("layer"), w.string(cache_layer_name(s.layer));
  w.key("matched_by"), w.string(host_match_name(s.matched_by));
  w.close('}');
}

void write_profile(PrettyJson& w, const InspectedProfile& inspected) {
  detail::write_profile_object(w, inspected.profile, [&](detail::JsonMembers& m) {
    m.add("classification", [&] { w.string(profile_class_name(inspected.classification)); });
    m.add("in_force", [&] { w.boolean(inspected.in_force); });
    m.add("index", [&] { w.integer(static_cast<int64_t>(inspected.index)); });
    m.add("layer", [&] { w.string(cache_layer_name(inspected.layer)); });
    m.add("local", [&] { w.boolean(inspected.local); });
    m.add("matched_by", [&] {
      if (inspected.matched_by) {
        w.string(host_match_name(*inspected.matched_by));
      } else {
        w.null();
      }
    });
    m.add("shadowed", [&] { w.boolean(inspected.shadowed); });
    m.add("shadowed_by", [&] {
      if (!inspected.shadowed_by) return w.null();
      write_shadow(w, *inspected.shadowed_by);
    });
    m.add("shadows", [&] {
      w.open('[');
      for (const auto& shadow : inspected.shadows) w.item(), write_shadow(w, shadow);
      w.close(']');
    });
  });
}

}  // namespace

namespace {

// InspectReport::write_json into `out`; `drain` (when set) is called between entries and may
// take away what `out` holds.
void write_inspect(const InspectReport& r, std::string& out, const std::function<void()>& drain) {
  PrettyJson w(out);
  w.open('{');
  w.key("diagnostics");
  w.open('[');
  for (const auto& diagnostic : r.diagnostics) {
    w.item(), detail::write_diagnostic(w, diagnostic);
    if (drain) drain();
  }
  w.close(']');
  w.key("path"), w.string(r.path);
  w.key("profiles");
  w.open('[');
  for (const auto& profile : r.profiles) {
    w.item(), write_profile(w, profile);
    if (drain) drain();
  }
  w.close(']');
  w.key("status"), w.string(file_status_name(r.status));
  w.key("system_cache");
  if (r.system_path.empty()) {
    w.any(nlohmann::json());
  } else {
    w.any(nlohmann::json{{"path", r.system_path},
                         {"status", file_status_name(r.system_status)},
                         {"profiles", r.system_profiles}});
  }
  w.close('}');
}

}  // namespace

void InspectReport::write_json(std::string& out) const {
  // About what the profiles and diagnostics of a real cache take: one large allocation rather
  // than doublings, each a copy and fresh pages.
  std::size_t estimate = 1024 + profiles.size() * 1200;
  for (const auto& profile : profiles) estimate += 32 * profile.profile.host.features.size();
  out.reserve(out.size() + estimate + diagnostics.size() * 700);
  write_inspect(*this, out, {});
}

void InspectReport::write_json(std::ostream& out) const {
  detail::write_in_chunks(out, [this](std::string& text, const std::function<void()>& drain) {
    write_inspect(*this, text, drain);
  });
}

void detail::write_in_chunks(std::ostream& out,
                             const std::function<void(std::string&, const std::function<void()>&)>& write) {
  constexpr std::size_t kChunk = std::size_t{1} << 20;
  std::string buffer;
  buffer.reserve(kChunk + 64 * 1024);
  auto flush = [&] {
    out.write(buffer.data(), static_cast<std::streamsize>(buffer.size()));
    buffer.clear();
  };
  write(buffer, [&] {
    if (buffer.size() >= kChunk) flush();
  });
  flush();
}

}  // namespace onnx_light::tune
