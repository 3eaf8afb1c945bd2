// Operators that compute shapes or change only the shape of their data: Reshape, Flatten,
// Squeeze, Unsqueeze (a parallel copy under a new shape), Shape, Size, ConstantOfShape, Range.
// Shape-like inputs (Reshape's shape, axes from opset 13) are read at run time.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <span>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "checked_math.h"
#include "kernels/elementwise.h"
#include "kernels/integer_math.h"
#include "kernels/kernel_families.h"
#include "kernels/kernel_util.h"
#include "onnx_light/runtime/error.h"
#include "onnx_light/runtime/tensor_proto.h"

namespace onnx_light::runtime::kernels {

namespace {

// The data of x under a new shape with the same element count.
class ReshapeLikeKernel : public ThresholdKernel {
 public:
  ReshapeLikeKernel() : ThresholdKernel(kDefaultMinimumElements) {}
  void run(KernelExecution& execution) override {
    const Tensor& x = execution.required_input(0);
    signature_.replan_if_changed(execution, value_inputs(), [&] { shape_ = output_shape(execution, x); });
    const Shape& shape = shape_;
    if (checked_element_count(shape, "the new shape") != x.element_count())
      throw InputError(fmt::format("{}: cannot reshape {} ({} elements) to {}", execution.label(),
                                   shape_to_string(x.shape()), x.element_count(), shape_to_string(shape)));
    Tensor& y = execution.output(0, x.element_type(), shape);
    const auto* in = static_cast<const std::byte*>(x.raw_data());
    auto* out = static_cast<std::byte*>(y.raw_data());
    execution.parallel_for(static_cast<int64_t>(x.byte_size()), 64, admitted(x.element_count(), execution),
                           [&](int64_t begin, int64_t end) {
      if (end > begin) std::memcpy(out + begin, in + begin, static_cast<std::size_t>(end - begin));
    });
  }

 protected:
  virtual Shape output_shape(const KernelExecution& execution, const Tensor& x) const = 0;
  // Inputs whose integer values the output shape depends on (bit i: input i).
  virtual uint32_t value_inputs() const { return 0; }

 private:
  InputSignature signature_;  // the output shape is recomputed only when the inputs change
  Shape shape_;
};

class ReshapeKernel final : public ReshapeLikeKernel {
 public:
  explicit ReshapeKernel(const KernelCreateInfo& info) {
    check_attributes(info, {"allowzero"});
    allow_zero_ = info.int_attribute("allowzero", 0) != 0;
  }

 protected:
  Shape output_shape(const KernelExecution& execution, const Tensor& x) const override {
    const std::string& label = execution.label();
    Shape shape = read_int64_values(execution.required_input(1), label, "shape");
    int64_t infer = -1;
    for (std::size_t d = 0; d < shape.size(); ++d) {
      if (shape[d] == 0 && !allow_zero_) {
        if (d >= x.rank()) throw InputError(fmt::format("{}: shape {} copies dimension {} which {} lacks", label, shape, d, shape_to_string(x.shape())));
        shape[d] = x.shape()[d];
      }
      if (shape[d] == -1) {
        if (infer >= 0) throw InputError(fmt::format("{}: shape {} has more than one -1", label, shape));
        infer = static_cast<int64_t>(d);
      } else if (shape[d] < 0) {
        throw InputError(fmt::format("{}: shape {} has a negative dimension", label, shape));
      }
    }
    if (infer >= 0) {
      // Exact and zero-aware (huge dims beside a 0 are an empty shape, not an overflow); the -1
      // counts as 1 until it is inferred.
      shape[static_cast<std::size_t>(infer)] = 1;
      const int64_t known = checked_product(shape, "the product of the shape's known dims (-1 as 1)");
      if (known == 0 || x.element_count() % known != 0) {
        shape[static_cast<std::size_t>(infer)] = -1;
        throw InputError(fmt::format("{}: cannot infer the -1 in {} for {} elements", label, shape, x.element_count()));
      }
      shape[static_cast<std::size_t>(infer)] = x.element_count() / known;
    }
    return shape;
  }
  uint32_t value_inputs() const override { return 1u << 1; }

 private:
  bool allow_zero_ = false;
};

class FlattenKernel final : public ReshapeLikeKernel {
 public:
  explicit FlattenKernel(const KernelCreateInfo& info) {
    check_attributes(info, {"axis"});
    axis_ = info.int_attribute("axis", 1);
  }

 protected:
  Shape output_shape(const KernelExecution& execution, const Tensor& x) const override {
    const auto axis = static_cast<std::size_t>(
        normalize_axis(axis_, static_cast<int64_t>(x.rank()), execution.label(), "axis", 1));
    // Huge dims beside a zero can make one side overflow although x is empty: no [outer, inner] then.
    const std::span<const int64_t> dims(x.shape());
    return {checked_product(dims.first(axis), "the outer dimension"), checked_product(dims.subspan(axis), "the inner dimension")};
  }

 private:
  int64_t axis_ = 1;
};

// Squeeze and Unsqueeze: axes from the attribute before opset 13, from input 1 after.
class SqueezeKernel final : public ReshapeLikeKernel {
 public:
  SqueezeKernel(const KernelCreateInfo& info, bool unsqueeze) : unsqueeze_(unsqueeze) {
    from_input_ = info.opset >= 13;
    if (from_input_) {
      check_attributes(info, {});
    } else {
      check_attributes(info, {"axes"});
      axes_ = info.ints_attribute("axes");
    }
  }

 protected:
  Shape output_shape(const KernelExecution& execution, const Tensor& x) const override {
    const std::string& label = execution.label();
    std::vector<int64_t> axes = axes_;
    if (from_input_) {
      if (const Tensor* a = execution.input(1)) axes = read_int64_values(*a, label, "axes");
      else if (unsqueeze_) throw InputError(fmt::format("{}: input 1 (axes) is required", label));
    }
    const auto in_rank = static_cast<int64_t>(x.rank());
    if (unsqueeze_) {
      const int64_t rank = in_rank + static_cast<int64_t>(axes.size());
      std::vector<bool> inserted(static_cast<std::size_t>(rank), false);
      for (int64_t a : axes) {
        auto d = static_cast<std::size_t>(normalize_axis(a, rank, label, "axes"));
        if (inserted[d]) throw InputError(fmt::format("{}: axes {} repeat axis {}", label, axes, d));
        inserted[d] = true;
      }
      Shape shape;
      std::size_t next = 0;
      for (std::size_t d = 0; d < static_cast<std::size_t>(rank); ++d) shape.push_back(inserted[d] ? 1 : x.shape()[next++]);
      return shape;
    }
    std::vector<bool> removed(x.rank(), false);
    if (axes.empty()) {
      for (std::size_t d = 0; d < x.rank(); ++d) removed[d] = x.shape()[d] == 1;
    } else {
      for (int64_t a : axes) {
        auto d = static_cast<std::size_t>(normalize_axis(a, in_rank, label, "axes"));
        if (x.shape()[d] != 1)
          throw InputError(fmt::format("{}: cannot squeeze axis {} of size {} (shape {})", label, d, x.shape()[d],
                                       shape_to_string(x.shape())));
        removed[d] = true;
      }
    }
    Shape shape;
    for (std::size_t d = 0; d < x.rank(); ++d)
      if (!removed[d]) shape.push_back(x.shape()[d]);
    return shape;
  }
  uint32_t value_inputs() const override { return from_input_ ? 1u << 1 : 0u; }

 private:
  bool unsqueeze_;
  bool from_input_ = false;
  std::vector<int64_t> axes_;
};

// Shape (with start/end from opset 15) and Size: int64 results that depend only on the shape.
class ShapeKernel final : public Kernel {
 public:
  ShapeKernel(const KernelCreateInfo& info, bool size) : size_(size) {
    if (size || info.opset < 15) check_attributes(info, {});
    else check_attributes(info, {"start", "end"});
    start_ = info.int_attribute("start", 0);
    end_ = info.int_attribute("end", std::numeric_limits<int64_t>::max());
  }
  void run(KernelExecution& execution) override {
    const Tensor& x = execution.required_input(0);
    if (size_) {
      *execution.output(0, ElementType::int64, {}).data<int64_t>() = x.element_count();
      return;
    }
    const auto rank = static_cast<int64_t>(x.rank());
    auto clamp = [rank](int64_t v) { return std::clamp<int64_t>(v < 0 ? v + rank : v, 0, rank); };
    const int64_t begin = clamp(start_);
    const int64_t end = std::max(begin, clamp(end_));
    out_shape_[0] = end - begin;
    Tensor& y = execution.output(0, ElementType::int64, out_shape_);
    std::copy(x.shape().begin() + begin, x.shape().begin() + end, y.data<int64_t>());
  }

 private:
  bool size_;
  int64_t start_ = 0, end_ = 0;
  Shape out_shape_ = Shape(1);  // a member: a temporary shape would be an allocation per run
};

// ConstantOfShape: the `value` attribute (one element, default float 0) repeated over a shape.
class ConstantOfShapeKernel final : public ThresholdKernel {
 public:
  explicit ConstantOfShapeKernel(const KernelCreateInfo& info) : ThresholdKernel(kDefaultMinimumElements) {
    check_attributes(info, {"value"});
    value_ = value_of(info);
  }
  static Tensor value_of(const KernelCreateInfo& info) {
    const onnx::AttributeProto* a = info.attribute("value");
    if (a == nullptr) return Tensor(ElementType::float32, {1});
    Tensor v;
    try {
      v = tensor_from_proto(a->t());
    } catch (const UnsupportedError& e) {
      throw UnsupportedError(fmt::format("{}: attribute 'value': {}", info.node_label(), e.what()));
    } catch (const Error& e) {
      throw ModelError(fmt::format("{}: attribute 'value': {}", info.node_label(), e.what()));
    }
    if (v.element_count() != 1)
      throw ModelError(fmt::format("{}: attribute 'value' must hold one element, not {}", info.node_label(), v.describe()));
    return v;
  }
  void run(KernelExecution& execution) override {
    const Shape shape = read_int64_values(execution.required_input(0), execution.label(), "shape");
    if (std::any_of(shape.begin(), shape.end(), [](int64_t d) { return d < 0; }))
      throw InputError(fmt::format("{}: shape {} has a negative dimension", execution.label(), shape));
    Tensor& y = checked_output(execution, 0, value_.element_type(), shape, /*zero=*/false);
    dispatch_element_size(element_size(value_.element_type()), [&](auto u) {
      using U = decltype(u);
      const U v = *value_.data<U>();
      U* out = y.data<U>();
      execution.parallel_for(y.element_count(), cache_line_grain<U>(), admitted(y.element_count(), execution),
                             [&](int64_t begin, int64_t end) { std::fill(out + begin, out + end, v); });
    });
  }

 private:
  Tensor value_;
};

// The element count of Range(start, limit, delta) for an integer type: ceil((limit - start) / delta)
// counted exactly in uint64 (limit - start may span all of int64), 0 when the range is empty.
// Throws InputError when delta is 0 or the count does not fit int64.
int64_t integer_range_count(int64_t start, int64_t limit, int64_t delta, const std::string& label) {
  if (delta == 0) throw InputError(fmt::format("{}: delta must not be 0", label));
  if (delta > 0 ? limit <= start : limit >= start) return 0;
  // Magnitudes as uint64: two's complement differences are exact modulo 2^64 and below it here.
  const uint64_t span = delta > 0 ? static_cast<uint64_t>(limit) - static_cast<uint64_t>(start)
                                  : static_cast<uint64_t>(start) - static_cast<uint64_t>(limit);
  const uint64_t step = delta > 0 ? static_cast<uint64_t>(delta) : uint64_t{0} - static_cast<uint64_t>(delta);
  const uint64_t count = span / step + (span % step != 0 ? 1 : 0);
  if (count > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
    throw InputError(fmt::format("{}: the range from {} to {} by {} has {} elements, more than int64 counts", label,
                                 start, limit, delta, count));
  return static_cast<int64_t>(count);
}

// Range(start, limit, delta): start + i * delta for i < max(ceil((limit - start) / delta), 0).
// Integers count exactly (not through double, which rounds past 2^53); floating types count in
// their own arithmetic, as ONNX's function body (Sub, Div, Ceil on T) and numpy.arange do.
template <typename T>
class RangeKernel final : public ThresholdKernel {
 public:
  explicit RangeKernel(const KernelCreateInfo& info) : ThresholdKernel(kDefaultMinimumElements) {
    check_attributes(info, {});
  }
  void run(KernelExecution& execution) override {
    const std::string& label = execution.label();
    T v[3];
    for (std::size_t i = 0; i < 3; ++i) {
      const Tensor& t = execution.required_input(i);
      check_input_type(execution, i, t, ElementTraits<T>::type);
      if (t.element_count() != 1) throw InputError(fmt::format("{}: input {} must be a scalar", label, i));
      v[i] = t.data<T>()[0];
    }
    const T start = v[0], limit = v[1], delta = v[2];
    int64_t n = 0;
    if constexpr (std::is_integral_v<T>) {
      n = integer_range_count(start, limit, delta, label);
    } else {
      if (delta == T(0)) throw InputError(fmt::format("{}: delta must not be 0", label));
      const T steps = std::ceil((limit - start) / delta);
      // 2^63 is exact in T; anything from there up (or NaN, or infinity) is no count.
      if (!(steps < static_cast<T>(9223372036854775808.0)))
        throw InputError(fmt::format("{}: the range from {} to {} by {} has no element count that int64 holds ({})",
                                     label, start, limit, delta, steps));
      n = steps > T(0) ? static_cast<int64_t>(steps) : 0;
    }
    Tensor& y = checked_output(execution, 0, ElementTraits<T>::type, {n}, /*zero=*/false);
    T* out = y.data<T>();
    execution.parallel_for(n, cache_line_grain<T>(), admitted(n, execution), [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) {
        // Every value lies between start and limit; wrapping arithmetic reaches it without overflow.
        if constexpr (std::is_integral_v<T>) out[i] = wrap_add(start, static_cast<T>(wrap_mul(static_cast<int64_t>(delta), i)));
        else out[i] = static_cast<T>(start + static_cast<T>(i) * delta);
      }
    });
  }
};

KernelDef threshold_def(const std::string& op_type, OpsetRange opsets, ElementType type) {
  return make_def(op_type, opsets, type, parallel_threshold_schema(elementwise_key(op_type, type, 1), kDefaultMinimumElements));
}

// Calibration: x of about n elements, reshaped between [rows * 64] (or [rows, 8, 8], [rows, 1, 64]) and [rows, 64].
CalibrationWorkloadFunction reshape_like_workload(const std::string& op_type, ElementType type) {
  return [op_type, type](int64_t n, int, uint32_t seed) {
    const Shape out = rows_of_64(n);
    const int64_t rows = out[0];
    if (op_type == "Reshape")
      return one_node_workload(op_type, 14, "", {{"x", random_tensor(type, {rows * 64}, seed)}, {"shape", int64_tensor(out)}},
                               {{"y", type, out}}, rows * 64);
    if (op_type == "Flatten")
      return one_node_workload(op_type, 13, "axis = 1", {{"x", random_tensor(type, {rows, 8, 8}, seed)}},
                               {{"y", type, out}}, rows * 64);
    if (op_type == "Squeeze")
      return one_node_workload(op_type, 13, "", {{"x", random_tensor(type, {rows, 1, 64}, seed)}, {"axes", int64_tensor({1})}},
                               {{"y", type, out}}, rows * 64);
    return one_node_workload(op_type, 13, "", {{"x", random_tensor(type, out, seed)}, {"axes", int64_tensor({1})}},
                             {{"y", type, {rows, 1, 64}}}, rows * 64);
  };
}

}  // namespace

void register_shape_kernels(KernelTable& table) {
  for (ElementType type : supported_element_types()) {
    KernelDef reshape = threshold_def("Reshape", {5}, type);
    reshape.create = [](const KernelCreateInfo& info) -> std::unique_ptr<Kernel> {
      return std::make_unique<ReshapeKernel>(info);
    };
    reshape.calibration_workload = reshape_like_workload("Reshape", type);
    table.add(std::move(reshape));
    KernelDef flatten = threshold_def("Flatten", {1}, type);
    flatten.create = [](const KernelCreateInfo& info) -> std::unique_ptr<Kernel> {
      return std::make_unique<FlattenKernel>(info);
    };
    flatten.calibration_workload = reshape_like_workload("Flatten", type);
    table.add(std::move(flatten));
    for (bool unsqueeze : {false, true}) {
      KernelDef def = threshold_def(unsqueeze ? "Unsqueeze" : "Squeeze", {1}, type);
      def.create = [unsqueeze](const KernelCreateInfo& info) -> std::unique_ptr<Kernel> {
        return std::make_unique<SqueezeKernel>(info, unsqueeze);
      };
      def.calibration_workload = reshape_like_workload(unsqueeze ? "Unsqueeze" : "Squeeze", type);
      table.add(std::move(def));
    }
    // Shape and Size do O(rank) work: an empty schema (nothing to tune).
    for (bool size : {false, true}) {
      const std::string op = size ? "Size" : "Shape";
      KernelDef def = make_def(op, {1}, type, TuningSchema{elementwise_key(op, type, 1), {}});
      def.create = [size](const KernelCreateInfo& info) -> std::unique_ptr<Kernel> {
        return std::make_unique<ShapeKernel>(info, size);
      };
      def.output_types = [](const KernelCreateInfo&) { return std::vector<ElementType>{ElementType::int64}; };
      table.add(std::move(def));
    }
  }
  KernelDef constant_of_shape = threshold_def("ConstantOfShape", {9}, ElementType::int64);
  constant_of_shape.create = [](const KernelCreateInfo& info) -> std::unique_ptr<Kernel> {
    return std::make_unique<ConstantOfShapeKernel>(info);
  };
  constant_of_shape.output_types = [](const KernelCreateInfo& info) {
    return std::vector<ElementType>{ConstantOfShapeKernel::value_of(info).element_type()};
  };
  constant_of_shape.calibration_workload = [](int64_t n, int, uint32_t) {
    const Shape shape = rows_of_64(n);
    return one_node_workload("ConstantOfShape", 9, "", {{"shape", int64_tensor(shape)}},
                             {{"y", ElementType::float32, shape}}, shape[0] * shape[1]);
  };
  table.add(std::move(constant_of_shape));
  for_each_type<float, double, int16_t, int32_t, int64_t>([&](auto t) {
    using T = decltype(t);
    KernelDef def = threshold_def("Range", {11}, ElementTraits<T>::type);
    def.create = [](const KernelCreateInfo& info) -> std::unique_ptr<Kernel> { return std::make_unique<RangeKernel<T>>(info); };
    def.calibration_workload = [](int64_t n, int, uint32_t) {
      // Capped where T still counts exactly (int16's range, float's 24-bit mantissa).
      const double integral_cap = std::min(static_cast<double>(std::numeric_limits<T>::max()), 1e15);
      const int64_t cap = std::is_integral_v<T> ? static_cast<int64_t>(integral_cap) : (int64_t{1} << 24);
      const int64_t count = std::min<int64_t>(n, cap);
      auto scalar = [](T v) {
        Tensor value(ElementTraits<T>::type, {});
        *value.data<T>() = v;
        return value;
      };
      return one_node_workload("Range", 11, "",
                               {{"start", scalar(T(0))}, {"limit", scalar(static_cast<T>(count))}, {"delta", scalar(T(1))}},
                               {{"y", ElementTraits<T>::type, {count}}}, count);
    };
    table.add(std::move(def));
  });
}

}  // namespace onnx_light::runtime::kernels
