#pragma once
// Per-participant scratch that a kernel keeps across runs (issue 15): each block of a parallel
// region claims a free slot for its duration, so blocks running at the same time never share one,
// and once the slots have grown a steady-state run allocates nothing. ParallelFor gives no thread
// index, hence the claim; a region never has more blocks in flight than the pool has threads.
#include <atomic>
#include <cstddef>
#include <memory>
#include <vector>

namespace onnx_light::runtime::kernels {

template <typename Slot>
class ScratchSlots {
 public:
  // At least `count` slots (new ones default-constructed); only between parallel regions.
  void ensure(std::size_t count) {
    if (slots_.size() >= count) return;
    slots_.resize(count);
    busy_ = std::make_unique<std::atomic<bool>[]>(count);
    for (std::size_t i = 0; i < count; ++i) busy_[i].store(false, std::memory_order_relaxed);
  }
  std::size_t size() const { return slots_.size(); }
  // Slot i, to size it before a region (not during one).
  Slot& operator[](std::size_t i) { return slots_[i]; }

  // A free slot for one block, released at scope exit.
  class Lease {
   public:
    explicit Lease(ScratchSlots& owner) : owner_(owner) {
      for (;;) {
        for (std::size_t i = 0; i < owner_.slots_.size(); ++i) {
          bool expected = false;
          if (!owner_.busy_[i].load(std::memory_order_relaxed) &&
              owner_.busy_[i].compare_exchange_strong(expected, true, std::memory_order_acquire)) {
            index_ = i;
            return;
          }
        }
      }
    }
    ~Lease() { owner_.busy_[index_].store(false, std::memory_order_release); }
    Lease(const Lease&) = delete;
    Lease& operator=(const Lease&) = delete;
    Slot& operator*() const { return owner_.slots_[index_]; }
    Slot* operator->() const { return &owner_.slots_[index_]; }

   private:
    ScratchSlots& owner_;
    std::size_t index_ = 0;
  };

 private:
  std::vector<Slot> slots_;
  std::unique_ptr<std::atomic<bool>[]> busy_;
};

}  // namespace onnx_light::runtime::kernels
