// Per-node event counters (issue 22): the reasons given for refused counters, the thread set a
// session counts (caller and pool workers), what a profile and its JSON carry, and that a session
// that does not ask opens nothing.
#include <doctest/doctest.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "onnx_light/runtime/hardware_counters.h"
#include "onnx_light/runtime/session.h"
#include "onnx_light/runtime/session_profile.h"
#include "onnx_light/runtime/thread_pool.h"
#include "onnx_light/runtime/tuning_registry.h"
#include "test_models.h"

using namespace onnx_light::runtime;

namespace {

bool refusal_mentions(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// Burns about `ms` of CPU on the calling thread.
double burn(int ms) {
  volatile double x = 0;
  const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
  while (std::chrono::steady_clock::now() < end)
    for (int i = 0; i < 1000; ++i) x = x + i * 0.5;
  return x;
}

// An opener that refuses every counter with `error`, and records what it was asked to open.
struct RefusingOpener {
  int error;
  std::shared_ptr<std::vector<int>> tids = std::make_shared<std::vector<int>>();
  int operator()(Counter, int tid, int, bool) const {
    tids->push_back(tid);
    return -error;
  }
};

// Abs over 200000 floats: past the default parallel threshold, so two threads open a region.
const char* kAbs =
    "<ir_version: 8, opset_import: [\"\" : 18]>\n"
    "g (float[N] x) => (float[N] y) { y = Abs(x) }";

RuntimeSessionOptions counting_options(int threads) {
  static TuningRegistry registry;  // private: thresholds stay the defaults
  RuntimeSessionOptions o;
  o.parameters = RuntimeParameters(threads);
  o.registry = &registry;
  o.profile = true;
  o.profile_counters = true;
  o.share_thread_pool = false;
  return o;
}

Tensor input(int64_t n) {
  Tensor t(ElementType::float32, {n});
  for (int64_t i = 0; i < n; ++i) t.data<float>()[i] = static_cast<float>(i % 7) - 3.0f;
  return t;
}

}  // namespace

TEST_CASE("refusal_reasons_name_the_cause_an_operator_can_act_on") {
  CHECK(refusal_mentions(counter_refusal_reason(Counter::cycles, ENOENT, /*pmu=*/false, 2), "no hardware PMU"));
  CHECK(refusal_mentions(counter_refusal_reason(Counter::cycles, ENOENT, /*pmu=*/false, 2), "/sys/bus/event_source/devices/cpu"));
  // With a PMU the same errno means the PMU lacks that event, not that there is none.
  CHECK_FALSE(refusal_mentions(counter_refusal_reason(Counter::llc_misses, ENOENT, /*pmu=*/true, 2), "no hardware PMU"));
  const std::string denied = counter_refusal_reason(Counter::task_clock_ns, EACCES, true, 3);
  CHECK(refusal_mentions(denied, "perf_event_paranoid is 3"));
  CHECK(refusal_mentions(denied, "CAP_PERFMON"));
  CHECK(refusal_mentions(counter_refusal_reason(Counter::page_faults, EPERM, true, 1), "seccomp"));
  CHECK(refusal_mentions(counter_refusal_reason(Counter::cycles, EACCES, true, -1), "could not be read"));
  CHECK(refusal_mentions(counter_refusal_reason(Counter::task_clock_ns, ENOSYS, true, 2), "not available"));
  CHECK(refusal_mentions(counter_refusal_reason(Counter::task_clock_ns, EMFILE, true, 2), "ulimit -n"));
  CHECK(counter_name(Counter::llc_misses) == "llc_misses");
  CHECK(counter_name(Counter::page_faults) == "page_faults");
  CHECK(is_hardware_counter(Counter::instructions));
  CHECK_FALSE(is_hardware_counter(Counter::context_switches));
}

TEST_CASE("thread_counters_refused_everywhere_report_every_counter_and_count_nothing") {
  RefusingOpener opener{EACCES};
  ThreadCounters counters(0, opener);
  REQUIRE(counters.status().size() == kCounterCount);
  CHECK_FALSE(counters.any_available());
  for (std::size_t i = 0; i < kCounterCount; ++i) {
    const CounterStatus& s = counters.status()[i];
    CHECK(s.counter == static_cast<Counter>(i));
    CHECK(s.name == counter_name(s.counter));
    CHECK_FALSE(s.available);
    CHECK(refusal_mentions(s.reason, "not permitted"));
  }
  // Each refused kernel-side open was retried for user space only: two asks per counter.
  CHECK(opener.tids->size() == 2 * kCounterCount);
  CounterValues sum{};
  counters.add_to(sum);
  CHECK(std::all_of(sum.begin(), sum.end(), [](uint64_t v) { return v == 0; }));
}

TEST_CASE("thread_counters_granted_for_user_space_only_say_so") {
  // Kernel-side counting refused, user space granted (perf_event_paranoid 2 without privileges).
  const CounterOpener system = system_counter_opener();
  const CounterOpener opener = [&](Counter c, int tid, int group, bool exclude_kernel) {
    return exclude_kernel ? system(c, tid, group, true) : -EACCES;
  };
  ThreadCounters counters(0, opener);
  const CounterStatus& clock = counters.status()[static_cast<std::size_t>(Counter::task_clock_ns)];
  if (!clock.available) {
    // The system refuses even user-space counting here (seccomp, no perf events): the reason says so.
    MESSAGE("task clock unavailable on this machine: " << clock.reason);
    CHECK_FALSE(clock.reason.empty());
    return;
  }
  CHECK(clock.user_space_only);
  CHECK(refusal_mentions(clock.reason, "user space only"));
}

TEST_CASE("thread_counters_count_the_calling_threads_cpu_time") {
  ThreadCounters counters(0);
  const CounterStatus& clock = counters.status()[static_cast<std::size_t>(Counter::task_clock_ns)];
  for (const auto& s : counters.status()) {
    const bool explained = s.available ? (s.reason.empty() || s.user_space_only) : !s.reason.empty();
    CHECK(explained);
  }
  if (!clock.available) {
    MESSAGE("task clock unavailable on this machine: " << clock.reason);
    CHECK_FALSE(clock.reason.empty());
    return;
  }
  CounterValues before{}, after{};
  counters.add_to(before);
  burn(30);
  counters.add_to(after);
  const uint64_t ns = after[static_cast<std::size_t>(Counter::task_clock_ns)] - before[static_cast<std::size_t>(Counter::task_clock_ns)];
  // 30 ms of wall time spinning: at least a third of it on the CPU even on a loaded machine, and
  // never more than the wall time plus slack (only this thread is counted).
  CHECK(ns >= 10'000'000u);
  CHECK(ns <= 200'000'000u);
}

TEST_CASE("thread_pool_worker_thread_ids_are_the_named_workers_of_this_process") {
  ThreadPool pool(3);
  const std::vector<int> tids = pool.worker_thread_ids();
  REQUIRE(tids.size() == 2);
  CHECK(std::set<int>(tids.begin(), tids.end()).size() == 2);
  for (std::size_t i = 0; i < tids.size(); ++i) {
    const std::filesystem::path task = std::filesystem::path("/proc/self/task") / std::to_string(tids[i]);
    REQUIRE(std::filesystem::exists(task));
    std::ifstream comm(task / "comm");
    std::string name;
    std::getline(comm, name);
    CHECK(name == "onnxl-pool-" + std::to_string(i + 1));
  }
  CHECK(std::find(tids.begin(), tids.end(), current_thread_id()) == tids.end());
}

TEST_CASE("session_counts_the_caller_and_every_pool_worker") {
  // Record which threads the session opens counters on; grant them through the real system call.
  auto opened = std::make_shared<std::set<int>>();
  auto mutex = std::make_shared<std::mutex>();
  const CounterOpener system = system_counter_opener();
  RuntimeSessionOptions o = counting_options(2);
  o.counter_opener = [=](Counter c, int tid, int group, bool exclude_kernel) {
    {
      std::lock_guard lock(*mutex);
      opened->insert(tid);
    }
    return system(c, tid, group, exclude_kernel);
  };
  RuntimeSession session(onnx_light::test::parse(kAbs), o);
  RuntimeContext context;
  context.set("x", input(200000));
  for (int i = 0; i < 5; ++i) session.run(context);
  const SessionProfile p = session.profile();
  REQUIRE(p.counters.size() == kCounterCount);
  REQUIRE(p.nodes.size() == 1);
  CHECK(p.nodes[0].parallel_regions > 0);  // the node really ran on the pool's worker too
  CHECK(opened->contains(current_thread_id()));
  CHECK(opened->size() == 2);  // the caller and the one worker
  const auto clock = std::find_if(p.counters.begin(), p.counters.end(),
                                  [](const CounterStatus& s) { return s.counter == Counter::task_clock_ns; });
  REQUIRE(clock != p.counters.end());
  if (!clock->available) {
    MESSAGE("task clock unavailable on this machine: " << clock->reason);
    CHECK(p.nodes[0].counters.empty());
    return;
  }
  // One reading per available counter, named as the status names it.
  std::size_t available = 0;
  for (const auto& s : p.counters) available += s.available ? 1 : 0;
  REQUIRE(p.nodes[0].counters.size() == available);
  const auto reading = std::find_if(p.nodes[0].counters.begin(), p.nodes[0].counters.end(),
                                    [](const CounterReading& r) { return r.name == "task_clock_ns"; });
  REQUIRE(reading != p.nodes[0].counters.end());
  // Five runs of Abs over 200000 floats take CPU time; no more than two threads' worth of the node's wall time.
  CHECK(reading->value > 0);
  CHECK(static_cast<double>(reading->value) <= 2.0 * p.nodes[0].total_us * 1000.0 * 1.5 + 2e6);

  const auto json = nlohmann::json::parse(profile_json(p));
  REQUIRE(json.contains("counters"));
  CHECK(json["counters"].size() == kCounterCount);
  CHECK(json["nodes"][0]["counters"]["task_clock_ns"].get<uint64_t>() == reading->value);
  for (const auto& c : json["counters"])
    CHECK((c["available"].get<bool>() || !c["reason"].is_null()));

  // reset_profile forgets the counts with the times.
  session.reset_profile();
  session.run(context);
  const SessionProfile again = session.profile();
  CHECK(again.nodes[0].calls == 1);
  const auto second = std::find_if(again.nodes[0].counters.begin(), again.nodes[0].counters.end(),
                                   [](const CounterReading& r) { return r.name == "task_clock_ns"; });
  REQUIRE(second != again.nodes[0].counters.end());
  CHECK(second->value < reading->value);
}

TEST_CASE("session_with_every_counter_refused_runs_and_reports_why") {
  RefusingOpener opener{ENOSYS};
  RuntimeSessionOptions o = counting_options(2);
  o.counter_opener = opener;
  RuntimeSession session(onnx_light::test::parse(kAbs), o);
  RuntimeContext context;
  context.set("x", input(200000));
  session.run(context);
  const SessionProfile p = session.profile();
  REQUIRE(p.counters.size() == kCounterCount);
  for (const auto& s : p.counters) {
    CHECK_FALSE(s.available);
    CHECK(refusal_mentions(s.reason, "perf_event_open is not available"));
  }
  REQUIRE(p.nodes.size() == 1);
  CHECK(p.nodes[0].calls == 1);
  CHECK(p.nodes[0].counters.empty());
  CHECK(context.get("y").data<float>()[0] == 3.0f);
}

TEST_CASE("session_without_counters_opens_none_and_reports_none") {
  RefusingOpener opener{ENOSYS};
  RuntimeSessionOptions o = counting_options(2);
  o.profile_counters = false;
  o.counter_opener = opener;
  RuntimeSession session(onnx_light::test::parse(kAbs), o);
  RuntimeContext context;
  context.set("x", input(200000));
  session.run(context);
  const SessionProfile p = session.profile();
  CHECK(opener.tids->empty());
  CHECK(p.counters.empty());
  CHECK(p.nodes[0].counters.empty());
  CHECK_FALSE(nlohmann::json::parse(profile_json(p)).contains("counters"));
}
