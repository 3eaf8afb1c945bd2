// Spin policy trade-off (issue 22): per-run latency of a small model run again after a gap, and the
// CPU time the process burns per cycle (gap + run) while the caller sleeps through the gap: pool
// workers spinning before they park, and their wake-ups. One spin policy per process.
//
//   spin_policy_bench --spin none|short|long|<us> [--threads 2] [--runs 1000] [--gaps 0,100,500,2000]
//                     [--elements 65536]
//
// The model is four element-wise nodes (Abs, Neg, Abs, Neg) over --elements floats: each is a
// parallel region at 2 threads, and a run takes tens of microseconds, like a small network's.
// Prints one TSV row per gap: spin, spin_us, threads, gap_us (asked), gap_wall_us (median slept),
// runs, run_us median and p90, cycle_us (wall per gap + run), cpu_us (process CPU per cycle, every
// thread) and worker_cpu_us (the same minus the calling thread's: what the pool burns per cycle).
// CPU time comes from CLOCK_PROCESS_CPUTIME_ID over the whole loop, read with the pool parked: the
// kernel adds a running thread's time only at a tick or a switch, so a per-gap reading would miss a
// worker still spinning. Not a Google Benchmark: its second figure is CPU time, not a time to
// minimize alone. Repeat across processes (bench/RESULTS.md): on a shared VM one process differs
// from the next.
#include <time.h>

#include <algorithm>
#include <chrono>
#include <iostream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "onnx_light/runtime/calibration_workload.h"
#include "onnx_light/runtime/error.h"
#include "onnx_light/runtime/model.h"
#include "onnx_light/runtime/session.h"

namespace {

using namespace onnx_light::runtime;

int64_t cpu_clock_ns(clockid_t clock) {
  timespec ts{};
  clock_gettime(clock, &ts);
  return int64_t{ts.tv_sec} * 1000000000 + ts.tv_nsec;
}
int64_t process_cpu_ns() { return cpu_clock_ns(CLOCK_PROCESS_CPUTIME_ID); }
int64_t thread_cpu_ns() { return cpu_clock_ns(CLOCK_THREAD_CPUTIME_ID); }

double quantile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const auto k = static_cast<std::size_t>(q * static_cast<double>(v.size() - 1) + 0.5);
  return v[std::min(k, v.size() - 1)];
}

std::vector<int64_t> parse_gaps(const std::string& text) {
  std::vector<int64_t> gaps;
  std::stringstream in(text);
  for (std::string item; std::getline(in, item, ',');) gaps.push_back(std::stoll(item));
  return gaps;
}

}  // namespace

int main(int argc, char** argv) {
  std::string spin = "short";
  int threads = 2;
  int runs = 1000;
  int64_t elements = 65536;
  std::string gaps_text = "0,100,500,2000";
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    const std::string value = argv[i + 1];
    if (flag == "--spin") spin = value;
    else if (flag == "--threads") threads = std::stoi(value);
    else if (flag == "--runs") runs = std::stoi(value);
    else if (flag == "--gaps") gaps_text = value;
    else if (flag == "--elements") elements = std::stoll(value);
    else {
      std::cerr << "spin_policy_bench: unknown flag " << flag << "\n";
      return 2;
    }
  }
  try {
    const Model model = parse_model_text(
        "<ir_version: 10, opset_import: [\"\" : 18]>\n"
        "agraph (float[N] x) => (float[N] y) {\n"
        "  a = Abs(x)\n  b = Neg(a)\n  c = Abs(b)\n  y = Neg(c)\n}\n",
        "spin_policy_bench");
    RuntimeSessionOptions options;
    options.parameters = RuntimeParameters(threads);
    options.parameters.spin_microseconds = parse_spin_policy(spin);
    RuntimeSession session(model, options);
    const std::vector<Tensor> inputs{random_tensor(ElementType::float32, Shape{elements}, 7)};
    std::vector<Tensor> outputs(1);
    for (int i = 0; i < 50; ++i) session.run(inputs, outputs);  // warm caches, pool, clocks

    // Settles the pool: workers spin out their budget and park, so that their CPU time is
    // accounted (the kernel adds a running thread's time to the process clock only at a tick or a
    // switch, so a worker still spinning would be missing from a reading).
    const auto settle = [&] {
      std::this_thread::sleep_for(std::chrono::microseconds(options.parameters.spin_microseconds) +
                                  std::chrono::milliseconds(20));
    };
    for (const int64_t gap_us : parse_gaps(gaps_text)) {
      std::vector<double> run_us, gap_wall_us;
      settle();
      const int64_t process0 = process_cpu_ns();
      const int64_t caller0 = thread_cpu_ns();
      const auto loop0 = std::chrono::steady_clock::now();
      for (int r = 0; r < runs; ++r) {
        if (gap_us > 0) {
          const auto wall0 = std::chrono::steady_clock::now();
          std::this_thread::sleep_for(std::chrono::microseconds(gap_us));
          gap_wall_us.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - wall0).count());
        }
        const auto start = std::chrono::steady_clock::now();
        session.run(inputs, outputs);
        run_us.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count());
      }
      const double loop_us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - loop0).count();
      const int64_t caller1 = thread_cpu_ns();
      settle();  // the last run's spin is counted once; its budget over `runs` cycles is noise
      const int64_t process1 = process_cpu_ns();
      const double cycles = runs;
      const double cpu_us = static_cast<double>(process1 - process0) / 1000.0 / cycles;
      const double worker_us = static_cast<double>((process1 - process0) - (caller1 - caller0)) / 1000.0 / cycles;
      std::cout << fmt::format("{}\t{}\t{}\t{}\t{:.0f}\t{}\t{:.1f}\t{:.1f}\t{:.1f}\t{:.1f}\t{:.1f}\n",
                               spin_policy_name(options.parameters.spin_microseconds),
                               options.parameters.spin_microseconds, threads, gap_us, quantile(gap_wall_us, 0.5), runs,
                               quantile(run_us, 0.5), quantile(run_us, 0.9), loop_us / cycles, cpu_us, worker_us)
                << std::flush;
    }
  } catch (const onnx_light::Error& e) {
    std::cerr << "spin_policy_bench: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
