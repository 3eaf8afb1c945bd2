#include "onnx_light/runtime/runtime_parameters.h"

#include <cpuinfo.h>

#include <string>
#include <thread>

#include "onnx_light/runtime/error.h"

namespace onnx_light::runtime {

int effective_threads(const RuntimeParameters& parameters) {
  if (parameters.num_threads < 0) {
    throw InvalidValueError("num_threads must be >= 0 (0 = one thread per physical core), got " +
                            std::to_string(parameters.num_threads));
  }
  return parameters.num_threads == 0 ? physical_core_count() : parameters.num_threads;
}

int physical_core_count() {
  // Cached: cpuinfo reads /sys and /proc, and the answer cannot change during the process.
  static const int count = [] {
    if (cpuinfo_initialize()) {
      const uint32_t cores = cpuinfo_get_cores_count();
      if (cores > 0) return static_cast<int>(cores);
    }
    // hardware_concurrency counts logical CPUs, the best guess left when cpuinfo cannot tell.
    const unsigned logical = std::thread::hardware_concurrency();
    return logical > 0 ? static_cast<int>(logical) : 1;
  }();
  return count;
}

}  // namespace onnx_light::runtime
