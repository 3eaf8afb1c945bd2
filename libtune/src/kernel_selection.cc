#include "onnx_light/tune/kernel_selection.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <set>
#include <tuple>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "onnx_light/runtime/element_type.h"
#include "onnx_light/runtime/error.h"
#include "onnx_light/tune/suggestion.h"

namespace onnx_light::tune {

using runtime::TuningKey;
using runtime::TuningSchema;

bool KeySelection::empty() const {
  return kernels.empty() && element_types.empty() && implementation.empty() && library.empty() && !device;
}

bool KeySelection::matches(const TuningKey& key) const {
  if (!kernels.empty() && std::find(kernels.begin(), kernels.end(), key.kernel) == kernels.end()) return false;
  if (!element_types.empty() &&
      std::find(element_types.begin(), element_types.end(), key.element_type) == element_types.end()) {
    return false;
  }
  if (!implementation.empty() && implementation != kAllImplementations && implementation != key.implementation) {
    return false;
  }
  if (!library.empty() && library != key.library) return false;
  return !device || *device == key.device;
}

bool is_calibratable(const runtime::KernelDef& def) {
  return def.schema.has_threshold() && static_cast<bool>(def.calibration_workload);
}

namespace {

TuningKey identity_of(TuningKey key) {
  key.tuning_abi = 0;
  return key;
}

std::string type_label(int32_t element_type) {
  if (runtime::is_valid_element_type(element_type)) {
    return fmt::format("{} ({})", runtime::element_type_name(static_cast<runtime::ElementType>(element_type)),
                       element_type);
  }
  return fmt::format("{}", element_type);
}

}  // namespace

std::optional<std::string> unknown_kernel_message(const runtime::KernelTable& table, const std::string& kernel) {
  std::set<std::string> known;
  for (const auto& def : table.definitions()) known.insert(def.schema.key.kernel);
  if (known.contains(kernel)) return std::nullopt;
  const auto near = nearest_names(kernel, {known.begin(), known.end()});
  if (near.empty()) {
    return fmt::format("unknown kernel '{}': {} kernels are registered; 'onnx-light-tune list' shows them", kernel,
                       known.size());
  }
  return fmt::format("unknown kernel '{}': did you mean {}?", kernel, fmt::join(near, ", "));
}

SchemaIndex::SchemaIndex(const runtime::KernelTable& table) {
  for (const auto& def : table.definitions()) {
    by_key_.emplace(def.schema.key, &def.schema);
    abis_[identity_of(def.schema.key)].insert(def.schema.key.tuning_abi);
  }
}

const TuningSchema* SchemaIndex::find(const TuningKey& key) const {
  const auto it = by_key_.find(key);
  return it == by_key_.end() ? nullptr : it->second;
}

const std::set<int32_t>* SchemaIndex::registered_abis(const TuningKey& key) const {
  const auto it = abis_.find(identity_of(key));
  return it == abis_.end() ? nullptr : &it->second;
}

bool SchemaIndex::is_stale(const TuningKey& key) const {
  const auto* abis = registered_abis(key);
  return abis != nullptr && !abis->contains(key.tuning_abi);
}

std::vector<const TuningSchema*> select_schemas(const runtime::KernelTable& table, const KeySelection& selection,
                                                const runtime::CpuFeatures& features) {
  std::vector<const TuningSchema*> result;
  for (const auto* def : select_definitions(table, selection, features)) result.push_back(&def->schema);
  return result;
}

std::vector<const runtime::KernelDef*> select_definitions(const runtime::KernelTable& table,
                                                          const KeySelection& selection,
                                                          const runtime::CpuFeatures& features) {
  std::map<TuningKey, const runtime::KernelDef*> chosen;
  // (domain, op, type) -> implementation; the optimizer's fused kernels (FusedConv, ...) live in
  // their own domain and dispatch like any other.
  std::map<std::tuple<std::string, std::string, int32_t>, std::string> dispatched;
  for (const auto& def : table.definitions()) {
    const TuningKey& key = def.schema.key;
    KeySelection literal = selection;
    literal.implementation.clear();  // implementation is checked below (dispatch aware)
    if (!literal.matches(key)) continue;
    if (selection.implementation.empty()) {
      const auto element = static_cast<runtime::ElementType>(key.element_type);
      auto [it, inserted] = dispatched.try_emplace({def.domain, def.op_type, key.element_type});
      if (inserted) it->second = table.dispatched_implementation(def.op_type, element, features, def.domain);
      if (it->second != key.implementation) continue;
    } else if (selection.implementation != kAllImplementations && selection.implementation != key.implementation) {
      continue;
    }
    chosen.emplace(key, &def);
  }
  // A kernel the caller named must select something; say why not.
  for (const auto& kernel : selection.kernels) {
    const bool found = std::any_of(chosen.begin(), chosen.end(), [&](const auto& e) { return e.first.kernel == kernel; });
    if (found) continue;
    if (auto message = unknown_kernel_message(table, kernel)) throw NotFoundError(*message);
    std::set<int32_t> types;
    std::set<std::string> implementations;
    for (const auto& def : table.definitions()) {
      if (def.schema.key.kernel == kernel) {
        types.insert(def.schema.key.element_type);
        implementations.insert(def.schema.key.implementation);
      }
    }
    std::vector<std::string> type_names;
    for (const int32_t t : types) type_names.push_back(type_label(t));
    std::vector<std::string> filters;
    if (!selection.element_types.empty()) {
      std::vector<std::string> wanted;
      for (const int32_t t : selection.element_types) wanted.push_back(type_label(t));
      filters.push_back(fmt::format("element type {}", fmt::join(wanted, ", ")));
    }
    if (!selection.implementation.empty()) filters.push_back(fmt::format("implementation {}", selection.implementation));
    if (!selection.library.empty()) filters.push_back(fmt::format("library {}", selection.library));
    if (selection.device) filters.push_back(fmt::format("device {}", *selection.device));
    throw NotFoundError(fmt::format("kernel '{}' has no variant with {}; it has element types {} and implementations {}",
                                    kernel, filters.empty() ? "this host's dispatch" : fmt::format("{}", fmt::join(filters, ", ")),
                                    fmt::join(type_names, ", "), fmt::join(implementations, ", ")));
  }
  std::vector<const runtime::KernelDef*> result;
  result.reserve(chosen.size());
  for (const auto& [key, def] : chosen) result.push_back(def);
  return result;
}

const TuningSchema& resolve_schema(const runtime::KernelTable& table, const std::string& kernel, int32_t element_type,
                                   const std::string& implementation, const std::string& library, int32_t device,
                                   const runtime::CpuFeatures& features) {
  KeySelection selection;
  selection.kernels = {kernel};
  selection.element_types = {element_type};
  selection.implementation = implementation == kAllImplementations ? std::string() : implementation;
  selection.library = library;
  selection.device = device;
  const auto schemas = select_schemas(table, selection, features);
  if (schemas.size() != 1) {  // several libraries or ABIs registered for one kernel: ask for more detail
    std::vector<std::string> keys;
    for (const auto* schema : schemas) keys.push_back(schema->key.to_string());
    throw NotFoundError(fmt::format("{} and element type {} name {} keys ({}); pass the implementation and library",
                                    kernel, type_label(element_type), schemas.size(), fmt::join(keys, ", ")));
  }
  return *schemas.front();
}

}  // namespace onnx_light::tune
