#pragma once
// Records what each parallel region did, into preallocated slots claimed lock-free, so that
// profiling never allocates or blocks on the hot path. Events past capacity are counted.
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace onnx_light::runtime {

struct ParallelRegionEvent {
  std::string label;  // "<kernel> <node name>"
  int requested_threads = 0;
  int admitted_threads = 0;
  int64_t iterations = 0;
  int64_t grain = 0;
  int64_t wall_time_ns = 0;
};

struct ParallelRegionReport {
  std::vector<ParallelRegionEvent> events;
  uint64_t dropped_events = 0;
};

class ParallelRegionCollector {
 public:
  explicit ParallelRegionCollector(std::size_t capacity);
  ParallelRegionCollector(const ParallelRegionCollector&) = delete;
  ParallelRegionCollector& operator=(const ParallelRegionCollector&) = delete;

  std::size_t capacity() const { return capacity_; }
  // Thread-safe and never allocates: labels longer than the slot's buffer (96 bytes) are cut
  // there, on a UTF-8 character boundary.
  void record(std::string_view label, int requested_threads, int admitted_threads, int64_t iterations,
              int64_t grain, int64_t wall_time_ns);
  // Completed events in claim order, and the number dropped for lack of capacity.
  // Safe concurrently with record(): events still being written are left out.
  ParallelRegionReport report() const;
  // Forgets all events and the dropped count. Not safe concurrently with record().
  void clear();

 private:
  static constexpr std::size_t kLabelCapacity = 96;
  struct Slot {
    std::atomic<bool> ready{false};
    char label[kLabelCapacity];
    std::size_t label_size = 0;
    ParallelRegionEvent numbers;
  };
  std::size_t capacity_;
  std::unique_ptr<Slot[]> slots_;
  std::atomic<uint64_t> next_{0};
  std::atomic<uint64_t> dropped_{0};
};

}  // namespace onnx_light::runtime
