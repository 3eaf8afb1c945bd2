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
// Physical cores this process may run on, at least 1: on Linux the distinct (package, core) pairs
// of the CPUs in its affinity mask, from sysfs topology; elsewhere, or when sysfs cannot tell,
// cpuinfo's count. (cpuinfo alone is not trusted: on processors it does not know, e.g. AMD family
// 26, it counts every CPU of a package as one core.)
int physical_core_count();
// The same over every online CPU of the machine, whatever the affinity (host descriptors).
int machine_physical_core_count();

}  // namespace onnx_light::runtime
