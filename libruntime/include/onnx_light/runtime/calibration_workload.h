#pragma once
// How a kernel is exercised by calibration: a one-node model and seeded inputs whose total
// work is about `work_size` elements. Kernels declare this next to their tuning schema, so
// that every threshold-style parameter can be searched by the same engine.
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "onnx_light/runtime/tensor.h"

namespace onnx_light::runtime {

struct CalibrationWorkload {
  std::string model_text;                              // ONNX text syntax, one node
  std::vector<std::pair<std::string, Tensor>> inputs;  // name -> seeded tensor
  std::string description;                             // "float[65536]", "float[256,1] + float[1,256]"
  int64_t work_size = 0;                               // elements the threshold is compared with
};

// `variant` in [0, KernelDef::calibration_variants) selects a family-specific case shape
// (binary ops: 0 same shapes, 1 scalar broadcast, 2 multidirectional broadcast).
using CalibrationWorkloadFunction =
    std::function<CalibrationWorkload(int64_t work_size, int variant, uint32_t seed)>;

// Deterministic data: floats uniform in [-1, 1) from xorshift32 (the peer harness's rule),
// small integers, random booleans. 16-bit floats get values exact in their format.
Tensor random_tensor(ElementType type, const Shape& shape, uint32_t seed);

}  // namespace onnx_light::runtime
