#pragma once
// JSON written directly, byte for byte as nlohmann's dump(2) writes the reports' to_json(): for
// reports that list every profile of a fleet's cache (inspect, export, import, diff), where
// building the document first took seconds and hundreds of megabytes. Tests compare the two.
#include <charconv>
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "onnx_light/runtime/tuning_key.h"
#include "onnx_light/tune/cache_file.h"
#include "onnx_light/tune/diagnostic.h"

namespace onnx_light::tune::detail {

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
  void null() { out_ += "null"; }
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

// Diagnostic::to_json().
void write_diagnostic(PrettyJson& w, const Diagnostic& diagnostic);

// Members a caller adds to an object written in sorted key order (nlohmann's objects are
// std::maps): each is written just before the first fixed member whose name sorts after it.
class JsonMembers {
 public:
  explicit JsonMembers(PrettyJson& w) : w_(w) {}
  // `write` writes the value (the key is written here). Add in sorted order.
  void add(std::string_view name, std::function<void()> write) { members_.emplace_back(name, std::move(write)); }
  // Writes the added members that sort before `next` ("": all that are left).
  void before(std::string_view next) {
    while (next_ < members_.size() && (next.empty() || members_[next_].first < next)) {
      w_.key(members_[next_].first);
      members_[next_].second();
      ++next_;
    }
  }

 private:
  PrettyJson& w_;
  std::vector<std::pair<std::string_view, std::function<void()>>> members_;
  std::size_t next_ = 0;
};

// profile_to_json(p) plus the members `extra` adds to a JsonMembers.
template <typename Extra>
void write_profile_object(PrettyJson& w, const CacheProfile& p, Extra&& extra) {
  const HostDescriptor& h = p.host;
  JsonMembers m(w);
  extra(m);
  w.open('{');
  auto field = [&](std::string_view name) {
    m.before(name);
    w.key(name);
  };
  field("architecture"), w.string(h.architecture);
  field("device"), w.integer(p.key.device);
  field("device_name"), w.string(runtime::device_name(p.key.device));
  field("effective_threads"), w.integer(h.effective_threads);
  field("element_type"), w.integer(p.key.element_type);
  field("family"), w.integer(h.family);
  field("features");
  w.open('[');
  for (const auto& feature : h.features) w.item(), w.string(feature);
  w.close(']');
  field("idle_spin"), w.boolean(h.idle_spin);
  field("implementation"), w.string(p.key.implementation);
  field("kernel"), w.string(p.key.kernel);
  field("l1d_cache_bytes"), w.integer(h.l1d_cache_bytes);
  field("l2_cache_bytes"), w.integer(h.l2_cache_bytes);
  field("l3_cache_bytes"), w.integer(h.l3_cache_bytes);
  field("library"), w.string(p.key.library);
  field("logical_cores"), w.integer(h.logical_cores);
  field("match"), w.string(host_match_name(h.match));
  field("microarchitecture"), w.string(h.microarchitecture);
  field("model"), w.integer(h.model);
  field("physical_cores"), w.integer(h.physical_cores);
  field("provenance");
  w.open('{');
  w.key("hostname"), w.string(p.provenance.hostname);
  w.key("source"), w.string(p.provenance.source);
  w.key("tool_version"), w.string(p.provenance.tool_version);
  w.key("written"), w.string(p.provenance.written);
  w.close('}');
  field("stepping"), w.integer(h.stepping);
  field("tuning_abi"), w.integer(p.key.tuning_abi);
  field("values");
  w.open('{');
  for (const auto& [name, value] : p.values) w.key(name), w.value(value);
  w.close('}');
  field("vendor"), w.string(h.vendor);
  m.before("");
  w.close('}');
}

// Writes `report`'s JSON to `out` in chunks of about a megabyte: `write(text, drain)` appends to
// `text` and calls drain() between entries, which may take away what `text` holds.
void write_in_chunks(std::ostream& out, const std::function<void(std::string&, const std::function<void()>&)>& write);

}  // namespace onnx_light::tune::detail
