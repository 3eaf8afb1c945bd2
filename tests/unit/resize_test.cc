// Resize and Upsample against a double-precision reference written here the way ONNX's reference
// nests it (1-D interpolation of the values the inner axes give, neighbours found by distance on
// an edge-padded axis): every mode, nearest_mode and coordinate_transformation_mode, up and down,
// non-integer scales, 1x1 inputs, sizes with keep_aspect_ratio_policy, axes subsets, antialias,
// tf_crop_and_resize extrapolation, N-D (channel axis, trilinear); identical bits at 1 and 2
// threads; the code path each case reports; and the errors, which name the node.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "kernels/element_traits.h"
#include "onnx_light/runtime/calibration_workload.h"
#include "onnx_light/runtime/error.h"
#include "onnx_light/runtime/kernel_table.h"
#include "onnx_light/runtime/session.h"
#include "onnx_light/runtime/tuning_registry.h"
#include "implementation_tables.h"
#include "parallel_registry.h"
#include "test_models.h"

using namespace onnx_light;
using namespace onnx_light::runtime;

namespace {

struct ResizeCase {
  std::string name;
  Shape x;
  std::string mode = "nearest";
  std::string transform = "half_pixel";
  std::string nearest = "round_prefer_floor";
  std::vector<float> scales;  // for the listed axes
  std::vector<int64_t> sizes;
  std::vector<int64_t> axes;  // opset 18; empty: all
  std::string policy = "stretch";
  bool antialias = false;
  double cubic_a = -0.75;
  bool exclude_outside = false;
  std::vector<float> roi;  // tf_crop_and_resize
  float extrapolation = 0;
  std::string variant;  // the path the kernel must report
};

// ---- The reference ----------------------------------------------------------------------------

struct AxisSpec {
  double scale = 1, length = 0;  // length_resized as a real (scale * in for scales)
  int64_t out = 0;
  double roi0 = 0, roi1 = 1;
};

std::vector<double> coefficients(const ResizeCase& c, double ratio, double scale) {
  if (c.mode == "nearest") {
    if (ratio == 1) return {0, 1};
    if (c.nearest == "round_prefer_floor") return {double(ratio <= 0.5), double(ratio > 0.5)};
    if (c.nearest == "round_prefer_ceil") return {double(ratio < 0.5), double(ratio >= 0.5)};
    if (c.nearest == "floor") return {1, 0};
    return {0, 1};
  }
  const bool aa = c.antialias && scale < 1;
  std::vector<double> w;
  if (c.mode == "linear") {
    if (!aa) return {1 - ratio, ratio};
    const int start = int(std::floor(-1 / scale) + 1);
    for (int i = start; i < start + 2 - 2 * start; ++i) w.push_back(std::clamp(1 - std::fabs((i - ratio) * scale), 0.0, 1.0));
  } else {
    const double A = c.cubic_a;
    if (!aa) {
      const double r = ratio, q = 1 - ratio;
      return {((A * (r + 1) - 5 * A) * (r + 1) + 8 * A) * (r + 1) - 4 * A, ((A + 2) * r - (A + 3)) * r * r + 1,
              ((A + 2) * q - (A + 3)) * q * q + 1, ((A * (q + 1) - 5 * A) * (q + 1) + 8 * A) * (q + 1) - 4 * A};
    }
    auto k = [&](double x) {
      x = std::fabs(x);
      if (x <= 1) return (A + 2) * x * x * x - (A + 3) * x * x + 1;
      if (x < 2) return A * x * x * x - 5 * A * x * x + 8 * A * x - 4 * A;
      return 0.0;
    };
    const int start = int(std::floor(-2 / scale) + 1);
    for (int i = start; i < 2 - start; ++i) w.push_back(k(scale * (i - ratio)));
  }
  const double sum = std::accumulate(w.begin(), w.end(), 0.0);
  for (double& v : w) v /= sum;
  return w;
}

double interpolate_1d(const ResizeCase& c, const std::vector<double>& data, const AxisSpec& a, int64_t o) {
  const double in = double(data.size()), x = double(o);
  double xo = 0;
  if (c.transform == "half_pixel") xo = (x + 0.5) / a.scale - 0.5;
  else if (c.transform == "pytorch_half_pixel") xo = a.length > 1 ? (x + 0.5) / a.scale - 0.5 : 0;
  else if (c.transform == "align_corners") xo = a.length == 1 ? 0 : x * (in - 1) / (a.length - 1);
  else if (c.transform == "asymmetric") xo = x / a.scale;
  else if (c.transform == "tf_half_pixel_for_centers") xo = (x + 0.5) / a.scale;
  else if (c.transform == "half_pixel_symmetric")
    xo = in / 2 * (1 - double(a.out) / a.length) + (x + 0.5) / a.scale - 0.5;
  else {  // tf_crop_and_resize
    xo = a.length == 1 ? (a.roi1 - a.roi0) * (in - 1) / 2 : x * (a.roi1 - a.roi0) * (in - 1) / (a.length - 1);
    xo += a.roi0 * (in - 1);
    if (xo < 0 || xo > in - 1) return c.extrapolation;
  }
  const double ratio = xo == std::floor(xo) ? 1 : xo - std::floor(xo);
  std::vector<double> w = coefficients(c, ratio, a.scale);
  const auto n = static_cast<int64_t>(w.size());
  // The n indices nearest to xo (ties: the smaller), on the axis padded by ceil(n / 2) at each end.
  const int64_t pad = (n + 1) / 2;
  std::vector<int64_t> candidates;
  for (int64_t i = -pad; i < int64_t(data.size()) + pad; ++i) candidates.push_back(i);
  std::stable_sort(candidates.begin(), candidates.end(),
                   [&](int64_t p, int64_t q) { return std::fabs(xo - double(p)) < std::fabs(xo - double(q)); });
  candidates.resize(static_cast<std::size_t>(n));
  std::sort(candidates.begin(), candidates.end());
  if (c.exclude_outside) {
    double sum = 0;
    for (int64_t k = 0; k < n; ++k) {
      const int64_t i = candidates[std::size_t(k)];
      if (i < 0 || i >= int64_t(data.size())) w[std::size_t(k)] = 0;
      sum += w[std::size_t(k)];
    }
    for (double& v : w) v /= sum;
  }
  double v = 0;
  for (int64_t k = 0; k < n; ++k) {
    const int64_t i = std::clamp<int64_t>(candidates[std::size_t(k)], 0, int64_t(data.size()) - 1);
    v += w[std::size_t(k)] * data[std::size_t(i)];
  }
  return v;
}

struct ReferenceAxes {
  Shape out;
  std::vector<AxisSpec> axes;
};

ReferenceAxes reference_axes(const ResizeCase& c) {
  ReferenceAxes r;
  const std::size_t rank = c.x.size();
  std::vector<int64_t> axes = c.axes;
  if (axes.empty())
    for (std::size_t d = 0; d < rank; ++d) axes.push_back(int64_t(d));
  for (int64_t& a : axes)
    if (a < 0) a += int64_t(rank);
  r.axes.resize(rank);
  r.out = c.x;
  for (std::size_t d = 0; d < rank; ++d) r.axes[d] = {1, double(c.x[d]), c.x[d]};
  double common = c.policy == "not_larger" ? 1e300 : 0;
  for (std::size_t k = 0; k < axes.size() && !c.sizes.empty(); ++k) {
    const double ratio = double(c.sizes[k]) / double(c.x[std::size_t(axes[k])]);
    common = c.policy == "not_larger" ? std::min(common, ratio) : std::max(common, ratio);
  }
  for (std::size_t k = 0; k < axes.size(); ++k) {
    AxisSpec& a = r.axes[std::size_t(axes[k])];
    const double in = double(c.x[std::size_t(axes[k])]);
    if (!c.scales.empty()) {
      a.scale = c.scales[k];
      a.length = a.scale * in;
      a.out = int64_t(std::floor(a.length));
    } else if (c.policy == "stretch") {
      a.out = c.sizes[k];
      a.length = double(a.out);
      a.scale = a.length / in;
    } else {
      a.scale = common;
      a.length = common * in;
      a.out = int64_t(std::floor(a.length + 0.5));
    }
    if (!c.roi.empty()) {
      a.roi0 = c.roi[k];
      a.roi1 = c.roi[k + axes.size()];
    }
    r.out[std::size_t(axes[k])] = a.out;
  }
  return r;
}

// interpolate_1d is affine in its data (a selection, or weights that depend only on positions, plus
// extrapolation_value outside the roi), so each (axis, output index) is `constant + sum w[i] * data[i]`,
// found once by evaluating it on the zero line and on unit lines. The N-D reference then visits only
// the input positions with a nonzero weight instead of the whole input per output element (which
// made this test slow under the sanitizers' -O0 builds), and nests the axes as ONNX does.
struct AxisAffine {
  double constant = 0;
  std::vector<std::pair<int64_t, double>> weights;  // input index, weight (nonzero only)
};

std::vector<std::vector<AxisAffine>> axis_affines(const ResizeCase& c, const ReferenceAxes& r) {
  std::vector<std::vector<AxisAffine>> all(c.x.size());
  for (std::size_t d = 0; d < c.x.size(); ++d) {
    const auto in = std::size_t(c.x[d]);
    for (int64_t o = 0; o < r.out[d]; ++o) {
      AxisAffine f;
      std::vector<double> line(in, 0.0);
      f.constant = interpolate_1d(c, line, r.axes[d], o);
      for (std::size_t i = 0; i < in; ++i) {
        line[i] = 1.0;
        const double w = interpolate_1d(c, line, r.axes[d], o) - f.constant;
        line[i] = 0.0;
        if (w != 0.0) f.weights.emplace_back(int64_t(i), w);
      }
      all[d].push_back(std::move(f));
    }
  }
  return all;
}

double reference_at(const ResizeCase& c, const std::vector<std::vector<AxisAffine>>& f, const std::vector<double>& x,
                    std::size_t d, int64_t offset, const std::vector<int64_t>& o) {
  int64_t stride = 1;
  for (std::size_t k = d + 1; k < c.x.size(); ++k) stride *= c.x[k];
  const AxisAffine& a = f[d][std::size_t(o[d])];
  double sum = a.constant;
  for (const auto& [i, w] : a.weights)
    sum += w * (d + 1 == c.x.size() ? x[std::size_t(offset + i)] : reference_at(c, f, x, d + 1, offset + i * stride, o));
  return sum;
}

std::vector<double> resize_reference(const ResizeCase& c, const ReferenceAxes& r, const std::vector<double>& x) {
  const auto f = axis_affines(c, r);
  std::vector<double> y;
  std::vector<int64_t> o(c.x.size(), 0);
  const int64_t n = std::accumulate(r.out.begin(), r.out.end(), int64_t{1}, std::multiplies<>());
  for (int64_t e = 0; e < n; ++e) {
    int64_t rest = e;
    for (std::size_t d = c.x.size(); d-- > 0;) {
      o[d] = rest % r.out[d];
      rest /= r.out[d];
    }
    y.push_back(reference_at(c, f, x, 0, 0, o));
  }
  return y;
}

// ---- Running the kernel -----------------------------------------------------------------------

std::string model_text(const ResizeCase& c, const std::string& type) {
  std::string body, inputs = "x, ";
  if (!c.roi.empty()) {
    body += fmt::format("roi = Constant <value = float[{}] {{{}}}> ()\n", c.roi.size(), fmt::join(c.roi, ", "));
    inputs += "roi, ";
  } else {
    inputs += ", ";
  }
  if (!c.scales.empty()) {
    body += fmt::format("s = Constant <value = float[{}] {{{}}}> ()\n", c.scales.size(), fmt::join(c.scales, ", "));
    inputs += "s";
  } else {
    body += fmt::format("z = Constant <value = int64[{}] {{{}}}> ()\n", c.sizes.size(), fmt::join(c.sizes, ", "));
    inputs += ", z";
  }
  std::string attrs = fmt::format("mode = \"{}\", coordinate_transformation_mode = \"{}\", nearest_mode = \"{}\", "
                                  "cubic_coeff_a = {:.6f}, exclude_outside = {}, extrapolation_value = {:.6f}, "
                                  "keep_aspect_ratio_policy = \"{}\", antialias = {}",
                                  c.mode, c.transform, c.nearest, c.cubic_a, c.exclude_outside ? 1 : 0, c.extrapolation,
                                  c.policy, c.antialias ? 1 : 0);
  if (!c.axes.empty()) attrs += fmt::format(", axes = [{}]", fmt::join(c.axes, ", "));
  return fmt::format("<ir_version: 8, opset_import: [\"\" : 18]>\ng ({}[{}] x) => ({}[] y) {{\n{}y = Resize <{}> ({})\n}}",
                     type, fmt::join(c.x, ", "), type, body, attrs, inputs);
}

std::unique_ptr<TuningRegistry> resize_parallel_registry() { return test::parallel_registry({"Resize", "Upsample"}, 2); }

struct Result {
  Tensor y;
  std::string implementation;
};

Result run_text(const std::string& text, const Tensor& x, int threads, TuningRegistry* registry) {
  RuntimeSessionOptions options;
  options.parameters = RuntimeParameters(threads);
  options.registry = registry;
  // The portable implementation, the reference the float32 ISA ones are held to (resize_simd_test.cc).
  options.kernels = &test::table_with_only(
      "resize_portable", [](const KernelDef& d) { return d.op_type == "Resize" || d.op_type == "Upsample"; }, "portable");
  options.profile = true;
  RuntimeSession session(test::parse(text), options);
  RuntimeContext context;
  context.set("x", x);
  session.run(context);
  std::string implementation;
  for (const auto& node : session.profile().nodes)
    if (node.op_type == "Resize" || node.op_type == "Upsample") implementation = node.implementation;
  return {context.get("y"), implementation};
}

bool same_resize_bits(const Tensor& a, const Tensor& b) {
  return a.shape() == b.shape() && a.element_type() == b.element_type() &&
         std::memcmp(a.raw_data(), b.raw_data(), static_cast<std::size_t>(a.byte_size())) == 0;
}

std::vector<double> as_doubles(const Tensor& t) {
  std::vector<double> v;
  for (int64_t i = 0; i < t.element_count(); ++i) {
    switch (t.element_type()) {
      case ElementType::float32: v.push_back(t.data<float>()[i]); break;
      case ElementType::float64: v.push_back(t.data<double>()[i]); break;
      case ElementType::float16: v.push_back(kernels::half_to_float(t.data<uint16_t>()[i])); break;
      case ElementType::bfloat16: v.push_back(kernels::bfloat16_to_float(t.data<uint16_t>()[i])); break;
      default: v.push_back(double(t.data<uint8_t>()[i])); break;
    }
  }
  return v;
}

void check_case(const ResizeCase& c, TuningRegistry* registry) {
  CAPTURE(c.name);
  const Tensor x = random_tensor(ElementType::float32, c.x, 23);
  const ReferenceAxes r = reference_axes(c);
  const std::vector<double> want = resize_reference(c, r, as_doubles(x));
  const std::string text = model_text(c, "float");
  const Result one = run_text(text, x, 1, registry);
  REQUIRE(one.y.shape() == r.out);
  double worst = 0;
  for (int64_t i = 0; i < one.y.element_count(); ++i)
    worst = std::max(worst, std::fabs(double(one.y.data<float>()[i]) - want[std::size_t(i)]));
  // Inputs in [-1, 1); at most a few dozen float32 roundings of values below ~2 in magnitude.
  CHECK(worst <= (c.mode == "nearest" ? 0.0 : 2e-6));
  if (!c.variant.empty()) CHECK(one.implementation == c.variant);
  const Result two = run_text(text, x, 2, registry);
  CHECK(same_resize_bits(one.y, two.y));
}

const char* const kTransforms[] = {"half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric",
                                   "tf_half_pixel_for_centers", "half_pixel_symmetric"};

}  // namespace

TEST_CASE("resize_nearest_every_nearest_mode_and_transform_up_and_down_non_integer_scales") {
  auto registry = resize_parallel_registry();
  for (const char* nearest : {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"})
    for (const char* transform : kTransforms)
      for (const auto& scales : {std::vector<float>{1, 1, 1.7f, 2.5f}, std::vector<float>{1, 1, 0.6f, 0.45f}}) {
        ResizeCase c{fmt::format("nearest {} {} {}", nearest, transform, scales), {2, 3, 5, 7}};
        c.nearest = nearest;
        c.transform = transform;
        c.scales = scales;
        // tf_half_pixel_for_centers moves even an unscaled axis (x = o + 0.5): rounding up, N and C
        // are not identities, so those cases take the N-D path.
        const bool up = std::string(nearest) == "ceil" || std::string(nearest) == "round_prefer_ceil";
        c.variant = std::string(transform) == "tf_half_pixel_for_centers" && up ? "nearest_nd" : "nearest_2d";
        check_case(c, registry.get());
      }
}

TEST_CASE("resize_nearest_integer_factors_repeat_rows_and_columns") {
  // 2x writes two output rows from one read (SSE2 on x86-64 in the portable implementation, odd
  // widths end element by element);
  // other integer factors repeat then copy rows.
  auto registry = resize_parallel_registry();
  for (const char* nearest : {"floor", "round_prefer_floor"})
    for (const char* transform : {"asymmetric", "half_pixel"})
      for (const auto& scales : {std::vector<float>{1, 1, 2, 2}, std::vector<float>{1, 1, 4, 3},
                                 std::vector<float>{1, 1, 8, 8}, std::vector<float>{1, 1, 2, 1}}) {
        ResizeCase c{fmt::format("nearest {} {} {}", nearest, transform, scales), {2, 3, 5, 9}};
        c.nearest = nearest;
        c.transform = transform;
        c.scales = scales;
        c.variant = "nearest_2d";
        check_case(c, registry.get());
      }
}

TEST_CASE("resize_linear_and_cubic_every_transform_up_and_down") {
  auto registry = resize_parallel_registry();
  for (const char* mode : {"linear", "cubic"})
    for (const char* transform : kTransforms)
      for (const auto& scales : {std::vector<float>{1, 1, 2, 2}, std::vector<float>{1, 1, 1.7f, 2.5f},
                                 std::vector<float>{1, 1, 0.6f, 0.45f}}) {
        ResizeCase c{fmt::format("{} {} {}", mode, transform, scales), {1, 3, 5, 7}, mode, transform};
        c.scales = scales;
        c.variant = std::string(transform) == "tf_half_pixel_for_centers" ? "interpolate_nd" : "interpolate_2d";
        check_case(c, registry.get());
      }
}

TEST_CASE("resize_cubic_coeff_a_and_exclude_outside") {
  auto registry = resize_parallel_registry();
  for (bool exclude : {false, true})
    for (const auto& scales : {std::vector<float>{1, 1, 2.3f, 1.5f}, std::vector<float>{1, 1, 0.5f, 0.7f}}) {
      ResizeCase c{fmt::format("cubic a=-0.5 exclude={} {}", exclude, scales), {1, 2, 6, 5}, "cubic"};
      c.cubic_a = -0.5;
      c.exclude_outside = exclude;
      c.scales = scales;
      check_case(c, registry.get());
    }
}

TEST_CASE("resize_one_by_one_input_and_one_by_one_output") {
  auto registry = resize_parallel_registry();
  for (const char* mode : {"nearest", "linear", "cubic"})
    for (const char* transform : kTransforms) {
      ResizeCase up{fmt::format("{} {} 1x1 up", mode, transform), {1, 2, 1, 1}, mode, transform};
      up.sizes = {1, 2, 3, 4};
      check_case(up, registry.get());
      ResizeCase down{fmt::format("{} {} to 1x1", mode, transform), {1, 2, 4, 5}, mode, transform};
      down.sizes = {1, 2, 1, 1};
      check_case(down, registry.get());
    }
}

TEST_CASE("resize_sizes_with_keep_aspect_ratio_policy_and_axes") {
  auto registry = resize_parallel_registry();
  for (const char* policy : {"stretch", "not_larger", "not_smaller"})
    for (const char* mode : {"nearest", "linear"}) {
      ResizeCase c{fmt::format("{} {}", policy, mode), {1, 2, 6, 9}, mode};
      c.policy = policy;
      c.axes = {2, 3};
      c.sizes = {4, 4};  // ratios 0.667 and 0.444: the policies give 4x6, 3x4 (rounded) and 4x4
      check_case(c, registry.get());
      ResizeCase up = c;
      up.name += " up";
      up.sizes = {10, 11};
      check_case(up, registry.get());
    }
}

TEST_CASE("resize_axes_subset_last_axis_only_and_negative_axis") {
  auto registry = resize_parallel_registry();
  ResizeCase last{"axes [-1] linear", {2, 3, 4, 6}, "linear"};
  last.axes = {-1};
  last.scales = {1.5f};
  last.variant = "interpolate_2d";
  check_case(last, registry.get());
  ResizeCase height{"axes [2] cubic", {1, 2, 5, 4}, "cubic"};
  height.axes = {2};
  height.scales = {0.8f};
  check_case(height, registry.get());
}

TEST_CASE("resize_channel_axis_and_trilinear_take_the_nd_path") {
  auto registry = resize_parallel_registry();
  ResizeCase channel{"linear over channels", {1, 4, 3, 3}, "linear"};
  channel.scales = {1, 1.5f, 1, 2};
  channel.variant = "interpolate_nd";
  check_case(channel, registry.get());
  ResizeCase nearest{"nearest over channels", {2, 3, 2, 3}, "nearest"};
  nearest.scales = {1, 2, 1.5f, 1};
  nearest.variant = "nearest_nd";
  check_case(nearest, registry.get());
  ResizeCase trilinear{"trilinear 5-D", {1, 2, 3, 4, 5}, "linear", "align_corners"};
  trilinear.scales = {1, 1, 1.7f, 0.8f, 1.4f};
  trilinear.variant = "interpolate_nd";
  check_case(trilinear, registry.get());
  ResizeCase rank1{"rank 1 cubic", {9}, "cubic", "asymmetric"};
  rank1.scales = {1.6f};
  check_case(rank1, registry.get());
}

TEST_CASE("resize_antialias_downscale_linear_and_cubic") {
  auto registry = resize_parallel_registry();
  for (const char* mode : {"linear", "cubic"})
    for (const auto& scales : {std::vector<float>{1, 1, 0.4f, 0.3f}, std::vector<float>{1, 1, 0.5f, 1.5f}}) {
      ResizeCase c{fmt::format("antialias {} {}", mode, scales), {1, 2, 10, 12}, mode};
      c.antialias = true;
      c.scales = scales;
      check_case(c, registry.get());
    }
  ResizeCase nd{"antialias on the N-D path", {1, 6, 5, 7}, "linear"};
  nd.antialias = true;
  nd.scales = {1, 0.5f, 0.4f, 0.6f};
  nd.variant = "interpolate_nd";
  check_case(nd, registry.get());
}

TEST_CASE("resize_tf_crop_and_resize_roi_and_extrapolation") {
  auto registry = resize_parallel_registry();
  for (const char* mode : {"nearest", "linear", "cubic"}) {
    ResizeCase c{fmt::format("crop {}", mode), {1, 2, 6, 7}, mode, "tf_crop_and_resize"};
    c.roi = {0, 0, -0.2f, 0.1f, 1, 1, 0.9f, 1.3f};  // some output rows and columns outside
    c.sizes = {1, 2, 5, 6};
    c.extrapolation = 10;
    check_case(c, registry.get());
    ResizeCase nd = c;
    nd.name += " N-D";
    nd.roi = {0, 0.25f, 0, 0, 1, 1.5f, 1, 1};
    nd.sizes = {1, 3, 6, 7};
    check_case(nd, registry.get());
  }
}

TEST_CASE("resize_nearest_uint8_is_a_gather_identical_across_threads") {
  auto registry = resize_parallel_registry();
  ResizeCase c{"nearest uint8", {1, 3, 5, 6}};
  c.scales = {1, 1, 2, 1.5f};
  const Tensor x = random_tensor(ElementType::uint8, c.x, 5);
  const ReferenceAxes r = reference_axes(c);
  const std::vector<double> want = resize_reference(c, r, as_doubles(x));
  const std::string text = model_text(c, "uint8");
  const Result one = run_text(text, x, 1, registry.get());
  REQUIRE(one.y.shape() == r.out);
  CHECK(as_doubles(one.y) == want);
  CHECK(same_resize_bits(one.y, run_text(text, x, 2, registry.get()).y));
}

TEST_CASE("resize_double_float16_and_bfloat16_interpolate_in_their_compute_type") {
  // double computes in double, the 16-bit floats in float and round once when stored.
  auto registry = resize_parallel_registry();
  struct TypeCase {
    const char* name;
    ElementType type;
    double tolerance;  // |got - reference| for values in [-1, 1)
  };
  for (const TypeCase& t : {TypeCase{"double", ElementType::float64, 1e-13}, TypeCase{"float16", ElementType::float16, 1e-3},
                            TypeCase{"bfloat16", ElementType::bfloat16, 8e-3}})
    for (const char* mode : {"linear", "cubic"})
      for (const auto& scales : {std::vector<float>{1, 1, 1.7f, 0.6f}, std::vector<float>{1, 2, 1.5f, 1}}) {
        ResizeCase c{fmt::format("{} {} {}", t.name, mode, scales), {1, 2, 5, 6}, mode};
        c.scales = scales;
        CAPTURE(c.name);
        const Tensor x = random_tensor(t.type, c.x, 41);
        const ReferenceAxes r = reference_axes(c);
        const std::vector<double> want = resize_reference(c, r, as_doubles(x));
        const std::string text = model_text(c, t.name);
        const Result one = run_text(text, x, 1, registry.get());
        REQUIRE(one.y.shape() == r.out);
        CHECK(one.implementation == (scales[1] == 1 ? "interpolate_2d" : "interpolate_nd"));
        const std::vector<double> got = as_doubles(one.y);
        double worst = 0;
        for (std::size_t i = 0; i < got.size(); ++i) worst = std::max(worst, std::fabs(got[i] - want[i]));
        CHECK(worst <= t.tolerance);
        CHECK(same_resize_bits(one.y, run_text(text, x, 2, registry.get()).y));
      }
}

TEST_CASE("resize_large_2x_nchw_identical_at_1_and_2_threads") {
  // Several blocks per thread and row-cache reuse across planes.
  auto registry = resize_parallel_registry();
  for (const char* mode : {"nearest", "linear", "cubic"})
    for (const char* transform : {"asymmetric", "half_pixel", "align_corners"}) {
      ResizeCase c{fmt::format("{} {} 2x", mode, transform), {2, 16, 20, 24}, mode, transform};
      c.nearest = "floor";
      c.scales = {1, 1, 2, 2};
      const Tensor x = random_tensor(ElementType::float32, c.x, 31);
      const std::string text = model_text(c, "float");
      CAPTURE(c.name);
      CHECK(same_resize_bits(run_text(text, x, 1, registry.get()).y, run_text(text, x, 2, registry.get()).y));
    }
}

TEST_CASE("upsample_opset7_and_9_and_resize_opset10_are_asymmetric") {
  auto registry = resize_parallel_registry();
  const Tensor x = random_tensor(ElementType::float32, {1, 2, 3, 4}, 3);
  for (const char* mode : {"nearest", "linear"}) {
    ResizeCase c{mode, {1, 2, 3, 4}, mode, "asymmetric", "floor"};
    c.scales = {1, 1, 2, 1.5f};
    const ReferenceAxes r = reference_axes(c);
    const std::vector<double> want = resize_reference(c, r, as_doubles(x));
    const std::string texts[] = {
        fmt::format("<ir_version: 8, opset_import: [\"\" : 7]>\ng (float[1,2,3,4] x) => (float[] y) {{ y = Upsample "
                    "<mode = \"{}\", scales = [1.0, 1.0, 2.0, 1.5]> (x) }}",
                    mode),
        fmt::format("<ir_version: 8, opset_import: [\"\" : 9]>\ng (float[1,2,3,4] x) => (float[] y) {{ s = Constant "
                    "<value = float[4] {{1, 1, 2, 1.5}}> ()\n y = Upsample <mode = \"{}\"> (x, s) }}",
                    mode),
        fmt::format("<ir_version: 8, opset_import: [\"\" : 10]>\ng (float[1,2,3,4] x) => (float[] y) {{ s = Constant "
                    "<value = float[4] {{1, 1, 2, 1.5}}> ()\n y = Resize <mode = \"{}\"> (x, s) }}",
                    mode)};
    for (const std::string& text : texts) {
      CAPTURE(text);
      const Result got = run_text(text, x, 1, registry.get());
      REQUIRE(got.y.shape() == r.out);
      double worst = 0;
      for (int64_t i = 0; i < got.y.element_count(); ++i)
        worst = std::max(worst, std::fabs(double(got.y.data<float>()[i]) - want[std::size_t(i)]));
      CHECK(worst <= 1e-6);
      CHECK(same_resize_bits(got.y, run_text(text, x, 2, registry.get()).y));
    }
  }
}

TEST_CASE("resize_scales_as_a_graph_input_recomputes_the_tables_when_they_change") {
  const std::string text =
      "<ir_version: 8, opset_import: [\"\" : 13]>\ng (float[1,1,2,3] x, float[4] s) => (float[] y) "
      "{ y = Resize <mode = \"nearest\", coordinate_transformation_mode = \"asymmetric\", nearest_mode = \"floor\"> (x, , s) }";
  RuntimeSession session(test::parse(text), RuntimeSessionOptions{});
  Tensor x(ElementType::float32, {1, 1, 2, 3});
  for (int i = 0; i < 6; ++i) x.data<float>()[i] = float(i);
  for (float f : {2.0f, 0.0f, 3.0f}) {
    Tensor s(ElementType::float32, {4});
    const float v[] = {1, 1, f, 1};
    std::copy_n(v, 4, s.data<float>());
    RuntimeContext context;
    context.set("x", x);
    context.set("s", s);
    if (f == 0) {
      // A run-time value is checked at run time; the next good run still works.
      CHECK_THROWS_WITH_AS(session.run(context), doctest::Contains("must be positive and finite"), InputError);
      continue;
    }
    session.run(context);
    const Tensor y = context.get("y");
    REQUIRE(y.shape() == Shape{1, 1, int64_t(2 * f), 3});
    CHECK(y.data<float>()[y.element_count() - 1] == 5.0f);
    CHECK(y.data<float>()[int64_t(f) * 3] == 3.0f);  // first row of input row 1
  }
}

namespace {

std::string creation_error(const std::string& text) {
  try {
    RuntimeSession session(test::parse(text), RuntimeSessionOptions{});
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

std::string run_error(const std::string& text, const Shape& shape) {
  try {
    RuntimeSession session(test::parse(text), RuntimeSessionOptions{});
    RuntimeContext context;
    context.set("x", random_tensor(ElementType::float32, shape, 1));
    session.run(context);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

std::string resize_model(const std::string& attrs, const std::string& constants, const std::string& inputs,
                         int opset = 18, const std::string& type = "float") {
  return fmt::format("<ir_version: 8, opset_import: [\"\" : {}]>\ng ({}[1,2,3,4] x) => ({}[] y) {{\n{}\ny = Resize "
                     "{} ({}) }}",
                     opset, type, type, constants, attrs.empty() ? "" : "<" + attrs + ">", inputs);
}

}  // namespace

TEST_CASE("resize_errors_name_the_node_and_the_fault") {
  const std::string s4 = "s = Constant <value = float[4] {1, 1, 2, 2}> ()";
  auto named = [](const std::string& text, const std::string& fragment) {
    const std::string m = creation_error(text);
    CAPTURE(m);
    CHECK(m.find("Resize node") != std::string::npos);
    CHECK(m.find(fragment) != std::string::npos);
  };
  named(resize_model("mode = \"bicubic\"", s4, "x, , s"), "attribute 'mode' = \"bicubic\"");
  named(resize_model("coordinate_transformation_mode = \"corners\"", s4, "x, , s"), "coordinate_transformation_mode");
  named(resize_model("nearest_mode = \"up\"", s4, "x, , s"), "nearest_mode");
  named(resize_model("keep_aspect_ratio_policy = \"fit\"", s4, "x, , s"), "keep_aspect_ratio_policy");
  named(resize_model("mode = \"linear\"", "s = Constant <value = float[4] {1, 1, 0, 2}> ()", "x, , s"),
        "must be positive");
  named(resize_model("mode = \"linear\"", "s = Constant <value = float[4] {1, -1, 2, 2}> ()", "x, , s"),
        "must be positive");
  named(resize_model("mode = \"linear\"", s4 + "\nz = Constant <value = int64[4] {1, 2, 6, 8}> ()", "x, , s, z"),
        "only one of 'scales' and 'sizes'");
  named(resize_model("coordinate_transformation_mode = \"tf_crop_and_resize\"", s4, "x, , s"), "needs the 'roi' input");
  // Not an attribute of Resize-13 at all: the schema check at load names it.
  named(resize_model("antialias = 1", s4, "x, , s", 13), "Unrecognized attribute: antialias for operator Resize");
  named(resize_model("mode = \"linear\"", s4, "x, , s", 18, "uint8"), "mode 'linear' is not supported for element type uint8");
  named(resize_model("mode = \"cubic\"", "s = Constant <value = float[4] {1, 1, 2, 2}> ()", "x, s", 10),
        "attribute 'mode' = \"cubic\"");
  const std::string up = creation_error(
      "<ir_version: 8, opset_import: [\"\" : 9]>\ng (float[1,2,3,4] x) => (float[] y) { s = Constant <value = "
      "float[4] {1, 1, 0.5, 2}> ()\n y = Upsample (x, s) }");
  CHECK(up.find("Upsample node") != std::string::npos);
  CHECK(up.find("must be at least 1") != std::string::npos);

  // Known only when the input's rank is: run-time InputErrors, naming the node.
  const std::string rank = run_error(
      resize_model("", "z = Constant <value = int64[3] {1, 2, 6}> ()", "x, , , z"), {1, 2, 3, 4});
  CHECK(rank.find("Resize node") != std::string::npos);
  CHECK(rank.find("sizes has 3 values but the input [1, 2, 3, 4] has rank 4") != std::string::npos);
  const std::string roi = run_error(
      resize_model("coordinate_transformation_mode = \"tf_crop_and_resize\"",
                   "r = Constant <value = float[4] {0, 0, 1, 1}> ()\n" + s4, "x, r, s"),
      {1, 2, 3, 4});
  CHECK(roi.find("roi has 4 values; tf_crop_and_resize needs 8") != std::string::npos);
  const std::string axes = run_error(
      resize_model("axes = [3, -1]", "s = Constant <value = float[2] {2, 2}> ()", "x, , s"), {1, 2, 3, 4});
  CHECK(axes.find("repeats axis 3") != std::string::npos);
  const std::string out_of_range = run_error(
      resize_model("axes = [4]", "s = Constant <value = float[1] {2}> ()", "x, , s"), {1, 2, 3, 4});
  CHECK(out_of_range.find("out of range for rank 4") != std::string::npos);
}
