#include "onnx_light/runtime/parallel_region_collector.h"

#include <algorithm>
#include <cstring>

namespace onnx_light::runtime {

// Every slot (label buffer included) is allocated and touched here, so that record() never
// allocates and never faults a fresh page in the middle of a timed region.
ParallelRegionCollector::ParallelRegionCollector(std::size_t capacity)
    : capacity_(capacity), slots_(std::make_unique<Slot[]>(capacity)) {}

void ParallelRegionCollector::record(std::string_view label, int requested_threads, int admitted_threads,
                                     int64_t iterations, int64_t grain, int64_t wall_time_ns) {
  // One fetch_add claims a slot, so concurrent recorders never contend on a lock.
  const uint64_t index = next_.fetch_add(1, std::memory_order_relaxed);
  if (index >= capacity_) {
    dropped_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  Slot& slot = slots_[index];
  std::size_t size = std::min(label.size(), kLabelCapacity);
  // Cut on a UTF-8 character boundary so that a truncated node name stays valid text.
  if (size < label.size()) {
    while (size > 0 && (static_cast<unsigned char>(label[size]) & 0xC0u) == 0x80u) --size;
  }
  std::memcpy(slot.label, label.data(), size);
  slot.label_size = size;
  slot.numbers.requested_threads = requested_threads;
  slot.numbers.admitted_threads = admitted_threads;
  slot.numbers.iterations = iterations;
  slot.numbers.grain = grain;
  slot.numbers.wall_time_ns = wall_time_ns;
  // Publishes the fields above to report(), which acquires `ready`.
  slot.ready.store(true, std::memory_order_release);
}

ParallelRegionReport ParallelRegionCollector::report() const {
  ParallelRegionReport report;
  const auto claimed = static_cast<std::size_t>(std::min<uint64_t>(next_.load(std::memory_order_acquire), capacity_));
  report.events.reserve(claimed);
  for (std::size_t i = 0; i < claimed; ++i) {
    const Slot& slot = slots_[i];
    // A slot claimed but still being written is left out rather than read half-done.
    if (!slot.ready.load(std::memory_order_acquire)) continue;
    ParallelRegionEvent event = slot.numbers;
    event.label.assign(slot.label, slot.label_size);
    report.events.push_back(std::move(event));
  }
  report.dropped_events = dropped_.load(std::memory_order_relaxed);
  return report;
}

// Not safe concurrently with record() (a recorder could be filling a slot being reset); call it
// between runs. Concurrent report() calls see either the old events or none.
void ParallelRegionCollector::clear() {
  const auto claimed = static_cast<std::size_t>(std::min<uint64_t>(next_.load(std::memory_order_relaxed), capacity_));
  for (std::size_t i = 0; i < claimed; ++i) slots_[i].ready.store(false, std::memory_order_relaxed);
  dropped_.store(0, std::memory_order_relaxed);
  next_.store(0, std::memory_order_release);
}

}  // namespace onnx_light::runtime
