#include "tensor_buffer_pool.h"

#include <algorithm>
#include <cstring>
#include <new>

#include <fmt/format.h>

#include "onnx_light/runtime/memory_limit.h"

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

PoolLimitError::PoolLimitError(std::size_t requested_bytes, std::size_t held_bytes, std::size_t limit_bytes)
    : MemoryLimitError(fmt::format("{} ({} bytes) more would pass the session's memory limit of {} ({} held)",
                                   format_bytes(static_cast<int64_t>(std::min<std::size_t>(requested_bytes, INT64_MAX))),
                                   requested_bytes, format_bytes(static_cast<int64_t>(limit_bytes)),
                                   format_bytes(static_cast<int64_t>(held_bytes)))),
      requested(requested_bytes),
      held(held_bytes),
      limit(limit_bytes) {}

TensorBufferPool::TensorBufferPool(std::size_t max_cached_bytes) : max_cached_bytes_(max_cached_bytes) {}

void TensorBufferPool::set_limit(std::size_t limit, std::size_t reserved) {
  std::lock_guard lock(mutex_);
  limit_ = limit;
  reserved_ = reserved;
}

TensorBufferPool::~TensorBufferPool() {
  for (Block& block : free_) {
    // A recycled block's deleter finds this pool gone and frees the block itself.
    if (block.storage) block.storage.reset();
    else free_tensor_block(block.data);
  }
}

Tensor TensorBufferPool::make(ElementType type, Shape shape, bool zero) {
  const std::size_t bytes = Tensor::storage_bytes(type, shape);
  Block block = take(bytes);
  if (zero) std::memset(block.data, 0, bytes);
  if (block.storage) return Tensor::adopt(type, std::move(shape), std::move(block.storage), block.capacity);
  // Should the control block fail to allocate, shared_ptr runs the deleter: the block is not lost.
  std::shared_ptr<std::byte> storage(block.data, ReturnToPool{weak_from_this(), block.capacity});
  return Tensor::adopt(type, std::move(shape), std::move(storage), block.capacity);
}

void TensorBufferPool::make_into(Tensor& target, ElementType type, const Shape& shape, bool zero) {
  const std::size_t bytes = Tensor::storage_bytes(type, shape);
  recycle(target);  // its block (and control block) may be the best fit for this very request
  Block block = take(bytes);
  if (zero) std::memset(block.data, 0, bytes);
  if (!block.storage) block.storage = std::shared_ptr<std::byte>(block.data, ReturnToPool{weak_from_this(), block.capacity});
  target.assign_adopted(type, shape, std::move(block.storage), block.capacity);
}

std::size_t TensorBufferPool::cached_bytes() const {
  std::lock_guard lock(mutex_);
  return cached_bytes_;
}

std::size_t TensorBufferPool::outstanding_bytes() const {
  std::lock_guard lock(mutex_);
  return outstanding_bytes_;
}

std::size_t TensorBufferPool::peak_outstanding_bytes() const {
  std::lock_guard lock(mutex_);
  return peak_outstanding_bytes_;
}

TensorBufferPool::Block TensorBufferPool::take(std::size_t bytes) {
  const auto by_capacity = [](const Block& b, std::size_t wanted) { return b.capacity < wanted; };
  {
    std::lock_guard lock(mutex_);
    auto it = std::lower_bound(free_.begin(), free_.end(), bytes, by_capacity);
    // At most twice the request: a small value must not pin a large block that a later large
    // value of the same run then has to allocate afresh.
    if (it != free_.end() && it->capacity / 2 <= bytes) {
      Block block = std::move(*it);
      free_.erase(it);
      cached_bytes_ -= block.capacity;
      outstanding_bytes_ += block.capacity;
      peak_outstanding_bytes_ = std::max(peak_outstanding_bytes_, outstanding_bytes_);
      return block;
    }
  }
  reserve_new(bytes);
  Block block{bytes, nullptr, nullptr};
  try {
    block.data = allocate_tensor_block(bytes);
  } catch (...) {
    std::lock_guard lock(mutex_);
    outstanding_bytes_ -= bytes;
    throw;
  }
  return block;
}

void TensorBufferPool::reserve_new(std::size_t bytes) {
  std::vector<Block> dropped;  // cached blocks given up for room: freed after unlock
  bool refused = false;
  std::size_t held = 0, limit = 0;
  {
    std::lock_guard lock(mutex_);
    const auto fits = [&](std::size_t cached) {
      return limit_ == 0 || (bytes <= limit_ && reserved_ + outstanding_bytes_ + cached <= limit_ - bytes);
    };
    if (!fits(cached_bytes_)) {
      dropped.swap(free_);
      cached_bytes_ = 0;
    }
    if (fits(0)) {
      outstanding_bytes_ += bytes;
      peak_outstanding_bytes_ = std::max(peak_outstanding_bytes_, outstanding_bytes_);
    } else {
      refused = true;
      held = reserved_ + outstanding_bytes_;
      limit = limit_;
    }
  }
  for (Block& block : dropped) {
    if (block.storage) {
      // A recycled block: its deleter would cache it here again, so point it at the OS.
      if (auto* deleter = std::get_deleter<ReturnToPool>(block.storage)) deleter->pool.reset();
      block.storage.reset();
    } else {
      free_tensor_block(block.data);
    }
  }
  if (refused) throw PoolLimitError(bytes, held, limit);
}

void TensorBufferPool::recycle(Tensor& tensor) noexcept {
  if (!tensor.exclusively_owned()) {
    tensor.release();
    return;
  }
  const void* data = tensor.raw_data();
  std::shared_ptr<std::byte> storage = tensor.release_storage();
  const ReturnToPool* origin = std::get_deleter<ReturnToPool>(storage);
  if (origin == nullptr || storage.get() != data || origin->pool.lock().get() != this) return;  // not ours
  const std::size_t capacity = origin->bytes;
  try {
    std::lock_guard lock(mutex_);
    if (cached_bytes_ + capacity > max_cached_bytes_) return;  // dropped after unlock: back to the OS
    const auto by_capacity = [](std::size_t wanted, const Block& b) { return wanted < b.capacity; };
    std::byte* block = storage.get();
    free_.insert(std::upper_bound(free_.begin(), free_.end(), capacity, by_capacity),
                 Block{capacity, block, std::move(storage)});
    outstanding_bytes_ -= capacity;
    cached_bytes_ += capacity;
  } catch (...) {  // no memory for the bookkeeping: the storage's deleter gives the block back
  }
}

void TensorBufferPool::give_back(std::byte* block, std::size_t capacity) noexcept {
  try {
    std::lock_guard lock(mutex_);
    outstanding_bytes_ -= capacity;
    if (cached_bytes_ + capacity <= max_cached_bytes_) {
      const auto by_capacity = [](std::size_t wanted, const Block& b) { return wanted < b.capacity; };
      free_.insert(std::upper_bound(free_.begin(), free_.end(), capacity, by_capacity), Block{capacity, block, nullptr});
      cached_bytes_ += capacity;
      return;
    }
  } catch (...) {  // no memory for the bookkeeping: give the block to the OS instead
  }
  free_tensor_block(block);
}

}  // namespace onnx_light::runtime
