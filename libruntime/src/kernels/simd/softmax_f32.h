#pragma once
// Softmax, LogSoftmax and exp over float32, one definition per ISA (softmax_f32_avx2.cc,
// softmax_f32_avx512.cc). Called by ../softmax.cc only after the kernel table has checked the
// host's features. Every row is reduced in a fixed order (lane-wise accumulators, then a fixed
// horizontal tree), so a row's result never depends on which thread runs it.
#include <cstdint>

namespace onnx_light::runtime::kernels::simd {

// y[i] = exp(x[i]) for i < n over the whole float range: within 2 ulp of std::exp, subnormal
// results included; exp(-inf) = 0, exp(+inf) = +inf, x > 88.7228 gives +inf, NaN propagates.
void exp_f32_avx2(const float* x, float* y, int64_t n);
void exp_f32_avx512(const float* x, float* y, int64_t n);

// Exp and Sigmoid as elementwise kernels (simd/elementwise_f32.h's UnarySpanFunction: `streaming`
// is accepted and ignored, the loads of exp dominate). exp as exp_f32_* above. sigmoid(x) =
// 1 / (1 + e) for x >= 0, e / (1 + e) for x < 0, e = exp(-|x|) (the portable kernel's split, so
// exp never overflows): within 4 ulp of the portable kernel; sigmoid(+-inf) = 1, 0; NaN propagates.
void exp_span_f32_avx2(const float* x, float* y, int64_t n, bool streaming);
void exp_span_f32_avx512(const float* x, float* y, int64_t n, bool streaming);
void sigmoid_f32_avx2(const float* x, float* y, int64_t n, bool streaming);
void sigmoid_f32_avx512(const float* x, float* y, int64_t n, bool streaming);

// The exp used inside Softmax, whose arguments are x - max <= 0: within 2 ulp of std::exp for
// x >= -87.33654 (ln FLT_MIN), exactly 0 below (and for -inf); NaN propagates.
void exp_nonpositive_f32_avx2(const float* x, float* y, int64_t n);
void exp_nonpositive_f32_avx512(const float* x, float* y, int64_t n);

// `rows` contiguous rows of `length` floats (row r starts at x + r * length, same for y):
// y = exp(x - max) / sum, or for LogSoftmax y = x - (max + log(sum)). Any NaN in a row makes
// the whole row NaN (as the portable kernel). x and y may be the same buffer.
void softmax_rows_f32_avx2(const float* x, float* y, int64_t rows, int64_t length);
void log_softmax_rows_f32_avx2(const float* x, float* y, int64_t rows, int64_t length);
void softmax_rows_f32_avx512(const float* x, float* y, int64_t rows, int64_t length);
void log_softmax_rows_f32_avx512(const float* x, float* y, int64_t rows, int64_t length);

// `count` adjacent strided rows (the axis is not the innermost dim): row j (j < count) holds
// x[j + k * stride] for k < length. Vectorised across rows, each lane sums its row in k order.
void softmax_strided_f32_avx2(const float* x, float* y, int64_t length, int64_t stride, int64_t count);
void log_softmax_strided_f32_avx2(const float* x, float* y, int64_t length, int64_t stride, int64_t count);
void softmax_strided_f32_avx512(const float* x, float* y, int64_t length, int64_t stride, int64_t count);
void log_softmax_strided_f32_avx512(const float* x, float* y, int64_t length, int64_t stride, int64_t count);

}  // namespace onnx_light::runtime::kernels::simd
