#include "onnx_light/runtime/thread_pool.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <string>
#include <system_error>
#include <utility>

#if defined(__linux__)
#include <pthread.h>
#include <sched.h>
#endif

#include "onnx_light/runtime/error.h"
#include "onnx_light/runtime/hardware_counters.h"
#include "thread_index.h"

namespace onnx_light::runtime {
namespace {

thread_local bool t_in_region = false;
thread_local int t_thread_index = 0;  // set once by each worker

// Marks the current thread as running a block; restores the previous state so that nested
// inline regions unwind correctly.
class RegionFlag {
 public:
  RegionFlag() : previous_(t_in_region) { t_in_region = true; }
  ~RegionFlag() { t_in_region = previous_; }
  RegionFlag(const RegionFlag&) = delete;
  RegionFlag& operator=(const RegionFlag&) = delete;

 private:
  bool previous_;
};

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield" ::: "memory");
#endif
}

// The spin budget (ThreadPoolOptions::spin, kSpinShortMicroseconds by default) is measured in
// time, not iterations, because `pause` ranges from ~10 to ~150 cycles across x86 generations.
// The default must outlast the gap between two threads finishing one region: with 8 us, a worker
// that finished its half of Abs over 1e6 floats a little early parked, and every following run
// paid a wake-up (133 -> 160 us, in about half the processes).

int64_t unit_count(int64_t n, int64_t grain) { return n / grain + (n % grain != 0 ? 1 : 0); }

// partition_block without argument checks, for callers that already validated them.
BlockRange block_range(int64_t n, int64_t grain, int blocks, int block) {
  const int64_t units = unit_count(n, grain);
  const int64_t base = units / blocks;
  const int64_t extra = units % blocks;
  const auto first_unit = [&](int64_t b) { return b * base + std::min(b, extra); };
  // u < units implies u * grain < n, so the product cannot overflow.
  const auto index = [&](int64_t u) { return u >= units ? n : u * grain; };
  return BlockRange{index(first_unit(block)), index(first_unit(int64_t{block} + 1))};
}

int run_inline(int64_t n, int64_t grain, int blocks, FunctionRef<void(int64_t, int64_t)> fn) {
  RegionFlag flag;
  std::exception_ptr first;
  for (int b = 0; b < blocks; ++b) {
    const BlockRange r = block_range(n, grain, blocks, b);
    try {
      fn(r.begin, r.end);
    } catch (...) {
      // Same contract as the pooled path: every block runs, the lowest failing block wins.
      if (!first) first = std::current_exception();
    }
  }
  if (first) std::rethrow_exception(first);
  return 1;
}

}  // namespace

template <class Done, class KeepSpinning>
bool ThreadPool::spin_until(Done done, KeepSpinning keep_spinning) const {
  // spin none: one look, then park; nothing keeps it spinning (AwakeScope counts no scope).
  if (options_.spin.count() == 0) return done();
  const std::chrono::nanoseconds budget = options_.spin;
  auto deadline = std::chrono::steady_clock::now() + budget;
  for (unsigned i = 1;; ++i) {
    if (done()) return true;
    cpu_relax();
    // Reading the clock costs about as much as a few pauses: check it only now and then.
    if ((i & 15u) == 0) {
      const auto now = std::chrono::steady_clock::now();
      if (keep_spinning()) deadline = now + budget;
      else if (now >= deadline) return done();
    }
  }
}

ThreadPoolOptions thread_pool_options(const RuntimeParameters& parameters) {
  ThreadPoolOptions options;
  options.cpus = placement_cpus(parameters);  // validates, spin included
  options.spin = std::chrono::microseconds(parameters.spin_microseconds);
  if (const char* text = std::getenv("ONNX_LIGHT_BLOCKS_PER_PARTICIPANT")) {
    char* end = nullptr;
    const long value = std::strtol(text, &end, 10);
    if (end != text && *end == '\0' && value >= 1 && value <= kMaximumBlocksPerParticipant)
      options.blocks_per_participant = static_cast<int>(value);
  }
  return options;
}

BlockRange partition_block(int64_t n, int64_t grain, int blocks, int block) {
  if (n < 0) throw InvalidValueError("partition_block: n must be >= 0, got " + std::to_string(n));
  if (blocks < 1) throw InvalidValueError("partition_block: blocks must be >= 1, got " + std::to_string(blocks));
  if (block < 0 || block >= blocks) {
    throw InvalidValueError("partition_block: block " + std::to_string(block) + " is outside [0, " +
                            std::to_string(blocks) + ")");
  }
  return block_range(n, std::max<int64_t>(grain, 1), blocks, block);
}

namespace {
std::atomic<uint64_t> g_next_pool_id{1};
}  // namespace

ThreadPool::ThreadPool(int threads, ThreadPoolOptions options)
    : threads_(threads), id_(g_next_pool_id.fetch_add(1, std::memory_order_relaxed)), options_(std::move(options)) {
  if (threads < 1) throw InvalidValueError("ThreadPool: threads must be >= 1, got " + std::to_string(threads));
  if (options_.spin.count() < 0 || options_.spin.count() > kSpinMaximumMicroseconds)
    throw InvalidValueError("ThreadPool: spin must be from 0 to " + std::to_string(kSpinMaximumMicroseconds) +
                            " microseconds, got " + std::to_string(options_.spin.count()));
  workers_.reserve(static_cast<std::size_t>(threads - 1));
  worker_tids_ = std::make_unique<std::atomic<int>[]>(static_cast<std::size_t>(threads - 1));
  for (int i = 0; i + 1 < threads; ++i) worker_tids_[static_cast<std::size_t>(i)].store(0, std::memory_order_relaxed);
  try {
    for (int i = 1; i < threads; ++i) {
      workers_.emplace_back([this, i] {
        t_thread_index = i;
        worker_tids_[static_cast<std::size_t>(i - 1)].store(current_thread_id(), std::memory_order_release);
        worker_loop();
      });
      name_and_pin(workers_.back(), i);
    }
  } catch (const std::system_error& e) {
    // Joinable threads left behind would terminate the process when workers_ is destroyed.
    stop_workers();
    throw Error("ThreadPool: cannot start " + std::to_string(threads - 1) + " worker threads (" + e.what() +
                "); ask for fewer threads");
  } catch (...) {
    stop_workers();
    throw;
  }
}

// Pinned from here rather than by the worker itself, so that a refusal reaches the constructor's
// caller. Until then the worker can only spin or park: no job exists before the constructor returns.
void ThreadPool::name_and_pin(std::thread& worker, int index) {
#if defined(__linux__)
  // Best effort: a name only helps `top -H` and the pinning tests find the workers.
  const std::string name = ("onnxl-pool-" + std::to_string(index)).substr(0, 15);
  pthread_setname_np(worker.native_handle(), name.c_str());
  if (options_.cpus.empty()) return;
  const int cpu = options_.cpus[static_cast<std::size_t>(index) % options_.cpus.size()];
  if (cpu < 0 || cpu >= CPU_SETSIZE) throw InvalidValueError("ThreadPool: CPU " + std::to_string(cpu) + " does not exist");
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  if (const int rc = pthread_setaffinity_np(worker.native_handle(), sizeof(set), &set); rc != 0)
    throw Error("ThreadPool: cannot pin worker " + std::to_string(index) + " to CPU " + std::to_string(cpu) + " (" +
                std::system_category().message(rc) + "); is CPU " + std::to_string(cpu) +
                " in this process's allowed set?");
#else
  (void)worker;
  (void)index;
#endif
}

ThreadPool::~ThreadPool() { stop_workers(); }

std::vector<int> ThreadPool::worker_thread_ids() const {
  std::vector<int> tids(workers_.size());
  for (std::size_t i = 0; i < tids.size(); ++i) {
    while ((tids[i] = worker_tids_[i].load(std::memory_order_acquire)) == 0) std::this_thread::yield();
  }
  return tids;
}

void ThreadPool::stop_workers() noexcept {
  stop_.store(true, std::memory_order_seq_cst);
  // A worker between its predicate check and its wait holds park_mutex_; taking it here means
  // it either sees stop_ or is already waiting and gets the notification.
  { std::lock_guard<std::mutex> lock(park_mutex_); }
  park_cv_.notify_all();
  for (auto& worker : workers_) {
    if (worker.joinable()) worker.join();
  }
}

bool ThreadPool::in_parallel_region() { return t_in_region; }

int current_pool_thread_index() { return t_thread_index; }
ThreadPool::AwakeScope::AwakeScope(ThreadPool& pool) : pool_(&pool) {
  // spin none: idle workers never spin, not even between the regions of one run.
  if (pool.workers_.empty() || pool.options_.spin.count() == 0) return;
  pool.awake_scopes_.fetch_add(1, std::memory_order_seq_cst);
  // A parked worker re-checks its predicate, sees the scope and spins until the first region.
  if (pool.parked_.load(std::memory_order_seq_cst) == 0) return;
  { std::lock_guard<std::mutex> lock(pool.park_mutex_); }
  pool.park_cv_.notify_all();
}

ThreadPool::AwakeScope::~AwakeScope() {
  if (!pool_->workers_.empty() && pool_->options_.spin.count() != 0) pool_->awake_scopes_.fetch_sub(1, std::memory_order_seq_cst);
}

int ThreadPool::parallel_for(int64_t n, int64_t grain, int admitted, Job fn) {
  if (n < 0) throw InvalidValueError("parallel_for: n must be >= 0, got " + std::to_string(n));
  if (n == 0) return 1;
  grain = std::max<int64_t>(grain, 1);
  const int64_t units = unit_count(n, grain);
  const int participants = static_cast<int>(std::min<int64_t>({std::max(admitted, 1), threads_, units}));
  int blocks = participants;
  if (participants > 1 && options_.blocks_per_participant > 1) {
    const int64_t finer = std::min<int64_t>(int64_t{participants} * options_.blocks_per_participant,
                                            units / kMinimumUnitsPerBlock);
    if (finer > participants) blocks = static_cast<int>(finer);
  }
  if (blocks == 1) {
    RegionFlag flag;
    fn(0, n);
    return 1;
  }
  // Checked before locking: this thread may already hold caller_mutex_ (a nested call).
  if (t_in_region) return run_inline(n, grain, blocks, fn);
  // A second caller (another session sharing the pool, from another thread) queues for the pool
  // rather than running its region serially: it waits at most one region, then gets every worker.
  // No deadlock: a thread waits here only outside any region, so it holds no pool.
  std::unique_lock<std::mutex> caller(caller_mutex_);

  job_fn_ = &fn;
  job_n_ = n;
  job_grain_ = grain;
  job_blocks_ = blocks;
  publish(blocks, participants);
  // Block 0 is the caller's (publish leaves it claimed), so which thread runs which part of a
  // region does not depend on who reaches the claim counter first: with one block per
  // participant and two threads, each thread gets the same part of a repeated region every run
  // and finds its data (e.g. its half of a MatMul's output) in its own cache. While the worker
  // could win that race, the caller's half of qk [512,16] x [16,512] at T=2 took 40-50 us instead
  // of 25-30 on 9-48% of the runs (two processes), with block 0 fixed on 3-4% (bench/RESULTS.md).
  run_block(0);
  run_claimed_blocks();
  wait_for_completion();
  if (error_) {
    std::exception_ptr error = std::exchange(error_, nullptr);
    caller.unlock();
    std::rethrow_exception(error);
  }
  return participants;
}

void ThreadPool::publish(int blocks, int participants) {
  pending_.store(blocks, std::memory_order_relaxed);
  // participants - 1 helper tickets (see worker_loop); with one block per participant a worker past
  // the admitted count finds no block to claim anyway, so no tickets are kept.
  if (options_.blocks_per_participant > 1)
    tickets_.store(static_cast<uint64_t>(participants - 1) << 32, std::memory_order_relaxed);
  // Released here and acquired by every claim, so a claimer sees the job fields and pending_.
  // Block 0 starts claimed: the caller runs it (parallel_for).
  claim_.store((static_cast<uint64_t>(blocks) << 32) | 1u, std::memory_order_release);
  generation_.fetch_add(1, std::memory_order_seq_cst);
  // seq_cst pairs with the worker's parked_ increment followed by its generation_ check: either
  // the worker sees the new generation or we see it parked (Dekker).
  const int parked = parked_.load(std::memory_order_seq_cst);
  if (parked == 0) return;
  { std::lock_guard<std::mutex> lock(park_mutex_); }
  // The caller takes part itself, so participants - 1 helpers are wanted.
  if (participants - 1 >= parked) {
    park_cv_.notify_all();
  } else {
    for (int i = 0; i < participants - 1; ++i) park_cv_.notify_one();
  }
}

void ThreadPool::run_claimed_blocks() {
  for (;;) {
    // A late worker's increment either lands on an exhausted word (and is overwritten by the
    // next publish) or is a genuine claim on the current job: it can never run a stale block.
    const uint64_t word = claim_.fetch_add(1, std::memory_order_acq_rel);
    const auto block = static_cast<uint32_t>(word);
    const auto blocks = static_cast<uint32_t>(word >> 32);
    if (block >= blocks) return;
    run_block(static_cast<int>(block));
  }
}

void ThreadPool::run_block(int block) {
  const BlockRange r = block_range(job_n_, job_grain_, job_blocks_, block);
  try {
    RegionFlag flag;
    (*job_fn_)(r.begin, r.end);
  } catch (...) {
    std::lock_guard<std::mutex> lock(error_mutex_);
    // The lowest failing block wins, so which exception the caller sees does not depend on timing.
    if (!error_ || block < error_block_) {
      error_ = std::current_exception();
      error_block_ = block;
    }
  }
  // Past this decrement the job (and the caller's fn) may be gone: touch only pool members.
  if (pending_.fetch_sub(1, std::memory_order_seq_cst) == 1 && caller_parked_.load(std::memory_order_seq_cst)) {
    { std::lock_guard<std::mutex> lock(park_mutex_); }
    done_cv_.notify_one();
  }
}

void ThreadPool::wait_for_completion() {
  if (spin_until([this] { return pending_.load(std::memory_order_acquire) == 0; }, [] { return false; })) return;
  // seq_cst pairs with the last finisher's decrement followed by its caller_parked_ check.
  caller_parked_.store(true, std::memory_order_seq_cst);
  {
    std::unique_lock<std::mutex> lock(park_mutex_);
    done_cv_.wait(lock, [this] { return pending_.load(std::memory_order_seq_cst) == 0; });
  }
  caller_parked_.store(false, std::memory_order_relaxed);
}

void ThreadPool::worker_loop() {
  // Generation 0 is the constructor's, so a worker that starts late still joins the first job.
  uint64_t seen = 0;
  const auto has_news = [&] {
    return generation_.load(std::memory_order_seq_cst) != seen || stop_.load(std::memory_order_seq_cst);
  };
  const auto kept_awake = [&] { return awake_scopes_.load(std::memory_order_relaxed) > 0; };
  for (;;) {
    if (!spin_until(has_news, kept_awake)) {
      parked_.fetch_add(1, std::memory_order_seq_cst);
      {
        std::unique_lock<std::mutex> lock(park_mutex_);
        // Woken by a new job, stop, or a new awake scope (then it spins for the coming regions).
        park_cv_.wait(lock, [&] { return has_news() || awake_scopes_.load(std::memory_order_seq_cst) > 0; });
      }
      parked_.fetch_sub(1, std::memory_order_relaxed);
      if (!has_news()) continue;  // woken to spin: back to the loop's spin
    }
    if (stop_.load(std::memory_order_acquire)) return;
    seen = generation_.load(std::memory_order_acquire);
    // More blocks than participants: an awake worker past the region's admitted count stays out,
    // so that `admitted` still bounds the threads a region occupies. (A ticket taken on a stale
    // word can let one late worker in beyond it: a soft bound, never a correctness matter.)
    if (options_.blocks_per_participant > 1) {
      const uint64_t ticket = tickets_.fetch_add(1, std::memory_order_relaxed);
      if (static_cast<uint32_t>(ticket) >= static_cast<uint32_t>(ticket >> 32)) continue;
    }
    run_claimed_blocks();
  }
}

}  // namespace onnx_light::runtime
