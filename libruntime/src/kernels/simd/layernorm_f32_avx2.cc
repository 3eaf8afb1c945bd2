// LayerNormalization rows with AVX2 + FMA (8 lanes): the passes of
// layernorm_f32_passes.h over ops_f32_avx2.h.
#include <immintrin.h>

#include <cstdint>

#include "kernels/simd/layernorm_f32.h"
#include "kernels/simd/layernorm_f32_passes.h"
#include "kernels/simd/ops_f32_avx2.h"

namespace onnx_light::runtime::kernels::simd {

void layer_norm_rows_f32_avx2(const float* x, float* y, int64_t rows, int64_t length, const float* scale,
                              const float* bias, float epsilon, float* mean_out, float* inv_out) {
  layer_norm_rows<Avx2>(x, y, rows, length, scale, bias, epsilon, mean_out, inv_out);
}

}  // namespace onnx_light::runtime::kernels::simd
