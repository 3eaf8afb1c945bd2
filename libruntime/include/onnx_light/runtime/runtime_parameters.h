#pragma once
namespace onnx_light::runtime {

// Execution parameters of a session. num_threads = 0 means one thread per physical core.
struct RuntimeParameters {
  int num_threads = 0;
  RuntimeParameters() = default;
  explicit RuntimeParameters(int threads) : num_threads(threads) {}
};

// Threads a session with these parameters runs on (resolves 0 to the physical core count).
int effective_threads(const RuntimeParameters& parameters);
// Physical cores of this machine (cpuinfo), at least 1.
int physical_core_count();

}  // namespace onnx_light::runtime
