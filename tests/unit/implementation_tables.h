#pragma once
// Forcing one implementation of a kernel in tests: a copy of the CPU kernel table in which the
// selected definitions keep only that implementation, and a loud warning (never a silent pass)
// when this host cannot run it.
#include <doctest/doctest.h>

#include <functional>
#include <map>
#include <memory>
#include <string>

#include <fmt/format.h>

#include "onnx_light/runtime/cpu_features.h"
#include "onnx_light/runtime/kernel_table.h"

namespace onnx_light::test {

using DefinitionFilter = std::function<bool(const runtime::KernelDef&)>;

// The CPU table with every `selected` definition restricted to `implementation`; the others stay.
// `tag` names the selection (tables are built once per tag and implementation).
inline const runtime::KernelTable& table_with_only(const std::string& tag, const DefinitionFilter& selected,
                                                   const std::string& implementation) {
  static std::map<std::string, std::unique_ptr<runtime::KernelTable>> tables;
  auto& slot = tables[tag + "/" + implementation];
  if (!slot) {
    slot = std::make_unique<runtime::KernelTable>();
    for (const auto& def : runtime::cpu_kernel_table().definitions())
      if (!selected(def) || def.implementation == implementation) slot->add(def);
  }
  return *slot;
}

// True when this host runs `implementation` of the selected definitions; else WARNs why, naming
// `what`, so the skipped case shows in the test output.
inline bool host_runs(const std::string& what, const DefinitionFilter& selected, const std::string& implementation) {
  for (const auto& def : runtime::cpu_kernel_table().definitions()) {
    if (!selected(def) || def.implementation != implementation) continue;
    const std::string why = def.unavailable_reason ? def.unavailable_reason(runtime::host_cpu_features()) : std::string{};
    if (why.empty()) return true;
    WARN_MESSAGE(false, fmt::format("{} {}: NOT TESTED on this host ({})", what, implementation, why));
    return false;
  }
  WARN_MESSAGE(false, fmt::format("{} {}: NOT TESTED, not registered in this build", what, implementation));
  return false;
}

}  // namespace onnx_light::test
