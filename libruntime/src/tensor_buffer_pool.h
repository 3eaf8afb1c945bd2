#pragma once
// A session's recycler of output storage. A tensor handed to the caller keeps its block; when the
// caller drops it, the block comes back here instead of going to the OS, so a loop that takes
// fresh outputs every run (ONNX Runtime's "alloc" mode, Python notebooks) reuses pages that are
// already mapped and faulted in, as ONNX Runtime's arena does. Blocks are bucketed by exact size:
// repeated shapes are the case this serves. Thread-safe: the last reference may go anywhere.
#include <cstddef>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "onnx_light/runtime/tensor.h"

namespace onnx_light::runtime {

class TensorBufferPool : public std::enable_shared_from_this<TensorBufferPool> {
 public:
  // Blocks beyond `max_cached_bytes` are returned to the OS instead of cached.
  explicit TensorBufferPool(std::size_t max_cached_bytes = std::size_t{512} << 20);
  ~TensorBufferPool();
  TensorBufferPool(const TensorBufferPool&) = delete;
  TensorBufferPool& operator=(const TensorBufferPool&) = delete;

  // An owned tensor; its contents are zero when `zero`, else whatever the block held.
  Tensor make(ElementType type, Shape shape, bool zero);
  std::size_t cached_bytes() const;

 private:
  struct ReturnToPool;
  std::byte* take(std::size_t bytes);
  void give_back(std::byte* block, std::size_t bytes) noexcept;

  const std::size_t max_cached_bytes_;
  mutable std::mutex mutex_;
  std::unordered_map<std::size_t, std::vector<std::byte*>> free_;  // by block size
  std::size_t cached_bytes_ = 0;
};

}  // namespace onnx_light::runtime
