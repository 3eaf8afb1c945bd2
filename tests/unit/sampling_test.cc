// GridSample and RoiAlign at the edges ONNX's node tests leave out. GridSample: every mode x
// padding_mode x align_corners against a double-precision reference written here from the
// operator text (float and double), hand-computed values at the edges (border and reflection far
// outside, bicubic padding each tap, half-to-even nearest, align_corners mapping), NaN and infinite
// grid values, empty tensors, opset 20's mode names and the errors. RoiAlign: avg and max against
// a naive double reference of ONNX Runtime's loops (every sample visited), adaptive and fixed
// sampling_ratio, rois partly and wholly outside the image, a roi far larger than the image,
// opset 10, empty tensors and the errors. Both: identical bits at 1 and 3 threads.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "onnx_light/runtime/error.h"
#include "onnx_light/runtime/kernel_table.h"
#include "onnx_light/runtime/session.h"
#include "onnx_light/runtime/tuning_registry.h"
#include "parallel_registry.h"
#include "tensor_values.h"
#include "test_models.h"

using namespace onnx_light;
using namespace onnx_light::runtime;
using namespace onnx_light::test;

namespace {

using SamplingInputs = std::vector<std::pair<std::string, Tensor>>;

Tensor run(const std::string& text, const SamplingInputs& inputs, int threads = 1, TuningRegistry* registry = nullptr,
           bool allow_newer_opset = false) {
  RuntimeSessionOptions options;
  options.parameters = RuntimeParameters(threads);
  options.registry = registry;
  options.allow_newer_opset = allow_newer_opset;
  RuntimeSession session(test::parse(text), options);
  RuntimeContext context;
  for (const auto& [name, t] : inputs) context.set(name, t);
  session.run(context);
  return context.get("y");
}

// Thresholds at 1, so that even small cases run in parallel.
std::unique_ptr<TuningRegistry> sampling_parallel_registry() { return test::parallel_registry({"GridSample", "RoiAlign"}); }

bool same_sampling_bits(const Tensor& a, const Tensor& b) {
  return a.shape() == b.shape() && a.element_type() == b.element_type() &&
         std::memcmp(a.raw_data(), b.raw_data(), a.byte_size()) == 0;
}

std::vector<double> sampled_doubles(const Tensor& t) {
  std::vector<double> v;
  for (int64_t i = 0; i < t.element_count(); ++i)
    v.push_back(t.element_type() == ElementType::float64 ? t.data<double>()[i] : double(t.data<float>()[i]));
  return v;
}

Tensor of_type(ElementType type, const Shape& shape, const std::vector<double>& v) {
  Tensor t(type, shape);
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (type == ElementType::float64) t.data<double>()[i] = v[i];
    else t.data<float>()[i] = static_cast<float>(v[i]);
  }
  return t;
}

// Deterministic values in [-2, 2) (xorshift32).
std::vector<double> pseudo_random(std::size_t n, uint32_t seed) {
  std::vector<double> v(n);
  for (auto& e : v) {
    seed ^= seed << 13;
    seed ^= seed >> 17;
    seed ^= seed << 5;
    e = std::round((seed / 4294967296.0 * 4 - 2) * 1024) / 1024;  // exact in float
  }
  return v;
}

const double kNan = std::numeric_limits<double>::quiet_NaN();
const double kInf = std::numeric_limits<double>::infinity();

// ---- GridSample reference ---------------------------------------------------------------------

struct GridCase {
  std::string mode = "bilinear", padding = "zeros";
  int align = 0;
  int opset = 16;
};

std::string grid_model(const GridCase& c, const std::string& type = "float") {
  return fmt::format("<ir_version: 8, opset_import: [\"\" : {}]>\n"
                     "g ({}[N, C, H, W] x, {}[M, A, B, K] grid) => ({}[P, Q, R, S] y) "
                     "{{ y = GridSample <mode = \"{}\", padding_mode = \"{}\", align_corners = {}> (x, grid) }}",
                     c.opset, type, type, type, c.mode, c.padding, c.align);
}

// The reference's reflect rule, as the operator's reference implementation writes it.
double reference_reflect(double x, double lo, double hi) {
  const double range = hi - lo;
  if (x < lo) {
    const double dx = lo - x;
    const auto n = static_cast<int64_t>(dx / range);
    const double r = dx - static_cast<double>(n) * range;
    return n % 2 == 0 ? lo + r : hi - r;
  }
  if (x > hi) {
    const double dx = x - hi;
    const auto n = static_cast<int64_t>(dx / range);
    const double r = dx - static_cast<double>(n) * range;
    return n % 2 == 0 ? hi - r : lo + r;
  }
  return x;
}

// Keys' cubic convolution kernel with A = -0.75.
double keys(double t) {
  const double a = -0.75;
  t = std::fabs(t);
  if (t <= 1) return (a + 2) * t * t * t - (a + 3) * t * t + 1;
  if (t < 2) return a * t * t * t - 5 * a * t * t + 8 * a * t - 4 * a;
  return 0;
}

std::vector<double> grid_reference(const GridCase& c, const std::vector<double>& x, const Shape& xs,
                                   const std::vector<double>& grid, const Shape& gs) {
  const int64_t n_ = xs[0], ch = xs[1], h = xs[2], w = xs[3], ho = gs[1], wo = gs[2];
  const bool align = c.align == 1;
  const double x_lo = align ? 0 : -0.5, x_hi = align ? double(w - 1) : double(w) - 0.5;
  const double y_lo = align ? 0 : -0.5, y_hi = align ? double(h - 1) : double(h) - 0.5;
  auto unnormalize = [&](double v, int64_t length) {
    return align ? (v + 1) / 2 * double(length - 1) : ((v + 1) * double(length) - 1) / 2;
  };
  std::vector<double> y;
  for (int64_t n = 0; n < n_; ++n)
    for (int64_t k = 0; k < ch; ++k) {
      const double* plane = x.data() + (n * ch + k) * h * w;
      // The padding rule, per tap.
      auto pixel = [&](int64_t r, int64_t col) {
        if (c.padding == "zeros") return r >= 0 && r < h && col >= 0 && col < w ? plane[r * w + col] : 0.0;
        if (c.padding == "border") return plane[std::clamp<int64_t>(r, 0, h - 1) * w + std::clamp<int64_t>(col, 0, w - 1)];
        col = static_cast<int64_t>(reference_reflect(double(col), x_lo, x_hi));
        r = static_cast<int64_t>(reference_reflect(double(r), y_lo, y_hi));
        return plane[r * w + col];
      };
      for (int64_t p = 0; p < ho * wo; ++p) {
        double px = unnormalize(grid[std::size_t((n * ho * wo + p) * 2)], w);
        double py = unnormalize(grid[std::size_t((n * ho * wo + p) * 2 + 1)], h);
        if (c.mode == "nearest") {
          y.push_back(pixel(static_cast<int64_t>(std::nearbyint(py)), static_cast<int64_t>(std::nearbyint(px))));
        } else if (c.mode == "bilinear" || c.mode == "linear") {
          const double fx = std::floor(px), fy = std::floor(py);
          const auto x1 = static_cast<int64_t>(fx), y1 = static_cast<int64_t>(fy);
          const double ax = px - fx, ay = py - fy;
          y.push_back((1 - ay) * ((1 - ax) * pixel(y1, x1) + ax * pixel(y1, x1 + 1)) +
                      ay * ((1 - ax) * pixel(y1 + 1, x1) + ax * pixel(y1 + 1, x1 + 1)));
        } else {
          const double fx = std::floor(px), fy = std::floor(py);
          const auto x1 = static_cast<int64_t>(fx), y1 = static_cast<int64_t>(fy);
          double sum = 0;
          for (int64_t i = -1; i <= 2; ++i)
            for (int64_t j = -1; j <= 2; ++j)
              sum += keys(py - double(y1 + i)) * keys(px - double(x1 + j)) * pixel(y1 + i, x1 + j);
          y.push_back(sum);
        }
      }
    }
  return y;
}

// Grid values k / 37 in [-1.6, 1.6] with k not a multiple of 37 (no nearest ties for these
// sizes), every fifth far outside (beyond +-7).
std::vector<double> grid_values(std::size_t n, uint32_t seed) {
  std::vector<double> v = pseudo_random(n, seed);
  for (std::size_t i = 0; i < n; ++i) {
    auto k = static_cast<int64_t>(std::floor(v[i] * 30));
    if (k % 37 == 0) k += 1;
    double g = double(k) / 37;
    if (i % 5 == 4) g += g < 0 ? -7 : 7;
    v[i] = double(static_cast<float>(g));  // the float the kernel sees
  }
  return v;
}

void check_grid_case(const GridCase& c, ElementType type) {
  CAPTURE(c.mode);
  CAPTURE(c.padding);
  CAPTURE(c.align);
  CAPTURE(element_type_name(type));
  const Shape xs{2, 3, 5, 4}, gs{2, 6, 7, 2};
  const std::vector<double> x = pseudo_random(2 * 3 * 5 * 4, 11);
  const std::vector<double> grid = grid_values(2 * 6 * 7 * 2, 29);
  const std::vector<double> want = grid_reference(c, x, xs, grid, gs);
  const Tensor y = run(grid_model(c, type == ElementType::float64 ? "double" : "float"),
                       {{"x", of_type(type, xs, x)}, {"grid", of_type(type, gs, grid)}});
  REQUIRE(y.shape() == Shape{2, 3, 6, 7});
  const std::vector<double> got = sampled_doubles(y);
  const double tolerance = type == ElementType::float64 ? 1e-12 : 2e-5;
  double worst = 0;
  for (std::size_t i = 0; i < want.size(); ++i) worst = std::max(worst, std::fabs(got[i] - want[i]));
  CHECK(worst <= tolerance);
}

// ---- RoiAlign reference -----------------------------------------------------------------------

struct RoiCase {
  std::string mode = "avg";
  int64_t out_h = 3, out_w = 2, sampling_ratio = 2;
  double spatial_scale = 1;
  bool half_pixel = true;
  int opset = 16;
};

std::string roi_model(const RoiCase& c, const std::string& type = "float") {
  std::string attrs = fmt::format("mode = \"{}\", output_height = {}, output_width = {}, sampling_ratio = {}, "
                                  "spatial_scale = {:.9f}",
                                  c.mode, c.out_h, c.out_w, c.sampling_ratio, c.spatial_scale);
  if (c.opset >= 16)
    attrs += fmt::format(", coordinate_transformation_mode = \"{}\"", c.half_pixel ? "half_pixel" : "output_half_pixel");
  return fmt::format("<ir_version: 8, opset_import: [\"\" : {}]>\n"
                     "g ({}[N, C, H, W] x, {}[R, F] rois, int64[L] b) => ({}[P, Q, U, V] y) "
                     "{{ y = RoiAlign <{}> (x, rois, b) }}",
                     c.opset, type, type, type, attrs);
}

// ONNX Runtime's loops in double, visiting every sample (outside ones add weight 0 at pixel 0).
std::vector<double> roi_reference(const RoiCase& c, const std::vector<double>& x, const Shape& xs,
                                  const std::vector<double>& rois, const std::vector<int64_t>& batch) {
  const int64_t ch = xs[1], h = xs[2], w = xs[3];
  std::vector<double> y;
  for (std::size_t r = 0; r < batch.size(); ++r) {
    const double offset = c.half_pixel ? 0.5 : 0;
    const double* box = rois.data() + 4 * r;
    const double sw = box[0] * c.spatial_scale - offset, sh = box[1] * c.spatial_scale - offset;
    double rw = box[2] * c.spatial_scale - offset - sw, rh = box[3] * c.spatial_scale - offset - sh;
    if (!c.half_pixel) {
      rw = std::max(rw, 1.0);
      rh = std::max(rh, 1.0);
    }
    const double bh = rh / double(c.out_h), bw = rw / double(c.out_w);
    const int64_t gh = c.sampling_ratio > 0 ? c.sampling_ratio : std::max<int64_t>(0, int64_t(std::ceil(bh)));
    const int64_t gw = c.sampling_ratio > 0 ? c.sampling_ratio : std::max<int64_t>(0, int64_t(std::ceil(bw)));
    const double count = double(std::max<int64_t>(gh * gw, 1));
    for (int64_t k = 0; k < ch; ++k) {
      const double* plane = x.data() + (batch[r] * ch + k) * h * w;
      for (int64_t ph = 0; ph < c.out_h; ++ph)
        for (int64_t pw = 0; pw < c.out_w; ++pw) {
          double sum = 0, best = 0;
          bool any = false;
          for (int64_t iy = 0; iy < gh; ++iy)
            for (int64_t ix = 0; ix < gw; ++ix) {
              double yy = sh + double(ph) * bh + (double(iy) + 0.5) * bh / double(gh);
              double xx = sw + double(pw) * bw + (double(ix) + 0.5) * bw / double(gw);
              double corners[4] = {0, 0, 0, 0};
              if (!(yy < -1 || yy > double(h) || xx < -1 || xx > double(w))) {
                yy = std::max(yy, 0.0);
                xx = std::max(xx, 0.0);
                auto yl = int64_t(yy), xl = int64_t(xx);
                int64_t yh = yl + 1, xh = xl + 1;
                if (yl >= h - 1) yh = yl = h - 1, yy = double(yl);
                if (xl >= w - 1) xh = xl = w - 1, xx = double(xl);
                const double ly = yy - double(yl), lx = xx - double(xl);
                corners[0] = (1 - ly) * (1 - lx) * plane[yl * w + xl];
                corners[1] = (1 - ly) * lx * plane[yl * w + xh];
                corners[2] = ly * (1 - lx) * plane[yh * w + xl];
                corners[3] = ly * lx * plane[yh * w + xh];
              }
              sum += corners[0] + corners[1] + corners[2] + corners[3];
              const double v = std::max({corners[0], corners[1], corners[2], corners[3]});
              best = any ? std::max(best, v) : v;
              any = true;
            }
          y.push_back(c.mode == "avg" ? sum / count : best);
        }
    }
  }
  return y;
}

struct RoiData {
  Shape xs{2, 3, 8, 9};
  std::vector<double> x = pseudo_random(2 * 3 * 8 * 9, 5);
  // Inside, partly outside (left/top and right/bottom), reversed, tiny, wholly outside.
  std::vector<double> rois{1, 1, 6, 5, 0, 0, 8.75, 7.5, -3, -2, 2.5, 3, 6, 5, 12, 11,
                           5, 6, 2, 1, 3.3, 3.4, 3.45, 3.5, 20, 20, 30, 25};
  std::vector<int64_t> batch{0, 1, 1, 0, 1, 0, 1};
};

SamplingInputs roi_inputs(const RoiData& d, ElementType type = ElementType::float32) {
  const auto count = static_cast<int64_t>(d.batch.size());
  return {{"x", of_type(type, d.xs, d.x)}, {"rois", of_type(type, {count, 4}, d.rois)}, {"b", int64s({count}, d.batch)}};
}

void check_roi_case(const RoiCase& c, ElementType type = ElementType::float32) {
  CAPTURE(c.mode);
  CAPTURE(c.sampling_ratio);
  CAPTURE(c.half_pixel);
  CAPTURE(c.spatial_scale);
  const RoiData d;
  const std::vector<double> want = roi_reference(c, d.x, d.xs, d.rois, d.batch);
  const Tensor y = run(roi_model(c, type == ElementType::float64 ? "double" : "float"), roi_inputs(d, type));
  REQUIRE(y.shape() == Shape{7, 3, c.out_h, c.out_w});
  const std::vector<double> got = sampled_doubles(y);
  const double tolerance = type == ElementType::float64 ? 1e-12 : 1e-5;
  double worst = 0;
  for (std::size_t i = 0; i < want.size(); ++i) worst = std::max(worst, std::fabs(got[i] - want[i]));
  CHECK(worst <= tolerance);
}

}  // namespace

// ---- GridSample -------------------------------------------------------------------------------

TEST_CASE("gridsample_every_mode_padding_and_align_corners_match_a_double_reference") {
  for (const char* mode : {"bilinear", "nearest", "bicubic"})
    for (const char* padding : {"zeros", "border", "reflection"})
      for (int align : {0, 1})
        for (ElementType type : {ElementType::float32, ElementType::float64})
          check_grid_case({mode, padding, align}, type);
}

TEST_CASE("gridsample_border_padding_clamps_outside_points") {
  // X is [[0, 1], [2, 3], [4, 5]]: far outside, each mode reads the nearest corner.
  const Tensor x = floats({1, 1, 3, 2}, {0, 1, 2, 3, 4, 5});
  const Tensor grid = floats({1, 1, 4, 2}, {-10, -10, 10, 10, 1e30f, -1e30f, float(-kInf), float(kInf)});
  for (const char* mode : {"bilinear", "nearest", "bicubic"})
    for (int align : {0, 1}) {
      CAPTURE(mode);
      CAPTURE(align);
      const std::vector<float> y = values<float>(run(grid_model({mode, "border", align}), {{"x", x}, {"grid", grid}}));
      REQUIRE(y.size() == 4);
      CHECK(y[0] == doctest::Approx(0).epsilon(1e-6));
      CHECK(y[1] == doctest::Approx(5).epsilon(1e-6));
      CHECK(y[2] == doctest::Approx(1).epsilon(1e-6));
      CHECK(y[3] == doctest::Approx(4).epsilon(1e-6));
    }
}

TEST_CASE("gridsample_zeros_padding_reads_zero_far_outside_and_at_infinity") {
  const Tensor x = floats({1, 1, 3, 2}, {1, 2, 3, 4, 5, 6});
  const Tensor grid = floats({1, 1, 3, 2}, {-10, 0, 0, 1e30f, float(kInf), float(-kInf)});
  for (const char* mode : {"bilinear", "nearest", "bicubic"}) {
    CAPTURE(mode);
    CHECK(values<float>(run(grid_model({mode, "zeros", 0}), {{"x", x}, {"grid", grid}})) == std::vector<float>{0, 0, 0});
  }
}

TEST_CASE("gridsample_reflection_folds_far_points_back_into_the_image") {
  // One row [0, 1, 2, 3]; align_corners 0 puts x at 2 * n + 1.5 with borders -0.5 and 3.5.
  // x = -1 reflects to 0, x = 4 to 3, x = 2000002 (many periods of 8 out) to 2, x = -13 to 3.
  const Tensor x = floats({1, 1, 1, 4}, {0, 1, 2, 3});
  const Tensor grid = floats({1, 1, 4, 2}, {-1.25f, 0, 1.25f, 0, 1000000.25f, 0, -7.25f, 0});
  CHECK(values<float>(run(grid_model({"nearest", "reflection", 0}), {{"x", x}, {"grid", grid}})) ==
        std::vector<float>{0, 3, 2, 3});
  // Bilinear between reflected taps: x = -1.25 reads taps -2 -> 1 and -1 -> 0 as 0.25 * 1 + 0.75 * 0.
  const Tensor between = floats({1, 1, 1, 2}, {-1.375f, 0});
  CHECK(values<float>(run(grid_model({"bilinear", "reflection", 0}), {{"x", x}, {"grid", between}})) ==
        std::vector<float>{0.25f});
  // A one-pixel axis with align_corners has nowhere to reflect to but that pixel.
  const Tensor one = floats({1, 1, 1, 1}, {7});
  const Tensor anywhere = floats({1, 1, 3, 2}, {-3, 0.5f, 0.25f, 9, 1e30f, -1e30f});
  for (const char* mode : {"bilinear", "nearest", "bicubic"}) {
    CAPTURE(mode);
    const std::vector<float> y = values<float>(run(grid_model({mode, "reflection", 1}), {{"x", one}, {"grid", anywhere}}));
    for (float v : y) CHECK(v == doctest::Approx(7).epsilon(1e-6));
  }
}

TEST_CASE("gridsample_bicubic_border_pads_each_tap_not_the_position") {
  // x = -0.75 is outside [-0.5, 3.5]: its taps -2, -1, 0, 1 read 0, 0, 0, 10 with Keys weights at
  // distances 1.25, 0.25, 0.75, 1.75, so y = 10 * w(1.75) = -0.3515625 (PyTorch's value; moving
  // the position to the border first, as ONNX Runtime did in 2022, would give 0).
  const Tensor x = floats({1, 1, 1, 4}, {0, 10, 20, 30});
  const Tensor grid = floats({1, 1, 1, 2}, {-1.125f, 0});
  const std::vector<float> y = values<float>(run(grid_model({"bicubic", "border", 0}), {{"x", x}, {"grid", grid}}));
  CHECK(y[0] == doctest::Approx(-0.3515625).epsilon(1e-6));
}

TEST_CASE("gridsample_align_corners_maps_minus_one_and_one_to_edge_pixel_centres") {
  const Tensor x = floats({1, 1, 3, 2}, {0, 1, 2, 3, 4, 5});
  const Tensor grid = floats({1, 1, 3, 2}, {-1, -1, 1, 1, 0, 0});
  CHECK(values<float>(run(grid_model({"bilinear", "zeros", 1}), {{"x", x}, {"grid", grid}})) ==
        std::vector<float>{0, 5, 2.5f});
  // Without it -1 and 1 are the outer edges: a quarter of the corner pixel, the rest zeros.
  CHECK(values<float>(run(grid_model({"bilinear", "zeros", 0}), {{"x", x}, {"grid", grid}})) ==
        std::vector<float>{0, 1.25f, 2.5f});
  // Bicubic at a pixel centre is that pixel.
  const Tensor centres = floats({1, 1, 2, 2}, {1, 0, -1, -1});
  CHECK(values<float>(run(grid_model({"bicubic", "border", 1}), {{"x", x}, {"grid", centres}})) ==
        std::vector<float>{3, 0});
}

TEST_CASE("gridsample_nearest_rounds_half_to_even") {
  // One row of 5 with align_corners: x = 2 * (n + 1) lands on 0.5, 1.5, 2.5 and 3.5.
  const Tensor x = floats({1, 1, 1, 5}, {10, 11, 12, 13, 14});
  const Tensor grid = floats({1, 1, 4, 2}, {-0.75f, 0, -0.25f, 0, 0.25f, 0, 0.75f, 0});
  CHECK(values<float>(run(grid_model({"nearest", "zeros", 1}), {{"x", x}, {"grid", grid}})) ==
        std::vector<float>{10, 12, 12, 14});
}

TEST_CASE("gridsample_nan_grid_point_gives_nan_and_leaves_the_others") {
  const Tensor x = floats({1, 2, 2, 2}, {1, 2, 3, 4, 5, 6, 7, 8});
  const Tensor grid = floats({1, 1, 2, 2}, {float(kNan), 0, 0, 0});
  for (const char* mode : {"bilinear", "nearest", "bicubic"})
    for (const char* padding : {"zeros", "border", "reflection"}) {
      CAPTURE(mode);
      CAPTURE(padding);
      const std::vector<float> y = values<float>(run(grid_model({mode, padding, 0}), {{"x", x}, {"grid", grid}}));
      REQUIRE(y.size() == 4);
      CHECK(std::isnan(y[0]));
      CHECK(std::isnan(y[2]));
      CHECK(std::isfinite(y[1]));
      CHECK(std::isfinite(y[3]));
    }
  // Under reflection an infinite position has no reflection either.
  const Tensor infinite = floats({1, 1, 1, 2}, {float(kInf), 0});
  CHECK(std::isnan(values<float>(run(grid_model({"bilinear", "reflection", 0}), {{"x", x}, {"grid", infinite}}))[0]));
}

TEST_CASE("gridsample_empty_inputs_give_empty_outputs") {
  const std::string m = grid_model({"bilinear", "border", 0});
  CHECK(run(m, {{"x", floats({0, 2, 3, 3}, {})}, {"grid", floats({0, 4, 4, 2}, {})}}).shape() == Shape{0, 2, 4, 4});
  CHECK(run(m, {{"x", floats({1, 2, 3, 3}, std::vector<float>(18, 1))}, {"grid", floats({1, 0, 4, 2}, {})}}).shape() ==
        Shape{1, 2, 0, 4});
  CHECK(run(m, {{"x", floats({1, 0, 3, 3}, {})}, {"grid", floats({1, 2, 2, 2}, std::vector<float>(8, 0))}}).shape() ==
        Shape{1, 0, 2, 2});
  // An image without pixels: zeros padding reads zeros; border has no edge to repeat.
  const Tensor none = floats({1, 1, 0, 3}, {});
  const Tensor grid = floats({1, 1, 2, 2}, {0, 0, 0.5f, -0.5f});
  for (const char* mode : {"bilinear", "nearest", "bicubic"})
    CHECK(values<float>(run(grid_model({mode, "zeros", 0}), {{"x", none}, {"grid", grid}})) == std::vector<float>{0, 0});
  CHECK_THROWS_WITH_AS(run(m, {{"x", none}, {"grid", grid}}), doctest::Contains("has no pixels for padding_mode 'border'"),
                       InputError);
}

TEST_CASE("gridsample_rejects_bad_grid_shape_naming_the_node") {
  const std::string m = grid_model({});
  const Tensor x = floats({1, 1, 2, 2}, {1, 2, 3, 4});
  CHECK_THROWS_WITH_AS(run(m, {{"x", x}, {"grid", floats({1, 2, 2, 3}, std::vector<float>(12, 0))}}),
                       doctest::Contains("GridSample node #0: grid [1, 2, 2, 3] must be [N, H_out, W_out, 2]"),
                       InputError);
  CHECK_THROWS_WITH_AS(run(m, {{"x", x}, {"grid", floats({2, 1, 1, 2}, {0, 0, 0, 0})}}),
                       doctest::Contains("with N = 1"), InputError);
  const std::string flat =
      "<ir_version: 8, opset_import: [\"\" : 16]>\ng (float[A, B] x, float[M, H, W, K] grid) => (float[P, Q, R, S] y) "
      "{ y = GridSample (x, grid) }";
  CHECK_THROWS_WITH_AS(run(flat, {{"x", floats({1, 4}, {1, 2, 3, 4})}, {"grid", floats({1, 1, 1, 2}, {0, 0})}}),
                       doctest::Contains("GridSample node #0: X must be 4-D [N, C, H, W], not [1, 4]"), InputError);
  // Attribute values are checked when the session is made; it reports every node that cannot run.
  CHECK_THROWS_WITH_AS(run(grid_model({"trilinear", "zeros", 0}), {{"x", x}, {"grid", floats({1, 1, 1, 2}, {0, 0})}}),
                       doctest::Contains("GridSample node (output 'y'): attribute 'mode' = \"trilinear\" is not one of "
                                         "bilinear, nearest, bicubic"),
                       UnsupportedError);
  CHECK_THROWS_WITH_AS(run(grid_model({"bilinear", "mirror", 0}), {{"x", x}, {"grid", floats({1, 1, 1, 2}, {0, 0})}}),
                       doctest::Contains("attribute 'padding_mode' = \"mirror\""), UnsupportedError);
  CHECK_THROWS_WITH_AS(run(grid_model({"bilinear", "zeros", 2}), {{"x", x}, {"grid", floats({1, 1, 1, 2}, {0, 0})}}),
                       doctest::Contains("attribute 'align_corners' = 2 must be 0 or 1"), UnsupportedError);
}

TEST_CASE("gridsample_opset_20_takes_linear_and_cubic_and_refuses_5d") {
  // Past opset 18 only with allow_newer_opset; the kernel still reads opset 20's mode names.
  const Tensor x = floats({1, 1, 3, 2}, {0, 1, 2, 3, 4, 5});
  const Tensor grid = floats({1, 1, 2, 2}, {-0.2f, -0.2f, 0.5f, 0.5f});
  const SamplingInputs in{{"x", x}, {"grid", grid}};
  CHECK(same_sampling_bits(run(grid_model({"linear", "zeros", 0, 20}), in, 1, nullptr, true), run(grid_model({"bilinear", "zeros", 0, 16}), in)));
  CHECK(same_sampling_bits(run(grid_model({"cubic", "border", 1, 20}), in, 1, nullptr, true), run(grid_model({"bicubic", "border", 1, 16}), in)));
  CHECK_THROWS_WITH_AS(run(grid_model({"bilinear", "zeros", 0, 20}), in, 1, nullptr, true),
                       doctest::Contains("is not one of linear, nearest, cubic"), UnsupportedError);
  const std::string volume =
      "<ir_version: 8, opset_import: [\"\" : 20]>\ng (float[N, C, D, H, W] x, float[M, A, B, E, K] grid) => (float[P, Q, R, S, T] y) "
      "{ y = GridSample (x, grid) }";
  CHECK_THROWS_WITH_AS(run(volume, {{"x", floats({1, 1, 2, 2, 2}, std::vector<float>(8, 1))},
                                    {"grid", floats({1, 1, 1, 1, 3}, {0, 0, 0})}},
                           1, nullptr, true),
                       doctest::Contains("only 2 (X of [N, C, H, W]) are supported"), UnsupportedError);
}

TEST_CASE("gridsample_results_identical_at_1_and_3_threads") {
  auto registry = sampling_parallel_registry();
  const Shape xs{2, 3, 9, 8}, gs{2, 12, 11, 2};
  const Tensor x = of_type(ElementType::float32, xs, pseudo_random(2 * 3 * 9 * 8, 3));
  const Tensor grid = of_type(ElementType::float32, gs, grid_values(2 * 12 * 11 * 2, 17));
  for (const char* mode : {"bilinear", "nearest", "bicubic"}) {
    CAPTURE(mode);
    const std::string m = grid_model({mode, "reflection", 0});
    const Tensor one = run(m, {{"x", x}, {"grid", grid}}, 1, registry.get());
    const Tensor three = run(m, {{"x", x}, {"grid", grid}}, 3, registry.get());
    CHECK(same_sampling_bits(one, three));
  }
}

// ---- RoiAlign ---------------------------------------------------------------------------------

TEST_CASE("roialign_avg_and_max_match_a_double_reference") {
  for (const char* mode : {"avg", "max"})
    for (bool half_pixel : {true, false})
      for (int64_t ratio : {0, 1, 3}) {
        RoiCase c;
        c.mode = mode;
        c.half_pixel = half_pixel;
        c.sampling_ratio = ratio;
        check_roi_case(c);
        check_roi_case(c, ElementType::float64);
      }
  RoiCase scaled;
  scaled.spatial_scale = 0.625;
  scaled.sampling_ratio = 0;
  scaled.out_h = 4;
  scaled.out_w = 5;
  check_roi_case(scaled);
}

TEST_CASE("roialign_avg_of_half_pixel_bins_by_hand") {
  // X = 0..15 on 4 x 4; the roi (0, 0, 4, 4) shifted by half a pixel: 2 x 2 bins of one sample
  // each, at (0.5, 0.5), (0.5, 2.5), (2.5, 0.5), (2.5, 2.5): averages of four pixels.
  std::vector<float> x(16);
  for (int i = 0; i < 16; ++i) x[std::size_t(i)] = float(i);
  RoiCase c;
  c.out_h = c.out_w = 2;
  c.sampling_ratio = 1;
  const Tensor y = run(roi_model(c), {{"x", floats({1, 1, 4, 4}, x)}, {"rois", floats({1, 4}, {0, 0, 4, 4})}, {"b", int64s({1}, {0})}});
  CHECK(values<float>(y) == std::vector<float>{2.5f, 4.5f, 10.5f, 12.5f});
}

TEST_CASE("roialign_max_takes_the_largest_weighted_corner_as_onnxruntime") {
  // One sample at (0.5, 0.5) of [[1, 2], [3, 4]]: the corners weigh 0.25 each, so max is
  // 0.25 * 4 = 1, not the interpolated 2.5 (which avg gives).
  RoiCase c;
  c.out_h = c.out_w = 1;
  c.sampling_ratio = 1;
  c.half_pixel = false;
  const SamplingInputs in{{"x", floats({1, 1, 2, 2}, {1, 2, 3, 4})}, {"rois", floats({1, 4}, {0, 0, 1, 1})}, {"b", int64s({1}, {0})}};
  c.mode = "max";
  CHECK(values<float>(run(roi_model(c), in)) == std::vector<float>{1});
  c.mode = "avg";
  CHECK(values<float>(run(roi_model(c), in)) == std::vector<float>{2.5f});
  // Samples outside the image count as 0 in max too: all-negative pixels give 0 for a roi
  // reaching outside.
  const SamplingInputs negative{{"x", floats({1, 1, 2, 2}, {-1, -2, -3, -4})}, {"rois", floats({1, 4}, {-6, -6, 1, 1})},
                        {"b", int64s({1}, {0})}};
  c.mode = "max";
  c.sampling_ratio = 4;
  CHECK(values<float>(run(roi_model(c), negative)) == std::vector<float>{0});
}

TEST_CASE("roialign_sampling_ratio_0_adapts_to_the_bin_size") {
  // Bins of 3.5 x 2.25 pixels: adaptive sampling takes ceil = 4 x 3 samples, as ratio 4 x 3 would.
  RoiCase adaptive;
  adaptive.sampling_ratio = 0;
  adaptive.out_h = 2;
  adaptive.out_w = 2;
  adaptive.half_pixel = false;
  const SamplingInputs in{{"x", of_type(ElementType::float32, {1, 1, 10, 9}, pseudo_random(90, 9))},
                  {"rois", floats({1, 4}, {1, 0.5f, 5.5f, 7.5f})},
                  {"b", int64s({1}, {0})}};
  const std::vector<float> y = values<float>(run(roi_model(adaptive), in));
  // The reference with the grid spelled out: 4 samples along y, 3 along x.
  const std::vector<double> x = pseudo_random(90, 9);
  std::vector<double> want;
  for (int ph = 0; ph < 2; ++ph)
    for (int pw = 0; pw < 2; ++pw) {
      double sum = 0;
      for (int iy = 0; iy < 4; ++iy)
        for (int ix = 0; ix < 3; ++ix) {
          const double yy = 0.5 + ph * 3.5 + (iy + 0.5) * 3.5 / 4, xx = 1 + pw * 2.25 + (ix + 0.5) * 2.25 / 3;
          const int yl = int(yy), xl = int(xx);
          const double ly = yy - yl, lx = xx - xl;
          sum += (1 - ly) * (1 - lx) * x[std::size_t(yl * 9 + xl)] + (1 - ly) * lx * x[std::size_t(yl * 9 + xl + 1)] +
                 ly * (1 - lx) * x[std::size_t((yl + 1) * 9 + xl)] + ly * lx * x[std::size_t((yl + 1) * 9 + xl + 1)];
        }
      want.push_back(sum / 12);
    }
  REQUIRE(y.size() == 4);
  for (std::size_t i = 0; i < 4; ++i) CHECK(y[i] == doctest::Approx(want[i]).epsilon(1e-5));
}

TEST_CASE("roialign_rois_outside_the_image_give_zero") {
  RoiCase c;
  c.sampling_ratio = 0;
  const SamplingInputs in{{"x", floats({1, 2, 4, 4}, std::vector<float>(32, 3))},
                  {"rois", floats({2, 4}, {10, 10, 20, 12, -30, -9, -2.5f, -1.75f})},
                  {"b", int64s({2}, {0, 0})}};
  for (const char* mode : {"avg", "max"}) {
    c.mode = mode;
    CHECK(values<float>(run(roi_model(c), in)) == std::vector<float>(24, 0));
  }
}

TEST_CASE("roialign_roi_far_larger_than_the_image_costs_no_more_than_the_image") {
  // Adaptive sampling of a 2e7-pixel roi would visit 4e14 samples per bin; only those near the
  // image are visited, and the average divides by all of them.
  RoiCase c;
  c.sampling_ratio = 0;
  c.out_h = c.out_w = 1;
  const SamplingInputs in{{"x", floats({1, 1, 4, 4}, std::vector<float>(16, 1))},
                  {"rois", floats({1, 4}, {-1e7f, -1e7f, 1e7f, 1e7f})},
                  {"b", int64s({1}, {0})}};
  const float avg = values<float>(run(roi_model(c), in))[0];
  CHECK(avg > 0);
  CHECK(avg < 1e-12f);
  c.mode = "max";
  CHECK(values<float>(run(roi_model(c), in))[0] == doctest::Approx(1).epsilon(1e-6));
  // A roi needing more than 2^40 samples per bin is refused rather than counted.
  const SamplingInputs absurd{{"x", floats({1, 1, 4, 4}, std::vector<float>(16, 1))},
                      {"rois", floats({1, 4}, {0, 0, 1e30f, 1})},
                      {"b", int64s({1}, {0})}};
  CHECK_THROWS_WITH_AS(run(roi_model(c), absurd), doctest::Contains("samples per bin along x"), InputError);
}

TEST_CASE("roialign_rejects_batch_index_out_of_range") {
  const std::string m = roi_model({});
  const Tensor x = floats({2, 1, 4, 4}, std::vector<float>(32, 1));
  const Tensor rois = floats({3, 4}, {0, 0, 2, 2, 1, 1, 3, 3, 0, 0, 1, 1});
  CHECK_THROWS_WITH_AS(run(m, {{"x", x}, {"rois", rois}, {"b", int64s({3}, {0, 2, 1})}}),
                       doctest::Contains("RoiAlign node #0: batch_indices[1] = 2 is outside [0, 2)"), InputError);
  CHECK_THROWS_WITH_AS(run(m, {{"x", x}, {"rois", rois}, {"b", int64s({3}, {0, 1, -1})}}),
                       doctest::Contains("batch_indices[2] = -1 is outside [0, 2)"), InputError);
  // No image at all: every index is out of range.
  CHECK_THROWS_WITH_AS(run(m, {{"x", floats({0, 1, 4, 4}, {})}, {"rois", rois}, {"b", int64s({3}, {0, 0, 0})}}),
                       doctest::Contains("batch_indices[0] = 0 is outside [0, 0)"), InputError);
}

TEST_CASE("roialign_rejects_bad_shapes_and_attributes_naming_the_node") {
  const std::string m = roi_model({});
  const Tensor x = floats({1, 1, 4, 4}, std::vector<float>(16, 1));
  CHECK_THROWS_WITH_AS(run(m, {{"x", x}, {"rois", floats({1, 3}, {0, 0, 1})}, {"b", int64s({1}, {0})}}),
                       doctest::Contains("RoiAlign node #0: rois must be [num_rois, 4], not [1, 3]"), InputError);
  CHECK_THROWS_WITH_AS(run(m, {{"x", x}, {"rois", floats({1, 4}, {0, 0, 1, 1})}, {"b", int64s({2}, {0, 0})}}),
                       doctest::Contains("batch_indices [2] must be [1]"), InputError);
  const std::string flat =
      "<ir_version: 8, opset_import: [\"\" : 16]>\ng (float[C, H, W] x, float[R, F] rois, int64[L] b) => (float[P, Q, U, V] y) "
      "{ y = RoiAlign (x, rois, b) }";
  CHECK_THROWS_WITH_AS(run(flat, {{"x", floats({1, 4, 4}, std::vector<float>(16, 1))}, {"rois", floats({1, 4}, {0, 0, 1, 1})},
                                  {"b", int64s({1}, {0})}}),
                       doctest::Contains("RoiAlign node #0: X must be 4-D [N, C, H, W], not [1, 4, 4]"), InputError);
  CHECK_THROWS_WITH_AS(run(m, {{"x", x}, {"rois", floats({1, 4}, {0, float(kNan), 1, 1})}, {"b", int64s({1}, {0})}}),
                       doctest::Contains("rois[0] = (0, nan, 1, 1) is not finite"), InputError);
  RoiCase bad;
  bad.mode = "min";
  CHECK_THROWS_WITH_AS(run(roi_model(bad), {{"x", x}, {"rois", floats({1, 4}, {0, 0, 1, 1})}, {"b", int64s({1}, {0})}}),
                       doctest::Contains("RoiAlign node (output 'y'): attribute 'mode' = \"min\" is not one of avg, max"),
                       UnsupportedError);
  RoiCase negative;
  negative.sampling_ratio = -1;
  CHECK_THROWS_WITH_AS(run(roi_model(negative), {{"x", x}, {"rois", floats({1, 4}, {0, 0, 1, 1})}, {"b", int64s({1}, {0})}}),
                       doctest::Contains("attribute 'sampling_ratio' = -1 must not be negative"), UnsupportedError);
  // Opset 10 has no coordinate_transformation_mode: ONNX's schema check refuses it first.
  const std::string opset10 =
      "<ir_version: 8, opset_import: [\"\" : 10]>\ng (float[N, C, H, W] x, float[R, F] rois, int64[L] b) => (float[P, Q, U, V] y) "
      "{ y = RoiAlign <coordinate_transformation_mode = \"half_pixel\"> (x, rois, b) }";
  CHECK_THROWS_WITH_AS(run(opset10, {{"x", x}, {"rois", floats({1, 4}, {0, 0, 1, 1})}, {"b", int64s({1}, {0})}}),
                       doctest::Contains("Unrecognized attribute: coordinate_transformation_mode"), ModelError);
}

TEST_CASE("roialign_empty_inputs_give_empty_outputs") {
  const std::string m = roi_model({});
  const Tensor x = floats({1, 2, 4, 4}, std::vector<float>(32, 1));
  CHECK(run(m, {{"x", x}, {"rois", floats({0, 4}, {})}, {"b", int64s({0}, {})}}).shape() == Shape{0, 2, 3, 2});
  CHECK(run(m, {{"x", floats({0, 2, 4, 4}, {})}, {"rois", floats({0, 4}, {})}, {"b", int64s({0}, {})}}).shape() ==
        Shape{0, 2, 3, 2});
  CHECK(run(m, {{"x", floats({1, 0, 4, 4}, {})}, {"rois", floats({1, 4}, {0, 0, 1, 1})}, {"b", int64s({1}, {0})}}).shape() ==
        Shape{1, 0, 3, 2});
  RoiCase flat;
  flat.out_h = 0;
  CHECK(run(roi_model(flat), {{"x", x}, {"rois", floats({1, 4}, {0, 0, 1, 1})}, {"b", int64s({1}, {0})}}).shape() ==
        Shape{1, 2, 0, 2});
  // An image without pixels: every sample is outside, so the output is 0.
  CHECK(values<float>(run(m, {{"x", floats({1, 1, 0, 4}, {})}, {"rois", floats({1, 4}, {0, 0, 1, 1})}, {"b", int64s({1}, {0})}})) ==
        std::vector<float>(6, 0));
}

TEST_CASE("roialign_opset_10_behaves_as_output_half_pixel") {
  const RoiData d;
  RoiCase old;
  old.opset = 10;
  RoiCase now;
  now.half_pixel = false;
  CHECK(same_sampling_bits(run(roi_model(old), roi_inputs(d)), run(roi_model(now), roi_inputs(d))));
  // Opset 16's default is half_pixel.
  const std::string defaulted =
      "<ir_version: 8, opset_import: [\"\" : 16]>\ng (float[N, C, H, W] x, float[R, F] rois, int64[L] b) => (float[P, Q, U, V] y) "
      "{ y = RoiAlign <output_height = 3, output_width = 2, sampling_ratio = 2> (x, rois, b) }";
  CHECK(same_sampling_bits(run(defaulted, roi_inputs(d)), run(roi_model(RoiCase{}), roi_inputs(d))));
}

TEST_CASE("roialign_results_identical_at_1_and_3_threads") {
  auto registry = sampling_parallel_registry();
  const RoiData d;
  for (const char* mode : {"avg", "max"}) {
    CAPTURE(mode);
    RoiCase c;
    c.mode = mode;
    c.sampling_ratio = 0;
    CHECK(same_sampling_bits(run(roi_model(c), roi_inputs(d), 1, registry.get()), run(roi_model(c), roi_inputs(d), 3, registry.get())));
  }
}
