// Resize (opsets 10, 11, 13, 18: nearest with every nearest_mode, linear and cubic on any number of
// axes, every coordinate_transformation_mode, scales or sizes, antialias, keep_aspect_ratio_policy,
// axes) and Upsample (opsets 7 and 9). Each run resolves per-axis tables once per input shape and
// scales/sizes/roi values (cached across runs): for every output coordinate the clamped input
// indices and weights of its taps, so no division happens per output element. Two paths:
// - 2-D (every axis but the last two unchanged, the NCHW case of real models): parallel over
//   output rows; nearest gathers through the column table and copies a repeated row, linear and
//   cubic interpolate input rows along W once into a small row cache, then combine rows along H;
// - N-D: any axes, each output element as the nested sum of the reference (innermost axis first),
//   in double.
// Semantics follow ONNX's reference implementation (length_resized = scale * length_original for
// scales; taps clamped to the edge), except pytorch_half_pixel with an output length of 1, which
// maps to 0 as the operator text and ONNX Runtime say (the reference uses -0.5: only cubic differs).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "kernels/element_traits.h"
#include "kernels/elementwise.h"
#include "kernels/isa_requirements.h"
#include "kernels/kernel_families.h"
#include "kernels/kernel_util.h"
#include "onnx_light/runtime/error.h"
#if defined(ONNX_LIGHT_X86_SIMD)
#include "kernels/simd/resize_f32.h"
#endif

namespace onnx_light::runtime::kernels {

namespace {

// int64 values per 64-byte cache line: the gap that keeps per-thread bookkeeping off shared lines.
constexpr int64_t kCacheLineInt64s = 8;

enum class Mode { nearest, linear, cubic };
enum class Transform {
  half_pixel,
  half_pixel_symmetric,
  pytorch_half_pixel,
  align_corners,
  asymmetric,
  tf_half_pixel_for_centers,
  tf_crop_and_resize
};
// `simple` is the rule of Resize-10 and Upsample (which have no nearest_mode): truncation when
// upsampling, ceil when downsampling, as ONNX Runtime does.
enum class Nearest { round_prefer_floor, round_prefer_ceil, floor, ceil, simple };
enum class Policy { stretch, not_larger, not_smaller };

bool is_float_type(ElementType t) {
  return t == ElementType::float32 || t == ElementType::float64 || t == ElementType::float16 ||
         t == ElementType::bfloat16;
}

struct Attributes {
  bool upsample = false;
  int64_t opset = 0;
  Mode mode = Mode::nearest;
  Transform transform = Transform::half_pixel;
  Nearest nearest = Nearest::round_prefer_floor;
  double cubic_a = -0.75;
  bool exclude_outside = false;
  double extrapolation = 0.0;
  bool antialias = false;
  Policy policy = Policy::stretch;
  std::vector<int64_t> axes;         // as given (opset 18); empty: every axis
  std::vector<float> scales_attr;    // Upsample-7
  int roi_input = -1, scales_input = -1, sizes_input = -1;
};

// True when input `index` is named in the node (an empty name is an omitted optional input).
bool has_input(const KernelCreateInfo& info, int index) {
  return index >= 0 && index < info.node.input_size() && !info.node.input(index).empty();
}

const Tensor* constant_input(const KernelCreateInfo& info, int index) {
  if (!has_input(info, index) || static_cast<std::size_t>(index) >= info.constant_inputs.size()) return nullptr;
  return info.constant_inputs[static_cast<std::size_t>(index)];
}

Attributes parse_attributes(const KernelCreateInfo& info, bool upsample, ElementType type) {
  Attributes a;
  a.upsample = upsample;
  a.opset = info.opset;
  const std::string& op = info.node.op_type();
  if (upsample) {
    if (info.opset < 9) check_attributes(info, {"mode", "scales"});
    else check_attributes(info, {"mode"});
  } else if (info.opset < 11) {
    check_attributes(info, {"mode"});
  } else if (info.opset < 18) {
    check_attributes(info, {"coordinate_transformation_mode", "cubic_coeff_a", "exclude_outside",
                            "extrapolation_value", "mode", "nearest_mode"});
  } else {
    check_attributes(info, {"antialias", "axes", "coordinate_transformation_mode", "cubic_coeff_a", "exclude_outside",
                            "extrapolation_value", "keep_aspect_ratio_policy", "mode", "nearest_mode"});
  }
  if (upsample || info.opset < 11) {
    a.mode = parse_choice<Mode>(info, "mode", "nearest", {{"nearest", Mode::nearest}, {"linear", Mode::linear}});
    a.transform = Transform::asymmetric;
    a.nearest = Nearest::simple;
  } else {
    a.mode = parse_choice<Mode>(info, "mode", "nearest",
                                {{"nearest", Mode::nearest}, {"linear", Mode::linear}, {"cubic", Mode::cubic}});
    a.transform = parse_choice<Transform>(info, "coordinate_transformation_mode", "half_pixel",
                                          {{"half_pixel", Transform::half_pixel},
                                           {"half_pixel_symmetric", Transform::half_pixel_symmetric},
                                           {"pytorch_half_pixel", Transform::pytorch_half_pixel},
                                           {"align_corners", Transform::align_corners},
                                           {"asymmetric", Transform::asymmetric},
                                           {"tf_half_pixel_for_centers", Transform::tf_half_pixel_for_centers},
                                           {"tf_crop_and_resize", Transform::tf_crop_and_resize}});
    a.nearest = parse_choice<Nearest>(info, "nearest_mode", "round_prefer_floor",
                                      {{"round_prefer_floor", Nearest::round_prefer_floor},
                                       {"round_prefer_ceil", Nearest::round_prefer_ceil},
                                       {"floor", Nearest::floor},
                                       {"ceil", Nearest::ceil}});
    a.cubic_a = info.float_attribute("cubic_coeff_a", -0.75f);
    a.exclude_outside = info.int_attribute("exclude_outside", 0) != 0;
    a.extrapolation = info.float_attribute("extrapolation_value", 0.0f);
    if (info.opset >= 18) {
      a.antialias = info.int_attribute("antialias", 0) != 0;
      a.policy = parse_choice<Policy>(info, "keep_aspect_ratio_policy", "stretch",
                                      {{"stretch", Policy::stretch},
                                       {"not_larger", Policy::not_larger},
                                       {"not_smaller", Policy::not_smaller}});
      a.axes = info.ints_attribute("axes");
    }
  }
  if (a.mode != Mode::nearest && !is_float_type(type))
    throw UnsupportedError(fmt::format("{}: mode '{}' is not supported for element type {}; only 'nearest' is "
                                       "(interpolating integers would need a rounding rule ONNX does not define)",
                                       info.node_label(), a.mode == Mode::linear ? "linear" : "cubic",
                                       element_type_name(type)));
  // Input positions: Upsample-7 (X), Upsample-9 and Resize-10 (X, scales), Resize-11+ (X, roi, scales, sizes).
  if (upsample && info.opset < 9) {
    const auto* s = info.attribute("scales");
    if (s == nullptr) throw ModelError(fmt::format("{}: attribute 'scales' is required", info.node_label()));
    a.scales_attr.assign(s->floats().begin(), s->floats().end());
  } else if (upsample || info.opset < 11) {
    a.scales_input = 1;
    if (!has_input(info, 1)) throw ModelError(fmt::format("{}: input 'scales' is required", info.node_label()));
  } else {
    a.roi_input = 1;
    a.scales_input = 2;
    a.sizes_input = 3;
  }
  // Constant scales, sizes and roi are checked now, so that a bad model fails at session creation.
  auto check_scales = [&](const std::vector<double>& scales) {
    for (double s : scales)
      if (!(s > 0) || !std::isfinite(s))
        throw ModelError(fmt::format("{}: scales {} must be positive and finite", info.node_label(), scales));
    if (upsample)
      for (double s : scales)
        if (s < 1)
          throw ModelError(fmt::format("{}: {} scales {} must be at least 1 (use Resize to downsample)",
                                       info.node_label(), op, scales));
  };
  if (!a.scales_attr.empty()) check_scales(std::vector<double>(a.scales_attr.begin(), a.scales_attr.end()));
  const Tensor* scales = constant_input(info, a.scales_input);
  const Tensor* sizes = constant_input(info, a.sizes_input);
  if (scales != nullptr && scales->element_count() > 0) {
    std::vector<double> v;
    for (int64_t i = 0; i < scales->element_count(); ++i) v.push_back(read_as_double(*scales, i));
    check_scales(v);
  }
  if (sizes != nullptr && sizes->element_count() > 0) {
    const auto v = read_int64_values(*sizes, info.node_label(), "input 'sizes'");
    for (int64_t s : v)
      if (s < 0) throw ModelError(fmt::format("{}: sizes {} must not be negative", info.node_label(), v));
  }
  const bool scales_given = has_input(info, a.scales_input) && !(scales != nullptr && scales->element_count() == 0);
  const bool sizes_given = has_input(info, a.sizes_input) && !(sizes != nullptr && sizes->element_count() == 0);
  if (a.sizes_input >= 0 && scales != nullptr && sizes != nullptr && scales_given && sizes_given)
    throw ModelError(fmt::format("{}: only one of 'scales' and 'sizes' may be given", info.node_label()));
  if (a.sizes_input >= 0 && !scales_given && !sizes_given)
    throw ModelError(fmt::format("{}: one of 'scales' and 'sizes' is required", info.node_label()));
  if (a.transform == Transform::tf_crop_and_resize) {
    const Tensor* roi = constant_input(info, a.roi_input);
    if (!has_input(info, a.roi_input) || (roi != nullptr && roi->element_count() == 0))
      throw ModelError(fmt::format("{}: coordinate_transformation_mode 'tf_crop_and_resize' needs the 'roi' input",
                                   info.node_label()));
  }
  return a;
}

// One axis: for every output coordinate, `taps` clamped input indices and weights; `outside`
// marks coordinates of tf_crop_and_resize that fall outside the input (extrapolation_value).
struct AxisTable {
  int64_t in = 0, out = 0, taps = 1;
  bool identity = true;
  bool any_outside = false;
  std::vector<int64_t> index;
  std::vector<double> weight;
  std::vector<uint8_t> outside;
};

double cubic_weight(double x, double a) {
  x = std::fabs(x);
  if (x <= 1) return ((a + 2) * x - (a + 3)) * x * x + 1;
  if (x < 2) return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a;
  return 0;
}

AxisTable build_axis(const Attributes& a, int64_t in, int64_t out, double scale, double length_resized,
                     double roi_start, double roi_end) {
  AxisTable t;
  t.in = in;
  t.out = out;
  const bool aa = a.antialias && scale < 1 && a.mode != Mode::nearest;
  // Taps at offsets first..first+taps-1 from left = ceil(x) - 1 (the reference's n nearest
  // neighbours, preferring the smaller index, around x with ratio = x - left in (0, 1]).
  int64_t first = 0;
  if (a.mode == Mode::nearest) {
    t.taps = 1;
  } else if (a.mode == Mode::linear) {
    first = aa ? static_cast<int64_t>(std::floor(-1 / scale)) + 1 : 0;
    t.taps = 2 - 2 * first;
  } else {
    first = aa ? static_cast<int64_t>(std::floor(-2 / scale)) + 1 : -1;
    t.taps = 2 - 2 * first;
  }
  t.index.resize(static_cast<std::size_t>(out * t.taps));
  t.weight.resize(static_cast<std::size_t>(out * t.taps));
  t.outside.assign(static_cast<std::size_t>(out), 0);
  const double in_d = static_cast<double>(in);
  std::vector<double> w(static_cast<std::size_t>(t.taps));
  for (int64_t o = 0; o < out; ++o) {
    const double od = static_cast<double>(o);
    double x = 0;
    switch (a.transform) {
      case Transform::half_pixel: x = (od + 0.5) / scale - 0.5; break;
      case Transform::half_pixel_symmetric: {
        const double adjustment = static_cast<double>(out) / length_resized;
        x = in_d / 2 * (1 - adjustment) + (od + 0.5) / scale - 0.5;
        break;
      }
      case Transform::pytorch_half_pixel: x = length_resized > 1 ? (od + 0.5) / scale - 0.5 : 0; break;
      case Transform::align_corners: x = length_resized == 1 ? 0 : od * (in_d - 1) / (length_resized - 1); break;
      case Transform::asymmetric: x = od / scale; break;
      case Transform::tf_half_pixel_for_centers: x = (od + 0.5) / scale; break;
      case Transform::tf_crop_and_resize:
        x = length_resized > 1 ? od * (roi_end - roi_start) * (in_d - 1) / (length_resized - 1)
                               : (roi_end - roi_start) * (in_d - 1) / 2;
        x += roi_start * (in_d - 1);
        if (!(x >= 0 && x <= in_d - 1)) {
          t.outside[static_cast<std::size_t>(o)] = 1;
          t.any_outside = true;
          t.identity = false;
        }
        break;
    }
    // Far outside the input every tap clamps to an edge anyway; this keeps the integer conversion defined.
    if (std::isnan(x)) x = 0;
    x = std::clamp(x, -4.0 - static_cast<double>(t.taps), in_d + 4.0 + static_cast<double>(t.taps));
    const double fl = std::floor(x);
    const bool integral = fl == x;
    const int64_t left = static_cast<int64_t>(fl) - (integral ? 1 : 0);
    const double ratio = x - static_cast<double>(left);
    int64_t* idx = t.index.data() + o * t.taps;
    double* wt = t.weight.data() + o * t.taps;
    auto clamp_index = [&](int64_t i) { return std::clamp<int64_t>(i, 0, std::max<int64_t>(0, in - 1)); };
    if (a.mode == Mode::nearest) {
      int64_t i = 0;
      if (integral) {
        i = static_cast<int64_t>(fl);
      } else {
        switch (a.nearest) {
          case Nearest::round_prefer_floor: i = ratio <= 0.5 ? left : left + 1; break;
          case Nearest::round_prefer_ceil: i = ratio < 0.5 ? left : left + 1; break;
          case Nearest::floor: i = left; break;
          case Nearest::ceil: i = left + 1; break;
          case Nearest::simple: i = scale < 1 ? left + 1 : static_cast<int64_t>(std::trunc(x)); break;
        }
      }
      idx[0] = clamp_index(i);
      wt[0] = 1;
    } else {
      const double s = aa ? scale : 1.0;
      double sum = 0;
      for (int64_t k = 0; k < t.taps; ++k) {
        const double d = (static_cast<double>(first + k) - ratio) * s;
        double c = 0;
        if (a.mode == Mode::linear) {
          c = aa ? std::max(0.0, 1 - std::fabs(d)) : (k == 0 ? 1 - ratio : ratio);
        } else if (aa) {
          c = cubic_weight(d, a.cubic_a);
        } else {
          // The reference's four cubic coefficients for taps -1, 0, 1, 2.
          const double r = ratio, A = a.cubic_a;
          switch (k) {
            case 0: c = ((A * (r + 1) - 5 * A) * (r + 1) + 8 * A) * (r + 1) - 4 * A; break;
            case 1: c = ((A + 2) * r - (A + 3)) * r * r + 1; break;
            case 2: c = ((A + 2) * (1 - r) - (A + 3)) * (1 - r) * (1 - r) + 1; break;
            default: c = ((A * ((1 - r) + 1) - 5 * A) * ((1 - r) + 1) + 8 * A) * ((1 - r) + 1) - 4 * A; break;
          }
        }
        const int64_t i = left + first + k;
        if (a.exclude_outside && (i < 0 || i >= in)) c = 0;
        w[static_cast<std::size_t>(k)] = c;
        sum += c;
        idx[k] = clamp_index(i);
      }
      const bool normalise = aa || a.exclude_outside;
      for (int64_t k = 0; k < t.taps; ++k)
        wt[k] = normalise && sum != 0 ? w[static_cast<std::size_t>(k)] / sum : w[static_cast<std::size_t>(k)];
    }
    // Identity: this coordinate reads exactly input o (one weight 1, the rest 0).
    if (t.identity) {
      bool exact = in == out;
      for (int64_t k = 0; k < t.taps && exact; ++k)
        exact = wt[k] == 0 || (wt[k] == 1 && idx[k] == o);
      double total = 0;
      for (int64_t k = 0; k < t.taps; ++k) total += wt[k];
      t.identity = exact && total == 1;
    }
  }
  if (out == 0) t.identity = in == 0;
  return t;
}

// The tables of one run, rebuilt when the input shape or the scales/sizes/roi values change.
struct Plan {
  std::vector<double> key;
  Shape out;
  std::vector<AxisTable> axes;
  bool two_d = false;  // every axis but the last two is an identity
  // Nearest along the last axis that repeats each input element f times (index o / f): f, else 0.
  int64_t repeat_last = 0;
  // Nearest along the second-to-last axis reads input row o / 2 for output row o (pairs of rows).
  bool rows_repeat2 = false;
  std::vector<int64_t> in_strides;
};

// Two output rows of a 2x nearest upsampling written from one read of the input row. With SSE2
// (every x86-64) elements of 4 bytes are loaded four at a time and stored twice interleaved.
// Measured on [1,96,40,40]: the index-table gather took 118 us, repeat_row plus a row copy 54 us,
// this 40 us (ONNX Runtime 37-39 us). A standalone AVX2 version of the loop was 5-8% faster only
// (the stores are bound by L2/L3 bandwidth), not worth an implementation key of its own.
template <typename U>
void repeat2_rows(const U* in, U* a, U* b, int64_t in_w) {
  int64_t i = 0;
#if defined(__SSE2__)
  if constexpr (sizeof(U) == 4) {
    auto put = [](U* p, __m128i v) { _mm_storeu_si128(reinterpret_cast<__m128i*>(p), v); };
    for (; i + 8 <= in_w; i += 8) {
      const __m128i v0 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + i));
      const __m128i v1 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + i + 4));
      const __m128i a0 = _mm_unpacklo_epi32(v0, v0), a1 = _mm_unpackhi_epi32(v0, v0);
      const __m128i a2 = _mm_unpacklo_epi32(v1, v1), a3 = _mm_unpackhi_epi32(v1, v1);
      put(a + 2 * i, a0);
      put(a + 2 * i + 4, a1);
      put(a + 2 * i + 8, a2);
      put(a + 2 * i + 12, a3);
      put(b + 2 * i, a0);
      put(b + 2 * i + 4, a1);
      put(b + 2 * i + 8, a2);
      put(b + 2 * i + 12, a3);
    }
    for (; i + 4 <= in_w; i += 4) {
      const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + i));
      const __m128i lo = _mm_unpacklo_epi32(v, v), hi = _mm_unpackhi_epi32(v, v);
      put(a + 2 * i, lo);
      put(a + 2 * i + 4, hi);
      put(b + 2 * i, lo);
      put(b + 2 * i + 4, hi);
    }
  }
#endif
  for (; i < in_w; ++i) a[2 * i] = a[2 * i + 1] = b[2 * i] = b[2 * i + 1] = in[i];
}

// out[i * f + r] = in[i] for r < f: an integer-factor nearest row (FPN upsampling), instead of
// gathering element by element through the index table.
template <typename U>
void repeat_row(const U* in, U* out, int64_t in_w, int64_t f) {
  if (f == 1) {
    std::memcpy(out, in, static_cast<std::size_t>(in_w) * sizeof(U));
  } else if (f == 2) {
    for (int64_t i = 0; i < in_w; ++i) {
      out[2 * i] = in[i];
      out[2 * i + 1] = in[i];
    }
  } else if (f == 4) {
    for (int64_t i = 0; i < in_w; ++i) {
      out[4 * i] = in[i];
      out[4 * i + 1] = in[i];
      out[4 * i + 2] = in[i];
      out[4 * i + 3] = in[i];
    }
  } else {
    for (int64_t i = 0; i < in_w; ++i) std::fill_n(out + i * f, f, in[i]);
  }
}

// A double stored as `type` into `dst` (extrapolation_value for the byte-moving nearest path).
void encode_value(double v, ElementType type, void* dst) {
  auto put = [&](auto x) { std::memcpy(dst, &x, sizeof(x)); };
  switch (type) {
    case ElementType::float32: put(static_cast<float>(v)); break;
    case ElementType::float64: put(v); break;
    case ElementType::float16: put(float_to_half(static_cast<float>(v))); break;
    case ElementType::bfloat16: put(float_to_bfloat16(static_cast<float>(v))); break;
    case ElementType::int8: put(saturate_cast<int8_t>(v)); break;
    case ElementType::int16: put(saturate_cast<int16_t>(v)); break;
    case ElementType::int32: put(saturate_cast<int32_t>(v)); break;
    case ElementType::int64: put(saturate_cast<int64_t>(v)); break;
    case ElementType::uint8: put(saturate_cast<uint8_t>(v)); break;
    case ElementType::uint16: put(saturate_cast<uint16_t>(v)); break;
    case ElementType::uint32: put(saturate_cast<uint32_t>(v)); break;
    case ElementType::uint64: put(saturate_cast<uint64_t>(v)); break;
    case ElementType::boolean: put(v != 0); break;
    default: std::memset(dst, 0, element_size(type)); break;
  }
}

// The 2x nearest rows of an ISA implementation (simd/resize_f32.h); null in the portable one.
using Repeat2RowsF32 = void (*)(const float* in, int64_t in_w, int64_t rows, float* out);

class ResizeKernel final : public ThresholdKernel {
 public:
  // isa_rows / isa_variant: the "avx2" and "avx512" float32 implementations' 2x nearest rows and the
  // label a node reports when they ran; every other case runs the portable loops and says so.
  ResizeKernel(const KernelCreateInfo& info, bool upsample, ElementType type, Repeat2RowsF32 isa_rows = nullptr,
               const char* isa_variant = "")
      : ThresholdKernel(kDefaultMinimumElements),
        attrs_(parse_attributes(info, upsample, type)),
        type_(type),
        isa_rows_(isa_rows),
        isa_variant_(isa_variant) {}

  void run(KernelExecution& execution) override {
    const Tensor& x = execution.required_input(0);
    check_input_type(execution, 0, x, type_);
    const Plan& plan = resolve(execution, x.shape());
    Tensor& y = checked_output(execution, 0, type_, plan.out, /*zero=*/false);
    const int64_t n = y.element_count();
    if (n == 0) {
      last_variant_ = "empty";
      return;
    }
    const int threads = admitted(n, execution);
    if (attrs_.mode == Mode::nearest) {
      alignas(8) unsigned char fill[8] = {};
      encode_value(attrs_.extrapolation, type_, fill);
      dispatch_element_size(element_size(type_), [&](auto u) {
        using U = decltype(u);
        U f;
        std::memcpy(&f, fill, sizeof(U));
        if (plan.two_d) nearest_2d<U>(execution, plan, x.data<U>(), y.data<U>(), f, threads);
        else nearest_nd<U>(execution, plan, x.data<U>(), y.data<U>(), f, threads);
      });
      last_variant_ = plan.two_d ? (isa_rows_ != nullptr && plan.rows_repeat2 && plan.repeat_last == 2 ? isa_variant_
                                                                                                   : "nearest_2d")
                                 : "nearest_nd";
      return;
    }
    auto interpolate = [&](auto t) {
      using T = decltype(t);
      if (plan.two_d) interpolate_2d<T>(execution, plan, x.data<T>(), y.data<T>(), threads);
      else interpolate_nd<T>(execution, plan, x.data<T>(), y.data<T>(), threads);
    };
    switch (type_) {
      case ElementType::float32: interpolate(float{}); break;
      case ElementType::float64: interpolate(double{}); break;
      case ElementType::float16: interpolate(Float16{}); break;
      default: interpolate(BFloat16{}); break;
    }
    last_variant_ = plan.two_d ? "interpolate_2d" : "interpolate_nd";
  }

  std::string_view variant() const override { return last_variant_; }

 private:
  // Reads scales/sizes/roi, computes the output shape and (when they changed) the axis tables.
  const Plan& resolve(KernelExecution& execution, const Shape& shape) {
    const std::string& label = execution.label();
    const int64_t rank = static_cast<int64_t>(shape.size());
    auto optional = [&](int index) -> const Tensor* {
      if (index < 0 || static_cast<std::size_t>(index) >= execution.input_count()) return nullptr;
      const Tensor* t = execution.input(static_cast<std::size_t>(index));
      return t != nullptr && t->element_count() > 0 ? t : nullptr;
    };
    // Member buffers: a steady-state run allocates nothing.
    std::vector<double>& scales = scales_buf_;
    std::vector<double>& roi = roi_buf_;
    std::vector<int64_t>& sizes = sizes_buf_;
    scales.clear();
    roi.clear();
    sizes.clear();
    if (!attrs_.scales_attr.empty()) {
      scales.assign(attrs_.scales_attr.begin(), attrs_.scales_attr.end());
    } else if (const Tensor* s = optional(attrs_.scales_input)) {
      for (int64_t i = 0; i < s->element_count(); ++i) scales.push_back(read_as_double(*s, i));
    }
    if (const Tensor* s = optional(attrs_.sizes_input)) {
      if (s->element_type() != ElementType::int64 && s->element_type() != ElementType::int32)
        throw InputError(fmt::format("{}: input 'sizes' must be int64, not {}", label, element_type_name(s->element_type())));
      for (int64_t i = 0; i < s->element_count(); ++i)
        sizes.push_back(s->element_type() == ElementType::int64 ? s->data<int64_t>()[i] : s->data<int32_t>()[i]);
    }
    if (const Tensor* r = optional(attrs_.roi_input))
      for (int64_t i = 0; i < r->element_count(); ++i) roi.push_back(read_as_double(*r, i));
    // The cache key: everything the tables depend on.
    key_.assign(shape.begin(), shape.end());
    key_.push_back(-1);
    key_.insert(key_.end(), scales.begin(), scales.end());
    key_.push_back(-2);
    key_.insert(key_.end(), sizes.begin(), sizes.end());
    key_.push_back(-3);
    if (attrs_.transform == Transform::tf_crop_and_resize) key_.insert(key_.end(), roi.begin(), roi.end());
    if (plan_.key == key_ && !plan_.out.empty()) return plan_;
    plan_.key.clear();  // a rebuild that throws must not leave a half-built plan under a valid key

    if (!scales.empty() && !sizes.empty())
      throw InputError(fmt::format("{}: only one of 'scales' and 'sizes' may be given", label));
    if (scales.empty() && sizes.empty())
      throw InputError(fmt::format("{}: one of 'scales' and 'sizes' is required", label));
    std::vector<int64_t> axes;
    if (attrs_.axes.empty()) {
      for (int64_t i = 0; i < rank; ++i) axes.push_back(i);
    } else {
      std::vector<bool> seen(static_cast<std::size_t>(rank), false);
      for (int64_t axis : attrs_.axes) {
        const int64_t a = normalize_axis(axis, rank, label, "attribute 'axes' value");
        if (seen[static_cast<std::size_t>(a)])
          throw InputError(fmt::format("{}: attribute 'axes' = {} repeats axis {}", label, attrs_.axes, a));
        seen[static_cast<std::size_t>(a)] = true;
        axes.push_back(a);
      }
    }
    const std::size_t count = axes.size();
    const char* given = scales.empty() ? "sizes" : "scales";
    const std::size_t values = scales.empty() ? sizes.size() : scales.size();
    if (values != count)
      throw InputError(fmt::format("{}: {} has {} values but the input {} {} {}", label, given, values,
                                   shape_to_string(shape), attrs_.axes.empty() ? "has rank" : "has axes count",
                                   count));
    const bool crop = attrs_.transform == Transform::tf_crop_and_resize;
    if (crop && roi.size() != 2 * count)
      throw InputError(fmt::format("{}: roi has {} values; tf_crop_and_resize needs {} (starts, then ends)", label,
                                   roi.size(), 2 * count));
    std::vector<double> axis_scale(static_cast<std::size_t>(rank), 1.0), length(shape.size());
    std::vector<double> start(shape.size(), 0.0), end(shape.size(), 1.0);
    Shape out = shape;
    for (std::size_t i = 0; i < shape.size(); ++i) length[i] = static_cast<double>(shape[i]);
    if (!scales.empty()) {
      for (double s : scales)
        if (!(s > 0) || !std::isfinite(s))
          throw InputError(fmt::format("{}: scales {} must be positive and finite", label, scales));
      if (attrs_.upsample)
        for (double s : scales)
          if (s < 1) throw InputError(fmt::format("{}: Upsample scales {} must be at least 1", label, scales));
      for (std::size_t k = 0; k < count; ++k) {
        const auto d = static_cast<std::size_t>(axes[k]);
        const double l = static_cast<double>(shape[d]) * scales[k];
        if (l >= 0x1p62) throw InputError(fmt::format("{}: scales {} make the output of {} too large", label, scales, shape_to_string(shape)));
        axis_scale[d] = scales[k];
        length[d] = l;
        out[d] = static_cast<int64_t>(std::floor(l));
      }
    } else {
      for (int64_t s : sizes)
        if (s < 0) throw InputError(fmt::format("{}: sizes {} must not be negative", label, sizes));
      double common = 0;
      if (attrs_.policy != Policy::stretch) {
        common = attrs_.policy == Policy::not_larger ? std::numeric_limits<double>::infinity() : 0.0;
        for (std::size_t k = 0; k < count; ++k) {
          const double r = static_cast<double>(sizes[k]) / static_cast<double>(shape[static_cast<std::size_t>(axes[k])]);
          common = attrs_.policy == Policy::not_larger ? std::min(common, r) : std::max(common, r);
        }
      }
      for (std::size_t k = 0; k < count; ++k) {
        const auto d = static_cast<std::size_t>(axes[k]);
        const double in = static_cast<double>(shape[d]);
        if (attrs_.policy == Policy::stretch) {
          out[d] = sizes[k];
          length[d] = static_cast<double>(sizes[k]);
          axis_scale[d] = static_cast<double>(sizes[k]) / in;
        } else {
          // round_int of the operator text: halfway cases up.
          const double l = common * in;
          if (!(l < 0x1p62)) throw InputError(fmt::format("{}: sizes {} make the output too large", label, sizes));
          out[d] = static_cast<int64_t>(std::floor(l + 0.5));
          length[d] = l;
          axis_scale[d] = common;
        }
      }
    }
    for (std::size_t d = 0; d < shape.size(); ++d)
      if (shape[d] == 0 && out[d] > 0)
        throw InputError(fmt::format("{}: axis {} of the input {} is empty but the output's is {}", label, d,
                                     shape_to_string(shape), out[d]));
    if (crop)
      for (std::size_t k = 0; k < count; ++k) {
        start[static_cast<std::size_t>(axes[k])] = roi[k];
        end[static_cast<std::size_t>(axes[k])] = roi[k + count];
      }
    plan_.out = out;
    plan_.axes.clear();
    for (std::size_t d = 0; d < shape.size(); ++d)
      plan_.axes.push_back(build_axis(attrs_, shape[d], out[d], axis_scale[d], length[d], start[d], end[d]));
    plan_.two_d = rank >= 2;
    for (int64_t d = 0; d + 2 < rank; ++d) plan_.two_d = plan_.two_d && plan_.axes[static_cast<std::size_t>(d)].identity;
    Shape in_shape(shape.begin(), shape.end());
    plan_.in_strides = row_major_strides(in_shape);
    plan_.repeat_last = 0;
    if (rank >= 1 && attrs_.mode == Mode::nearest) {
      const AxisTable& last = plan_.axes.back();
      const int64_t f = last.in > 0 ? last.out / last.in : 0;
      bool repeats = f >= 1 && last.out == f * last.in && !last.any_outside;
      for (int64_t o = 0; o < last.out && repeats; ++o) repeats = last.index[static_cast<std::size_t>(o)] == o / f;
      if (repeats) plan_.repeat_last = f;
    }
    plan_.rows_repeat2 = false;
    if (rank >= 2 && attrs_.mode == Mode::nearest) {
      const AxisTable& rows = plan_.axes[static_cast<std::size_t>(rank - 2)];
      bool pairs = rows.in > 0 && rows.out == 2 * rows.in && !rows.any_outside;
      for (int64_t o = 0; o < rows.out && pairs; ++o) pairs = rows.index[static_cast<std::size_t>(o)] == o / 2;
      plan_.rows_repeat2 = pairs;
    }
    plan_.key = key_;
    ++plan_generation_;
    return plan_;
  }

  // Splits `lines` into `blocks` contiguous parts; fn(block, begin, end). One block per
  // participant, so that each block owns one slot of the kernel's scratch.
  template <typename F>
  void for_blocks(KernelExecution& execution, int64_t lines, int threads, F&& fn) {
    const int blocks = static_cast<int>(std::max<int64_t>(1, std::min<int64_t>(threads, lines)));
    execution.parallel_for(blocks, 1, blocks, [&](int64_t b0, int64_t b1) {
      for (int64_t b = b0; b < b1; ++b) {
        const BlockRange r = partition_block(lines, 1, blocks, static_cast<int>(b));
        fn(b, r.begin, r.end);
      }
    });
  }

  // Nearest on the last two axes: a gather through the column table per output row; an output
  // row that reads the same input row as the one before it is a copy of that row.
  template <typename U>
  void nearest_2d(KernelExecution& execution, const Plan& plan, const U* in, U* out, U fill, int threads) {
    const std::size_t r = plan.axes.size();
    const AxisTable& ty = plan.axes[r - 2];
    const AxisTable& tx = plan.axes[r - 1];
    const int64_t in_w = tx.in, in_plane = ty.in * tx.in, out_h = ty.out, out_w = tx.out;
    const int64_t lines = shape_element_count(plan.out) / out_w;
    const int64_t* ix = tx.index.data();
    const int64_t* iy = ty.index.data();
    if constexpr (sizeof(U) == 4) {
      if (isa_rows_ != nullptr && plan.rows_repeat2 && plan.repeat_last == 2) {
        // Every output row pair (2j, 2j + 1) repeats input row j of the flattened planes (out_h
        // = 2 in_h): one ISA call for a block's pairs; a block edge inside a pair writes its row
        // alone.
        const auto* src = reinterpret_cast<const float*>(in);
        auto* dst = reinterpret_cast<float*>(out);
        for_blocks(execution, lines, threads, [&](int64_t, int64_t begin, int64_t end) {
          if (begin % 2 != 0) repeat_row(src + begin / 2 * in_w, dst + begin * out_w, in_w, 2);
          const int64_t first = (begin + 1) / 2, last = end / 2;  // pairs [first, last)
          if (last > first) isa_rows_(src + first * in_w, in_w, last - first, dst + 2 * first * out_w);
          if (end % 2 != 0) repeat_row(src + (end - 1) / 2 * in_w, dst + (end - 1) * out_w, in_w, 2);
        });
        return;
      }
    }
    for_blocks(execution, lines, threads, [&](int64_t, int64_t begin, int64_t end) {
      int64_t plane = begin / out_h, oy = begin % out_h;
      for (int64_t line = begin; line < end;) {
        U* dst = out + line * out_w;
        const auto y = static_cast<std::size_t>(oy);
        int64_t k = 1;  // output rows written by this step
        if (ty.outside[y]) {
          std::fill(dst, dst + out_w, fill);
        } else {
          // The output rows from this one on that read the same input row (same plane and block).
          while (line + k < end && oy + k < out_h && !ty.outside[y + static_cast<std::size_t>(k)] && iy[oy + k] == iy[oy]) ++k;
          const U* src = in + plane * in_plane + iy[oy] * in_w;
          if (plan.repeat_last == 2 && k == 2) {
            repeat2_rows(src, dst, dst + out_w, in_w);  // 2x nearest: both rows from one read
          } else {
            if (plan.repeat_last > 0) {
              repeat_row(src, dst, in_w, plan.repeat_last);
            } else {
              for (int64_t ox = 0; ox < out_w; ++ox) dst[ox] = src[ix[ox]];
              if (tx.any_outside)
                for (int64_t ox = 0; ox < out_w; ++ox)
                  if (tx.outside[static_cast<std::size_t>(ox)]) dst[ox] = fill;
            }
            for (int64_t row = 1; row < k; ++row)
              std::memcpy(dst + row * out_w, dst, static_cast<std::size_t>(out_w) * sizeof(U));
          }
        }
        line += k;
        oy += k;
        if (oy == out_h) {
          oy = 0;
          ++plane;
        }
      }
    });
  }

  // The weights of the plan in the compute type (float for float32 and the 16-bit floats).
  template <typename C>
  std::vector<C>& typed(std::vector<float>& f, std::vector<double>& d) {
    if constexpr (std::is_same_v<C, float>) return f;
    else return d;
  }

  // Linear or cubic on the last two axes, parallel over output rows. Each input row an output row
  // needs is interpolated along W once into a small per-block cache (rows are reused by the next
  // output rows), then the rows are combined along H: the reference's nesting, innermost axis
  // first, in the compute type. Zero weights are skipped (identity axes, integral coordinates).
  template <typename T>
  void interpolate_2d(KernelExecution& execution, const Plan& plan, const T* in, T* out, int threads) {
    using C = compute_t<T>;
    const std::size_t r = plan.axes.size();
    const AxisTable& ty = plan.axes[r - 2];
    const AxisTable& tx = plan.axes[r - 1];
    const int64_t in_w = tx.in, in_h = ty.in, in_plane = ty.in * tx.in, out_h = ty.out, out_w = tx.out;
    const int64_t lines = shape_element_count(plan.out) / out_w;
    std::vector<C>& wy = typed<C>(wy_f_, wy_d_);
    std::vector<C>& wx = typed<C>(wx_f_, wx_d_);
    if (typed_generation_ != plan_generation_) {
      wy.assign(ty.weight.begin(), ty.weight.end());
      wx.assign(tx.weight.begin(), tx.weight.end());
      typed_generation_ = plan_generation_;
    }
    const int blocks = static_cast<int>(std::max<int64_t>(1, std::min<int64_t>(threads, lines)));
    const int64_t slots = ty.taps + 1;
    std::vector<C>& scratch = typed<C>(scratch_f_, scratch_d_);
    scratch.resize(static_cast<std::size_t>(blocks * (slots + 1) * out_w));
    // Each block's keys and use marks a cache line or more apart from the next block's: written for
    // every output row, they made two threads slower than one when they shared lines (2x bilinear
    // on 64x80x80: 1.62 ms at T=2 against 0.91 ms at T=1).
    const int64_t key_stride = slots + kCacheLineInt64s;
    slot_keys_.assign(static_cast<std::size_t>(blocks * key_stride), -1);
    slot_used_.assign(static_cast<std::size_t>(blocks * key_stride), -1);
    const C fill = static_cast<C>(attrs_.extrapolation);
    const int64_t taps_x = tx.taps, taps_y = ty.taps;
    const int64_t* ix = tx.index.data();
    const C* pwx = wx.data();
    // One input row interpolated along W.
    auto horizontal = [&](const T* row, C* h) {
      if (taps_x == 2) {
        for (int64_t ox = 0; ox < out_w; ++ox) {
          const int64_t* i = ix + 2 * ox;
          const C* w = pwx + 2 * ox;
          h[ox] = w[0] * load<T>(row[i[0]]) + w[1] * load<T>(row[i[1]]);
        }
      } else {
        for (int64_t ox = 0; ox < out_w; ++ox) {
          const int64_t* i = ix + taps_x * ox;
          const C* w = pwx + taps_x * ox;
          C v = w[0] * load<T>(row[i[0]]);
          for (int64_t k = 1; k < taps_x; ++k) v += w[k] * load<T>(row[i[k]]);
          h[ox] = v;
        }
      }
    };
    for_blocks(execution, lines, threads, [&](int64_t b, int64_t begin, int64_t end) {
      C* rows = scratch.data() + b * (slots + 1) * out_w;
      C* acc_buffer = rows + slots * out_w;
      int64_t* keys = slot_keys_.data() + b * key_stride;
      int64_t* used = slot_used_.data() + b * key_stride;
      int64_t plane = begin / out_h, oy = begin % out_h;
      for (int64_t line = begin; line < end; ++line) {
        T* dst = out + line * out_w;
        C* acc = acc_buffer;
        if constexpr (std::is_same_v<T, C>) acc = dst;
        if (ty.outside[static_cast<std::size_t>(oy)]) {
          std::fill(acc, acc + out_w, fill);
        } else {
          bool first = true;
          for (int64_t t = 0; t < taps_y; ++t) {
            const C w = wy[static_cast<std::size_t>(oy * taps_y + t)];
            if (w == 0) continue;
            const int64_t key = plane * in_h + ty.index[static_cast<std::size_t>(oy * taps_y + t)];
            int64_t slot = -1, oldest = 0;
            for (int64_t s = 0; s < slots; ++s) {
              if (keys[s] == key) slot = s;
              if (used[s] < used[oldest]) oldest = s;
            }
            if (slot < 0) {
              slot = oldest;
              keys[slot] = key;
              horizontal(in + key / in_h * in_plane + key % in_h * in_w, rows + slot * out_w);
            }
            used[slot] = line;
            const C* h = rows + slot * out_w;
            if (first && w == 1) {
              std::copy_n(h, out_w, acc);
            } else if (first) {
              for (int64_t ox = 0; ox < out_w; ++ox) acc[ox] = w * h[ox];
            } else {
              for (int64_t ox = 0; ox < out_w; ++ox) acc[ox] += w * h[ox];
            }
            first = false;
          }
          if (first) std::fill(acc, acc + out_w, C(0));  // every weight 0: nothing to read
          if (tx.any_outside)
            for (int64_t ox = 0; ox < out_w; ++ox)
              if (tx.outside[static_cast<std::size_t>(ox)]) acc[ox] = fill;
        }
        if constexpr (!std::is_same_v<T, C>)
          for (int64_t ox = 0; ox < out_w; ++ox) dst[ox] = store<T>(acc[ox]);
        if (++oy == out_h) {
          oy = 0;
          ++plane;
        }
      }
    });
  }

  // Output element e's coordinates, for the N-D paths (one division per axis per block only).
  static void coordinates(const Shape& out, int64_t e, int64_t* coord) {
    for (std::size_t d = out.size(); d-- > 0;) {
      coord[d] = e % out[d];
      e /= out[d];
    }
  }
  static void advance(const Shape& out, int64_t* coord) {
    for (std::size_t d = out.size(); d-- > 0;) {
      if (++coord[d] < out[d]) return;
      coord[d] = 0;
    }
  }
  static bool outside(const Plan& plan, const int64_t* coord) {
    for (std::size_t d = 0; d < plan.axes.size(); ++d)
      if (plan.axes[d].any_outside && plan.axes[d].outside[static_cast<std::size_t>(coord[d])]) return true;
    return false;
  }

  // Per-block coordinates of the N-D paths, kept across runs: block b's at coordinate_stride() * b,
  // a cache line apart from the next block's (they change with every output element).
  int64_t coordinate_stride() const { return static_cast<int64_t>(plan_.axes.size()) + kCacheLineInt64s; }
  int64_t* block_coordinates(int64_t n, int threads) {
    const int64_t blocks = std::max<int64_t>(1, std::min<int64_t>(threads, n));
    coords_.resize(static_cast<std::size_t>(blocks * coordinate_stride()));
    return coords_.data();
  }

  template <typename U>
  void nearest_nd(KernelExecution& execution, const Plan& plan, const U* in, U* out, U fill, int threads) {
    const std::size_t rank = plan.axes.size();
    const int64_t* strides = plan.in_strides.data();
    const int64_t n = shape_element_count(plan.out);
    int64_t* coords = block_coordinates(n, threads);
    for_blocks(execution, n, threads, [&](int64_t b, int64_t begin, int64_t end) {
      int64_t* coord = coords + b * coordinate_stride();
      coordinates(plan.out, begin, coord);
      for (int64_t e = begin; e < end; ++e) {
        if (outside(plan, coord)) {
          out[e] = fill;
        } else {
          int64_t offset = 0;
          for (std::size_t d = 0; d < rank; ++d) offset += plan.axes[d].index[static_cast<std::size_t>(coord[d])] * strides[d];
          out[e] = in[offset];
        }
        advance(plan.out, coord);
      }
    });
  }

  // The reference's nesting: axis d combines the values of axes d+1.. at its taps.
  template <typename T>
  static double nested(const Plan& plan, const int64_t* strides, const int64_t* coord, const T* in, std::size_t d,
                       int64_t offset) {
    if (d == plan.axes.size()) return static_cast<double>(load<T>(in[offset]));
    const AxisTable& t = plan.axes[d];
    const int64_t base = coord[d] * t.taps;
    double sum = 0;
    for (int64_t k = 0; k < t.taps; ++k) {
      const double w = t.weight[static_cast<std::size_t>(base + k)];
      if (w == 0) continue;
      sum += w * nested(plan, strides, coord, in, d + 1, offset + t.index[static_cast<std::size_t>(base + k)] * strides[d]);
    }
    return sum;
  }

  template <typename T>
  void interpolate_nd(KernelExecution& execution, const Plan& plan, const T* in, T* out, int threads) {
    using C = compute_t<T>;
    const int64_t* strides = plan.in_strides.data();
    const int64_t n = shape_element_count(plan.out);
    const T fill = store<T>(static_cast<C>(attrs_.extrapolation));
    int64_t* coords = block_coordinates(n, threads);
    for_blocks(execution, n, threads, [&](int64_t b, int64_t begin, int64_t end) {
      int64_t* coord = coords + b * coordinate_stride();
      coordinates(plan.out, begin, coord);
      for (int64_t e = begin; e < end; ++e) {
        out[e] = outside(plan, coord) ? fill : store<T>(static_cast<C>(nested(plan, strides, coord, in, 0, 0)));
        advance(plan.out, coord);
      }
    });
  }

  Attributes attrs_;
  ElementType type_;
  Repeat2RowsF32 isa_rows_;
  const char* isa_variant_;
  Plan plan_;
  int64_t plan_generation_ = 0, typed_generation_ = -1;
  std::vector<double> key_;
  // Scratch kept across runs (the steady state allocates nothing): typed weights, row caches.
  std::vector<float> wx_f_, wy_f_, scratch_f_;
  std::vector<double> wx_d_, wy_d_, scratch_d_;
  std::vector<int64_t> slot_keys_, slot_used_, coords_, sizes_buf_;
  std::vector<double> scales_buf_, roi_buf_;
  std::string_view last_variant_;
};

// Calibration: an opset-13 Resize 2x on [1, c, 16, 16] (bilinear for the float types unless
// `nearest`, nearest for the others); the threshold counts output elements.
CalibrationWorkloadFunction resize_workload(bool upsample, ElementType type, bool nearest) {
  return [upsample, type, nearest](int64_t work, int, uint32_t seed) {
    const int64_t c = std::max<int64_t>(1, work / 1024);
    Tensor scales(ElementType::float32, {4});
    const float values[] = {1, 1, 2, 2};
    std::copy_n(values, 4, scales.data<float>());
    const std::string mode = is_float_type(type) && !nearest ? "linear" : "nearest";
    CalibrationWorkload w = one_node_workload(
        upsample ? "Upsample" : "Resize", upsample ? 9 : 13, fmt::format("mode = \"{}\"", mode),
        {{"x", random_tensor(type, {1, c, 16, 16}, seed)}, {"scales", std::move(scales)}},
        {{"y", type, {1, c, 32, 32}}}, c * 1024);
    if (!upsample) {
      // Resize-13 takes (X, roi, scales): the roi is omitted.
      const auto at = w.model_text.find("(x, scales)");
      if (at != std::string::npos) w.model_text.replace(at, 11, "(x, , scales)");
    }
    return w;
  };
}

}  // namespace

void register_resize_kernels(KernelTable& table) {
  for (bool upsample : {false, true}) {
    const std::string op = upsample ? "Upsample" : "Resize";
#if defined(ONNX_LIGHT_X86_SIMD)
    // float32 with wider stores for the 2x nearest rows (FPN upsampling), widest unit first; the
    // portable definition below stays last. Other modes and factors run the portable loops.
    struct Isa {
      const char* implementation;
      Repeat2RowsF32 rows;
      const char* variant;
      std::string (*unavailable)(const CpuFeatures&);
    };
    for (const Isa& isa : {Isa{"avx512", simd::repeat2_rows_f32_avx512, "nearest_2x_rows_avx512", needs_avx512},
                           Isa{"avx2", simd::repeat2_rows_f32_avx2, "nearest_2x_rows_avx2", needs_avx2_fma}}) {
      KernelDef def = make_def(op, upsample ? OpsetRange{7, 9} : OpsetRange{10}, ElementType::float32,
                               parallel_threshold_schema(elementwise_key(op, ElementType::float32, 1, isa.implementation),
                                                         kDefaultMinimumElements));
      def.implementation = isa.implementation;
      def.unavailable_reason = isa.unavailable;
      def.create = [upsample, isa](const KernelCreateInfo& info) -> std::unique_ptr<Kernel> {
        return std::make_unique<ResizeKernel>(info, upsample, ElementType::float32, isa.rows, isa.variant);
      };
      // Measured on the 2x nearest rows: the only path where this implementation differs.
      def.calibration_workload = resize_workload(upsample, ElementType::float32, /*nearest=*/true);
      table.add(std::move(def));
    }
#endif
    for (ElementType type : supported_element_types()) {
      KernelDef def = make_def(op, upsample ? OpsetRange{7, 9} : OpsetRange{10}, type,
                               parallel_threshold_schema(elementwise_key(op, type, 1), kDefaultMinimumElements));
      def.create = [upsample, type](const KernelCreateInfo& info) -> std::unique_ptr<Kernel> {
        return std::make_unique<ResizeKernel>(info, upsample, type);
      };
      def.calibration_workload = resize_workload(upsample, type, /*nearest=*/false);
      table.add(std::move(def));
    }
  }
}

}  // namespace onnx_light::runtime::kernels
