#pragma once
// Forcing one implementation of a kernel in tests: a copy of the CPU kernel table in which the
// selected definitions keep only that implementation. An implementation this host cannot run is
// reported, never silently passed: main() turns a run whose tests all passed into ctest's
// "skipped" (exit 77) when one was left untested, and an implementation the CPU can run (by
// the compiler's own CPUID/XGETBV check, independent of CpuFeatures) that was not tested fails.
#include <doctest/doctest.h>

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>

#include <fmt/format.h>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

#include "onnx_light/runtime/cpu_features.h"
#include "onnx_light/runtime/kernel_table.h"
#include "onnx_light/runtime/tuning_registry.h"

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

// Exit code of a run whose tests all passed while some implementation went untested (the unit
// entries' SKIP_RETURN_CODE in tests/CMakeLists.txt).
inline constexpr int kUntestedExitCode = 77;

// "what implementation: why" of everything this run could not test.
inline std::set<std::string>& untested_implementations() {
  static std::set<std::string> untested;
  return untested;
}

// Whether this CPU and OS run `implementation` ("avx2", "avx512", "avx512vnni", "avxvnni"), asked of the compiler's CPU
// check rather than runtime::CpuFeatures; nullopt for a name it cannot judge.
inline std::optional<bool> cpu_runs_independently(const std::string& implementation) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  if (implementation == "avx2") return avx2;
  const bool avx512 = avx2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
                      __builtin_cpu_supports("avx512bw");
  if (implementation == "avx512") return avx512;
  if (implementation == "avx512vnni") return avx512 && __builtin_cpu_supports("avx512vnni");
  // clang 14 does not know __builtin_cpu_supports("avxvnni"): CPUID leaf 7 subleaf 1, EAX bit 4,
  // asked here directly (avx2 above already includes the OS's YMM state).
  if (implementation == "avxvnni") {
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    return avx2 && __get_cpuid_count(7, 1, &eax, &ebx, &ecx, &edx) != 0 && (eax & (1u << 4)) != 0;
  }
#endif
  (void)implementation;
  return std::nullopt;
}

// Records that `what` `implementation` was not tested because of `why`: a failure when the CPU
// can run it, else a warning in the output and a skipped ctest entry.
inline void report_untested(const std::string& what, const std::string& implementation, const std::string& why) {
  if (cpu_runs_independently(implementation).value_or(false)) {
    FAIL_CHECK(fmt::format("{} {}: NOT TESTED ({}) although this CPU runs {} code", what, implementation, why,
                           implementation));
    return;
  }
  WARN_MESSAGE(false, fmt::format("{} {}: NOT TESTED on this host ({}); the ctest entry reports SKIPPED", what,
                                  implementation, why));
  untested_implementations().insert(fmt::format("{} {}: {}", what, implementation, why));
}

// True when this host runs `implementation` of the selected definitions; else reports it untested.
inline bool host_runs(const std::string& what, const DefinitionFilter& selected, const std::string& implementation) {
  for (const auto& def : runtime::cpu_kernel_table().definitions()) {
    if (!selected(def) || def.implementation != implementation) continue;
    const std::string why = def.unavailable_reason ? def.unavailable_reason(runtime::host_cpu_features()) : std::string{};
    if (why.empty()) return true;
    report_untested(what, implementation, why);
    return false;
  }
  report_untested(what, implementation, "not registered in this build");
  return false;
}

// A registry with every threshold of every CPU kernel at 1 (threads 1 to 4), so that the parallel
// paths run even on small inputs.
inline runtime::TuningRegistry& threshold_one_registry() {
  static runtime::TuningRegistry registry;
  static const bool published = [] {
    std::vector<runtime::PublishedProfile> profiles;
    for (const auto& def : runtime::cpu_kernel_table().definitions()) {
      runtime::TuningValues values = def.schema.defaults();
      for (const auto& spec : def.schema.parameters)
        if (spec.role == runtime::ParameterRole::threshold) values[spec.name] = int64_t{1};
      for (int threads = 1; threads <= 4; ++threads) profiles.push_back({def.schema.key, threads, values});
    }
    registry.publish(std::move(profiles));
    return true;
  }();
  (void)published;
  return registry;
}

}  // namespace onnx_light::test
