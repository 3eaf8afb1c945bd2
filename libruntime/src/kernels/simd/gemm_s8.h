#pragma once
// Integer GEMM for MatMulInteger and QLinearMatMul on AVX-512 VNNI (*_avx512vnni) and AVX-VNNI
// (*_avxvnni: the same instructions VEX-encoded on 256-bit registers), see README.md. Both ISAs
// share the packed layouts below (the AVX-VNNI tile covers a B panel's 32 columns in two halves of
// 16) and the algorithms (gemm_s8_tile.h), so they produce the same bits.
//
// vpdpbusd multiplies unsigned bytes by signed bytes, four pairs at a time, and adds the four
// products to an int32 lane. Both operands are brought to that form by a shift the caller undoes
// exactly afterwards:
//   A: int8 a -> a' = a + 128 (uint8; a byte XOR 0x80); uint8 A is used as it is.
//   B: uint8 b -> b' = b - 128 (int8; a byte XOR 0x80); int8 B is used as it is.
// The kernels compute the raw sums sum_k a'(i, k) * b'(k, j) in int32 with wraparound, as the
// reference's int32 accumulation; with the row sums of A' and the column sums of B' (written by
// the packing routines) the caller recovers sum_k (a(i, k) - a_zero) * (b(k, j) - b_zero) exactly.
//
// Both operands are packed over the depth rounded up to a multiple of 4 (a group), padding 0:
//   A: panels of kGemmS8Mr rows; panel p holds, per group g, kGemmS8Mr words of four bytes,
//      a'(p * Mr + r, 4g .. 4g + 3) for r ascending (rows past the matrix are 0).
//   B: panels of kGemmS8Nr columns; panel q holds, per group g, kGemmS8Nr words,
//      b'(4g .. 4g + 3, q * Nr + j) for j ascending (columns past the matrix are 0).
// Padding pairs a byte with a 0 of the other operand, so it adds nothing.
#include <cstddef>
#include <cstdint>

namespace onnx_light::runtime::kernels::simd {

inline constexpr int kGemmS8Mr = 6;   // rows of C per micro-kernel call (12 accumulators)
inline constexpr int kGemmS8Nr = 32;  // columns per B panel (AVX-512: two 16-lane accumulators per
                                      // row; AVX-VNNI: two 8-lane ones per row, per half panel)

namespace {  // plain arithmetic, one copy per including file (no ISA's flags imposed on the others)

// Bytes of packed A for m x k and of packed B for k x n (multiples of 4 and of 128).
inline int64_t gemm_s8_packed_a_bytes(int64_t m, int64_t k) {
  return (m + kGemmS8Mr - 1) / kGemmS8Mr * ((k + 3) / 4) * kGemmS8Mr * 4;
}
inline int64_t gemm_s8_packed_b_bytes(int64_t k, int64_t n) {
  return (n + kGemmS8Nr - 1) / kGemmS8Nr * ((k + 3) / 4) * kGemmS8Nr * 4;
}

}  // namespace

// Packs rows [0, m) of a(i, kk) = a[i * lda + kk] (int8 when a_signed, else uint8) into `packed`
// (gemm_s8_packed_a_bytes(m, k) bytes) and writes row_sums[i] = sum_k a'(i, k).
void gemm_s8_pack_a_avx512vnni(const uint8_t* a, int64_t lda, int a_signed, int64_t m, int64_t k, uint8_t* packed,
                               int32_t* row_sums);
void gemm_s8_pack_a_avxvnni(const uint8_t* a, int64_t lda, int a_signed, int64_t m, int64_t k, uint8_t* packed,
                            int32_t* row_sums);

// Packs b(kk, j) = b[kk * ldb + j] (uint8 when b_unsigned, else int8) into `packed`
// (gemm_s8_packed_b_bytes bytes) and writes col_sums[j] = sum_k b'(k, j) for j < n.
void gemm_s8_pack_b_avx512vnni(const uint8_t* b, int64_t ldb, int b_unsigned, int64_t k, int64_t n, int8_t* packed,
                               int32_t* col_sums);
void gemm_s8_pack_b_avxvnni(const uint8_t* b, int64_t ldb, int b_unsigned, int64_t k, int64_t n, int8_t* packed,
                            int32_t* col_sums);

// The zero-point correction applied as each tile is stored (no second pass over C), in int32 with
// wraparound: c(i, j) = raw(i, j) + beta[j] * row_term[i] + row_alpha[i] * col_sums[j]. Rows are
// indexed from the call's first row, columns from 0.
struct GemmS8Correction {
  const int32_t* row_term;   // rowsum(A')_i + k * alpha_i
  const int32_t* row_alpha;  // alpha_i
  const int32_t* beta;       // beta_j
  const int32_t* col_sums;   // colsum(B')_j
};

// c[i * ldc + j] = sum_k a'(i, k) * b'(k, j) for i < m, j < n, both operands packed as above
// (packed_a for these m rows, packed_b for the whole k x n), corrected as above when `correction`
// is given.
void gemm_u8s8_avx512vnni(const uint8_t* packed_a, int64_t m, int64_t k, const int8_t* packed_b, int64_t n, int32_t* c,
                          int64_t ldc, const GemmS8Correction* correction);
void gemm_u8s8_avxvnni(const uint8_t* packed_a, int64_t m, int64_t k, const int8_t* packed_b, int64_t n, int32_t* c,
                       int64_t ldc, const GemmS8Correction* correction);

// QLinearMatMul's requantization of n products: y = saturate(nearbyint(float(x) * multiplier) + zero),
// bit for bit the portable kernel's expression.
void requantize_s32_u8_avx512vnni(const int32_t* x, int64_t n, float multiplier, float zero, uint8_t* y);
void requantize_s32_s8_avx512vnni(const int32_t* x, int64_t n, float multiplier, float zero, int8_t* y);
void requantize_s32_u8_avxvnni(const int32_t* x, int64_t n, float multiplier, float zero, uint8_t* y);
void requantize_s32_s8_avxvnni(const int32_t* x, int64_t n, float multiplier, float zero, int8_t* y);

// One ISA's functions above, for the portable kernels that are registered once per ISA. Call them
// only after the kernel table found the host able to run that ISA.
struct GemmS8Functions {
  void (*pack_a)(const uint8_t* a, int64_t lda, int a_signed, int64_t m, int64_t k, uint8_t* packed, int32_t* row_sums);
  void (*pack_b)(const uint8_t* b, int64_t ldb, int b_unsigned, int64_t k, int64_t n, int8_t* packed, int32_t* col_sums);
  void (*gemm)(const uint8_t* packed_a, int64_t m, int64_t k, const int8_t* packed_b, int64_t n, int32_t* c, int64_t ldc,
               const GemmS8Correction* correction);
  void (*requantize_u8)(const int32_t* x, int64_t n, float multiplier, float zero, uint8_t* y);
  void (*requantize_s8)(const int32_t* x, int64_t n, float multiplier, float zero, int8_t* y);
};

inline constexpr GemmS8Functions kGemmS8Avx512Vnni{gemm_s8_pack_a_avx512vnni, gemm_s8_pack_b_avx512vnni,
                                                   gemm_u8s8_avx512vnni, requantize_s32_u8_avx512vnni,
                                                   requantize_s32_s8_avx512vnni};
inline constexpr GemmS8Functions kGemmS8AvxVnni{gemm_s8_pack_a_avxvnni, gemm_s8_pack_b_avxvnni, gemm_u8s8_avxvnni,
                                                requantize_s32_u8_avxvnni, requantize_s32_s8_avxvnni};

}  // namespace onnx_light::runtime::kernels::simd
