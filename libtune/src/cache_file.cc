#include "onnx_light/tune/cache_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <ctime>
#include <limits>
#include <optional>
#include <sstream>
#include <unordered_map>
#include <cctype>

#include <fmt/format.h>
#include <toml++/toml.h>

#include "cache_text.h"
#include "sorted_runs.h"
#include "onnx_light/runtime/error.h"

namespace onnx_light::tune {

std::string_view file_status_name(FileStatus status) {
  switch (status) {
    case FileStatus::not_found: return "not_found";
    case FileStatus::unreadable: return "unreadable";
    case FileStatus::malformed: return "malformed";
    case FileStatus::loaded: return "loaded";
  }
  return "unknown";
}

bool profile_less(const CacheProfile& a, const CacheProfile& b) {
  if (a.key != b.key) return a.key < b.key;
  return a.host < b.host;
}

bool same_profile_identity(const CacheProfile& a, const CacheProfile& b) {
  return a.readable() && b.readable() && a.key == b.key && a.host == b.host;
}

std::size_t profile_identity_hash(const CacheProfile& p) {
  std::size_t h = runtime::TuningKeyHash{}(p.key);
  auto mix = [&h](std::size_t v) { h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2); };
  const std::hash<std::string> text;
  const std::hash<int64_t> number;
  const HostDescriptor& host = p.host;
  mix(text(host.architecture));
  mix(text(host.vendor));
  mix(number(host.family));
  mix(number(host.model));
  mix(number(host.stepping));
  mix(text(host.microarchitecture));
  for (const auto& feature : host.features) mix(text(feature));
  mix(host.features.size());
  mix(number(host.l1d_cache_bytes));
  mix(number(host.l2_cache_bytes));
  mix(number(host.l3_cache_bytes));
  mix(number(host.physical_cores));
  mix(number(host.logical_cores));
  mix(number(host.effective_threads));
  mix(std::hash<bool>{}(host.idle_spin));
  mix(static_cast<std::size_t>(host.match));
  return h;
}

std::string utc_timestamp_now() {
  const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm utc{};
  gmtime_r(&now, &utc);
  return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}Z", utc.tm_year + 1900, utc.tm_mon + 1, utc.tm_mday,
                     utc.tm_hour, utc.tm_min, utc.tm_sec);
}

Provenance provenance_now(std::string source, std::string tool_version) {
  Provenance provenance;
  provenance.source = std::move(source);
  provenance.written = utc_timestamp_now();
  provenance.tool_version = std::move(tool_version);
  provenance.hostname = this_hostname();
  return provenance;
}

namespace {

std::string format_date_time(const toml::date_time& value) {
  std::string text = fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}", value.date.year, value.date.month,
                                 value.date.day, value.time.hour, value.time.minute, value.time.second);
  if (value.time.nanosecond != 0) {
    std::string fraction = fmt::format("{:09}", value.time.nanosecond);
    while (fraction.back() == '0') fraction.pop_back();
    text += "." + fraction;
  }
  if (value.offset) {
    const int minutes = value.offset->minutes;
    if (minutes == 0) {
      text += "Z";
    } else {
      const int magnitude = std::abs(minutes);
      text += fmt::format("{}{:02}:{:02}", minutes < 0 ? '-' : '+', magnitude / 60, magnitude % 60);
    }
  }
  return text;
}

// Reads one [[profile]] table. Structural problems are collected, never thrown, so that one bad
// profile cannot hide the others.
class ProfileReader {
 public:
  explicit ProfileReader(CacheProfile& profile) : profile_(profile) {}

  // The whole [[profile]] table.
  void read(const toml::table& table) {
    read_key(table);
    read_host(table.get("host"));
    read_values(table.get("values"));
    read_provenance(table.get("provenance"));
  }

  // The sections one by one (the plain-layout reader parses each on its own).
  void read_key(const toml::table& table) {
    read_string(table, "library", "", profile_.key.library);
    read_string(table, "kernel", "", profile_.key.kernel);
    read_string(table, "implementation", "", profile_.key.implementation);
    read_int32(table, "element_type", "", profile_.key.element_type, std::numeric_limits<int32_t>::min());
    read_int32(table, "device", "", profile_.key.device, std::numeric_limits<int32_t>::min());
    read_int32(table, "tuning_abi", "", profile_.key.tuning_abi, 1);
  }

  void read_host(const toml::node* node) {
    if (node == nullptr) {
      problem("host", "'host' is missing");
      return;
    }
    const toml::table* host = node->as_table();
    if (host == nullptr) {
      problem("host", "'host' must be a table ([profile.host])");
      return;
    }
    read_host_table(*host);
  }

  void read_values(const toml::node* node) {
    if (node == nullptr) {
      problem("values", "'values' is missing");
      return;
    }
    const toml::table* values = node->as_table();
    if (values == nullptr) {
      problem("values", "'values' must be a table ([profile.values])");
      return;
    }
    read_value_table(*values, "");
  }

  void read_provenance(const toml::node* node) {
    if (node == nullptr) return;
    const toml::table* provenance = node->as_table();
    if (provenance == nullptr) {
      problem("provenance", "'provenance' must be a table ([profile.provenance])");
      return;
    }
    read_provenance_table(*provenance);
  }

 private:
  void problem(std::string field, std::string message) {
    profile_.problems.push_back({std::move(field), std::move(message)});
  }

  static std::string join(std::string_view prefix, std::string_view name) {
    return prefix.empty() ? std::string(name) : fmt::format("{}.{}", prefix, name);
  }

  const toml::node* required(const toml::table& table, std::string_view prefix, std::string_view name) {
    const toml::node* node = table.get(name);
    if (node == nullptr) problem(join(prefix, name), fmt::format("'{}' is missing", join(prefix, name)));
    return node;
  }

  void read_string(const toml::table& table, std::string_view name, std::string_view prefix, std::string& out,
                   bool optional = false) {
    const toml::node* node = optional ? table.get(name) : required(table, prefix, name);
    if (node == nullptr) return;
    if (const auto* value = node->as_string()) {
      out = value->get();
    } else {
      problem(join(prefix, name), fmt::format("'{}' must be a string", join(prefix, name)));
    }
  }

  bool read_int(const toml::table& table, std::string_view name, std::string_view prefix, int64_t& out,
                int64_t minimum, int64_t maximum, bool optional) {
    const toml::node* node = optional ? table.get(name) : required(table, prefix, name);
    if (node == nullptr) return false;
    const auto* value = node->as_integer();
    if (value == nullptr) {
      problem(join(prefix, name), fmt::format("'{}' must be an integer", join(prefix, name)));
      return false;
    }
    if (value->get() < minimum || value->get() > maximum) {
      problem(join(prefix, name),
              fmt::format("'{}' = {} is out of range [{}, {}]", join(prefix, name), value->get(), minimum, maximum));
      return false;
    }
    out = value->get();
    return true;
  }

  void read_int32(const toml::table& table, std::string_view name, std::string_view prefix, int32_t& out,
                  int64_t minimum) {
    int64_t value = 0;
    if (read_int(table, name, prefix, value, minimum, std::numeric_limits<int32_t>::max(), false)) {
      out = static_cast<int32_t>(value);
    }
  }

  void read_host_table(const toml::table& table) {
    const toml::table* host = &table;
    HostDescriptor& h = profile_.host;
    constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
    // Format version 2: a class profile names its class and records only the class's fields.
    if (const toml::node* match = host->get("match")) {
      const auto* name = match->as_string();
      try {
        if (name == nullptr) throw InvalidValueError("not a string");
        h.match = parse_host_match(name->get());
      } catch (const InvalidValueError&) {
        problem("host.match", fmt::format("'host.match' is {}; it must be \"exact\", \"model\", "
                                          "\"microarchitecture\" or \"isa\"",
                                          toml_value_text(*match)));
        return;
      }
    }
    const HostMatch match = h.match;
    for (auto&& [key, node] : *host) {
      const std::string_view name = key.str();
      if (name == "match" || host_field_in_class(name, match) || match == HostMatch::exact) continue;
      problem(join("host", name), fmt::format("'host.{}' is not part of a '{}' match (it records {}); remove it, or "
                                              "make the profile exact",
                                              name, host_match_name(match), class_fields(match)));
    }
    read_string(*host, "architecture", "host", h.architecture);
    const bool exact = match == HostMatch::exact;
    if (exact || host_field_in_class("vendor", match)) read_string(*host, "vendor", "host", h.vendor);
    // The rest may be absent in an exact profile (an older or hand-written one); it then differs
    // from this host. A class profile must give its class's fields.
    read_int(*host, "family", "host", h.family, 0, kMax, exact || !host_field_in_class("family", match));
    read_int(*host, "model", "host", h.model, 0, kMax, exact || !host_field_in_class("model", match));
    read_int(*host, "stepping", "host", h.stepping, 0, kMax, true);
    read_string(*host, "microarchitecture", "host", h.microarchitecture, match != HostMatch::microarchitecture);
    if (match == HostMatch::microarchitecture && h.microarchitecture.empty() && host->get("microarchitecture")) {
      problem("host.microarchitecture", "'host.microarchitecture' of a microarchitecture match must not be empty");
    }
    if (const toml::node* features = host->get("features")) {
      const toml::array* array = features->as_array();
      bool ok = array != nullptr;
      if (ok) {
        for (const toml::node& item : *array) {
          if (const auto* name = item.as_string()) {
            h.features.push_back(name->get());
          } else {
            ok = false;
          }
        }
      }
      if (!ok) problem("host.features", "'host.features' must be an array of strings");
      std::sort(h.features.begin(), h.features.end());
      h.features.erase(std::unique(h.features.begin(), h.features.end()), h.features.end());
    } else if (match == HostMatch::isa) {
      problem("host.features", "'host.features' is missing (an isa match lists the features a machine needs)");
    }
    read_int(*host, "l1d_cache_bytes", "host", h.l1d_cache_bytes, 0, kMax, true);
    read_int(*host, "l2_cache_bytes", "host", h.l2_cache_bytes, 0, kMax, true);
    read_int(*host, "l3_cache_bytes", "host", h.l3_cache_bytes, 0, kMax, true);
    read_int(*host, "physical_cores", "host", h.physical_cores, 0, kMax, true);
    read_int(*host, "logical_cores", "host", h.logical_cores, 0, kMax, true);
    read_int(*host, "effective_threads", "host", h.effective_threads, 1, int64_t{1} << 20, false);
    // Absent in profiles of tuning ABI 1 (then stale): those were measured under the default spin.
    if (const toml::node* spin = host->get("idle_spin")) {
      if (const auto* value = spin->as_boolean()) {
        h.idle_spin = value->get();
      } else {
        problem("host.idle_spin", "'host.idle_spin' must be true or false");
      }
    }
  }

  static std::string class_fields(HostMatch match) {
    std::vector<std::string_view> names;
    for (const std::string_view name : {"architecture", "vendor", "family", "model", "microarchitecture", "features",
                                        "effective_threads", "idle_spin"}) {
      if (host_field_in_class(name, match)) names.push_back(name);
    }
    return fmt::format("{}", fmt::join(names, ", "));
  }

  // Unquoted dotted keys (parallel.minimum_elements = 1) parse as nested tables; flattening them
  // gives the same parameter name as the quoted form we write.
  void read_value_table(const toml::table& table, const std::string& prefix) {
    for (auto&& [key, node] : table) {
      const std::string name = prefix.empty() ? std::string(key.str()) : prefix + "." + std::string(key.str());
      const std::string field = "values." + name;
      runtime::TuningValue value;
      if (const auto* integer = node.as_integer()) {
        value = integer->get();
      } else if (const auto* floating = node.as_floating_point()) {
        value = floating->get();
      } else if (const auto* boolean = node.as_boolean()) {
        value = boolean->get();
      } else if (const auto* text = node.as_string()) {
        value = text->get();
      } else if (const auto* nested = node.as_table()) {
        read_value_table(*nested, name);
        continue;
      } else {
        problem(field, fmt::format("'{}' must be an integer, float, boolean or string", field));
        continue;
      }
      if (!profile_.values.emplace(name, std::move(value)).second) {
        problem(field, fmt::format("'{}' is given twice", field));
      }
    }
  }

  void read_provenance_table(const toml::table& table) {
    const toml::table* provenance = &table;
    read_string(*provenance, "source", "provenance", profile_.provenance.source, true);
    read_string(*provenance, "tool_version", "provenance", profile_.provenance.tool_version, true);
    read_string(*provenance, "hostname", "provenance", profile_.provenance.hostname, true);
    if (const toml::node* written = provenance->get("written")) {
      if (const auto* date_time = written->as_date_time()) {
        profile_.provenance.written = format_date_time(date_time->get());
      } else if (const auto* text = written->as_string()) {
        profile_.provenance.written = text->get();
      } else {
        problem("provenance.written", "'provenance.written' must be a date-time (2026-12-02T11:39:29Z)");
      }
    }
  }

  CacheProfile& profile_;
};

// A TOML literal for any node, tables and arrays inline. Used to keep unreadable profiles: toml++'s
// own formatter leaves keys such as a'b unquoted (invalid TOML), so we write them ourselves.
void append_inline(std::string& out, const toml::node& node) {
  if (const auto* table = node.as_table()) {
    out += '{';
    bool first = true;
    for (auto&& [key, value] : *table) {
      out += first ? " " : ", ";
      first = false;
      out += toml_quote(key.str());
      out += " = ";
      append_inline(out, value);
    }
    out += first ? "}" : " }";
  } else if (const auto* array = node.as_array()) {
    out += '[';
    for (std::size_t i = 0; i < array->size(); ++i) {
      if (i != 0) out += ", ";
      append_inline(out, *array->get(i));
    }
    out += ']';
  } else if (const auto* text = node.as_string()) {
    out += toml_quote(text->get());
  } else if (const auto* integer = node.as_integer()) {
    out += toml_value_literal(integer->get());
  } else if (const auto* floating = node.as_floating_point()) {
    out += toml_value_literal(floating->get());
  } else if (const auto* boolean = node.as_boolean()) {
    out += boolean->get() ? "true" : "false";
  } else if (const auto* date_time = node.as_date_time()) {
    out += format_date_time(date_time->get());
  } else if (const auto* date = node.as_date()) {
    out += fmt::format("{:04}-{:02}-{:02}", date->get().year, date->get().month, date->get().day);
  } else if (const auto* time = node.as_time()) {
    toml::date_time at{toml::date{2000, 1, 1}, time->get()};
    out += format_date_time(at).substr(11);  // the time part
  }
}

std::string raw_profile_text(const toml::table& table) {
  std::string out = "[[profile]]\n";
  for (auto&& [key, value] : table) {
    out += toml_quote(key.str());
    out += " = ";
    append_inline(out, value);
    out += '\n';
  }
  return out;
}

}  // namespace

namespace {

// Why the root keys do not make a cache this tool reads, version 1 or 2 ("" when they do).
std::string header_error(const toml::table& root) {
  const toml::node* format = root.get("format");
  if (format == nullptr) {
    return fmt::format("not an onnx-light kernel tuning cache: no 'format = \"{}\"' key", kCacheFormat);
  }
  if (const auto* name = format->as_string(); name == nullptr || name->get() != kCacheFormat) {
    return fmt::format("'format' is {}, expected \"{}\"", toml_value_text(*format), kCacheFormat);
  }
  const toml::node* version_node = root.get("format_version");
  const auto* version = version_node != nullptr ? version_node->as_integer() : nullptr;
  if (version == nullptr) return "'format_version' is missing or not an integer";
  if (version->get() > kCacheFormatVersion) {
    return fmt::format(
        "format_version {} is newer than this tool reads ({}); upgrade onnx-light-tune or use another --cache",
        version->get(), kCacheFormatVersion);
  }
  if (version->get() < 1) {
    return fmt::format("format_version {} is not a valid version (expected {})", version->get(),
                       kCacheFormatVersion);
  }
  return {};
}

// A [profile.host] body exactly as serialize_cache writes it ("name = value" lines of plain
// decimal integers, printable-ASCII strings without escapes, the features array), read without
// toml++: in a fleet's cache nearly every host section differs (stepping, threads), so memoising
// by text does not help, and toml++ made 40,000 of them cost a second. Returns false, leaving the
// section to toml++ (which also reports any problem), for anything else: another spelling, an
// escape, a comment, a repeated or unknown name, a value out of the reader's range.
bool read_plain_host(std::string_view body, HostDescriptor& host) {
  auto string_value = [](std::string_view text, std::string& out) {
    if (text.size() < 2 || text.front() != '"' || text.back() != '"') return false;
    text = text.substr(1, text.size() - 2);
    for (const char c : text) {
      if (c < 0x20 || c > 0x7E || c == '"' || c == '\\') return false;
    }
    out.assign(text);
    return true;
  };
  auto integer_value = [](std::string_view text, int64_t minimum, int64_t maximum, int64_t& out) {
    // TOML forbids leading zeros; 18 digits cannot overflow int64.
    if (text.empty() || text.size() > 18 || (text.size() > 1 && text[0] == '0')) return false;
    int64_t value = 0;
    for (const char c : text) {
      if (c < '0' || c > '9') return false;
      value = value * 10 + (c - '0');
    }
    if (value < minimum || value > maximum) return false;
    out = value;
    return true;
  };
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  uint32_t seen = 0;
  std::size_t position = 0;
  while (position < body.size()) {
    std::size_t end = body.find('\n', position);
    if (end == std::string_view::npos) end = body.size();
    std::string_view line = body.substr(position, end - position);
    position = end + 1;
    if (line.empty()) continue;
    const std::size_t equals = line.find(" = ");
    if (equals == std::string_view::npos) return false;
    const std::string_view name = line.substr(0, equals);
    const std::string_view value = line.substr(equals + 3);
    static constexpr std::array<std::string_view, 14> kNames{
        "architecture",    "vendor",          "family",          "model",          "stepping",
        "microarchitecture", "features",      "l1d_cache_bytes", "l2_cache_bytes", "l3_cache_bytes",
        "physical_cores",  "logical_cores",   "effective_threads", "idle_spin"};
    const auto found = std::find(kNames.begin(), kNames.end(), name);
    if (found == kNames.end()) return false;
    const auto bit = uint32_t{1} << (found - kNames.begin());
    if ((seen & bit) != 0) return false;
    seen |= bit;
    bool ok = false;
    switch (found - kNames.begin()) {
      case 0: ok = string_value(value, host.architecture); break;
      case 1: ok = string_value(value, host.vendor); break;
      case 2: ok = integer_value(value, 0, kMax, host.family); break;
      case 3: ok = integer_value(value, 0, kMax, host.model); break;
      case 4: ok = integer_value(value, 0, kMax, host.stepping); break;
      case 5: ok = string_value(value, host.microarchitecture); break;
      case 6: {
        if (value.size() < 2 || value.front() != '[' || value.back() != ']') return false;
        std::string_view items = value.substr(1, value.size() - 2);
        while (!items.empty()) {
          const std::size_t comma = items.find(", ");
          std::string feature;
          if (!string_value(items.substr(0, comma), feature)) return false;
          host.features.push_back(std::move(feature));
          items = comma == std::string_view::npos ? std::string_view() : items.substr(comma + 2);
        }
        // As the TOML reader: sorted, without repeats.
        std::sort(host.features.begin(), host.features.end());
        host.features.erase(std::unique(host.features.begin(), host.features.end()), host.features.end());
        ok = true;
        break;
      }
      case 7: ok = integer_value(value, 0, kMax, host.l1d_cache_bytes); break;
      case 8: ok = integer_value(value, 0, kMax, host.l2_cache_bytes); break;
      case 9: ok = integer_value(value, 0, kMax, host.l3_cache_bytes); break;
      case 10: ok = integer_value(value, 0, kMax, host.physical_cores); break;
      case 11: ok = integer_value(value, 0, kMax, host.logical_cores); break;
      case 12: ok = integer_value(value, 1, int64_t{1} << 20, host.effective_threads); break;
      case 13:
        ok = value == "true" || value == "false";
        host.idle_spin = value == "true";
        break;
      default: break;
    }
    if (!ok) return false;
  }
  // architecture, vendor and effective_threads are required (bits 0, 1, 12).
  return (seen & 0x1003u) == 0x1003u;
}

// The plain layout: root keys, then per profile a "[[profile]]" line, its key fields and
// "[profile.NAME]" sections, every header alone on its line (what serialize_cache writes). Each
// section body is parsed by toml++ on its own and memoised by its text: a real cache repeats the
// same host, values and provenance sections thousands of times, and toml++ parsing every byte of
// a 10,000-profile file costs about 300 ms. Returns nullopt (use the whole-document parse) for
// anything else: another header, a section that does not parse on its own, a profile with a
// problem, a root that is not a good header. A line starting with '[' that is not a header can
// only sit inside an unterminated multi-line array or string, which then fails to parse.
class PlainLayoutReader {
 public:
  std::optional<CacheFile> read(std::string_view text, const std::filesystem::path& path) {
    split(text);
    if (failed_) return std::nullopt;
    CacheFile file;
    file.path = path;
    file.status = FileStatus::loaded;
    const auto root = parse(root_text_);
    if (!root || root->contains("profile")) return std::nullopt;
    if (root->empty() && profiles_.empty()) return file;  // whitespace or comments only
    if (!header_error(*root).empty()) return std::nullopt;
    file.profiles.reserve(profiles_.size());
    for (const RawProfile& raw : profiles_) {
      CacheProfile& profile = file.profiles.emplace_back();
      const CacheProfile* key = fragment(keys_, raw.key, [](ProfileReader& r, const toml::table& t) {
        r.read_key(t);
      });
      if (key == nullptr) return std::nullopt;
      profile.key = key->key;
      // A section redefining a key of the profile table itself is an error for the whole document.
      const std::vector<std::string>& names = key_names_.at(raw.key);
      for (const auto& section : raw.sections) {
        if (std::find(names.begin(), names.end(), section.first) != names.end()) return std::nullopt;
      }
      bool host = false, values = false;
      for (const auto& [name, body] : raw.sections) {
        if (name == "host") {
          // Read in place when plain: no memo copy (a fleet's hosts rarely repeat, and each copy
          // is memory the process must fault in).
          if (!read_plain_host(body, profile.host)) {
            profile.host = HostDescriptor();
            const CacheProfile* part = fragment(hosts_, body, [](ProfileReader& r, const toml::table& t) {
              r.read_host(&t);
            });
            if (part == nullptr) return std::nullopt;
            profile.host = part->host;
          }
          host = true;
        } else if (name == "values") {
          const CacheProfile* part = fragment(values_, body, [](ProfileReader& r, const toml::table& t) {
            r.read_values(&t);
          });
          if (part == nullptr) return std::nullopt;
          profile.values = part->values;
          values = true;
        } else if (name == "provenance") {
          const CacheProfile* part = fragment(provenances_, body, [](ProfileReader& r, const toml::table& t) {
            r.read_provenance(&t);
          });
          if (part == nullptr) return std::nullopt;
          profile.provenance = part->provenance;
        } else if (!parse(body)) {  // unknown sections are ignored, but must be valid TOML
          return std::nullopt;
        }
      }
      if (!host || !values) return std::nullopt;
    }
    return file;
  }

 private:
  struct RawProfile {
    std::string_view key;
    std::vector<std::pair<std::string_view, std::string_view>> sections;  // name, body
  };
  using Memo = std::unordered_map<std::string_view, std::optional<CacheProfile>>;

  static bool bare_key(std::string_view name) {
    return !name.empty() && std::all_of(name.begin(), name.end(), [](char c) {
      return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_' || c == '-';
    });
  }

  void split(std::string_view text) {
    std::string_view* body = &root_text_;
    std::size_t body_start = 0;
    std::size_t position = 0;
    while (position < text.size() && !failed_) {
      std::size_t end = text.find('\n', position);
      end = end == std::string_view::npos ? text.size() : end + 1;
      std::string_view line = text.substr(position, end - position);
      const std::size_t first = line.find_first_not_of(" \t");
      if (first != std::string_view::npos && line[first] == '[') {
        *body = text.substr(body_start, position - body_start);
        line.remove_prefix(first);
        while (!line.empty() && (line.back() == '\n' || line.back() == '\r' || line.back() == ' ' ||
                                 line.back() == '\t')) {
          line.remove_suffix(1);
        }
        if (line == "[[profile]]") {
          body = &profiles_.emplace_back().key;
        } else if (line.starts_with("[profile.") && line.ends_with("]") && !profiles_.empty() &&
                   bare_key(line.substr(9, line.size() - 10))) {
          const std::string_view name = line.substr(9, line.size() - 10);
          auto& sections = profiles_.back().sections;
          if (std::any_of(sections.begin(), sections.end(), [&](const auto& s) { return s.first == name; }) ||
              name == "library" || name == "kernel" || name == "implementation" || name == "element_type" ||
              name == "device" || name == "tuning_abi") {
            failed_ = true;  // redefinition: let toml++ report it
          }
          body = &sections.emplace_back(name, std::string_view()).second;
        } else {
          failed_ = true;
        }
        body_start = end;
      }
      position = end;
    }
    *body = text.substr(body_start);
  }

  static std::optional<toml::table> parse(std::string_view body) {
    try {
      return toml::parse(body);
    } catch (const toml::parse_error&) {
      return std::nullopt;
    }
  }

  // The section read on its own, memoised; nullptr when it does not parse or has a problem.
  template <typename Read>
  const CacheProfile* fragment(Memo& memo, std::string_view body, Read read) {
    auto [it, inserted] = memo.try_emplace(body);
    if (inserted) {
      if (auto table = parse(body)) {
        CacheProfile part;
        ProfileReader reader(part);
        read(reader, *table);
        if (&memo == &keys_) {
          auto& names = key_names_[body];
          for (auto&& [name, node] : *table) names.emplace_back(name.str());
        }
        if (part.problems.empty()) it->second = std::move(part);
      }
    }
    return it->second ? &*it->second : nullptr;
  }

  std::string_view root_text_;
  std::vector<RawProfile> profiles_;
  bool failed_ = false;
  Memo keys_, hosts_, values_, provenances_;
  std::unordered_map<std::string_view, std::vector<std::string>> key_names_;  // root keys of each key part
};

}  // namespace

CacheFile parse_cache_text_reference(std::string_view text, const std::filesystem::path& path) {
  CacheFile file;
  file.path = path;
  toml::table root;
  try {
    root = toml::parse(text);  // no source path: toml++ would attach a copy to every node
  } catch (const toml::parse_error& error) {
    file.status = FileStatus::malformed;
    file.error = fmt::format("not valid TOML at line {}, column {}: {}", error.source().begin.line,
                             error.source().begin.column, error.description());
    return file;
  }
  if (root.empty()) {  // whitespace or comments only: an empty cache, nothing to lose
    file.status = FileStatus::loaded;
    return file;
  }
  file.status = FileStatus::malformed;
  file.error = header_error(root);
  if (!file.error.empty()) return file;
  if (const toml::node* profiles = root.get("profile")) {
    const toml::array* array = profiles->as_array();
    if (array == nullptr || !array->is_array_of_tables()) {
      file.error = "'profile' must be an array of tables ([[profile]])";
      return file;
    }
    file.profiles.reserve(array->size());
    for (const toml::node& node : *array) {
      const toml::table& table = *node.as_table();
      CacheProfile& profile = file.profiles.emplace_back();
      ProfileReader(profile).read(table);
      if (!profile.readable()) profile.raw_toml = raw_profile_text(table);
    }
  }
  file.status = FileStatus::loaded;
  return file;
}

CacheFile parse_cache_text(std::string_view text, const std::filesystem::path& path) {
  if (auto file = PlainLayoutReader().read(text, path)) return std::move(*file);
  return parse_cache_text_reference(text, path);
}

CacheFile read_cache_file(const std::filesystem::path& path) {
  CacheFile file;
  file.path = path;
  // O_NONBLOCK: opening a FIFO planted at the cache path must not wait for a writer (the type
  // check below refuses it); it changes nothing for a regular file.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    const int error = errno;
    file.status = error == ENOENT ? FileStatus::not_found : FileStatus::unreadable;
    file.error = fmt::format("cannot open {}: {}", path.string(), std::strerror(error));
    return file;
  }
  std::string text;
  struct stat info {};
  std::string failure;
  constexpr off_t kMaximumBytes = off_t{256} << 20;
  if (::fstat(fd, &info) != 0) {
    failure = fmt::format("cannot stat {}: {}", path.string(), std::strerror(errno));
  } else if (!S_ISREG(info.st_mode)) {
    failure = fmt::format("{} is not a regular file", path.string());
  } else if (info.st_size > kMaximumBytes) {
    failure = fmt::format("{} is {} bytes, more than a tuning cache can be (256 MiB)", path.string(), info.st_size);
  } else {
    text.resize(static_cast<std::size_t>(info.st_size) + 1);  // +1: the final read() returns 0 without a regrow
    std::size_t done = 0;
    while (failure.empty()) {
      if (done == text.size()) text.resize(text.size() + 4096 + text.size() / 2);  // the file may have grown
      const ssize_t got = ::read(fd, text.data() + done, text.size() - done);
      if (got < 0 && errno == EINTR) continue;
      if (got < 0) failure = fmt::format("cannot read {}: {}", path.string(), std::strerror(errno));
      if (got <= 0) break;
      done += static_cast<std::size_t>(got);
      if (static_cast<off_t>(done) > kMaximumBytes) failure = fmt::format("{} is larger than 256 MiB", path.string());
    }
    text.resize(done);
  }
  ::close(fd);
  if (!failure.empty()) {
    file.status = FileStatus::unreadable;
    file.error = std::move(failure);
    return file;
  }
  return parse_cache_text(text, path);
}

std::string serialize_cache(std::vector<CacheProfile> profiles) {
  std::vector<const CacheProfile*> pointers;
  pointers.reserve(profiles.size());
  for (const auto& profile : profiles) pointers.push_back(&profile);
  return serialize_profiles(std::move(pointers));
}

std::string serialize_profiles(std::vector<const CacheProfile*> profiles) {
  const auto unreadable = std::stable_partition(profiles.begin(), profiles.end(),
                                                [](const CacheProfile* p) { return p->readable(); });
  auto less = [](const CacheProfile* a, const CacheProfile* b) { return profile_less(*a, *b); };
  // Writers mostly hand over sorted runs (a file read back, then the upserts of an update).
  sort_by_runs(profiles.begin(), unreadable, less);
  std::string out;
  // Sized from the variable parts, so that a large cache's text is not grown (and copied) midway.
  std::size_t size = 512;
  for (const CacheProfile* p : profiles) {
    size += 560 + p->raw_toml.size() + p->key.kernel.size() + p->key.implementation.size();
    for (const auto& feature : p->host.features) size += feature.size() + 4;
    for (const auto& [name, value] : p->values) {
      size += name.size() + 32;
      if (const auto* text = std::get_if<std::string>(&value)) size += text->size();
    }
  }
  out.reserve(size);
  out += "# onnx-light kernel tuning cache. Change it with 'onnx-light-tune set' (locked and atomic);\n";
  out += "# profiles are sorted by key, then host, so that two caches diff cleanly.\n";
  // Version 1 unless a class profile needs 2, so that older tools keep reading exact-host caches.
  const bool classes = std::any_of(profiles.begin(), unreadable,
                                   [](const CacheProfile* p) { return p->host.match != HostMatch::exact; });
  fmt::format_to(std::back_inserter(out), "format = {}\nformat_version = {}\n", toml_quote(kCacheFormat),
                 classes ? kCacheFormatVersion : int64_t{1});
  for (auto it = profiles.begin(); it != unreadable; ++it) {
    const CacheProfile& p = **it;
    const HostDescriptor& h = p.host;
    auto o = std::back_inserter(out);
    fmt::format_to(o, "\n[[profile]]\nlibrary = {}\nkernel = {}\nimplementation = {}\n", toml_quote(p.key.library),
                   toml_quote(p.key.kernel), toml_quote(p.key.implementation));
    fmt::format_to(o, "element_type = {}\ndevice = {}\ntuning_abi = {}\n", p.key.element_type, p.key.device,
                   p.key.tuning_abi);
    if (h.match == HostMatch::exact) {
      fmt::format_to(o, "[profile.host]\narchitecture = {}\nvendor = {}\nfamily = {}\nmodel = {}\nstepping = {}\n",
                     toml_quote(h.architecture), toml_quote(h.vendor), h.family, h.model, h.stepping);
      fmt::format_to(o, "microarchitecture = {}\nfeatures = [", toml_quote(h.microarchitecture));
      for (std::size_t i = 0; i < h.features.size(); ++i) {
        if (i != 0) out += ", ";
        out += toml_quote(h.features[i]);
      }
      fmt::format_to(o,
                     "]\nl1d_cache_bytes = {}\nl2_cache_bytes = {}\nl3_cache_bytes = {}\nphysical_cores = {}\n"
                     "logical_cores = {}\neffective_threads = {}\nidle_spin = {}\n",
                     h.l1d_cache_bytes, h.l2_cache_bytes, h.l3_cache_bytes, h.physical_cores, h.logical_cores,
                     h.effective_threads, h.idle_spin);
    } else {
      // Only the class's fields: a model profile that wrote "stepping = 0" would read as a claim.
      fmt::format_to(o, "[profile.host]\nmatch = {}\narchitecture = {}\n", toml_quote(host_match_name(h.match)),
                     toml_quote(h.architecture));
      if (h.match == HostMatch::model) {
        fmt::format_to(o, "vendor = {}\nfamily = {}\nmodel = {}\n", toml_quote(h.vendor), h.family, h.model);
      } else if (h.match == HostMatch::microarchitecture) {
        fmt::format_to(o, "vendor = {}\nmicroarchitecture = {}\n", toml_quote(h.vendor),
                       toml_quote(h.microarchitecture));
      } else {
        out += "features = [";
        for (std::size_t i = 0; i < h.features.size(); ++i) {
          if (i != 0) out += ", ";
          out += toml_quote(h.features[i]);
        }
        out += "]\n";
      }
      fmt::format_to(o, "effective_threads = {}\nidle_spin = {}\n", h.effective_threads, h.idle_spin);
    }
    out += "[profile.values]\n";
    for (const auto& [name, value] : p.values) {
      out += toml_quote(name);
      out += " = ";
      out += toml_value_literal(value);
      out += '\n';
    }
    const Provenance& provenance = p.provenance;
    if (!provenance.source.empty() || !provenance.written.empty() || !provenance.tool_version.empty() ||
        !provenance.hostname.empty()) {
      out += "[profile.provenance]\n";
      if (!provenance.source.empty()) fmt::format_to(o, "source = {}\n", toml_quote(provenance.source));
      if (!provenance.written.empty()) {
        fmt::format_to(o, "written = {}\n",
                       is_canonical_date_time(provenance.written) ? provenance.written : toml_quote(provenance.written));
      }
      if (!provenance.tool_version.empty()) {
        fmt::format_to(o, "tool_version = {}\n", toml_quote(provenance.tool_version));
      }
      if (!provenance.hostname.empty()) fmt::format_to(o, "hostname = {}\n", toml_quote(provenance.hostname));
    }
  }
  for (auto it = unreadable; it != profiles.end(); ++it) {
    out += "\n";
    out += (*it)->raw_toml;
    if (!out.ends_with('\n')) out += '\n';
  }
  return out;
}

}  // namespace onnx_light::tune
