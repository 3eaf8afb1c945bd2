#pragma once
// Nearest 2x upsampling rows for Resize and Upsample (../resize.cc), one definition per ISA
// (resize_f32_avx2.cc, resize_f32_avx512.cc). Called only after the kernel table has checked the
// host's features. Elements are moved, never computed, so any 4-byte element type is exact.
#include <cstdint>

namespace onnx_light::runtime::kernels::simd {

// `rows` consecutive input rows of in_w floats, each written as two output rows of 2 in_w floats
// (out row 2r and 2r + 1 from input row r): out[2r][2i] = out[2r][2i + 1] = out[2r + 1][2i] =
// out[2r + 1][2i + 1] = in[r][i]. One call per block of rows, not per row (a 2x upsampling of
// 80-wide rows spent 18% of its time between per-row calls).
void repeat2_rows_f32_avx2(const float* in, int64_t in_w, int64_t rows, float* out);
void repeat2_rows_f32_avx512(const float* in, int64_t in_w, int64_t rows, float* out);

}  // namespace onnx_light::runtime::kernels::simd
