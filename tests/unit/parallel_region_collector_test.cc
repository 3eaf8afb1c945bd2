#include <doctest/doctest.h>

#include <atomic>
#include <cstdint>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "onnx_light/runtime/parallel_region_collector.h"

using onnx_light::runtime::ParallelRegionCollector;
using onnx_light::runtime::ParallelRegionEvent;

namespace {

// Each event encodes (thread, index) in its label and in every number, so a torn or mixed-up
// slot shows up as a mismatch.
void record_numbered(ParallelRegionCollector& collector, int thread, int index) {
  const int64_t id = int64_t{thread} * 1000000 + index;
  collector.record("Abs t" + std::to_string(thread) + " i" + std::to_string(index), thread, thread + 1, id, id + 1,
                   id + 2);
}

bool consistent(const ParallelRegionEvent& e) {
  const int64_t id = e.iterations;
  const int thread = static_cast<int>(id / 1000000);
  const int index = static_cast<int>(id % 1000000);
  return e.label == "Abs t" + std::to_string(thread) + " i" + std::to_string(index) &&
         e.requested_threads == thread && e.admitted_threads == thread + 1 && e.grain == id + 1 &&
         e.wall_time_ns == id + 2;
}

}  // namespace

TEST_CASE("parallel region collector: labels and numbers come back in claim order") {
  ParallelRegionCollector collector(4);
  CHECK(collector.capacity() == 4);
  collector.record("Abs node 'a'", 2, 1, 100, 16, 5000);
  collector.record("Add node 'b'", 4, 4, 1 << 20, 1024, 123456789);
  const auto report = collector.report();
  REQUIRE(report.events.size() == 2);
  CHECK(report.dropped_events == 0);
  CHECK(report.events[0].label == "Abs node 'a'");
  CHECK(report.events[0].requested_threads == 2);
  CHECK(report.events[0].admitted_threads == 1);
  CHECK(report.events[0].iterations == 100);
  CHECK(report.events[0].grain == 16);
  CHECK(report.events[0].wall_time_ns == 5000);
  CHECK(report.events[1].label == "Add node 'b'");
  CHECK(report.events[1].iterations == (1 << 20));
  CHECK(report.events[1].wall_time_ns == 123456789);
}

TEST_CASE("parallel region collector: events past capacity are not written and are counted as dropped") {
  ParallelRegionCollector collector(3);
  for (int i = 0; i < 10; ++i) record_numbered(collector, 0, i);
  const auto report = collector.report();
  REQUIRE(report.events.size() == 3);
  CHECK(report.dropped_events == 7);
  for (int i = 0; i < 3; ++i) {
    CHECK(report.events[static_cast<std::size_t>(i)].iterations == i);
    CHECK(consistent(report.events[static_cast<std::size_t>(i)]));
  }
}

TEST_CASE("parallel region collector: capacity 0 drops every event") {
  ParallelRegionCollector collector(0);
  collector.record("Abs", 1, 1, 1, 1, 1);
  collector.record("Abs", 1, 1, 1, 1, 1);
  const auto report = collector.report();
  CHECK(report.events.empty());
  CHECK(report.dropped_events == 2);
}

TEST_CASE("parallel region collector: concurrent recorders keep exactly capacity events and count the rest") {
  constexpr int kThreads = 4;
  constexpr int kPerThread = 2000;
  constexpr std::size_t kCapacity = 3001;
  ParallelRegionCollector collector(kCapacity);
  std::atomic<bool> go{false};
  std::vector<std::thread> recorders;
  for (int t = 0; t < kThreads; ++t) {
    recorders.emplace_back([&, t] {
      while (!go.load(std::memory_order_acquire)) std::this_thread::yield();
      for (int i = 0; i < kPerThread; ++i) record_numbered(collector, t, i);
    });
  }
  go.store(true, std::memory_order_release);
  for (auto& r : recorders) r.join();
  const auto report = collector.report();
  CHECK(report.events.size() == kCapacity);
  CHECK(report.dropped_events == kThreads * kPerThread - kCapacity);
  std::set<int64_t> ids;
  for (const auto& e : report.events) {
    CHECK(consistent(e));
    ids.insert(e.iterations);
  }
  CHECK(ids.size() == kCapacity);
}

TEST_CASE("parallel region collector: report() while recorders run sees only complete events") {
  ParallelRegionCollector collector(5000);
  std::atomic<bool> done{false};
  std::thread writer([&] {
    for (int i = 0; i < 5000; ++i) record_numbered(collector, 1, i);
    done.store(true, std::memory_order_release);
  });
  int inconsistent = 0;
  std::size_t last_size = 0;
  bool shrank = false;
  while (!done.load(std::memory_order_acquire)) {
    const auto report = collector.report();
    for (const auto& e : report.events) inconsistent += consistent(e) ? 0 : 1;
    if (report.events.size() < last_size) shrank = true;
    last_size = report.events.size();
  }
  writer.join();
  CHECK(inconsistent == 0);
  CHECK_FALSE(shrank);
  CHECK(collector.report().events.size() == 5000);
}

TEST_CASE("parallel region collector: long labels are truncated to the slot's 96 bytes") {
  ParallelRegionCollector collector(4);
  const std::string exact(96, 'x');
  const std::string longer = std::string(96, 'y') + "tail";
  // 95 ASCII bytes then a 2-byte character straddling the limit: the cut falls before it.
  const std::string straddling = std::string(95, 'z') + "\xc3\xa9" + "more";
  collector.record(exact, 1, 1, 1, 1, 1);
  collector.record(longer, 1, 1, 2, 1, 1);
  collector.record(straddling, 1, 1, 3, 1, 1);
  collector.record("", 1, 1, 4, 1, 1);
  const auto report = collector.report();
  REQUIRE(report.events.size() == 4);
  CHECK(report.events[0].label == exact);
  CHECK(report.events[1].label == std::string(96, 'y'));
  CHECK(report.events[1].iterations == 2);
  CHECK(report.events[2].label == std::string(95, 'z'));
  CHECK(report.events[3].label.empty());
  CHECK(report.events[3].iterations == 4);
}

TEST_CASE("parallel region collector: clear() forgets events and the dropped count; slots are reused") {
  ParallelRegionCollector collector(2);
  for (int i = 0; i < 5; ++i) record_numbered(collector, 0, i);
  collector.clear();
  auto report = collector.report();
  CHECK(report.events.empty());
  CHECK(report.dropped_events == 0);
  record_numbered(collector, 2, 7);
  report = collector.report();
  REQUIRE(report.events.size() == 1);
  CHECK(report.events[0].label == "Abs t2 i7");
  CHECK(consistent(report.events[0]));
}
