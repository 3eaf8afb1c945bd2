// float32 GEMM for AVX2 + FMA: a 6 x 16 register tile (12 ymm accumulators), column edges by
// vmaskmov, row edges by instantiating the tile for 1..6 rows (contract in gemm_f32.h).
#include <immintrin.h>

#include <cstdint>

#include "gemm_f32.h"
#include "gemm_f32_pack.h"
#include "kernels/simd/activation_f32.h"
#include "kernels/simd/ops_f32_avx2.h"

namespace onnx_light::runtime::kernels::simd {
namespace {

constexpr int MR = kGemmF32Avx2Mr;
constexpr int NR = kGemmF32Avx2Nr;

// Lanes j < count set (count may be <= 0 or >= 8).
inline __m256i lane_mask(int count) {
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(count), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

// The epilogue's activation (activation_f32.h) and post affine on one vector.
inline __m256 activate(const GemmF32Epilogue& e, __m256 v) {
  v = apply_f32_activation<Avx2>(static_cast<int>(e.activation), e.act_alpha, e.act_beta, v);
  if (e.post_affine) v = _mm256_add_ps(_mm256_mul_ps(v, _mm256_set1_ps(e.post_scale)), _mm256_set1_ps(e.post_shift));
  return v;
}

template <int R>
void kernel_rows(int64_t kc, const float* pa, const float* pb, float* c, int64_t ldc, int n, int accumulate,
                 const GemmF32Epilogue* last) {
  const bool full = n == NR;
  const __m256i m0 = lane_mask(n), m1 = lane_mask(n - 8);
  __m256 acc0[R], acc1[R];
  if (accumulate) {
#pragma GCC unroll 6
    for (int r = 0; r < R; ++r) {
      if (full) {
        acc0[r] = _mm256_loadu_ps(c + r * ldc);
        acc1[r] = _mm256_loadu_ps(c + r * ldc + 8);
      } else {
        acc0[r] = _mm256_maskload_ps(c + r * ldc, m0);
        acc1[r] = _mm256_maskload_ps(c + r * ldc + 8, m1);
      }
    }
  } else {
#pragma GCC unroll 6
    for (int r = 0; r < R; ++r) {
      acc0[r] = _mm256_setzero_ps();
      acc1[r] = _mm256_setzero_ps();
    }
  }
#pragma GCC unroll 4  // as the AVX-512 kernel: fewer counter and pointer updates per FMA
  for (int64_t k = 0; k < kc; ++k) {
    const __m256 b0 = _mm256_loadu_ps(pb);
    const __m256 b1 = _mm256_loadu_ps(pb + 8);
#pragma GCC unroll 6
    for (int r = 0; r < R; ++r) {
      const __m256 a = _mm256_broadcast_ss(pa + r);
      acc0[r] = _mm256_fmadd_ps(a, b0, acc0[r]);
      acc1[r] = _mm256_fmadd_ps(a, b1, acc1[r]);
    }
    pa += MR;
    pb += NR;
  }
  if (last != nullptr) {
    const __m256 alpha = _mm256_set1_ps(last->alpha);
    const __m256 beta = _mm256_set1_ps(last->beta);
    const bool scale = last->alpha != 1.0f;
#pragma GCC unroll 6
    for (int r = 0; r < R; ++r) {
      if (scale) {
        acc0[r] = _mm256_mul_ps(alpha, acc0[r]);
        acc1[r] = _mm256_mul_ps(alpha, acc1[r]);
      }
      if (last->bias != nullptr) {
        const float* bias = last->bias + r * last->bias_row_stride;
        __m256 v0, v1;
        if (last->bias_col_stride == 0) {
          v0 = v1 = _mm256_set1_ps(*bias);
        } else if (full) {
          v0 = _mm256_loadu_ps(bias);
          v1 = _mm256_loadu_ps(bias + 8);
        } else {
          v0 = _mm256_maskload_ps(bias, m0);
          v1 = _mm256_maskload_ps(bias + 8, m1);
        }
        acc0[r] = _mm256_fmadd_ps(beta, v0, acc0[r]);
        acc1[r] = _mm256_fmadd_ps(beta, v1, acc1[r]);
      }
      if (last->relu) {
        // Keep v where v > 0 or v is NaN (not-less-or-equal is true when unordered); else +0.
        const __m256 zero = _mm256_setzero_ps();
        acc0[r] = _mm256_and_ps(acc0[r], _mm256_cmp_ps(acc0[r], zero, _CMP_NLE_UQ));
        acc1[r] = _mm256_and_ps(acc1[r], _mm256_cmp_ps(acc1[r], zero, _CMP_NLE_UQ));
      }
    }
    if (last->activation != GemmF32Activation::none || last->post_affine) {
#pragma GCC unroll 6
      for (int r = 0; r < R; ++r) {
        acc0[r] = activate(*last, acc0[r]);
        acc1[r] = activate(*last, acc1[r]);
      }
    }
  }
  if (full) {
#pragma GCC unroll 6
    for (int r = 0; r < R; ++r) {
      _mm256_storeu_ps(c + r * ldc, acc0[r]);
      _mm256_storeu_ps(c + r * ldc + 8, acc1[r]);
    }
  } else {
#pragma GCC unroll 6
    for (int r = 0; r < R; ++r) {
      _mm256_maskstore_ps(c + r * ldc, m0, acc0[r]);
      _mm256_maskstore_ps(c + r * ldc + 8, m1, acc1[r]);
    }
  }
}

}  // namespace

void gemm_f32_kernel_avx2(int64_t kc, const float* pa, const float* pb, float* c, int64_t ldc, int m, int n,
                          int accumulate, const GemmF32Epilogue* last) {
  switch (m) {
    case 6: kernel_rows<6>(kc, pa, pb, c, ldc, n, accumulate, last); break;
    case 5: kernel_rows<5>(kc, pa, pb, c, ldc, n, accumulate, last); break;
    case 4: kernel_rows<4>(kc, pa, pb, c, ldc, n, accumulate, last); break;
    case 3: kernel_rows<3>(kc, pa, pb, c, ldc, n, accumulate, last); break;
    case 2: kernel_rows<2>(kc, pa, pb, c, ldc, n, accumulate, last); break;
    case 1: kernel_rows<1>(kc, pa, pb, c, ldc, n, accumulate, last); break;
    default: break;
  }
}

void gemm_f32_pack_a_avx2(const float* a, int64_t row_stride, int64_t col_stride, int64_t i0, int64_t mc,
                          int64_t k0, int64_t kc, float* dst) {
  gemm_f32_pack_a_impl<MR>(a, row_stride, col_stride, i0, mc, k0, kc, dst);
}

void gemm_f32_pack_b_avx2(const float* b, int64_t row_stride, int64_t col_stride, int64_t k_total, int64_t n,
                          int64_t q0, int64_t q1, float* dst) {
  gemm_f32_pack_b_impl<NR>(b, row_stride, col_stride, k_total, n, q0, q1, dst);
}

}  // namespace onnx_light::runtime::kernels::simd
