#pragma once
// Counts every heap allocation of the process, on any thread, while counting is on: the C
// allocation functions (malloc ... posix_memalign, which the tensor blocks and packed buffers
// use) are interposed by allocation_counter.cc, and the global operator new forwards to them.
// Link allocation_counter.cc into an executable (not a shared library, not a sanitizer build).
#include <vector>

#include "onnx_light/runtime/kernel_table.h"
#include "onnx_light/runtime/model.h"
#include "onnx_light/runtime/tensor.h"

namespace onnx_light::test {

struct AllocationCount {
  long allocations = 0;
  long bytes = 0;
};

// Resets the count and starts counting.
void start_counting();
// Stops counting; what was counted since start_counting.
AllocationCount stop_counting();
// The count so far (counting on or off).
AllocationCount counted_so_far();

struct SteadyStateAllocations {
  long allocations = 0;  // over all counted runs
  long bytes = 0;
  int runs = 0;
};
// Allocations during `runs` positional runs of `model` after three warm-up runs (which let every
// thread grow its scratch once), outputs bound to caller memory.
SteadyStateAllocations count_steady_state_allocations(const runtime::Model& model,
                                                      const std::vector<runtime::Tensor>& inputs, int threads,
                                                      int runs = 20, const runtime::KernelTable* kernels = nullptr);

}  // namespace onnx_light::test
