// Integer GEMM on AVX-512 VNNI: vpdpbusd over A packed in 6-row panels and B in 32-column panels
// (gemm_s8.h), so the micro-kernel reads both as two forward streams.
#include <immintrin.h>

#include <cstddef>
#include <cstdint>

#include "kernels/simd/gemm_s8.h"
#include "kernels/simd/gemm_s8_tile.h"

namespace onnx_light::runtime::kernels::simd {

namespace {

int64_t depth_groups(int64_t k) { return (k + 3) / 4; }

// Packed A bytes a row block keeps resident in L2 (1 MiB per core on AMD Zen 4/5) beside B's panel.
constexpr int64_t kRowBlockBytes = 256 * 1024;

// One tile: one 6-row A panel by one B panel; `rows` rows and `n` columns stored (the panel's
// padding rows are 0, so computing them is harmless), corrected when `correction` is given.
void tile(const uint8_t* pa, int64_t groups, const int8_t* pb, int32_t* c, int64_t ldc, int64_t rows, int64_t n,
          const GemmS8Correction* correction, int64_t i0, int64_t j0) {
  __m512i lo[kGemmS8Mr], hi[kGemmS8Mr];
  s8_tile_6x32(pa, groups, [pb](int64_t g) { return pb + g * kGemmS8Nr * 4; }, lo, hi);
  s8_store_tile(lo, hi, c, ldc, rows, n, correction, i0, j0);
}

}  // namespace

int64_t gemm_s8_packed_a_bytes(int64_t m, int64_t k) {
  const int64_t panels = (m + kGemmS8Mr - 1) / kGemmS8Mr;
  return panels * depth_groups(k) * kGemmS8Mr * 4;
}

int64_t gemm_s8_packed_b_bytes(int64_t k, int64_t n) {
  const int64_t panels = (n + kGemmS8Nr - 1) / kGemmS8Nr;
  return panels * depth_groups(k) * kGemmS8Nr * 4;
}

void gemm_s8_pack_a_avx512vnni(const uint8_t* a, int64_t lda, int a_signed, int64_t m, int64_t k, uint8_t* packed,
                               int32_t* row_sums) {
  const uint32_t flip = a_signed ? 0x80808080u : 0u;
  const int64_t groups = depth_groups(k);
  const int64_t full = k / 4;
  const int64_t panels = (m + kGemmS8Mr - 1) / kGemmS8Mr;
  for (int64_t p = 0; p < panels; ++p) {
    uint8_t* panel = packed + p * groups * kGemmS8Mr * 4;
    for (int64_t r = 0; r < kGemmS8Mr; ++r) {
      const int64_t i = p * kGemmS8Mr + r;
      uint8_t* out = panel + r * 4;
      if (i >= m) {
        for (int64_t g = 0; g < groups; ++g) __builtin_memset(out + g * kGemmS8Mr * 4, 0, 4);
        continue;
      }
      const uint8_t* row = a + i * lda;
      // Whole words, shifted four bytes at a time; the last partial word padded with 0.
      for (int64_t g = 0; g < full; ++g) {
        uint32_t word;
        __builtin_memcpy(&word, row + g * 4, 4);
        word ^= flip;
        __builtin_memcpy(out + g * kGemmS8Mr * 4, &word, 4);
      }
      if (full < groups) {
        uint8_t last[4] = {0, 0, 0, 0};
        for (int64_t kk = full * 4; kk < k; ++kk) last[kk - full * 4] = static_cast<uint8_t>(row[kk] ^ (flip & 0xFF));
        __builtin_memcpy(out + full * kGemmS8Mr * 4, last, 4);
      }
      // The row sum of A' (the shifted bytes), for the caller's correction.
      uint32_t sum = 0;
      for (int64_t kk = 0; kk < k; ++kk) sum += static_cast<uint8_t>(row[kk] ^ (flip & 0xFF));
      row_sums[i] = static_cast<int32_t>(sum);
    }
  }
}

void gemm_s8_pack_b_avx512vnni(const uint8_t* b, int64_t ldb, int b_unsigned, int64_t k, int64_t n, int8_t* packed,
                               int32_t* col_sums) {
  const uint8_t flip = b_unsigned ? 0x80 : 0x00;
  const int64_t groups = depth_groups(k);
  const int64_t panels = (n + kGemmS8Nr - 1) / kGemmS8Nr;
  for (int64_t j = 0; j < n; ++j) col_sums[j] = 0;
  for (int64_t q = 0; q < panels; ++q) {
    int8_t* panel = packed + q * groups * kGemmS8Nr * 4;
    for (int64_t g = 0; g < groups; ++g) {
      int8_t* group = panel + g * kGemmS8Nr * 4;
      for (int64_t d = 0; d < 4; ++d) {
        const int64_t kk = g * 4 + d;
        for (int64_t jj = 0; jj < kGemmS8Nr; ++jj) {
          const int64_t j = q * kGemmS8Nr + jj;
          int8_t value = 0;
          if (j < n && kk < k) {
            value = static_cast<int8_t>(static_cast<uint8_t>(b[kk * ldb + j] ^ flip));
            col_sums[j] += value;
          }
          group[jj * 4 + d] = value;
        }
      }
    }
  }
}

void gemm_u8s8_avx512vnni(const uint8_t* packed_a, int64_t m, int64_t k, const int8_t* packed_b, int64_t n, int32_t* c,
                          int64_t ldc, const GemmS8Correction* correction) {
  const int64_t groups = depth_groups(k);
  const int64_t a_panel = groups * kGemmS8Mr * 4;
  const int64_t b_panel = groups * kGemmS8Nr * 4;
  // Blocks of rows whose packed A (about 256 KiB) stays in L2; within a block, panel by panel of B:
  // one (k * 32 bytes) stays in L1 while the block's A panels stream past it. Without the row
  // blocks every B panel streamed all of A from L3 (1024^3: 32 passes over 1 MiB).
  const int64_t panels_per_block = a_panel > 0 && kRowBlockBytes / a_panel > 1 ? kRowBlockBytes / a_panel : 1;
  const int64_t block_rows = panels_per_block * kGemmS8Mr;
  for (int64_t i0 = 0; i0 < m; i0 += block_rows) {
    const int64_t i1 = m - i0 < block_rows ? m : i0 + block_rows;
    for (int64_t q = 0; q * kGemmS8Nr < n; ++q) {
      const int64_t j0 = q * kGemmS8Nr;
      const int64_t cols = n - j0 < kGemmS8Nr ? n - j0 : kGemmS8Nr;
      for (int64_t i = i0; i < i1; i += kGemmS8Mr) {
        const int64_t rows = i1 - i < kGemmS8Mr ? i1 - i : kGemmS8Mr;
        tile(packed_a + (i / kGemmS8Mr) * a_panel, groups, packed_b + q * b_panel, c + i * ldc + j0, ldc, rows, cols,
             correction, i, j0);
      }
    }
  }
}

namespace {

template <bool kSigned, typename Q>
void requantize(const int32_t* x, int64_t n, float multiplier, float zero, Q* y) {
  const __m512 vm = _mm512_set1_ps(multiplier), vz = _mm512_set1_ps(zero);
  const __m512 lo = _mm512_set1_ps(kSigned ? -128.0f : 0.0f), hi = _mm512_set1_ps(kSigned ? 127.0f : 255.0f);
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = s8_lanes16(n - i);
    const __m512 product = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_maskz_loadu_epi32(m, x + i)), vm);
    const __m512 r = _mm512_add_ps(_mm512_roundscale_ps(product, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC), vz);
    // MAXPS returns its second operand for a NaN first one: NaN saturates low, as in the portable code.
    _mm512_mask_cvtepi32_storeu_epi8(y + i, m, _mm512_cvtps_epi32(_mm512_min_ps(_mm512_max_ps(r, lo), hi)));
  }
}

}  // namespace

void requantize_s32_u8_avx512vnni(const int32_t* x, int64_t n, float multiplier, float zero, uint8_t* y) {
  requantize<false>(x, n, multiplier, zero, y);
}

void requantize_s32_s8_avx512vnni(const int32_t* x, int64_t n, float multiplier, float zero, int8_t* y) {
  requantize<true>(x, n, multiplier, zero, y);
}

}  // namespace onnx_light::runtime::kernels::simd
