// The direct few-channel convolution (conv_f32_direct.h) with AVX-512 F: 16 lanes.
#include <immintrin.h>

#include <cstddef>
#include <cstdint>

#include "kernels/simd/conv_f32_direct.h"
#include "kernels/simd/conv_f32_direct_loops.h"
#include "kernels/simd/ops_f32_avx512.h"

namespace onnx_light::runtime::kernels::simd {

void conv_f32_direct_avx512(const ConvF32DirectBlock& block) { conv_direct<Avx512>(block); }

}  // namespace onnx_light::runtime::kernels::simd
