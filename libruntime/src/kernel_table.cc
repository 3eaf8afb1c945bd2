#include "onnx_light/runtime/kernel_table.h"

#include <algorithm>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "onnx_light/runtime/error.h"
#include "onnx_light/runtime/runtime_scope.h"

namespace onnx_light::runtime {

namespace {

std::string normalise_domain(std::string_view domain) {
  return domain == "ai.onnx" ? std::string() : std::string(domain);
}

}  // namespace

void KernelTable::add(KernelDef def) {
  def.domain = normalise_domain(def.domain);
  if (!def.create) throw InvalidValueError(fmt::format("kernel {}: no factory", def.op_type));
  if (def.since_version > def.end_version)
    throw InvalidValueError(fmt::format("kernel {}: opset range {}..{} is empty", def.op_type, def.since_version, def.end_version));
  auto index_key = std::make_tuple(def.domain, def.op_type, static_cast<int32_t>(def.element_type));
  for (std::size_t i : index_[index_key]) {
    const KernelDef& other = defs_[i];
    bool overlap = other.since_version <= def.end_version && def.since_version <= other.end_version;
    if (overlap && other.implementation == def.implementation)
      throw InvalidValueError(fmt::format("kernel {} {} {}: opset ranges {}..{} and {}..{} overlap", def.op_type,
                                          element_type_name(def.element_type), def.implementation,
                                          other.since_version, other.end_version, def.since_version, def.end_version));
  }
  for (const auto& p : def.schema.parameters)
    if (!is_valid_parameter_name(p.name) || !p.validate(p.default_value).empty())
      throw InvalidValueError(fmt::format("kernel {}: parameter '{}' has an invalid name or default", def.op_type, p.name));
  index_[index_key].push_back(defs_.size());
  defs_.push_back(std::move(def));
}

KernelChoice KernelTable::choose(std::string_view domain, std::string_view op_type, int64_t opset, ElementType type,
                                 const CpuFeatures& features) const {
  KernelChoice choice;
  auto it = index_.find(std::make_tuple(normalise_domain(domain), std::string(op_type), static_cast<int32_t>(type)));
  if (it == index_.end()) {
    std::set<std::string> types;
    for (const auto& d : defs_)
      if (d.op_type == op_type && d.domain == normalise_domain(domain)) types.insert(std::string(element_type_name(d.element_type)));
    if (types.empty()) {
      choice.miss_reason = domain.empty() ? fmt::format("operator {} is not implemented", op_type)
                                          : fmt::format("operator {}::{} is not implemented", domain, op_type);
      if (const std::string_view reason = out_of_scope_reason(domain, op_type); !reason.empty())
        choice.miss_reason += fmt::format(": {}", reason);
    }
    else
      choice.miss_reason = fmt::format("element type {} is not supported by {} (supported: {})",
                                       element_type_name(type), op_type, fmt::join(types, ", "));
    return choice;
  }
  bool any_in_range = false;
  // Registration order is the preference order: fastest first, portable reference last.
  for (std::size_t i : it->second) {
    const KernelDef& d = defs_[i];
    if (opset < d.since_version || opset > d.end_version) continue;
    any_in_range = true;
    std::string reason = d.unavailable_reason ? d.unavailable_reason(features) : std::string();
    if (!reason.empty()) {
      choice.skipped.push_back(fmt::format("{}: {}", d.implementation, reason));
      continue;
    }
    choice.def = &d;
    return choice;
  }
  if (!any_in_range) {
    std::vector<std::string> ranges;
    for (std::size_t i : it->second) {
      const auto& d = defs_[i];
      ranges.push_back(d.end_version >= (1 << 29) ? fmt::format("{}+", d.since_version)
                                                  : fmt::format("{}-{}", d.since_version, d.end_version));
    }
    choice.miss_reason = fmt::format("{} at opset {} is not implemented (implemented opsets: {})", op_type, opset,
                                     fmt::join(ranges, ", "));
  } else {
    choice.miss_reason = fmt::format("no {} implementation runs on this CPU ({})", op_type, fmt::join(choice.skipped, "; "));
  }
  return choice;
}

std::vector<std::string> KernelTable::op_types() const {
  std::set<std::string> names;
  for (const auto& d : defs_) names.insert(d.op_type);
  return {names.begin(), names.end()};
}

bool KernelTable::implements(std::string_view domain, std::string_view op_type) const {
  const std::string d = normalise_domain(domain);
  return std::any_of(defs_.begin(), defs_.end(), [&](const KernelDef& k) { return k.domain == d && k.op_type == op_type; });
}

const KernelDef* KernelTable::find_by_key(const TuningKey& key) const {
  for (const auto& d : defs_)
    if (d.schema.key == key) return &d;
  return nullptr;
}

std::string KernelTable::dispatched_implementation(std::string_view op_type, ElementType type,
                                                   const CpuFeatures& features, std::string_view domain) const {
  auto it = index_.find(std::make_tuple(std::string(domain), std::string(op_type), static_cast<int32_t>(type)));
  if (it == index_.end()) return {};
  int newest = -1;
  for (std::size_t i : it->second) newest = std::max(newest, defs_[i].end_version >= (1 << 29) ? (1 << 29) : defs_[i].end_version);
  for (std::size_t i : it->second) {
    const KernelDef& d = defs_[i];
    int end = d.end_version >= (1 << 29) ? (1 << 29) : d.end_version;
    if (end != newest) continue;
    if (d.unavailable_reason && !d.unavailable_reason(features).empty()) continue;
    return d.implementation;
  }
  return {};
}

const KernelTable& cpu_kernel_table() {
  static const KernelTable table = [] {
    KernelTable t;
    RegisterCpuKernels(t);
    return t;
  }();
  return table;
}

}  // namespace onnx_light::runtime
