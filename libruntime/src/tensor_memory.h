#pragma once
// The memory blocks behind tensor storage (Tensor's own and the session's buffer pool).
#include <cstddef>

namespace onnx_light::runtime {

// Blocks from this size up are aligned to it and advised as transparent huge pages.
inline constexpr std::size_t kHugePageBytes = std::size_t{2} << 20;

// A block of `bytes` (> 0), aligned to kTensorAlignment, or to kHugePageBytes (with
// madvise(MADV_HUGEPAGE) where the OS has it) when bytes >= kHugePageBytes: a streaming kernel
// over 4 KiB pages takes a TLB miss every 1024 floats, and which physical pages a large buffer
// lands on made Abs over 1e6 floats run at 130 or 160 us from one process to the next.
// Throws std::bad_alloc.
std::byte* allocate_tensor_block(std::size_t bytes);
void free_tensor_block(std::byte* block) noexcept;

}  // namespace onnx_light::runtime
