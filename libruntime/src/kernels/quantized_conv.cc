// ConvInteger and QLinearConv: 2-D convolutions of uint8/int8 tensors with int32 accumulation
// (exact, so a faster implementation must match these bits), portable direct loops over NCHW with
// groups, strides, dilations, pads and auto_pad. QLinearConv requantizes each output channel with
// x_scale * w_scale[m] / y_scale, rounding to nearest even and saturating. Both also as
// "avx512vnni" and "avxvnni" (the same algorithm on 512-bit or 256-bit registers): one int8 GEMM
// (vpdpbusd, simd/gemm_s8.h) per image, group and block of output
// positions over weights packed once (when constant) and the activations (packed straight from X
// for 1x1, read in place from channel-interleaved padded planes for other stride-1 convolutions,
// im2col for strided ones), or, depthwise with stride 1, direct vpdpwssd loops; the zero points
// come off exactly afterwards: the same bits as the portable loops.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include <fmt/format.h>

#include "kernels/element_traits.h"
#include "kernels/elementwise.h"
#include "kernels/isa_requirements.h"
#include "kernels/kernel_families.h"
#include "kernels/kernel_util.h"
#include "kernels/quantized_operands.h"
#include "kernels/scratch_slots.h"
#include "kernels/spatial_attributes.h"
#include "onnx_light/runtime/error.h"

#if defined(ONNX_LIGHT_X86_SIMD)
#include "kernels/simd/conv_s8.h"
#include "kernels/simd/gemm_s8.h"
#endif

namespace onnx_light::runtime::kernels {

namespace {

struct ConvGeometry {
  int64_t n = 0, c = 0, h = 0, w = 0, m = 0, kh = 0, kw = 0, oh = 0, ow = 0, group = 1;
  int64_t sh = 1, sw = 1, dh = 1, dw = 1, ph = 0, pw = 0;  // pads at the start
};

ConvGeometry geometry(const SpatialAttributes& a, int64_t group, const Tensor& x, const Tensor& w, const std::string& label) {
  if (x.rank() != 4 || w.rank() != 4)
    throw UnsupportedError(fmt::format("{}: only 2-D convolutions (rank-4 X and W) are supported, not {} and {}", label,
                                       shape_to_string(x.shape()), shape_to_string(w.shape())));
  ConvGeometry g;
  g.n = x.shape()[0], g.c = x.shape()[1], g.h = x.shape()[2], g.w = x.shape()[3];
  g.m = w.shape()[0], g.kh = w.shape()[2], g.kw = w.shape()[3], g.group = group;
  if (group < 1 || g.c % group != 0 || g.m % group != 0 || w.shape()[1] != g.c / group)
    throw InputError(fmt::format("{}: W {} does not fit X {} with group {}", label, shape_to_string(w.shape()),
                                 shape_to_string(x.shape()), group));
  if (!a.kernel_shape.empty() && (a.kernel_shape.size() != 2 || a.kernel_shape[0] != g.kh || a.kernel_shape[1] != g.kw))
    throw InputError(fmt::format("{}: kernel_shape does not match W {}", label, shape_to_string(w.shape())));
  auto at = [](const std::vector<int64_t>& v, std::size_t i, int64_t fallback) { return v.size() > i ? v[i] : fallback; };
  g.sh = at(a.strides, 0, 1), g.sw = at(a.strides, 1, 1), g.dh = at(a.dilations, 0, 1), g.dw = at(a.dilations, 1, 1);
  const int64_t ekh = (g.kh - 1) * g.dh + 1, ekw = (g.kw - 1) * g.dw + 1;
  auto dim = [&](int64_t in, int64_t stride, int64_t extent, int64_t pad_begin, int64_t pad_end, int64_t& out, int64_t& begin) {
    if (a.auto_pad == "SAME_UPPER" || a.auto_pad == "SAME_LOWER") {
      out = (in + stride - 1) / stride;
      const int64_t total = std::max<int64_t>(0, (out - 1) * stride + extent - in);
      begin = a.auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
    } else {
      const bool valid = a.auto_pad == "VALID";
      begin = valid ? 0 : pad_begin;
      out = (in + (valid ? 0 : pad_begin + pad_end) - extent) / stride + 1;
    }
    if (out < 0) out = 0;
  };
  dim(g.h, g.sh, ekh, at(a.pads, 0, 0), at(a.pads, 2, 0), g.oh, g.ph);
  dim(g.w, g.sw, ekw, at(a.pads, 1, 0), at(a.pads, 3, 0), g.ow, g.pw);
  return g;
}

// int32 sums of (x - x_zero) * (w - w_zero[m]) into acc [N, M, OH, OW].
template <typename X, typename W>
void integer_conv(const ConvGeometry& g, const X* x, const W* w, int32_t x_zero, const std::vector<int32_t>& w_zero,
                  std::vector<int32_t>& acc) {
  acc.assign(static_cast<std::size_t>(g.n * g.m * g.oh * g.ow), 0);
  const int64_t cg = g.c / g.group, mg = g.m / g.group;
  for (int64_t b = 0; b < g.n; ++b)
    for (int64_t m = 0; m < g.m; ++m) {
      const int64_t grp = m / mg;
      const int32_t wz = zero_point_at(w_zero, m);
      for (int64_t oy = 0; oy < g.oh; ++oy)
        for (int64_t ox = 0; ox < g.ow; ++ox) {
          int32_t sum = 0;
          for (int64_t ci = 0; ci < cg; ++ci)
            for (int64_t ky = 0; ky < g.kh; ++ky) {
              const int64_t iy = oy * g.sh - g.ph + ky * g.dh;
              if (iy < 0 || iy >= g.h) continue;
              for (int64_t kx = 0; kx < g.kw; ++kx) {
                const int64_t ix = ox * g.sw - g.pw + kx * g.dw;
                if (ix < 0 || ix >= g.w) continue;
                const int32_t xv = static_cast<int32_t>(x[((b * g.c + grp * cg + ci) * g.h + iy) * g.w + ix]) - x_zero;
                const int32_t wv = static_cast<int32_t>(w[((m * cg + ci) * g.kh + ky) * g.kw + kx]) - wz;
                sum += xv * wv;
              }
            }
          acc[static_cast<std::size_t>(((b * g.m + m) * g.oh + oy) * g.ow + ox)] = sum;
        }
    }
}

// In preference order: the table takes the first one the host runs.
enum class QConvImpl { avx512vnni, avxvnni, portable };

constexpr const char* qconv_impl_name(QConvImpl impl) {
  return impl == QConvImpl::avx512vnni ? "avx512vnni" : impl == QConvImpl::avxvnni ? "avxvnni" : "portable";
}

// What the integer convolution needs of a node's operands, read once per run.
struct QConvOperands {
  ConvGeometry g;
  const Tensor* x = nullptr;
  const Tensor* w = nullptr;
  int32_t x_zero = 0;
  std::vector<int32_t> w_zero;  // empty, one, or one per output channel
};

#if defined(ONNX_LIGHT_X86_SIMD)
// im2col of output positions [p0, p0 + np) of one image's group (`planes`: its cg input planes):
// dst[k * np + j] = x(ci, iy, ix) for k = (ci, ky, kx), or `pad` (x's zero point, whose difference
// to the zero point is 0, as the reference skipping the position) outside the input.
void qconv_im2col(const ConvGeometry& g, const uint8_t* planes, int64_t p0, int64_t np, uint8_t pad, uint8_t* dst) {
  const int64_t cg = g.c / g.group;
  for (int64_t ci = 0; ci < cg; ++ci) {
    const uint8_t* plane = planes + ci * g.h * g.w;
    for (int64_t ky = 0; ky < g.kh; ++ky)
      for (int64_t kx = 0; kx < g.kw; ++kx) {
        uint8_t* row = dst + ((ci * g.kh + ky) * g.kw + kx) * np;
        int64_t j = 0;
        while (j < np) {
          const int64_t p = p0 + j, oy = p / g.ow, ox = p % g.ow;
          const int64_t run = std::min(g.ow - ox, np - j);
          const int64_t iy = oy * g.sh - g.ph + ky * g.dh;
          uint8_t* out = row + j;
          if (iy < 0 || iy >= g.h) {
            std::fill(out, out + run, pad);
          } else {
            const uint8_t* in = plane + iy * g.w;
            const int64_t ix0 = ox * g.sw - g.pw + kx * g.dw;
            if (g.sw == 1) {
              // [t_lo, t_hi): the positions whose ix = ix0 + t falls inside the row.
              const int64_t t_lo = std::clamp<int64_t>(-ix0, 0, run), t_hi = std::clamp<int64_t>(g.w - ix0, t_lo, run);
              std::fill(out, out + t_lo, pad);
              std::copy(in + ix0 + t_lo, in + ix0 + t_hi, out + t_lo);
              std::fill(out + t_hi, out + run, pad);
            } else {
              for (int64_t t = 0; t < run; ++t) {
                const int64_t ix = ix0 + t * g.sw;
                out[t] = ix >= 0 && ix < g.w ? in[ix] : pad;
              }
            }
          }
          j += run;
        }
      }
  }
}

// Plane `in` (h x w) into `out` (hp x wp) at offset (ph, pw), `pad` elsewhere: one fill for the
// rows above, then per input row its copy and one fill of its right pad with the next row's left
// pad (contiguous), then the rows below.
void qconv_pad_plane(const ConvGeometry& g, const uint8_t* in, uint8_t pad, int64_t hp, int64_t wp, uint8_t* out) {
  auto fill = [pad](uint8_t* p, int64_t n) {
    if (n <= 0) return;
    if (n < 16) {
      for (int64_t i = 0; i < n; ++i) p[i] = pad;
    } else {
      std::memset(p, pad, static_cast<std::size_t>(n));
    }
  };
  const int64_t lo = std::min(g.pw, wp), hi = std::clamp(g.pw + g.w, lo, wp);
  const int64_t r0 = std::clamp<int64_t>(g.ph, 0, hp), r1 = std::clamp<int64_t>(g.ph + g.h, r0, hp);
  const int64_t first = std::min(r0 * wp + lo, hp * wp);
  fill(out, first);  // the rows above and the first row's left pad
  for (int64_t r = r0; r < r1; ++r) {
    uint8_t* row = out + r * wp;
    std::memcpy(row + lo, in + (r - g.ph) * g.w, static_cast<std::size_t>(hi - lo));
    // This row's right pad, then the next row's left pad (or every row below after the last).
    const int64_t next = r + 1 < r1 ? (r + 1) * wp + lo : hp * wp;
    fill(row + hi, next - (r * wp + hi));
  }
  if (r0 == r1) fill(out + first, hp * wp - first);
}

// Row r of plane `in` padded as qconv_pad_plane would (wp bytes into `out`).
void qconv_pad_row(const ConvGeometry& g, const uint8_t* in, int64_t r, uint8_t pad, int64_t wp, uint8_t* out) {
  const int64_t iy = r - g.ph;
  if (iy < 0 || iy >= g.h) {
    std::fill(out, out + wp, pad);
    return;
  }
  const int64_t lo = std::min(g.pw, wp), hi = std::clamp(g.pw + g.w, lo, wp);
  std::fill(out, out + lo, pad);
  std::copy(in + iy * g.w, in + iy * g.w + (hi - lo), out + lo);
  std::fill(out + hi, out + wp, pad);
}

// The functions of a VNNI implementation; nullptr for the portable one.
constexpr const simd::ConvS8Functions* conv_s8_functions(QConvImpl impl) {
  return impl == QConvImpl::avx512vnni ? &simd::kConvS8Avx512Vnni
         : impl == QConvImpl::avxvnni  ? &simd::kConvS8AvxVnni
                                       : nullptr;
}

// The convolution on AVX-512 VNNI or AVX-VNNI (`isa`), bit for bit the reference. Per (image, group, block of output
// positions) one GEMM of the group's weights (A: output channels by K = cg * kh * kw, packed once
// at creation when W is a constant) by the block's im2col (B: K by positions), the int32 result in
// NCHW order. As in quantization.cc's VnniIntegerProduct, vpdpbusd multiplies shifted operands
// (w' = w + 128 for int8 W, x' = x - 128 for uint8 X) and the shifts and zero points come off after:
//   sum_k (w - wz_m)(x - xz) = raw + beta * rowsum(W')_m + alpha_m * colsum(X')_p + K alpha_m beta
// with alpha_m = shift(W) - wz_m, beta = shift(X) - xz, in int32 with wraparound; a padded position
// holds xz itself, so it adds 0 as the reference's skipped one.
class VnniConv {
 public:
  // Where the product goes: int32 y (ConvInteger), or requantized per output channel (QLinearConv).
  struct Output {
    int32_t* s32 = nullptr;
    uint8_t* q = nullptr;  // uint8 or int8 bytes
    bool q_signed = false;
    const float* multipliers = nullptr;  // one per output channel
    float zero = 0.0f;
    const int32_t* bias = nullptr;  // one per output channel, or none
  };

  // `isa`: the implementation's functions (nullptr: the portable kernel, which never runs this);
  // `names`: its variants (Mode order).
  VnniConv(const KernelCreateInfo& info, std::size_t w_input, int64_t group, const simd::ConvS8Functions* isa,
           const std::string_view (&names)[4])
      : isa_(isa), names_(names) {
    if (isa_ == nullptr) return;
    const Tensor* w = info.constant_inputs.size() > w_input ? info.constant_inputs[w_input] : nullptr;
    if (w == nullptr || w->rank() != 4 || w->element_count() == 0 || group < 1 || w->shape()[0] % group != 0) return;
    if (w->element_type() != ElementType::uint8 && w->element_type() != ElementType::int8) return;
    pack_weights(*w, group, constant_);
    pack_weights_windows(*w, group, constant_windows_);
    has_constant_ = true;
  }

  // Runs the convolution; returns the variant that ran (ISA_1x1, ISA avx512vnni or avxvnni: 1x1
  // stride 1 without pads, packed straight from X; ISA_depthwise: one input channel per group,
  // stride 1, direct vpdpwssd over padded planes; ISA_padded: other stride-1 convolutions, B read in
  // place from the taps' windows of padded planes with four channels interleaved per position, no
  // packing; ISA_im2col: the rest), or {} for a depth of 0,
  // which the caller leaves to the portable loops.
  std::string_view run(KernelExecution& execution, const QConvOperands& o, const Output& out, int threads) {
    const ConvGeometry& g = o.g;
    const int64_t cg = g.c / g.group, mg = g.m / g.group, depth = cg * g.kh * g.kw, plane = g.oh * g.ow;
    if (depth == 0) return {};
    const bool stride1 = g.sh == 1 && g.sw == 1;
    const bool pointwise = stride1 && g.kh == 1 && g.kw == 1 && g.ph == 0 && g.pw == 0 && g.oh == g.h && g.ow == g.w;
    const Mode mode = pointwise ? Mode::pointwise
                      : stride1 && cg == 1 ? Mode::depthwise
                      : stride1 ? Mode::padded
                                : Mode::im2col;
    const std::string_view variant = names_[static_cast<int>(mode)];
    if (g.n == 0 || g.m == 0 || plane == 0) return variant;
    const Tensor& w = *o.w;
    const bool x_unsigned = o.x->element_type() == ElementType::uint8;
    const auto* px = static_cast<const uint8_t*>(o.x->raw_data());
    const auto pad = static_cast<uint8_t>(o.x_zero);
    slots_.ensure(static_cast<std::size_t>(std::max(1, execution.threads())) + 1);
    // Stride 1 (depthwise and padded): X once with its pads, xz all around, so every tap of every
    // output position is a plain read: rows oh + (kh - 1) dh, columns ow + (kw - 1) dw.
    const int64_t hp = g.oh + (g.kh - 1) * g.dh, wp = g.ow + (g.kw - 1) * g.dw, padded_plane = hp * wp;
    // Padded (other stride-1 convolutions): the same padded planes with four channels interleaved
    // per position, shifted (the GEMM's B words, read in place), and per position the sum of its
    // channels' shifted bytes; a slack of 32 positions after each plane for the last panel.
    const int64_t quads = (cg + 3) / 4, window_plane = padded_plane + 32;
    const auto flip = static_cast<uint8_t>(x_unsigned ? 0x80 : 0x00);
    if (mode == Mode::padded) {
      windows_.resize(static_cast<std::size_t>(g.n * g.group * quads * window_plane * 4));
      sums_.resize(static_cast<std::size_t>(g.n * g.group * window_plane));
      for (std::size_t i = 0; i < slots_.size(); ++i) slots_[i].cols.resize(static_cast<std::size_t>(4 * wp));
      execution.parallel_for(g.n * g.group * hp, 1, threads, [&](int64_t begin, int64_t end) {
        ScratchSlots<Slot>::Lease slot(slots_);
        for (int64_t t = begin; t < end; ++t) {
          const int64_t image = t / hp, r = t % hp, b = image / g.group, grp = image % g.group;
          int32_t* sums = sums_.data() + image * window_plane;
          std::fill(sums + r * wp, sums + (r + 1) * wp, 0);
          if (r == hp - 1) std::fill(sums + padded_plane, sums + window_plane, 0);
          for (int64_t q = 0; q < quads; ++q) {
            uint8_t* rows = slot->cols.data();
            for (int64_t d = 0; d < 4; ++d) {
              const int64_t ci = 4 * q + d;
              if (ci < cg) qconv_pad_row(g, px + (b * g.c + grp * cg + ci) * g.h * g.w, r, pad, wp, rows + d * wp);
              else std::fill(rows + d * wp, rows + (d + 1) * wp, flip);  // a missing channel: shifted, 0
            }
            uint8_t* plane4 = windows_.data() + (image * quads + q) * window_plane * 4;
            isa_->interleave4(rows, wp, flip, wp, plane4 + r * wp * 4, sums + r * wp);
            if (r == hp - 1) std::fill(plane4 + padded_plane * 4, plane4 + window_plane * 4, uint8_t{0});
          }
        }
      });
    }
    if (mode == Mode::depthwise) {
      padded_.resize(static_cast<std::size_t>(g.n * g.c * padded_plane));
      execution.parallel_for(g.n * g.c, 1, threads, [&](int64_t begin, int64_t end) {
        for (int64_t t = begin; t < end; ++t) qconv_pad_plane(g, px + t * g.h * g.w, pad, hp, wp, padded_.data() + t * padded_plane);
      });
    }
    if (mode == Mode::depthwise) {
      // Taps w - w_zero per output channel; one task per (image, output channel).
      const int64_t count = g.kh * g.kw;
      taps_.resize(static_cast<std::size_t>(g.m * count));
      dispatch_int8_pair(o.x->element_type(), w.element_type(), "", [&](auto, auto wv) {
        const auto* pw = w.data<decltype(wv)>();
        for (int64_t m = 0; m < g.m; ++m)
          for (int64_t t = 0; t < count; ++t)
            taps_[static_cast<std::size_t>(m * count + t)] = static_cast<int32_t>(pw[m * count + t]) - zero_point_at(o.w_zero, m);
      });
      execution.parallel_for(g.n * g.m, 1, threads, [&](int64_t begin, int64_t end) {
        for (int64_t t = begin; t < end; ++t) {
          const int64_t b = t / g.m, m = t % g.m, channel = m / mg;
          const uint8_t* in = padded_.data() + (b * g.c + channel) * padded_plane;
          const int32_t* taps = taps_.data() + m * count;
          if (out.s32 != nullptr)
            isa_->depthwise(in, wp, x_unsigned ? 0 : 1, o.x_zero, taps, g.kh, g.kw, g.dh, g.dw, g.oh, g.ow,
                            out.s32 + t * plane);
          else
            isa_->depthwise_requantize(in, wp, x_unsigned ? 0 : 1, o.x_zero, taps, g.kh, g.kw, g.dh, g.dw, g.oh, g.ow,
                                       out.bias != nullptr ? out.bias[m] : 0, out.multipliers[m], out.zero,
                                       out.q_signed ? 1 : 0, out.q + t * plane);
        }
      });
      return variant;
    }
    const bool constant = has_constant_ && constant_.shape == w.shape() && constant_.type == w.element_type() &&
                          constant_.group == g.group;
    if (!constant && mode == Mode::padded) pack_weights_windows(w, g.group, run_);
    else if (!constant) pack_weights(w, g.group, run_);
    const PackedWeights& weights = constant ? (mode == Mode::padded ? constant_windows_ : constant_) : run_;
    // Per output channel: alpha and the constant part of the correction (with QLinearConv's bias).
    const auto beta = static_cast<uint32_t>((x_unsigned ? 128 : 0) - o.x_zero);
    const int32_t w_shift = w.element_type() == ElementType::int8 ? -128 : 0;
    alpha_.resize(static_cast<std::size_t>(g.m));
    constant_terms_.resize(static_cast<std::size_t>(g.m));
    for (int64_t m = 0; m < g.m; ++m) {
      const auto alpha = static_cast<uint32_t>(w_shift - zero_point_at(o.w_zero, m));
      const auto row_sum = static_cast<uint32_t>(weights.row_sums[static_cast<std::size_t>(m)]);
      const uint32_t bias = out.bias != nullptr ? static_cast<uint32_t>(out.bias[m]) : 0u;
      alpha_[static_cast<std::size_t>(m)] = static_cast<int32_t>(alpha);
      constant_terms_[static_cast<std::size_t>(m)] =
          static_cast<int32_t>(beta * row_sum + static_cast<uint32_t>(depth) * alpha * beta + bias);
    }
    // The GEMM's columns: output positions, or (padded) positions oy * wp + x of the padded domain,
    // whose x >= ow are computed and dropped (the last row stops at ow).
    const int64_t columns = mode == Mode::padded ? (g.oh - 1) * wp + g.ow : plane;
    // Blocks of columns: packed B of ~128 KiB and int32 products of ~256 KiB, and enough blocks for
    // the threads (the result does not depend on the blocking).
    int64_t block = std::clamp<int64_t>((int64_t{128} << 10) / depth, 32, 1024);
    const bool direct = out.s32 != nullptr && mode != Mode::padded;  // products straight into y
    if (!direct) block = std::min(block, std::max<int64_t>(32, (int64_t{64} << 10) / mg));
    block = std::min(block, (columns + 31) / 32 * 32) / 32 * 32;
    const int64_t images = g.n * g.group;
    while (threads > 1 && block > 32 && images * ((columns + block - 1) / block) < 4 * threads) block -= 32;
    const int64_t blocks = (columns + block - 1) / block;
    for (std::size_t i = 0; i < slots_.size(); ++i) {
      Slot& s = slots_[i];
      if (mode == Mode::im2col) s.cols.resize(static_cast<std::size_t>(depth * block));
      s.packed.resize(static_cast<std::size_t>(simd::gemm_s8_packed_b_bytes(depth, block)));
      s.col_sums.resize(static_cast<std::size_t>(block));
      s.rows.resize(static_cast<std::size_t>(depth));
      if (!direct) s.acc.resize(static_cast<std::size_t>(mg * block));
    }
    // Row offsets of B: rows of X (1x1), of the im2col block, or the taps' windows of the padded planes.
    rows_.resize(static_cast<std::size_t>(depth));
    for (int64_t ci = 0; ci < cg; ++ci)
      for (int64_t ky = 0; ky < g.kh; ++ky)
        for (int64_t kx = 0; kx < g.kw; ++kx) {
          const int64_t k = (ci * g.kh + ky) * g.kw + kx;
          rows_[static_cast<std::size_t>(k)] = mode == Mode::pointwise ? k * g.h * g.w
                                               : mode == Mode::padded  ? ci * padded_plane + ky * g.dh * wp + kx * g.dw
                                                                       : k * block;
        }
    // Windows (padded): depth group (quad, ky, kx) of column p is the word at position p + tap offset
    // of the quad's plane.
    const int64_t window_groups = quads * g.kh * g.kw;
    if (mode == Mode::padded) {
      offsets_.resize(static_cast<std::size_t>(window_groups));
      for (int64_t q = 0; q < quads; ++q)
        for (int64_t ky = 0; ky < g.kh; ++ky)
          for (int64_t kx = 0; kx < g.kw; ++kx)
            offsets_[static_cast<std::size_t>((q * g.kh + ky) * g.kw + kx)] = (q * window_plane + ky * g.dh * wp + kx * g.dw) * 4;
    }
    const int64_t a_bytes = simd::gemm_s8_packed_a_bytes(mg, mode == Mode::padded ? 4 * window_groups : depth);
    execution.parallel_for(images * blocks, 1, threads, [&](int64_t begin, int64_t end) {
      ScratchSlots<Slot>::Lease slot(slots_);
      for (int64_t t = begin; t < end; ++t) {
        const int64_t image = t / blocks, b = image / g.group, grp = image % g.group;
        const int64_t p0 = (t % blocks) * block, np = std::min(block, columns - p0), m0 = grp * mg;
        const uint8_t* src = nullptr;
        const int64_t* rows = rows_.data();
        if (mode == Mode::pointwise) {
          src = px + (b * g.c + grp * cg) * g.h * g.w + p0;
        } else if (mode == Mode::padded) {
          // Column sums: per tap, the window of the channel sums.
          const int32_t* sums = sums_.data() + image * window_plane + p0;
          uint32_t* col = reinterpret_cast<uint32_t*>(slot->col_sums.data());
          std::fill(col, col + np, 0u);
          for (int64_t ky = 0; ky < g.kh; ++ky)
            for (int64_t kx = 0; kx < g.kw; ++kx) {
              const int32_t* window = sums + ky * g.dh * wp + kx * g.dw;
              for (int64_t j = 0; j < np; ++j) col[j] += static_cast<uint32_t>(window[j]);
            }
          isa_->gemm_windows(weights.packed.data() + grp * a_bytes, mg, window_groups,
                             windows_.data() + (image * quads * window_plane + p0) * 4, offsets_.data(), np,
                             slot->acc.data(), np);
        } else {
          qconv_im2col(g, px + (b * g.c + grp * cg) * g.h * g.w, p0, np, pad, slot->cols.data());
          src = slot->cols.data();
          if (np != block) {  // the last block's im2col rows are np apart
            for (int64_t k = 0; k < depth; ++k) slot->rows[static_cast<std::size_t>(k)] = k * np;
            rows = slot->rows.data();
          }
        }
        if (mode != Mode::padded)
          isa_->pack_b(src, rows, x_unsigned ? 1 : 0, depth, np, slot->packed.data(), slot->col_sums.data());
        const uint8_t* a = weights.packed.data() + grp * a_bytes;
        const int32_t* col_sums = slot->col_sums.data();
        if (direct) {
          int32_t* c = out.s32 + (b * g.m + m0) * plane + p0;
          isa_->gemm->gemm(a, mg, depth, slot->packed.data(), np, c, plane, nullptr);
          for (int64_t i = 0; i < mg; ++i)
            isa_->correct_s32(c + i * plane, np, col_sums, alpha_[static_cast<std::size_t>(m0 + i)],
                              constant_terms_[static_cast<std::size_t>(m0 + i)], c + i * plane);
          continue;
        }
        int32_t* acc = slot->acc.data();
        if (mode != Mode::padded) isa_->gemm->gemm(a, mg, depth, slot->packed.data(), np, acc, np, nullptr);
        for (int64_t i = 0; i < mg; ++i) {
          const int64_t m = m0 + i;
          const int32_t alpha = alpha_[static_cast<std::size_t>(m)], term = constant_terms_[static_cast<std::size_t>(m)];
          const int64_t y_row = (b * g.m + m) * plane;
          if (mode != Mode::padded) {
            finish_row(out, acc + i * np, np, col_sums, alpha, term, m, out.q + y_row + p0);
            continue;
          }
          // Padded columns: the runs of each output row inside the block.
          for (int64_t p = p0; p < p0 + np;) {
            const int64_t oy = p / wp, x = p % wp;
            if (x >= g.ow) {
              p = (oy + 1) * wp;
              continue;
            }
            const int64_t run = std::min(g.ow - x, p0 + np - p), j = p - p0, e = y_row + oy * g.ow + x;
            if (out.s32 != nullptr)
              isa_->correct_s32(acc + i * np + j, run, col_sums + j, alpha, term, out.s32 + e);
            else
              finish_row(out, acc + i * np + j, run, col_sums + j, alpha, term, m, out.q + e);
            p += run;
          }
        }
      }
    });
    return variant;
  }

 private:
  enum class Mode { pointwise, depthwise, padded, im2col };

  // Requantizes n sums of output channel m (with the correction terms) into y.
  void finish_row(const Output& out, const int32_t* c, int64_t n, const int32_t* col_sums, int32_t alpha, int32_t term,
                  int64_t m, uint8_t* y) const {
    if (out.s32 != nullptr) return;
    if (out.q_signed)
      isa_->requantize_s8(c, n, col_sums, alpha, term, out.multipliers[m], out.zero, reinterpret_cast<int8_t*>(y));
    else
      isa_->requantize_u8(c, n, col_sums, alpha, term, out.multipliers[m], out.zero, y);
  }

  struct PackedWeights {
    std::vector<uint8_t> packed;  // per group, gemm_s8_packed_a_bytes(mg, K) bytes
    std::vector<int32_t> row_sums;  // per output channel
    Shape shape;
    ElementType type = ElementType::undefined;
    int64_t group = 0;
  };
  struct Slot {
    std::vector<uint8_t> cols;
    std::vector<int8_t> packed;
    std::vector<int32_t> col_sums, acc;
    std::vector<int64_t> rows;
  };

  void pack_weights(const Tensor& w, int64_t group, PackedWeights& p) const {
    const int64_t m = w.shape()[0], depth = w.shape()[1] * w.shape()[2] * w.shape()[3], mg = m / group;
    const int64_t bytes = simd::gemm_s8_packed_a_bytes(mg, depth);
    p.packed.resize(static_cast<std::size_t>(group * bytes));
    p.row_sums.resize(static_cast<std::size_t>(m));
    const auto* pw = static_cast<const uint8_t*>(w.raw_data());
    const int is_signed = w.element_type() == ElementType::int8 ? 1 : 0;
    for (int64_t grp = 0; grp < group; ++grp)
      isa_->gemm->pack_a(pw + grp * mg * depth, depth, is_signed, mg, depth, p.packed.data() + grp * bytes,
                         p.row_sums.data() + grp * mg);
    p.shape = w.shape();
    p.type = w.element_type();
    p.group = group;
  }

  // The windows layout: depth in groups (quad of input channels, ky, kx), four channels per word
  // (missing channels shifted to 0), as the interleaved planes hold X.
  void pack_weights_windows(const Tensor& w, int64_t group, PackedWeights& p) {
    const int64_t m = w.shape()[0], cg = w.shape()[1], kh = w.shape()[2], kw = w.shape()[3], mg = m / group;
    const int64_t quads = (cg + 3) / 4, depth = quads * kh * kw * 4;
    const int is_signed = w.element_type() == ElementType::int8 ? 1 : 0;
    const auto* pw = static_cast<const uint8_t*>(w.raw_data());
    reordered_.resize(static_cast<std::size_t>(m * depth));
    for (int64_t mm = 0; mm < m; ++mm)
      for (int64_t q = 0; q < quads; ++q)
        for (int64_t ky = 0; ky < kh; ++ky)
          for (int64_t kx = 0; kx < kw; ++kx)
            for (int64_t d = 0; d < 4; ++d) {
              const int64_t ci = 4 * q + d;
              reordered_[static_cast<std::size_t>(mm * depth + ((q * kh + ky) * kw + kx) * 4 + d)] =
                  ci < cg ? pw[((mm * cg + ci) * kh + ky) * kw + kx] : static_cast<uint8_t>(is_signed ? 0x80 : 0x00);
            }
    const int64_t bytes = simd::gemm_s8_packed_a_bytes(mg, depth);
    p.packed.resize(static_cast<std::size_t>(group * bytes));
    p.row_sums.resize(static_cast<std::size_t>(m));
    for (int64_t grp = 0; grp < group; ++grp)
      isa_->gemm->pack_a(reordered_.data() + grp * mg * depth, depth, is_signed, mg, depth,
                         p.packed.data() + grp * bytes, p.row_sums.data() + grp * mg);
    p.shape = w.shape();
    p.type = w.element_type();
    p.group = group;
  }

  const simd::ConvS8Functions* isa_;
  const std::string_view (&names_)[4];
  PackedWeights constant_, constant_windows_, run_;
  std::vector<uint8_t> reordered_;
  std::vector<int64_t> offsets_;
  std::vector<uint8_t> windows_;  // padded: X interleaved by four channels
  std::vector<int32_t> sums_;
  bool has_constant_ = false;
  std::vector<int32_t> alpha_, constant_terms_, taps_;
  std::vector<int64_t> rows_;
  std::vector<uint8_t> padded_;  // stride 1: X with its pads
  ScratchSlots<Slot> slots_;
};
#endif

// The convolution by the implementation the kernel was registered as; variant() says what ran.
template <QConvImpl kImpl>
class QConvEngine {
 public:
  QConvEngine(const KernelCreateInfo& info, std::size_t w_input, int64_t group)
#if defined(ONNX_LIGHT_X86_SIMD)
      : vnni_(info, w_input, group, conv_s8_functions(kImpl), kVariants)
#endif
  {
    (void)info;
    (void)w_input;
    (void)group;
  }

#if defined(ONNX_LIGHT_X86_SIMD)
  using Output = VnniConv::Output;
#else
  struct Output {
    int32_t* s32 = nullptr;
    uint8_t* q = nullptr;
    bool q_signed = false;
    const float* multipliers = nullptr;
    float zero = 0.0f;
    const int32_t* bias = nullptr;
  };
#endif

  void run(KernelExecution& execution, const QConvOperands& o, const Output& out, int threads) {
#if defined(ONNX_LIGHT_X86_SIMD)
    if constexpr (kImpl != QConvImpl::portable) {
      variant_ = vnni_.run(execution, o, out, threads);
      if (!variant_.empty()) return;
    }
#endif
    (void)execution;
    (void)threads;
    variant_ = "portable";
    dispatch_int8_pair(o.x->element_type(), o.w->element_type(), execution.label(), [&](auto xv, auto wv) {
      integer_conv(o.g, o.x->data<decltype(xv)>(), o.w->data<decltype(wv)>(), o.x_zero, o.w_zero, acc_);
    });
    const int64_t plane = o.g.oh * o.g.ow;
    if (out.s32 != nullptr) {
      std::copy(acc_.begin(), acc_.end(), out.s32);
      return;
    }
    for (std::size_t e = 0; e < acc_.size(); ++e) {
      const auto m = static_cast<std::size_t>((static_cast<int64_t>(e) / plane) % o.g.m);
      const int32_t sum = acc_[e] + (out.bias != nullptr ? out.bias[m] : 0);
      const float v = std::nearbyint(static_cast<float>(sum) * out.multipliers[m]) + out.zero;
      if (out.q_signed) reinterpret_cast<int8_t*>(out.q)[e] = saturate_round<int8_t>(v);
      else out.q[e] = saturate_round<uint8_t>(v);
    }
  }

  std::string_view variant() const { return variant_; }

 private:
#if defined(ONNX_LIGHT_X86_SIMD)
  // What the profile says ran, per path (VnniConv's Mode order).
  static constexpr std::string_view kVariants[4] = {
      kImpl == QConvImpl::avxvnni ? "avxvnni_1x1" : "avx512vnni_1x1",
      kImpl == QConvImpl::avxvnni ? "avxvnni_depthwise" : "avx512vnni_depthwise",
      kImpl == QConvImpl::avxvnni ? "avxvnni_padded" : "avx512vnni_padded",
      kImpl == QConvImpl::avxvnni ? "avxvnni_im2col" : "avx512vnni_im2col"};
  VnniConv vnni_;
#endif
  std::vector<int32_t> acc_;
  std::string_view variant_ = qconv_impl_name(kImpl);
};

template <QConvImpl kImpl>
class ConvIntegerKernel final : public ThresholdKernel {
 public:
  explicit ConvIntegerKernel(const KernelCreateInfo& info)
      : ThresholdKernel(kDefaultMinimumElements), attributes_(info), group_(info.int_attribute("group", 1)),
        engine_(info, 1, group_) {
    check_attributes(info, {"auto_pad", "dilations", "group", "kernel_shape", "pads", "strides"});
  }
  std::string_view variant() const override { return engine_.variant(); }
  void run(KernelExecution& execution) override {
    const std::string& label = execution.label();
    QConvOperands o;
    o.x = &execution.required_input(0);
    o.w = &execution.required_input(1);
    o.g = geometry(attributes_, group_, *o.x, *o.w, label);
    check_second_int8_operand(o.w->element_type(), label);
    const std::vector<int32_t> xz = zero_points(execution.input(2), 1, label, "x_zero_point");
    o.x_zero = xz.empty() ? 0 : xz[0];
    o.w_zero = zero_points(execution.input(3), o.g.m, label, "w_zero_point");
    Tensor& y = checked_output(execution, 0, ElementType::int32, {o.g.n, o.g.m, o.g.oh, o.g.ow}, false);
    typename QConvEngine<kImpl>::Output out;
    out.s32 = y.data<int32_t>();
    engine_.run(execution, o, out, admitted(y.element_count(), execution));
  }

 private:
  SpatialAttributes attributes_;
  int64_t group_ = 1;
  QConvEngine<kImpl> engine_;
};

template <typename Q, QConvImpl kImpl>
class QLinearConvKernel final : public ThresholdKernel {
 public:
  explicit QLinearConvKernel(const KernelCreateInfo& info)
      : ThresholdKernel(kDefaultMinimumElements), attributes_(info), group_(info.int_attribute("group", 1)),
        engine_(info, 3, group_) {
    check_attributes(info, {"auto_pad", "dilations", "group", "kernel_shape", "pads", "strides"});
  }
  std::string_view variant() const override { return engine_.variant(); }
  void run(KernelExecution& execution) override {
    const std::string& label = execution.label();
    QConvOperands o;
    o.x = &execution.required_input(0);
    o.w = &execution.required_input(3);
    o.g = geometry(attributes_, group_, *o.x, *o.w, label);
    check_second_int8_operand(o.w->element_type(), label);
    auto floats = [&](std::size_t index, int64_t per, const char* what) {
      const Tensor& t = execution.required_input(index);
      check_input_type(execution, index, t, ElementType::float32);
      if (t.element_count() != 1 && t.element_count() != per)
        throw InputError(fmt::format("{}: {} {} must hold 1 or {} values", label, what, shape_to_string(t.shape()), per));
      return std::vector<float>(t.data<float>(), t.data<float>() + t.element_count());
    };
    const std::vector<float> x_scale = floats(1, 1, "x_scale"), w_scale = floats(4, o.g.m, "w_scale"),
                             y_scale = floats(6, 1, "y_scale");
    o.x_zero = zero_points(&execution.required_input(2), 1, label, "x_zero_point")[0];
    o.w_zero = zero_points(&execution.required_input(5), o.g.m, label, "w_zero_point");
    const std::vector<int32_t> yz = zero_points(&execution.required_input(7), 1, label, "y_zero_point");
    const Tensor* bias = execution.input(8);
    if (bias != nullptr && (bias->element_type() != ElementType::int32 || bias->element_count() != o.g.m))
      throw InputError(fmt::format("{}: B must be int32 [{}], not {}", label, o.g.m, bias->describe()));
    multipliers_.resize(static_cast<std::size_t>(o.g.m));
    for (int64_t m = 0; m < o.g.m; ++m)
      multipliers_[static_cast<std::size_t>(m)] =
          x_scale[0] * w_scale[w_scale.size() == 1 ? 0 : static_cast<std::size_t>(m)] / y_scale[0];
    Tensor& y = checked_output(execution, 0, ElementTraits<Q>::type, {o.g.n, o.g.m, o.g.oh, o.g.ow}, false);
    typename QConvEngine<kImpl>::Output out;
    out.q = static_cast<uint8_t*>(y.raw_data());
    out.q_signed = std::is_same_v<Q, int8_t>;
    out.multipliers = multipliers_.data();
    out.zero = static_cast<float>(yz[0]);
    out.bias = bias != nullptr ? bias->data<int32_t>() : nullptr;
    engine_.run(execution, o, out, admitted(y.element_count(), execution));
  }

 private:
  SpatialAttributes attributes_;
  int64_t group_ = 1;
  QConvEngine<kImpl> engine_;
  std::vector<float> multipliers_;
};

// ConvInteger and QLinearConv of one implementation, X of `type`; registration order is the
// preference order, so the VNNI pairs go first (AVX-512 VNNI, then AVX-VNNI) and the portable
// reference last.
template <QConvImpl kImpl>
void add_quantized_convs(KernelTable& table, ElementType type) {
  auto with_impl = [](KernelDef def) {
    def.implementation = qconv_impl_name(kImpl);
    if constexpr (kImpl == QConvImpl::avx512vnni) def.unavailable_reason = needs_avx512_vnni;
    if constexpr (kImpl == QConvImpl::avxvnni) def.unavailable_reason = needs_avx_vnni;
    return def;
  };
  KernelDef integer = with_impl(make_def("ConvInteger", {10}, type,
                                         parallel_threshold_schema(elementwise_key("ConvInteger", type, 1, qconv_impl_name(kImpl)),
                                                                   kDefaultMinimumElements)));
  integer.create = [](const KernelCreateInfo& info) -> std::unique_ptr<Kernel> {
    return std::make_unique<ConvIntegerKernel<kImpl>>(info);
  };
  integer.output_types = [](const KernelCreateInfo&) { return std::vector<ElementType>{ElementType::int32}; };
  table.add(std::move(integer));
  KernelDef qlinear = with_impl(make_def("QLinearConv", {10}, type,
                                         parallel_threshold_schema(elementwise_key("QLinearConv", type, 1, qconv_impl_name(kImpl)),
                                                                   kDefaultMinimumElements)));
  qlinear.create = [](const KernelCreateInfo& info) -> std::unique_ptr<Kernel> {
    if (quantized_type(info, 7) == ElementType::int8) return std::make_unique<QLinearConvKernel<int8_t, kImpl>>(info);
    return std::make_unique<QLinearConvKernel<uint8_t, kImpl>>(info);
  };
  qlinear.output_types = [](const KernelCreateInfo& info) { return std::vector<ElementType>{quantized_type(info, 7)}; };
  table.add(std::move(qlinear));
}

}  // namespace

void register_quantized_conv_kernels(KernelTable& table) {
  for (ElementType type : {ElementType::uint8, ElementType::int8}) {
#if defined(ONNX_LIGHT_X86_SIMD)
    add_quantized_convs<QConvImpl::avx512vnni>(table, type);
    add_quantized_convs<QConvImpl::avxvnni>(table, type);
#endif
    add_quantized_convs<QConvImpl::portable>(table, type);
  }
}

}  // namespace onnx_light::runtime::kernels
