#pragma once
// A session's recycler of output storage. A tensor handed to the caller keeps its block; when the
// caller drops it, the block comes back here instead of going to the OS, so a loop that takes
// fresh outputs every run (ONNX Runtime's "alloc" mode, Python notebooks) reuses pages that are
// already mapped and faulted in, as ONNX Runtime's arena does. A request takes the smallest free
// block that holds it, if that block is at most twice the request (best fit; a session releasing
// intermediate values at their last use then reuses them for later values of other shapes), else a
// new block. The free list is a sorted vector, so steady-state take/give allocate nothing.
// Thread-safe: the last reference may go anywhere.
#include <cstddef>
#include <memory>
#include <mutex>
#include <vector>

#include "onnx_light/runtime/error.h"
#include "onnx_light/runtime/tensor.h"

namespace onnx_light::runtime {

// A request the pool's limit refused; the session adds which node and output asked.
class PoolLimitError : public MemoryLimitError {
 public:
  PoolLimitError(std::size_t requested, std::size_t held, std::size_t limit);
  std::size_t requested, held, limit;
};

class TensorBufferPool : public std::enable_shared_from_this<TensorBufferPool> {
 public:
  // Blocks beyond `max_cached_bytes` are returned to the OS instead of cached.
  explicit TensorBufferPool(std::size_t max_cached_bytes = std::size_t{512} << 20);
  ~TensorBufferPool();
  TensorBufferPool(const TensorBufferPool&) = delete;
  TensorBufferPool& operator=(const TensorBufferPool&) = delete;

  // An owned tensor; its contents are zero when `zero`, else whatever the block held.
  Tensor make(ElementType type, Shape shape, bool zero);
  // The same into `target` (whatever it held is dropped first), reusing its shape vector: with a
  // recycled block this allocates nothing at all.
  void make_into(Tensor& target, ElementType type, const Shape& shape, bool zero);
  std::size_t cached_bytes() const;
  // New blocks are refused (PoolLimitError) once `reserved` (the session's weights) plus the
  // blocks handed out plus the request would pass `limit`; cached free blocks are returned to the
  // OS first to make room. 0: no limit.
  void set_limit(std::size_t limit, std::size_t reserved);
  // Takes back `tensor`'s block when this pool made it and nobody else holds it, keeping its
  // shared_ptr control block for the next make() (so a block recycled this way and taken again
  // costs no allocation at all); `tensor` becomes empty either way, keeping its shape capacity.
  void recycle(Tensor& tensor) noexcept;
  // Bytes of the blocks this pool handed out that are still held somewhere (by capacity), and the
  // most there ever were at once: the session's activation working set.
  std::size_t outstanding_bytes() const;
  std::size_t peak_outstanding_bytes() const;

 private:
  struct ReturnToPool;
  struct Block {
    std::size_t capacity;
    std::byte* data;
    std::shared_ptr<std::byte> storage;  // set for recycled blocks: reused as is
  };
  // The block and its capacity (>= bytes).
  Block take(std::size_t bytes);
  void give_back(std::byte* block, std::size_t capacity) noexcept;
  // Counts `bytes` of a new block as handed out, or throws PoolLimitError.
  void reserve_new(std::size_t bytes);

  const std::size_t max_cached_bytes_;
  std::size_t limit_ = 0;
  std::size_t reserved_ = 0;
  mutable std::mutex mutex_;
  std::vector<Block> free_;  // sorted by capacity
  std::size_t cached_bytes_ = 0;
  std::size_t outstanding_bytes_ = 0;
  std::size_t peak_outstanding_bytes_ = 0;
};

}  // namespace onnx_light::runtime
