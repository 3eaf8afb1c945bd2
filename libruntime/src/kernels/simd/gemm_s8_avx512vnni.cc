// Integer GEMM on AVX-512 VNNI: vpdpbusd over A packed in 6-row panels and B in 32-column panels
// (gemm_s8.h), so the micro-kernel reads both as two forward streams. The algorithm is
// gemm_s8_tile.h's, over 16-lane zmm operations (s8_ops_avx512vnni.h).
#include <immintrin.h>

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"  // GCC bug 105593
#endif

#include <cstddef>
#include <cstdint>

#include "kernels/simd/gemm_s8.h"
#include "kernels/simd/gemm_s8_tile.h"
#include "kernels/simd/s8_ops_avx512vnni.h"

namespace onnx_light::runtime::kernels::simd {

void gemm_s8_pack_a_avx512vnni(const uint8_t* a, int64_t lda, int a_signed, int64_t m, int64_t k, uint8_t* packed,
                               int32_t* row_sums) {
  s8_pack_a(a, lda, a_signed, m, k, packed, row_sums);
}

void gemm_s8_pack_b_avx512vnni(const uint8_t* b, int64_t ldb, int b_unsigned, int64_t k, int64_t n, int8_t* packed,
                               int32_t* col_sums) {
  s8_pack_b(b, ldb, b_unsigned, k, n, packed, col_sums);
}

void gemm_u8s8_avx512vnni(const uint8_t* packed_a, int64_t m, int64_t k, const int8_t* packed_b, int64_t n, int32_t* c,
                          int64_t ldc, const GemmS8Correction* correction) {
  s8_gemm<S8Avx512Vnni>(packed_a, m, k, packed_b, n, c, ldc, correction);
}

void requantize_s32_u8_avx512vnni(const int32_t* x, int64_t n, float multiplier, float zero, uint8_t* y) {
  s8_requantize<S8Avx512Vnni, false>(x, n, multiplier, zero, y);
}

void requantize_s32_s8_avx512vnni(const int32_t* x, int64_t n, float multiplier, float zero, int8_t* y) {
  s8_requantize<S8Avx512Vnni, true>(x, n, multiplier, zero, reinterpret_cast<uint8_t*>(y));
}

}  // namespace onnx_light::runtime::kernels::simd
