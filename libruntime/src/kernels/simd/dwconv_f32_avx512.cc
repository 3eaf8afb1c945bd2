// Depthwise convolution rows (dwconv_f32.h) with AVX-512 F: 16 lanes, masked tails.
#include <immintrin.h>

#include <cstddef>
#include <cstdint>

#include "kernels/simd/dwconv_f32.h"
#include "kernels/simd/dwconv_f32_rows.h"
#include "kernels/simd/ops_f32_avx512.h"

namespace onnx_light::runtime::kernels::simd {

void dwconv_f32_row_avx512(const DwconvF32Row& row) { dwconv_row<Avx512>(row); }
void dwconv_f32_rows2_avx512(const DwconvF32Row& first, const float* const* below_src, int64_t kernel_w,
                           const float* below_z, float* below_y) {
  dwconv_rows2<Avx512>(first, below_src, kernel_w, below_z, below_y);
}

DwconvF32Kernels dwconv_f32_kernels_avx512(int64_t kernel_h, int64_t kernel_w) {
  return dwconv_kernels_for<Avx512>(kernel_h, kernel_w);
}

}  // namespace onnx_light::runtime::kernels::simd
