#include "onnx_light/tune/cpu_contention.h"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include <fmt/format.h>

#if defined(__linux__)
#include <sys/resource.h>
#include <unistd.h>
#endif

namespace onnx_light::tune {

std::optional<int64_t> busy_ticks_from_proc_stat(std::string_view text) {
  // "cpu  user nice system idle iowait irq softirq steal guest guest_nice": guest time is already
  // inside user and nice, so it is not added again.
  const std::string_view prefix = "cpu ";
  if (text.substr(0, prefix.size()) != prefix) return std::nullopt;
  std::string_view rest = text.substr(prefix.size());
  int64_t fields[8] = {};
  int count = 0;
  while (count < 8) {
    const auto start = rest.find_first_not_of(' ');
    if (start == std::string_view::npos) break;
    rest.remove_prefix(start);
    if (rest.front() == '\n') break;
    int64_t value = 0;
    const auto [end, error] = std::from_chars(rest.data(), rest.data() + rest.size(), value);
    if (error != std::errc() || value < 0) return std::nullopt;
    fields[count++] = value;
    rest.remove_prefix(static_cast<std::size_t>(end - rest.data()));
  }
  if (count < 4) return std::nullopt;  // user nice system idle at least (kernels before 2.6 had 4)
  const int64_t idle_index = 3, iowait_index = 4;
  int64_t busy = 0;
  for (int i = 0; i < count; ++i)
    if (i != idle_index && i != iowait_index) busy += fields[i];
  return busy;
}

std::optional<int64_t> run_delay_from_schedstat(std::string_view text) {
  int64_t fields[2] = {};
  for (int64_t& field : fields) {
    const auto start = text.find_first_not_of(' ');
    if (start == std::string_view::npos) return std::nullopt;
    text.remove_prefix(start);
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), field);
    if (error != std::errc() || field < 0) return std::nullopt;
    text.remove_prefix(static_cast<std::size_t>(end - text.data()));
    if (!text.empty() && text.front() != ' ' && text.front() != '\n') return std::nullopt;
  }
  return fields[1];
}

namespace {

// The run delay summed over this process's threads now; -1 when the kernel does not keep it
// (CONFIG_SCHED_INFO off). A thread that exits in between just drops out of the sum.
int64_t own_run_delay_ns() {
#if defined(__linux__)
  std::error_code error;
  int64_t total = 0;
  bool any = false;
  for (std::filesystem::directory_iterator it("/proc/self/task", error), end; !error && it != end; it.increment(error)) {
    std::ifstream file(it->path() / "schedstat");
    std::string line;
    if (!file || !std::getline(file, line)) continue;
    if (const auto delay = run_delay_from_schedstat(line)) {
      total += *delay;
      any = true;
    }
  }
  return any ? total : -1;
#else
  return -1;
#endif
}

}  // namespace

std::optional<CpuTimes> sample_cpu_times() {
#if defined(__linux__)
  std::ifstream stat("/proc/stat");
  std::string line;
  if (!stat || !std::getline(stat, line)) return std::nullopt;
  const auto busy = busy_ticks_from_proc_stat(line);
  const long ticks_per_second = ::sysconf(_SC_CLK_TCK);
  const long cpus = ::sysconf(_SC_NPROCESSORS_ONLN);
  rusage usage{};
  if (!busy || ticks_per_second <= 0 || cpus <= 0 || ::getrusage(RUSAGE_SELF, &usage) != 0) return std::nullopt;
  auto ns = [](const timeval& t) { return int64_t{t.tv_sec} * 1'000'000'000 + int64_t{t.tv_usec} * 1000; };
  CpuTimes t;
  t.wall_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch()).count();
  t.machine_busy_ns = *busy * (1'000'000'000 / ticks_per_second);
  t.self_ns = ns(usage.ru_utime) + ns(usage.ru_stime);
  t.cpus = cpus;
  t.self_wait_ns = own_run_delay_ns();
  return t;
#else
  return std::nullopt;
#endif
}

std::optional<CpuContention> contention_between(const CpuTimes& before, const CpuTimes& after) {
  const int64_t window = after.wall_ns - before.wall_ns;
  if (window <= 0 || after.cpus <= 0) return std::nullopt;
  CpuContention c;
  if (window >= kMinimumContentionWindowNs) {
    const int64_t others = (after.machine_busy_ns - before.machine_busy_ns) - (after.self_ns - before.self_ns);
    // Tick rounding can make the difference slightly negative on an idle machine.
    c.other_cpus = std::clamp(static_cast<double>(others) / static_cast<double>(window), 0.0, static_cast<double>(after.cpus));
  }
  // A thread that exited took its delay with it: a sum that shrank is unknown, not negative.
  if (before.self_wait_ns >= 0 && after.self_wait_ns >= before.self_wait_ns)
    c.waiting_threads = static_cast<double>(after.self_wait_ns - before.self_wait_ns) / static_cast<double>(window);
  if (!c.other_cpus && !c.waiting_threads) return std::nullopt;
  c.window_ms = static_cast<double>(window) / 1e6;
  c.cpus = after.cpus;
  return c;
}

bool contended(const CpuContention& c, int64_t threads) {
  const int64_t wanted = std::clamp<int64_t>(threads, 1, std::max<int64_t>(1, c.cpus));
  return (c.other_cpus && static_cast<double>(c.cpus) - *c.other_cpus < static_cast<double>(wanted) - 0.5) ||
         (c.waiting_threads && *c.waiting_threads >= kWaitingThreadsLimit);
}

std::string describe_load(const CpuContention& c) {
  std::string text;
  if (c.other_cpus) text = fmt::format("other processes kept {:.2f} of {} CPUs busy", *c.other_cpus, c.cpus);
  if (c.waiting_threads)
    text += fmt::format("{}its threads waited for a CPU {:.2f} thread-seconds per second", text.empty() ? "" : " and ", *c.waiting_threads);
  return text + fmt::format(", over {:.0f} ms", c.window_ms);
}

}  // namespace onnx_light::tune
