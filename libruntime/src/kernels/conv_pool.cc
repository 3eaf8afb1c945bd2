// Convolution and pooling over 1-3 spatial dims (NCHW-style layouts): Conv and FusedConv
// (com.onnx_light, kernels/epilogue.h) on the tiled GEMM core (im2col panels packed per task,
// never a whole im2col matrix) or the packed GEMM driver (1x1 stride-1 Convs packing X directly),
// 2-D depthwise Convs on kernels/depthwise_conv.h; MaxPool (with Indices) and AveragePool on
// precomputed 2-D windows, per output element otherwise. Pads, strides, dilations, auto_pad and
// ceil_mode follow the ONNX operator definitions. Kernel::variant() names the Conv path that ran.
#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <optional>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "checked_math.h"
#include "kernels/elementwise.h"
#include "kernels/epilogue.h"
#include "kernels/depthwise_conv.h"
#include "kernels/direct_conv.h"
#include "kernels/scratch_slots.h"
#include "kernels/gemm_core.h"
#include "kernels/isa_requirements.h"
#include "kernels/kernel_families.h"
#include "kernels/kernel_util.h"
#include "kernels/packed_gemm.h"
#include "kernels/spatial_attributes.h"
#include "kernels/simd/pool_f32.h"
#include "onnx_light/runtime/error.h"

namespace onnx_light::runtime::kernels {

namespace {

// Resolved geometry of one run.
struct Geometry {
  std::size_t rank = 0;  // spatial dims
  int64_t in[kMaxSpatial], kernel[kMaxSpatial], stride[kMaxSpatial], dilation[kMaxSpatial];
  int64_t pad_begin[kMaxSpatial], pad_end[kMaxSpatial], out[kMaxSpatial];
  int64_t in_size = 1, out_size = 1, kernel_size = 1;
};

// `kernel`: the window's spatial dims (a view, so that a run builds no vector for it).
template <typename Kernel>
Geometry resolve(const SpatialAttributes& attrs, const Shape& x, const Kernel& kernel, const std::string& label) {
  Geometry g;
  if (x.size() < 3 || x.size() - 2 > kMaxSpatial)
    throw InputError(fmt::format("{}: input {} must have 1 to {} spatial dims after N and C", label, shape_to_string(x),
                                 kMaxSpatial));
  g.rank = x.size() - 2;
  auto fits = [&](const std::vector<int64_t>& v, std::size_t size, std::string_view name) {
    if (!v.empty() && v.size() != size)
      throw InputError(fmt::format("{}: attribute '{}' has {} values but the input {} has {} spatial dims", label, name,
                                   v.size(), shape_to_string(x), g.rank));
  };
  if (kernel.size() != g.rank)
    throw InputError(fmt::format("{}: the kernel has {} spatial dims but the input {} has {}", label, kernel.size(),
                                 shape_to_string(x), g.rank));
  fits(attrs.strides, g.rank, "strides");
  fits(attrs.dilations, g.rank, "dilations");
  fits(attrs.pads, 2 * g.rank, "pads");
  for (std::size_t i = 0; i < g.rank; ++i) {
    g.in[i] = x[i + 2];
    g.kernel[i] = kernel[i];
    g.stride[i] = attrs.strides.empty() ? 1 : attrs.strides[i];
    g.dilation[i] = attrs.dilations.empty() ? 1 : attrs.dilations[i];
    g.pad_begin[i] = attrs.pads.empty() ? 0 : attrs.pads[i];
    g.pad_end[i] = attrs.pads.empty() ? 0 : attrs.pads[i + g.rank];
    // Attributes may hold any int64 (pads, strides, dilations): every step is checked.
    const int64_t extent = checked_add(checked_mul(g.kernel[i] - 1, g.dilation[i], "a dilated window extent"), 1,
                                       "a dilated window extent");
    if (attrs.auto_pad == "SAME_UPPER" || attrs.auto_pad == "SAME_LOWER") {
      g.out[i] = g.in[i] / g.stride[i] + (g.in[i] % g.stride[i] != 0 ? 1 : 0);  // ceil, without in + stride - 1
      const int64_t reach = checked_add(checked_mul(g.out[i] - 1, g.stride[i], "the last window's start"), extent,
                                        "the last window's end");
      const int64_t total = std::max<int64_t>(0, reach - g.in[i]);
      g.pad_begin[i] = attrs.auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
      g.pad_end[i] = total - g.pad_begin[i];
    } else {
      if (attrs.auto_pad == "VALID") g.pad_begin[i] = g.pad_end[i] = 0;
      const int64_t padded = checked_add(checked_add(g.in[i], g.pad_begin[i], "a padded input size"), g.pad_end[i],
                                         "a padded input size");
      const int64_t span = checked_sub(padded, extent, "a padded input size less the window extent");
      if (span < 0)
        throw InputError(fmt::format("{}: a window of extent {} does not fit spatial dim {} of size {} with pads {}+{}",
                                     label, extent, i, g.in[i], g.pad_begin[i], g.pad_end[i]));
      const int64_t steps = span / g.stride[i] + (attrs.ceil_mode && span % g.stride[i] != 0 ? 1 : 0);
      g.out[i] = checked_add(steps, 1, "an output size");
      if (attrs.ceil_mode) {
        // The last window must start inside the input or its leading padding (in + pad_begin <=
        // padded fits); a start past int64 is past it too. Its taps then reach in + extent - 1.
        int64_t last_start = 0;
        if (__builtin_mul_overflow(g.out[i] - 1, g.stride[i], &last_start) || last_start >= g.in[i] + g.pad_begin[i])
          --g.out[i];
        checked_add(g.in[i], extent, "an input size plus the window extent");
      }
    }
    g.in_size = checked_mul(g.in_size, g.in[i], "the input's spatial size");
    g.out_size = checked_mul(g.out_size, g.out[i], "the output's spatial size");
    g.kernel_size = checked_mul(g.kernel_size, g.kernel[i], "the window's size");
  }
  return g;
}

// Output position p -> the input coordinates of its window origin (o * stride - pad_begin).
void window_origin(const Geometry& g, int64_t p, int64_t* origin) {
  for (std::size_t i = g.rank; i-- > 0;) {
    origin[i] = (p % g.out[i]) * g.stride[i] - g.pad_begin[i];
    p /= g.out[i];
  }
}

// Kernel position q -> its offsets (q_i * dilation_i).
void kernel_offsets(const Geometry& g, int64_t q, int64_t* offsets) {
  for (std::size_t i = g.rank; i-- > 0;) {
    offsets[i] = (q % g.kernel[i]) * g.dilation[i];
    q /= g.kernel[i];
  }
}

// One Conv run, checked: its geometry, the operands and the output (already shaped).
struct ConvRun {
  Geometry g;
  int64_t batch = 0, channels = 0, maps = 0, group_channels = 0, group_maps = 0;
  int64_t depth = 0;  // the GEMM's K: group_channels x kernel positions
  const Tensor* x = nullptr;
  const Tensor* w = nullptr;
  const Tensor* bias = nullptr;
  const Tensor* z = nullptr;  // FusedConv's residual, Y's shape
  Tensor* y = nullptr;
};

// What FusedConv adds to Conv: its epilogue (kernels/epilogue.h) and the residual input Z.
struct ConvFusion {
  bool fused = false;  // FusedConv (input 3 is Z) rather than Conv
  Epilogue epilogue;

  ConvFusion(const KernelCreateInfo& info, bool is_fused) : fused(is_fused) {
    if (fused) {
      check_attributes(info, {"auto_pad", "dilations", "group", "kernel_shape", "pads", "strides", "activation",
                              "activation_params", "post_affine"});
      epilogue = parse_epilogue_attributes(info);
    } else {
      check_attributes(info, {"auto_pad", "dilations", "group", "kernel_shape", "pads", "strides"});
    }
  }
  // Nothing to do after the bias.
  bool plain(const ConvRun& r) const { return r.z == nullptr && epilogue.is_identity(); }
  // The packed GEMM's epilogue for this run: the bias of `group` (maps from `first_map`), and the
  // activation and post affine when the micro-kernel has them and there is no residual (which
  // comes before the activation); `whole` tells whether that is all of the epilogue, else the
  // caller applies everything after the bias (apply). Same expressions, so the same bits.
  simd::GemmF32Epilogue gemm_epilogue(const ConvRun& r, int64_t first_map, bool& whole) const {
    simd::GemmF32Epilogue e{1.0f, 1.0f, r.bias != nullptr ? r.bias->data<float>() + first_map : nullptr, 1, 0};
    whole = plain(r);
    if (r.z != nullptr || whole) return e;
    switch (epilogue.activation) {
      case Activation::identity: break;
      case Activation::relu: e.relu = true; break;
      case Activation::clip: e.activation = simd::GemmF32Activation::clip; break;
      case Activation::leaky_relu: e.activation = simd::GemmF32Activation::leaky_relu; break;
      case Activation::hard_sigmoid: e.activation = simd::GemmF32Activation::hard_sigmoid; break;
      case Activation::hard_swish: e.activation = simd::GemmF32Activation::hard_swish; break;
      default: return e;  // sigmoid, tanh, silu: the caller's pass
    }
    e.act_alpha = epilogue.alpha;
    e.act_beta = epilogue.beta;
    e.post_affine = epilogue.post_affine;
    e.post_scale = epilogue.post_scale;
    e.post_shift = epilogue.post_shift;
    whole = true;
    return e;
  }
  // Whether `e` does anything (else the micro-kernel is given no epilogue).
  static bool acts(const simd::GemmF32Epilogue& e) {
    return e.bias != nullptr || e.relu || e.activation != simd::GemmF32Activation::none || e.post_affine;
  }
  // Z added and the activation applied to n values of Y from element `offset` on.
  void apply(const ConvRun& r, float* y, int64_t offset, int64_t n) const {
    if (r.z != nullptr) {
      const float* z = r.z->data<float>() + offset;
      for (int64_t i = 0; i < n; ++i) y[i] += z[i];
    }
    apply_activation(epilogue, y, n);
  }
};

// `out_shape`: the caller's (kept across runs, so that a repeated shape allocates nothing).
ConvRun check_conv(KernelExecution& execution, const SpatialAttributes& attrs, int64_t group, ElementType type,
                   Shape& out_shape) {
  ConvRun r;
  const Tensor& x = execution.required_input(0);
  const Tensor& w = execution.required_input(1);
  const Tensor* bias = execution.input(2);
  const std::string& label = execution.label();
  check_input_type(execution, 1, w, type);
  if (bias != nullptr) check_input_type(execution, 2, *bias, type);
  if (w.rank() != x.rank() || x.rank() < 3)
    throw InputError(fmt::format("{}: X {} and W {} must have the same rank (3 or more)", label,
                                 shape_to_string(x.shape()), shape_to_string(w.shape())));
  r.batch = x.shape()[0];
  r.channels = x.shape()[1];
  r.maps = w.shape()[0];
  r.group_channels = w.shape()[1];
  if (r.group_channels * group != r.channels || r.maps % group != 0)
    throw InputError(fmt::format("{}: X {} and W {} do not fit group = {}", label, shape_to_string(x.shape()),
                                 shape_to_string(w.shape()), group));
  struct {
    const int64_t* b;
    const int64_t* e;
    std::size_t size() const { return static_cast<std::size_t>(e - b); }
    int64_t operator[](std::size_t i) const { return b[i]; }
  } kernel{w.shape().data() + std::min<std::size_t>(2, w.rank()), w.shape().data() + w.rank()};
  if (!attrs.kernel_shape.empty() &&
      !std::equal(attrs.kernel_shape.begin(), attrs.kernel_shape.end(), kernel.b, kernel.e))
    throw InputError(fmt::format("{}: kernel_shape {} does not match W {}", label, attrs.kernel_shape,
                                 shape_to_string(w.shape())));
  if (bias != nullptr && (bias->rank() != 1 || bias->shape()[0] != r.maps))
    throw InputError(fmt::format("{}: B {} must have shape [{}]", label, shape_to_string(bias->shape()), r.maps));
  r.g = resolve(attrs, x.shape(), kernel, label);
  out_shape.assign({r.batch, r.maps});
  for (std::size_t i = 0; i < r.g.rank; ++i) out_shape.push_back(r.g.out[i]);
  // Every path writes every element of Y: no zero-fill first.
  r.y = &checked_output(execution, 0, type, out_shape, /*zero=*/false);
  r.group_maps = r.maps / group;
  r.depth = r.group_channels * r.g.kernel_size;
  r.x = &x;
  r.w = &w;
  r.bias = bias;
  if (execution.input_count() > 3 && execution.input(3) != nullptr) {
    const Tensor& z = *execution.input(3);
    check_input_type(execution, 3, z, type);
    if (z.shape() != out_shape)
      throw InputError(fmt::format("{}: Z {} must have the shape of Y {}", label, shape_to_string(z.shape()),
                                   shape_to_string(out_shape)));
    r.z = &z;
  }
  return r;
}

// A 2-D float32 Conv whose groups each hold one input channel (depthwise, any multiplier) as the
// depthwise kernel's problem; nullopt for anything else.
// A 2-D float32 Conv run as the plane kernels' problem (depthwise_conv.h, direct_conv.h).
DepthwiseConv plane_conv_of(const ConvRun& r, const ConvFusion& fusion) {
  const Geometry& g = r.g;
  DepthwiseConv c;
  c.batch = r.batch;
  c.channels = r.channels;
  c.maps = r.maps;
  c.in_h = g.in[0];
  c.in_w = g.in[1];
  c.out_h = g.out[0];
  c.out_w = g.out[1];
  c.kernel_h = g.kernel[0];
  c.kernel_w = g.kernel[1];
  c.stride_h = g.stride[0];
  c.stride_w = g.stride[1];
  c.dilation_h = g.dilation[0];
  c.dilation_w = g.dilation[1];
  c.pad_top = g.pad_begin[0];
  c.pad_left = g.pad_begin[1];
  c.x = r.x->data<float>();
  c.w = r.w->data<float>();
  c.bias = r.bias != nullptr ? r.bias->data<float>() : nullptr;
  c.z = r.z != nullptr ? r.z->data<float>() : nullptr;
  c.y = r.y->data<float>();
  c.epilogue = fusion.epilogue;
  return c;
}

std::optional<DepthwiseConv> depthwise_of(const ConvRun& r, int64_t group, const ConvFusion& fusion) {
  if (r.g.rank != 2 || group != r.channels || r.group_channels != 1 || r.y->element_count() == 0) return std::nullopt;
  return plane_conv_of(r, fusion);
}

// A dense 2-D Conv with few input channels (a stem) for the direct kernel; nullopt for anything
// else, and for 1x1 stride-1 unpadded Convs (the pointwise GEMM reads X as it is).
std::optional<DirectConv> direct_of(const ConvRun& r, int64_t group, const ConvFusion& fusion) {
  if (r.g.rank != 2 || group != 1 || r.channels > kDirectConvMaxChannels || r.y->element_count() == 0)
    return std::nullopt;
  const Geometry& g = r.g;
  if (g.kernel[0] == 1 && g.kernel[1] == 1 && g.stride[0] == 1 && g.stride[1] == 1 && g.pad_begin[0] == 0 &&
      g.pad_begin[1] == 0 && g.pad_end[0] == 0 && g.pad_end[1] == 0)
    return std::nullopt;
  return plane_conv_of(r, fusion);
}

// Runs a depthwise Conv and returns its variant label, kept in `label`.
std::string_view run_depthwise(KernelExecution& execution, const DepthwiseConv& c, DepthwiseIsa isa, int admitted,
                               DepthwiseWorkspace& workspace, std::string& label) {
  run_depthwise_conv(execution, c, isa, admitted, workspace);
  depthwise_variant(c, isa, label);
  return label;
}

// Rows [k0, k0 + kc) of one group's im2col matrix (row = channel x kernel position, column =
// output position) for the nc positions whose window origins are given, row kk at dst + kk *
// dst_stride; taps in the padding read as 0. kRank (1-3) is a template argument so the
// per-element coordinate loop unrolls: this gather is most of a packed Conv's time.
template <std::size_t kRank, typename T, typename A>
void gather_patches_rank(const Geometry& g, const T* planes, const int64_t* origins, int64_t k0, int64_t kc,
                         int64_t nc, A* dst, int64_t dst_stride) {
  constexpr std::size_t kLast = kRank - 1;
  constexpr int64_t kChunk = 256;
  // Positions in runs that share their leading coordinates and step the last one by its stride:
  // where a run's taps lie inside the input with stride 1, a row of the run is one contiguous copy.
  int64_t run_begin[kChunk + 1];
  for (int64_t c0 = 0; c0 < nc; c0 += kChunk) {
    const int64_t c1 = std::min(nc, c0 + kChunk);
    int64_t runs = 0;
    for (int64_t j = c0; j < c1; ++j) {
      const int64_t* o = origins + j * static_cast<int64_t>(kRank);
      bool extends = j > c0;
      if (extends) {
        const int64_t* p = o - kRank;
        for (std::size_t i = 0; i < kLast; ++i) extends = extends && o[i] == p[i];
        extends = extends && o[kLast] == p[kLast] + g.stride[kLast];
      }
      if (!extends) run_begin[runs++] = j;
    }
    run_begin[runs] = c1;
    int64_t offsets[kMaxSpatial];
    for (int64_t kk = 0; kk < kc; ++kk) {
      const int64_t row = k0 + kk;
      const T* plane = planes + (row / g.kernel_size) * g.in_size;
      kernel_offsets(g, row % g.kernel_size, offsets);
      A* d = dst + kk * dst_stride;
      for (int64_t r = 0; r < runs; ++r) {
        const int64_t j0 = run_begin[r], j1 = run_begin[r + 1];
        const int64_t* o = origins + j0 * static_cast<int64_t>(kRank);
        int64_t base = 0;  // linear index of the run's first tap, leading dims only so far
        bool leading_inside = true;
        for (std::size_t i = 0; i < kLast; ++i) {
          const int64_t c = o[i] + offsets[i];
          leading_inside &= static_cast<uint64_t>(c) < static_cast<uint64_t>(g.in[i]);
          base = base * g.in[i] + c;
        }
        const int64_t first = o[kLast] + offsets[kLast];
        const int64_t last = first + (j1 - j0 - 1) * g.stride[kLast];
        if (!leading_inside) {
          std::fill(d + j0, d + j1, A(0));
        } else if (g.stride[kLast] == 1 && first >= 0 && last < g.in[kLast]) {
          const T* src = plane + base * g.in[kLast] + first;
          for (int64_t j = j0; j < j1; ++j) d[j] = static_cast<A>(load<T>(src[j - j0]));
        } else if (g.stride[kLast] == 2 && first >= 0 && last < g.in[kLast]) {
          // Stride 2 inside the row (a CNN stem's 3x3 s2): no bounds test, the step a constant.
          const T* src = plane + base * g.in[kLast] + first;
          for (int64_t j = j0; j < j1; ++j) d[j] = static_cast<A>(load<T>(src[2 * (j - j0)]));
        } else {
          const T* line = plane + base * g.in[kLast];
          for (int64_t j = j0; j < j1; ++j) {
            const int64_t c = first + (j - j0) * g.stride[kLast];
            d[j] = static_cast<uint64_t>(c) < static_cast<uint64_t>(g.in[kLast]) ? static_cast<A>(load<T>(line[c])) : A(0);
          }
        }
      }
    }
  }
}

// Output columns [a, b) of output row oy, within one panel; column a of im2col row kk lands at
// dst + kk * nr + offset.
struct Im2colSegment {
  int64_t oy, a, b, offset;
};
// One kernel tap: output (oy, x) reads input (oy * stride_h + dy, x * stride_w + dx), inside the
// input's columns for x in [lo, hi).
struct Im2colTap {
  int64_t dy, dx, lo, hi;
};

// Im2col rows [k0, k1) (row kk: channel kk / kernel_size, tap kk % kernel_size) for the given
// segments. Plain loops: an AVX-512 version with masked moves measured slower on Zen 5 (c58:
// 3.3 ms against 2.7 ms), its loads stalling on lines the narrow copies split.
void im2col_rows(const Geometry& g, const float* planes, const Im2colTap* taps, int64_t k0, int64_t k1,
                 const Im2colSegment* segments, int64_t count, float* dst, int64_t nr) {
  const int64_t in_h = g.in[0], in_w = g.in[1], sh = g.stride[0], sw = g.stride[1];
  int64_t channel = k0 / g.kernel_size, tap = k0 % g.kernel_size;
  for (int64_t kk = k0; kk < k1; ++kk) {
    const Im2colTap& t = taps[tap];
    const float* plane = planes + channel * g.in_size;
    float* row = dst + kk * nr;
    for (int64_t s = 0; s < count; ++s) {
      const Im2colSegment& seg = segments[s];
      float* column = row + seg.offset - seg.a;  // column[x]: column x of this segment
      const int64_t iy = seg.oy * sh + t.dy;
      if (static_cast<uint64_t>(iy) >= static_cast<uint64_t>(in_h)) {
        std::fill(column + seg.a, column + seg.b, 0.0f);
        continue;
      }
      const float* line = plane + iy * in_w + t.dx;
      const int64_t c0 = std::clamp(t.lo, seg.a, seg.b), c1 = std::clamp(t.hi, c0, seg.b);
      for (int64_t x = seg.a; x < c0; ++x) column[x] = 0.0f;
      if (sw == 1) {
        for (int64_t x = c0; x < c1; ++x) column[x] = line[x];
      } else if (sw == 2) {
        for (int64_t x = c0; x < c1; ++x) column[x] = line[2 * x];
      } else {
        for (int64_t x = c0; x < c1; ++x) column[x] = line[x * sw];
      }
      for (int64_t x = c1; x < seg.b; ++x) column[x] = 0.0f;
    }
    if (++tap == g.kernel_size) {
      tap = 0;
      ++channel;
    }
  }
}

// Rows [k0, k1) of a 2-D float im2col matrix (row = channel x (ky, kx), column = output position)
// for the positions of panels [q0, q1), written straight into packed B panels (panel q: depth x nr
// floats at dst + (q - q0) * depth * nr, position j at lane j % nr; lanes past the last position
// are zero). The position range is cut once into segments that lie in one output row and one
// panel, and each tap's bounds are found once; the rows are then plain copies.
void gather_rows_2d(const Geometry& g, const float* planes, int64_t k0, int64_t k1, int64_t depth, int64_t nr,
                    int64_t q0, int64_t q1, float* dst_panels) {
  const int64_t out_h = g.out[0], out_w = g.out[1], in_w = g.in[1];
  const int64_t sw = g.stride[1], kw = g.kernel[1];
  const int64_t positions = out_h * out_w, panels = (positions + nr - 1) / nr;
  const int64_t j_begin = q0 * nr, j_end = std::min(positions, q1 * nr);
  if (j_begin >= j_end || k0 >= k1) return;
  constexpr int64_t kStack = 64;
  Im2colSegment stack_segments[kStack];
  Im2colTap stack_taps[kStack];
  std::vector<Im2colSegment> heap_segments;
  std::vector<Im2colTap> heap_taps;
  Im2colSegment* segments = stack_segments;
  Im2colTap* taps = stack_taps;
  const int64_t most = (j_end - j_begin) / std::min(out_w, nr) + 3;
  if (most > kStack) {
    heap_segments.resize(static_cast<std::size_t>(most));
    segments = heap_segments.data();
  }
  if (g.kernel_size > kStack) {
    heap_taps.resize(static_cast<std::size_t>(g.kernel_size));
    taps = heap_taps.data();
  }
  int64_t count = 0;
  for (int64_t j = j_begin; j < j_end;) {
    const int64_t oy = j / out_w, a = j % out_w;
    const int64_t b = std::min({out_w, a + (nr - j % nr), a + (j_end - j)});
    segments[count++] = Im2colSegment{oy, a, b, (j / nr - q0) * depth * nr + j % nr};
    j += b - a;
  }
  for (int64_t tap = 0; tap < g.kernel_size; ++tap) {
    const int64_t dy = (tap / kw) * g.dilation[0] - g.pad_begin[0], dx = (tap % kw) * g.dilation[1] - g.pad_begin[1];
    // Output columns [lo, hi) read input columns x * sw + dx inside [0, in_w).
    const int64_t lo = dx >= 0 ? 0 : std::min(out_w, (-dx + sw - 1) / sw);
    const int64_t hi = in_w - dx <= 0 ? 0 : std::max(lo, std::min(out_w, (in_w - dx + sw - 1) / sw));
    taps[tap] = Im2colTap{dy, dx, lo, hi};
  }
  im2col_rows(g, planes, taps, k0, k1, segments, count, dst_panels, nr);
  // The last panel's lanes past the last position.
  if (q1 >= panels && positions % nr != 0)
    for (int64_t kk = k0; kk < k1; ++kk) {
      float* d = dst_panels + kk * nr + (panels - 1 - q0) * depth * nr;
      std::fill(d + positions % nr, d + nr, 0.0f);
    }
}

// The im2col panels of one (image, group) of a 2-D Conv, gathered by the GEMM tasks.
struct Im2colPanels {
  const Geometry* g;
  const float* planes;
  int64_t depth, nr;
};
// PackedGemmOperands::gather_b for Im2colPanels: all rows of panels [q0, q1).
void gather_panels(const void* context, int64_t q0, int64_t q1, float* dst) {
  const auto& c = *static_cast<const Im2colPanels*>(context);
  gather_rows_2d(*c.g, c.planes, 0, c.depth, c.depth, c.nr, q0, q1, dst);
}
// Whether `columns` (NR-wide panels, the last one partial) split among `threads` by whole panels
// leave the busiest thread at most 20% above the mean: the condition for packing a pointwise
// Conv's B inside the tasks, which split the columns only. 384 -> 384 maps on 10x10 (100 columns
// = 3 x 32 + 4) split 64 / 36: 1.09x ORT at T=2; by rows with B packed first 1.01x (bench/RESULTS.md).
bool columns_split_evenly(int64_t columns, int64_t nr, int threads) {
  if (threads <= 1) return true;
  const int64_t panels = (columns + nr - 1) / nr;
  int64_t busiest = 0;
  for (int64_t t = 0; t < threads; ++t) {
    const int64_t q0 = t * panels / threads, q1 = (t + 1) * panels / threads;
    busiest = std::max(busiest, std::min(columns, q1 * nr) - std::min(columns, q0 * nr));
  }
  return busiest * threads * 5 <= columns * 6;
}

// Floats of im2col panels one GEMM task gathers (256 KiB: a quarter of this machine's L2).
constexpr int64_t kGatheredBFloats = int64_t{1} << 16;

template <typename T, typename A>
void gather_patches(const Geometry& g, const T* planes, const int64_t* origins, int64_t k0, int64_t kc, int64_t nc,
                    A* dst, int64_t dst_stride) {
  switch (g.rank) {
    case 1: gather_patches_rank<1>(g, planes, origins, k0, kc, nc, dst, dst_stride); break;
    case 2: gather_patches_rank<2>(g, planes, origins, k0, kc, nc, dst, dst_stride); break;
    default: gather_patches_rank<3>(g, planes, origins, k0, kc, nc, dst, dst_stride); break;
  }
}

template <typename T>
class ConvKernel final : public TiledKernel {
 public:
  explicit ConvKernel(const KernelCreateInfo& info, bool fused = false)
      : TiledKernel(TileDefaults{}), attrs_(info), fusion_(info, fused) {
    group_ = info.int_attribute("group", 1);
    if (group_ < 1) throw ModelError(fmt::format("{}: attribute 'group' = {} must be positive", info.node_label(), group_));
  }

  void run(KernelExecution& execution) override {
    const ConvRun r = check_conv(execution, attrs_, group_, ElementTraits<T>::type, out_shape_);
    last_variant_ = "portable_loop";
    if constexpr (std::is_same_v<T, float>) {
      if (const auto dw = depthwise_of(r, group_, fusion_)) {
        const int threads = admitted_macs(r.batch * r.maps * r.g.out_size * r.g.kernel_size, execution);
        last_variant_ = run_depthwise(execution, *dw, DepthwiseIsa::portable, threads, dw_workspace_, label_);
        return;
      }
    }
    if (r.y->element_count() == 0) return;
    const Geometry& g = r.g;
    using A = gemm_acc_t<T>;
    const int64_t depth = r.depth, group_maps = r.group_maps;
    const T* px = r.x->data<T>();
    const T* pw = r.w->data<T>();
    const T* pbias = r.bias != nullptr ? r.bias->data<T>() : nullptr;
    T* out = r.y->data<T>();
    [[maybe_unused]] const bool plain = fusion_.plain(r);
    // One GEMM per (image, group): [group_maps x depth] weights times [depth x positions] patches.
    const GemmTiling tiling(group_maps, g.out_size, tile_m_, tile_n_);
    const int64_t tasks = r.batch * group_ * tiling.tasks_per_batch();
    const int threads = admitted_macs(r.batch * r.maps * g.out_size * depth, execution);
    // Per-participant tiles kept across runs (sized here, outside the region).
    slots_.ensure(static_cast<std::size_t>(std::max(1, execution.threads())) + 1);
    for (std::size_t i = 0; i < slots_.size(); ++i) {
      Slot& s = slots_[i];
      s.scratch.acc.resize(static_cast<std::size_t>(tiling.tile_m * tiling.tile_n));
      s.scratch.panel.resize(static_cast<std::size_t>(tile_k_ * tiling.tile_n));
      s.origins.resize(static_cast<std::size_t>(tiling.tile_n) * g.rank);
    }
    execution.parallel_for(tasks, 1, threads, [&](int64_t begin, int64_t end) {
      typename ScratchSlots<Slot>::Lease slot(slots_);
      GemmScratch<A>& scratch = slot->scratch;
      std::vector<int64_t>& origins = slot->origins;
      for (int64_t t = begin; t < end; ++t) {
        const auto task = tiling.task(t);
        const int64_t image = task.batch / group_, grp = task.batch % group_;
        const T* planes = px + (image * r.channels + grp * r.group_channels) * g.in_size;
        const T* weights = pw + grp * group_maps * depth;
        for (int64_t j = 0; j < task.nc; ++j) window_origin(g, task.j0 + j, &origins[static_cast<std::size_t>(j) * g.rank]);
        auto pack = [&](int64_t k0, int64_t kc, int64_t, int64_t nc, A* dst) {
          gather_patches<T, A>(g, planes, origins.data(), k0, kc, nc, dst, nc);
        };
        T* result = out + (image * r.maps + grp * group_maps) * g.out_size;
        gemm_tile<A>(
            task.i0, task.mc, task.j0, task.nc, depth, tile_k_, scratch,
            [&](int64_t i, int64_t k) { return static_cast<A>(load<T>(weights[i * depth + k])); }, pack,
            [&](int64_t i, int64_t j0, int64_t nc, const A* acc) {
              const A b = pbias != nullptr ? static_cast<A>(load<T>(pbias[grp * group_maps + i])) : A(0);
              T* row = result + i * g.out_size + j0;
              for (int64_t j = 0; j < nc; ++j) row[j] = store<T>(acc[j] + b);
              // FusedConv (float32 only): the epilogue on this block of the row while it is in cache.
              if constexpr (std::is_same_v<T, float>)
                if (!plain) fusion_.apply(r, row, row - out, nc);
            });
      }
    });
  }

  std::string_view variant() const override { return last_variant_; }

 private:
  struct Slot {
    GemmScratch<gemm_acc_t<T>> scratch{0, 0, 0};
    std::vector<int64_t> origins;
  };
  SpatialAttributes attrs_;
  ConvFusion fusion_;
  int64_t group_ = 1;
  ScratchSlots<Slot> slots_;
  std::string_view last_variant_;
  std::string label_;  // the depthwise path's variant
  DepthwiseWorkspace dw_workspace_;
  Shape out_shape_;
};

// A stride-1 2-D Conv as a GEMM over its padded input with no im2col at all: output (oy, x)
// is computed at padded-domain position p = oy * Wp + x (Wp the padded width, so x runs past the
// output's width into kernel_w - 1 discarded columns), where tap (ky, kx) of channel c reads
// padded[c][p + ky * dh * Wp + kx * dw]: row (c, ky, kx) of the implicit im2col matrix is the
// padded plane shifted, and the micro-kernel reads it through a row pointer. The GEMM writes the
// padded-domain result to a scratch C; each finished tile is copied to Y (valid columns only)
// with the epilogue the tile hook would apply. Same values, same FMA order as the gathered path.
struct ImplicitIm2col {
  int64_t padded_h = 0, padded_w = 0, positions = 0;  // positions: out_h * padded_w
  int64_t slack = 0;  // floats readable past the last plane: NR lanes from the last row pointer
  static ImplicitIm2col of(const Geometry& g, int64_t nr) {
    ImplicitIm2col m;
    m.padded_h = g.in[0] + g.pad_begin[0] + g.pad_end[0];
    m.padded_w = g.in[1] + g.pad_begin[1] + g.pad_end[1];
    m.positions = g.out[0] * m.padded_w;
    m.slack = nr + (g.kernel[1] - 1) * g.dilation[1];
    return m;
  }
  int64_t plane() const { return padded_h * padded_w; }
};

// Channels [c0, c1) of `planes` into `padded` (zero borders).
void pad_planes(const Geometry& g, const ImplicitIm2col& m, const float* planes, int64_t c0, int64_t c1,
                float* padded) {
  const int64_t in_h = g.in[0], in_w = g.in[1], top = g.pad_begin[0], left = g.pad_begin[1];
  for (int64_t c = c0; c < c1; ++c) {
    float* dst = padded + c * m.plane();
    const float* src = planes + c * g.in_size;
    std::fill(dst, dst + top * m.padded_w, 0.0f);
    for (int64_t y = 0; y < in_h; ++y) {
      float* row = dst + (top + y) * m.padded_w;
      std::fill(row, row + left, 0.0f);
      std::copy(src + y * in_w, src + (y + 1) * in_w, row + left);
      std::fill(row + left + in_w, row + m.padded_w, 0.0f);
    }
    std::fill(dst + (top + in_h) * m.padded_w, dst + m.plane(), 0.0f);
  }
}

// The tile hook of the implicit path: rows [i, i + rows) x padded-domain columns [j, j + cols)
// of the scratch C, to Y's valid columns, then the fused residual and activation.
struct ImplicitTileCopy {
  const ConvFusion* fusion;
  const ConvRun* run;
  const float* y_all;  // Y of the whole run (offsets for the residual)
  float* y;            // Y of this (image, group)
  int64_t out_size, out_w, padded_w;
  bool apply_fusion;
  static void copy(const void* context, int64_t, int64_t i, int64_t j, int rows, int cols, float* c, int64_t ldc) {
    const auto& t = *static_cast<const ImplicitTileCopy*>(context);
    for (int64_t p = j; p < j + cols;) {
      const int64_t oy = p / t.padded_w, x = p % t.padded_w;
      const int64_t run_end = std::min<int64_t>(j + cols, p + (t.padded_w - x));
      const int64_t valid = std::min(run_end - p, std::max<int64_t>(0, t.out_w - x));
      for (int row = 0; row < rows && valid > 0; ++row) {
        const float* src = c + row * ldc + (p - j);
        float* dst = t.y + (i + row) * t.out_size + oy * t.out_w + x;
        std::copy(src, src + valid, dst);
        if (t.apply_fusion) t.fusion->apply(*t.run, dst, dst - t.y_all, valid);
      }
      p = run_end;
    }
  }
};

// Conv float32 on the packed GEMM driver (implementations "avx2", "avx512"): per (image, group)
// the im2col matrix is gathered straight into the driver's B panels (depth x NR floats each, in
// parallel over panels), then the weights [group_maps x depth] multiply it with the bias added
// in the micro-kernel's store. Results do not depend on the thread count or the block sizes
// (packed_gemm.h); they differ from the portable kernel by rounding only (FMA, another order).
class PackedConvKernel final : public Kernel {
 public:
  PackedConvKernel(const KernelCreateInfo& info, const PackedGemmIsa& isa, const GemmBlocking& defaults, bool fused)
      : attrs_(info), fusion_(info, fused), isa_(isa), blocking_(defaults), thin_groups_(info, fused) {
    variant_ = std::string("packed_gemm_") + isa.name;
    pointwise_variant_ = std::string("pointwise_gemm_") + isa.name;
    narrow_variant_ = pointwise_variant_ + "_narrow_tail";
    implicit_variant_ = std::string("implicit_gemm_") + isa.name;
    group_ = info.int_attribute("group", 1);
    if (group_ < 1) throw ModelError(fmt::format("{}: attribute 'group' = {} must be positive", info.node_label(), group_));
    const auto constant = [&](std::size_t i) { return i < info.constant_inputs.size() && info.constant_inputs[i] != nullptr; };
    constant_weights_ = constant(1) && (info.node.input_size() < 3 || info.node.input(2).empty() || constant(2));
  }
  void apply_tuning(const TuningValues& values) override {
    read_packed_gemm_tuning(values, minimum_macs_, blocking_);
    thin_groups_.apply_tuning(values);  // its threshold; its tiles stay at their defaults
    read_tuning(values, "depthwise.chw_s1_from_width", depthwise_paths_.chw_s1_from_width);
    read_tuning(values, "depthwise.chw_s2_from_width", depthwise_paths_.chw_s2_from_width);
    read_tuning(values, "depthwise.rows_from_pixels", depthwise_paths_.rows_from_pixels);
    read_tuning(values, "depthwise.flat_below_width", depthwise_paths_.flat_below_width);
  }

  void run(KernelExecution& execution) override {
    if (execution.required_input(1).rank() >= 1 && execution.required_input(1).shape()[0] / group_ < isa_.mr) {
      // Depthwise and other thin groups: a GEMM with fewer rows than the register tile wastes most
      // of it, and one GEMM per (image, group) would mean two parallel regions each; the portable
      // loop (default tiles) runs all groups in one region. A single group (group = 1, e.g. a
      // CNN's stem 3 -> 8 maps or a 1x1 down to 8 maps) is one GEMM per image: the packed path
      // with a partly filled register tile still beats the scalar loop (ppocr_cls's stem
      // Conv [1,3,48,192] -> 8 maps: 206 us in the portable loop, 18% of the model).
      const ConvRun r = check_conv(execution, attrs_, group_, ElementType::float32, out_shape_);
      if (auto dw = depthwise_of(r, group_, fusion_)) {
        const int admitted =
            execution.admitted_threads(r.batch * r.maps * r.g.out_size * r.g.kernel_size, minimum_macs_);
        dw->weights_constant = constant_weights_;
        dw->paths = depthwise_paths_;
        last_variant_ = run_depthwise(execution, *dw, std::string_view(isa_.name) == "avx512" ? DepthwiseIsa::avx512 : DepthwiseIsa::avx2,
                                      admitted, dw_workspace_, label_);
        return;
      }
      if (group_ > 1) {
        thin_groups_.run(execution);
        last_variant_ = thin_groups_.variant();
        return;
      }
    }
    const ConvRun r = check_conv(execution, attrs_, group_, ElementType::float32, out_shape_);
    if (r.y->element_count() == 0) return;
    const Geometry& g = r.g;
    if (const auto direct = direct_of(r, group_, fusion_)) {
      const DirectConvIsa isa = std::string_view(isa_.name) == "avx512" ? DirectConvIsa::avx512 : DirectConvIsa::avx2;
      run_direct_conv(execution, *direct, isa,
                      execution.admitted_threads(r.batch * r.maps * g.out_size * r.depth, minimum_macs_),
                      direct_workspace_);
      direct_conv_variant(*direct, isa, direct_label_);
      last_variant_ = direct_label_;
      return;
    }
    // 1x1, stride 1, no pads: the im2col matrix is X's rows themselves, packed by the ISA's own
    // B packer (inside the GEMM tasks when A is small) instead of gathered position by position.
    bool pointwise = true;
    for (std::size_t i = 0; i < g.rank; ++i)
      pointwise = pointwise && g.kernel[i] == 1 && g.stride[i] == 1 && g.pad_begin[i] == 0 && g.pad_end[i] == 0;
    const int64_t nr = isa_.nr, panels = (g.out_size + nr - 1) / nr;
    // Pixels ending in a narrow panel (10x10: 3 x 32 + 4) with constant weights: that panel runs
    // with the weights transposed, its rows as lanes (PackedGemmOperands::a_transposed).
    const int64_t tail = g.out_size % nr;
    const bool narrow = pointwise && constant_weights_ && isa_.kernel_narrow != nullptr &&
                        isa_.kernel_transposed_a != nullptr && isa_.kernel_direct_a != nullptr && tail > 0 &&
                        tail <= simd::kGemmF32NarrowCols;
    if (narrow) transpose_weights(r);
    last_variant_ = narrow ? narrow_variant_ : pointwise ? pointwise_variant_ : variant_;
    const int admitted = execution.admitted_threads(r.batch * r.maps * g.out_size * r.depth, minimum_macs_);
    if (!pointwise && g.rank == 2 && g.stride[0] == 1 && g.stride[1] == 1 && isa_.kernel_direct_a_indirect_b != nullptr) {
      last_variant_ = implicit_variant_;
      run_implicit(execution, r, admitted);
      return;
    }
    const bool gathered = !pointwise && g.rank == 2;
    const bool in_tasks = pointwise && pack_b_in_tasks(blocking_, r.group_maps, r.depth) &&
                          columns_split_evenly(g.out_size, nr, admitted);
    if (!gathered && !in_tasks) patches_.grow(static_cast<std::size_t>(panels * r.depth * nr));
    float* packed = patches_.data();
    const float* px = r.x->data<float>();
    const float* pw = r.w->data<float>();
    float* out = r.y->data<float>();
    for (int64_t image = 0; image < r.batch; ++image)
      for (int64_t grp = 0; grp < group_; ++grp) {
        const float* planes = px + (image * r.channels + grp * r.group_channels) * g.in_size;
        const MatrixView activation{planes, g.in_size, 1};  // a pointwise Conv's B: X itself
        if (pointwise && !in_tasks) pack_b_matrices(&execution, admitted, isa_, 1, r.depth, g.out_size,
                                                     [&](int64_t) { return activation; }, packed);
        // 2-D: each GEMM task gathers the im2col panels it multiplies into its thread's buffer,
        // row by row (per (row, output row) bookkeeping, not per (row, panel)), while they are
        // in L2; the same values in the same places as a whole im2col matrix.
        const Im2colPanels gather_context{&g, planes, r.depth, nr};
        // A pointwise Conv's B packed by the tasks into their thread's buffer, which serves every
        // GEMM the thread runs: a model's pointwise Convs share one instead of each holding (and
        // on its first run faulting in) a B of its own (ppocr_cls: 24 of them).
        const BPanelsToPack pointwise_context{&isa_, activation, r.depth, g.out_size};
        if (!pointwise && !gathered) execution.parallel_for(panels, 1, admitted, [&](int64_t begin, int64_t end) {
          int64_t origins[kMaxSpatial * 64];  // NR <= 64 window origins
          for (int64_t q = begin; q < end; ++q) {
            const int64_t j0 = q * nr, nc = std::min(nr, g.out_size - j0);
            for (int64_t j = 0; j < nc; ++j) window_origin(g, j0 + j, origins + j * static_cast<int64_t>(g.rank));
            float* panel = packed + q * r.depth * nr;
            gather_patches<float, float>(g, planes, origins, 0, r.depth, nc, panel, nr);
            if (nc < nr)
              for (int64_t kk = 0; kk < r.depth; ++kk) std::fill(panel + kk * nr + nc, panel + (kk + 1) * nr, 0.0f);
          }
        });
        // Bias, and without a residual the activation, run in the micro-kernel's store.
        bool whole = false;
        const simd::GemmF32Epilogue epilogue = fusion_.gemm_epilogue(r, grp * r.group_maps, whole);
        float* result = out + (image * r.maps + grp * r.group_maps) * g.out_size;
        PackedGemmOperands operands{MatrixView{pw + grp * r.group_maps * r.depth, r.depth, 1},
                                    in_tasks ? nullptr : packed,
                                    result,
                                    g.out_size};
        if (gathered) {
          operands.gather_b = gather_panels;
          operands.gather_context = &gather_context;
        } else if (in_tasks) {
          operands.gather_b = pack_b_panels;
          operands.gather_context = &pointwise_context;
        }
        if (narrow) {
          operands.a_transposed = transposed_w_.data() + grp * r.group_maps * r.depth;
          operands.a_transposed_ld = r.group_maps;
        }
        // Other epilogues (residual Z, Sigmoid-like activations): on each register tile as soon as the
        // micro-kernel stored it, still in L1; the same operations on the same values as a second
        // pass over Y would do, so the same bits.
        struct TileContext {
          const ConvFusion* fusion;
          const ConvRun* run;
          const float* y;
        } tile_context{&fusion_, &r, out};
        const PackedGemmTileHook hook{[](const void* context, int64_t, int64_t, int64_t, int rows, int cols, float* c,
                                         int64_t ldc) {
                                        const auto& t = *static_cast<const TileContext*>(context);
                                        for (int row = 0; row < rows; ++row) {
                                          float* y = c + row * ldc;
                                          t.fusion->apply(*t.run, y, y - t.y, cols);
                                        }
                                      },
                                      &tile_context};
        const bool hooked = !whole;
        GemmBlocking blocking = blocking_;
        if (gathered) {
          // Panels per task: about 256 KiB of gathered B (one panel at least), within block_n.
          const int64_t panels_per_task = std::clamp<int64_t>(kGatheredBFloats / (r.depth * nr), 1,
                                                              std::max<int64_t>(1, blocking_.n / nr));
          blocking.n = panels_per_task * nr;
        }
        packed_gemm_hooked(execution, admitted, isa_, blocking, 1, r.group_maps, g.out_size, r.depth,
                           ConvFusion::acts(epilogue) ? &epilogue : nullptr, hooked ? &hook : nullptr,
                           [&](int64_t) { return operands; }, in_tasks);
      }
  }

  std::string_view variant() const override { return last_variant_; }

 private:
  // W^T per group ([depth][group_maps], the narrow tail's A), built once: the weights are constant.
  void transpose_weights(const ConvRun& r) {
    const float* pw = r.w->data<float>();
    const std::array<int64_t, 3> shape{r.maps, r.depth, group_};
    if (transposed_from_ == pw && transposed_shape_ == shape) return;
    transposed_w_.grow(static_cast<std::size_t>(r.maps * r.depth));
    float* t = transposed_w_.data();
    for (int64_t grp = 0; grp < group_; ++grp)
      for (int64_t i = 0; i < r.group_maps; ++i)
        for (int64_t kk = 0; kk < r.depth; ++kk)
          t[grp * r.group_maps * r.depth + kk * r.group_maps + i] = pw[(grp * r.group_maps + i) * r.depth + kk];
    transposed_from_ = pw;
    transposed_shape_ = shape;
  }

  // Stride-1 2-D Convs without an im2col (ImplicitIm2col).
  void run_implicit(KernelExecution& execution, const ConvRun& r, int admitted) {
    const Geometry& g = r.g;
    const ImplicitIm2col m = ImplicitIm2col::of(g, isa_.nr);
    padded_.grow(static_cast<std::size_t>(r.group_channels * m.plane() + m.slack));
    scratch_c_.grow(static_cast<std::size_t>(r.group_maps * m.positions));
    float* padded = padded_.data();
    std::fill(padded + r.group_channels * m.plane(), padded + r.group_channels * m.plane() + m.slack, 0.0f);
    b_rows_.resize(static_cast<std::size_t>(r.depth));
    for (int64_t kk = 0, channel = 0, ky = 0, kx = 0; kk < r.depth; ++kk) {
      b_rows_[static_cast<std::size_t>(kk)] =
          padded + channel * m.plane() + ky * g.dilation[0] * m.padded_w + kx * g.dilation[1];
      if (++kx == g.kernel[1]) {
        kx = 0;
        if (++ky == g.kernel[0]) {
          ky = 0;
          ++channel;
        }
      }
    }
    const float* pw = r.w->data<float>();
    float* out = r.y->data<float>();
    for (int64_t image = 0; image < r.batch; ++image)
      for (int64_t grp = 0; grp < group_; ++grp) {
        const float* planes = r.x->data<float>() + (image * r.channels + grp * r.group_channels) * g.in_size;
        execution.parallel_for(r.group_channels, 1, admitted, [&](int64_t begin, int64_t end) {
          pad_planes(g, m, planes, begin, end, padded);
        });
        bool whole = false;
        const simd::GemmF32Epilogue epilogue = fusion_.gemm_epilogue(r, grp * r.group_maps, whole);
        PackedGemmOperands operands;
        operands.a = MatrixView{pw + grp * r.group_maps * r.depth, r.depth, 1};
        operands.c = scratch_c_.data();
        operands.ldc = m.positions;
        operands.b_rows = b_rows_.data();
        const ImplicitTileCopy copy{&fusion_, &r, out, out + (image * r.maps + grp * r.group_maps) * g.out_size,
                                    g.out_size, g.out[1], m.padded_w, !whole};
        const PackedGemmTileHook hook{&ImplicitTileCopy::copy, &copy};
        packed_gemm_hooked(execution, admitted, isa_, blocking_, 1, r.group_maps, m.positions, r.depth,
                           ConvFusion::acts(epilogue) ? &epilogue : nullptr, &hook, [&](int64_t) { return operands; });
      }
  }

  SpatialAttributes attrs_;
  ConvFusion fusion_;
  int64_t group_ = 1;
  const PackedGemmIsa& isa_;
  GemmBlocking blocking_;
  int64_t minimum_macs_ = kPackedGemmMinimumMacs;
  PackedBuffer patches_;  // the packed im2col panels of one (image, group), reused across runs
  PackedBuffer padded_, scratch_c_;  // the implicit path's padded input and padded-domain result
  std::vector<const float*> b_rows_;  // its implicit im2col rows
  DirectConvWorkspace direct_workspace_;  // the few-channel direct path (stems)
  std::string direct_label_;
  ConvKernel<float> thin_groups_;
  std::string variant_, narrow_variant_, pointwise_variant_, implicit_variant_;
  std::string_view last_variant_;
  std::string label_;  // the depthwise path's variant
  bool constant_weights_ = false;  // W (and B) are initializers: the depthwise path packs them once
  PackedBuffer transposed_w_;      // transpose_weights
  const float* transposed_from_ = nullptr;
  std::array<int64_t, 3> transposed_shape_{};
  DepthwiseWorkspace dw_workspace_;
  DepthwisePaths depthwise_paths_;
  Shape out_shape_;
};

// One spatial axis of a 2-D pool, precomputed per run so that no output or tap divides: for
// output o, the window starts at input coordinate start[o] and taps k in [first[o], last[o]) lie
// inside the input; padded[o] counts the taps inside input or padding (count_include_pad).
struct PoolAxis {
  std::vector<int64_t> start, first, last, padded;
  int64_t interior_begin = 0, interior_end = 0;  // outputs whose every tap lies inside

  // Recomputed in place each run: the vectors keep their capacity, so a repeated shape allocates nothing.
  void reset(const Geometry& g, std::size_t axis) {
    const int64_t in = g.in[axis], k = g.kernel[axis], s = g.stride[axis], d = g.dilation[axis];
    const int64_t n = g.out[axis];
    start.resize(static_cast<std::size_t>(n));
    first.resize(start.size());
    last.resize(start.size());
    padded.resize(start.size());
    interior_begin = n;
    interior_end = n;
    bool seen_interior = false;
    for (int64_t o = 0; o < n; ++o) {
      const auto i = static_cast<std::size_t>(o);
      const int64_t c0 = o * s - g.pad_begin[axis];
      start[i] = c0;
      // First tap at or after coordinate 0, first tap at or after `in` (ceil divisions per output once).
      const int64_t lo = c0 >= 0 ? 0 : std::min(k, (-c0 + d - 1) / d);
      const int64_t hi = in - c0 <= 0 ? 0 : std::min(k, (in - c0 + d - 1) / d);
      first[i] = lo;
      last[i] = std::max(lo, hi);
      const int64_t plo = c0 >= -g.pad_begin[axis] ? 0 : std::min(k, (-g.pad_begin[axis] - c0 + d - 1) / d);
      const int64_t phi = in + g.pad_end[axis] - c0 <= 0 ? 0 : std::min(k, (in + g.pad_end[axis] - c0 + d - 1) / d);
      padded[i] = std::max<int64_t>(0, phi - plo);
      const bool inside = lo == 0 && hi == k;
      if (inside && !seen_interior) {
        interior_begin = o;
        seen_interior = true;
      }
      if (inside) interior_end = o + 1;
    }
    if (!seen_interior) interior_begin = interior_end = 0;
  }
};

// The interior columns' SIMD row (simd/pool_f32.h) of a float32 implementation, or null.
using PoolF32RowFunction = void (*)(const simd::PoolF32Row&);

template <typename T, bool kMax>
class PoolKernel final : public ThresholdKernel {
 public:
  explicit PoolKernel(const KernelCreateInfo& info, PoolF32RowFunction simd_row = nullptr)
      : ThresholdKernel(kDefaultMinimumElements), attrs_(info), simd_row_(simd_row) {
    if (kMax) {
      check_attributes(info, {"auto_pad", "ceil_mode", "dilations", "kernel_shape", "pads", "storage_order", "strides"});
      column_major_ = info.int_attribute("storage_order", 0) != 0;
    } else {
      check_attributes(info, {"auto_pad", "ceil_mode", "count_include_pad", "kernel_shape", "pads", "strides"});
      count_include_pad_ = info.int_attribute("count_include_pad", 0) != 0;
    }
    if (attrs_.kernel_shape.empty())
      throw ModelError(fmt::format("{}: attribute 'kernel_shape' is required", info.node_label()));
  }

  // A SIMD implementation names the portable loop when no interior column ran through its rows
  // (Indices requested, not 2-D, or windows that all reach into the pads).
  std::string_view variant() const override { return simd_row_ != nullptr && !simd_ran_ ? "portable" : ""; }

  void run(KernelExecution& execution) override {
    simd_ran_ = false;
    const Tensor& x = execution.required_input(0);
    const Geometry g = resolve(attrs_, x.shape(), attrs_.kernel_shape, execution.label());
    Shape& out_shape = out_shape_;
    out_shape.assign({x.shape()[0], x.shape()[1]});
    for (std::size_t i = 0; i < g.rank; ++i) out_shape.push_back(g.out[i]);
    Tensor& y = checked_output(execution, 0, ElementTraits<T>::type, out_shape, /*zero=*/false);
    int64_t* indices = nullptr;
    if (kMax && execution.output_count() > 1) indices = checked_output(execution, 1, ElementType::int64, out_shape, /*zero=*/false).data<int64_t>();
    const T* in = x.data<T>();
    T* out = y.data<T>();
    int64_t index_stride[kMaxSpatial];  // index of a coordinate step in the Indices output
    for (std::size_t i = 0, s = 1; i < g.rank; ++i) {
      const std::size_t d = column_major_ ? i : g.rank - 1 - i;
      index_stride[d] = static_cast<int64_t>(s);
      s *= static_cast<std::size_t>(g.in[d]);
    }
    const int64_t n = y.element_count();
    using C = compute_t<T>;
    if (g.rank == 2) {
      run_2d(execution, g, in, out, indices, index_stride, n / std::max<int64_t>(1, g.out[1]),
             admitted(n * g.kernel_size, execution));
      return;
    }
    execution.parallel_for(n, cache_line_grain<T>(), admitted(n * g.kernel_size, execution), [&](int64_t begin, int64_t end) {
      int64_t origin[kMaxSpatial], offsets[kMaxSpatial];
      for (int64_t e = begin; e < end; ++e) {
        const int64_t plane = e / g.out_size;
        window_origin(g, e % g.out_size, origin);
        const T* p = in + plane * g.in_size;
        C best = std::numeric_limits<C>::lowest();
        if constexpr (std::numeric_limits<C>::has_infinity) best = -std::numeric_limits<C>::infinity();
        int64_t best_index = -1;
        C sum = C(0);
        int64_t valid = 0, padded = 0;
        for (int64_t q = 0; q < g.kernel_size; ++q) {
          kernel_offsets(g, q, offsets);
          int64_t offset = 0, index = 0;
          bool inside = true, in_padding = true;
          for (std::size_t i = 0; i < g.rank; ++i) {
            const int64_t c = origin[i] + offsets[i];
            inside = inside && c >= 0 && c < g.in[i];
            in_padding = in_padding && c >= -g.pad_begin[i] && c < g.in[i] + g.pad_end[i];
            offset = offset * g.in[i] + c;
            index += c * index_stride[i];
          }
          padded += in_padding ? 1 : 0;
          if (!inside) continue;
          const C v = load<T>(p[offset]);
          ++valid;
          if constexpr (kMax) {
            if (v > best || best_index < 0) {
              best = v;
              best_index = index;
            }
          } else {
            sum += v;
          }
        }
        if constexpr (kMax) {
          out[e] = store<T>(best);
          if (indices != nullptr) indices[e] = best_index < 0 ? -1 : plane * g.in_size + best_index;
        } else {
          const int64_t divisor = count_include_pad_ ? padded : valid;
          out[e] = store<T>(divisor == 0 ? std::numeric_limits<C>::quiet_NaN() : sum / static_cast<C>(divisor));
        }
      }
    });
  }

 private:
  // 2-D windows over precomputed per-axis ranges (PoolAxis), parallel over (plane, output row).
  // The same taps in the same order (rows, then columns) and the same comparisons and sums as the
  // generic loop above, so results are identical; interior columns run tap by tap over the whole
  // interior span, a loop the compiler vectorises along W.
  void run_2d(KernelExecution& execution, const Geometry& g, const T* in, T* out, int64_t* indices,
              const int64_t* index_stride, int64_t lines, int threads) {
    using C = compute_t<T>;
    rows_.reset(g, 0);
    cols_.reset(g, 1);
    const PoolAxis& rows = rows_;
    const PoolAxis& cols = cols_;
    acc_.ensure(static_cast<std::size_t>(std::max(1, execution.threads())) + 1);
    for (std::size_t i = 0; i < acc_.size(); ++i) acc_[i].resize(static_cast<std::size_t>(g.out[1]));
    const int64_t out_h = g.out[0], out_w = g.out[1], in_w = g.in[1];
    const int64_t sx = g.stride[1], dy = g.dilation[0], dx = g.dilation[1];
    // The SIMD rows take the interior columns where there are any (and no Indices).
    PoolF32RowFunction simd_row = nullptr;
    if constexpr (std::is_same_v<T, float>) {
      if (indices == nullptr && cols.interior_begin < cols.interior_end)
        for (std::size_t r = 0; r < rows.first.size() && simd_row == nullptr; ++r)
          if (rows.last[r] > rows.first[r]) simd_row = simd_row_;
    }
    simd_ran_ = simd_row != nullptr && lines > 0;
    // simd/pool_f32.h's lead: output column 0 alone reaches one column into the left pad.
    const bool simd_lead_column = kMax && simd_row != nullptr && sx == 2 && dx == 1 &&
                                  (g.kernel[1] == 2 || g.kernel[1] == 3) && cols.interior_begin == 1 &&
                                  cols.start[0] == -1 && cols.last[0] == g.kernel[1];
    execution.parallel_for(lines, 1, threads, [&](int64_t begin, int64_t end) {
      typename ScratchSlots<std::vector<C>>::Lease slot(acc_);
      std::vector<C>& acc = *slot;
      for (int64_t line = begin; line < end; ++line) {
        const int64_t plane = line / out_h, oy = line % out_h;
        const auto r = static_cast<std::size_t>(oy);
        const T* p = in + plane * g.in_size;
        T* o = out + line * out_w;
        const int64_t ky0 = rows.first[r], ky1 = rows.last[r], iy0 = rows.start[r];
        // Interior columns, tap-major (only without Indices and with a non-empty window).
        int64_t ib = cols.interior_begin, ie = cols.interior_end;
        if (indices != nullptr || ky1 <= ky0) ib = ie = 0;
        if (ib < ie && simd_row != nullptr) {
          if constexpr (std::is_same_v<T, float>) {
            const float divisor =
                static_cast<float>(count_include_pad_ ? rows.padded[r] * g.kernel[1] : (ky1 - ky0) * g.kernel[1]);
            const T* row = p + (iy0 + ky0 * dy) * in_w;
            // MaxPool 3x3 / 2x2 s2 with a left pad of one: the edge column joins the SIMD row.
            const int64_t lead = simd_lead_column ? 1 : 0;
            ib -= lead;
            simd_row(simd::PoolF32Row{row + (cols.start[static_cast<std::size_t>(ib)] + lead), ky1 - ky0,
                                      dy * in_w, g.kernel[1], dx, sx, ie - ib, o + ib, kMax, divisor, lead});
          }
        } else if (ib < ie) {
          bool first_tap = true;
          for (int64_t ky = ky0; ky < ky1; ++ky) {
            const T* row = p + (iy0 + ky * dy) * in_w;
            for (int64_t kx = 0; kx < g.kernel[1]; ++kx) {
              const T* src = row + cols.start[static_cast<std::size_t>(ib)] + kx * dx;
              C* a = acc.data() + ib;
              const int64_t count = ie - ib;
              // The stride as a constant where it is 1 or 2, so that the compiler vectorises.
              auto tap = [&](auto stride) {
                const int64_t step = stride() > 0 ? stride() : sx;
                if (first_tap) {
                  for (int64_t j = 0; j < count; ++j) a[j] = static_cast<C>(load<T>(src[j * step]));
                  if constexpr (!kMax)
                    for (int64_t j = 0; j < count; ++j) a[j] = C(0) + a[j];
                } else if constexpr (kMax) {
                  for (int64_t j = 0; j < count; ++j) {
                    const C v = load<T>(src[j * step]);
                    a[j] = v > a[j] ? v : a[j];
                  }
                } else {
                  for (int64_t j = 0; j < count; ++j) a[j] += static_cast<C>(load<T>(src[j * step]));
                }
              };
              if (sx == 1) tap(std::integral_constant<int64_t, 1>{});
              else if (sx == 2) tap(std::integral_constant<int64_t, 2>{});
              else tap(std::integral_constant<int64_t, 0>{});
              first_tap = false;
            }
          }
          const C divisor =
              static_cast<C>(count_include_pad_ ? rows.padded[r] * g.kernel[1] : (ky1 - ky0) * g.kernel[1]);
          for (int64_t j = ib; j < ie; ++j) {
            if constexpr (kMax) o[j] = store<T>(acc[static_cast<std::size_t>(j)]);
            else o[j] = store<T>(acc[static_cast<std::size_t>(j)] / divisor);
          }
        }
        // The other columns (and every column with Indices): one window at a time.
        for (int64_t ox = 0; ox < out_w; ++ox) {
          if (ox == ib && ib < ie) {
            ox = ie - 1;
            continue;
          }
          const auto c = static_cast<std::size_t>(ox);
          const int64_t kx0 = cols.first[c], kx1 = cols.last[c], ix0 = cols.start[c];
          C best = std::numeric_limits<C>::lowest();
          if constexpr (std::numeric_limits<C>::has_infinity) best = -std::numeric_limits<C>::infinity();
          int64_t best_index = -1;
          C sum = C(0);
          for (int64_t ky = ky0; ky < ky1; ++ky) {
            const int64_t iy = iy0 + ky * dy;
            const T* row = p + iy * in_w;
            for (int64_t kx = kx0; kx < kx1; ++kx) {
              const int64_t ix = ix0 + kx * dx;
              const C v = load<T>(row[ix]);
              if constexpr (kMax) {
                if (v > best || best_index < 0) {
                  best = v;
                  best_index = iy * index_stride[0] + ix * index_stride[1];
                }
              } else {
                sum += v;
              }
            }
          }
          if constexpr (kMax) {
            o[ox] = store<T>(best);
            if (indices != nullptr) indices[line * out_w + ox] = best_index < 0 ? -1 : plane * g.in_size + best_index;
          } else {
            const int64_t valid = (ky1 - ky0) * (kx1 - kx0);
            const int64_t divisor = count_include_pad_ ? rows.padded[r] * cols.padded[c] : valid;
            o[ox] = store<T>(divisor == 0 ? std::numeric_limits<C>::quiet_NaN() : sum / static_cast<C>(divisor));
          }
        }
      }
    });
  }

  SpatialAttributes attrs_;
  bool column_major_ = false;
  bool count_include_pad_ = false;
  // run_2d's per-axis windows and per-participant accumulator rows, kept across runs.
  PoolAxis rows_, cols_;
  Shape out_shape_;
  ScratchSlots<std::vector<compute_t<T>>> acc_;
  PoolF32RowFunction simd_row_ = nullptr;
  bool simd_ran_ = false;  // the last run's interior columns went through simd_row_
};

// Calibration: 3x3 windows, stride 1, pads 1 over [1, c, 16, 16]; the threshold counts output
// elements times the window size.
CalibrationWorkloadFunction pool_workload(const std::string& op_type, ElementType type) {
  return [op_type, type](int64_t work, int, uint32_t seed) {
    const int64_t c = std::max<int64_t>(1, work / (256 * 9));
    return one_node_workload(op_type, 12, "kernel_shape = [3, 3], pads = [1, 1, 1, 1]",
                             {{"x", random_tensor(type, {1, c, 16, 16}, seed)}}, {{"y", type, {1, c, 16, 16}}},
                             c * 256 * 9);
  };
}

// Calibration: a 3x3 "same" convolution over [1, c, 8, 8] with c output maps (576 c^2 MACs).
CalibrationWorkloadFunction conv_workload(ElementType type) {
  return [type](int64_t macs, int, uint32_t seed) {
    const auto c = std::max<int64_t>(1, static_cast<int64_t>(std::llround(std::sqrt(static_cast<double>(macs) / 576.0))));
    return one_node_workload("Conv", 11, "pads = [1, 1, 1, 1]",
                             {{"x", random_tensor(type, {1, c, 8, 8}, seed)}, {"w", random_tensor(type, {c, c, 3, 3}, seed + 1)}},
                             {{"y", type, {1, c, 8, 8}}}, 576 * c * c);
  };
}

// Calibration of FusedConv: conv_workload's convolution with a residual and HardSwish (the
// costliest common epilogue), the model importing the fused domain.
CalibrationWorkloadFunction fused_conv_workload() {
  return [](int64_t macs, int, uint32_t seed) {
    constexpr ElementType type = ElementType::float32;
    const auto c = std::max<int64_t>(1, static_cast<int64_t>(std::llround(std::sqrt(static_cast<double>(macs) / 576.0))));
    CalibrationWorkload w = one_node_workload(
        "FusedConv", 11, "pads = [1, 1, 1, 1], activation = \"HardSwish\"",
        {{"x", random_tensor(type, {1, c, 8, 8}, seed)},
         {"w", random_tensor(type, {c, c, 3, 3}, seed + 1)},
         {"b", random_tensor(type, {c}, seed + 2)},
         {"z", random_tensor(type, {1, c, 8, 8}, seed + 3)}},
        {{"y", type, {1, c, 8, 8}}}, 576 * c * c);
    // The domain-qualified op and its opset import (one_node_workload writes the default domain's).
    const auto replace = [&](std::string_view from, std::string_view to) {
      const auto at = w.model_text.find(from);
      if (at != std::string::npos) w.model_text.replace(at, from.size(), to);
    };
    replace("[\"\" : 11]", fmt::format("[\"\" : 11, \"{}\" : 1]", kFusedDomain));
    replace("= FusedConv", fmt::format("= {}.FusedConv", kFusedDomain));
    return w;
  };
}

// Schema of Conv / FusedConv on a packed ISA: the GEMM's, then where depthwise planes run which
// loop (DepthwisePaths). Tuning ABI: avx512 3 (2 had only the CHW widths and no
// gemm.row_order_b_floats, 1 no depthwise parameters), avx2 2 (1 had neither).
TuningSchema packed_conv_schema(const PackedGemmIsa& isa, const std::string& op, const GemmBlocking& defaults) {
  const bool chw = std::string_view(isa.name) == "avx512";
  TuningSchema schema = packed_gemm_schema(elementwise_key(op, ElementType::float32, chw ? 3 : 2, isa.name), defaults);
  const DepthwisePaths paths;
  constexpr const char* kCompared =
      " (same results, other speed). Compared by calibrate --model on a model's depthwise nodes (Conv's own "
      "calibration cases are dense and do not exercise it).";
  if (chw) {
    schema.parameters.push_back(tile_parameter(
        "depthwise.chw_s1_from_width", paths.chw_s1_from_width, {16, 24, 32, 40, 48, 64, 96},
        std::string("Output width from which depthwise 3x3 stride-1 planes run straight from NCHW; narrower planes "
                    "run channel-blocked") + kCompared));
    schema.parameters.push_back(tile_parameter(
        "depthwise.chw_s2_from_width", paths.chw_s2_from_width, {8, 10, 12, 14, 16, 24, 32},
        std::string("Output width from which depthwise 3x3 stride-2 planes run straight from NCHW; narrower planes "
                    "run channel-blocked") + kCompared));
  }
  schema.parameters.push_back(tile_parameter(
      "depthwise.rows_from_pixels", paths.rows_from_pixels, {2500, 5000, 10000, 20000, 40000, 80000},
      std::string("Output pixels per plane from which stride-1 depthwise planes that do not run from NCHW keep the "
                  "row kernels instead of the channel-blocked loop") + kCompared));
  schema.parameters.push_back(tile_parameter(
      "depthwise.flat_below_width", paths.flat_below_width, {0, 16, 32, 64, 128, 256},
      std::string("Output width below which a stride-1 depthwise plane on the row kernels runs as one flat row over "
                  "its padded pitch; 0: never") + kCompared));
  return schema;
}

// Conv float32 on one ISA's packed GEMM driver, preferred over the portable kernel where the host
// has the features.
void add_packed_conv(KernelTable& table, const PackedGemmIsa* isa, std::string (*needs)(const CpuFeatures&),
                     const GemmBlocking& defaults, bool fused) {
  if (isa == nullptr) return;
  constexpr ElementType type = ElementType::float32;
  const std::string op = fused ? "FusedConv" : "Conv";
  KernelDef def = make_def(op, {1}, type, packed_conv_schema(*isa, op, defaults));
  if (fused) def.domain = std::string(kFusedDomain);
  def.implementation = isa->name;
  def.unavailable_reason = needs;
  def.create = [isa, defaults, fused](const KernelCreateInfo& info) -> std::unique_ptr<Kernel> {
    return std::make_unique<PackedConvKernel>(info, *isa, defaults, fused);
  };
  def.calibration_workload = fused ? fused_conv_workload() : conv_workload(type);
  table.add(std::move(def));
}

}  // namespace

void register_conv_pool_kernels(KernelTable& table) {
  // Preference order for Conv float32: avx512, avx2, portable.
  for (bool fused : {false, true}) {
    // AVX-512: depths up to 512 in one k-block. A second k-block stores C and reloads it, and
    // runs the epilogue-capable micro-kernel over it: 1x1 Convs 384 -> 384 maps on 10x10 and
    // 480 -> 480 on 3x80 ran ~2% faster in one block, the real models unchanged (bench/RESULTS.md).
    // AVX2 keeps 256 (not measured on an AVX2 host).
    add_packed_conv(table, packed_gemm_avx512(), needs_avx512, GemmBlocking{96, 512, 256}, fused);
    add_packed_conv(table, packed_gemm_avx2(), needs_avx2_fma, GemmBlocking{96, 256, 256}, fused);
  }
  {
    // FusedConv (kernels/epilogue.h): Y = activation(Conv(X, W, B) + Z), float32.
    constexpr ElementType type = ElementType::float32;
    KernelDef fused = make_def("FusedConv", {1}, type, tiled_schema(elementwise_key("FusedConv", type, 1)));
    fused.domain = std::string(kFusedDomain);
    fused.create = [](const KernelCreateInfo& info) -> std::unique_ptr<Kernel> {
      return std::make_unique<ConvKernel<float>>(info, true);
    };
    fused.calibration_workload = fused_conv_workload();
    table.add(std::move(fused));
  }
#if defined(ONNX_LIGHT_X86_SIMD)
  {
    // Pooling float32 on AVX-512 ahead of the portable loop: the same windows and edge columns, the
    // interior columns 16 outputs at a time (simd/pool_f32.h), bit-identical results.
    constexpr ElementType type = ElementType::float32;
    KernelDef average = make_def("AveragePool", {1}, type,
                                 parallel_threshold_schema(elementwise_key("AveragePool", type, 1, "avx512"),
                                                           kDefaultMinimumElements));
    average.implementation = "avx512";
    average.unavailable_reason = needs_avx512;
    average.create = [](const KernelCreateInfo& info) -> std::unique_ptr<Kernel> {
      return std::make_unique<PoolKernel<float, false>>(info, simd::pool_f32_row_avx512);
    };
    average.calibration_workload = pool_workload("AveragePool", type);
    table.add(std::move(average));
    KernelDef max = make_def("MaxPool", {1}, type,
                             parallel_threshold_schema(elementwise_key("MaxPool", type, 1, "avx512"), kDefaultMinimumElements));
    max.implementation = "avx512";
    max.unavailable_reason = needs_avx512;
    max.create = [](const KernelCreateInfo& info) -> std::unique_ptr<Kernel> {
      return std::make_unique<PoolKernel<float, true>>(info, simd::pool_f32_row_avx512);
    };
    max.output_types = [](const KernelCreateInfo&) { return std::vector<ElementType>{type, ElementType::int64}; };
    max.calibration_workload = pool_workload("MaxPool", type);
    table.add(std::move(max));
  }
#endif
  for_each_type<float, double, Float16>([&](auto t) {
    using T = decltype(t);
    constexpr ElementType type = ElementTraits<T>::type;
    KernelDef conv = make_def("Conv", {1}, type, tiled_schema(elementwise_key("Conv", type, 1)));
    conv.create = [](const KernelCreateInfo& info) -> std::unique_ptr<Kernel> { return std::make_unique<ConvKernel<T>>(info); };
    conv.calibration_workload = conv_workload(type);
    table.add(std::move(conv));
    KernelDef average = make_def("AveragePool", {1}, type,
                                 parallel_threshold_schema(elementwise_key("AveragePool", type, 1), kDefaultMinimumElements));
    average.create = [](const KernelCreateInfo& info) -> std::unique_ptr<Kernel> {
      return std::make_unique<PoolKernel<T, false>>(info);
    };
    average.calibration_workload = pool_workload("AveragePool", type);
    table.add(std::move(average));
  });
  for_each_type<float, double, Float16, int8_t, uint8_t>([&](auto t) {
    using T = decltype(t);
    constexpr ElementType type = ElementTraits<T>::type;
    KernelDef def = make_def("MaxPool", {1}, type,
                             parallel_threshold_schema(elementwise_key("MaxPool", type, 1), kDefaultMinimumElements));
    def.create = [](const KernelCreateInfo& info) -> std::unique_ptr<Kernel> {
      return std::make_unique<PoolKernel<T, true>>(info);
    };
    def.output_types = [](const KernelCreateInfo&) {
      return std::vector<ElementType>{ElementTraits<T>::type, ElementType::int64};
    };
    def.calibration_workload = pool_workload("MaxPool", type);
    table.add(std::move(def));
  });
}

}  // namespace onnx_light::runtime::kernels
