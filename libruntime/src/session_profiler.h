#pragma once
// The recorder behind RuntimeSessionOptions::profile. A session owns one only when profiling is
// on; its run loop then reads the clock around every step and its parallel regions around every
// block. Everything is preallocated when the session is built, so recording does not allocate
// once shapes and implementation names repeat.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "onnx_light/runtime/hardware_counters.h"
#include "onnx_light/runtime/kernel.h"
#include "onnx_light/runtime/session_profile.h"

namespace onnx_light::runtime {

class SessionProfiler {
 public:
  // What the session knows about one step of its run loop.
  struct Step {
    std::string node;
    std::string label;
    std::string op_type;
    std::string domain;
    std::string implementation;  // the kernel definition's
  };

  SessionProfiler(std::vector<Step> steps, std::size_t event_capacity);

  static int64_t now_ns() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
  }

  // Per-node counters from here on: the calling thread of each run over the node, and each pool
  // worker over the blocks it runs for the node (worker_tids[i - 1] is pool thread i). Each
  // thread reads only its own counters: reading another thread's while it runs on another CPU
  // costs an inter-processor interrupt. Opened now, so a session without counters opens nothing.
  void enable_counters(const std::vector<int>& worker_tids, CounterOpener opener);
  bool counting() const { return counting_; }
  // From pool thread `tid` (>= 1) around a block of `step`: its counts before the block, then the
  // block's share added to the step. Thread-safe and allocation-free.
  void read_worker_counters(int tid, CounterValues& out) const;
  void add_worker_block(std::size_t step, int tid, const CounterValues& before);

  void begin_run();
  // A run whose every step completed; a failed run's completed steps stay counted.
  void end_run();
  // Around one step's kernel: begin_step records its input shapes (before a kernel or the
  // session could release them) and returns the start time to hand to end_step.
  int64_t begin_step(std::size_t step, const KernelExecution& execution);
  void end_step(std::size_t step, int64_t begin_ns, std::string_view variant);
  // From the thread that opened the region (the session's caller).
  void record_region(std::size_t step, int admitted, int64_t begin_ns, int64_t end_ns);
  // A region counted without a trace event (one block, run inline).
  void count_region(std::size_t step, int admitted) {
    ++steps_[step].regions;
    steps_[step].threads += static_cast<uint64_t>(admitted);
  }
  // From the thread that runs the step, before its regions open.
  void note_threshold_work(std::size_t step, int64_t work) {
    steps_[step].threshold_work = std::max(steps_[step].threshold_work, work);
  }
  // From any thread running a block; thread-safe and lock-free.
  void record_block(std::size_t step, int tid, int64_t begin_ns, int64_t end_ns);

  // Not concurrent with a run.
  SessionProfile profile() const;
  void reset();

 private:
  struct Accumulator {
    Step info;
    std::string variant;  // Kernel::variant() of the last call; empty: the definition's
    std::vector<std::optional<Shape>> input_shapes;
    uint64_t calls = 0;
    int64_t total_ns = 0;
    uint64_t regions = 0;
    uint64_t threads = 0;
    int64_t threshold_work = -1;  // of the last call
    CounterValues counters{};
  };
  struct RawEvent {
    TraceEvent::Kind kind;
    int tid;
    int threads;
    uint32_t step;
    uint64_t run;
    int64_t begin_ns;
    int64_t end_ns;
  };
  void push(const RawEvent& event);
  // This run's caller's counts so far.
  void read_caller_counters(CounterValues& out) const;

  std::vector<Accumulator> steps_;
  std::size_t capacity_;
  std::unique_ptr<RawEvent[]> events_;
  std::atomic<uint64_t> next_event_{0};
  std::atomic<uint64_t> dropped_{0};
  int64_t origin_ns_ = 0;
  int64_t run_begin_ns_ = 0;
  uint64_t runs_ = 0;
  int64_t runs_ns_ = 0;
  bool counting_ = false;
  CounterOpener opener_;
  std::vector<ThreadCounters> worker_counters_;
  std::vector<ThreadCounters> caller_counters_;  // one per thread that ran the session
  const ThreadCounters* caller_ = nullptr;       // this run's
  std::vector<CounterStatus> counter_status_;
  CounterValues step_begin_counters_{};
  // Workers' block counts per step and counter (steps x kCounterCount), added concurrently.
  std::unique_ptr<std::atomic<uint64_t>[]> worker_counts_;
};

}  // namespace onnx_light::runtime
