// The direct few-channel convolution (conv_f32_direct.h) with AVX2 and FMA: 8 lanes.
#include <immintrin.h>

#include <cstddef>
#include <cstdint>

#include "kernels/simd/conv_f32_direct.h"
#include "kernels/simd/conv_f32_direct_loops.h"
#include "kernels/simd/ops_f32_avx2.h"

namespace onnx_light::runtime::kernels::simd {

void conv_f32_direct_avx2(const ConvF32DirectBlock& block) { conv_direct<Avx2>(block); }

}  // namespace onnx_light::runtime::kernels::simd
