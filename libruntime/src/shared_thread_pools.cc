#include "onnx_light/runtime/shared_thread_pools.h"

#include <algorithm>

namespace onnx_light::runtime {

std::shared_ptr<ThreadPool> SharedThreadPools::acquire(int threads, const ThreadPoolOptions& options) {
  std::lock_guard<std::mutex> lock(mutex_);
  std::erase_if(entries_, [](const Entry& e) { return e.pool.expired(); });
  for (const Entry& e : entries_) {
    if (e.threads != threads || e.options.spin != options.spin || e.options.cpus != options.cpus) continue;
    if (auto pool = e.pool.lock()) return pool;
  }
  auto pool = std::make_shared<ThreadPool>(threads, options);
  entries_.push_back(Entry{threads, options, pool});
  return pool;
}

int SharedThreadPools::live_pools() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::erase_if(entries_, [](const Entry& e) { return e.pool.expired(); });
  return static_cast<int>(entries_.size());
}

SharedThreadPools& process_thread_pools() {
  static SharedThreadPools pools;
  return pools;
}

}  // namespace onnx_light::runtime
