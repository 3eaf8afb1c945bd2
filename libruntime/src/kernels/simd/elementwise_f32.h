#pragma once
// Elementwise float32 loops compiled per ISA (see README.md). Each writes out[0, n) and is
// exact: the same bits as the portable functor for every input, NaN and signed zero included.
//
// `streaming` asks for non-temporal stores: the output bypasses the caches, which saves the
// read-for-ownership of each output line when it will not be read again soon. The kernel decides
// from its tuning value store.streaming_minimum_elements; the loop only obeys.
#include <cstdint>

namespace onnx_light::runtime::kernels::simd {

// How a binary span reads its operands: both of length n, or one of them a single value.
enum class BinarySpanShape : int { same = 0, scalar_b = 1, scalar_a = 2 };

using UnarySpanFunction = void (*)(const float* in, float* out, int64_t n, bool streaming);
using BinarySpanFunction = void (*)(const float* a, const float* b, float* out, int64_t n, BinarySpanShape shape,
                                    bool streaming);

void abs_f32_avx2(const float* in, float* out, int64_t n, bool streaming);
void neg_f32_avx2(const float* in, float* out, int64_t n, bool streaming);
// max(0, x) with NaN kept and -0 turned into +0, as the portable Relu.
void relu_f32_avx2(const float* in, float* out, int64_t n, bool streaming);

void add_f32_avx2(const float* a, const float* b, float* out, int64_t n, BinarySpanShape shape, bool streaming);
void sub_f32_avx2(const float* a, const float* b, float* out, int64_t n, BinarySpanShape shape, bool streaming);
void mul_f32_avx2(const float* a, const float* b, float* out, int64_t n, BinarySpanShape shape, bool streaming);
void div_f32_avx2(const float* a, const float* b, float* out, int64_t n, BinarySpanShape shape, bool streaming);

}  // namespace onnx_light::runtime::kernels::simd
