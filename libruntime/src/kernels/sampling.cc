// GridSample (opset 16; at opset 20+, which renamed bilinear/bicubic to linear/cubic and added
// volumes, 4-D input only) and RoiAlign (opsets 10 and 16), float and double. Both follow ONNX Runtime's CPU
// kernels, which ONNX's reference implementation ports, down to the order of the arithmetic in the
// element type:
// - GridSample: grid values unnormalized to pixel positions (align_corners: -1/1 are the centres
//   of the edge pixels, else their outer edges); nearest rounds half to even; bicubic is Keys'
//   kernel with A = -0.75 on the 4 x 4 pixels around the position. The padding rule (zero, edge
//   pixel, or the reference's reflection at the borders) applies to each tap, as PyTorch and
//   today's ONNX Runtime do. ONNX Runtime of 2022 also moved an out-of-bounds position to the
//   border first, which only changes bicubic near the border, and was reported as a bug there
//   (microsoft/onnxruntime#10607). Where a position is undefined (NaN in the grid, an infinite
//   one under reflection) the output is NaN; the reference has no answer there.
// - RoiAlign: each output bin averages (or takes the max of) a grid of bilinear samples; a sample
//   more than a pixel outside the image counts as 0. Max takes the largest weighted corner
//   (weight * pixel) over the samples, as ONNX Runtime does, not the largest interpolated value.
// Each output point's taps and weights are found once and reused for every channel.
#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "kernels/element_traits.h"
#include "kernels/elementwise.h"
#include "kernels/kernel_families.h"
#include "kernels/kernel_util.h"
#include "onnx_light/runtime/error.h"

namespace onnx_light::runtime::kernels {

namespace {

// ---- GridSample -------------------------------------------------------------------------------

enum class GridMode { linear, nearest, cubic };
enum class Padding { zeros, border, reflection };

// Where one output point reads: taps x taps pixels as offsets into an input plane (-1: a zero of
// zeros padding), row i at offset[i * taps + j], with the weights along x and y.
template <typename T>
struct GridPoint {
  std::array<int64_t, 16> offset;
  std::array<T, 4> wx, wy;
};

template <typename T>
T unnormalize(T n, int64_t length, bool align_corners) {
  if (align_corners) return (n + 1) / 2 * static_cast<T>(length - 1);
  return ((n + 1) * static_cast<T>(length) - 1) / 2;
}

// The reference's reflection: folded at the nearer border until inside [lo, hi].
template <typename T>
T reflect(T x, T lo, T hi) {
  const T range = hi - lo;
  if (!(range > 0)) return lo;  // one pixel with align_corners: there is nowhere else (the reference divides by 0)
  T folded = x;
  if (x < lo || x > hi) {
    const T dx = x < lo ? lo - x : x - hi;
    const T flips = std::floor(dx / range);
    const T r = dx - flips * range;
    const bool even = std::fmod(flips, T(2)) == 0;
    folded = (x < lo) == even ? lo + r : hi - r;
  }
  // Far out, flips * range is rounded; the result must still name a pixel.
  return std::clamp(folded, lo, hi);
}

template <typename T>
void cubic_coefficients(T x, std::array<T, 4>& c) {
  constexpr T a = T(-0.75);
  x = std::abs(x);
  c[0] = ((a * (x + 1) - 5 * a) * (x + 1) + 8 * a) * (x + 1) - 4 * a;
  c[1] = ((a + 2) * x - (a + 3)) * x * x + 1;
  c[2] = ((a + 2) * (1 - x) - (a + 3)) * (1 - x) * (1 - x) + 1;
  c[3] = ((a * (2 - x) - 5 * a) * (2 - x) + 8 * a) * (2 - x) - 4 * a;
}

template <typename T>
class GridLocator {
 public:
  GridLocator(GridMode mode, Padding padding, bool align_corners, int64_t height, int64_t width)
      : mode_(mode), padding_(padding), align_corners_(align_corners), height_(height), width_(width) {
    x_min_ = align_corners ? T(0) : T(-0.5);
    y_min_ = x_min_;
    x_max_ = align_corners ? static_cast<T>(width - 1) : static_cast<T>(width) - T(0.5);
    y_max_ = align_corners ? static_cast<T>(height - 1) : static_cast<T>(height) - T(0.5);
  }

  void locate(T nx, T ny, GridPoint<T>& p) const {
    T x = unnormalize(nx, width_, align_corners_);
    T y = unnormalize(ny, height_, align_corners_);
    if (mode_ == GridMode::nearest) {
      x = std::nearbyint(x);
      y = std::nearbyint(y);
    }
    if (std::isnan(x) || std::isnan(y)) return undefined(p);
    if (padding_ == Padding::reflection) {
      if (!std::isfinite(x) || !std::isfinite(y)) return undefined(p);
      x = within_periods(x, x_min_, x_max_);
      y = within_periods(y, y_min_, y_max_);
    } else {
      // Further out every tap is a zero (zeros) or the edge pixel (border) anyway; bounded
      // positions keep the integer conversions defined.
      x = std::clamp(x, T(-4), static_cast<T>(width_ + 3));
      y = std::clamp(y, T(-4), static_cast<T>(height_ + 3));
    }
    switch (mode_) {
      case GridMode::nearest:
        p.offset[0] = tap(static_cast<int64_t>(y), static_cast<int64_t>(x));
        p.wx[0] = p.wy[0] = T(1);
        break;
      case GridMode::linear: {
        const auto x1 = static_cast<int64_t>(std::floor(x)), y1 = static_cast<int64_t>(std::floor(y));
        const int64_t x2 = x1 + 1, y2 = y1 + 1;
        p.offset[0] = tap(y1, x1);
        p.offset[1] = tap(y1, x2);
        p.offset[2] = tap(y2, x1);
        p.offset[3] = tap(y2, x2);
        p.wx[0] = static_cast<T>(x2) - x;
        p.wx[1] = x - static_cast<T>(x1);
        p.wy[0] = static_cast<T>(y2) - y;
        p.wy[1] = y - static_cast<T>(y1);
        break;
      }
      case GridMode::cubic: {
        const int64_t x0 = static_cast<int64_t>(std::floor(x)) - 1, y0 = static_cast<int64_t>(std::floor(y)) - 1;
        for (int64_t h = 0; h < 4; ++h)
          for (int64_t w = 0; w < 4; ++w) p.offset[static_cast<std::size_t>(h * 4 + w)] = tap(y0 + h, x0 + w);
        cubic_coefficients(x - static_cast<T>(x0) - 1, p.wx);
        cubic_coefficients(y - static_cast<T>(y0) - 1, p.wy);
        break;
      }
    }
  }

 private:
  // Reflection repeats every 2 * (hi - lo) pixels, a whole number: moving a position by whole
  // periods changes none of its taps' reflections and keeps the taps small integers.
  static T within_periods(T x, T lo, T hi) {
    const T period = 2 * (hi - lo);
    if (!(period > 0)) return std::clamp(x, lo - 4, hi + 4);  // every tap reflects to lo
    if (x < lo - period || x > hi + period) {
      T m = std::fmod(x - lo, period);
      if (m < 0) m += period;
      x = lo + m;
    }
    return x;
  }

  // No pixel to name: NaN weights over zeros make every channel's value NaN.
  static void undefined(GridPoint<T>& p) {
    p.offset.fill(-1);
    p.wx.fill(std::numeric_limits<T>::quiet_NaN());
    p.wy.fill(std::numeric_limits<T>::quiet_NaN());
  }

  // The offset of pixel (r, c) under the padding rule, or -1 for a zero.
  int64_t tap(int64_t r, int64_t c) const {
    switch (padding_) {
      case Padding::zeros:
        return r >= 0 && r < height_ && c >= 0 && c < width_ ? r * width_ + c : -1;
      case Padding::border:
        break;
      case Padding::reflection:
        c = static_cast<int64_t>(reflect(static_cast<T>(c), x_min_, x_max_));
        r = static_cast<int64_t>(reflect(static_cast<T>(r), y_min_, y_max_));
        break;
    }
    return std::clamp<int64_t>(r, 0, height_ - 1) * width_ + std::clamp<int64_t>(c, 0, width_ - 1);
  }

  GridMode mode_;
  Padding padding_;
  bool align_corners_;
  int64_t height_, width_;
  T x_min_, x_max_, y_min_, y_max_;
};

// Bilinear and bicubic as the reference sums them: each row of taps along x, then the rows along y.
template <typename T, int Taps>
T interpolate(const GridPoint<T>& p, const T* plane) {
  T sum = 0;
  for (int i = 0; i < Taps; ++i) {
    T row = 0;
    for (int j = 0; j < Taps; ++j) {
      const int64_t o = p.offset[static_cast<std::size_t>(i * Taps + j)];
      row += p.wx[static_cast<std::size_t>(j)] * (o >= 0 ? plane[o] : T(0));
    }
    sum += p.wy[static_cast<std::size_t>(i)] * row;
  }
  return sum;
}

template <typename T>
class GridSampleKernel final : public ThresholdKernel {
 public:
  explicit GridSampleKernel(const KernelCreateInfo& info) : ThresholdKernel(kDefaultMinimumElements), opset_(info.opset) {
    check_attributes(info, {"align_corners", "mode", "padding_mode"});
    // Opset 20 renamed the interpolating modes.
    if (info.opset < 20)
      mode_ = parse_choice<GridMode>(info, "mode", "bilinear",
                                     {{"bilinear", GridMode::linear}, {"nearest", GridMode::nearest}, {"bicubic", GridMode::cubic}});
    else
      mode_ = parse_choice<GridMode>(info, "mode", "linear",
                                     {{"linear", GridMode::linear}, {"nearest", GridMode::nearest}, {"cubic", GridMode::cubic}});
    padding_ = parse_choice<Padding>(info, "padding_mode", "zeros",
                                     {{"zeros", Padding::zeros}, {"border", Padding::border}, {"reflection", Padding::reflection}});
    const int64_t align = info.int_attribute("align_corners", 0);
    if (align != 0 && align != 1)
      throw ModelError(fmt::format("{}: attribute 'align_corners' = {} must be 0 or 1", info.node_label(), align));
    align_corners_ = align == 1;
  }

  void run(KernelExecution& execution) override {
    const std::string& label = execution.label();
    const Tensor& x = execution.required_input(0);
    const Tensor& grid = execution.required_input(1);
    check_input_type(execution, 1, grid, ElementTraits<T>::type);
    if (x.rank() != 4) {
      if (opset_ >= 20 && x.rank() >= 3)
        throw UnsupportedError(fmt::format("{}: X {} has {} spatial dims; only 2 (X of [N, C, H, W]) are supported",
                                           label, shape_to_string(x.shape()), x.rank() - 2));
      throw InputError(fmt::format("{}: X must be 4-D [N, C, H, W], not {}", label, shape_to_string(x.shape())));
    }
    const int64_t batches = x.shape()[0], channels = x.shape()[1], height = x.shape()[2], width = x.shape()[3];
    if (grid.rank() != 4 || grid.shape()[0] != batches || grid.shape()[3] != 2)
      throw InputError(fmt::format("{}: grid {} must be [N, H_out, W_out, 2] with N = {} (X is {})", label,
                                   shape_to_string(grid.shape()), batches, shape_to_string(x.shape())));
    const int64_t out_h = grid.shape()[1], out_w = grid.shape()[2];
    Tensor& y = checked_output(execution, 0, ElementTraits<T>::type, {batches, channels, out_h, out_w}, false);
    if (y.element_count() == 0) return;
    if ((height == 0 || width == 0) && padding_ != Padding::zeros)
      throw InputError(fmt::format("{}: X {} has no pixels for padding_mode '{}' to repeat", label,
                                   shape_to_string(x.shape()), padding_ == Padding::border ? "border" : "reflection"));
    const GridLocator<T> locator(mode_, padding_, align_corners_, height, width);
    const T* in = x.data<T>();
    const T* g = grid.data<T>();
    T* out = y.data<T>();
    const int64_t points = out_h * out_w, plane = height * width;
    // Points are located a chunk at a time, then each channel reads them: the output is written
    // along rows and the located taps stay in cache.
    constexpr int64_t kChunk = 64;
    execution.parallel_for(batches * points, kChunk, admitted(y.element_count(), execution), [&](int64_t begin, int64_t end) {
      std::vector<GridPoint<T>> located(static_cast<std::size_t>(std::min(kChunk, end - begin)));
      for (int64_t start = begin; start < end;) {
        const int64_t n = start / points;
        const int64_t stop = std::min({end, (n + 1) * points, start + kChunk});
        for (int64_t i = start; i < stop; ++i)
          locator.locate(g[2 * i], g[2 * i + 1], located[static_cast<std::size_t>(i - start)]);
        for (int64_t c = 0; c < channels; ++c) {
          const T* src = in + (n * channels + c) * plane;
          T* dst = out + (n * channels + c) * points + (start - n * points);
          const int64_t count = stop - start;
          switch (mode_) {
            case GridMode::nearest:
              for (int64_t k = 0; k < count; ++k) dst[k] = interpolate<T, 1>(located[static_cast<std::size_t>(k)], src);
              break;
            case GridMode::linear:
              for (int64_t k = 0; k < count; ++k) dst[k] = interpolate<T, 2>(located[static_cast<std::size_t>(k)], src);
              break;
            case GridMode::cubic:
              for (int64_t k = 0; k < count; ++k) dst[k] = interpolate<T, 4>(located[static_cast<std::size_t>(k)], src);
              break;
          }
        }
        start = stop;
      }
    });
  }

 private:
  int64_t opset_;
  GridMode mode_ = GridMode::linear;
  Padding padding_ = Padding::zeros;
  bool align_corners_ = false;
};

// ---- RoiAlign ---------------------------------------------------------------------------------

// Adaptive sampling (sampling_ratio 0) takes ceil(bin size) samples per bin along an axis; more
// than this means a roi of some 10^12 pixels, which only garbage boxes give.
constexpr int64_t kMaxSamplesPerBin = int64_t{1} << 40;

// One roi, scaled and checked: bin origin and size along each axis, samples per bin along each.
template <typename T>
struct RoiGeometry {
  T start_h, start_w, bin_h, bin_w;
  int64_t grid_h, grid_w;
  T count;  // the divisor of avg: grid_h * grid_w, at least 1
};

// A sample along one axis: the pixels below and above it and their weights (ORT's hy/ly).
template <typename T>
struct AxisSample {
  int64_t low, high;
  T low_weight, high_weight;
};

// The samples of every bin along one axis that lie within a pixel of the image (the others count
// as 0): bin b's are samples[begin[b], begin[b + 1]).
template <typename T>
struct AxisSamples {
  std::vector<AxisSample<T>> samples;
  std::vector<int64_t> begin;
};

// First index of [lo, hi) where `pred` is false; pred is true on a prefix.
template <typename Pred>
int64_t first_false(int64_t lo, int64_t hi, Pred&& pred) {
  while (lo < hi) {
    const int64_t mid = lo + (hi - lo) / 2;
    if (pred(mid)) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

template <typename T>
void sample_axis(T start, T bin, int64_t grid, int64_t bins, int64_t size, AxisSamples<T>& out) {
  out.samples.clear();
  out.begin.assign(1, 0);
  const T limit = static_cast<T>(size);
  for (int64_t b = 0; b < bins; ++b) {
    // ORT's expression, evaluated in T in its order.
    auto position = [&](int64_t i) {
      return start + static_cast<T>(b) * bin + static_cast<T>(static_cast<float>(i) + 0.5f) * bin / static_cast<T>(grid);
    };
    if (size > 0 && grid > 0) {
      // Positions move one way with i (backwards for a reversed half_pixel roi), so the samples
      // within [-1, size] are one run, found by bisection: a roi far larger than the image costs
      // no more than the image.
      const bool rising = bin >= 0;
      auto before = [&](int64_t i) { return rising ? position(i) < T(-1) : position(i) > limit; };
      auto not_past = [&](int64_t i) {
        const T v = position(i);
        return rising ? !(v > limit) : !(v < T(-1));
      };
      const int64_t first = first_false(0, grid, before);
      const int64_t stop = first_false(first, grid, not_past);
      for (int64_t i = first; i < stop; ++i) {
        T v = std::max(position(i), T(0));
        auto low = static_cast<int64_t>(v);
        int64_t high = low + 1;
        if (low >= size - 1) {
          high = low = size - 1;
          v = static_cast<T>(low);
        }
        const T high_weight = v - static_cast<T>(low);
        out.samples.push_back({low, high, T(1) - high_weight, high_weight});
      }
    }
    out.begin.push_back(static_cast<int64_t>(out.samples.size()));
  }
}

// One sample of a bin with its four corners, shared by every channel.
template <typename T>
struct BinSample {
  std::array<int64_t, 4> offset;
  std::array<T, 4> weight;
};

template <typename T>
class RoiAlignKernel final : public ThresholdKernel {
 public:
  explicit RoiAlignKernel(const KernelCreateInfo& info) : ThresholdKernel(kDefaultMinimumElements) {
    const std::string label = info.node_label();
    if (info.opset < 16) {
      check_attributes(info, {"mode", "output_height", "output_width", "sampling_ratio", "spatial_scale"});
    } else {
      check_attributes(info, {"coordinate_transformation_mode", "mode", "output_height", "output_width",
                              "sampling_ratio", "spatial_scale"});
      // Opset 10 had no choice: it behaves as output_half_pixel, and opset 16's default is half_pixel.
      half_pixel_ = parse_choice<bool>(info, "coordinate_transformation_mode", "half_pixel",
                                       {{"half_pixel", true}, {"output_half_pixel", false}});
    }
    max_ = parse_choice<bool>(info, "mode", "avg", {{"avg", false}, {"max", true}});
    output_height_ = info.int_attribute("output_height", 1);
    output_width_ = info.int_attribute("output_width", 1);
    sampling_ratio_ = info.int_attribute("sampling_ratio", 0);
    spatial_scale_ = info.float_attribute("spatial_scale", 1.0f);
    for (const auto& [name, value] : {std::pair{"output_height", output_height_}, std::pair{"output_width", output_width_},
                                      std::pair{"sampling_ratio", sampling_ratio_}})
      if (value < 0) throw ModelError(fmt::format("{}: attribute '{}' = {} must not be negative", label, name, value));
    if (!std::isfinite(spatial_scale_))
      throw ModelError(fmt::format("{}: attribute 'spatial_scale' = {} must be finite", label, spatial_scale_));
  }

  void run(KernelExecution& execution) override {
    const std::string& label = execution.label();
    const Tensor& x = execution.required_input(0);
    const Tensor& rois = execution.required_input(1);
    const Tensor& batch_indices = execution.required_input(2);
    check_input_type(execution, 1, rois, ElementTraits<T>::type);
    check_input_type(execution, 2, batch_indices, ElementType::int64);
    if (x.rank() != 4)
      throw InputError(fmt::format("{}: X must be 4-D [N, C, H, W], not {}", label, shape_to_string(x.shape())));
    if (rois.rank() != 2 || rois.shape()[1] != 4)
      throw InputError(fmt::format("{}: rois must be [num_rois, 4], not {}", label, shape_to_string(rois.shape())));
    const int64_t count = rois.shape()[0];
    if (batch_indices.rank() != 1 || batch_indices.shape()[0] != count)
      throw InputError(fmt::format("{}: batch_indices {} must be [{}], one per roi of rois {}", label,
                                   shape_to_string(batch_indices.shape()), count, shape_to_string(rois.shape())));
    const int64_t batches = x.shape()[0], channels = x.shape()[1], height = x.shape()[2], width = x.shape()[3];
    const int64_t* batch = batch_indices.data<int64_t>();
    for (int64_t r = 0; r < count; ++r)
      if (batch[r] < 0 || batch[r] >= batches)
        throw InputError(fmt::format("{}: batch_indices[{}] = {} is outside [0, {}) (X is {})", label, r, batch[r],
                                     batches, shape_to_string(x.shape())));
    Tensor& y = checked_output(execution, 0, ElementTraits<T>::type, {count, channels, output_height_, output_width_}, false);
    if (y.element_count() == 0) return;
    geometry_.resize(static_cast<std::size_t>(count));
    for (int64_t r = 0; r < count; ++r) geometry_[static_cast<std::size_t>(r)] = roi_geometry(rois.data<T>() + 4 * r, r, label);

    const T* in = x.data<T>();
    T* out = y.data<T>();
    const int64_t plane = height * width, bins = output_height_ * output_width_;
    execution.parallel_for(count, 1, admitted(y.element_count(), execution), [&](int64_t begin, int64_t end) {
      AxisSamples<T> ys, xs;
      std::vector<BinSample<T>> samples;
      std::vector<int64_t> bin_begin;
      std::vector<char> bin_skipped;
      for (int64_t r = begin; r < end; ++r) {
        const RoiGeometry<T>& roi = geometry_[static_cast<std::size_t>(r)];
        sample_axis(roi.start_h, roi.bin_h, roi.grid_h, output_height_, height, ys);
        sample_axis(roi.start_w, roi.bin_w, roi.grid_w, output_width_, width, xs);
        // Every bin's samples in ORT's order (y outer, x inner), with the corner weights it computes.
        samples.clear();
        bin_begin.assign(1, 0);
        bin_skipped.clear();
        for (int64_t ph = 0; ph < output_height_; ++ph)
          for (int64_t pw = 0; pw < output_width_; ++pw) {
            const int64_t y_first = ys.begin[static_cast<std::size_t>(ph)], y_stop = ys.begin[static_cast<std::size_t>(ph + 1)];
            const int64_t x_first = xs.begin[static_cast<std::size_t>(pw)], x_stop = xs.begin[static_cast<std::size_t>(pw + 1)];
            // Whether some of the bin's grid_h x grid_w samples fell outside the image (max counts them as 0).
            bin_skipped.push_back(roi.grid_h > 0 && roi.grid_w > 0 &&
                                  (y_stop - y_first != roi.grid_h || x_stop - x_first != roi.grid_w));
            for (int64_t iy = y_first; iy < y_stop; ++iy)
              for (int64_t ix = x_first; ix < x_stop; ++ix) {
                const AxisSample<T>& sy = ys.samples[static_cast<std::size_t>(iy)];
                const AxisSample<T>& sx = xs.samples[static_cast<std::size_t>(ix)];
                samples.push_back({{sy.low * width + sx.low, sy.low * width + sx.high, sy.high * width + sx.low,
                                    sy.high * width + sx.high},
                                   {sy.low_weight * sx.low_weight, sy.low_weight * sx.high_weight,
                                    sy.high_weight * sx.low_weight, sy.high_weight * sx.high_weight}});
              }
            bin_begin.push_back(static_cast<int64_t>(samples.size()));
          }
        for (int64_t c = 0; c < channels; ++c) {
          const T* src = in + (batch[r] * channels + c) * plane;
          T* dst = out + (r * channels + c) * bins;
          for (int64_t bin = 0; bin < bins; ++bin) {
            const int64_t first = bin_begin[static_cast<std::size_t>(bin)], stop = bin_begin[static_cast<std::size_t>(bin + 1)];
            if (!max_) {
              T sum = 0;
              for (int64_t s = first; s < stop; ++s) {
                const BinSample<T>& p = samples[static_cast<std::size_t>(s)];
                sum += p.weight[0] * src[p.offset[0]] + p.weight[1] * src[p.offset[1]] + p.weight[2] * src[p.offset[2]] +
                       p.weight[3] * src[p.offset[3]];
              }
              dst[bin] = sum / roi.count;
            } else {
              // A sample outside the image is a 0 among the values (ORT weighs pixel 0 by 0 there).
              bool any = bin_skipped[static_cast<std::size_t>(bin)] != 0;
              T best = 0;
              for (int64_t s = first; s < stop; ++s) {
                const BinSample<T>& p = samples[static_cast<std::size_t>(s)];
                const T v = std::max(std::max(std::max(p.weight[0] * src[p.offset[0]], p.weight[1] * src[p.offset[1]]),
                                              p.weight[2] * src[p.offset[2]]),
                                     p.weight[3] * src[p.offset[3]]);
                best = any ? std::max(best, v) : v;
                any = true;
              }
              dst[bin] = best;
            }
          }
        }
      }
    });
  }

 private:
  RoiGeometry<T> roi_geometry(const T* box, int64_t r, const std::string& label) const {
    const T offset = half_pixel_ ? T(0.5) : T(0);
    const auto scale = static_cast<T>(spatial_scale_);
    RoiGeometry<T> g{};
    g.start_w = box[0] * scale - offset;
    g.start_h = box[1] * scale - offset;
    const T end_w = box[2] * scale - offset, end_h = box[3] * scale - offset;
    T roi_w = end_w - g.start_w;
    T roi_h = end_h - g.start_h;
    if (!std::isfinite(g.start_w) || !std::isfinite(g.start_h) || !std::isfinite(end_w) || !std::isfinite(end_h) ||
        !std::isfinite(roi_w) || !std::isfinite(roi_h))
      throw InputError(fmt::format("{}: rois[{}] = ({}, {}, {}, {}) is not finite once scaled by spatial_scale {}", label,
                                   r, box[0], box[1], box[2], box[3], spatial_scale_));
    // output_half_pixel (and opset 10) force a malformed roi to 1 x 1.
    if (!half_pixel_) {
      roi_w = std::max(roi_w, T(1));
      roi_h = std::max(roi_h, T(1));
    }
    g.bin_h = roi_h / static_cast<T>(output_height_);
    g.bin_w = roi_w / static_cast<T>(output_width_);
    auto grid = [&](T bin, const char* axis) -> int64_t {
      if (sampling_ratio_ > 0) return sampling_ratio_;
      const T want = std::ceil(bin);
      if (!(want > 0)) return 0;  // an empty or reversed half_pixel roi: no samples, output 0
      if (want > static_cast<T>(kMaxSamplesPerBin))
        throw InputError(fmt::format("{}: rois[{}] = ({}, {}, {}, {}) would take {} samples per bin along {} "
                                     "(sampling_ratio 0 adapts to the roi's size); at most {} are supported",
                                     label, r, box[0], box[1], box[2], box[3], want, axis, kMaxSamplesPerBin));
      return static_cast<int64_t>(want);
    };
    g.grid_h = grid(g.bin_h, "y");
    g.grid_w = grid(g.bin_w, "x");
    g.count = static_cast<T>(std::max(static_cast<double>(g.grid_h) * static_cast<double>(g.grid_w), 1.0));
    return g;
  }

  bool half_pixel_ = false;
  bool max_ = false;
  int64_t output_height_ = 1, output_width_ = 1, sampling_ratio_ = 0;
  float spatial_scale_ = 1.0f;
  std::vector<RoiGeometry<T>> geometry_;  // kept across runs
};

// ---- Registration and calibration ---------------------------------------------------------------

// Calibration: bilinear GridSample of [1, c, 16, 16] on a random [1, 16, 16, 2] grid; the
// threshold counts output elements.
CalibrationWorkloadFunction grid_sample_workload(ElementType type) {
  return [type](int64_t work, int, uint32_t seed) {
    const int64_t c = std::max<int64_t>(1, work / 256);
    return one_node_workload("GridSample", 16, "mode = \"bilinear\"",
                             {{"x", random_tensor(type, {1, c, 16, 16}, seed)}, {"grid", random_tensor(type, {1, 16, 16, 2}, seed + 1)}},
                             {{"y", type, {1, c, 16, 16}}}, c * 256);
  };
}

// Calibration: RoiAlign of four boxes over [1, c, 16, 16] to 7 x 7; the threshold counts output elements.
CalibrationWorkloadFunction roi_align_workload(ElementType type) {
  return [type](int64_t work, int, uint32_t seed) {
    const int64_t c = std::max<int64_t>(1, work / (4 * 49));
    const double boxes[] = {0, 0, 15, 15, 2, 3, 9, 12, 8, 1, 14, 6, 4.5, 4.5, 11.25, 10.75};
    Tensor rois(type, {4, 4});
    for (int i = 0; i < 16; ++i) {
      if (type == ElementType::float64) rois.data<double>()[i] = boxes[i];
      else rois.data<float>()[i] = static_cast<float>(boxes[i]);
    }
    return one_node_workload("RoiAlign", 16, "output_height = 7, output_width = 7",
                             {{"x", random_tensor(type, {1, c, 16, 16}, seed)}, {"rois", std::move(rois)},
                              {"batch_indices", int64_tensor({0, 0, 0, 0})}},
                             {{"y", type, {4, c, 7, 7}}}, 4 * c * 49);
  };
}

template <typename T>
void register_for_type(KernelTable& table) {
  constexpr ElementType type = ElementTraits<T>::type;
  KernelDef grid = make_def("GridSample", {16}, type,
                            parallel_threshold_schema(elementwise_key("GridSample", type, 1), kDefaultMinimumElements));
  grid.create = [](const KernelCreateInfo& info) -> std::unique_ptr<Kernel> {
    return std::make_unique<GridSampleKernel<T>>(info);
  };
  grid.calibration_workload = grid_sample_workload(type);
  table.add(std::move(grid));

  KernelDef roi = make_def("RoiAlign", {10}, type,
                           parallel_threshold_schema(elementwise_key("RoiAlign", type, 1), kDefaultMinimumElements));
  roi.create = [](const KernelCreateInfo& info) -> std::unique_ptr<Kernel> {
    return std::make_unique<RoiAlignKernel<T>>(info);
  };
  roi.calibration_workload = roi_align_workload(type);
  table.add(std::move(roi));
}

}  // namespace

void register_sampling_kernels(KernelTable& table) {
  register_for_type<float>(table);
  register_for_type<double>(table);
}

}  // namespace onnx_light::runtime::kernels
