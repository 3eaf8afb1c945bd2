#include "onnx_light/runtime/runtime_parameters.h"

#include <cpuinfo.h>
#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <iterator>
#include <numeric>
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

namespace {

constexpr int kMaximumCpu = 1023;  // CPU_SETSIZE - 1: the largest CPU a cpu_set_t names

std::string trimmed(std::string_view text) {
  const auto begin = text.find_first_not_of(" \t");
  if (begin == std::string_view::npos) return {};
  const auto end = text.find_last_not_of(" \t");
  return std::string(text.substr(begin, end - begin + 1));
}

// Digits only (no sign, no suffix), at most `maximum`; nullopt otherwise.
std::optional<int64_t> parse_count(std::string_view text, int64_t maximum) {
  if (text.empty() || text.size() > 10) return std::nullopt;
  int64_t value = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return std::nullopt;
    value = value * 10 + (c - '0');
  }
  if (value > maximum) return std::nullopt;
  return value;
}

}  // namespace

int64_t parse_spin_policy(std::string_view text) {
  const std::string t = trimmed(text);
  if (t == "none") return kSpinNoneMicroseconds;
  if (t == "short") return kSpinShortMicroseconds;
  if (t == "long") return kSpinLongMicroseconds;
  std::string_view digits = t;
  if (digits.size() > 2 && digits.substr(digits.size() - 2) == "us") digits.remove_suffix(2);
  if (auto value = parse_count(digits, kSpinMaximumMicroseconds)) return *value;
  throw InvalidValueError(fmt::format("spin policy '{}' is not none, short ({} us), long ({} us) or a number of "
                                      "microseconds from 0 to {}",
                                      text, kSpinShortMicroseconds, kSpinLongMicroseconds, kSpinMaximumMicroseconds));
}

std::string spin_policy_name(int64_t microseconds) {
  if (microseconds == kSpinNoneMicroseconds) return "none";
  if (microseconds == kSpinShortMicroseconds) return "short";
  if (microseconds == kSpinLongMicroseconds) return "long";
  return fmt::format("{}us", microseconds);
}

AffinityPolicy parse_affinity_policy(std::string_view text) {
  const std::string t = trimmed(text);
  if (t == "none") return AffinityPolicy::none;
  if (t == "physical_cores") return AffinityPolicy::physical_cores;
  throw InvalidValueError(
      fmt::format("affinity policy '{}' is not none or physical_cores (give a CPU list with --cpus / cpus=)", text));
}

std::string_view affinity_policy_name(AffinityPolicy policy) {
  switch (policy) {
    case AffinityPolicy::none: return "none";
    case AffinityPolicy::physical_cores: return "physical_cores";
    case AffinityPolicy::cpu_list: return "cpu_list";
  }
  return "none";
}

std::vector<int> parse_cpu_list(std::string_view text) {
  std::set<int> cpus;
  const auto bad = [&](std::string_view item, std::string_view why) {
    return InvalidValueError(fmt::format("CPU list '{}': '{}' {} (expected e.g. 0-3,8)", text, item, why));
  };
  std::size_t start = 0;
  for (;;) {
    const std::size_t comma = text.find(',', start);
    const std::string item = trimmed(text.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start));
    if (item.empty()) throw bad(item, "is empty");
    const std::size_t dash = item.find('-');
    const std::string first = trimmed(std::string_view(item).substr(0, dash));
    const std::string last = dash == std::string::npos ? first : trimmed(std::string_view(item).substr(dash + 1));
    const auto low = parse_count(first, kMaximumCpu);
    const auto high = parse_count(last, kMaximumCpu);
    if (!low || !high) throw bad(item, fmt::format("is not a CPU number from 0 to {} or a range of them", kMaximumCpu));
    if (*high < *low) throw bad(item, "is a reversed range");
    for (int64_t cpu = *low; cpu <= *high; ++cpu) cpus.insert(static_cast<int>(cpu));
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return {cpus.begin(), cpus.end()};
}

std::string format_cpu_list(std::span<const int> cpus) {
  std::string out;
  for (std::size_t i = 0; i < cpus.size();) {
    std::size_t j = i;
    while (j + 1 < cpus.size() && cpus[j + 1] == cpus[j] + 1) ++j;
    if (!out.empty()) out += ',';
    out += j == i ? fmt::format("{}", cpus[i]) : fmt::format("{}-{}", cpus[i], cpus[j]);
    i = j + 1;
  }
  return out;
}

std::vector<int> allowed_cpus() {
  std::vector<int> cpus;
#if defined(__linux__)
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  if (sched_getaffinity(0, sizeof(allowed), &allowed) == 0) {
    for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu)
      if (CPU_ISSET(cpu, &allowed)) cpus.push_back(cpu);
    if (!cpus.empty()) return cpus;
  }
#endif
  const unsigned logical = std::max(1u, std::thread::hardware_concurrency());
  for (unsigned cpu = 0; cpu < logical; ++cpu) cpus.push_back(static_cast<int>(cpu));
  return cpus;
}

void validate_runtime_parameters(const RuntimeParameters& p) {
  if (p.num_threads < 0) {
    throw InvalidValueError("num_threads must be >= 0 (0 = one thread per physical core), got " +
                            std::to_string(p.num_threads));
  }
  if (p.spin_microseconds < 0 || p.spin_microseconds > kSpinMaximumMicroseconds)
    throw InvalidValueError(fmt::format("spin must be from 0 to {} microseconds, got {}", kSpinMaximumMicroseconds,
                                        p.spin_microseconds));
  if (p.affinity != AffinityPolicy::cpu_list) {
    if (!p.cpus.empty())
      throw InvalidValueError(fmt::format("cpus {} given with affinity {}: a CPU list is its own affinity policy",
                                          format_cpu_list(p.cpus), affinity_policy_name(p.affinity)));
    return;
  }
  if (p.cpus.empty()) throw InvalidValueError("affinity cpu_list needs at least one CPU");
  for (std::size_t i = 0; i < p.cpus.size(); ++i) {
    if (p.cpus[i] < 0 || p.cpus[i] > kMaximumCpu)
      throw InvalidValueError(fmt::format("CPU {} is outside 0..{}", p.cpus[i], kMaximumCpu));
    if (i > 0 && p.cpus[i] <= p.cpus[i - 1])
      throw InvalidValueError(fmt::format("cpus must be sorted and distinct, got {} after {}", p.cpus[i], p.cpus[i - 1]));
  }
  const std::vector<int> allowed = allowed_cpus();
  std::vector<int> refused;
  std::set_difference(p.cpus.begin(), p.cpus.end(), allowed.begin(), allowed.end(), std::back_inserter(refused));
  if (!refused.empty())
    throw InvalidValueError(fmt::format(
        "CPU{} {} {} not in the set this process may run on ({}; taskset or a cgroup cpuset restricts it)",
        refused.size() == 1 ? "" : "s", format_cpu_list(refused), refused.size() == 1 ? "is" : "are",
        format_cpu_list(allowed)));
}

int effective_threads(const RuntimeParameters& parameters) {
  validate_runtime_parameters(parameters);
  if (parameters.num_threads > 0) return parameters.num_threads;
  if (parameters.affinity == AffinityPolicy::cpu_list) return static_cast<int>(parameters.cpus.size());
  return physical_core_count();
}

namespace {

#if defined(__linux__)
std::optional<long> read_topology_value(int cpu, const char* field) {
  std::ifstream in("/sys/devices/system/cpu/cpu" + std::to_string(cpu) + "/topology/" + field);
  long value = 0;
  if (!(in >> value)) return std::nullopt;
  return value;
}

using CoreId = std::pair<long, long>;  // (physical package, core)

// Per CPU number, its core; nullopt when offline or sysfs cannot tell. Read once: the topology does
// not change under a process, while the set of CPUs it may use can (taskset), so that is asked anew.
const std::vector<std::optional<CoreId>>& cpu_cores() {
  static const std::vector<std::optional<CoreId>> cores = [] {
    const long configured = std::max<long>(sysconf(_SC_NPROCESSORS_CONF), std::thread::hardware_concurrency());
    std::vector<std::optional<CoreId>> table(static_cast<std::size_t>(std::max<long>(configured, 0)));
    for (std::size_t cpu = 0; cpu < table.size(); ++cpu) {
      const auto package = read_topology_value(static_cast<int>(cpu), "physical_package_id");
      const auto core = read_topology_value(static_cast<int>(cpu), "core_id");
      if (package && core) table[cpu] = CoreId{*package, *core};
    }
    return table;
  }();
  return cores;
}

std::optional<CoreId> core_of(int cpu) {
  const auto& cores = cpu_cores();
  if (cpu < 0 || static_cast<std::size_t>(cpu) >= cores.size()) return std::nullopt;
  return cores[static_cast<std::size_t>(cpu)];
}

// Distinct cores of `cpus`, skipping CPUs sysfs cannot place; nullopt when it places none.
std::optional<int> sysfs_core_count(const std::vector<int>& cpus) {
  std::set<CoreId> distinct;
  for (int cpu : cpus)
    if (const auto core = core_of(cpu)) distinct.insert(*core);
  if (distinct.empty()) return std::nullopt;
  return static_cast<int>(distinct.size());
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

std::vector<int> physical_core_cpus() {
  const std::vector<int> allowed = allowed_cpus();
#if defined(__linux__)
  std::set<CoreId> seen;
  std::vector<int> first;
  for (int cpu : allowed) {
    const auto core = core_of(cpu);
    if (!core) return allowed;  // cannot tell siblings apart
    if (seen.insert(*core).second) first.push_back(cpu);
  }
  if (!first.empty()) return first;
#endif
  return allowed;
}

std::vector<int> placement_cpus(const RuntimeParameters& parameters) {
  validate_runtime_parameters(parameters);
  switch (parameters.affinity) {
    case AffinityPolicy::none: return {};
    case AffinityPolicy::physical_cores: return physical_core_cpus();
    case AffinityPolicy::cpu_list: return parameters.cpus;
  }
  return {};
}

int physical_core_count() {
#if defined(__linux__)
  if (auto cores = sysfs_core_count(allowed_cpus())) return *cores;
#endif
  return cpuinfo_core_count();
}

int machine_physical_core_count() {
#if defined(__linux__)
  std::vector<int> every(cpu_cores().size());
  std::iota(every.begin(), every.end(), 0);
  if (auto cores = sysfs_core_count(every)) return *cores;
#endif
  return cpuinfo_core_count();
}

}  // namespace onnx_light::runtime
