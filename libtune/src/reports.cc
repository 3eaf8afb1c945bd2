#include "onnx_light/tune/reports.h"

#include <charconv>
#include <cstdint>
#include <functional>
#include <ostream>
#include <variant>

#include <fmt/format.h>

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

nlohmann::json profile_to_json(const CacheProfile& profile) {
  nlohmann::json object = key_to_json(profile.key);
  profile.host.to_json(object);
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

namespace {

// Writes JSON the way nlohmann's dump(2) does (same indentation, escaping and number forms).
class PrettyJson {
 public:
  explicit PrettyJson(std::string& out) : out_(out) {}

  void open(char bracket) {
    out_ += bracket;
    empty_.push_back(true);
  }
  void close(char bracket) {
    const bool empty = empty_.back();
    empty_.pop_back();
    if (!empty) {
      out_ += '\n';
      out_.append(2 * empty_.size(), ' ');
    }
    out_ += bracket;
  }
  void key(std::string_view name) {
    next();
    string(name);
    out_ += ": ";
  }
  void item() { next(); }
  void string(std::string_view text) {
    out_ += '"';
    // Runs that need no escape are appended whole: most strings are plain, and character by
    // character appends were a quarter of writing a large report.
    std::size_t plain = 0;
    for (std::size_t i = 0; i < text.size(); ++i) {
      const char c = text[i];
      if (c != '"' && c != '\\' && static_cast<unsigned char>(c) >= 0x20) continue;
      out_.append(text.data() + plain, i - plain);
      plain = i + 1;
      switch (c) {
        case '"': out_ += "\\\""; break;
        case '\\': out_ += "\\\\"; break;
        case '\b': out_ += "\\b"; break;
        case '\t': out_ += "\\t"; break;
        case '\n': out_ += "\\n"; break;
        case '\f': out_ += "\\f"; break;
        case '\r': out_ += "\\r"; break;
        default:
          out_ += fmt::format("\\u{:04x}", static_cast<unsigned char>(c));
      }
    }
    out_.append(text.data() + plain, text.size() - plain);
    out_ += '"';
  }
  void integer(int64_t value) {
    char buffer[24];
    const auto result = std::to_chars(buffer, buffer + sizeof buffer, value);
    out_.append(buffer, result.ptr);
  }
  void boolean(bool value) { out_ += value ? "true" : "false"; }
  void value(const runtime::TuningValue& value) {
    if (const auto* i = std::get_if<int64_t>(&value)) return integer(*i);
    if (const auto* b = std::get_if<bool>(&value)) return boolean(*b);
    if (const auto* s = std::get_if<std::string>(&value)) return string(*s);
    out_ += nlohmann::json(std::get<double>(value)).dump();  // nlohmann's own float format
  }
  // Any document, for the small parts (diagnostics).
  void any(const nlohmann::json& j) {
    if (j.is_object()) {
      open('{');
      for (const auto& [name, member] : j.items()) {
        key(name);
        any(member);
      }
      close('}');
    } else if (j.is_array()) {
      open('[');
      for (const auto& member : j) {
        item();
        any(member);
      }
      close(']');
    } else {
      out_ += j.dump();
    }
  }

 private:
  void next() {
    if (!empty_.back()) out_ += ',';
    empty_.back() = false;
    out_ += '\n';
    out_.append(2 * empty_.size(), ' ');
  }

  std::string& out_;
  std::vector<bool> empty_;
};

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

void write_profile(PrettyJson& w, const InspectedProfile& inspected) {
  const CacheProfile& p = inspected.profile;
  const HostDescriptor& h = p.host;
  w.open('{');
  w.key("architecture"), w.string(h.architecture);
  w.key("classification"), w.string(profile_class_name(inspected.classification));
  w.key("device"), w.integer(p.key.device);
  w.key("device_name"), w.string(runtime::device_name(p.key.device));
  w.key("effective_threads"), w.integer(h.effective_threads);
  w.key("element_type"), w.integer(p.key.element_type);
  w.key("family"), w.integer(h.family);
  w.key("features");
  w.open('[');
  for (const auto& feature : h.features) w.item(), w.string(feature);
  w.close(']');
  w.key("implementation"), w.string(p.key.implementation);
  w.key("index"), w.integer(static_cast<int64_t>(inspected.index));
  w.key("kernel"), w.string(p.key.kernel);
  w.key("l1d_cache_bytes"), w.integer(h.l1d_cache_bytes);
  w.key("l2_cache_bytes"), w.integer(h.l2_cache_bytes);
  w.key("l3_cache_bytes"), w.integer(h.l3_cache_bytes);
  w.key("layer"), w.string(cache_layer_name(inspected.layer));
  w.key("library"), w.string(p.key.library);
  w.key("local"), w.boolean(inspected.local);
  w.key("logical_cores"), w.integer(h.logical_cores);
  w.key("microarchitecture"), w.string(h.microarchitecture);
  w.key("model"), w.integer(h.model);
  w.key("physical_cores"), w.integer(h.physical_cores);
  w.key("provenance");
  w.open('{');
  w.key("hostname"), w.string(p.provenance.hostname);
  w.key("source"), w.string(p.provenance.source);
  w.key("tool_version"), w.string(p.provenance.tool_version);
  w.key("written"), w.string(p.provenance.written);
  w.close('}');
  w.key("shadowed"), w.boolean(inspected.shadowed);
  w.key("stepping"), w.integer(h.stepping);
  w.key("tuning_abi"), w.integer(p.key.tuning_abi);
  w.key("values");
  w.open('{');
  for (const auto& [name, value] : p.values) w.key(name), w.value(value);
  w.close('}');
  w.key("vendor"), w.string(h.vendor);
  w.close('}');
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
    w.item(), write_diagnostic(w, diagnostic);
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
  constexpr std::size_t kChunk = std::size_t{1} << 20;
  std::string buffer;
  buffer.reserve(kChunk + 64 * 1024);
  auto flush = [&] {
    out.write(buffer.data(), static_cast<std::streamsize>(buffer.size()));
    buffer.clear();
  };
  write_inspect(*this, buffer, [&] {
    if (buffer.size() >= kChunk) flush();
  });
  flush();
}

}  // namespace onnx_light::tune
