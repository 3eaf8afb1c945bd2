// The 3x3 stride-2 depthwise plane of dwconv_f32.h with AVX-512 F, read straight from NCHW.
#include <cstddef>
#include <cstdint>

#include "kernels/simd/activation_f32.h"
#include "kernels/simd/dwconv_f32.h"
#include "kernels/simd/ops_f32_avx512.h"

namespace onnx_light::runtime::kernels::simd {

namespace {

inline __mmask16 lanes_below(int64_t count) {
  if (count >= 16) return static_cast<__mmask16>(0xFFFF);
  if (count <= 0) return 0;
  return static_cast<__mmask16>((1u << count) - 1u);
}

// Taps kx = 0, 1, 2 of 16 outputs from one input row: lane j of t[kx] is row[base + 2j + kx], zero
// outside [0, in_w) and for a pad row (null). kInside: base >= 0 and base + 32 < in_w, so every
// element the block reads exists and the loads need no masks.
template <bool kInside>
inline void row_taps(const float* row, int64_t base, int64_t in_w, __m512 t[3]) {
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
    lo = _mm512_maskz_expandloadu_ps(static_cast<__mmask16>(lanes_below(in_w + 1) & 0xFFFEu), row);
    hi = in_w > 15 ? _mm512_maskz_loadu_ps(lanes_below(in_w - 15), row + 15) : _mm512_setzero_ps();
    last = 31 < in_w ? _mm512_set1_ps(row[31]) : _mm512_setzero_ps();
  } else {
    const int64_t left = in_w - base;  // columns from base on
    lo = left > 0 ? _mm512_maskz_loadu_ps(lanes_below(left), row + base) : _mm512_setzero_ps();
    hi = left > 16 ? _mm512_maskz_loadu_ps(lanes_below(left - 16), row + base + 16) : _mm512_setzero_ps();
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
  v = apply_f32_activation<Avx512>(kActivation, p.epilogue.alpha, p.epilogue.beta, v);
  if constexpr (kAffine)
    v = _mm512_add_ps(_mm512_mul_ps(v, _mm512_set1_ps(p.epilogue.post_scale)), _mm512_set1_ps(p.epilogue.post_shift));
  if (full) _mm512_storeu_ps(p.y + offset, v);
  else _mm512_mask_storeu_ps(p.y + offset, m, v);
}

// kRows (1 or 2) output rows from oy on, 16 outputs from x0 on: input rows 2 * oy - pad_top + i for
// i < 2 * kRows + 1; row i is kernel row i of the upper output and i - 2 of the lower one.
template <int kRows, bool kInside, int kActivation, bool kAffine>
inline void block(const DwconvF32Plane& p, const float* const* rows, const __m512* k, int64_t oy, int64_t x0) {
  const int64_t base = 2 * x0 - p.pad_left;
  __m512 acc[2] = {_mm512_setzero_ps(), _mm512_setzero_ps()};
  __m512 t[3];
#pragma GCC unroll 5
  for (int i = 0; i < 2 * kRows + 1; ++i) {
    row_taps<kInside>(rows[i], base, p.in_w, t);
    if (i < 3)
      for (int kx = 0; kx < 3; ++kx) acc[0] = _mm512_fmadd_ps(t[kx], k[i * 3 + kx], acc[0]);
    if (kRows == 2 && i >= 2)
      for (int kx = 0; kx < 3; ++kx) acc[1] = _mm512_fmadd_ps(t[kx], k[(i - 2) * 3 + kx], acc[1]);
  }
  const int64_t count = p.out_w - x0;
  const bool full = count >= 16;
  const __mmask16 m = lanes_below(count);
  for (int q = 0; q < kRows; ++q) store_output<kActivation, kAffine>(p, acc[q], (oy + q) * p.out_w + x0, m, full);
}

template <int kRows, int kActivation, bool kAffine>
inline void output_rows(const DwconvF32Plane& p, const __m512* k, int64_t oy) {
  const float* rows[5];
  for (int i = 0; i < 2 * kRows + 1; ++i) {
    const int64_t r = 2 * oy - p.pad_top + i;
    rows[i] = r >= 0 && r < p.in_h ? p.x + r * p.in_w : nullptr;
  }
  for (int64_t x0 = 0; x0 < p.out_w; x0 += 16) {
    const int64_t base = 2 * x0 - p.pad_left;
    if (base >= 0 && base + 32 < p.in_w) block<kRows, true, kActivation, kAffine>(p, rows, k, oy, x0);
    else block<kRows, false, kActivation, kAffine>(p, rows, k, oy, x0);
  }
}

template <int kActivation, bool kAffine>
void plane(const DwconvF32Plane& p) {
  __m512 k[9];
  for (int t = 0; t < 9; ++t) k[t] = _mm512_set1_ps(p.weights[t]);
  int64_t oy = 0;
  for (; oy + 2 <= p.out_h; oy += 2) output_rows<2, kActivation, kAffine>(p, k, oy);
  if (oy < p.out_h) output_rows<1, kActivation, kAffine>(p, k, oy);
}

}  // namespace

void dwconv_f32_plane_3x3s2_avx512(const DwconvF32Plane& p) {
  with_fixed_epilogue(p.epilogue.activation, p.epilogue.post_affine,
                      [&](auto e) { plane<decltype(e)::activation, decltype(e)::affine>(p); });
}

}  // namespace onnx_light::runtime::kernels::simd
