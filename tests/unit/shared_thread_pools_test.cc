// Thread pools shared across sessions (shared_thread_pools.h): who shares, how long a pool lives,
// and sessions running at once from several application threads on one pool.
#include <doctest/doctest.h>

#include <atomic>
#include <cmath>
#include <memory>
#include <thread>
#include <vector>

#include "onnx_light/runtime/parallel_region_collector.h"
#include "onnx_light/runtime/session.h"
#include "onnx_light/runtime/shared_thread_pools.h"
#include "parallel_registry.h"
#include "test_models.h"

using namespace onnx_light;
using namespace onnx_light::runtime;

TEST_CASE("shared_pools_equal_threads_and_options_share_others_do_not") {
  SharedThreadPools pools;
  auto a = pools.acquire(2, {});
  auto b = pools.acquire(2, {});
  CHECK(a == b);
  ThreadPoolOptions parked;
  parked.spin = std::chrono::microseconds(0);
  auto c = pools.acquire(2, parked);
  auto d = pools.acquire(3, {});
  CHECK(c != a);
  CHECK(d != a);
  CHECK(d != c);
  CHECK(pools.live_pools() == 3);
  const uint64_t old_id = a->id();
  a.reset();
  CHECK(pools.live_pools() == 3);  // b still holds it
  b.reset();
  CHECK(pools.live_pools() == 2);  // the last holder let go: the pool is gone
  auto again = pools.acquire(2, {});
  CHECK(again->id() != old_id);  // a new pool, never a recycled id
  CHECK(pools.live_pools() == 3);
}

namespace {

RuntimeSession abs_session(int threads, TuningRegistry* registry, bool share = true, int spin_us = -1,
                           std::shared_ptr<ParallelRegionCollector> collector = nullptr) {
  RuntimeSessionOptions options;
  options.parameters = RuntimeParameters(threads);
  if (spin_us >= 0) options.parameters.spin_microseconds = spin_us;
  options.registry = registry;
  options.share_thread_pool = share;
  options.parallel_region_collector = std::move(collector);
  return RuntimeSession(test::parse(test::kSeedAbsModel), options);
}

// Runs Abs over -scale * [0, n) `runs` times; returns the runs whose result was not scale * [0, n).
int abs_run_errors(RuntimeSession& session, int64_t n, float scale, int runs) {
  Tensor x(ElementType::float32, {n});
  for (int64_t i = 0; i < n; ++i) x.data<float>()[i] = -scale * static_cast<float>(i);
  int wrong = 0;
  for (int r = 0; r < runs; ++r) {
    RuntimeContext context;
    context.set("x", x);
    session.run(context);
    const float* y = context.get("y").data<float>();
    for (int64_t i = 0; i < n; ++i)
      if (y[i] != scale * static_cast<float>(i)) {
        ++wrong;
        break;
      }
  }
  return wrong;
}

}  // namespace

TEST_CASE("sessions_with_equal_parameters_share_the_process_pool_until_the_last_one_ends") {
  auto registry = test::parallel_registry({"Abs"});
  const int before = process_thread_pools().live_pools();
  {
    RuntimeSession a = abs_session(2, registry.get());
    RuntimeSession b = abs_session(2, registry.get());
    RuntimeSession own = abs_session(2, registry.get(), /*share=*/false);
    RuntimeSession parked = abs_session(2, registry.get(), true, 0);
    CHECK(a.thread_pool_id() == b.thread_pool_id());
    CHECK(own.thread_pool_id() != a.thread_pool_id());     // asked for its own
    CHECK(parked.thread_pool_id() != a.thread_pool_id());  // another spin policy: another pool
    CHECK(process_thread_pools().live_pools() == before + 2);
  }
  CHECK(process_thread_pools().live_pools() == before);
}

TEST_CASE("two_sessions_on_one_shared_pool_run_concurrently_each_on_every_worker") {
  auto registry = test::parallel_registry({"Abs"});
  auto collector_a = std::make_shared<ParallelRegionCollector>(4096);
  auto collector_b = std::make_shared<ParallelRegionCollector>(4096);
  RuntimeSession a = abs_session(2, registry.get(), true, -1, collector_a);
  RuntimeSession b = abs_session(2, registry.get(), true, -1, collector_b);
  REQUIRE(a.thread_pool_id() == b.thread_pool_id());
  std::atomic<int> wrong{0};
  // Regions long enough that the two sessions collide.
  auto hammer = [&](RuntimeSession& session, float scale) { wrong += abs_run_errors(session, int64_t{1} << 17, scale, 300); };
  std::thread ta([&] { hammer(a, 1.0f); });
  std::thread tb([&] { hammer(b, 2.0f); });
  ta.join();
  tb.join();
  CHECK(wrong.load() == 0);
  // Each region ran on the pool (2 participants), none fell back to one thread while the other
  // session held the pool.
  for (const auto* report : {&collector_a, &collector_b}) {
    const ParallelRegionReport r = (*report)->report();
    REQUIRE_FALSE(r.events.empty());
    for (const auto& e : r.events) CHECK(e.admitted_threads == 2);
  }
}

TEST_CASE("one_session_run_from_two_threads_at_once_is_serialized_and_correct") {
  auto registry = test::parallel_registry({"Abs"});
  RuntimeSession session = abs_session(2, registry.get());
  std::atomic<int> wrong{0};
  auto hammer = [&](float scale) { wrong += abs_run_errors(session, 3000, scale, 300); };
  std::thread t1([&] { hammer(1.0f); });
  std::thread t2([&] { hammer(3.0f); });
  t1.join();
  t2.join();
  CHECK(wrong.load() == 0);
}
