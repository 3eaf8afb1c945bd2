#include "onnx_light/runtime/runtime_parameters.h"

#include <cpuinfo.h>

#include <algorithm>
#include <fstream>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <utility>

#if defined(__linux__)
#include <sched.h>
#include <unistd.h>
#endif

#include "onnx_light/runtime/error.h"

namespace onnx_light::runtime {

int effective_threads(const RuntimeParameters& parameters) {
  if (parameters.num_threads < 0) {
    throw InvalidValueError("num_threads must be >= 0 (0 = one thread per physical core), got " +
                            std::to_string(parameters.num_threads));
  }
  return parameters.num_threads == 0 ? physical_core_count() : parameters.num_threads;
}

namespace {

#if defined(__linux__)
std::optional<long> read_topology_value(int cpu, const char* field) {
  std::ifstream in("/sys/devices/system/cpu/cpu" + std::to_string(cpu) + "/topology/" + field);
  long value = 0;
  if (!(in >> value)) return std::nullopt;
  return value;
}

// Distinct (package, core) pairs of the CPUs `include` accepts; nullopt when sysfs cannot tell.
template <typename Include>
std::optional<int> sysfs_core_count(Include include) {
  std::set<std::pair<long, long>> cores;
  const long configured = std::max<long>(sysconf(_SC_NPROCESSORS_CONF), std::thread::hardware_concurrency());
  for (int cpu = 0; cpu < configured; ++cpu) {
    if (!include(cpu)) continue;
    const auto package = read_topology_value(cpu, "physical_package_id");
    const auto core = read_topology_value(cpu, "core_id");
    if (!package || !core) continue;  // offline or absent
    cores.emplace(*package, *core);
  }
  if (cores.empty()) return std::nullopt;
  return static_cast<int>(cores.size());
}
#endif

int cpuinfo_core_count() {
  if (cpuinfo_initialize()) {
    const uint32_t cores = cpuinfo_get_cores_count();
    if (cores > 0) return static_cast<int>(cores);
  }
  // hardware_concurrency counts logical CPUs, the best guess left when cpuinfo cannot tell.
  const unsigned logical = std::thread::hardware_concurrency();
  return logical > 0 ? static_cast<int>(logical) : 1;
}

}  // namespace

int physical_core_count() {
  // Cached: the answer comes from /sys and cannot change in a way sessions should follow.
  static const int count = [] {
#if defined(__linux__)
    cpu_set_t allowed;
    CPU_ZERO(&allowed);
    if (sched_getaffinity(0, sizeof(allowed), &allowed) == 0) {
      if (auto cores = sysfs_core_count([&](int cpu) { return cpu < CPU_SETSIZE && CPU_ISSET(cpu, &allowed); }))
        return *cores;
    }
#endif
    return cpuinfo_core_count();
  }();
  return count;
}

int machine_physical_core_count() {
  static const int count = [] {
#if defined(__linux__)
    if (auto cores = sysfs_core_count([](int) { return true; })) return *cores;
#endif
    return cpuinfo_core_count();
  }();
  return count;
}

}  // namespace onnx_light::runtime
