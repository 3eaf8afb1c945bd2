// LayerNormalization rows with AVX-512 F (16 lanes, masked tails): the passes of
// layernorm_f32_passes.h over ops_f32_avx512.h.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"  // GCC bug 105593
#endif
#include <immintrin.h>

#include <cstdint>

#include "kernels/simd/layernorm_f32.h"
#include "kernels/simd/layernorm_f32_passes.h"
#include "kernels/simd/ops_f32_avx512.h"

namespace onnx_light::runtime::kernels::simd {

void layer_norm_rows_f32_avx512(const float* x, float* y, int64_t rows, int64_t length, const float* scale,
                                const float* bias, float epsilon, float* mean_out, float* inv_out) {
  layer_norm_rows<Avx512>(x, y, rows, length, scale, bias, epsilon, mean_out, inv_out);
}

}  // namespace onnx_light::runtime::kernels::simd
