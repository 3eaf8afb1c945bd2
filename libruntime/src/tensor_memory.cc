#include "tensor_memory.h"

#include <cstdlib>
#include <new>

#if defined(__linux__)
#include <sys/mman.h>
#endif

#include "onnx_light/runtime/tensor.h"

namespace onnx_light::runtime {

std::byte* allocate_tensor_block(std::size_t bytes) {
  const bool huge = bytes >= kHugePageBytes;
  void* block = nullptr;
  if (posix_memalign(&block, huge ? kHugePageBytes : kTensorAlignment, bytes) != 0) throw std::bad_alloc();
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  // Advice only: where huge pages are off or unavailable the block stays on small pages.
  if (huge) (void)madvise(block, bytes / kHugePageBytes * kHugePageBytes, MADV_HUGEPAGE);
#endif
  return static_cast<std::byte*>(block);
}

void free_tensor_block(std::byte* block) noexcept { std::free(block); }

}  // namespace onnx_light::runtime
