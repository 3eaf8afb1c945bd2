#pragma once
// The channel-blocked depthwise loops of dwconv_f32_blocked.h written once over an ops struct
// (Avx2 / Avx512, which supply `transpose`); each ISA file compiles its own internal copy.
#include <cstddef>
#include <cstdint>

#include "kernels/simd/activation_f32.h"
#include "kernels/simd/dwconv_f32_blocked.h"
#include "kernels/simd/tap_fma_chains.h"

namespace onnx_light::runtime::kernels::simd {
namespace {

// A compile-time int for the loops' dispatch lambdas (no <type_traits> in this folder).
template <int kValue>
struct IntConstant {
  static constexpr int value = kValue;
};

template <typename Ops>
inline typename Ops::V dwconv_blocked_epilogue(const DwconvF32Epilogue& e, typename Ops::V v) {
  v = apply_f32_activation<Ops>(e.activation, e.alpha, e.beta, v);
  if (e.post_affine) v = Ops::add(Ops::mul(v, Ops::set1(e.post_scale)), Ops::set1(e.post_shift));
  return v;
}

// The same with the activation and post affine known at compile time (no switch per stored vector).
template <typename Ops, int kActivation, bool kAffine>
inline typename Ops::V dwconv_blocked_epilogue_fixed(const DwconvF32Epilogue& e, typename Ops::V v) {
  v = apply_f32_activation<Ops>(kActivation, e.alpha, e.beta, v);
  if constexpr (kAffine) v = Ops::add(Ops::mul(v, Ops::set1(e.post_scale)), Ops::set1(e.post_shift));
  return v;
}

template <typename Ops>
void dwconv_to_blocked(const float* const* planes, int64_t valid, int64_t h, int64_t w, float* dst, int64_t rows,
                       int64_t pitch, int64_t pad_top, int64_t pad_left) {
  using V = typename Ops::V;
  constexpr int64_t L = Ops::width;
  V v[L];
  if (w % L == 0) {
    // Rows of whole vectors: chunks within each row, so that a chunk's pixels land side by
    // side in the blocked row (one store each, no per-pixel position test) and a block of full
    // lanes loads without a test per lane (stride-2 32x160x160: this reorder was 55% of the time).
    const int64_t columns = w < pitch - pad_left ? w : pitch - pad_left;  // columns the plane keeps
    for (int64_t r = 0; r < h && r + pad_top < rows; ++r) {
      float* d = dst + ((r + pad_top) * pitch + pad_left) * L;
      const int64_t offset = r * w;
      for (int64_t c = 0; c < columns; c += L) {
        const int64_t count = columns - c < L ? columns - c : L;
        if (valid == L && count == L) {
#pragma GCC unroll 16
          for (int64_t l = 0; l < L; ++l) v[l] = Ops::load(planes[l] + offset + c);
        } else {
          const typename Ops::Mask m = Ops::mask(count);
          for (int64_t l = 0; l < L; ++l) v[l] = l >= valid ? Ops::zero() : Ops::load_partial(planes[l] + offset + c, m);
        }
        Ops::transpose(v);
        if (count == L) {
#pragma GCC unroll 16
          for (int64_t i = 0; i < L; ++i) Ops::store(d + (c + i) * L, v[i]);
        } else {
          for (int64_t i = 0; i < count; ++i) Ops::store(d + (c + i) * L, v[i]);
        }
      }
    }
    return;
  }
  const int64_t n = h * w;
  int64_t r = 0, c = 0;  // the input pixel of the chunk's next column
  // Chunks of L pixels of the flattened plane: full vectors even when a row is narrower than L.
  for (int64_t p = 0; p < n; p += L) {
    const int64_t count = n - p < L ? n - p : L;
    if (count <= L / 4) {
      // A short last chunk (a 7x7 plane's 49th pixel): pixel by pixel through memory, cheaper
      // than a whole transpose for a few columns of it.
      alignas(64) float lanes[L];
      for (int64_t i = 0; i < count; ++i) {
        for (int64_t l = 0; l < L; ++l) lanes[l] = l < valid ? planes[l][p + i] : 0.0f;
        const int64_t dr = r + pad_top, dc = c + pad_left;
        if (dr < rows && dc < pitch) Ops::store(dst + (dr * pitch + dc) * L, Ops::load(lanes));
        if (++c == w) {
          c = 0;
          ++r;
        }
      }
      continue;
    }
    if (valid == L && count == L) {
#pragma GCC unroll 16
      for (int64_t l = 0; l < L; ++l) v[l] = Ops::load(planes[l] + p);
    } else {
      const typename Ops::Mask m = Ops::mask(count);
      for (int64_t l = 0; l < L; ++l)
        v[l] = l >= valid ? Ops::zero() : count == L ? Ops::load(planes[l] + p) : Ops::load_partial(planes[l] + p, m);
    }
    Ops::transpose(v);
    for (int64_t i = 0; i < count; ++i) {
      const int64_t dr = r + pad_top, dc = c + pad_left;
      if (dr < rows && dc < pitch) Ops::store(dst + (dr * pitch + dc) * L, v[i]);
      if (++c == w) {
        c = 0;
        ++r;
      }
    }
  }
}

// G output pixels, consecutive in the flattened output, whose input origins are given (a group
// may span rows): each tap's weight vector is loaded once for G independent FMA chains. Only the
// first `count` are stored (a last group repeats its last origin to stay full width).
template <typename Ops, int G, int kActivation, bool kAffine>
inline void dwconv_block_group(const DwconvF32Block& b, const float* const* origin, int64_t count, float* y,
                               typename Ops::V bias) {
  constexpr int64_t L = Ops::width;
  typename Ops::V acc[G];
  tap_fma_chains<Ops, G>(
      b.weights, b.tap_offsets, b.taps, [origin](int g, int64_t offset) { return Ops::load(origin[g] + offset); }, acc);
#pragma GCC unroll 16
  for (int g = 0; g < G; ++g)
    if (g < count)
      Ops::store(y + g * L, dwconv_blocked_epilogue_fixed<Ops, kActivation, kAffine>(b.epilogue, Ops::add(acc[g], bias)));
}

// G output pixels of one row: each tap's weight vector loaded once for G independent FMA chains.
template <typename Ops, int G, int kActivation, bool kAffine>
inline void dwconv_block_pixels(const DwconvF32Block& b, const float* origin, float* y, typename Ops::V bias) {
  constexpr int64_t L = Ops::width;
  const int64_t step = b.stride_w * L;
  typename Ops::V acc[G];
  tap_fma_chains<Ops, G>(
      b.weights, b.tap_offsets, b.taps,
      [origin, step](int g, int64_t offset) { return Ops::load(origin + offset + g * step); }, acc);
#pragma GCC unroll 16
  for (int g = 0; g < G; ++g)
    Ops::store(y + g * L, dwconv_blocked_epilogue_fixed<Ops, kActivation, kAffine>(b.epilogue, Ops::add(acc[g], bias)));
}

// The same G pixels with the taps as kKw-wide kernel rows at stride kStride: each input pixel of a
// kernel row loaded once and multiplied into every output that reads it, in the order of its
// columns, so each output's chain still runs over (ky, kx) ascending.
template <typename Ops, int G, int kKw, int kStride, int kActivation, bool kAffine>
inline void dwconv_block_pixels_row_reuse(const DwconvF32Block& b, const float* origin, float* y,
                                          typename Ops::V bias) {
  using V = typename Ops::V;
  constexpr int64_t L = Ops::width;
  constexpr int kColumns = (G - 1) * kStride + kKw;
  V acc[G];
#pragma GCC unroll 16
  for (int g = 0; g < G; ++g) acc[g] = Ops::zero();
  const int64_t rows = b.taps / kKw;
  for (int64_t ky = 0; ky < rows; ++ky) {
    const float* row = origin + b.tap_offsets[ky * kKw];
    V w[kKw];
#pragma GCC unroll 5
    for (int kx = 0; kx < kKw; ++kx) w[kx] = Ops::load(b.weights + (ky * kKw + kx) * L);
#pragma GCC unroll 40
    for (int c = 0; c < kColumns; ++c) {
      const V v = Ops::load(row + c * L);
#pragma GCC unroll 16
      for (int g = 0; g < G; ++g) {
        const int kx = c - g * kStride;
        if (kx >= 0 && kx < kKw) acc[g] = Ops::fma(v, w[kx], acc[g]);
      }
    }
  }
#pragma GCC unroll 16
  for (int g = 0; g < G; ++g)
    Ops::store(y + g * L, dwconv_blocked_epilogue_fixed<Ops, kActivation, kAffine>(b.epilogue, Ops::add(acc[g], bias)));
}

// A row's whole groups through the row-reuse loop when the block's taps allow it (row_taps 3 or 5,
// stride_w 1 or 2); returns the outputs done.
template <typename Ops, int G, int kActivation, bool kAffine>
inline int64_t dwconv_block_row_groups_reused(const DwconvF32Block& b, const float* row, float* y,
                                              typename Ops::V bias) {
  constexpr int64_t L = Ops::width;
  const int64_t groups = b.out_w / G * G, step = b.stride_w * L;
  auto run = [&](auto kw, auto stride) {
    for (int64_t ox = 0; ox < groups; ox += G)
      dwconv_block_pixels_row_reuse<Ops, G, decltype(kw)::value, decltype(stride)::value, kActivation, kAffine>(
          b, row + ox * step, y + ox * L, bias);
    return groups;
  };
  using One = IntConstant<1>;
  using Two = IntConstant<2>;
  if (b.row_taps == 5 && b.stride_w == 1) return run(IntConstant<5>{}, One{});
  if (b.row_taps == 5 && b.stride_w == 2) return run(IntConstant<5>{}, Two{});
  if (b.row_taps == 3 && b.stride_w == 1) return run(IntConstant<3>{}, One{});
  if (b.row_taps == 3 && b.stride_w == 2) return run(IntConstant<3>{}, Two{});
  return 0;
}

// Stride-1 planes narrower than a group (7x7): output positions counted at the padded pitch
// (oy * pitch + ox) have input origins one pixel apart, so G of them run as one group across row
// ends with constant offsets (no origin pointer per pixel, which cost as many loads as the taps);
// positions in the pad columns (ox >= out_w) are computed and dropped. 7x7: 61 positions for 49
// outputs, the four groups the outputs alone need. The last group is moved back to end at the last
// output (its overlap is computed twice, to the same bits) so that no read leaves the band.
// Needs (out_h - 1) * pitch + out_w >= G.
template <typename Ops, int G, int kActivation, bool kAffine>
void dwconv_block_flat(const DwconvF32Block& b, typename Ops::V bias) {
  constexpr int64_t L = Ops::width;
  const int64_t last = (b.out_h - 1) * b.pitch + b.out_w;  // positions up to the last output's
  for (int64_t start = 0; start < last; start += G) {
    const int64_t q = start + G <= last ? start : last - G;
    typename Ops::V acc[G];
    const float* origin = b.x + q * L;
    tap_fma_chains<Ops, G>(
        b.weights, b.tap_offsets, b.taps, [origin](int g, int64_t offset) { return Ops::load(origin + offset + g * L); },
        acc);
    int64_t oy = q / b.pitch, ox = q % b.pitch;
#pragma GCC unroll 16
    for (int g = 0; g < G; ++g) {
      if (ox < b.out_w)
        Ops::store(b.y + (oy * b.out_w + ox) * L,
                   dwconv_blocked_epilogue_fixed<Ops, kActivation, kAffine>(b.epilogue, Ops::add(acc[g], bias)));
      if (++ox == b.pitch) {
        ox = 0;
        ++oy;
      }
    }
  }
}

// 16 pixels per group with AVX-512's 32 registers (5% faster than 8 on every measured shape);
// AVX2's 16 registers hold 8 accumulators beside the weight and the loads. Rows at least a group
// wide run groups within the row (origins one constant step apart); narrower rows run across row
// ends: at stride 1 at the padded pitch (dwconv_block_flat; 576x7x7 14 -> 13 us, ORT 13), else
// (6x24 at stride 2) the flattened output with an origin per pixel, where a 7-wide row would
// otherwise be a 4-pixel group and three single 9-FMA latency chains (576x7x7: 21 -> 17.5 us; on
// wide rows the per-pixel origins cost 5-8%, so they keep the in-row groups).
template <typename Ops, int kActivation, bool kAffine>
void dwconv_block_fixed(const DwconvF32Block& b) {
  constexpr int64_t L = Ops::width;
  constexpr int kWide = L >= 16 ? 16 : 8;
  const typename Ops::V bias = Ops::load(b.bias);
  const int64_t row_step = b.stride_h * b.pitch * L, column_step = b.stride_w * L;
  if (b.out_w < kWide && b.stride_h == 1 && b.stride_w == 1 && (b.out_h - 1) * b.pitch + b.out_w >= kWide) {
    dwconv_block_flat<Ops, kWide, kActivation, kAffine>(b, bias);
    return;
  }
  if (b.out_w < kWide) {
    const int64_t n = b.out_h * b.out_w;
    const float* origin[kWide];
    int64_t ox = 0;
    const float* row = b.x;
    for (int64_t q = 0; q < n; q += kWide) {
      const int64_t count = n - q < kWide ? n - q : kWide;
      for (int64_t g = 0; g < count; ++g) {
        origin[g] = row + ox * column_step;
        if (++ox == b.out_w) {
          ox = 0;
          row += row_step;
        }
      }
      for (int64_t g = count; g < kWide; ++g) origin[g] = origin[count - 1];
      dwconv_block_group<Ops, kWide, kActivation, kAffine>(b, origin, count, b.y + q * L, bias);
    }
    return;
  }
  for (int64_t oy = 0; oy < b.out_h; ++oy) {
    const float* row = b.x + oy * row_step;
    float* y = b.y + oy * b.out_w * L;
    int64_t ox = dwconv_block_row_groups_reused<Ops, kWide, kActivation, kAffine>(b, row, y, bias);
    for (; ox + kWide <= b.out_w; ox += kWide)
      dwconv_block_pixels<Ops, kWide, kActivation, kAffine>(b, row + ox * column_step, y + ox * L, bias);
    for (; ox + 8 <= b.out_w; ox += 8)
      dwconv_block_pixels<Ops, 8, kActivation, kAffine>(b, row + ox * column_step, y + ox * L, bias);
    for (; ox + 4 <= b.out_w; ox += 4)
      dwconv_block_pixels<Ops, 4, kActivation, kAffine>(b, row + ox * column_step, y + ox * L, bias);
    for (; ox < b.out_w; ++ox)
      dwconv_block_pixels<Ops, 1, kActivation, kAffine>(b, row + ox * column_step, y + ox * L, bias);
  }
}

// Dispatches once per block on the epilogue's activation.
template <typename Ops>
void dwconv_block(const DwconvF32Block& b) {
  with_fixed_epilogue(b.epilogue.activation, b.epilogue.post_affine,
                      [&](auto e) { dwconv_block_fixed<Ops, decltype(e)::activation, decltype(e)::affine>(b); });
}

template <typename Ops>
void dwconv_from_blocked(const float* src, int64_t n, float* const* planes, int64_t valid, const float* const* z,
                         const DwconvF32Epilogue& e) {
  using V = typename Ops::V;
  constexpr int64_t L = Ops::width;
  V v[L];
  for (int64_t p = 0; p < n; p += L) {
    const int64_t count = n - p < L ? n - p : L;
    if (count <= L / 4) {
      // A short last chunk: pixel by pixel (its vector holds every map of one pixel; the residual
      // and epilogue are the same expressions lane by lane).
      alignas(64) float lanes[L];
      for (int64_t i = 0; i < count; ++i) {
        V o = Ops::load(src + (p + i) * L);
        if (z != nullptr) {
          for (int64_t l = 0; l < L; ++l) lanes[l] = l < valid ? z[l][p + i] : 0.0f;
          o = dwconv_blocked_epilogue<Ops>(e, Ops::add(o, Ops::load(lanes)));
        }
        Ops::store(lanes, o);
        for (int64_t l = 0; l < valid; ++l) planes[l][p + i] = lanes[l];
      }
      continue;
    }
    for (int64_t i = 0; i < L; ++i) v[i] = i < count ? Ops::load(src + (p + i) * L) : Ops::zero();
    Ops::transpose(v);
    const typename Ops::Mask m = Ops::mask(count);
    for (int64_t l = 0; l < valid; ++l) {
      V o = v[l];
      if (z != nullptr) {
        o = Ops::add(o, count == L ? Ops::load(z[l] + p) : Ops::load_partial(z[l] + p, m));
        o = dwconv_blocked_epilogue<Ops>(e, o);
      }
      if (count == L) Ops::store(planes[l] + p, o);
      else Ops::store_partial(planes[l] + p, o, m);
    }
  }
}

}  // namespace
}  // namespace onnx_light::runtime::kernels::simd
