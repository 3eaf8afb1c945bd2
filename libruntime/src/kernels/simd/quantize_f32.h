#pragma once
// Per-tensor QuantizeLinear and DequantizeLinear spans (see README.md), bit for bit the portable
// kernels' expressions: y = saturate(nearbyint(x / scale) + zero) (NaN to the type's minimum) and
// y = (x - zero) * scale.
#include <cstdint>

namespace onnx_light::runtime::kernels::simd {

void quantize_f32_u8_avx512(const float* x, int64_t n, float scale, float zero, uint8_t* y);
void quantize_f32_s8_avx512(const float* x, int64_t n, float scale, float zero, int8_t* y);
void dequantize_u8_f32_avx512(const uint8_t* x, int64_t n, int32_t zero, float scale, float* y);
void dequantize_s8_f32_avx512(const int8_t* x, int64_t n, int32_t zero, float scale, float* y);

}  // namespace onnx_light::runtime::kernels::simd
