// float32 GEMM for AVX-512: a 12 x 32 register tile (24 zmm accumulators), column edges by
// mask registers, row edges by instantiating the tile for 1..12 rows (contract in gemm_f32.h).
// A tile of at most 16 columns (a panel's tail, attention's 16-wide heads) runs one vector per row:
// the second vector's FMAs would all be masked off, and they were half of the tile's cost
// (1x1 Conv 384 -> 384 maps on 10x10: 100 = 3 x 32 + 4 columns).
#include <immintrin.h>

#include <cstdint>

#include "gemm_f32.h"
#include "gemm_f32_pack.h"
#include "kernels/simd/activation_f32.h"
#include "kernels/simd/ops_f32_avx512.h"

namespace onnx_light::runtime::kernels::simd {
namespace {

constexpr int MR = kGemmF32Avx512Mr;
constexpr int NR = kGemmF32Avx512Nr;

inline __mmask16 low_mask(int count) {
  if (count >= 16) return static_cast<__mmask16>(0xFFFF);
  if (count <= 0) return 0;
  return static_cast<__mmask16>((1u << count) - 1u);
}

// The epilogue's activation (activation_f32.h) and post affine on one vector.
inline __m512 activate(const GemmF32Epilogue& e, __m512 v) {
  v = apply_f32_activation<Avx512>(static_cast<int>(e.activation), e.act_alpha, e.act_beta, v);
  if (e.post_affine) v = _mm512_add_ps(_mm512_mul_ps(v, _mm512_set1_ps(e.post_scale)), _mm512_set1_ps(e.post_shift));
  return v;
}

// Direct: A read in place (row r at pa + r * lda, k contiguous) instead of a packed panel; rows
// are addressed from one pointer per group of three (base + j * lda), so the loop keeps every
// address in a register. Indirect (with Direct): B row k at b_rows[k] + col instead of pb.
// Plain: a full-width tile with no epilogue, compiled without the epilogue and the masked stores.
// TransposedA (without Direct): A^T read in place, row k of it at pa + k * lda (the tile's rows
// contiguous, as in a packed panel whose stride is lda instead of MR).
template <int R, bool Direct, bool Indirect, int V, bool Plain = false, bool TransposedA = false>
void kernel_rows_v(int64_t kc, const float* pa, int64_t lda, const float* pb, float* c, int64_t ldc, int n,
                 int accumulate, const GemmF32Epilogue* last, const float* const* b_rows = nullptr,
                 int64_t col = 0) {
  const __mmask16 m0 = low_mask(n), m1 = low_mask(n - 16);
  __m512 acc0[R], acc1[R];
  if (accumulate) {
#pragma GCC unroll 12
    for (int r = 0; r < R; ++r) {
      acc0[r] = _mm512_maskz_loadu_ps(m0, c + r * ldc);
      if constexpr (V == 2) acc1[r] = _mm512_maskz_loadu_ps(m1, c + r * ldc + 16);
    }
  } else {
#pragma GCC unroll 12
    for (int r = 0; r < R; ++r) {
      acc0[r] = _mm512_setzero_ps();
      if constexpr (V == 2) acc1[r] = _mm512_setzero_ps();
    }
  }
  if constexpr (Direct) {
    constexpr int G = (R + 2) / 3;
    const float* g[G];
#pragma GCC unroll 4
    for (int i = 0; i < G; ++i) g[i] = pa + 3 * i * lda;
// k unrolled by 4: a quarter of the counter and pointer updates (3-4% on matmul_256 and the MLP).
#pragma GCC unroll 4
    for (int64_t k = 0; k < kc; ++k) {
      if constexpr (Indirect) pb = b_rows[k] + col;
      const __m512 b0 = _mm512_loadu_ps(pb);
      const __m512 b1 = V == 2 ? _mm512_loadu_ps(pb + 16) : b0;
#pragma GCC unroll 12
      for (int r = 0; r < R; ++r) {
        const __m512 a = _mm512_set1_ps(g[r / 3][(r % 3) * lda + k]);
        acc0[r] = _mm512_fmadd_ps(a, b0, acc0[r]);
        if constexpr (V == 2) acc1[r] = _mm512_fmadd_ps(a, b1, acc1[r]);
      }
      pb += NR;
    }
  } else {
#pragma GCC unroll 4
    for (int64_t k = 0; k < kc; ++k) {
      const __m512 b0 = _mm512_loadu_ps(pb);
      const __m512 b1 = V == 2 ? _mm512_loadu_ps(pb + 16) : b0;
#pragma GCC unroll 12
      for (int r = 0; r < R; ++r) {
        const __m512 a = _mm512_set1_ps(pa[r]);
        acc0[r] = _mm512_fmadd_ps(a, b0, acc0[r]);
        if constexpr (V == 2) acc1[r] = _mm512_fmadd_ps(a, b1, acc1[r]);
      }
      pa += TransposedA ? lda : MR;
      pb += NR;
    }
  }
  if (!Plain && last != nullptr) {
    const __m512 alpha = _mm512_set1_ps(last->alpha);
    const __m512 beta = _mm512_set1_ps(last->beta);
    const bool scale = last->alpha != 1.0f;
#pragma GCC unroll 12
    for (int r = 0; r < R; ++r) {
      if (scale) {
        acc0[r] = _mm512_mul_ps(alpha, acc0[r]);
        if constexpr (V == 2) acc1[r] = _mm512_mul_ps(alpha, acc1[r]);
      }
      if (last->bias != nullptr) {
        const float* bias = last->bias + r * last->bias_row_stride;
        __m512 v0, v1;
        if (last->bias_col_stride == 0) {
          v0 = v1 = _mm512_set1_ps(*bias);
        } else {
          v0 = _mm512_maskz_loadu_ps(m0, bias);
          v1 = V == 2 ? _mm512_maskz_loadu_ps(m1, bias + 16) : v0;
        }
        acc0[r] = _mm512_fmadd_ps(beta, v0, acc0[r]);
        if constexpr (V == 2) acc1[r] = _mm512_fmadd_ps(beta, v1, acc1[r]);
      }
      if (last->relu) {
        // Keep v where v > 0 or v is NaN (not-less-or-equal is true when unordered); else +0.
        const __m512 zero = _mm512_setzero_ps();
        acc0[r] = _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(acc0[r], zero, _CMP_NLE_UQ), acc0[r]);
        if constexpr (V == 2) acc1[r] = _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(acc1[r], zero, _CMP_NLE_UQ), acc1[r]);
      }
    }
    if (last->activation != GemmF32Activation::none || last->post_affine) {
#pragma GCC unroll 12
      for (int r = 0; r < R; ++r) {
        acc0[r] = activate(*last, acc0[r]);
        if constexpr (V == 2) acc1[r] = activate(*last, acc1[r]);
      }
    }
  }
  if (Plain || n == V * 16) {
#pragma GCC unroll 12
    for (int r = 0; r < R; ++r) {
      _mm512_storeu_ps(c + r * ldc, acc0[r]);
      if constexpr (V == 2) _mm512_storeu_ps(c + r * ldc + 16, acc1[r]);
    }
  } else {
#pragma GCC unroll 12
    for (int r = 0; r < R; ++r) {
      _mm512_mask_storeu_ps(c + r * ldc, m0, acc0[r]);
      if constexpr (V == 2) _mm512_mask_storeu_ps(c + r * ldc + 16, m1, acc1[r]);
    }
  }
}

// The tile for n columns: one vector per row when n <= 16 (identical FMA sequence per element).
// A full tile without an epilogue (a plain product's every k-block, any product's k-blocks before
// the last) runs the Plain instance: 2.6 KB of code against 12 KB for the general one, which a
// shallow product re-enters every few hundred cycles. qk [512,16] x [16,512] at T=1, ours / ORT
// with both on one vCPU (bench/peer_pair.sh, 120 pairs): 1.01 -> 0.99 when the host core is idle,
// 1.27 -> 1.12 when it is busy (the generic path then refetched its code; bench/RESULTS.md).
template <int R, bool Direct, bool Indirect = false>
void kernel_rows(int64_t kc, const float* pa, int64_t lda, const float* pb, float* c, int64_t ldc, int n,
                 int accumulate, const GemmF32Epilogue* last, const float* const* b_rows = nullptr,
                 int64_t col = 0) {
  if (n <= 16) kernel_rows_v<R, Direct, Indirect, 1>(kc, pa, lda, pb, c, ldc, n, accumulate, last, b_rows, col);
  else if (n == NR && last == nullptr)
    kernel_rows_v<R, Direct, Indirect, 2, true>(kc, pa, lda, pb, c, ldc, n, accumulate, nullptr, b_rows, col);
  else kernel_rows_v<R, Direct, Indirect, 2>(kc, pa, lda, pb, c, ldc, n, accumulate, last, b_rows, col);
}

// kernel_rows for A given transposed (row k of A^T at pa + k * lda, the tile's rows contiguous).
template <int R>
void kernel_rows_transposed(int64_t kc, const float* at, int64_t ldat, const float* pb, float* c, int64_t ldc, int n,
                            int accumulate, const GemmF32Epilogue* last) {
  if (n <= 16) kernel_rows_v<R, false, false, 1, false, true>(kc, at, ldat, pb, c, ldc, n, accumulate, last);
  else if (n == NR && last == nullptr)
    kernel_rows_v<R, false, false, 2, true, true>(kc, at, ldat, pb, c, ldc, n, accumulate, nullptr);
  else kernel_rows_v<R, false, false, 2, false, true>(kc, at, ldat, pb, c, ldc, n, accumulate, last);
}

// Rows [16v, 16v + 16) of a strided column (base[row * stride]) as lanes, 0 at rows >= m.
inline __m512 load_column(const float* base, int64_t stride, int v, int m) {
  alignas(64) float lanes[16];
  for (int r = 0; r < 16; ++r) lanes[r] = 16 * v + r < m ? base[(16 * v + r) * stride] : 0.0f;
  return _mm512_load_ps(lanes);
}

// The lanes of `x` that are rows below m into a strided column.
inline void store_column(__m512 x, float* base, int64_t stride, int v, int m) {
  alignas(64) float lanes[16];
  _mm512_store_ps(lanes, x);
  for (int r = 0; r < 16 && 16 * v + r < m; ++r) base[(16 * v + r) * stride] = lanes[r];
}

// kernel_rows_v's epilogue, operation for operation, on column j's vector v.
inline __m512 narrow_epilogue(const GemmF32Epilogue& e, __m512 acc, int j, int v, int m) {
  if (e.alpha != 1.0f) acc = _mm512_mul_ps(_mm512_set1_ps(e.alpha), acc);
  if (e.bias != nullptr) {
    const float* bias = e.bias + j * e.bias_col_stride;
    const __m512 b = e.bias_row_stride == 0 ? _mm512_set1_ps(*bias) : load_column(bias, e.bias_row_stride, v, m);
    acc = _mm512_fmadd_ps(_mm512_set1_ps(e.beta), b, acc);
  }
  if (e.relu) acc = _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(acc, _mm512_setzero_ps(), _CMP_NLE_UQ), acc);
  if (e.activation != GemmF32Activation::none || e.post_affine) acc = activate(e, acc);
  return acc;
}

// The narrow tail (gemm_f32.h): N columns, V vectors of 16 rows; rows past m are computed on
// zeros and never stored. C and a per-row bias reach the lanes through a small buffer (columns
// of C are strided), once per tile, next to kc FMAs per element.
template <int V, int N>
void kernel_narrow(int64_t kc, const float* at, int64_t ldat, const float* pb, float* c, int64_t ldc, int m,
                   int accumulate, const GemmF32Epilogue* last) {
  __mmask16 mask[V];
  __m512 acc[V][N];
#pragma GCC unroll 4
  for (int v = 0; v < V; ++v) {
    mask[v] = low_mask(m - 16 * v);
#pragma GCC unroll 8
    for (int j = 0; j < N; ++j) acc[v][j] = accumulate ? load_column(c + j, ldc, v, m) : _mm512_setzero_ps();
  }
#pragma GCC unroll 2
  for (int64_t k = 0; k < kc; ++k) {
    __m512 a[V];
#pragma GCC unroll 4
    for (int v = 0; v < V; ++v) a[v] = _mm512_maskz_loadu_ps(mask[v], at + 16 * v);
#pragma GCC unroll 8
    for (int j = 0; j < N; ++j) {
      const __m512 b = _mm512_set1_ps(pb[j]);
#pragma GCC unroll 4
      for (int v = 0; v < V; ++v) acc[v][j] = _mm512_fmadd_ps(a[v], b, acc[v][j]);
    }
    at += ldat;
    pb += NR;
  }
#pragma GCC unroll 8
  for (int j = 0; j < N; ++j) {
#pragma GCC unroll 4
    for (int v = 0; v < V; ++v) {
      if (last != nullptr) acc[v][j] = narrow_epilogue(*last, acc[v][j], j, v, m);
      store_column(acc[v][j], c + j, ldc, v, m);
    }
  }
}

template <int V>
void kernel_narrow_cols(int64_t kc, const float* at, int64_t ldat, const float* pb, float* c, int64_t ldc, int m,
                        int n, int accumulate, const GemmF32Epilogue* last) {
  switch (n) {
    case 1: kernel_narrow<V, 1>(kc, at, ldat, pb, c, ldc, m, accumulate, last); break;
    case 2: kernel_narrow<V, 2>(kc, at, ldat, pb, c, ldc, m, accumulate, last); break;
    case 3: kernel_narrow<V, 3>(kc, at, ldat, pb, c, ldc, m, accumulate, last); break;
    case 4: kernel_narrow<V, 4>(kc, at, ldat, pb, c, ldc, m, accumulate, last); break;
    case 5: kernel_narrow<V, 5>(kc, at, ldat, pb, c, ldc, m, accumulate, last); break;
    case 6: kernel_narrow<V, 6>(kc, at, ldat, pb, c, ldc, m, accumulate, last); break;
    case 7: kernel_narrow<V, 7>(kc, at, ldat, pb, c, ldc, m, accumulate, last); break;
    case 8: kernel_narrow<V, 8>(kc, at, ldat, pb, c, ldc, m, accumulate, last); break;
    default: break;
  }
}

// gemm_f32_kernel_direct_a_panels for R rows: the Plain body inlined (flatten) in the loop over
// panels, so a row tile costs one call, not one per panel (what the measured figures ran).
template <int R>
[[gnu::flatten]] void kernel_rows_panels(int64_t kc, const float* a, int64_t lda, const float* pb,
                                         int64_t panel_stride, float* c, int64_t ldc, int panels, int accumulate) {
  for (int p = 0; p < panels; ++p)
    kernel_rows_v<R, true, false, 2, true>(kc, a, lda, pb + p * panel_stride, c + p * NR, ldc, NR, accumulate, nullptr);
}

}  // namespace

void gemm_f32_kernel_narrow_avx512(int64_t kc, const float* at, int64_t ldat, const float* pb, float* c, int64_t ldc,
                                   int m, int n, int accumulate, const GemmF32Epilogue* last) {
  if (m <= 0) return;
  if (m <= 16) kernel_narrow_cols<1>(kc, at, ldat, pb, c, ldc, m, n, accumulate, last);
  else if (m <= 32) kernel_narrow_cols<2>(kc, at, ldat, pb, c, ldc, m, n, accumulate, last);
  else kernel_narrow_cols<3>(kc, at, ldat, pb, c, ldc, m, n, accumulate, last);
}

void gemm_f32_kernel_avx512(int64_t kc, const float* pa, const float* pb, float* c, int64_t ldc, int m, int n,
                            int accumulate, const GemmF32Epilogue* last) {
  switch (m) {
    case 12: kernel_rows<12, false>(kc, pa, 0, pb, c, ldc, n, accumulate, last); break;
    case 11: kernel_rows<11, false>(kc, pa, 0, pb, c, ldc, n, accumulate, last); break;
    case 10: kernel_rows<10, false>(kc, pa, 0, pb, c, ldc, n, accumulate, last); break;
    case 9: kernel_rows<9, false>(kc, pa, 0, pb, c, ldc, n, accumulate, last); break;
    case 8: kernel_rows<8, false>(kc, pa, 0, pb, c, ldc, n, accumulate, last); break;
    case 7: kernel_rows<7, false>(kc, pa, 0, pb, c, ldc, n, accumulate, last); break;
    case 6: kernel_rows<6, false>(kc, pa, 0, pb, c, ldc, n, accumulate, last); break;
    case 5: kernel_rows<5, false>(kc, pa, 0, pb, c, ldc, n, accumulate, last); break;
    case 4: kernel_rows<4, false>(kc, pa, 0, pb, c, ldc, n, accumulate, last); break;
    case 3: kernel_rows<3, false>(kc, pa, 0, pb, c, ldc, n, accumulate, last); break;
    case 2: kernel_rows<2, false>(kc, pa, 0, pb, c, ldc, n, accumulate, last); break;
    case 1: kernel_rows<1, false>(kc, pa, 0, pb, c, ldc, n, accumulate, last); break;
    default: break;
  }
}

void gemm_f32_kernel_direct_a_avx512(int64_t kc, const float* a, int64_t lda, const float* pb, float* c, int64_t ldc,
                                     int m, int n, int accumulate, const GemmF32Epilogue* last) {
  switch (m) {
    case 12: kernel_rows<12, true>(kc, a, lda, pb, c, ldc, n, accumulate, last); break;
    case 11: kernel_rows<11, true>(kc, a, lda, pb, c, ldc, n, accumulate, last); break;
    case 10: kernel_rows<10, true>(kc, a, lda, pb, c, ldc, n, accumulate, last); break;
    case 9: kernel_rows<9, true>(kc, a, lda, pb, c, ldc, n, accumulate, last); break;
    case 8: kernel_rows<8, true>(kc, a, lda, pb, c, ldc, n, accumulate, last); break;
    case 7: kernel_rows<7, true>(kc, a, lda, pb, c, ldc, n, accumulate, last); break;
    case 6: kernel_rows<6, true>(kc, a, lda, pb, c, ldc, n, accumulate, last); break;
    case 5: kernel_rows<5, true>(kc, a, lda, pb, c, ldc, n, accumulate, last); break;
    case 4: kernel_rows<4, true>(kc, a, lda, pb, c, ldc, n, accumulate, last); break;
    case 3: kernel_rows<3, true>(kc, a, lda, pb, c, ldc, n, accumulate, last); break;
    case 2: kernel_rows<2, true>(kc, a, lda, pb, c, ldc, n, accumulate, last); break;
    case 1: kernel_rows<1, true>(kc, a, lda, pb, c, ldc, n, accumulate, last); break;
    default: break;
  }
}

void gemm_f32_kernel_transposed_a_avx512(int64_t kc, const float* at, int64_t ldat, const float* pb, float* c,
                                         int64_t ldc, int m, int n, int accumulate, const GemmF32Epilogue* last) {
  switch (m) {
    case 12: kernel_rows_transposed<12>(kc, at, ldat, pb, c, ldc, n, accumulate, last); break;
    case 11: kernel_rows_transposed<11>(kc, at, ldat, pb, c, ldc, n, accumulate, last); break;
    case 10: kernel_rows_transposed<10>(kc, at, ldat, pb, c, ldc, n, accumulate, last); break;
    case 9: kernel_rows_transposed<9>(kc, at, ldat, pb, c, ldc, n, accumulate, last); break;
    case 8: kernel_rows_transposed<8>(kc, at, ldat, pb, c, ldc, n, accumulate, last); break;
    case 7: kernel_rows_transposed<7>(kc, at, ldat, pb, c, ldc, n, accumulate, last); break;
    case 6: kernel_rows_transposed<6>(kc, at, ldat, pb, c, ldc, n, accumulate, last); break;
    case 5: kernel_rows_transposed<5>(kc, at, ldat, pb, c, ldc, n, accumulate, last); break;
    case 4: kernel_rows_transposed<4>(kc, at, ldat, pb, c, ldc, n, accumulate, last); break;
    case 3: kernel_rows_transposed<3>(kc, at, ldat, pb, c, ldc, n, accumulate, last); break;
    case 2: kernel_rows_transposed<2>(kc, at, ldat, pb, c, ldc, n, accumulate, last); break;
    case 1: kernel_rows_transposed<1>(kc, at, ldat, pb, c, ldc, n, accumulate, last); break;
    default: break;
  }
}

void gemm_f32_kernel_direct_a_panels_avx512(int64_t kc, const float* a, int64_t lda, const float* pb,
                                            int64_t panel_stride, float* c, int64_t ldc, int m, int panels,
                                            int accumulate) {
  // The row counts of even row tiles over whole panels (12, 11); other counts call per panel.
  if (m == 12) {
    kernel_rows_panels<12>(kc, a, lda, pb, panel_stride, c, ldc, panels, accumulate);
  } else if (m == 11) {
    kernel_rows_panels<11>(kc, a, lda, pb, panel_stride, c, ldc, panels, accumulate);
  } else {
    for (int p = 0; p < panels; ++p)
      gemm_f32_kernel_direct_a_avx512(kc, a, lda, pb + p * panel_stride, c + p * NR, ldc, m, NR, accumulate, nullptr);
  }
}

void gemm_f32_kernel_direct_a_indirect_b_avx512(int64_t kc, const float* a, int64_t lda, const float* const* b_rows,
                                                int64_t col, float* c, int64_t ldc, int m, int n, int accumulate,
                                                const GemmF32Epilogue* last) {
  switch (m) {
    case 12: kernel_rows<12, true, true>(kc, a, lda, nullptr, c, ldc, n, accumulate, last, b_rows, col); break;
    case 11: kernel_rows<11, true, true>(kc, a, lda, nullptr, c, ldc, n, accumulate, last, b_rows, col); break;
    case 10: kernel_rows<10, true, true>(kc, a, lda, nullptr, c, ldc, n, accumulate, last, b_rows, col); break;
    case 9: kernel_rows<9, true, true>(kc, a, lda, nullptr, c, ldc, n, accumulate, last, b_rows, col); break;
    case 8: kernel_rows<8, true, true>(kc, a, lda, nullptr, c, ldc, n, accumulate, last, b_rows, col); break;
    case 7: kernel_rows<7, true, true>(kc, a, lda, nullptr, c, ldc, n, accumulate, last, b_rows, col); break;
    case 6: kernel_rows<6, true, true>(kc, a, lda, nullptr, c, ldc, n, accumulate, last, b_rows, col); break;
    case 5: kernel_rows<5, true, true>(kc, a, lda, nullptr, c, ldc, n, accumulate, last, b_rows, col); break;
    case 4: kernel_rows<4, true, true>(kc, a, lda, nullptr, c, ldc, n, accumulate, last, b_rows, col); break;
    case 3: kernel_rows<3, true, true>(kc, a, lda, nullptr, c, ldc, n, accumulate, last, b_rows, col); break;
    case 2: kernel_rows<2, true, true>(kc, a, lda, nullptr, c, ldc, n, accumulate, last, b_rows, col); break;
    case 1: kernel_rows<1, true, true>(kc, a, lda, nullptr, c, ldc, n, accumulate, last, b_rows, col); break;
    default: break;
  }
}

void gemm_f32_pack_a_avx512(const float* a, int64_t row_stride, int64_t col_stride, int64_t i0, int64_t mc,
                            int64_t k0, int64_t kc, float* dst) {
  gemm_f32_pack_a_impl<MR>(a, row_stride, col_stride, i0, mc, k0, kc, dst);
}

void gemm_f32_pack_b_avx512(const float* b, int64_t row_stride, int64_t col_stride, int64_t k_total, int64_t n,
                            int64_t q0, int64_t q1, float* dst) {
  gemm_f32_pack_b_impl<NR>(b, row_stride, col_stride, k_total, n, q0, q1, dst);
}

}  // namespace onnx_light::runtime::kernels::simd
