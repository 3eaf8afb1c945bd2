// ConvInteger and QLinearConv: 2-D convolutions of uint8/int8 tensors with int32 accumulation
// (exact, so a faster implementation must match these bits), portable direct loops over NCHW with
// groups, strides, dilations, pads and auto_pad. QLinearConv requantizes each output channel with
// x_scale * w_scale[m] / y_scale, rounding to nearest even and saturating.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "kernels/element_traits.h"
#include "kernels/elementwise.h"
#include "kernels/kernel_families.h"
#include "kernels/kernel_util.h"
#include "kernels/quantized_operands.h"
#include "kernels/spatial_attributes.h"
#include "onnx_light/runtime/error.h"

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

class ConvIntegerKernel final : public Kernel {
 public:
  explicit ConvIntegerKernel(const KernelCreateInfo& info) : attributes_(info) {
    check_attributes(info, {"auto_pad", "dilations", "group", "kernel_shape", "pads", "strides"});
    group_ = info.int_attribute("group", 1);
  }
  void run(KernelExecution& execution) override {
    const std::string& label = execution.label();
    const Tensor& x = execution.required_input(0);
    const Tensor& w = execution.required_input(1);
    const ConvGeometry g = geometry(attributes_, group_, x, w, label);
    const std::vector<int32_t> xz = zero_points(execution.input(2), 1, label, "x_zero_point");
    const std::vector<int32_t> wz = zero_points(execution.input(3), g.m, label, "w_zero_point");
    dispatch_int8_pair(x.element_type(), w.element_type(), label, [&](auto xv, auto wv) {
      integer_conv(g, x.data<decltype(xv)>(), w.data<decltype(wv)>(), xz.empty() ? 0 : xz[0], wz, acc_);
    });
    Tensor& y = checked_output(execution, 0, ElementType::int32, {g.n, g.m, g.oh, g.ow}, false);
    std::copy(acc_.begin(), acc_.end(), y.data<int32_t>());
  }

 private:
  SpatialAttributes attributes_;
  int64_t group_ = 1;
  std::vector<int32_t> acc_;
};

template <typename Q>
class QLinearConvKernel final : public Kernel {
 public:
  explicit QLinearConvKernel(const KernelCreateInfo& info) : attributes_(info) {
    check_attributes(info, {"auto_pad", "dilations", "group", "kernel_shape", "pads", "strides"});
    group_ = info.int_attribute("group", 1);
  }
  void run(KernelExecution& execution) override {
    const std::string& label = execution.label();
    const Tensor& x = execution.required_input(0);
    const Tensor& w = execution.required_input(3);
    const ConvGeometry g = geometry(attributes_, group_, x, w, label);
    auto floats = [&](std::size_t index, int64_t per, const char* what) {
      const Tensor& t = execution.required_input(index);
      check_input_type(execution, index, t, ElementType::float32);
      if (t.element_count() != 1 && t.element_count() != per)
        throw InputError(fmt::format("{}: {} {} must hold 1 or {} values", label, what, shape_to_string(t.shape()), per));
      return std::vector<float>(t.data<float>(), t.data<float>() + t.element_count());
    };
    const std::vector<float> x_scale = floats(1, 1, "x_scale"), w_scale = floats(4, g.m, "w_scale"),
                             y_scale = floats(6, 1, "y_scale");
    const std::vector<int32_t> xz = zero_points(&execution.required_input(2), 1, label, "x_zero_point");
    const std::vector<int32_t> wz = zero_points(&execution.required_input(5), g.m, label, "w_zero_point");
    const std::vector<int32_t> yz = zero_points(&execution.required_input(7), 1, label, "y_zero_point");
    const Tensor* bias = execution.input(8);
    if (bias != nullptr && (bias->element_type() != ElementType::int32 || bias->element_count() != g.m))
      throw InputError(fmt::format("{}: B must be int32 [{}], not {}", label, g.m, bias->describe()));
    dispatch_int8_pair(x.element_type(), w.element_type(), label, [&](auto xv, auto wv) {
      integer_conv(g, x.data<decltype(xv)>(), w.data<decltype(wv)>(), xz[0], wz, acc_);
    });
    Tensor& y = checked_output(execution, 0, ElementTraits<Q>::type, {g.n, g.m, g.oh, g.ow}, false);
    Q* out = y.data<Q>();
    const int64_t plane = g.oh * g.ow;
    for (std::size_t e = 0; e < acc_.size(); ++e) {
      const auto m = static_cast<std::size_t>((static_cast<int64_t>(e) / plane) % g.m);
      const float multiplier = x_scale[0] * w_scale[w_scale.size() == 1 ? 0 : m] / y_scale[0];
      const int32_t sum = acc_[e] + (bias != nullptr ? bias->data<int32_t>()[m] : 0);
      out[e] = saturate_round<Q>(std::nearbyint(static_cast<float>(sum) * multiplier) + static_cast<float>(yz[0]));
    }
  }

 private:
  SpatialAttributes attributes_;
  int64_t group_ = 1;
  std::vector<int32_t> acc_;
};

}  // namespace

void register_quantized_conv_kernels(KernelTable& table) {
  for (ElementType type : {ElementType::uint8, ElementType::int8}) {
    KernelDef integer = make_def("ConvInteger", {10}, type,
                                 parallel_threshold_schema(elementwise_key("ConvInteger", type, 1), kDefaultMinimumElements));
    integer.create = [](const KernelCreateInfo& info) -> std::unique_ptr<Kernel> {
      return std::make_unique<ConvIntegerKernel>(info);
    };
    integer.output_types = [](const KernelCreateInfo&) { return std::vector<ElementType>{ElementType::int32}; };
    table.add(std::move(integer));
    KernelDef qlinear = make_def("QLinearConv", {10}, type,
                                 parallel_threshold_schema(elementwise_key("QLinearConv", type, 1), kDefaultMinimumElements));
    qlinear.create = [](const KernelCreateInfo& info) -> std::unique_ptr<Kernel> {
      if (quantized_type(info, 7) == ElementType::int8) return std::make_unique<QLinearConvKernel<int8_t>>(info);
      return std::make_unique<QLinearConvKernel<uint8_t>>(info);
    };
    qlinear.output_types = [](const KernelCreateInfo& info) { return std::vector<ElementType>{quantized_type(info, 7)}; };
    table.add(std::move(qlinear));
  }
}

}  // namespace onnx_light::runtime::kernels
