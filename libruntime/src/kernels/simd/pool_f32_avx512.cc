// 2-D pooling rows (pool_f32.h) with AVX-512 F: 16 outputs per vector; stride 2 from two loads and
// one permute instead of a gather.
#include <immintrin.h>

#include <cstddef>
#include <cstdint>

#include "kernels/simd/ops_f32_avx512.h"
#include "kernels/simd/pool_f32.h"

namespace onnx_light::runtime::kernels::simd {

namespace {

// Elements src[0], src[stride], ... of `count` outputs (lanes past count are 0); reads nothing
// past the last one.
inline __m512 load_strided(const float* src, int64_t stride, int64_t count, __mmask16 m) {
  if (stride == 1) return _mm512_maskz_loadu_ps(m, src);
  if (stride == 2) {
    // src[0 .. 2 * count - 2]: the low vector holds up to 16 of them, the high one the rest.
    const int64_t span = 2 * count - 1;
    const __m512 lo = _mm512_maskz_loadu_ps(avx512_lanes_below(span), src);
    const __m512 hi = _mm512_maskz_loadu_ps(avx512_lanes_below(span - 16), src + 16);
    const __m512i evens = _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0);
    return _mm512_maskz_permutex2var_ps(m, lo, evens, hi);
  }
  const __m512i index = _mm512_mullo_epi32(_mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0),
                                           _mm512_set1_epi32(static_cast<int>(stride)));
  return _mm512_mask_i32gather_ps(_mm512_setzero_ps(), m, index, src, 4);
}

// acc after one more tap v: the first tap as it is (MaxPool) or 0 + v (AveragePool's sum from 0).
template <bool kMax>
inline __m512 pool_tap(__m512 acc, __m512 v) {
  // max_ps(v, acc) is v > acc ? v : acc (acc on NaN or equal zeros), the portable expression.
  return kMax ? _mm512_max_ps(v, acc) : _mm512_add_ps(acc, v);
}

// Stride 2, dilation 1, 2 or 3 taps across (MaxPool 3x3 s2, 2x2 s2): each kernel row's span is
// loaded once for all its taps and deinterleaved by two permutes; the third tap is the evens one
// lane on (three shuffles per kernel row instead of five). One block of up to 16 outputs from
// `origin`, the first window's first column; kPadded: that column is a pad (the lead, see
// pool_f32.h) and `origin` points one past it, so nothing before the row is addressed.
template <int kKernelW, bool kMax, bool kPadded, bool kFull>
inline void pool_block_stride2(const PoolF32Row& r, const float* origin, int64_t count, float* y) {
  const __m512i evens = _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0);
  const __m512i odds = _mm512_set_epi32(31, 29, 27, 25, 23, 21, 19, 17, 15, 13, 11, 9, 7, 5, 3, 1);
  constexpr int64_t shift = kPadded ? 1 : 0;  // elements of the span before `origin`
  // Elements the block's windows read; a full block (16 outputs) reads two whole vectors.
  const int64_t span = kFull ? 31 + (kKernelW - 1) : 2 * count - 1 + (kKernelW - 1);
  const __mmask16 low_lanes = kFull ? 0xFFFF : avx512_lanes_below(span), high_lanes = kFull ? 0xFFFF : avx512_lanes_below(span - 16);
  const int64_t rows = r.kernel_rows, row_step = r.row_step;
  __m512 acc = _mm512_setzero_ps();
  for (int64_t ky = 0; ky < rows; ++ky) {
    const float* row = origin + ky * row_step;
    __m512 lo;
    if constexpr (kPadded) {
      // Lanes 1..15 from column 0 on, lane 0 (the pad) a copy of lane 1.
      lo = _mm512_maskz_expandloadu_ps(static_cast<__mmask16>(low_lanes & 0xFFFEu), row);
      lo = _mm512_mask_permutexvar_ps(lo, 1, _mm512_set1_epi32(1), lo);
    } else {
      lo = kFull ? _mm512_loadu_ps(row) : _mm512_maskz_loadu_ps(low_lanes, row);
    }
    const __m512 hi = kFull ? _mm512_loadu_ps(row + 16 - shift) : _mm512_maskz_loadu_ps(high_lanes, row + 16 - shift);
    const __m512 v0 = _mm512_permutex2var_ps(lo, evens, hi);
    const __m512 v1 = _mm512_permutex2var_ps(lo, odds, hi);
    acc = ky == 0 && kMax ? v0 : pool_tap<kMax>(acc, v0);
    acc = pool_tap<kMax>(acc, v1);
    if constexpr (kKernelW == 3) {
      // Elements 2, 4, .., 32: the evens one lane on, element 32 read only when a window needs it.
      const __m512 last = span > 32 ? _mm512_set1_ps(row[32 - shift]) : _mm512_setzero_ps();
      acc = pool_tap<kMax>(acc, _mm512_castsi512_ps(_mm512_alignr_epi32(_mm512_castps_si512(last),
                                                                        _mm512_castps_si512(v0), 1)));
    }
  }
  if constexpr (!kMax) acc = _mm512_div_ps(acc, _mm512_set1_ps(r.divisor));
  if constexpr (kFull) _mm512_storeu_ps(y, acc);
  else _mm512_mask_storeu_ps(y, avx512_lanes_below(count), acc);
}

template <int kKernelW, bool kMax>
void pool_row_stride2(const PoolF32Row& r) {
  int64_t j = 0;
  if (r.lead != 0 && r.n > 0) {
    pool_block_stride2<kKernelW, kMax, true, false>(r, r.first, r.n < 16 ? r.n : 16, r.y);
    j = 16;
  }
  for (; j + 16 <= r.n; j += 16) pool_block_stride2<kKernelW, kMax, false, true>(r, r.first + 2 * j - r.lead, 16, r.y + j);
  if (j < r.n) pool_block_stride2<kKernelW, kMax, false, false>(r, r.first + 2 * j - r.lead, r.n - j, r.y + j);
}

}  // namespace

void pool_f32_row_avx512(const PoolF32Row& r) {
  if (r.stride_w == 2 && r.dilation_w == 1 && r.kernel_rows > 0 && (r.kernel_w == 2 || r.kernel_w == 3)) {
    if (r.kernel_w == 2) r.max ? pool_row_stride2<2, true>(r) : pool_row_stride2<2, false>(r);
    else r.max ? pool_row_stride2<3, true>(r) : pool_row_stride2<3, false>(r);
    return;
  }
  for (int64_t j = 0; j < r.n; j += 16) {
    const int64_t count = r.n - j < 16 ? r.n - j : 16;
    const __mmask16 m = avx512_lanes_below(count);
    const float* origin = r.first + j * r.stride_w;
    __m512 acc = _mm512_setzero_ps();
    bool first = true;
    for (int64_t ky = 0; ky < r.kernel_rows; ++ky) {
      const float* row = origin + ky * r.row_step;
      for (int64_t kx = 0; kx < r.kernel_w; ++kx) {
        const __m512 v = load_strided(row + kx * r.dilation_w, r.stride_w, count, m);
        // max_ps(v, acc) is v > acc ? v : acc (acc on NaN or equal zeros), the portable expression.
        if (r.max) acc = first ? v : _mm512_max_ps(v, acc);
        else acc = _mm512_add_ps(acc, v);
        first = false;
      }
    }
    if (!r.max) acc = _mm512_div_ps(acc, _mm512_set1_ps(r.divisor));
    _mm512_mask_storeu_ps(r.y + j, m, acc);
  }
}

}  // namespace onnx_light::runtime::kernels::simd
