#pragma once
// The integer GEMM of gemm_s8.h written once over an ISA's vector operations (Ops:
// s8_ops_avx512vnni.h, s8_ops_avxvnni.h): the packing, the 6-row vpdpbusd tile, its corrected
// store, the loops over packed panels or over B read in place, and the requantization. Internal
// linkage (anonymous namespace, see README.md): each ISA file compiles its own copy with its flags.
//
// A tile is 6 rows by two vectors of columns (AVX-512: 32 columns, a whole B panel; AVX-VNNI: 16,
// half a panel, so a panel takes two tiles): 12 accumulators, which leaves room for B's two
// vectors and A's broadcast word in AVX2's 16 registers.
#include <cstddef>
#include <cstdint>

#include "kernels/simd/gemm_s8.h"

namespace onnx_light::runtime::kernels::simd {
namespace {

inline int64_t s8_depth_groups(int64_t k) { return (k + 3) / 4; }

// Packed A bytes a row block keeps resident in L2 (1 MiB per core on AMD Zen 4/5) beside B's panel.
constexpr int64_t kS8RowBlockBytes = 256 * 1024;

// The raw sums of one 6-row A panel (`groups` depth groups) by 2 * Ops::kLanes columns of B, whose
// group g's words are at b_at(g): the rows' first kLanes columns in lo, the next kLanes in hi.
// Twelve named accumulators rather than an array: with the asm of Ops::dpbusd an array would live
// in memory.
template <typename Ops, typename BAt>
__attribute__((always_inline)) inline void s8_tile_6x2(const uint8_t* pa, int64_t groups, BAt b_at,
                                                        typename Ops::V (&lo)[kGemmS8Mr],
                                                        typename Ops::V (&hi)[kGemmS8Mr]) {
  static_assert(kGemmS8Mr == 6, "the tile below is written out for six rows");
  using V = typename Ops::V;
  V c00 = Ops::zero(), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00;
  V c30 = c00, c31 = c00, c40 = c00, c41 = c00, c50 = c00, c51 = c00;
  for (int64_t g = 0; g < groups; ++g) {
    const int8_t* pb = b_at(g);
    const V b0 = Ops::load(pb);
    const V b1 = Ops::load(pb + Ops::kLanes * 4);
    V a = Ops::broadcast_word(pa);
    Ops::dpbusd(c00, a, b0);
    Ops::dpbusd(c01, a, b1);
    a = Ops::broadcast_word(pa + 4);
    Ops::dpbusd(c10, a, b0);
    Ops::dpbusd(c11, a, b1);
    a = Ops::broadcast_word(pa + 8);
    Ops::dpbusd(c20, a, b0);
    Ops::dpbusd(c21, a, b1);
    a = Ops::broadcast_word(pa + 12);
    Ops::dpbusd(c30, a, b0);
    Ops::dpbusd(c31, a, b1);
    a = Ops::broadcast_word(pa + 16);
    Ops::dpbusd(c40, a, b0);
    Ops::dpbusd(c41, a, b1);
    a = Ops::broadcast_word(pa + 20);
    Ops::dpbusd(c50, a, b0);
    Ops::dpbusd(c51, a, b1);
    pa += kGemmS8Mr * 4;
  }
  lo[0] = c00, lo[1] = c10, lo[2] = c20, lo[3] = c30, lo[4] = c40, lo[5] = c50;
  hi[0] = c01, hi[1] = c11, hi[2] = c21, hi[3] = c31, hi[4] = c41, hi[5] = c51;
}

// Stores `rows` rows and `n` columns (up to 2 * kLanes) of a tile at c (row stride ldc), corrected
// first when `correction` is given (indexed from the tile's first row i0 and column j0, gemm_s8.h).
template <typename Ops>
inline void s8_store_tile(typename Ops::V (&lo)[kGemmS8Mr], typename Ops::V (&hi)[kGemmS8Mr], int32_t* c, int64_t ldc,
                          int64_t rows, int64_t n, const GemmS8Correction* correction, int64_t i0, int64_t j0) {
  using V = typename Ops::V;
  constexpr int kL = Ops::kLanes;
  if (correction != nullptr) {
    // Tail loads: the columns past n are neither read nor stored.
    const V beta0 = Ops::load_n(correction->beta + j0, n), beta1 = Ops::load_n(correction->beta + j0 + kL, n - kL);
    const V col0 = Ops::load_n(correction->col_sums + j0, n), col1 = Ops::load_n(correction->col_sums + j0 + kL, n - kL);
    for (int64_t r = 0; r < rows; ++r) {
      const V term = Ops::set1(correction->row_term[i0 + r]);
      const V alpha = Ops::set1(correction->row_alpha[i0 + r]);
      lo[r] = Ops::add(Ops::add(lo[r], Ops::mullo(beta0, term)), Ops::mullo(alpha, col0));
      hi[r] = Ops::add(Ops::add(hi[r], Ops::mullo(beta1, term)), Ops::mullo(alpha, col1));
    }
  }
  for (int64_t r = 0; r < rows; ++r) {
    Ops::store_n(c + r * ldc, lo[r], n);
    Ops::store_n(c + r * ldc + kL, hi[r], n - kL);
  }
}

// One 6-row A panel by up to 32 columns (one B panel, group g's 32 words at panel_at(g)): as many
// tiles as the ISA needs for them, each stored (and corrected) as it is done.
template <typename Ops, typename PanelAt>
__attribute__((always_inline)) inline void s8_panel(const uint8_t* pa, int64_t groups, PanelAt panel_at, int32_t* c,
                                                     int64_t ldc, int64_t rows, int64_t n,
                                                     const GemmS8Correction* correction, int64_t i0, int64_t j0) {
  constexpr int kTile = 2 * Ops::kLanes;
  static_assert(kGemmS8Nr % kTile == 0, "a B panel must split into whole tiles");
  for (int64_t h = 0; h < kGemmS8Nr / kTile && h * kTile < n; ++h) {
    typename Ops::V lo[kGemmS8Mr], hi[kGemmS8Mr];
    s8_tile_6x2<Ops>(pa, groups, [&panel_at, h](int64_t g) { return panel_at(g) + h * kTile * 4; }, lo, hi);
    s8_store_tile<Ops>(lo, hi, c + h * kTile, ldc, rows, n - h * kTile, correction, i0, j0 + h * kTile);
  }
}

// gemm_u8s8_*: c = packed A x packed B, corrected when asked (gemm_s8.h).
template <typename Ops>
void s8_gemm(const uint8_t* packed_a, int64_t m, int64_t k, const int8_t* packed_b, int64_t n, int32_t* c, int64_t ldc,
             const GemmS8Correction* correction) {
  const int64_t groups = s8_depth_groups(k);
  const int64_t a_panel = groups * kGemmS8Mr * 4;
  const int64_t b_panel = groups * kGemmS8Nr * 4;
  // Blocks of rows whose packed A (about 256 KiB) stays in L2; within a block, panel by panel of B:
  // one (k * 32 bytes) stays in L1 while the block's A panels stream past it. Without the row
  // blocks every B panel streamed all of A from L3 (1024^3: 32 passes over 1 MiB).
  const int64_t panels_per_block = a_panel > 0 && kS8RowBlockBytes / a_panel > 1 ? kS8RowBlockBytes / a_panel : 1;
  const int64_t block_rows = panels_per_block * kGemmS8Mr;
  for (int64_t i0 = 0; i0 < m; i0 += block_rows) {
    const int64_t i1 = m - i0 < block_rows ? m : i0 + block_rows;
    for (int64_t q = 0; q * kGemmS8Nr < n; ++q) {
      const int64_t j0 = q * kGemmS8Nr;
      const int64_t cols = n - j0 < kGemmS8Nr ? n - j0 : kGemmS8Nr;
      const int8_t* pb = packed_b + q * b_panel;
      for (int64_t i = i0; i < i1; i += kGemmS8Mr) {
        const int64_t rows = i1 - i < kGemmS8Mr ? i1 - i : kGemmS8Mr;
        s8_panel<Ops>(packed_a + (i / kGemmS8Mr) * a_panel, groups, [pb](int64_t g) { return pb + g * kGemmS8Nr * 4; },
                      c + i * ldc + j0, ldc, rows, cols, correction, i, j0);
      }
    }
  }
}

// conv_s8_gemm_windows_*: the GEMM with B read in place, depth group g of columns [j, j + 32) at
// b + offsets[g] + 4 * j (conv_s8.h); no correction.
template <typename Ops>
void s8_gemm_windows(const uint8_t* packed_a, int64_t m, int64_t groups, const uint8_t* b, const int64_t* offsets,
                     int64_t n, int32_t* c, int64_t ldc) {
  const int64_t a_panel = groups * kGemmS8Mr * 4;
  for (int64_t q = 0; q * kGemmS8Nr < n; ++q) {
    const int64_t j0 = q * kGemmS8Nr;
    const int64_t cols = n - j0 < kGemmS8Nr ? n - j0 : kGemmS8Nr;
    const uint8_t* bq = b + j0 * 4;
    for (int64_t i = 0; i < m; i += kGemmS8Mr) {
      const int64_t rows = m - i < kGemmS8Mr ? m - i : kGemmS8Mr;
      s8_panel<Ops>(packed_a + (i / kGemmS8Mr) * a_panel, groups,
                    [bq, offsets](int64_t g) { return reinterpret_cast<const int8_t*>(bq + offsets[g]); },
                    c + i * ldc + j0, ldc, rows, cols, nullptr, 0, 0);
    }
  }
}

// gemm_s8_pack_a_*: plain byte moves, the same on every ISA.
inline void s8_pack_a(const uint8_t* a, int64_t lda, int a_signed, int64_t m, int64_t k, uint8_t* packed,
                      int32_t* row_sums) {
  const uint32_t flip = a_signed ? 0x80808080u : 0u;
  const int64_t groups = s8_depth_groups(k);
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

// gemm_s8_pack_b_*.
inline void s8_pack_b(const uint8_t* b, int64_t ldb, int b_unsigned, int64_t k, int64_t n, int8_t* packed,
                      int32_t* col_sums) {
  const uint8_t flip = b_unsigned ? 0x80 : 0x00;
  const int64_t groups = s8_depth_groups(k);
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

// requantize_s32_*: y = saturate(nearbyint(float(x) * multiplier) + zero), kLanes at a time.
template <typename Ops, bool kSigned>
void s8_requantize(const int32_t* x, int64_t n, float multiplier, float zero, uint8_t* y) {
  const typename Ops::F vm = Ops::set1f(multiplier), vz = Ops::set1f(zero);
  for (int64_t i = 0; i < n; i += Ops::kLanes)
    Ops::template requantize_store_n<kSigned>(Ops::load_n(x + i, n - i), vm, vz, y + i, n - i);
}

}  // namespace
}  // namespace onnx_light::runtime::kernels::simd
