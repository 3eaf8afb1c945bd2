#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <mutex>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "onnx_light/runtime/error.h"
#include "onnx_light/runtime/thread_pool.h"
#include "polling.h"

using onnx_light::InvalidValueError;
using onnx_light::runtime::BlockRange;
using onnx_light::runtime::partition_block;
using onnx_light::runtime::kSpinLongMicroseconds;
using onnx_light::runtime::ThreadPool;
using onnx_light::runtime::ThreadPoolOptions;
using onnx_light::test::eventually;

namespace {

// Counts how often each index is visited and remembers the blocks handed out.
class Coverage {
 public:
  explicit Coverage(int64_t n) : hits_(static_cast<std::size_t>(n)) {}

  void visit(int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) hits_[static_cast<std::size_t>(i)].fetch_add(1, std::memory_order_relaxed);
    std::lock_guard<std::mutex> lock(mutex_);
    blocks_.push_back({begin, end});
  }
  bool each_index_once() const {
    return std::all_of(hits_.begin(), hits_.end(), [](const std::atomic<int>& h) { return h.load() == 1; });
  }
  // Blocks in index order (workers may finish them in any order).
  std::vector<BlockRange> sorted_blocks() const {
    std::vector<BlockRange> blocks = blocks_;
    std::sort(blocks.begin(), blocks.end(), [](const BlockRange& a, const BlockRange& b) { return a.begin < b.begin; });
    return blocks;
  }

 private:
  std::vector<std::atomic<int>> hits_;
  std::mutex mutex_;
  std::vector<BlockRange> blocks_;
};

std::vector<BlockRange> expected_blocks(int64_t n, int64_t grain, int blocks) {
  std::vector<BlockRange> result;
  for (int b = 0; b < blocks; ++b) result.push_back(partition_block(n, grain, blocks, b));
  return result;
}

bool same_blocks(const std::vector<BlockRange>& a, const std::vector<BlockRange>& b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end(),
                    [](const BlockRange& x, const BlockRange& y) { return x.begin == y.begin && x.end == y.end; });
}

int64_t units(int64_t n, int64_t grain) { return (n + grain - 1) / grain; }

int expected_participants(int64_t n, int64_t grain, int admitted, int threads) {
  if (n == 0) return 1;
  return static_cast<int>(std::min<int64_t>({std::max(admitted, 1), threads, units(n, grain)}));
}

// Hang guard only: generous, so that a loaded machine never trips it.
bool wait_until(const std::atomic<bool>& flag) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (!flag.load(std::memory_order_acquire)) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::yield();
  }
  return true;
}

const int64_t kSizes[] = {1, 2, 3, 5, 7, 8, 9, 16, 31, 63, 64, 65, 100, 127, 1000, 1023, 4099};
const int64_t kGrains[] = {1, 2, 3, 8, 64, 1000, 5000};

}  // namespace

TEST_CASE("partition_block: contiguous, ordered, grain-aligned and covering [0,n) for many (n, grain, blocks)") {
  for (int64_t n : {int64_t{0}, int64_t{1}, int64_t{2}, int64_t{7}, int64_t{64}, int64_t{65}, int64_t{1000},
                    int64_t{4099}}) {
    for (int64_t grain : {int64_t{1}, int64_t{3}, int64_t{8}, int64_t{64}, int64_t{5000}}) {
      for (int blocks = 1; blocks <= 9; ++blocks) {
        CAPTURE(n);
        CAPTURE(grain);
        CAPTURE(blocks);
        const int64_t u = units(n, grain);
        int64_t expected_begin = 0;
        int64_t smallest_units = INT64_MAX;
        int64_t largest_units = 0;
        for (int b = 0; b < blocks; ++b) {
          const BlockRange r = partition_block(n, grain, blocks, b);
          CHECK(r.begin == expected_begin);
          CHECK(r.end >= r.begin);
          if (r.end < n) CHECK(r.end % grain == 0);
          // Empty blocks only when there are fewer units than blocks, and only at the tail.
          if (r.begin == r.end) CHECK(b >= u);
          if (b < u) CHECK(r.end > r.begin);
          const int64_t block_units = units(r.end - r.begin, grain);
          smallest_units = std::min(smallest_units, block_units);
          largest_units = std::max(largest_units, block_units);
          expected_begin = r.end;
        }
        CHECK(expected_begin == n);
        CHECK(largest_units - smallest_units <= 1);
      }
    }
  }
}

TEST_CASE("partition_block: the same (n, grain, blocks) gives the same boundaries every call") {
  const auto first = expected_blocks(1000, 7, 3);
  for (int i = 0; i < 100; ++i) CHECK(same_blocks(expected_blocks(1000, 7, 3), first));
  // The exact cut for a documented case: 143 units of 7 over 3 blocks -> 48, 48, 47 units.
  REQUIRE(first.size() == 3);
  CHECK(first[0].begin == 0);
  CHECK(first[0].end == 336);
  CHECK(first[1].end == 672);
  CHECK(first[2].end == 1000);
}

TEST_CASE("partition_block: grain below 1 counts as 1, bad n or block index throws InvalidValueError") {
  CHECK(same_blocks(expected_blocks(10, 0, 3), expected_blocks(10, 1, 3)));
  CHECK(same_blocks(expected_blocks(10, -5, 3), expected_blocks(10, 1, 3)));
  CHECK_THROWS_AS(partition_block(-1, 1, 2, 0), InvalidValueError);
  CHECK_THROWS_AS(partition_block(10, 1, 0, 0), InvalidValueError);
  CHECK_THROWS_AS(partition_block(10, 1, 2, 2), InvalidValueError);
  CHECK_THROWS_AS(partition_block(10, 1, 2, -1), InvalidValueError);
}

TEST_CASE("partition_block: huge n with a huge grain does not overflow") {
  const int64_t n = INT64_MAX - 3;
  const int64_t grain = INT64_MAX / 2;
  const auto blocks = expected_blocks(n, grain, 4);
  CHECK(blocks[0].begin == 0);
  CHECK(blocks[0].end == grain);
  // Two units (one full, one partial) over four blocks: the trailing two are empty.
  CHECK(blocks[1].begin == grain);
  CHECK(blocks[1].end == n);
  for (int b = 2; b < 4; ++b) {
    CHECK(blocks[static_cast<std::size_t>(b)].begin == n);
    CHECK(blocks[static_cast<std::size_t>(b)].end == n);
  }
}

TEST_CASE("thread pool: parallel_for visits every index exactly once for many (n, grain, threads, admitted)") {
  for (int threads : {1, 2, 3, 4, 5, 8}) {
    ThreadPool pool(threads);
    CHECK(pool.threads() == threads);
    for (int64_t n : kSizes) {
      for (int64_t grain : kGrains) {
        for (int admitted : {0, 1, 2, threads, threads + 3}) {
          CAPTURE(threads);
          CAPTURE(n);
          CAPTURE(grain);
          CAPTURE(admitted);
          Coverage coverage(n);
          const int used = pool.parallel_for(n, grain, admitted, [&](int64_t b, int64_t e) { coverage.visit(b, e); });
          CHECK(coverage.each_index_once());
          const int blocks = expected_participants(n, grain, admitted, threads);
          CHECK(used == blocks);
          // The pool hands out exactly partition_block's cut.
          CHECK(same_blocks(coverage.sorted_blocks(), expected_blocks(n, grain, blocks)));
        }
      }
    }
  }
}

TEST_CASE("thread pool: an empty range calls nothing and uses one participant") {
  ThreadPool pool(4);
  std::atomic<int> calls{0};
  CHECK(pool.parallel_for(0, 1, 4, [&](int64_t, int64_t) { calls.fetch_add(1); }) == 1);
  CHECK(calls.load() == 0);
}

TEST_CASE("thread pool: negative n throws InvalidValueError and the pool stays usable") {
  ThreadPool pool(2);
  CHECK_THROWS_AS(pool.parallel_for(-1, 1, 2, [](int64_t, int64_t) {}), InvalidValueError);
  Coverage coverage(10);
  CHECK(pool.parallel_for(10, 1, 2, [&](int64_t b, int64_t e) { coverage.visit(b, e); }) == 2);
  CHECK(coverage.each_index_once());
}

TEST_CASE("thread pool: zero or negative thread counts throw InvalidValueError") {
  CHECK_THROWS_AS(ThreadPool(0), InvalidValueError);
  CHECK_THROWS_AS(ThreadPool(-2), InvalidValueError);
}

TEST_CASE("thread pool: n not divisible by threads gives blocks one unit apart") {
  ThreadPool pool(3);
  Coverage coverage(10);
  CHECK(pool.parallel_for(10, 1, 3, [&](int64_t b, int64_t e) { coverage.visit(b, e); }) == 3);
  CHECK(coverage.each_index_once());
  const auto blocks = coverage.sorted_blocks();
  REQUIRE(blocks.size() == 3);
  CHECK(blocks[0].end - blocks[0].begin == 4);
  CHECK(blocks[1].end - blocks[1].begin == 3);
  CHECK(blocks[2].end - blocks[2].begin == 3);
}

TEST_CASE("thread pool: n smaller than threads uses n participants of one index each") {
  ThreadPool pool(8);
  Coverage coverage(3);
  CHECK(pool.parallel_for(3, 1, 8, [&](int64_t b, int64_t e) { coverage.visit(b, e); }) == 3);
  CHECK(coverage.each_index_once());
  for (const BlockRange& r : coverage.sorted_blocks()) CHECK(r.end - r.begin == 1);
}

TEST_CASE("thread pool: grain larger than n runs one block inline on the caller") {
  ThreadPool pool(4);
  const auto caller = std::this_thread::get_id();
  std::vector<std::thread::id> ran_on;
  std::vector<BlockRange> seen;
  CHECK(pool.parallel_for(50, 64, 4, [&](int64_t b, int64_t e) {
    ran_on.push_back(std::this_thread::get_id());
    seen.push_back({b, e});
  }) == 1);
  REQUIRE(seen.size() == 1);
  CHECK(seen[0].begin == 0);
  CHECK(seen[0].end == 50);
  CHECK(ran_on[0] == caller);
}

TEST_CASE("thread pool: more threads than cores (8 participants) still covers everything") {
  const int threads = std::max(8, 4 * static_cast<int>(std::thread::hardware_concurrency()));
  ThreadPool pool(threads);
  for (int64_t n : {int64_t{8}, int64_t{1000}, int64_t{100003}}) {
    Coverage coverage(n);
    const int used = pool.parallel_for(n, 1, threads, [&](int64_t b, int64_t e) { coverage.visit(b, e); });
    CHECK(used == std::min<int64_t>(threads, n));
    CHECK(coverage.each_index_once());
  }
}

TEST_CASE("thread pool: nested parallel_for runs inline on the same thread with the same partition") {
  ThreadPool pool(4);
  CHECK_FALSE(ThreadPool::in_parallel_region());
  constexpr int64_t kOuter = 4;
  constexpr int64_t kInner = 103;
  std::deque<Coverage> inner;
  for (int i = 0; i < kOuter; ++i) inner.emplace_back(kInner);
  std::atomic<int> wrong_thread{0};
  std::atomic<int> not_inline{0};
  std::atomic<int> outside_region{0};
  std::mutex mutex;
  std::vector<std::vector<BlockRange>> inner_order(kOuter);
  pool.parallel_for(kOuter, 1, 4, [&](int64_t ob, int64_t oe) {
    for (int64_t o = ob; o < oe; ++o) {
      if (!ThreadPool::in_parallel_region()) outside_region.fetch_add(1);
      const auto outer_thread = std::this_thread::get_id();
      const int used = pool.parallel_for(kInner, 5, 3, [&](int64_t b, int64_t e) {
        if (std::this_thread::get_id() != outer_thread) wrong_thread.fetch_add(1);
        inner[static_cast<std::size_t>(o)].visit(b, e);
        std::lock_guard<std::mutex> lock(mutex);
        inner_order[static_cast<std::size_t>(o)].push_back({b, e});
      });
      if (used != 1) not_inline.fetch_add(1);
    }
  });
  CHECK(wrong_thread.load() == 0);
  CHECK(not_inline.load() == 0);
  CHECK(outside_region.load() == 0);
  CHECK_FALSE(ThreadPool::in_parallel_region());
  for (int i = 0; i < kOuter; ++i) {
    CHECK(inner[static_cast<std::size_t>(i)].each_index_once());
    // Inline blocks run in order, cut exactly as the pool would have cut them.
    CHECK(same_blocks(inner_order[static_cast<std::size_t>(i)], expected_blocks(kInner, 5, 3)));
  }
}

TEST_CASE("thread pool: an exception thrown in a worker block reaches the caller; the pool stays usable") {
  ThreadPool pool(2);
  const auto caller = std::this_thread::get_id();
  std::atomic<bool> worker_started{false};
  std::atomic<int> blocks_run{0};
  std::atomic<bool> hang_guard_tripped{false};
  // Blocks on a worker throw; the caller's block holds on until a worker has started one, so at
  // least one block is guaranteed to run (and throw) on a worker.
  CHECK_THROWS_WITH_AS(pool.parallel_for(2, 1, 2,
                                         [&](int64_t, int64_t) {
                                           blocks_run.fetch_add(1);
                                           if (std::this_thread::get_id() != caller) {
                                             worker_started.store(true, std::memory_order_release);
                                             throw std::runtime_error("worker failed");
                                           }
                                           if (!wait_until(worker_started)) hang_guard_tripped = true;
                                         }),
                       "worker failed", std::runtime_error);
  CHECK_FALSE(hang_guard_tripped.load());
  CHECK(blocks_run.load() == 2);
  Coverage coverage(1000);
  CHECK(pool.parallel_for(1000, 1, 2, [&](int64_t b, int64_t e) { coverage.visit(b, e); }) == 2);
  CHECK(coverage.each_index_once());
}

TEST_CASE("thread pool: an exception thrown in the caller's block reaches the caller; the pool stays usable") {
  ThreadPool pool(2);
  const auto caller = std::this_thread::get_id();
  std::atomic<bool> caller_started{false};
  std::atomic<int> blocks_run{0};
  std::atomic<bool> hang_guard_tripped{false};
  // A worker's block holds on until the caller has started one, so the caller must claim the other.
  CHECK_THROWS_WITH_AS(pool.parallel_for(2, 1, 2,
                                         [&](int64_t, int64_t) {
                                           blocks_run.fetch_add(1);
                                           if (std::this_thread::get_id() == caller) {
                                             caller_started.store(true, std::memory_order_release);
                                             throw InvalidValueError("caller failed");
                                           }
                                           if (!wait_until(caller_started)) hang_guard_tripped = true;
                                         }),
                       "caller failed", InvalidValueError);
  CHECK_FALSE(hang_guard_tripped.load());
  CHECK(blocks_run.load() == 2);
  Coverage coverage(999);
  CHECK(pool.parallel_for(999, 7, 2, [&](int64_t b, int64_t e) { coverage.visit(b, e); }) == 2);
  CHECK(coverage.each_index_once());
}

TEST_CASE("thread pool: when several blocks throw, every block still runs and the lowest block's exception wins") {
  ThreadPool pool(4);
  for (int round = 0; round < 50; ++round) {
    std::atomic<int> blocks_run{0};
    CHECK_THROWS_WITH(pool.parallel_for(4, 1, 4,
                                        [&](int64_t b, int64_t) {
                                          blocks_run.fetch_add(1);
                                          throw std::runtime_error("block " + std::to_string(b));
                                        }),
                      "block 0");
    CHECK(blocks_run.load() == 4);
  }
  // Inline (nested) runs keep the same rule.
  std::string nested_message;
  pool.parallel_for(1, 1, 1, [&](int64_t, int64_t) {
    try {
      pool.parallel_for(3, 1, 3, [](int64_t b, int64_t) { throw std::runtime_error("block " + std::to_string(b)); });
    } catch (const std::runtime_error& e) {
      nested_message = e.what();
    }
  });
  CHECK(nested_message == "block 0");
}

TEST_CASE("thread pool: a second caller of a busy pool waits for the region, then runs on the pool") {
  ThreadPool pool(2);
  std::atomic<bool> first_inside{false};
  std::atomic<bool> second_asking{false};
  std::atomic<int> first_blocks_done{0};
  std::atomic<bool> hang_guard_tripped{false};
  std::atomic<int> second_saw_first_unfinished{0};
  int second_used = 0;
  Coverage first(2), second_coverage(101);

  std::thread second([&] {
    if (!wait_until(first_inside)) hang_guard_tripped = true;
    second_asking.store(true, std::memory_order_release);
    second_used = pool.parallel_for(101, 4, 2, [&](int64_t b, int64_t e) {
      if (first_blocks_done.load(std::memory_order_acquire) != 2) second_saw_first_unfinished.fetch_add(1);
      second_coverage.visit(b, e);
    });
  });
  // The first region holds the pool until the second caller is asking for it (and a little more,
  // so that it is waiting): the second region must start only after both first blocks ended.
  CHECK(pool.parallel_for(2, 1, 2, [&](int64_t b, int64_t e) {
    first_inside.store(true, std::memory_order_release);
    if (!wait_until(second_asking)) hang_guard_tripped = true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    first.visit(b, e);
    first_blocks_done.fetch_add(1, std::memory_order_acq_rel);
  }) == 2);
  second.join();
  CHECK_FALSE(hang_guard_tripped.load());
  CHECK(first.each_index_once());
  CHECK(second_coverage.each_index_once());
  CHECK(second_used == 2);  // the whole pool, not the inline serial fallback
  CHECK(second_saw_first_unfinished.load() == 0);
}

TEST_CASE("thread pool: two threads hammering the same pool both get complete results") {
  ThreadPool pool(2);
  std::atomic<int> failures{0};
  const auto hammer = [&](int64_t n) {
    for (int i = 0; i < 300; ++i) {
      Coverage coverage(n + i % 7);
      pool.parallel_for(n + i % 7, 1 + i % 3, 2, [&](int64_t b, int64_t e) { coverage.visit(b, e); });
      if (!coverage.each_index_once()) failures.fetch_add(1);
    }
  };
  std::thread a([&] { hammer(37); });
  std::thread b([&] { hammer(64); });
  a.join();
  b.join();
  CHECK(failures.load() == 0);
}

TEST_CASE("thread pool: 10000 back-to-back calls, some after the workers parked, lose no wake-up") {
  for (int threads : {2, 3}) {
    ThreadPool pool(threads);
    std::atomic<int64_t> total{0};
    int64_t expected = 0;
    for (int i = 0; i < 10000; ++i) {
      const int64_t n = 1 + i % 17;
      expected += n;
      // Every so often, pause long enough for the workers to stop spinning and park.
      if (i % 500 == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
      pool.parallel_for(n, 1, threads, [&](int64_t b, int64_t e) { total.fetch_add(e - b, std::memory_order_relaxed); });
    }
    CHECK(total.load() == expected);
  }
}

TEST_CASE("thread pool: destroying a never-used pool stops and joins its workers") {
  for (int i = 0; i < 50; ++i) {
    ThreadPool pool(1 + i % 6);
    CHECK(pool.threads() == 1 + i % 6);
  }
}

TEST_CASE("thread pool: destroying a pool right after a region, while workers still spin, is clean") {
  for (int i = 0; i < 50; ++i) {
    std::atomic<int64_t> total{0};
    {
      ThreadPool pool(3);
      pool.parallel_for(30, 1, 3, [&](int64_t b, int64_t e) { total.fetch_add(e - b); });
    }
    CHECK(total.load() == 30);
  }
}

TEST_CASE("thread pool: per-block float sums are bit-identical to a serial run of the same blocks") {
  std::vector<float> data(10007);
  for (std::size_t i = 0; i < data.size(); ++i) data[i] = 1.0f / static_cast<float>(i + 1);
  const int64_t n = static_cast<int64_t>(data.size());
  const auto block_sum = [&](int64_t b, int64_t e) {
    float s = 0.0f;
    for (int64_t i = b; i < e; ++i) s += data[static_cast<std::size_t>(i)];
    return s;
  };
  std::vector<float> serial;
  for (const BlockRange& r : expected_blocks(n, 16, 3)) serial.push_back(block_sum(r.begin, r.end));
  ThreadPool pool(3);
  for (int round = 0; round < 20; ++round) {
    std::vector<float> partial(3, -1.0f);
    pool.parallel_for(n, 16, 3, [&](int64_t b, int64_t e) {
      for (std::size_t k = 0; k < 3; ++k) {
        if (partition_block(n, 16, 3, static_cast<int>(k)).begin == b) partial[k] = block_sum(b, e);
      }
    });
    CHECK(partial == serial);
  }
}


TEST_CASE("awake_scope_wakes_parked_workers_and_keeps_them_spinning_until_it_ends") {
  ThreadPool pool(3);
  // Idle past the spin budget: both workers park.
  REQUIRE(eventually([&] { return pool.parked_workers() == 2; }));
  {
    ThreadPool::AwakeScope awake(pool);
    CHECK(eventually([&] { return pool.parked_workers() == 0; }));
    // Far past the 50 us budget, they are still awake while the scope lives.
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    CHECK(pool.parked_workers() == 0);
    std::atomic<int64_t> sum{0};
    CHECK(pool.parallel_for(3000, 1, 3, [&](int64_t b, int64_t e) { sum += e - b; }) == 3);
    CHECK(sum.load() == 3000);
  }
  CHECK(eventually([&] { return pool.parked_workers() == 2; }));
}

TEST_CASE("awake_scope_on_a_single_thread_pool_is_a_no_op") {
  ThreadPool pool(1);
  ThreadPool::AwakeScope awake(pool);
  CHECK(pool.parked_workers() == 0);
  int calls = 0;
  CHECK(pool.parallel_for(10, 1, 4, [&](int64_t, int64_t) { ++calls; }) == 1);
  CHECK(calls == 1);  // one block: the pool has no workers
}

TEST_CASE("thread pool: blocks_per_participant cuts finer only where each block keeps its units") {
  ThreadPoolOptions options;
  options.blocks_per_participant = 4;
  ThreadPool pool(2, options);
  // 8192 units: 2 participants x 4 = 8 blocks of 1024 (>= kMinimumUnitsPerBlock each).
  Coverage fine(8192);
  CHECK(pool.parallel_for(8192, 1, 2, [&](int64_t b, int64_t e) { fine.visit(b, e); }) == 2);
  CHECK(fine.each_index_once());
  CHECK(same_blocks(fine.sorted_blocks(), expected_blocks(8192, 1, 8)));
  // 1500 units: 1500 / 512 = 2 blocks at most, not more than the participants: one each.
  Coverage coarse(1500);
  CHECK(pool.parallel_for(1500, 1, 2, [&](int64_t b, int64_t e) { coarse.visit(b, e); }) == 2);
  CHECK(same_blocks(coarse.sorted_blocks(), expected_blocks(1500, 1, 2)));
  // One participant: one block whatever the option.
  Coverage single(8192);
  CHECK(pool.parallel_for(8192, 1, 1, [&](int64_t b, int64_t e) { single.visit(b, e); }) == 1);
  CHECK(single.sorted_blocks().size() == 1);
}

TEST_CASE("thread pool: the caller always runs block 0, so a repeated region keeps its parts on the same threads") {
  // Workers spin between regions and may see a new job before the caller claims: block 0 must
  // still be the caller's every time (its data then stays in the caller's cache across runs).
  for (int blocks_per_participant : {1, 4}) {
    ThreadPoolOptions options;
    options.blocks_per_participant = blocks_per_participant;
    ThreadPool pool(2, options);
    ThreadPool::AwakeScope awake(pool);  // the worker spins, ready to race for the first block
    const auto caller = std::this_thread::get_id();
    int not_caller = 0;
    for (int run = 0; run < 2000; ++run) {
      std::atomic<bool> first_on_caller{false};
      pool.parallel_for(4096, 1, 2, [&](int64_t b, int64_t) {
        if (b == 0) first_on_caller.store(std::this_thread::get_id() == caller);
      });
      not_caller += first_on_caller.load() ? 0 : 1;
    }
    CHECK_MESSAGE(not_caller == 0, "blocks_per_participant ", blocks_per_participant);
  }
}

TEST_CASE("thread pool: a late participant leaves its blocks to the others (n_gt_participants)") {
  // The worker's first block holds on until the caller has run every other block: with one block
  // per participant the region would wait for the worker; with four the caller takes the rest,
  // so a descheduled vCPU costs only its block.
  ThreadPoolOptions options;
  options.blocks_per_participant = 4;
  ThreadPool pool(2, options);
  const auto caller = std::this_thread::get_id();
  std::atomic<int> caller_blocks{0};
  std::atomic<bool> caller_done{false};
  std::atomic<bool> hang_guard_tripped{false};
  std::atomic<bool> worker_holding{false};
  Coverage coverage(8192);
  CHECK(pool.parallel_for(8192, 1, 2, [&](int64_t b, int64_t e) {
    coverage.visit(b, e);
    if (std::this_thread::get_id() == caller) {
      if (caller_blocks.fetch_add(1) + 1 == 7) caller_done.store(true, std::memory_order_release);
      return;
    }
    if (!worker_holding.exchange(true) && !wait_until(caller_done)) hang_guard_tripped = true;
  }) == 2);
  CHECK_FALSE(hang_guard_tripped.load());
  CHECK(coverage.each_index_once());
  // Either the worker held one block and the caller ran seven, or the worker never came in time.
  CHECK(caller_blocks.load() >= 7);
}

TEST_CASE("thread pool: with more blocks than participants a region takes in at most one worker beyond its admitted count") {
  // Helper tickets keep the awake workers of a 4-thread pool out of a region admitted 2 threads.
  // The bound is soft by one: a worker ticketed for one region and descheduled before its first
  // claim may claim a block of the next (never a correctness matter). Without tickets all four
  // threads would take blocks.
  ThreadPoolOptions options;
  options.blocks_per_participant = 4;
  options.spin = std::chrono::microseconds(kSpinLongMicroseconds);
  ThreadPool pool(4, options);
  for (int round = 0; round < 50; ++round) {
    std::mutex mutex;
    std::set<std::thread::id> threads;
    Coverage coverage(16384);
    CHECK(pool.parallel_for(16384, 1, 2, [&](int64_t b, int64_t e) {
      coverage.visit(b, e);
      std::lock_guard<std::mutex> lock(mutex);
      threads.insert(std::this_thread::get_id());
    }) == 2);
    CHECK(coverage.each_index_once());
    CHECK(threads.size() <= 3);
  }
}
