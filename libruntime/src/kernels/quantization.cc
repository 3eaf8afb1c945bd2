// Linear quantization (the QDQ and QOperator formats quantization tools write): QuantizeLinear,
// DequantizeLinear, DynamicQuantizeLinear, MatMulInteger and QLinearMatMul, portable reference
// kernels. Rounding is to nearest with ties to even (std::nearbyint in the default rounding mode)
// and results saturate to the output type's range. Integer products accumulate in int32 exactly,
// so any faster implementation must match these bit for bit.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include <fmt/format.h>

#include "kernels/element_traits.h"
#include "kernels/elementwise.h"
#include "kernels/kernel_families.h"
#include "kernels/kernel_util.h"
#include "kernels/quantized_operands.h"
#include "onnx_light/runtime/error.h"

namespace onnx_light::runtime::kernels {

namespace {

// Per-tensor (one value) or per-axis (one per index of `axis`) quantization parameters: the index
// of element e's parameter.
struct AxisParameters {
  int64_t count = 1;   // 1: per tensor
  int64_t inner = 1;   // elements per step of the axis
  int64_t index(int64_t e) const { return count == 1 ? 0 : (e / inner) % count; }
};

AxisParameters axis_parameters(const Tensor& x, const Tensor& scale, const Tensor* zero_point, int64_t axis_attribute,
                               const std::string& label) {
  AxisParameters p;
  if (scale.element_count() == 1 && scale.rank() <= 1) {
    if (zero_point != nullptr && zero_point->element_count() != 1)
      throw InputError(fmt::format("{}: a per-tensor scale needs a per-tensor zero point, not {}", label,
                                   shape_to_string(zero_point->shape())));
    return p;
  }
  if (scale.rank() != 1)
    throw InputError(fmt::format("{}: scale must be a scalar or 1-D, not {}", label, shape_to_string(scale.shape())));
  const auto axis = static_cast<std::size_t>(normalize_axis(axis_attribute, static_cast<int64_t>(x.rank()), label));
  if (scale.element_count() != x.shape()[axis])
    throw InputError(fmt::format("{}: scale has {} values for axis {} of size {}", label, scale.element_count(), axis,
                                 x.shape()[axis]));
  if (zero_point != nullptr && zero_point->shape() != scale.shape())
    throw InputError(fmt::format("{}: zero point {} must have the scale's shape {}", label,
                                 shape_to_string(zero_point->shape()), shape_to_string(scale.shape())));
  p.count = scale.element_count();
  for (std::size_t d = axis + 1; d < x.rank(); ++d) p.inner *= x.shape()[d];
  return p;
}

void check_scales(const Tensor& scale, const std::string& label) {
  if (scale.element_type() != ElementType::float32)
    throw InputError(fmt::format("{}: scale must be float, not {}", label, element_type_name(scale.element_type())));
}

// QuantizeLinear (kQuantize: float x -> Q y = saturate(round(x / scale) + zero_point), Q the zero
// point's type, uint8 without one) and DequantizeLinear (Q x -> float y = (x - zero_point) * scale):
// one scale and zero point per tensor or per index of `axis`.
template <typename Q, bool kQuantize>
class LinearQuantizationKernel final : public ThresholdKernel {
 public:
  explicit LinearQuantizationKernel(const KernelCreateInfo& info) : ThresholdKernel(kDefaultMinimumElements) {
    check_attributes(info, {"axis"});
    axis_ = info.int_attribute("axis", 1);
  }
  void run(KernelExecution& execution) override {
    const Tensor& x = execution.required_input(0);
    const Tensor& scale = execution.required_input(1);
    const Tensor* zero_point = execution.input(2);
    const std::string& label = execution.label();
    check_scales(scale, label);
    if (zero_point != nullptr) check_input_type(execution, 2, *zero_point, ElementTraits<Q>::type);
    const AxisParameters p = axis_parameters(x, scale, zero_point, axis_, label);
    using In = std::conditional_t<kQuantize, float, Q>;
    using Out = std::conditional_t<kQuantize, Q, float>;
    Tensor& y = checked_output(execution, 0, ElementTraits<Out>::type, x.shape(), false);
    const In* in = x.data<In>();
    const float* s = scale.data<float>();
    const Q* z = zero_point != nullptr ? zero_point->data<Q>() : nullptr;
    Out* out = y.data<Out>();
    execution.parallel_for(x.element_count(), 1024, admitted(x.element_count(), execution), [&](int64_t begin, int64_t end) {
      for (int64_t e = begin; e < end; ++e) {
        const int64_t k = p.index(e);
        if constexpr (kQuantize) {
          out[e] = saturate_round<Q>(std::nearbyint(in[e] / s[k]) + static_cast<float>(z != nullptr ? z[k] : Q{0}));
        } else {
          const int64_t q = static_cast<int64_t>(in[e]) - (z != nullptr ? static_cast<int64_t>(z[k]) : 0);
          out[e] = static_cast<float>(q) * s[k];
        }
      }
    });
  }

 private:
  int64_t axis_ = 1;
};

// DynamicQuantizeLinear: uint8 quantization over the range of x widened to include 0.
class DynamicQuantizeLinearKernel final : public ThresholdKernel {
 public:
  explicit DynamicQuantizeLinearKernel(const KernelCreateInfo& info) : ThresholdKernel(kDefaultMinimumElements) {
    check_attributes(info, {});
  }
  void run(KernelExecution& execution) override {
    const Tensor& x = execution.required_input(0);
    const float* in = x.data<float>();
    float lo = 0.0f, hi = 0.0f;
    for (int64_t e = 0; e < x.element_count(); ++e) {
      if (std::isnan(in[e]))
        throw InputError(fmt::format("{}: x holds NaN at element {}: it has no range to quantize", execution.label(), e));
      lo = std::min(lo, in[e]);
      hi = std::max(hi, in[e]);
    }
    const float scale = (hi - lo) / 255.0f;
    const uint8_t zero = scale == 0.0f ? uint8_t{0} : saturate_round<uint8_t>(0.0f - lo / scale);
    Tensor& y = checked_output(execution, 0, ElementType::uint8, x.shape(), false);
    uint8_t* out = y.data<uint8_t>();
    for (int64_t e = 0; e < x.element_count(); ++e)
      out[e] = scale == 0.0f ? zero : saturate_round<uint8_t>(std::nearbyint(in[e] / scale) + static_cast<float>(zero));
    *checked_output(execution, 1, ElementType::float32, {}, false).data<float>() = scale;
    *checked_output(execution, 2, ElementType::uint8, {}, false).data<uint8_t>() = zero;
  }
};

// The int32 product (a - a_zero) x (b - b_zero) of [..., M, K] x [K, N] or [..., K, N] with the
// same batch dims; zero points per tensor, per row of A ([M]) or per column of B ([N]).
template <typename A, typename B>
Shape integer_matmul(const Tensor& a, const Tensor& b, const Tensor* a_zero, const Tensor* b_zero,
                     const std::string& label, std::vector<int32_t>& out) {
  if (a.rank() < 2 || b.rank() < 2)
    throw UnsupportedError(fmt::format("{}: operands of rank {} and {} (1-D operands are not supported)", label,
                                       a.rank(), b.rank()));
  const int64_t m = a.shape()[a.rank() - 2], k = a.shape()[a.rank() - 1];
  const int64_t kb = b.shape()[b.rank() - 2], n = b.shape()[b.rank() - 1];
  if (k != kb)
    throw InputError(fmt::format("{}: inner dims differ: {} x {}", label, shape_to_string(a.shape()), shape_to_string(b.shape())));
  const Shape batch(a.shape().begin(), a.shape().end() - 2);
  if (b.rank() > 2 && Shape(b.shape().begin(), b.shape().end() - 2) != batch)
    throw UnsupportedError(fmt::format("{}: batch dims of {} and {} differ (broadcasting batches is not supported)", label,
                                       shape_to_string(a.shape()), shape_to_string(b.shape())));
  const std::vector<int32_t> za = zero_points(a_zero, m, label, "A's zero point");
  // B's zero point per column, read once rather than per multiply-add.
  const std::vector<int32_t> zb_given = zero_points(b_zero, n, label, "B's zero point");
  std::vector<int32_t> zb(static_cast<std::size_t>(n));
  for (int64_t j = 0; j < n; ++j) zb[static_cast<std::size_t>(j)] = zero_point_at(zb_given, j);
  int64_t batches = 1;
  for (int64_t d : batch) batches *= d;
  out.assign(static_cast<std::size_t>(batches * m * n), 0);
  const A* pa = a.data<A>();
  const B* pb = b.data<B>();
  for (int64_t t = 0; t < batches; ++t) {
    const A* am = pa + t * m * k;
    const B* bm = pb + (b.rank() > 2 ? t * k * n : 0);
    int32_t* c = out.data() + t * m * n;
    for (int64_t i = 0; i < m; ++i) {
      const int32_t a0 = zero_point_at(za, i);
      for (int64_t p = 0; p < k; ++p) {
        const int32_t av = static_cast<int32_t>(am[i * k + p]) - a0;
        for (int64_t j = 0; j < n; ++j)
          c[i * n + j] += av * (static_cast<int32_t>(bm[p * n + j]) - zb[static_cast<std::size_t>(j)]);
      }
    }
  }
  Shape shape = batch;
  shape.push_back(m);
  shape.push_back(n);
  return shape;
}

class MatMulIntegerKernel final : public ThresholdKernel {
 public:
  explicit MatMulIntegerKernel(const KernelCreateInfo& info) : ThresholdKernel(kDefaultMinimumElements) {
    check_attributes(info, {});
  }
  void run(KernelExecution& execution) override {
    const Tensor& a = execution.required_input(0);
    const Tensor& b = execution.required_input(1);
    std::vector<int32_t> product;
    Shape shape;
    dispatch_int8_pair(a.element_type(), b.element_type(), execution.label(), [&](auto av, auto bv) {
      shape = integer_matmul<decltype(av), decltype(bv)>(a, b, execution.input(2), execution.input(3), execution.label(), product);
    });
    Tensor& y = checked_output(execution, 0, ElementType::int32, shape, false);
    std::copy(product.begin(), product.end(), y.data<int32_t>());
  }
};

// QLinearMatMul: the integer product requantized to y's scale and zero point (per tensor).
template <typename Q>
class QLinearMatMulKernel final : public ThresholdKernel {
 public:
  explicit QLinearMatMulKernel(const KernelCreateInfo& info) : ThresholdKernel(kDefaultMinimumElements) {
    check_attributes(info, {});
  }
  void run(KernelExecution& execution) override {
    const std::string& label = execution.label();
    const Tensor& a = execution.required_input(0);
    const Tensor& a_scale = execution.required_input(1);
    const Tensor& b = execution.required_input(3);
    const Tensor& b_scale = execution.required_input(4);
    const Tensor& y_scale = execution.required_input(6);
    const Tensor& y_zero = execution.required_input(7);
    for (const Tensor* s : {&a_scale, &b_scale, &y_scale}) {
      check_scales(*s, label);
      if (s->element_count() != 1)
        throw UnsupportedError(fmt::format("{}: per-axis scales ({}) are not supported", label, shape_to_string(s->shape())));
    }
    if (y_zero.element_count() != 1)
      throw UnsupportedError(fmt::format("{}: a per-axis output zero point is not supported", label));
    std::vector<int32_t> product;
    Shape shape;
    dispatch_int8_pair(a.element_type(), b.element_type(), label, [&](auto av, auto bv) {
      shape = integer_matmul<decltype(av), decltype(bv)>(a, b, &execution.required_input(2), &execution.required_input(5),
                                                         label, product);
    });
    const float multiplier = *a_scale.data<float>() * *b_scale.data<float>() / *y_scale.data<float>();
    const auto zero = static_cast<float>(*y_zero.data<Q>());
    Tensor& y = checked_output(execution, 0, ElementTraits<Q>::type, shape, false);
    Q* out = y.data<Q>();
    for (std::size_t e = 0; e < product.size(); ++e)
      out[e] = saturate_round<Q>(std::nearbyint(static_cast<float>(product[e]) * multiplier) + zero);
  }
};

TuningSchema schema_of(const std::string& op_type, ElementType type) {
  return parallel_threshold_schema(elementwise_key(op_type, type, 1), kDefaultMinimumElements);
}

}  // namespace

void register_quantization_kernels(KernelTable& table) {
  KernelDef quantize = make_def("QuantizeLinear", {10}, ElementType::float32, schema_of("QuantizeLinear", ElementType::float32));
  quantize.create = [](const KernelCreateInfo& info) -> std::unique_ptr<Kernel> {
    if (quantized_type(info, 2) == ElementType::int8) return std::make_unique<LinearQuantizationKernel<int8_t, true>>(info);
    return std::make_unique<LinearQuantizationKernel<uint8_t, true>>(info);
  };
  quantize.output_types = [](const KernelCreateInfo& info) { return std::vector<ElementType>{quantized_type(info, 2)}; };
  table.add(std::move(quantize));

  for_each_type<uint8_t, int8_t, int32_t>([&](auto v) {
    using Q = decltype(v);
    constexpr ElementType type = ElementTraits<Q>::type;
    KernelDef dequantize = make_def("DequantizeLinear", {10}, type, schema_of("DequantizeLinear", type));
    dequantize.create = [](const KernelCreateInfo& info) -> std::unique_ptr<Kernel> {
      return std::make_unique<LinearQuantizationKernel<Q, false>>(info);
    };
    dequantize.output_types = [](const KernelCreateInfo&) { return std::vector<ElementType>{ElementType::float32}; };
    table.add(std::move(dequantize));
  });

  KernelDef dynamic = make_def("DynamicQuantizeLinear", {11}, ElementType::float32,
                               schema_of("DynamicQuantizeLinear", ElementType::float32));
  dynamic.create = [](const KernelCreateInfo& info) -> std::unique_ptr<Kernel> {
    return std::make_unique<DynamicQuantizeLinearKernel>(info);
  };
  dynamic.output_types = [](const KernelCreateInfo&) {
    return std::vector<ElementType>{ElementType::uint8, ElementType::float32, ElementType::uint8};
  };
  table.add(std::move(dynamic));

  for (ElementType type : {ElementType::uint8, ElementType::int8}) {
    KernelDef integer = make_def("MatMulInteger", {10}, type, schema_of("MatMulInteger", type));
    integer.create = [](const KernelCreateInfo& info) -> std::unique_ptr<Kernel> {
      return std::make_unique<MatMulIntegerKernel>(info);
    };
    integer.output_types = [](const KernelCreateInfo&) { return std::vector<ElementType>{ElementType::int32}; };
    table.add(std::move(integer));
    KernelDef qlinear = make_def("QLinearMatMul", {10}, type, schema_of("QLinearMatMul", type));
    qlinear.create = [](const KernelCreateInfo& info) -> std::unique_ptr<Kernel> {
      if (quantized_type(info, 7) == ElementType::int8) return std::make_unique<QLinearMatMulKernel<int8_t>>(info);
      return std::make_unique<QLinearMatMulKernel<uint8_t>>(info);
    };
    qlinear.output_types = [](const KernelCreateInfo& info) { return std::vector<ElementType>{quantized_type(info, 7)}; };
    table.add(std::move(qlinear));
  }
}

}  // namespace onnx_light::runtime::kernels
