// Integer GEMM on AVX-VNNI (Alder Lake and later, Zen 5): the VEX-encoded 256-bit vpdpbusd over the
// packed layouts of gemm_s8.h, B's 32-column panels in two 16-column tiles. The algorithm is
// gemm_s8_tile.h's, over 8-lane ymm operations (s8_ops_avxvnni.h); no AVX-512 instruction.
#include <immintrin.h>

#include <cstddef>
#include <cstdint>

#include "kernels/simd/gemm_s8.h"
#include "kernels/simd/gemm_s8_tile.h"
#include "kernels/simd/s8_ops_avxvnni.h"

namespace onnx_light::runtime::kernels::simd {

void gemm_s8_pack_a_avxvnni(const uint8_t* a, int64_t lda, int a_signed, int64_t m, int64_t k, uint8_t* packed,
                               int32_t* row_sums) {
  s8_pack_a(a, lda, a_signed, m, k, packed, row_sums);
}

void gemm_s8_pack_b_avxvnni(const uint8_t* b, int64_t ldb, int b_unsigned, int64_t k, int64_t n, int8_t* packed,
                               int32_t* col_sums) {
  s8_pack_b(b, ldb, b_unsigned, k, n, packed, col_sums);
}

void gemm_u8s8_avxvnni(const uint8_t* packed_a, int64_t m, int64_t k, const int8_t* packed_b, int64_t n, int32_t* c,
                          int64_t ldc, const GemmS8Correction* correction) {
  s8_gemm<S8AvxVnni>(packed_a, m, k, packed_b, n, c, ldc, correction);
}

void requantize_s32_u8_avxvnni(const int32_t* x, int64_t n, float multiplier, float zero, uint8_t* y) {
  s8_requantize<S8AvxVnni, false>(x, n, multiplier, zero, y);
}

void requantize_s32_s8_avxvnni(const int32_t* x, int64_t n, float multiplier, float zero, int8_t* y) {
  s8_requantize<S8AvxVnni, true>(x, n, multiplier, zero, reinterpret_cast<uint8_t*>(y));
}

}  // namespace onnx_light::runtime::kernels::simd
