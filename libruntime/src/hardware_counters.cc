#include "onnx_light/runtime/hardware_counters.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <utility>

#include <fmt/format.h>

#if defined(__linux__)
#include <linux/perf_event.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace onnx_light::runtime {

namespace {

constexpr std::array<std::string_view, kCounterCount> kNames = {
    "cycles", "instructions", "llc_misses", "task_clock_ns", "context_switches", "cpu_migrations", "page_faults"};

int perf_event_paranoid() {
  std::ifstream in("/proc/sys/kernel/perf_event_paranoid");
  int value = -1;
  if (!(in >> value)) return -1;
  return value;
}

bool pmu_present() {
  std::error_code ignored;
  return std::filesystem::exists("/sys/bus/event_source/devices/cpu", ignored) ||
         std::filesystem::exists("/sys/bus/event_source/devices/cpu_core", ignored);  // hybrid Intel
}

}  // namespace

std::string_view counter_name(Counter counter) { return kNames[static_cast<std::size_t>(counter)]; }

bool is_hardware_counter(Counter counter) {
  return counter == Counter::cycles || counter == Counter::instructions || counter == Counter::llc_misses;
}

std::string counter_refusal_reason(Counter counter, int error, bool pmu, int paranoid) {
  const std::string paranoid_text =
      paranoid < 0 ? "perf_event_paranoid could not be read" : fmt::format("perf_event_paranoid is {}", paranoid);
  switch (error) {
    case ENOENT:
    case EOPNOTSUPP:
    case ENODEV:
      if (is_hardware_counter(counter) && !pmu)
        return "no hardware PMU (/sys/bus/event_source/devices/cpu is absent: a virtual machine without a virtual "
               "PMU, or a kernel without the CPU's perf driver)";
      return fmt::format("this machine's perf events do not provide it ({})", std::strerror(error));
    case ENOSYS:
      return "perf_event_open is not available (a kernel built without perf events)";
    case EACCES:
    case EPERM:
      return fmt::format("not permitted: {} (counting one's own threads needs <= 2, or CAP_PERFMON), or a seccomp "
                         "filter blocks perf_event_open (container runtimes' default profiles do)",
                         paranoid_text);
    case EMFILE:
    case ENFILE:
      return "no file descriptors left (raise `ulimit -n`)";
    default:
      return fmt::format("perf_event_open failed: {}", std::strerror(error));
  }
}

CounterOpener system_counter_opener() {
  return [](Counter counter, int tid, int group_fd, bool exclude_kernel) -> int {
#if defined(__linux__)
    perf_event_attr attr;
    std::memset(&attr, 0, sizeof(attr));
    attr.size = sizeof(attr);
    switch (counter) {
      case Counter::cycles: attr.type = PERF_TYPE_HARDWARE; attr.config = PERF_COUNT_HW_CPU_CYCLES; break;
      case Counter::instructions: attr.type = PERF_TYPE_HARDWARE; attr.config = PERF_COUNT_HW_INSTRUCTIONS; break;
      case Counter::llc_misses: attr.type = PERF_TYPE_HARDWARE; attr.config = PERF_COUNT_HW_CACHE_MISSES; break;
      case Counter::task_clock_ns: attr.type = PERF_TYPE_SOFTWARE; attr.config = PERF_COUNT_SW_TASK_CLOCK; break;
      case Counter::context_switches: attr.type = PERF_TYPE_SOFTWARE; attr.config = PERF_COUNT_SW_CONTEXT_SWITCHES; break;
      case Counter::cpu_migrations: attr.type = PERF_TYPE_SOFTWARE; attr.config = PERF_COUNT_SW_CPU_MIGRATIONS; break;
      case Counter::page_faults: attr.type = PERF_TYPE_SOFTWARE; attr.config = PERF_COUNT_SW_PAGE_FAULTS; break;
    }
    attr.read_format = PERF_FORMAT_GROUP | PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING;
    attr.exclude_kernel = exclude_kernel ? 1 : 0;
    attr.exclude_hv = 1;
    const long fd = syscall(SYS_perf_event_open, &attr, static_cast<pid_t>(tid), -1, group_fd, PERF_FLAG_FD_CLOEXEC);
    return fd >= 0 ? static_cast<int>(fd) : -errno;
#else
    (void)counter;
    (void)tid;
    (void)group_fd;
    (void)exclude_kernel;
    return -ENOSYS;
#endif
  };
}

ThreadCounters::ThreadCounters(int tid, const CounterOpener& opener) : tid_(tid) {
  const bool pmu = pmu_present();
  const int paranoid = perf_event_paranoid();
  status_.reserve(kCounterCount);
  for (std::size_t i = 0; i < kCounterCount; ++i) {
    const auto counter = static_cast<Counter>(i);
    CounterStatus status;
    status.counter = counter;
    status.name = std::string(counter_name(counter));
    // Kernel-side counts first (context switches and page faults happen there); user space only
    // when the paranoid level refuses them.
    int fd = opener(counter, tid, leader_fd_, /*exclude_kernel=*/false);
    if (fd == -EACCES || fd == -EPERM) {
      const int user_only = opener(counter, tid, leader_fd_, /*exclude_kernel=*/true);
      if (user_only >= 0) {
        fd = user_only;
        status.user_space_only = true;
        status.reason = fmt::format("user space only ({}: the kernel's share is not counted)",
                                    paranoid < 0 ? "perf_event_paranoid unreadable"
                                                 : fmt::format("perf_event_paranoid is {}", paranoid));
      }
    }
    if (fd >= 0) {
      status.available = true;
      if (leader_fd_ < 0) leader_fd_ = fd;
      fds_.push_back(fd);
      slot_of_fd_.push_back(i);
    } else {
      status.reason = counter_refusal_reason(counter, -fd, pmu, paranoid);
    }
    status_.push_back(std::move(status));
  }
}

ThreadCounters::~ThreadCounters() { close_all(); }

ThreadCounters::ThreadCounters(ThreadCounters&& other) noexcept
    : tid_(other.tid_),
      leader_fd_(std::exchange(other.leader_fd_, -1)),
      fds_(std::move(other.fds_)),
      slot_of_fd_(std::move(other.slot_of_fd_)),
      status_(std::move(other.status_)) {
  other.fds_.clear();
}

ThreadCounters& ThreadCounters::operator=(ThreadCounters&& other) noexcept {
  if (this != &other) {
    close_all();
    tid_ = other.tid_;
    leader_fd_ = std::exchange(other.leader_fd_, -1);
    fds_ = std::move(other.fds_);
    other.fds_.clear();
    slot_of_fd_ = std::move(other.slot_of_fd_);
    status_ = std::move(other.status_);
  }
  return *this;
}

void ThreadCounters::close_all() noexcept {
#if defined(__linux__)
  for (int fd : fds_) ::close(fd);
#endif
  fds_.clear();
  leader_fd_ = -1;
}

void ThreadCounters::add_to(CounterValues& sum) const {
#if defined(__linux__)
  if (leader_fd_ < 0) return;
  // PERF_FORMAT_GROUP | TOTAL_TIME_ENABLED | TOTAL_TIME_RUNNING: nr, enabled, running, values[nr].
  std::array<uint64_t, 3 + kCounterCount> buffer{};
  const ssize_t got = ::read(leader_fd_, buffer.data(), sizeof(buffer));
  if (got < static_cast<ssize_t>(3 * sizeof(uint64_t))) return;
  const uint64_t members = std::min<uint64_t>(buffer[0], slot_of_fd_.size());
  if (static_cast<std::size_t>(got) < (3 + members) * sizeof(uint64_t)) return;
  const uint64_t enabled = buffer[1], running = buffer[2];
  for (uint64_t m = 0; m < members; ++m) {
    uint64_t value = buffer[3 + m];
    // Multiplexed (more hardware events than PMU counters): the usual linear extrapolation.
    if (running > 0 && running < enabled)
      value = static_cast<uint64_t>(static_cast<double>(value) * static_cast<double>(enabled) / static_cast<double>(running));
    sum[slot_of_fd_[m]] += value;
  }
#else
  (void)sum;
#endif
}

int current_thread_id() {
#if defined(__linux__)
  return static_cast<int>(::syscall(SYS_gettid));
#else
  return 0;
#endif
}

}  // namespace onnx_light::runtime
