// The process-wide allocation counter of allocation_counter.h: definitions of the C allocation
// functions that win over libc's for every library of the process, forwarding to glibc's own
// entry points so that counting never recurses.
#include "allocation_counter.h"

#include <malloc.h>

#include <atomic>
#include <cerrno>
#include <cstddef>
#include <cstdlib>
#include <new>

#include "onnx_light/runtime/session.h"

#if !defined(__GLIBC__)
#error "the allocation counter forwards to glibc's __libc_* allocation functions"
#endif

// glibc's own allocator entry points (exported for exactly this use): the interposed functions
// below forward to them, so the counter never recurses into itself.
extern "C" {
void* __libc_malloc(std::size_t bytes);
void* __libc_calloc(std::size_t count, std::size_t bytes);
void* __libc_realloc(void* block, std::size_t bytes);
void* __libc_memalign(std::size_t alignment, std::size_t bytes);
void* __libc_valloc(std::size_t bytes);
void* __libc_pvalloc(std::size_t bytes);
}

namespace {

std::atomic<bool> g_counting{false};
std::atomic<long> g_allocations{0};
std::atomic<long> g_bytes{0};

void note_allocation(std::size_t bytes) {
  if (g_counting.load(std::memory_order_relaxed)) {
    g_allocations.fetch_add(1, std::memory_order_relaxed);
    g_bytes.fetch_add(static_cast<long>(bytes), std::memory_order_relaxed);
  }
}

bool valid_alignment(std::size_t alignment) {
  return alignment != 0 && (alignment & (alignment - 1)) == 0 && alignment % sizeof(void*) == 0;
}

}  // namespace

extern "C" {

void* malloc(std::size_t bytes) noexcept {
  note_allocation(bytes);
  return __libc_malloc(bytes);
}

void* calloc(std::size_t count, std::size_t bytes) noexcept {
  note_allocation(count * bytes);
  return __libc_calloc(count, bytes);
}

void* realloc(void* block, std::size_t bytes) noexcept {
  if (block == nullptr || bytes != 0) note_allocation(bytes);  // realloc(p, 0) frees
  return __libc_realloc(block, bytes);
}

void* reallocarray(void* block, std::size_t count, std::size_t bytes) noexcept {
  std::size_t total = 0;
  if (__builtin_mul_overflow(count, bytes, &total)) {
    errno = ENOMEM;
    return nullptr;
  }
  return realloc(block, total);
}

int posix_memalign(void** block, std::size_t alignment, std::size_t bytes) noexcept {
  if (!valid_alignment(alignment)) return EINVAL;
  note_allocation(bytes);
  const int saved_errno = errno;  // posix_memalign reports through its result, never errno
  void* p = __libc_memalign(alignment, bytes);
  errno = saved_errno;
  if (p == nullptr) return ENOMEM;
  *block = p;
  return 0;
}

void* aligned_alloc(std::size_t alignment, std::size_t bytes) noexcept {
  note_allocation(bytes);
  return __libc_memalign(alignment, bytes);
}

void* memalign(std::size_t alignment, std::size_t bytes) noexcept {
  note_allocation(bytes);
  return __libc_memalign(alignment, bytes);
}

void* valloc(std::size_t bytes) noexcept {
  note_allocation(bytes);
  return __libc_valloc(bytes);
}

void* pvalloc(std::size_t bytes) noexcept {
  note_allocation(bytes);
  return __libc_pvalloc(bytes);
}

}  // extern "C"

namespace {

// operator new only forwards: the interposed functions above count.
void* allocate(std::size_t bytes, std::size_t alignment) noexcept {
  if (alignment <= alignof(std::max_align_t)) return std::malloc(bytes == 0 ? 1 : bytes);
  void* p = nullptr;
  return posix_memalign(&p, alignment, bytes == 0 ? alignment : bytes) == 0 ? p : nullptr;
}

void* allocate_or_throw(std::size_t bytes, std::size_t alignment) {
  if (void* p = allocate(bytes, alignment)) return p;
  throw std::bad_alloc();
}

}  // namespace

void* operator new(std::size_t n) { return allocate_or_throw(n, 0); }
void* operator new[](std::size_t n) { return allocate_or_throw(n, 0); }
void* operator new(std::size_t n, std::align_val_t a) { return allocate_or_throw(n, static_cast<std::size_t>(a)); }
void* operator new[](std::size_t n, std::align_val_t a) { return allocate_or_throw(n, static_cast<std::size_t>(a)); }
void* operator new(std::size_t n, const std::nothrow_t&) noexcept { return allocate(n, 0); }
void* operator new[](std::size_t n, const std::nothrow_t&) noexcept { return allocate(n, 0); }
void* operator new(std::size_t n, std::align_val_t a, const std::nothrow_t&) noexcept {
  return allocate(n, static_cast<std::size_t>(a));
}
void* operator new[](std::size_t n, std::align_val_t a, const std::nothrow_t&) noexcept {
  return allocate(n, static_cast<std::size_t>(a));
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }


namespace onnx_light::test {

void start_counting() {
  g_allocations = 0;
  g_bytes = 0;
  g_counting = true;
}

AllocationCount stop_counting() {
  g_counting = false;
  return counted_so_far();
}

AllocationCount counted_so_far() { return AllocationCount{g_allocations.load(), g_bytes.load()}; }

SteadyStateAllocations count_steady_state_allocations(const runtime::Model& model,
                                                      const std::vector<runtime::Tensor>& inputs, int threads,
                                                      int runs, const runtime::KernelTable* kernels) {
  using namespace onnx_light::runtime;
  RuntimeSessionOptions options;
  options.parameters = RuntimeParameters(threads);
  options.kernels = kernels;
  RuntimeSession session(model, options);
  // One named run gives the outputs' shapes (a real model's may be symbolic).
  RuntimeContext context;
  for (std::size_t i = 0; i < inputs.size() && i < session.inputs().size(); ++i)
    context.set(session.inputs()[i].name, inputs[i]);
  session.run(context);
  std::vector<Tensor> caller_memory, outputs;
  for (const auto& info : session.outputs()) {
    const Tensor& produced = context.get(info.name);
    caller_memory.emplace_back(produced.element_type(), produced.shape());
    outputs.push_back(Tensor::borrow(produced.element_type(), produced.shape(), caller_memory.back().raw_data()));
  }
  for (int i = 0; i < 3; ++i) session.run(inputs, outputs);
  start_counting();
  for (int i = 0; i < runs; ++i) session.run(inputs, outputs);
  const AllocationCount count = stop_counting();
  return SteadyStateAllocations{count.allocations, count.bytes, runs};
}

}  // namespace onnx_light::test
