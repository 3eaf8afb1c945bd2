#pragma once
// Nearest 2x upsampling rows for Resize and Upsample (../resize.cc), one definition per ISA
// (resize_f32_avx2.cc, resize_f32_avx512.cc). Called only after the kernel table has checked the
// host's features. Elements are moved, never computed, so any 4-byte element type is exact.
#include <cstdint>

namespace onnx_light::runtime::kernels::simd {

// Two output rows of a 2x nearest upsampling from one read of the input row:
// a[2i] = a[2i + 1] = b[2i] = b[2i + 1] = in[i] for i < in_w.
void repeat2_rows_f32_avx2(const float* in, float* a, float* b, int64_t in_w);
void repeat2_rows_f32_avx512(const float* in, float* a, float* b, int64_t in_w);

}  // namespace onnx_light::runtime::kernels::simd
