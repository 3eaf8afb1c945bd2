#pragma once
// A persistent pool: workers spin briefly then park, the calling thread takes part, and work is
// split into contiguous deterministic blocks, so results never depend on timing. A ParallelFor
// issued from inside a region runs inline, serially, with the same blocks; one issued while
// another thread holds the pool waits for its region to end.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <string_view>
#include <thread>
#include <vector>

#include "onnx_light/runtime/function_ref.h"
#include "onnx_light/runtime/runtime_parameters.h"

namespace onnx_light::runtime {

class ParallelRegionCollector;

// Where a parallel region reports itself; all optional.
struct ParallelRegionTrace {
  ParallelRegionCollector* collector = nullptr;
  std::string_view label;
};

// Contiguous block b of `blocks` over [0, n) aligned to `grain`: deterministic for (n, blocks, grain).
// [0, n) is cut into U = ceil(n / grain) units of `grain` indices (the last unit may be shorter).
// Each block gets floor(U / blocks) units and the first U % blocks blocks one more, so block b
// begins at index grain * (b * floor(U / blocks) + min(b, U % blocks)), clamped to n. Blocks are
// contiguous, ordered and cover [0, n); every boundary but n is a multiple of grain. A block is
// empty only when U < blocks, and then exactly the trailing blocks b >= U are (begin == end == n).
// grain < 1 counts as 1. Throws InvalidValueError for n < 0, blocks < 1 or block outside [0, blocks).
struct BlockRange {
  int64_t begin;
  int64_t end;
};
BlockRange partition_block(int64_t n, int64_t grain, int blocks, int block);

// How a pool's threads behave (RuntimeParameters' spin and affinity, resolved).
struct ThreadPoolOptions {
  // How long an idle worker, or the caller waiting for the workers, spins before it parks. 0: it
  // parks at once and AwakeScope keeps nobody spinning (every region then pays a wake-up).
  std::chrono::microseconds spin{kSpinShortMicroseconds};
  // Placement by participant: worker i (1 <= i < threads) is pinned to cpus[i % cpus.size()];
  // entry 0 is the caller's, which the pool never pins. Empty: no worker is pinned.
  std::vector<int> cpus;
  // Blocks a region is cut into per participant (1..kMaximumBlocksPerParticipant), where each block
  // keeps at least kMinimumUnitsPerBlock units: with more blocks than participants, one that runs
  // late (a vCPU the host took away) leaves its unclaimed blocks to the others. 1 (the default):
  // one block per participant. bench/RESULTS.md ("Straggler-tolerant ParallelFor") measures both.
  int blocks_per_participant = 1;
};
inline constexpr int kMaximumBlocksPerParticipant = 16;
inline constexpr int64_t kMinimumUnitsPerBlock = 512;
// The options a session with these parameters gives its pool (validates them). blocks_per_participant
// comes from the environment variable ONNX_LIGHT_BLOCKS_PER_PARTICIPANT when it holds a number in
// [1, kMaximumBlocksPerParticipant] (an experiment switch for bench/; anything else is ignored).
ThreadPoolOptions thread_pool_options(const RuntimeParameters& parameters);

class ThreadPool {
 public:
  // threads >= 1 participants, including the caller (threads - 1 workers are started, named
  // "onnxl-pool-<i>" where the system allows, and pinned as options.cpus says).
  // Throws InvalidValueError for threads < 1 or a spin outside [0, kSpinMaximumMicroseconds],
  // Error when the system refuses to start or pin a worker (naming the CPU).
  explicit ThreadPool(int threads, ThreadPoolOptions options = {});
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int threads() const { return threads_; }
  // Unique within the process, never reused: tells whether two sessions share a pool.
  uint64_t id() const { return id_; }
  std::chrono::microseconds spin() const { return options_.spin; }
  // The placement the workers were pinned to (ThreadPoolOptions::cpus; empty: not pinned).
  const std::vector<int>& cpus() const { return options_.cpus; }

  // Runs fn(begin, end) over [0, n) as partition_block(n, grain, B, b) for b in [0, B), with
  // P = min(admitted, threads(), ceil(n / grain)) participants (the caller and P - 1 workers) and
  // B = P blocks, or with blocks_per_participant k > 1 and P > 1, B = min(k P, ceil(n / grain) /
  // kMinimumUnitsPerBlock) when that is more than P; no block is ever empty. The caller runs block
  // 0, then participants claim the others as they come free. admitted <= 1, n <= grain, or nesting (a call from inside a region
  // of any pool) run the same B blocks inline on the calling thread, in order. A call while another thread is in a region of this pool
  // waits for that region to end, then runs on the pool: regions of concurrent callers queue. Every block runs even when one throws; the
  // exception of the lowest-numbered throwing block is rethrown here after all blocks finished.
  // n == 0 calls nothing; n < 0 throws InvalidValueError.
  // Returns the participants used: P when the pool ran the region, 1 when it ran inline.
  int parallel_for(int64_t n, int64_t grain, int admitted, FunctionRef<void(int64_t, int64_t)> fn);

  // True on a thread that is currently executing a block of this or any pool.
  static bool in_parallel_region();

  // While one lives, idle workers spin instead of parking after the spin budget, and parked ones
  // are woken at once: for a sequence of regions close together (the nodes of one inference), so
  // that only the first pays a wake-up. Workers park again once the last scope ends and the budget
  // runs out. Scopes nest and may overlap across threads.
  class AwakeScope {
   public:
    explicit AwakeScope(ThreadPool& pool);
    ~AwakeScope();
    AwakeScope(const AwakeScope&) = delete;
    AwakeScope& operator=(const AwakeScope&) = delete;

   private:
    ThreadPool* pool_;
  };
  // Workers currently parked (for tests and diagnostics).
  int parked_workers() const { return parked_.load(std::memory_order_relaxed); }
  // The workers' kernel thread ids, in worker order (for per-thread counters and diagnostics);
  // waits for any worker that has not started yet.
  std::vector<int> worker_thread_ids() const;

 private:
  using Job = FunctionRef<void(int64_t, int64_t)>;
  void worker_loop();
  void name_and_pin(std::thread& worker, int index);
  // Claims and runs blocks of the current job until none is left.
  void run_claimed_blocks();
  void run_block(int block);
  void publish(int blocks, int participants);
  void wait_for_completion();
  void stop_workers() noexcept;

  // Spins until done() or the spin budget runs out; returns done(). The budget restarts while
  // keep_spinning() holds.
  template <class Done, class KeepSpinning>
  bool spin_until(Done done, KeepSpinning keep_spinning) const;

  int threads_;
  uint64_t id_;
  ThreadPoolOptions options_;
  std::vector<std::thread> workers_;
  std::unique_ptr<std::atomic<int>[]> worker_tids_;  // 0 until the worker has started
  std::mutex caller_mutex_;  // one region at a time; a second caller waits for it
  // Current job. Written only while no block is claimable; read only by a thread that has
  // claimed a block, which keeps the job alive until pending_ drops to 0.
  const Job* job_fn_ = nullptr;
  int64_t job_n_ = 0;
  int64_t job_grain_ = 1;
  int job_blocks_ = 0;
  // (blocks << 32) | next block: a successful claim is always a block of the current job, so a
  // worker that wakes late can never run a block of a finished job.
  std::atomic<uint64_t> claim_{0};
  std::atomic<uint64_t> tickets_{0};  // (helpers admitted << 32) | helpers in: bounds a region's workers
  std::atomic<uint64_t> generation_{0};  // bumped per job: what idle workers wait on
  std::atomic<int> pending_{0};          // blocks of the current job not finished yet
  std::atomic<bool> stop_{false};
  std::mutex park_mutex_;
  std::condition_variable park_cv_;  // parked workers wait for a new generation or stop
  std::condition_variable done_cv_;  // the parked caller waits for pending_ == 0
  std::atomic<int> parked_{0};
  std::atomic<int> awake_scopes_{0};
  std::atomic<bool> caller_parked_{false};
  std::mutex error_mutex_;
  std::exception_ptr error_;
  int error_block_ = 0;
};

// The cheap test kernels use before entering the pool: parallel only when n reaches the
// tuned threshold and more than one thread is available.
inline int admitted_threads_for(int64_t n, int64_t minimum_elements, int pool_threads) {
  return (pool_threads > 1 && n >= minimum_elements && n > 1) ? pool_threads : 1;
}

}  // namespace onnx_light::runtime
