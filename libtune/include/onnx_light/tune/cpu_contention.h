#pragma once
// How much of the machine other processes took while a calibration measured. A parallel threshold
// measured while another process holds a core describes that loaded moment, not the machine: with
// one busy loop beside it on this 2-vCPU VM, ten runs of `calibrate Abs` picked anything from
// 65536 to 4194304 elements, some of them with high confidence. So a contended window caps the
// confidence at low (not saved unless forced) and the report names the load it saw.
//
// Two gauges: the machine's busy time less our own (/proc/stat, 10 ms ticks: judged over 50 ms
// and more), and the time our own threads spent runnable but waiting for a CPU (the scheduler's
// run delay, /proc/self/task/*/schedstat, in nanoseconds: judged over any window, so a short
// search is judged too). Steal by the hypervisor shows in the first only.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace onnx_light::tune {

// Cumulative CPU accounting at one instant.
struct CpuTimes {
  int64_t wall_ns = 0;          // monotonic
  int64_t machine_busy_ns = 0;  // every CPU's non-idle time, steal included (the hypervisor ran someone else)
  int64_t self_ns = 0;          // this process's user + system time, all its threads
  int64_t cpus = 0;             // CPUs the machine time is summed over
  int64_t self_wait_ns = -1;    // this process's threads' time runnable but not running; -1: unknown
};

// This machine now (Linux: /proc/stat and getrusage); nullopt where that accounting is unavailable.
std::optional<CpuTimes> sample_cpu_times();

// The busy time, steal included, of /proc/stat's aggregate "cpu" line, in clock ticks; nullopt when
// the text has no such line or it is malformed.
std::optional<int64_t> busy_ticks_from_proc_stat(std::string_view text);

// The run delay (second field, nanoseconds) of a /proc/<pid>/task/<tid>/schedstat line
// ("exec_ns run_delay_ns timeslices"); nullopt when malformed.
std::optional<int64_t> run_delay_from_schedstat(std::string_view text);

struct CpuContention {
  std::optional<double> other_cpus;  // average CPUs other processes (or steal) kept busy; none under 50 ms
  double window_ms = 0;
  int64_t cpus = 0;
  std::optional<double> waiting_threads;  // average of our threads runnable but not running; none: unknown
};

// Windows shorter than this are not judged: /proc/stat counts in 10 ms ticks, so over 50 ms on 2
// CPUs one tick is 0.1 CPU of error.
inline constexpr int64_t kMinimumContentionWindowNs = 50'000'000;

// Our threads waiting this much for a CPU on average mean the scheduler is sharing our CPUs with
// someone: see kWaitingThreadsLimit's measurements in bench/RESULTS.md.
inline constexpr double kWaitingThreadsLimit = 0.25;

// The load of other processes between two samples; nullopt when neither gauge can judge the window.
std::optional<CpuContention> contention_between(const CpuTimes& before, const CpuTimes& after);

// A window is contended when other processes left fewer CPUs than the sessions' threads (at most
// one per CPU) by half a CPU or more on average: on 2 CPUs with 2 threads, 0.5 CPU taken (idle
// windows here measure 0-0.15 CPU; one busy loop 0.7-1.0); or when our threads waited for a CPU
// kWaitingThreadsLimit threads' worth of the window or more.
bool contended(const CpuContention& c, int64_t threads);

// The load in words for reports: "other processes kept 1.02 of 2 CPUs busy and its threads waited
// for a CPU 0.41 thread-seconds per second, over 230 ms" (each part only when measured).
std::string describe_load(const CpuContention& c);

}  // namespace onnx_light::tune
