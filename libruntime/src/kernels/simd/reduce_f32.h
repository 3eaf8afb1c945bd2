#pragma once
// Float reductions (ReduceSum, ReduceMean, ReduceSumSquare, ReduceL1, ReduceL2, ReduceMax,
// ReduceMin) with AVX2 (reduce_f32_avx2.cc). Called by ../reduce.cc only after the kernel table
// has checked the host's features. The caller applies the final step (mean's division, L2's sqrt).
#include <cstdint>

namespace onnx_light::runtime::kernels::simd {

// What is accumulated: x, x * x, |x|, max(x), min(x). Max and min propagate NaN.
enum ReduceF32Op : int { kReduceF32Sum = 0, kReduceF32SumSquare = 1, kReduceF32AbsSum = 2, kReduceF32Max = 3, kReduceF32Min = 4 };

// y[r] = reduction of the contiguous row x[r * length, (r + 1) * length) for r < rows, over
// 4 x 8 lane accumulators and a fixed horizontal tree: the result depends only on the row.
// Sum-like ops start at 0, max at -inf, min at +inf (length 0 gives those).
void reduce_rows_f32_avx2(int op, const float* x, float* y, int64_t rows, int64_t length);

// acc[j] = acc[j] (op) x[j] for j < n: one step of a column reduction. Called once per reduced
// position in order, it keeps the portable kernel's per-column order, so Sum, AbsSum, Max and
// Min give the portable result bit for bit; SumSquare fuses x * x + acc (one rounding where the
// portable kernel has two), so its last bit may differ from portable, never between threads.
void accumulate_f32_avx2(int op, float* acc, const float* x, int64_t n);

}  // namespace onnx_light::runtime::kernels::simd
