#include "version_info.h"

#include <cstdint>
#include <map>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "onnx_light/runtime/cpu_features.h"
#include "onnx_light/runtime/kernel_table.h"
#include "onnx_light/runtime/runtime_scope.h"
#include "onnx_light/tune/host.h"

namespace onnx_light::cli {

namespace {

std::string bytes_label(int64_t bytes) {
  if (bytes <= 0) return "?";
  if (bytes % (1024 * 1024) == 0) return fmt::format("{} MiB", bytes / (1024 * 1024));
  if (bytes % 1024 == 0) return fmt::format("{} KiB", bytes / 1024);
  return fmt::format("{} B", bytes);
}

// "portable (75 kernels), avx2 (12 kernels; not usable here: needs avx2)".
std::string implementations_label() {
  struct Counts {
    std::set<std::string> kernels;
    std::set<std::string> unusable;  // reasons on this host
  };
  std::map<std::string, Counts> by_implementation;
  const runtime::CpuFeatures& features = runtime::host_cpu_features();
  for (const auto& def : runtime::cpu_kernel_table().definitions()) {
    Counts& counts = by_implementation[def.implementation];
    counts.kernels.insert(def.op_type);
    if (def.unavailable_reason) {
      if (std::string reason = def.unavailable_reason(features); !reason.empty()) counts.unusable.insert(reason);
    }
  }
  std::vector<std::string> parts;
  for (const auto& [name, counts] : by_implementation) {
    std::string part = fmt::format("{} ({} kernel{}", name, counts.kernels.size(), counts.kernels.size() == 1 ? "" : "s");
    if (!counts.unusable.empty()) part += fmt::format("; not usable here: {}", fmt::join(counts.unusable, ", "));
    parts.push_back(part + ")");
  }
  return fmt::format("{}", fmt::join(parts, ", "));
}

}  // namespace

std::string version_text() {
  const tune::HostDescriptor host = tune::detect_host(tune::resolve_threads(0));
  return fmt::format(
      "onnx-light-tune {}\n"
      "compiler: {}\n"
      "build type: {}\n"
      "kernel implementations: {}\n"
      "kernels: {} op types (see 'onnx-light-tune list')\n"
      "out of scope: {}\n"
      "host: {}\n"
      "host features: {}\n"
      "host caches: L1d {}, L2 {}, L3 {}\n"
      "host cores: {} physical, {} logical; sessions default to {} thread{}\n"
      "allowed CPUs: {} (sched_getaffinity); sessions default to spin {} ({} us), affinity {}\n",
      ONNX_LIGHT_VERSION, ONNX_LIGHT_COMPILER, ONNX_LIGHT_BUILD_TYPE, implementations_label(),
      runtime::cpu_kernel_table().op_types().size(), runtime::out_of_scope_summary(), host.summary(),
      host.features.empty() ? "none detected" : fmt::format("{}", fmt::join(host.features, " ")),
      bytes_label(host.l1d_cache_bytes), bytes_label(host.l2_cache_bytes), bytes_label(host.l3_cache_bytes),
      host.physical_cores, host.logical_cores, host.effective_threads, host.effective_threads == 1 ? "" : "s",
      runtime::format_cpu_list(runtime::allowed_cpus()), runtime::spin_policy_name(runtime::kSpinShortMicroseconds),
      runtime::kSpinShortMicroseconds, runtime::affinity_policy_name(runtime::AffinityPolicy::none));
}

}  // namespace onnx_light::cli
