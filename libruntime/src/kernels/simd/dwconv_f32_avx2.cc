// Depthwise convolution rows (dwconv_f32.h) with AVX2 and FMA: 8 lanes, tails by maskload /
// maskstore.
#include <immintrin.h>

#include <cstddef>
#include <cstdint>

#include "kernels/simd/dwconv_f32.h"
#include "kernels/simd/dwconv_f32_blocked.h"
#include "kernels/simd/dwconv_f32_blocked_loops.h"
#include "kernels/simd/dwconv_f32_rows.h"
#include "kernels/simd/ops_f32_avx2.h"

namespace onnx_light::runtime::kernels::simd {

void dwconv_f32_row_avx2(const DwconvF32Row& row) { dwconv_row<Avx2>(row); }
void dwconv_f32_rows2_avx2(const DwconvF32Row& first, const float* const* below_src, int64_t kernel_w,
                           const float* below_z, float* below_y) {
  dwconv_rows2<Avx2>(first, below_src, kernel_w, below_z, below_y);
}

DwconvF32Kernels dwconv_f32_kernels_avx2(int64_t kernel_h, int64_t kernel_w) {
  return dwconv_kernels_for<Avx2>(kernel_h, kernel_w);
}

void dwconv_f32_to_blocked_avx2(const float* const* planes, int64_t valid, int64_t h, int64_t w, float* dst,
                                int64_t rows, int64_t pitch, int64_t pad_top, int64_t pad_left) {
  dwconv_to_blocked<Avx2>(planes, valid, h, w, dst, rows, pitch, pad_top, pad_left);
}
void dwconv_f32_block_avx2(const DwconvF32Block& block) { dwconv_block<Avx2>(block); }
void dwconv_f32_from_blocked_avx2(const float* src, int64_t n, float* const* planes, int64_t valid,
                                  const float* const* z, const DwconvF32Epilogue& epilogue) {
  dwconv_from_blocked<Avx2>(src, n, planes, valid, z, epilogue);
}

}  // namespace onnx_light::runtime::kernels::simd
