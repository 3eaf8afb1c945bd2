#pragma once
// Per-thread event counters for the profiler (`run --profile --counters`), through Linux's
// perf_event_open: hardware events (cycles, instructions, last-level cache misses) where the
// machine exposes a PMU, and the kernel's software events (task clock, context switches, CPU
// migrations, page faults) everywhere perf events exist. A counter the system refuses is reported
// with the reason (no PMU, perf_event_paranoid, seccomp); counting never fails a run, and a
// session that does not ask for counters opens nothing.
#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace onnx_light::runtime {

enum class Counter : uint8_t {
  cycles,
  instructions,
  llc_misses,
  task_clock_ns,
  context_switches,
  cpu_migrations,
  page_faults,
};
inline constexpr std::size_t kCounterCount = 7;

// "cycles", "instructions", "llc_misses", "task_clock_ns", "context_switches", "cpu_migrations",
// "page_faults": the keys of --json and Python.
std::string_view counter_name(Counter counter);
// Hardware counters need a PMU; software ones only the kernel's perf events.
bool is_hardware_counter(Counter counter);

struct CounterStatus {
  Counter counter = Counter::cycles;
  std::string name;
  bool available = false;
  // Granted only for user space (perf_event_paranoid refused kernel-side counting): time and
  // events spent in the kernel on the thread's behalf are not in the count.
  bool user_space_only = false;
  std::string reason;  // why it is unavailable, or the user-space-only note; empty otherwise
};

// Counts by Counter (index = enum value); an unavailable counter stays 0.
using CounterValues = std::array<uint64_t, kCounterCount>;

// Opens one counter on one thread: returns a file descriptor, or -errno. The default is the
// system call; tests substitute refusals to check the reasons.
using CounterOpener = std::function<int(Counter counter, int tid, int group_fd, bool exclude_kernel)>;
CounterOpener system_counter_opener();

// Why the system refused `counter` with `error` (an errno), in words an operator can act on.
// `pmu_present`: /sys/bus/event_source/devices/cpu exists; `paranoid`: perf_event_paranoid (or -1
// when unreadable).
std::string counter_refusal_reason(Counter counter, int error, bool pmu_present, int paranoid);

// Every counter of one thread, opened as one perf group so that one read() returns them all.
class ThreadCounters {
 public:
  // tid 0 is the calling thread. Never throws for a refused counter: status() says why.
  explicit ThreadCounters(int tid, const CounterOpener& opener = system_counter_opener());
  ~ThreadCounters();
  ThreadCounters(ThreadCounters&& other) noexcept;
  ThreadCounters& operator=(ThreadCounters&& other) noexcept;
  ThreadCounters(const ThreadCounters&) = delete;
  ThreadCounters& operator=(const ThreadCounters&) = delete;

  int tid() const { return tid_; }
  // One per Counter, in enum order.
  const std::vector<CounterStatus>& status() const { return status_; }
  bool any_available() const { return leader_fd_ >= 0; }
  // Adds the counts since opening to `sum` (scaled up when the kernel multiplexed the group).
  // One read(), no allocation; a failed read adds nothing.
  void add_to(CounterValues& sum) const;

 private:
  void close_all() noexcept;

  int tid_ = 0;
  int leader_fd_ = -1;
  std::vector<int> fds_;                 // every open descriptor, leader first
  std::vector<std::size_t> slot_of_fd_;  // the Counter index each group member fills, in group order
  std::vector<CounterStatus> status_;
};

// The calling thread's kernel thread id (what ThreadCounters and /proc/self/task call a tid).
int current_thread_id();

}  // namespace onnx_light::runtime
