#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace onnx_light::runtime {

// How long an idle pool thread (a worker with no block, or the caller waiting for the workers)
// spins before it parks on a futex. Spinning buys latency (a parked thread costs ~30 us to wake on
// this VM) with CPU time burnt while idle; bench/RESULTS.md (2026-12-06) measures the trade-off.
inline constexpr int64_t kSpinNoneMicroseconds = 0;     // park at once: every region pays a wake-up
inline constexpr int64_t kSpinShortMicroseconds = 50;   // the default: covers the gaps inside one run
// Covers the gap between back-to-back runs of a caller that does a little work between them
// (a Python loop feeding the next input takes ~20-200 us); an idle pool still sleeps within 1 ms.
inline constexpr int64_t kSpinLongMicroseconds = 1000;
// One second: a longer spin is a busy loop in all but name.
inline constexpr int64_t kSpinMaximumMicroseconds = 1000000;

// Where the pool's workers run.
enum class AffinityPolicy {
  none,            // not pinned: the scheduler places them
  physical_cores,  // worker i pinned to the first allowed CPU of the i-th allowed physical core
  cpu_list,        // worker i pinned to cpus[i % cpus.size()]
};

// Execution parameters of a session. num_threads = 0 means one thread per physical core this
// process may run on, or, with a CPU list, one per listed CPU. Pinning applies to the pool's
// workers only: the calling thread (participant 0) belongs to the application and is never
// pinned; the first CPU of the placement is left for it.
struct RuntimeParameters {
  int num_threads = 0;
  int64_t spin_microseconds = kSpinShortMicroseconds;  // 0..kSpinMaximumMicroseconds
  AffinityPolicy affinity = AffinityPolicy::none;
  std::vector<int> cpus;  // affinity == cpu_list: sorted, distinct, each allowed for this process
  RuntimeParameters() = default;
  explicit RuntimeParameters(int threads) : num_threads(threads) {}
};

// Threads a session with these parameters runs on (resolves 0 as above). Validates the parameters
// (validate_runtime_parameters), so that a bad policy is refused when the session is made.
int effective_threads(const RuntimeParameters& parameters);
// Whether the pool's idle workers spin before they park (any spin policy but none). Tuning profiles
// are matched on it as on the thread count: when workers park at once every parallel region pays a
// wake-up, and Abs's crossover moves from ~65k to ~370k elements on the development VM
// (bench/RESULTS.md, "Does the spin policy move the crossover?"); short and long agree.
inline bool idle_workers_spin(const RuntimeParameters& parameters) { return parameters.spin_microseconds > 0; }
// Throws InvalidValueError naming the field and value: num_threads < 0, a spin outside
// [0, kSpinMaximumMicroseconds], cpus given without cpu_list or missing with it, unsorted or
// repeated CPUs, or CPUs outside this process's allowed set (every such CPU is named).
void validate_runtime_parameters(const RuntimeParameters& parameters);

// "none", "short", "long" or a number of microseconds ("0" is none). Throws InvalidValueError
// naming the text.
int64_t parse_spin_policy(std::string_view text);
// "none", "short", "long", or "<n>us" for any other value.
std::string spin_policy_name(int64_t microseconds);
// "none" or "physical_cores" (a CPU list is given with parse_cpu_list). Throws InvalidValueError.
AffinityPolicy parse_affinity_policy(std::string_view text);
std::string_view affinity_policy_name(AffinityPolicy policy);
// "0-3,8" -> {0, 1, 2, 3, 8}: comma-separated CPUs and inclusive ranges, sorted and deduplicated.
// Throws InvalidValueError naming the text and the bad item (empty, not a number, a reversed
// range, beyond the largest CPU number the kernel interface takes).
std::vector<int> parse_cpu_list(std::string_view text);
// The inverse, with ranges collapsed: {0, 1, 2, 3, 8} -> "0-3,8"; {} -> "".
std::string format_cpu_list(std::span<const int> cpus);
// The CPUs this process may run on (sched_getaffinity: taskset, a cgroup cpuset), sorted; every
// CPU std::thread::hardware_concurrency() counts where the system cannot tell.
std::vector<int> allowed_cpus();
// The first allowed CPU of each allowed physical core (sysfs topology), sorted; allowed_cpus()
// when the topology cannot be read.
std::vector<int> physical_core_cpus();
// CPUs of the placement, in participant order (entry 0 is the caller's, left unpinned); empty
// when affinity is none. Validates like validate_runtime_parameters.
std::vector<int> placement_cpus(const RuntimeParameters& parameters);

// Physical cores this process may run on now, at least 1: on Linux the distinct (package, core) pairs
// of the CPUs in its affinity mask, from sysfs topology; elsewhere, or when sysfs cannot tell,
// cpuinfo's count. (cpuinfo alone is not trusted: on processors it does not know, e.g. AMD family
// 26, it counts every CPU of a package as one core.) The topology is read once; the mask on every
// call, so a narrower affinity set after start (taskset -p) is followed, as physical_core_cpus() does.
int physical_core_count();
// The same over every online CPU of the machine, whatever the affinity (host descriptors).
int machine_physical_core_count();

}  // namespace onnx_light::runtime
