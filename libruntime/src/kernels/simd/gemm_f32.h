#pragma once
// float32 GEMM micro-kernels and packing routines, one set per instruction set (see README.md).
//
// Packed layouts (shared by every ISA; only MR and NR differ):
//   A: panels of MR rows; panel p holds a(p*MR + r, k) at [p * kc * MR + k * MR + r] for the
//      rows that exist (rows past the matrix are never read).
//   B: panels of NR columns over the whole depth K; panel q holds b(k, q*NR + j) at
//      [q * K * NR + k * NR + j], columns past the matrix zero-filled. A k-block [k0, k0 + kc)
//      of a panel is the contiguous run starting at k0 * NR.
//
// Micro-kernel contract: C[m x n] (m <= MR, n <= NR, row stride ldc) accumulates
//   acc = accumulate ? C : 0;  for k ascending: acc = fma(a(r, k), b(k, j), acc)
// and, when `last` is not null, stores alpha * acc + beta * bias(r, j) (one rounding for the
// product, one fused multiply-add for the bias), else acc. Every element sees the same sequence of
// operations whatever m, n and the caller's blocking, so results do not depend on the tiling
// or on the number of threads.
#include <cstddef>
#include <cstdint>

#include "kernels/simd/activation_f32.h"

namespace onnx_light::runtime::kernels::simd {

// Applied when the last k-block is stored. bias(r, j) = bias[r * bias_row_stride + j * bias_col_stride]
// relative to the tile's first element; bias_col_stride is 0 or 1; bias may be null. With relu,
// each value v = alpha * acc + beta * bias is then stored as ONNX Relu would leave it: v when
// v > 0 or v is NaN, else +0 (bit-identical to a separate Relu kernel; see elementwise_f32_avx2.cc).
// Activations the micro-kernel applies after the bias (instead of relu when not none), with
// exactly the scalar expressions of kernels/epilogue.cc, then the optional post affine
// (v * post_scale, rounded, + post_shift: two roundings as the Mul and Add it replaces).
// The codes of activation_f32.h, so the micro-kernels apply them through apply_f32_activation.
enum class GemmF32Activation : int {
  none = f32_activation_none,
  clip = f32_activation_clip,
  leaky_relu = f32_activation_leaky_relu,
  hard_sigmoid = f32_activation_hard_sigmoid,
  hard_swish = f32_activation_hard_swish,
};

struct GemmF32Epilogue {
  float alpha;
  float beta;
  const float* bias;
  int64_t bias_row_stride;
  int64_t bias_col_stride;
  bool relu = false;
  GemmF32Activation activation = GemmF32Activation::none;
  float act_alpha = 0.0f, act_beta = 0.0f;
  bool post_affine = false;
  float post_scale = 1.0f, post_shift = 0.0f;
};

inline constexpr int kGemmF32Avx2Mr = 6;
inline constexpr int kGemmF32Avx2Nr = 16;
inline constexpr int kGemmF32Avx512Mr = 12;
inline constexpr int kGemmF32Avx512Nr = 32;

void gemm_f32_kernel_avx2(int64_t kc, const float* pa, const float* pb, float* c, int64_t ldc, int m, int n,
                          int accumulate, const GemmF32Epilogue* last);
void gemm_f32_kernel_avx512(int64_t kc, const float* pa, const float* pb, float* c, int64_t ldc, int m, int n,
                            int accumulate, const GemmF32Epilogue* last);
// The same contract with A read in place: a(r, k) = a[r * lda + k] (row-major A, no packing).
void gemm_f32_kernel_direct_a_avx512(int64_t kc, const float* a, int64_t lda, const float* pb, float* c, int64_t ldc,
                                     int m, int n, int accumulate, const GemmF32Epilogue* last);
// Full NR-wide panels [0, panels) of one row tile with A read in place and no epilogue: panel p's
// B at pb + p * panel_stride, its C at c + p * NR; the same bits as a call per panel. One call
// per row tile rather than per tile: qk [512,16] x [16,512] at T=1, ours / ORT on one vCPU,
// 1.005 -> 0.97 with the host core idle and 1.20 -> 1.08 with it busy (bench/RESULTS.md).
void gemm_f32_kernel_direct_a_panels_avx512(int64_t kc, const float* a, int64_t lda, const float* pb,
                                            int64_t panel_stride, float* c, int64_t ldc, int m, int panels,
                                            int accumulate);
// The same with B read in place through row pointers: b(k, j) = b_rows[k][col + j] (an implicit
// im2col: a stride-1 Conv's B rows are shifted rows of its padded input). All NR floats from
// b_rows[k] + col must be readable; lanes at or past n are loaded but never stored.
void gemm_f32_kernel_direct_a_indirect_b_avx512(int64_t kc, const float* a, int64_t lda, const float* const* b_rows,
                                                int64_t col, float* c, int64_t ldc, int m, int n, int accumulate,
                                                const GemmF32Epilogue* last);

// A panel's narrow tail (n <= kGemmF32NarrowCols columns, m <= kGemmF32NarrowRows rows) with the
// rows as the vector lanes: A given transposed, a(r, k) = at[k * ldat + r] (row k of A^T holds
// the rows' values, ldat >= m), B a packed panel as above. Each element sees the contract's
// sequence (fma is exact and commutative in its product), so the bits equal the wide tile's,
// which spends a whole vector per row on the few columns. Up to three vectors of rows (12
// accumulator chains for 4 columns rather than 8 behind the FMA latency; 384 -> 384 maps on
// 10x10 0.6% faster than 32 rows, bench/RESULTS.md).
inline constexpr int kGemmF32NarrowCols = 8;
inline constexpr int kGemmF32NarrowRows = 48;
void gemm_f32_kernel_narrow_avx512(int64_t kc, const float* at, int64_t ldat, const float* pb, float* c, int64_t ldc,
                                   int m, int n, int accumulate, const GemmF32Epilogue* last);
// The wide tile (gemm_f32_kernel_avx512's contract) with A given transposed as for the narrow
// tail, a(r, k) = at[k * ldat + r]: the same bits, so the tiles of a product whose narrow panel
// needs A^T read it too instead of a second copy of A.
void gemm_f32_kernel_transposed_a_avx512(int64_t kc, const float* at, int64_t ldat, const float* pb, float* c,
                                         int64_t ldc, int m, int n, int accumulate, const GemmF32Epilogue* last);

// Packs a(i0 + i, k0 + k) for i < mc, k < kc, with a(i, k) = a[i * row_stride + k * col_stride],
// into MR-row panels (layout above, panel stride kc * MR).
void gemm_f32_pack_a_avx2(const float* a, int64_t row_stride, int64_t col_stride, int64_t i0, int64_t mc,
                          int64_t k0, int64_t kc, float* dst);
void gemm_f32_pack_a_avx512(const float* a, int64_t row_stride, int64_t col_stride, int64_t i0, int64_t mc,
                            int64_t k0, int64_t kc, float* dst);

// Packs the NR-column panels [q0, q1) of b (k_total x n, b(k, j) = b[k * row_stride + j * col_stride])
// into dst (layout above; dst points at panel 0).
void gemm_f32_pack_b_avx2(const float* b, int64_t row_stride, int64_t col_stride, int64_t k_total, int64_t n,
                          int64_t q0, int64_t q1, float* dst);
void gemm_f32_pack_b_avx512(const float* b, int64_t row_stride, int64_t col_stride, int64_t k_total, int64_t n,
                            int64_t q0, int64_t q1, float* dst);

}  // namespace onnx_light::runtime::kernels::simd
