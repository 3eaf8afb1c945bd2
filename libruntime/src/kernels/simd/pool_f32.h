#pragma once
// 2-D MaxPool / AveragePool over float32: the interior columns of one output row (every tap of
// every window inside the input), one vector of outputs at a time (see README.md). The caller
// (kernels/conv_pool.cc) computes the windows; the edge columns stay on its portable loop.
#include <cstddef>
#include <cstdint>

namespace onnx_light::runtime::kernels::simd {

struct PoolF32Row {
  const float* first;     // the first output's window: kernel row 0, kernel column 0
  int64_t kernel_rows;    // taps down (rows inside the input), row_step floats apart
  int64_t row_step;
  int64_t kernel_w, dilation_w, stride_w;
  int64_t n;              // outputs
  float* y;
  bool max;
  float divisor;          // AveragePool: y = sum / divisor
  // 1 when the first output's window starts one column left of `first`, in the pads (MaxPool with
  // stride 2, dilation 1 and 2 or 3 taps across only): that output's missing tap repeats the
  // row's next one, which leaves the portable loop's result unchanged (a repeated tap never
  // replaces the running maximum), so the left edge column runs here too.
  int64_t lead = 0;
};

// Per output, the portable loop's expressions in its order (taps row-major): MaxPool keeps
// v > acc ? v : acc from the first tap on, AveragePool sums 0 + v over the taps and divides once.
// Bit-identical to it, NaN and signed zeros included.
void pool_f32_row_avx512(const PoolF32Row& row);

}  // namespace onnx_light::runtime::kernels::simd
