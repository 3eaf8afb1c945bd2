#pragma once
// Thread pools shared across sessions. Without sharing, N sessions in one process (a notebook, a
// server with several models) start N x (threads - 1) workers that compete for the same cores and
// each spin after every region. Sessions whose pools would be alike (threads, spin, placement)
// share one instead; regions of sessions run concurrently from different threads queue for it
// (ThreadPool::parallel_for), each then running on every worker. A pool lives while a session
// (or anyone) holds it.
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "onnx_light/runtime/thread_pool.h"

namespace onnx_light::runtime {

class SharedThreadPools {
 public:
  SharedThreadPools() = default;
  SharedThreadPools(const SharedThreadPools&) = delete;
  SharedThreadPools& operator=(const SharedThreadPools&) = delete;

  // The live pool with these threads and options, or a new one (throws as ThreadPool's constructor).
  std::shared_ptr<ThreadPool> acquire(int threads, const ThreadPoolOptions& options);
  // Pools some holder still keeps alive.
  int live_pools() const;

 private:
  struct Entry {
    int threads;
    ThreadPoolOptions options;
    std::weak_ptr<ThreadPool> pool;
  };
  mutable std::mutex mutex_;
  mutable std::vector<Entry> entries_;  // expired entries are dropped as they are met
};

// The process's pools, created on first use: what sessions share unless given a pool of their own.
SharedThreadPools& process_thread_pools();

}  // namespace onnx_light::runtime
