#include "tensor_buffer_pool.h"

#include <cstring>
#include <new>

#include "tensor_memory.h"

namespace onnx_light::runtime {

// The deleter of pooled storage: back to the pool while it lives, else to the OS.
struct TensorBufferPool::ReturnToPool {
  std::weak_ptr<TensorBufferPool> pool;
  std::size_t bytes = 0;
  void operator()(std::byte* block) const noexcept {
    if (auto owner = pool.lock()) owner->give_back(block, bytes);
    else free_tensor_block(block);
  }
};

TensorBufferPool::TensorBufferPool(std::size_t max_cached_bytes) : max_cached_bytes_(max_cached_bytes) {}

TensorBufferPool::~TensorBufferPool() {
  for (auto& [bytes, blocks] : free_)
    for (std::byte* block : blocks) free_tensor_block(block);
}

Tensor TensorBufferPool::make(ElementType type, Shape shape, bool zero) {
  const std::size_t bytes = Tensor::storage_bytes(type, shape);
  std::byte* block = take(bytes);
  if (zero) std::memset(block, 0, bytes);
  // Should the control block fail to allocate, shared_ptr runs the deleter: the block is not lost.
  std::shared_ptr<std::byte> storage(block, ReturnToPool{weak_from_this(), bytes});
  return Tensor::adopt(type, std::move(shape), std::move(storage), bytes);
}

std::size_t TensorBufferPool::cached_bytes() const {
  std::lock_guard lock(mutex_);
  return cached_bytes_;
}

std::byte* TensorBufferPool::take(std::size_t bytes) {
  {
    std::lock_guard lock(mutex_);
    auto it = free_.find(bytes);
    if (it != free_.end() && !it->second.empty()) {
      std::byte* block = it->second.back();
      it->second.pop_back();
      cached_bytes_ -= bytes;
      return block;
    }
  }
  return allocate_tensor_block(bytes);
}

void TensorBufferPool::give_back(std::byte* block, std::size_t bytes) noexcept {
  try {
    std::lock_guard lock(mutex_);
    if (cached_bytes_ + bytes <= max_cached_bytes_) {
      free_[bytes].push_back(block);
      cached_bytes_ += bytes;
      return;
    }
  } catch (...) {  // no memory for the bookkeeping: give the block to the OS instead
  }
  free_tensor_block(block);
}

}  // namespace onnx_light::runtime
