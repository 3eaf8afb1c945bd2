// ConvTranspose over 1-3 spatial dims (X [N, C, ...], W [C, M/group, k...], optional B [M]):
// strides, dilations, pads, output_padding, output_shape, auto_pad and group as the ONNX
// operator defines them. Two implementations:
//   - portable (float32, float64, float16): a gather per output element over per-axis tap
//     tables (which (kernel, input) pairs land on each output coordinate), exact for every case;
//   - "avx512"/"avx2" (float32): per (image, group), over all maps or per block of maps whose col
//     stays in L2 (each block multiplied and added by one thread), the packed GEMM driver computes
//     col = W_g^T [M/g * taps, C/g] x X_g [C/g, H*W], then col2im adds col's rows into Y over
//     the bias (output row by output row, in parallel; taps in ascending order, so results do not
//     depend on the thread count). A constant W is transposed to row-major W^T at creation
//     (W from an input, at every run into a kept buffer).
// Internally every geometry is 3-D: a 1-D or 2-D problem gets leading axes of size 1.
#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <cstring>
#include <new>
#include <limits>
#include <optional>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "checked_math.h"
#include "kernels/element_traits.h"
#include "kernels/elementwise.h"
#include "kernels/isa_requirements.h"
#include "kernels/kernel_families.h"
#include "kernels/kernel_util.h"
#include "kernels/packed_gemm.h"
#include "kernels/scratch_slots.h"
#include "kernels/spatial_attributes.h"
#include "onnx_light/runtime/error.h"

namespace onnx_light::runtime::kernels {

namespace {

int64_t floor_div(int64_t a, int64_t b) {  // b > 0
  const int64_t q = a / b;
  return (a % b != 0 && a < 0) ? q - 1 : q;
}

// The attributes, validated once at creation (lengths against the input's rank at run time): the
// spatial ones Conv has, plus output_padding, output_shape and group.
struct TransposeAttributes : SpatialAttributes {
  std::vector<int64_t> output_padding, output_shape;
  int64_t group = 1;

  explicit TransposeAttributes(const KernelCreateInfo& info) : SpatialAttributes(info) {
    check_attributes(info, {"auto_pad", "dilations", "group", "kernel_shape", "output_padding", "output_shape", "pads",
                            "strides"});
    const std::string label = info.node_label();
    output_padding = info.ints_attribute("output_padding");
    output_shape = info.ints_attribute("output_shape");
    group = info.int_attribute("group", 1);
    if (group < 1) throw ModelError(fmt::format("{}: attribute 'group' = {} must be positive", label, group));
    not_negative(label, output_padding, "output_padding");
    not_negative(label, output_shape, "output_shape");
    // Same-length attributes where two are given (the rank itself is known at run time).
    auto same_length = [&](const std::vector<int64_t>& a, std::string_view an, const std::vector<int64_t>& b,
                           std::string_view bn) {
      if (!a.empty() && !b.empty() && a.size() != b.size())
        throw ModelError(fmt::format("{}: attributes '{}' = {} and '{}' = {} have different lengths", label, an, a, bn, b));
    };
    same_length(kernel_shape, "kernel_shape", strides, "strides");
    same_length(kernel_shape, "kernel_shape", dilations, "dilations");
    same_length(strides, "strides", dilations, "dilations");
    same_length(strides, "strides", output_padding, "output_padding");
    // An output_padding as large as both the stride and the dilation would add rows that no
    // input reaches through the last tap (the rule ONNX Runtime enforces too).
    for (std::size_t i = 0; i < output_padding.size(); ++i) {
      const int64_t s = i < strides.size() ? strides[i] : 1, d = i < dilations.size() ? dilations[i] : 1;
      if (output_padding[i] >= s && output_padding[i] >= d)
        throw ModelError(fmt::format("{}: attribute 'output_padding' = {} must be smaller than the stride ({}) or the "
                                     "dilation ({}) of its axis",
                                     label, output_padding, s, d));
    }
  }
};

// Resolved geometry of one run, 3-D (leading axes of size 1 for 1-D and 2-D).
struct TransposeGeometry {
  std::size_t rank = 0;  // the model's spatial dims
  std::array<int64_t, kMaxSpatial> in{}, kernel{}, stride{}, dilation{}, pad{}, out{};  // pad: at the beginning
  int64_t in_size = 1, out_size = 1, kernel_size = 1;
  bool operator==(const TransposeGeometry&) const = default;
};

// One run, checked: the geometry, the operands and the output (already shaped).
struct TransposeRun {
  TransposeGeometry g;
  int64_t batch = 0, channels = 0, maps = 0, group_channels = 0, group_maps = 0;
  const Tensor* x = nullptr;
  const Tensor* w = nullptr;
  const Tensor* bias = nullptr;
  Tensor* y = nullptr;
};

// Output size and leading pad of one axis (ONNX ConvTranspose): the full output of input `in` is
// stride * (in - 1) + output_padding + (kernel - 1) * dilation + 1 positions; pads crop it. With
// output_shape or SAME_* the total crop is full - out, split as ONNX specifies with floor
// division (SAME_UPPER: the smaller half first; otherwise the larger half first); it may be
// negative, then the output extends past what any input reaches (those positions get the bias).
void resolve_axis(const TransposeAttributes& a, std::size_t i, std::size_t rank, int64_t in, int64_t kernel,
                  TransposeGeometry& g, std::size_t axis, const std::string& label) {
  const int64_t s = a.strides.empty() ? 1 : a.strides[i];
  const int64_t d = a.dilations.empty() ? 1 : a.dilations[i];
  const int64_t op = a.output_padding.empty() ? 0 : a.output_padding[i];
  const int64_t extent = checked_add(checked_mul(kernel - 1, d, "a dilated kernel extent"), 1, "a dilated kernel extent");
  const int64_t full = checked_add(
      checked_add(checked_mul(s, checked_sub(in, 1, "an input size less 1"), "a strided input extent"), op,
                  "a transposed output size"),
      extent, "a transposed output size");
  int64_t out = 0, begin = 0;
  const bool same = a.auto_pad == "SAME_UPPER" || a.auto_pad == "SAME_LOWER";
  if (!a.output_shape.empty() || same) {
    out = !a.output_shape.empty() ? a.output_shape[a.output_shape.size() - rank + i]
                                  : checked_mul(in, s, "an input size times the stride");
    const int64_t total = checked_sub(full, out, "a total padding");
    begin = a.auto_pad == "SAME_UPPER" ? floor_div(total, 2) : total - floor_div(total, 2);
  } else {
    const int64_t pad_begin = a.auto_pad == "VALID" || a.pads.empty() ? 0 : a.pads[i];
    const int64_t pad_end = a.auto_pad == "VALID" || a.pads.empty() ? 0 : a.pads[i + rank];
    out = checked_sub(checked_sub(full, pad_begin, "a transposed output size"), pad_end, "a transposed output size");
    if (out < 0)
      throw InputError(fmt::format("{}: pads {}+{} are larger than spatial dim {}'s full output of {} (input {}, "
                                   "stride {}, kernel extent {}, output_padding {})",
                                   label, pad_begin, pad_end, i, full, in, s, extent, op));
    begin = pad_begin;
  }
  g.in[axis] = in;
  g.kernel[axis] = kernel;
  g.stride[axis] = s;
  g.dilation[axis] = d;
  g.pad[axis] = begin;
  g.out[axis] = out;
}

// Checks the operands, resolves the geometry and shapes Y (`out_shape` is the caller's buffer, so
// that repeated runs allocate nothing).
TransposeRun check_transpose(KernelExecution& execution, const TransposeAttributes& attrs, ElementType type,
                             Shape& out_shape) {
  TransposeRun r;
  const Tensor& x = execution.required_input(0);
  const Tensor& w = execution.required_input(1);
  const Tensor* bias = execution.input(2);
  const std::string& label = execution.label();
  check_input_type(execution, 1, w, type);
  if (bias != nullptr) check_input_type(execution, 2, *bias, type);
  if (x.rank() < 3 || x.rank() - 2 > kMaxSpatial || w.rank() != x.rank())
    throw InputError(fmt::format("{}: X {} and W {} must have the same rank, with 1 to {} spatial dims", label,
                                 shape_to_string(x.shape()), shape_to_string(w.shape()), kMaxSpatial));
  const std::size_t rank = x.rank() - 2;
  r.batch = x.shape()[0];
  r.channels = x.shape()[1];
  r.group_maps = w.shape()[1];
  const int64_t group = attrs.group;
  if (w.shape()[0] != r.channels || r.channels % group != 0)
    throw InputError(fmt::format("{}: W {} must have X's {} channels in dim 0, a multiple of group = {} (X {})", label,
                                 shape_to_string(w.shape()), r.channels, group, shape_to_string(x.shape())));
  r.group_channels = r.channels / group;
  r.maps = checked_mul(r.group_maps, group, "the output channels");
  auto fits = [&](const std::vector<int64_t>& v, std::size_t size, std::string_view name) {
    if (!v.empty() && v.size() != size)
      throw InputError(fmt::format("{}: attribute '{}' has {} values but the input {} has {} spatial dims", label, name,
                                   v.size(), shape_to_string(x.shape()), rank));
  };
  fits(attrs.strides, rank, "strides");
  fits(attrs.dilations, rank, "dilations");
  fits(attrs.pads, 2 * rank, "pads");
  fits(attrs.output_padding, rank, "output_padding");
  if (!attrs.output_shape.empty() && attrs.output_shape.size() != rank && attrs.output_shape.size() != rank + 2)
    throw InputError(fmt::format("{}: attribute 'output_shape' = {} has neither {} (spatial) nor {} values for X {}",
                                 label, attrs.output_shape, rank, rank + 2, shape_to_string(x.shape())));
  if (!attrs.kernel_shape.empty() &&
      (attrs.kernel_shape.size() != rank || !std::equal(attrs.kernel_shape.begin(), attrs.kernel_shape.end(), w.shape().begin() + 2)))
    throw InputError(fmt::format("{}: kernel_shape {} does not match W {}", label, attrs.kernel_shape,
                                 shape_to_string(w.shape())));
  if (bias != nullptr && (bias->rank() != 1 || bias->shape()[0] != r.maps))
    throw InputError(fmt::format("{}: B {} must have shape [{}]", label, shape_to_string(bias->shape()), r.maps));
  TransposeGeometry& g = r.g;
  g.rank = rank;
  for (std::size_t axis = 0; axis < kMaxSpatial - rank; ++axis) {
    g.in[axis] = g.kernel[axis] = g.stride[axis] = g.dilation[axis] = g.out[axis] = 1;
    g.pad[axis] = 0;
  }
  for (std::size_t i = 0; i < rank; ++i) {
    const std::size_t axis = kMaxSpatial - rank + i;
    resolve_axis(attrs, i, rank, x.shape()[i + 2], w.shape()[i + 2], g, axis, label);
    g.in_size = checked_mul(g.in_size, g.in[axis], "the input's spatial size");
    g.out_size = checked_mul(g.out_size, g.out[axis], "the output's spatial size");
    g.kernel_size = checked_mul(g.kernel_size, g.kernel[axis], "the kernel's size");
  }
  const bool same = out_shape.size() == rank + 2 && out_shape[0] == r.batch && out_shape[1] == r.maps &&
                    [&] {
                      for (std::size_t i = 0; i < rank; ++i)
                        if (out_shape[i + 2] != g.out[kMaxSpatial - rank + i]) return false;
                      return true;
                    }();
  if (!same) {
    out_shape.assign({r.batch, r.maps});
    for (std::size_t i = 0; i < rank; ++i) out_shape.push_back(g.out[kMaxSpatial - rank + i]);
  }
  // Every path writes every element of Y: no zero-fill first.
  r.y = &checked_output(execution, 0, type, out_shape, /*zero=*/false);
  r.x = &x;
  r.w = &w;
  r.bias = bias;
  return r;
}

// Multiply-accumulates of a run (for the parallel threshold); saturates rather than overflows.
int64_t transpose_macs(const TransposeRun& r) {
  int64_t macs = 0;
  const int64_t factors[] = {r.batch, r.maps, r.group_channels, r.g.in_size, r.g.kernel_size};
  if (!checked_math_detail::exact_product(factors, macs)) return std::numeric_limits<int64_t>::max();
  return macs;
}

// Per-axis tap tables of the gather: for output coordinate o of an axis, the (kernel tap, input
// coordinate) pairs with input * stride + tap * dilation - pad = o, taps ascending.
struct TapTables {
  TransposeGeometry g;  // the geometry they were built for
  bool built = false;
  std::array<std::vector<int64_t>, kMaxSpatial> begin, tap, input;

  void build(const TransposeGeometry& geometry) {
    if (built && g == geometry) return;
    g = geometry;
    for (std::size_t a = 0; a < kMaxSpatial; ++a) {
      begin[a].assign(1, 0);
      tap[a].clear();
      input[a].clear();
      for (int64_t o = 0; o < g.out[a]; ++o) {
        for (int64_t k = 0; k < g.kernel[a]; ++k) {
          const int64_t f = o + g.pad[a] - k * g.dilation[a];  // no overflow: all were checked
          if (f < 0 || f % g.stride[a] != 0) continue;
          const int64_t i = f / g.stride[a];
          if (i >= g.in[a]) continue;
          tap[a].push_back(k);
          input[a].push_back(i);
        }
        begin[a].push_back(static_cast<int64_t>(tap[a].size()));
      }
    }
    built = true;
  }
};

TuningSchema portable_schema(TuningKey key) {
  return TuningSchema{std::move(key),
                      {threshold_parameter("parallel.minimum_macs", kDefaultMinimumMacs, int64_t{1} << 50,
                                           "Smallest multiply-accumulate count run in parallel; smaller problems run "
                                           "on one thread.")}};
}

// The portable reference: each output element gathers its taps (channels outer, then taps in
// ascending order per axis), accumulating in compute_t<T>, then adds the bias. Parallel over output
// rows (one thread per row), so results do not depend on the thread count.
template <typename T>
class PortableConvTransposeKernel final : public Kernel {
 public:
  explicit PortableConvTransposeKernel(const KernelCreateInfo& info) : attrs_(info) {}
  void apply_tuning(const TuningValues& values) override {
    read_tuning(values, "parallel.minimum_macs", minimum_macs_);
  }

  void run(KernelExecution& execution) override {
    const TransposeRun r = check_transpose(execution, attrs_, ElementTraits<T>::type, out_shape_);
    if (r.y->element_count() == 0) return;
    const TransposeGeometry& g = r.g;
    try {
      tables_.build(g);
    } catch (const std::bad_alloc&) {
      tables_ = TapTables{};
      throw InputError(fmt::format("{}: cannot allocate the tap tables for output {}", execution.label(),
                                   shape_to_string(r.y->shape())));
    }
    using C = compute_t<T>;
    const T* px = r.x->data<T>();
    const T* pw = r.w->data<T>();
    const T* pb = r.bias != nullptr ? r.bias->data<T>() : nullptr;
    T* out = r.y->data<T>();
    const int64_t rows_per_map = g.out[0] * g.out[1];
    const int64_t lines = r.batch * r.maps * rows_per_map;
    const int64_t map_weights = r.group_maps * g.kernel_size;  // W elements per input channel
    const int threads = execution.admitted_threads(transpose_macs(r), minimum_macs_);
    const TapTables& t = tables_;
    execution.parallel_for(lines, 1, threads, [&](int64_t begin, int64_t end) {
      for (int64_t line = begin; line < end; ++line) {
        const int64_t row = line % rows_per_map, plane = line / rows_per_map;
        const int64_t m = plane % r.maps, image = plane / r.maps;
        const int64_t grp = m / r.group_maps, mg = m % r.group_maps;
        const int64_t o0 = row / g.out[1], o1 = row % g.out[1];
        const T* xg = px + (image * r.channels + grp * r.group_channels) * g.in_size;
        const T* wg = pw + grp * r.group_channels * map_weights + mg * g.kernel_size;
        const C b = pb != nullptr ? static_cast<C>(load<T>(pb[m])) : C(0);
        T* y = out + line * g.out[2];
        for (int64_t o2 = 0; o2 < g.out[2]; ++o2) {
          C acc = C(0);
          for (int64_t c = 0; c < r.group_channels; ++c) {
            const T* xc = xg + c * g.in_size;
            const T* wc = wg + c * map_weights;
            for (int64_t a = t.begin[0][o0]; a < t.begin[0][o0 + 1]; ++a)
              for (int64_t e = t.begin[1][o1]; e < t.begin[1][o1 + 1]; ++e) {
                const int64_t x_row = (t.input[0][a] * g.in[1] + t.input[1][e]) * g.in[2];
                const int64_t w_row = (t.tap[0][a] * g.kernel[1] + t.tap[1][e]) * g.kernel[2];
                for (int64_t f = t.begin[2][o2]; f < t.begin[2][o2 + 1]; ++f)
                  acc += static_cast<C>(load<T>(xc[x_row + t.input[2][f]])) *
                         static_cast<C>(load<T>(wc[w_row + t.tap[2][f]]));
              }
          }
          y[o2] = store<T>(acc + b);
        }
      }
    });
  }

 private:
  TransposeAttributes attrs_;
  int64_t minimum_macs_ = kDefaultMinimumMacs;
  Shape out_shape_;
  TapTables tables_;
};

// The inputs i of one axis whose tap k lands inside the output: [lo, hi).
struct InputRange {
  int64_t lo, hi;
};
InputRange tap_inputs(const TransposeGeometry& g, std::size_t a, int64_t k) {
  const int64_t shift = k * g.dilation[a] - g.pad[a];  // output = i * stride + shift
  int64_t lo = std::max<int64_t>(0, floor_div(-shift + g.stride[a] - 1, g.stride[a]));
  int64_t hi = std::min<int64_t>(g.in[a], floor_div(g.out[a] - 1 - shift, g.stride[a]) + 1);
  return {lo, std::max(lo, hi)};
}

// Adds one map's col rows (kernel_size rows of in_size each) into output rows [row_begin, row_end)
// of its plane over the bias. Per output row: the bias, then each tap (ascending) whose leading
// coordinates reach it; along the last axis, a tap adds to every stride-th element.
constexpr int64_t kPhaseFloats = 4096;  // col2im's phase buffer, on the stack

void col2im_rows(const TransposeGeometry& g, const float* col, float bias, float* plane, int64_t row_begin, int64_t row_end) {
  const int64_t out_w = g.out[2], in_w = g.in[2], k_w = g.kernel[2], s_w = g.stride[2];
  // Whether one tap of the last axis covers a whole output row (k == stride, no dilation or pads).
  const bool exact_w = k_w == s_w && g.dilation[2] == 1 && g.pad[2] == 0 && out_w == in_w * s_w;
  // Per tap of the last axis (at most 64, checked by the caller): its inputs inside the row, and
  // its first output as (q, r): o = (i + q) * stride + r.
  InputRange ranges[64];
  int64_t tap_q[64], tap_r[64];
  for (int64_t k = 0; k < k_w; ++k) {
    ranges[k] = tap_inputs(g, 2, k);
    const int64_t c = k * g.dilation[2] - g.pad[2];
    tap_q[k] = floor_div(c, s_w);
    tap_r[k] = c - tap_q[k] * s_w;
  }
  for (int64_t row = row_begin; row < row_end; ++row) {
    const int64_t o0 = row / g.out[1], o1 = row % g.out[1];
    float* y = plane + row * out_w;
    // The (tap, input) pairs of the two leading axes reaching this row: at most kernel[a] each.
    int64_t k0s[64], i0s[64], k1s[64], i1s[64];
    int64_t n0 = 0, n1 = 0;
    for (int64_t k = 0; k < g.kernel[0] && n0 < 64; ++k) {
      const int64_t f = o0 + g.pad[0] - k * g.dilation[0];
      if (f >= 0 && f % g.stride[0] == 0 && f / g.stride[0] < g.in[0]) {
        k0s[n0] = k;
        i0s[n0++] = f / g.stride[0];
      }
    }
    for (int64_t k = 0; k < g.kernel[1] && n1 < 64; ++k) {
      const int64_t f = o1 + g.pad[1] - k * g.dilation[1];
      if (f >= 0 && f % g.stride[1] == 0 && f / g.stride[1] < g.in[1]) {
        k1s[n1] = k;
        i1s[n1++] = f / g.stride[1];
      }
    }
    if (n0 * n1 == 1 && exact_w) {
      // One tap row per output row, covering it: Y = bias + col, written once (the 2x upsampling head).
      const float* src = col + ((k0s[0] * g.kernel[1] + k1s[0]) * k_w) * g.in_size + (i0s[0] * g.in[1] + i1s[0]) * in_w;
      if (k_w == 2) {
        const float* a = src;
        const float* b = src + g.in_size;
        for (int64_t i = 0; i < in_w; ++i) {
          y[2 * i] = bias + a[i];
          y[2 * i + 1] = bias + b[i];
        }
      } else {
        for (int64_t k = 0; k < k_w; ++k) {
          const float* s = src + k * g.in_size;
          for (int64_t i = 0; i < in_w; ++i) y[i * s_w + k] = bias + s[i];
        }
      }
      continue;
    }
    if (s_w > 1 && out_w + s_w <= kPhaseFloats) {
      // Strided along the last axis: output o = j * stride + r sits at phase[r][j], where each tap
      // adds one contiguous run (vectorised), then the phases interleave into Y. Same taps in the
      // same order per element as the loop below, so the same bits.
      float phase[kPhaseFloats];
      const int64_t len = (out_w + s_w - 1) / s_w;
      std::fill(phase, phase + len * s_w, bias);
      for (int64_t a = 0; a < n0; ++a)
        for (int64_t e = 0; e < n1; ++e) {
          const int64_t tap_row = (k0s[a] * g.kernel[1] + k1s[e]) * k_w;
          const int64_t in_row = (i0s[a] * g.in[1] + i1s[e]) * in_w;
          for (int64_t k = 0; k < k_w; ++k) {
            const InputRange range = ranges[k];
            const float* src = col + (tap_row + k) * g.in_size + in_row;
            float* d = phase + tap_r[k] * len + tap_q[k];
            for (int64_t i = range.lo; i < range.hi; ++i) d[i] += src[i];
          }
        }
      if (s_w == 2) {
        const float* even = phase;
        const float* odd = phase + len;
        const int64_t pairs = out_w / 2;
        for (int64_t j = 0; j < pairs; ++j) {
          y[2 * j] = even[j];
          y[2 * j + 1] = odd[j];
        }
        if (out_w % 2 != 0) y[out_w - 1] = even[pairs];
      } else {
        for (int64_t o = 0; o < out_w; ++o) y[o] = phase[(o % s_w) * len + o / s_w];
      }
      continue;
    }
    std::fill(y, y + out_w, bias);
    for (int64_t a = 0; a < n0; ++a)
      for (int64_t e = 0; e < n1; ++e) {
        const int64_t tap_row = (k0s[a] * g.kernel[1] + k1s[e]) * k_w;
        const int64_t in_row = (i0s[a] * g.in[1] + i1s[e]) * in_w;
        for (int64_t k = 0; k < k_w; ++k) {
          const InputRange range = ranges[k];
          const float* s = col + (tap_row + k) * g.in_size + in_row;
          float* d = y + k * g.dilation[2] - g.pad[2];
          if (s_w == 1) {
            for (int64_t i = range.lo; i < range.hi; ++i) d[i] += s[i];
          } else if (s_w == 2) {
            for (int64_t i = range.lo; i < range.hi; ++i) d[2 * i] += s[i];
          } else {
            for (int64_t i = range.lo; i < range.hi; ++i) d[i * s_w] += s[i];
          }
        }
      }
  }
}

// W [C, M/g * taps] -> per group W_g^T, row-major [M/g * taps, C/g] (the GEMM's A).
void transpose_weights(const float* w, int64_t group, int64_t group_channels, int64_t rows, float* dst) {
  for (int64_t grp = 0; grp < group; ++grp)
    for (int64_t c = 0; c < group_channels; ++c) {
      const float* src = w + (grp * group_channels + c) * rows;
      float* d = dst + grp * rows * group_channels + c;
      for (int64_t q = 0; q < rows; ++q) d[q * group_channels] = src[q];
    }
}

// float32 on the packed GEMM driver of one ISA (see the file comment).
class PackedConvTransposeKernel final : public Kernel {
  // Floats of col per map block: 256 KiB, a quarter of this machine's 1 MiB L2, beside X's panels.
  static constexpr int64_t kBlockFloats = int64_t{1} << 16;
  // Largest col kept for one map (1 GiB), and the whole-col size past which only blocks are kept.
  static constexpr int64_t kMaxMapFloats = int64_t{1} << 28;

 public:
  PackedConvTransposeKernel(const KernelCreateInfo& info, const PackedGemmIsa& isa, const GemmBlocking& defaults)
      : attrs_(info), isa_(isa), blocking_(defaults), fallback_(info) {
    variant_ = std::string("gemm_col2im_") + isa.name;
    const Tensor* w = info.constant_inputs.size() > 1 ? info.constant_inputs[1] : nullptr;
    if (w != nullptr && w->element_type() == ElementType::float32 && w->rank() >= 3 && w->element_count() > 0 &&
        w->shape()[0] % attrs_.group == 0 && w->element_count() <= (int64_t{1} << 31)) {
      // W^T per group, row-major [M/g * taps, C/g]: the micro-kernel reads it in place.
      const int64_t channels = w->shape()[0], group_channels = channels / attrs_.group;
      const int64_t rows = w->element_count() / channels;  // M/g * taps
      constant_wt_.resize(static_cast<std::size_t>(w->element_count()));
      transpose_weights(w->data<float>(), attrs_.group, group_channels, rows, constant_wt_.data());
      constant_w_shape_ = w->shape();
    }
  }
  void apply_tuning(const TuningValues& values) override {
    read_packed_gemm_tuning(values, minimum_macs_, blocking_);
    fallback_.apply_tuning(values);  // its threshold
  }

  void run(KernelExecution& execution) override {
    const TransposeRun r = check_transpose(execution, attrs_, ElementType::float32, out_shape_);
    last_variant_ = variant_;
    if (r.y->element_count() == 0) return;
    const TransposeGeometry& g = r.g;
    const int64_t map_floats = checked_mul(g.kernel_size, g.in_size, "ConvTranspose's column buffer");
    if (g.kernel[0] > 64 || g.kernel[1] > 64 || g.kernel[2] > 64 || r.g.in_size == 0 || r.group_channels == 0 ||
        map_floats > kMaxMapFloats) {
      // Kernels wider than col2im's tap lists, nothing to multiply, or one map's col larger than
      // the scratch we keep (a model's shapes decide it): the gather loop, which needs none.
      fallback_.run(execution);
      last_variant_ = "portable";
      return;
    }
    const int64_t rows = r.group_maps * g.kernel_size, depth = r.group_channels, positions = g.in_size;
    const int admitted = execution.admitted_threads(transpose_macs(r), minimum_macs_);
    const int64_t col_floats = checked_mul(rows, positions, "ConvTranspose's column buffer");
    // Map blocks: when the whole col would leave the caches and there are maps enough for every
    // thread, each task multiplies the W^T rows of a few maps (serially, into its own slot) and
    // adds them into Y at once, while they are still in L2 (4x4 stride 2 over 64 maps of 40x40:
    // col2im 650 -> see bench/RESULTS.md). Otherwise one GEMM over all rows, then col2im.
    const int64_t block_maps = std::max<int64_t>(1, kBlockFloats / std::max<int64_t>(1, map_floats));
    const int64_t threads = std::max(1, admitted);
    int64_t blocks = (r.group_maps + block_maps - 1) / block_maps;
    blocks = (blocks + threads - 1) / threads * threads;  // a whole number of blocks per thread
    // (Also whenever the whole col would be large: then at most `threads` maps' worth is kept.)
    const bool blocked = col_floats > kBlockFloats && (r.group_maps >= 2 * threads || col_floats > kMaxMapFloats);
    const int64_t maps_per_block = (r.group_maps + blocks - 1) / blocks;
    if (blocked) blocks = (r.group_maps + maps_per_block - 1) / maps_per_block;
    // Scratch sized here and kept: col (whole, or one block per thread) and X's packed panels.
    const bool in_tasks = !blocked && admitted > 1 && pack_b_in_tasks(blocking_, rows, depth);
    try {
      col_.grow(static_cast<std::size_t>(
          blocked ? checked_mul(threads, checked_mul(maps_per_block, map_floats, "ConvTranspose's column buffer"),
                                "ConvTranspose's column buffer")
                  : col_floats));
      packed_x_.grow(static_cast<std::size_t>(
          checked_mul(checked_mul((positions + isa_.nr - 1) / isa_.nr, depth, "X's packed panels"), isa_.nr,
                      "X's packed panels")));
    } catch (const std::bad_alloc&) {
      throw InputError(fmt::format("{}: cannot allocate the scratch for X {} and W {} (col of {} floats)",
                                   execution.label(), shape_to_string(r.x->shape()), shape_to_string(r.w->shape()),
                                   col_floats));
    }
    if (blocked) {
      col_slots_.ensure(static_cast<std::size_t>(threads));
      for (std::size_t i = 0; i < col_slots_.size(); ++i) col_slots_[i] = static_cast<int64_t>(i);
    }
    const bool constant_w = !constant_wt_.empty() && r.w->shape() == constant_w_shape_;
    const float* wt = constant_wt_.data();
    if (!constant_w) {
      // W from an input: transposed here into a kept buffer, so that the micro-kernel reads A in
      // place as for a constant (a strided A would be packed into each worker's own buffer, which
      // grows on the first run a worker happens to take a task: an allocation in a steady state).
      try {
        run_wt_.grow(static_cast<std::size_t>(r.w->element_count()));
      } catch (const std::bad_alloc&) {
        throw InputError(fmt::format("{}: cannot allocate a transposed copy of W {}", execution.label(),
                                     shape_to_string(r.w->shape())));
      }
      transpose_weights(r.w->data<float>(), attrs_.group, depth, rows, run_wt_.data());
      wt = run_wt_.data();
    }
    const float* px = r.x->data<float>();
    const float* pb = r.bias != nullptr ? r.bias->data<float>() : nullptr;
    float* out = r.y->data<float>();
    float* col = col_.data();
    float* packed = packed_x_.data();
    const int64_t rows_per_map = g.out[0] * g.out[1];
    for (int64_t image = 0; image < r.batch; ++image)
      for (int64_t grp = 0; grp < attrs_.group; ++grp) {
        const MatrixView xg{px + (image * r.channels + grp * r.group_channels) * positions, positions, 1};
        // A = W_g^T: the transposed constant in place, or W read with strides (packed per task).
        const MatrixView a{wt + grp * rows * depth, depth, 1};
        float* maps = out + (image * r.maps + grp * r.group_maps) * g.out_size;
        const float* group_bias = pb != nullptr ? pb + grp * r.group_maps : nullptr;
        if (blocked) {
          pack_b_matrices(&execution, admitted, isa_, 1, depth, positions, [&](int64_t) { return xg; }, packed);
          // Every block runs the same serial product and col2im whichever thread takes it, into a
          // col slot it leases: at most `admitted` participants run at once (the pool may cut the
          // region into more blocks than that, each participant taking several in turn).
          execution.parallel_for(blocks, 1, admitted, [&](int64_t begin, int64_t end) {
            ScratchSlots<int64_t>::Lease slot(col_slots_);
            float* block_col = col + *slot * maps_per_block * map_floats;
            for (int64_t block = begin; block < end; ++block) {
              const int64_t m0 = block * maps_per_block, m1 = std::min(r.group_maps, m0 + maps_per_block);
              const int64_t block_rows = (m1 - m0) * g.kernel_size;
              const MatrixView a_block{a.data + m0 * g.kernel_size * a.row_stride, a.row_stride, a.col_stride};
              const PackedGemmPlan plan = plan_packed_gemm(isa_, blocking_, 1, block_rows, positions, depth, 1);
              const PackedGemmOperands operands{a_block, packed, block_col, positions};
              run_packed_gemm_tasks(
                  isa_, plan, 0, plan.tasks(),
                  [](const void* o, int64_t) { return static_cast<const PackedGemmOperands*>(o); }, &operands, nullptr);
              for (int64_t m = m0; m < m1; ++m)
                col2im_rows(g, block_col + (m - m0) * map_floats, group_bias != nullptr ? group_bias[m] : 0.0f,
                            maps + m * g.out_size, 0, rows_per_map);
            }
          });
          continue;
        }
        if (!in_tasks) pack_b_matrices(&execution, admitted, isa_, 1, depth, positions, [&](int64_t) { return xg; }, packed);
        packed_gemm(
            execution, admitted, isa_, blocking_, 1, rows, positions, depth, nullptr,
            [&](int64_t) { return PackedGemmOperands{a, packed, col, positions, in_tasks ? packed : nullptr, xg}; },
            in_tasks);
        const int64_t units = r.group_maps * rows_per_map;
        const int64_t grain = std::max<int64_t>(1, 1024 / std::max<int64_t>(1, g.out[2]));
        execution.parallel_for(units, grain, admitted, [&](int64_t begin, int64_t end) {
          for (int64_t u = begin; u < end;) {
            const int64_t m = u / rows_per_map, row0 = u % rows_per_map;
            const int64_t row1 = std::min(rows_per_map, row0 + (end - u));
            const float b = group_bias != nullptr ? group_bias[m] : 0.0f;
            col2im_rows(g, col + m * map_floats, b, maps + m * g.out_size, row0, row1);
            u += row1 - row0;
          }
        });
      }
  }

  std::string_view variant() const override { return last_variant_; }

 private:
  TransposeAttributes attrs_;
  const PackedGemmIsa& isa_;
  GemmBlocking blocking_;
  int64_t minimum_macs_ = kDefaultMinimumMacs;
  std::vector<float> constant_wt_;
  Shape constant_w_shape_;
  PackedBuffer col_, packed_x_, run_wt_;
  ScratchSlots<int64_t> col_slots_;  // slot i: the i-th block of maps in col_ (blocked path)
  Shape out_shape_;
  PortableConvTransposeKernel<float> fallback_;
  std::string variant_;
  std::string_view last_variant_;
};

// Calibration: a 2x upsampling ConvTranspose (kernel 2, stride 2) over [1, c, 8, 8] with c maps
// (256 c^2 multiply-accumulates).
int64_t workload_channels(int64_t macs) {
  return std::max<int64_t>(1, static_cast<int64_t>(std::llround(std::sqrt(static_cast<double>(macs) / 256.0))));
}
// Its largest tensor: Y (256 c) or W (4 c^2), not the multiply-accumulate count.
int64_t workload_elements(int64_t macs) {
  const int64_t c = workload_channels(macs);
  return std::max(256 * c, 4 * c * c);
}
CalibrationWorkloadFunction transpose_workload(ElementType type) {
  return [type](int64_t macs, int, uint32_t seed) {
    const int64_t c = workload_channels(macs);
    return one_node_workload(
        "ConvTranspose", 11, "strides = [2, 2]",
        {{"x", random_tensor(type, {1, c, 8, 8}, seed)}, {"w", random_tensor(type, {c, c, 2, 2}, seed + 1)}},
        {{"y", type, {1, c, 16, 16}}}, 256 * c * c);
  };
}

void add_packed(KernelTable& table, const PackedGemmIsa* isa, std::string (*needs)(const CpuFeatures&)) {
  if (isa == nullptr) return;
  constexpr ElementType type = ElementType::float32;
  const GemmBlocking defaults{96, 256, 256};
  // Tuning ABI 2: gemm.row_order_b_floats was a constant in ABI 1.
  KernelDef def = make_def("ConvTranspose", {1}, type,
                           packed_gemm_schema(elementwise_key("ConvTranspose", type, 2, isa->name), defaults));
  def.implementation = isa->name;
  def.unavailable_reason = needs;
  def.create = [isa, defaults](const KernelCreateInfo& info) -> std::unique_ptr<Kernel> {
    return std::make_unique<PackedConvTransposeKernel>(info, *isa, defaults);
  };
  def.calibration_workload = transpose_workload(type);
  def.calibration_elements = workload_elements;
  table.add(std::move(def));
}

}  // namespace

void register_conv_transpose_kernels(KernelTable& table) {
  // Preference order for float32: avx512, avx2, portable.
  add_packed(table, packed_gemm_avx512(), needs_avx512);
  add_packed(table, packed_gemm_avx2(), needs_avx2_fma);
  for_each_type<float, double, Float16>([&](auto t) {
    using T = decltype(t);
    constexpr ElementType type = ElementTraits<T>::type;
    KernelDef def = make_def("ConvTranspose", {1}, type, portable_schema(elementwise_key("ConvTranspose", type, 1)));
    def.create = [](const KernelCreateInfo& info) -> std::unique_ptr<Kernel> {
      return std::make_unique<PortableConvTransposeKernel<T>>(info);
    };
    def.calibration_workload = transpose_workload(type);
    def.calibration_elements = workload_elements;
    table.add(std::move(def));
  });
}

}  // namespace onnx_light::runtime::kernels
