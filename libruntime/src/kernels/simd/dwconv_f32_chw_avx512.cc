// The depthwise planes of dwconv_f32.h read straight from NCHW with AVX-512 F: 3x3 at strides 2 and 1.
// GCC 12 reports the _mm512_undefined_ps() inside max/min as used uninitialized where the
// activations inline into these loops (GCC bug 105593, as ops_f32_avx512.h notes).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif
#include <cstddef>
#include <cstdint>

#include "kernels/simd/dwconv_f32.h"
#include "kernels/simd/dwconv_f32_blocked_loops.h"
#include "kernels/simd/ops_f32_avx512.h"

namespace onnx_light::runtime::kernels::simd {

namespace {

// Taps kx = 0, 1, 2 of 16 outputs from one input row: lane j of t[kx] is row[base + 2j + kx], zero
// outside [0, in_w) and for a pad row (null). kInside: base >= 0 and base + 32 < in_w, so every
// element the block reads exists and the loads need no masks.
template <bool kInside>
inline void row_taps_s2(const float* row, int64_t base, int64_t in_w, __m512 t[3]) {
  if (row == nullptr) {
    t[0] = t[1] = t[2] = _mm512_setzero_ps();
    return;
  }
  const __m512i evens = _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0);
  const __m512i odds = _mm512_set_epi32(31, 29, 27, 25, 23, 21, 19, 17, 15, 13, 11, 9, 7, 5, 3, 1);
  __m512 lo, hi, last;
  if constexpr (kInside) {
    lo = _mm512_loadu_ps(row + base);
    hi = _mm512_loadu_ps(row + base + 16);
    last = _mm512_set1_ps(row[base + 32]);
  } else if (base < 0) {
    // base == -1 (the left pad): lane 0 is the pad, lanes 1.. columns 0..; nothing before the row
    // is addressed.
    lo = _mm512_maskz_expandloadu_ps(static_cast<__mmask16>(avx512_lanes_below(in_w + 1) & 0xFFFEu), row);
    hi = in_w > 15 ? _mm512_maskz_loadu_ps(avx512_lanes_below(in_w - 15), row + 15) : _mm512_setzero_ps();
    last = 31 < in_w ? _mm512_set1_ps(row[31]) : _mm512_setzero_ps();
  } else {
    const int64_t left = in_w - base;  // columns from base on
    lo = left > 0 ? _mm512_maskz_loadu_ps(avx512_lanes_below(left), row + base) : _mm512_setzero_ps();
    hi = left > 16 ? _mm512_maskz_loadu_ps(avx512_lanes_below(left - 16), row + base + 16) : _mm512_setzero_ps();
    last = left > 32 ? _mm512_set1_ps(row[base + 32]) : _mm512_setzero_ps();
  }
  t[0] = _mm512_permutex2var_ps(lo, evens, hi);
  t[1] = _mm512_permutex2var_ps(lo, odds, hi);
  // Elements 2, 4, .., 32: the evens one lane on, element 32 in the top lane.
  t[2] = _mm512_castsi512_ps(_mm512_alignr_epi32(_mm512_castps_si512(last), _mm512_castps_si512(t[0]), 1));
}

template <int kActivation, bool kAffine>
inline void store_output(const DwconvF32Plane& p, __m512 acc, int64_t offset, __mmask16 m, bool full) {
  __m512 v = _mm512_add_ps(acc, _mm512_set1_ps(p.bias));
  if (p.z != nullptr)
    v = _mm512_add_ps(v, full ? _mm512_loadu_ps(p.z + offset) : _mm512_maskz_loadu_ps(m, p.z + offset));
  v = dwconv_blocked_epilogue_fixed<Avx512, kActivation, kAffine>(p.epilogue, v);
  if (full) _mm512_storeu_ps(p.y + offset, v);
  else _mm512_mask_storeu_ps(p.y + offset, m, v);
}

// kRows (1 or 2) output rows from oy on, 16 outputs from x0 on: input rows 2 * oy - pad_top + i for
// i < 2 * kRows + 1; row i is kernel row i of the upper output and i - 2 of the lower one.
template <int kRows, bool kInside, int kActivation, bool kAffine>
inline void block_s2(const DwconvF32Plane& p, const float* const* rows, const __m512* k, int64_t oy, int64_t x0) {
  const int64_t base = 2 * x0 - p.pad_left;
  __m512 acc[2] = {_mm512_setzero_ps(), _mm512_setzero_ps()};
  __m512 t[3];
#pragma GCC unroll 5
  for (int i = 0; i < 2 * kRows + 1; ++i) {
    row_taps_s2<kInside>(rows[i], base, p.in_w, t);
    if (i < 3)
      for (int kx = 0; kx < 3; ++kx) acc[0] = _mm512_fmadd_ps(t[kx], k[i * 3 + kx], acc[0]);
    if (kRows == 2 && i >= 2)
      for (int kx = 0; kx < 3; ++kx) acc[1] = _mm512_fmadd_ps(t[kx], k[(i - 2) * 3 + kx], acc[1]);
  }
  const int64_t count = p.out_w - x0;
  const bool full = count >= 16;
  const __mmask16 m = avx512_lanes_below(count);
  for (int q = 0; q < kRows; ++q) store_output<kActivation, kAffine>(p, acc[q], (oy + q) * p.out_w + x0, m, full);
}

template <int kRows, int kActivation, bool kAffine>
inline void output_rows_s2(const DwconvF32Plane& p, const __m512* k, int64_t oy) {
  const float* rows[5];
  for (int i = 0; i < 2 * kRows + 1; ++i) {
    const int64_t r = 2 * oy - p.pad_top + i;
    rows[i] = r >= 0 && r < p.in_h ? p.x + r * p.in_w : nullptr;
  }
  for (int64_t x0 = 0; x0 < p.out_w; x0 += 16) {
    const int64_t base = 2 * x0 - p.pad_left;
    if (base >= 0 && base + 32 < p.in_w) block_s2<kRows, true, kActivation, kAffine>(p, rows, k, oy, x0);
    else block_s2<kRows, false, kActivation, kAffine>(p, rows, k, oy, x0);
  }
}

template <int kActivation, bool kAffine>
void plane_s2(const DwconvF32Plane& p) {
  __m512 k[9];
  for (int t = 0; t < 9; ++t) k[t] = _mm512_set1_ps(p.weights[t]);
  int64_t oy = 0;
  for (; oy + 2 <= p.out_h; oy += 2) output_rows_s2<2, kActivation, kAffine>(p, k, oy);
  if (oy < p.out_h) output_rows_s2<1, kActivation, kAffine>(p, k, oy);
}

// Tap kx of 16 outputs from one input row at stride 1: lane j is row[start + j], zero outside
// [0, in_w) and for a pad row (null); start >= -15. Nothing outside the row is addressed.
inline __m512 row_tap_s1(const float* row, int64_t start, int64_t in_w) {
  if (row == nullptr) return _mm512_setzero_ps();
  if (start >= 0 && start + 16 <= in_w) return _mm512_loadu_ps(row + start);
  if (start < 0) {
    // Lanes -start.. hold columns 0..: an expanding load places consecutive elements in them.
    const __mmask16 lanes = static_cast<__mmask16>(avx512_lanes_below(in_w - start) & ~avx512_lanes_below(-start));
    return _mm512_maskz_expandloadu_ps(lanes, row);
  }
  return start < in_w ? _mm512_maskz_loadu_ps(avx512_lanes_below(in_w - start), row + start) : _mm512_setzero_ps();
}

// The stride-1 loop's kernel size (a 5x5 instance measured slower than the blocked kernel, see
// depthwise_conv.cc).
constexpr int kK = 3;

// kRows output rows from oy on, 16 outputs from x0 on, of a kK x kK stride-1 plane: input rows
// oy - pad_top + i for i < kRows + kK - 1, row i being kernel row i - q of output row q. Each
// output's chain runs over its kernel rows in order (i ascending) and the columns within them.
template <int kRows, int kActivation, bool kAffine>
inline void block_s1(const DwconvF32Plane& p, const float* const* rows, int64_t oy, int64_t x0) {
  __m512 acc[kRows];
#pragma GCC unroll 8
  for (int q = 0; q < kRows; ++q) acc[q] = _mm512_setzero_ps();
  const int64_t start = x0 - p.pad_left;
#pragma GCC unroll 12
  for (int i = 0; i < kRows + kK - 1; ++i)
#pragma GCC unroll 5
    for (int kx = 0; kx < kK; ++kx) {
      const __m512 v = row_tap_s1(rows[i], start + kx, p.in_w);
#pragma GCC unroll 8
      for (int q = 0; q < kRows; ++q)
        if (i - q >= 0 && i - q < kK) acc[q] = _mm512_fmadd_ps(v, _mm512_set1_ps(p.weights[(i - q) * kK + kx]), acc[q]);
    }
  const int64_t count = p.out_w - x0;
  const bool full = count >= 16;
  const __mmask16 m = avx512_lanes_below(count);
#pragma GCC unroll 8
  for (int q = 0; q < kRows; ++q) store_output<kActivation, kAffine>(p, acc[q], (oy + q) * p.out_w + x0, m, full);
}

template <int kRows, int kActivation, bool kAffine>
inline void output_rows_s1(const DwconvF32Plane& p, int64_t oy) {
  const float* rows[kRows + kK - 1];
  for (int i = 0; i < kRows + kK - 1; ++i) {
    const int64_t r = oy - p.pad_top + i;
    rows[i] = r >= 0 && r < p.in_h ? p.x + r * p.in_w : nullptr;
  }
  for (int64_t x0 = 0; x0 < p.out_w; x0 += 16) block_s1<kRows, kActivation, kAffine>(p, rows, oy, x0);
}

// Four output rows at a time (each input row loaded once for up to four of them), then the rest.
template <int kActivation, bool kAffine>
void plane_s1(const DwconvF32Plane& p) {
  int64_t oy = 0;
  for (; oy + 4 <= p.out_h; oy += 4) output_rows_s1<4, kActivation, kAffine>(p, oy);
  switch (p.out_h - oy) {
    case 3: output_rows_s1<3, kActivation, kAffine>(p, oy); break;
    case 2: output_rows_s1<2, kActivation, kAffine>(p, oy); break;
    case 1: output_rows_s1<1, kActivation, kAffine>(p, oy); break;
    default: break;
  }
}

}  // namespace

void dwconv_f32_plane_3x3s1_avx512(const DwconvF32Plane& p) {
  with_fixed_epilogue(p.epilogue.activation, p.epilogue.post_affine,
                      [&](auto e) { plane_s1<decltype(e)::activation, decltype(e)::affine>(p); });
}

void dwconv_f32_plane_3x3s2_avx512(const DwconvF32Plane& p) {
  with_fixed_epilogue(p.epilogue.activation, p.epilogue.post_affine,
                      [&](auto e) { plane_s2<decltype(e)::activation, decltype(e)::affine>(p); });
}

}  // namespace onnx_light::runtime::kernels::simd
