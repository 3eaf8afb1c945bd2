#pragma once
// Packing loops shared by the ISA files of the float32 GEMM (layouts in gemm_f32.h). Internal
// linkage only: each including file compiles its own copy for its instruction set.
#include <immintrin.h>

#include <cstddef>
#include <cstdint>

namespace onnx_light::runtime::kernels::simd {
namespace {

template <int MR>
inline void gemm_f32_pack_a_impl(const float* a, int64_t row_stride, int64_t col_stride, int64_t i0, int64_t mc,
                                 int64_t k0, int64_t kc, float* dst) {
  for (int64_t p = 0; p * MR < mc; ++p) {
    const int64_t rows = mc - p * MR < MR ? mc - p * MR : MR;
    float* panel = dst + p * kc * MR;
    const float* base = a + (i0 + p * MR) * row_stride + k0 * col_stride;
    if (col_stride == 1) {
      // Rows are contiguous: 4 x 4 blocks transposed in registers, then the leftover rows and
      // columns one element at a time.
      int64_t r = 0;
      const int64_t k4 = kc & ~int64_t{3};
      for (; r + 4 <= rows; r += 4) {
        const float* s0 = base + r * row_stride;
        const float* s1 = s0 + row_stride;
        const float* s2 = s1 + row_stride;
        const float* s3 = s2 + row_stride;
        float* out = panel + r;
        for (int64_t k = 0; k < k4; k += 4) {
          __m128 x0 = _mm_loadu_ps(s0 + k), x1 = _mm_loadu_ps(s1 + k), x2 = _mm_loadu_ps(s2 + k),
                 x3 = _mm_loadu_ps(s3 + k);
          _MM_TRANSPOSE4_PS(x0, x1, x2, x3);
          _mm_storeu_ps(out + k * MR, x0);
          _mm_storeu_ps(out + (k + 1) * MR, x1);
          _mm_storeu_ps(out + (k + 2) * MR, x2);
          _mm_storeu_ps(out + (k + 3) * MR, x3);
        }
        for (int64_t k = k4; k < kc; ++k) {
          out[k * MR] = s0[k];
          out[k * MR + 1] = s1[k];
          out[k * MR + 2] = s2[k];
          out[k * MR + 3] = s3[k];
        }
      }
      for (; r < rows; ++r) {
        const float* src = base + r * row_stride;
        float* out = panel + r;
        for (int64_t k = 0; k < kc; ++k) out[k * MR] = src[k];
      }
    } else if (rows == MR && row_stride == 1) {
      // Transposed A: the MR values of one k are contiguous.
      for (int64_t k = 0; k < kc; ++k) {
        const float* src = base + k * col_stride;
        float* out = panel + k * MR;
        for (int r = 0; r < MR; ++r) out[r] = src[r];
      }
    } else {
      for (int64_t k = 0; k < kc; ++k)
        for (int64_t r = 0; r < rows; ++r) panel[k * MR + r] = base[r * row_stride + k * col_stride];
    }
  }
}

template <int NR>
inline void gemm_f32_pack_b_impl(const float* b, int64_t row_stride, int64_t col_stride, int64_t k_total, int64_t n,
                                 int64_t q0, int64_t q1, float* dst) {
  for (int64_t q = q0; q < q1; ++q) {
    const int64_t j0 = q * NR;
    const int64_t cols = n - j0 < NR ? n - j0 : NR;
    float* panel = dst + q * k_total * NR;
    if (col_stride == 1 && cols == NR) {
      for (int64_t k = 0; k < k_total; ++k) {
        const float* src = b + k * row_stride + j0;
        float* out = panel + k * NR;
        for (int j = 0; j < NR; ++j) out[j] = src[j];
      }
    } else if (col_stride == 1) {
      for (int64_t k = 0; k < k_total; ++k) {
        const float* src = b + k * row_stride + j0;
        float* out = panel + k * NR;
        for (int64_t j = 0; j < cols; ++j) out[j] = src[j];
        for (int64_t j = cols; j < NR; ++j) out[j] = 0.0f;
      }
    } else {
      // Transposed B (or any other stride): walk each column along k.
      for (int64_t k = 0; k < k_total; ++k)
        for (int64_t j = cols; j < NR; ++j) panel[k * NR + j] = 0.0f;
      for (int64_t j = 0; j < cols; ++j) {
        const float* src = b + (j0 + j) * col_stride;
        float* out = panel + j;
        for (int64_t k = 0; k < k_total; ++k) out[k * NR] = src[k * row_stride];
      }
    }
  }
}

}  // namespace
}  // namespace onnx_light::runtime::kernels::simd
