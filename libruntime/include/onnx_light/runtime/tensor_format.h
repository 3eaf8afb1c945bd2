#pragma once
// Human-readable tensor contents for the CLI and Python reprs.
#include <cstdint>
#include <string>

#include "onnx_light/runtime/tensor.h"

namespace onnx_light::runtime {

// Element `index` (flat, C order) as text; 16-bit floats are widened to float.
std::string format_element(const Tensor& tensor, int64_t index);
// "[1, 2, 3, ... 6 more]" with at most `limit` elements shown.
std::string format_preview(const Tensor& tensor, int64_t limit = 8);
// Element as double (for JSON and statistics); bool as 0/1.
double element_as_double(const Tensor& tensor, int64_t index);

}  // namespace onnx_light::runtime
