// Operators that read or write through index tensors or masks: GatherND, ScatterND,
// ScatterElements (and the deprecated Scatter), OneHot, Compress, NonZero, EyeLike,
// ReverseSequence and MaxUnpool. Every index is wrapped (negative counts from the end) and range-checked before
// anything is written, so a bad index is an InputError naming the node, never a stray write.
// Copies move whole slices by element size; reductions (ScatterND/ScatterElements opset 16+)
// compute in the element type.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "checked_math.h"
#include "kernels/element_traits.h"
#include "kernels/elementwise.h"
#include "kernels/kernel_families.h"
#include "kernels/kernel_util.h"
#include "onnx_light/runtime/error.h"

namespace onnx_light::runtime::kernels {

namespace {

int64_t product(const Shape& shape, std::size_t begin, std::size_t end) {
  int64_t p = 1;
  for (std::size_t d = begin; d < end; ++d) p *= shape[d];
  return p;
}

// `v` wrapped into [0, dim), or an InputError naming what it indexes.
int64_t wrap_index(int64_t v, int64_t dim, const std::string& label, std::string_view what) {
  if (v < -dim || v >= dim)
    throw InputError(fmt::format("{}: {} {} is out of range for a dimension of size {}", label, what, v, dim));
  return v < 0 ? v + dim : v;
}

// Element offsets (in elements of data) of the index tuples of `indices` ([..., k]) into data's
// dims [first, first + k); a tuple per entry of the result.
std::vector<int64_t> tuple_offsets(const Tensor& indices, const Shape& data_shape, std::size_t first,
                                   const std::string& label) {
  const int64_t k = indices.shape().back();  // >= 1, checked by the callers
  const std::vector<int64_t> values = read_int64_values(indices, label, "indices");
  const auto tuples = static_cast<int64_t>(values.size()) / k;
  std::vector<int64_t> offsets(static_cast<std::size_t>(tuples));
  for (int64_t t = 0; t < tuples; ++t) {
    int64_t offset = 0;
    for (int64_t d = 0; d < k; ++d) {
      const auto axis = first + static_cast<std::size_t>(d);
      const int64_t i = wrap_index(values[static_cast<std::size_t>(t * k + d)], data_shape[axis], label, "index");
      offset += i * product(data_shape, axis + 1, data_shape.size());
    }
    offsets[static_cast<std::size_t>(t)] = offset;
  }
  return offsets;
}

enum class Reduction { none, add, mul, max, min };

Reduction reduction_of(const KernelCreateInfo& info) {
  const std::string r = info.string_attribute("reduction", "none");
  if (r == "none") return Reduction::none;
  if (r == "add") return Reduction::add;
  if (r == "mul") return Reduction::mul;
  if ((r == "max" || r == "min") && info.opset >= 18) return r == "max" ? Reduction::max : Reduction::min;
  throw UnsupportedError(fmt::format("{}: reduction '{}' is not supported at opset {}", info.node_label(), r, info.opset));
}

template <typename T>
void reduce_into(T& target, T update, Reduction reduction) {
  if constexpr (std::is_same_v<T, bool>) {
    if (reduction == Reduction::none) target = update;
    else if (reduction == Reduction::add || reduction == Reduction::max) target = target || update;
    else target = target && update;
  } else {
    using C = compute_t<T>;
    const C a = load<T>(target), b = load<T>(update);
    switch (reduction) {
      case Reduction::none: target = update; return;
      case Reduction::add: target = store<T>(static_cast<C>(a + b)); return;
      case Reduction::mul: target = store<T>(static_cast<C>(a * b)); return;
      case Reduction::max: target = store<T>(std::max(a, b)); return;
      case Reduction::min: target = store<T>(std::min(a, b)); return;
    }
  }
}

// GatherND (opset 11; batch_dims from 12): slices of data addressed by the tuples in indices'
// last dim, the first batch_dims dims of both walked together.
class GatherNDKernel final : public ThresholdKernel {
 public:
  explicit GatherNDKernel(const KernelCreateInfo& info) : ThresholdKernel(kDefaultMinimumElements) {
    check_attributes(info, {"batch_dims"});
    batch_dims_ = info.int_attribute("batch_dims", 0);
  }
  void run(KernelExecution& execution) override {
    const Tensor& data = execution.required_input(0);
    const Tensor& indices = execution.required_input(1);
    const std::string& label = execution.label();
    const auto r = static_cast<int64_t>(data.rank()), q = static_cast<int64_t>(indices.rank());
    const int64_t b = batch_dims_;
    if (r < 1 || q < 1 || b < 0 || b >= std::min(r, q))
      throw InputError(fmt::format("{}: batch_dims {} needs data and indices of rank above it (ranks {} and {})", label,
                                   b, r, q));
    const int64_t k = indices.shape().back();
    if (k < 1 || k > r - b)
      throw InputError(fmt::format("{}: indices' last dim {} must be in [1, {}] (data rank {} - batch_dims {})", label,
                                   k, r - b, r, b));
    for (int64_t d = 0; d < b; ++d)
      if (data.shape()[static_cast<std::size_t>(d)] != indices.shape()[static_cast<std::size_t>(d)])
        throw InputError(fmt::format("{}: batch dim {} differs: data {} and indices {}", label, d,
                                     shape_to_string(data.shape()), shape_to_string(indices.shape())));
    const auto ub = static_cast<std::size_t>(b), uk = static_cast<std::size_t>(k);
    Shape out_shape(indices.shape().begin(), indices.shape().end() - 1);
    out_shape.insert(out_shape.end(), data.shape().begin() + static_cast<std::ptrdiff_t>(ub + uk), data.shape().end());
    Tensor& y = checked_output(execution, 0, data.element_type(), out_shape);
    if (y.element_count() == 0) return;
    const Shape batch_shape(data.shape().begin() + static_cast<std::ptrdiff_t>(ub), data.shape().end());
    const std::vector<int64_t> offsets = tuple_offsets(indices, batch_shape, 0, label);
    const int64_t batches = product(data.shape(), 0, ub);
    const auto per_batch = static_cast<int64_t>(offsets.size()) / batches;
    const auto size = static_cast<int64_t>(element_size(data.element_type()));
    const int64_t slice = product(data.shape(), ub + uk, data.rank()) * size;
    const int64_t batch_bytes = product(data.shape(), ub, data.rank()) * size;
    const auto* in = static_cast<const std::byte*>(data.raw_data());
    auto* out = static_cast<std::byte*>(y.raw_data());
    execution.parallel_for(static_cast<int64_t>(offsets.size()), 1, admitted(y.element_count(), execution),
                           [&](int64_t begin, int64_t end) {
      for (int64_t t = begin; t < end; ++t)
        std::memcpy(out + t * slice, in + (t / per_batch) * batch_bytes + offsets[static_cast<std::size_t>(t)] * size,
                    static_cast<std::size_t>(slice));
    });
  }

 private:
  int64_t batch_dims_ = 0;
};

// ScatterND: data with the slices addressed by indices' tuples replaced by (or reduced with)
// updates, in the order of the tuples.
template <typename T>
class ScatterNDKernel final : public ThresholdKernel {
 public:
  explicit ScatterNDKernel(const KernelCreateInfo& info) : ThresholdKernel(kDefaultMinimumElements) {
    check_attributes(info, {"reduction"});
    reduction_ = reduction_of(info);
  }
  void run(KernelExecution& execution) override {
    const Tensor& data = execution.required_input(0);
    const Tensor& indices = execution.required_input(1);
    const Tensor& updates = execution.required_input(2);
    const std::string& label = execution.label();
    check_input_type(execution, 2, updates, data.element_type());
    if (indices.rank() < 1) throw InputError(fmt::format("{}: indices must have rank 1 or more", label));
    const int64_t k = indices.shape().back();
    if (k < 1 || k > static_cast<int64_t>(data.rank()))
      throw InputError(fmt::format("{}: indices' last dim {} must be in [1, {}]", label, k, data.rank()));
    Shape expected(indices.shape().begin(), indices.shape().end() - 1);
    expected.insert(expected.end(), data.shape().begin() + k, data.shape().end());
    if (updates.shape() != expected)
      throw InputError(fmt::format("{}: updates {} must have shape {} (indices {} into data {})", label,
                                   shape_to_string(updates.shape()), shape_to_string(expected),
                                   shape_to_string(indices.shape()), shape_to_string(data.shape())));
    const std::vector<int64_t> offsets = tuple_offsets(indices, data.shape(), 0, label);
    Tensor& y = checked_output(execution, 0, data.element_type(), data.shape());
    std::memcpy(y.raw_data(), data.raw_data(), data.byte_size());
    const int64_t slice = product(data.shape(), static_cast<std::size_t>(k), data.rank());
    const T* u = updates.data<T>();
    T* out = y.data<T>();
    for (std::size_t t = 0; t < offsets.size(); ++t)
      for (int64_t i = 0; i < slice; ++i)
        reduce_into(out[offsets[t] + i], u[static_cast<int64_t>(t) * slice + i], reduction_);
  }

 private:
  Reduction reduction_ = Reduction::none;
};

// ScatterElements (and Scatter, opsets 9-10): updates written at data positions whose `axis`
// coordinate comes from indices (same shape as updates), the other coordinates their own.
template <typename T>
class ScatterElementsKernel final : public ThresholdKernel {
 public:
  explicit ScatterElementsKernel(const KernelCreateInfo& info) : ThresholdKernel(kDefaultMinimumElements) {
    check_attributes(info, {"axis", "reduction"});
    axis_ = info.int_attribute("axis", 0);
    reduction_ = reduction_of(info);
  }
  void run(KernelExecution& execution) override {
    const Tensor& data = execution.required_input(0);
    const Tensor& indices = execution.required_input(1);
    const Tensor& updates = execution.required_input(2);
    const std::string& label = execution.label();
    check_input_type(execution, 2, updates, data.element_type());
    if (indices.shape() != updates.shape() || indices.rank() != data.rank())
      throw InputError(fmt::format("{}: indices {} and updates {} must have one shape, of data's rank ({})", label,
                                   shape_to_string(indices.shape()), shape_to_string(updates.shape()), data.rank()));
    const auto axis = static_cast<std::size_t>(normalize_axis(axis_, static_cast<int64_t>(data.rank()), label));
    for (std::size_t d = 0; d < data.rank(); ++d)
      if (d != axis && indices.shape()[d] > data.shape()[d])
        throw InputError(fmt::format("{}: indices {} exceed data {} on axis {}", label, shape_to_string(indices.shape()),
                                     shape_to_string(data.shape()), d));
    std::vector<int64_t> index = read_int64_values(indices, label, "indices");
    for (int64_t& v : index) v = wrap_index(v, data.shape()[axis], label, "index");
    Tensor& y = checked_output(execution, 0, data.element_type(), data.shape());
    std::memcpy(y.raw_data(), data.raw_data(), data.byte_size());
    const std::vector<int64_t> strides = row_major_strides(data.shape());
    const Shape& shape = indices.shape();
    const T* u = updates.data<T>();
    T* out = y.data<T>();
    for (int64_t e = 0; e < indices.element_count(); ++e) {
      int64_t rest = e, offset = 0;
      for (std::size_t d = shape.size(); d-- > 0;) {
        const int64_t i = rest % shape[d];
        rest /= shape[d];
        offset += (d == axis ? index[static_cast<std::size_t>(e)] : i) * strides[d];
      }
      reduce_into(out[offset], u[e], reduction_);
    }
  }

 private:
  int64_t axis_ = 0;
  Reduction reduction_ = Reduction::none;
};

// OneHot: for each index, a vector of `depth` off values with the on value at the index (after
// wrapping negatives by depth, opset 11); indices outside [-depth, depth) give all off values.
template <typename T>
class OneHotKernel final : public ThresholdKernel {
 public:
  explicit OneHotKernel(const KernelCreateInfo& info) : ThresholdKernel(kDefaultMinimumElements) {
    check_attributes(info, {"axis"});
    axis_ = info.int_attribute("axis", -1);
  }
  void run(KernelExecution& execution) override {
    const Tensor& indices = execution.required_input(0);
    const Tensor& depth_tensor = execution.required_input(1);
    const Tensor& values = execution.required_input(2);
    const std::string& label = execution.label();
    if (depth_tensor.element_count() != 1)
      throw InputError(fmt::format("{}: depth must hold one value, not {}", label, shape_to_string(depth_tensor.shape())));
    if (values.element_count() != 2)
      throw InputError(fmt::format("{}: values must hold [off, on], not {}", label, shape_to_string(values.shape())));
    const double depth_value = read_as_double(depth_tensor, 0);
    if (!(depth_value >= 1) || depth_value > 9.0e15)
      throw InputError(fmt::format("{}: depth {} must be a positive count", label, depth_value));
    const auto depth = static_cast<int64_t>(depth_value);
    const auto rank = static_cast<int64_t>(indices.rank());
    const auto axis = static_cast<std::size_t>(normalize_axis(axis_, rank + 1, label));
    Shape out_shape = indices.shape();
    out_shape.insert(out_shape.begin() + static_cast<std::ptrdiff_t>(axis), depth);
    Tensor& y = checked_output(execution, 0, values.element_type(), out_shape);
    const T off = values.data<T>()[0], on = values.data<T>()[1];
    T* out = y.data<T>();
    std::fill(out, out + y.element_count(), off);
    const int64_t inner = product(indices.shape(), axis, indices.rank());
    for (int64_t e = 0; e < indices.element_count(); ++e) {
      auto v = static_cast<int64_t>(std::trunc(read_as_double(indices, e)));
      if (v < -depth || v >= depth) continue;
      if (v < 0) v += depth;
      const int64_t o = e / inner, i = e % inner;
      out[(o * depth + v) * inner + i] = on;
    }
  }

 private:
  int64_t axis_ = -1;
};

// Compress: the slices along `axis` (or the elements of the flattened input) whose condition is
// true; a condition shorter than the axis leaves the rest out.
class CompressKernel final : public ThresholdKernel {
 public:
  explicit CompressKernel(const KernelCreateInfo& info) : ThresholdKernel(kDefaultMinimumElements) {
    check_attributes(info, {"axis"});
    has_axis_ = info.has_attribute("axis");
    axis_ = info.int_attribute("axis", 0);
  }
  void run(KernelExecution& execution) override {
    const Tensor& x = execution.required_input(0);
    const Tensor& condition = execution.required_input(1);
    const std::string& label = execution.label();
    if (condition.element_type() != ElementType::boolean || condition.rank() != 1)
      throw InputError(fmt::format("{}: condition must be a 1-D bool tensor, not {}", label, condition.describe()));
    const Shape flat{x.element_count()};
    const Shape& shape = has_axis_ ? x.shape() : flat;
    const auto axis = has_axis_ ? static_cast<std::size_t>(normalize_axis(axis_, static_cast<int64_t>(x.rank()), label))
                                : std::size_t{0};
    if (condition.element_count() > shape[axis])
      throw InputError(fmt::format("{}: condition has {} entries for an axis of size {}", label,
                                   condition.element_count(), shape[axis]));
    const bool* keep = condition.data<bool>();
    std::vector<int64_t> kept;
    for (int64_t i = 0; i < condition.element_count(); ++i)
      if (keep[i]) kept.push_back(i);
    Shape out_shape = shape;
    out_shape[axis] = static_cast<int64_t>(kept.size());
    Tensor& y = checked_output(execution, 0, x.element_type(), out_shape);
    const auto size = static_cast<int64_t>(element_size(x.element_type()));
    const int64_t outer = product(shape, 0, axis), inner = product(shape, axis + 1, shape.size()) * size;
    const auto* in = static_cast<const std::byte*>(x.raw_data());
    auto* out = static_cast<std::byte*>(y.raw_data());
    for (int64_t o = 0; o < outer; ++o)
      for (std::size_t j = 0; j < kept.size(); ++j)
        std::memcpy(out + (o * static_cast<int64_t>(kept.size()) + static_cast<int64_t>(j)) * inner,
                    in + (o * shape[axis] + kept[j]) * inner, static_cast<std::size_t>(inner));
  }

 private:
  bool has_axis_ = false;
  int64_t axis_ = 0;
};

// NonZero: the coordinates of the non-zero elements, int64 [rank, count], in row-major order.
template <typename T>
class NonZeroKernel final : public ThresholdKernel {
 public:
  explicit NonZeroKernel(const KernelCreateInfo& info) : ThresholdKernel(kDefaultMinimumElements) {
    check_attributes(info, {});
  }
  void run(KernelExecution& execution) override {
    const Tensor& x = execution.required_input(0);
    const T* in = x.data<T>();
    std::vector<int64_t> found;
    for (int64_t e = 0; e < x.element_count(); ++e)
      if (load<T>(in[e]) != compute_t<T>(0)) found.push_back(e);
    const auto rank = static_cast<int64_t>(std::max<std::size_t>(x.rank(), 1));
    const auto count = static_cast<int64_t>(found.size());
    Tensor& y = checked_output(execution, 0, ElementType::int64, {x.rank() == 0 ? 1 : static_cast<int64_t>(x.rank()), count});
    int64_t* out = y.data<int64_t>();
    const Shape shape = x.rank() == 0 ? Shape{1} : x.shape();
    for (int64_t j = 0; j < count; ++j) {
      int64_t rest = found[static_cast<std::size_t>(j)];
      for (int64_t d = rank; d-- > 0;) {
        out[d * count + j] = rest % shape[static_cast<std::size_t>(d)];
        rest /= shape[static_cast<std::size_t>(d)];
      }
    }
  }
};

// EyeLike: a 2-D tensor of input's shape with ones on diagonal k, of type `dtype` (default the
// input's).
class EyeLikeKernel final : public ThresholdKernel {
 public:
  explicit EyeLikeKernel(const KernelCreateInfo& info, ElementType output) : ThresholdKernel(kDefaultMinimumElements), output_(output) {
    check_attributes(info, {"dtype", "k"});
    k_ = info.int_attribute("k", 0);
  }
  void run(KernelExecution& execution) override {
    const Tensor& x = execution.required_input(0);
    if (x.rank() != 2)
      throw InputError(fmt::format("{}: input must be 2-D, not {}", execution.label(), shape_to_string(x.shape())));
    Tensor& y = checked_output(execution, 0, output_, x.shape(), /*zero=*/true);
    const int64_t rows = x.shape()[0], cols = x.shape()[1];
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t c = r + k_;
      if (c < 0 || c >= cols) continue;
      set_one(y, r * cols + c);
    }
  }

 private:
  static void set_one(Tensor& t, int64_t i) {
    bool done = false;
    for_each_type<float, double, int8_t, int16_t, int32_t, int64_t, uint8_t, uint16_t, uint32_t, uint64_t, bool, Float16,
                  BFloat16>([&](auto v) {
      using T = decltype(v);
      if (!done && t.element_type() == ElementTraits<T>::type) {
        t.data<T>()[i] = store<T>(compute_t<T>(1));
        done = true;
      }
    });
  }
  ElementType output_;
  int64_t k_ = 0;
};

// ReverseSequence: for each batch entry b, its first sequence_lens[b] steps along time_axis in
// reverse order; the steps after them as they are.
class ReverseSequenceKernel final : public ThresholdKernel {
 public:
  explicit ReverseSequenceKernel(const KernelCreateInfo& info) : ThresholdKernel(kDefaultMinimumElements) {
    check_attributes(info, {"batch_axis", "time_axis"});
    batch_axis_ = info.int_attribute("batch_axis", 1);
    time_axis_ = info.int_attribute("time_axis", 0);
    if (!((batch_axis_ == 0 && time_axis_ == 1) || (batch_axis_ == 1 && time_axis_ == 0)))
      throw UnsupportedError(fmt::format("{}: batch_axis {} and time_axis {} must be 0 and 1 in some order",
                                         info.node_label(), batch_axis_, time_axis_));
  }
  void run(KernelExecution& execution) override {
    const Tensor& x = execution.required_input(0);
    const Tensor& lens_tensor = execution.required_input(1);
    const std::string& label = execution.label();
    if (x.rank() < 2) throw InputError(fmt::format("{}: input must have rank 2 or more", label));
    const auto ub = static_cast<std::size_t>(batch_axis_), ut = static_cast<std::size_t>(time_axis_);
    const int64_t batch = x.shape()[ub], steps = x.shape()[ut];
    const std::vector<int64_t> lens = read_int64_values(lens_tensor, label, "sequence_lens");
    if (static_cast<int64_t>(lens.size()) != batch)
      throw InputError(fmt::format("{}: sequence_lens has {} entries for a batch of {}", label, lens.size(), batch));
    for (int64_t len : lens)
      if (len < 0 || len > steps)
        throw InputError(fmt::format("{}: sequence length {} is outside [0, {}]", label, len, steps));
    Tensor& y = checked_output(execution, 0, x.element_type(), x.shape());
    const auto size = static_cast<int64_t>(element_size(x.element_type()));
    const int64_t inner = product(x.shape(), 2, x.rank()) * size;
    const int64_t stride_b = ub == 0 ? x.shape()[1] * inner : inner, stride_t = ut == 0 ? x.shape()[1] * inner : inner;
    const auto* in = static_cast<const std::byte*>(x.raw_data());
    auto* out = static_cast<std::byte*>(y.raw_data());
    for (int64_t b = 0; b < batch; ++b)
      for (int64_t t = 0; t < steps; ++t) {
        const int64_t len = lens[static_cast<std::size_t>(b)];
        const int64_t from = t < len ? len - 1 - t : t;
        std::memcpy(out + b * stride_b + t * stride_t, in + b * stride_b + from * stride_t, static_cast<std::size_t>(inner));
      }
  }

 private:
  int64_t batch_axis_ = 1, time_axis_ = 0;
};

// MaxUnpool: zeros of the unpooled shape with each X value written at its flat index from I (as
// MaxPool's Indices output gives them); the shape from output_shape when given, else
// (in - 1) * stride + kernel - pads per spatial dim.
class MaxUnpoolKernel final : public ThresholdKernel {
 public:
  explicit MaxUnpoolKernel(const KernelCreateInfo& info) : ThresholdKernel(kDefaultMinimumElements) {
    check_attributes(info, {"kernel_shape", "pads", "strides"});
    kernel_ = info.ints_attribute("kernel_shape");
    pads_ = info.ints_attribute("pads");
    strides_ = info.ints_attribute("strides");
    if (kernel_.empty()) throw ModelError(fmt::format("{}: attribute 'kernel_shape' is required", info.node_label()));
  }
  void run(KernelExecution& execution) override {
    const Tensor& x = execution.required_input(0);
    const Tensor& indices = execution.required_input(1);
    const std::string& label = execution.label();
    const std::size_t spatial = kernel_.size();
    if (x.rank() != spatial + 2 || indices.shape() != x.shape())
      throw InputError(fmt::format("{}: X {} and I {} must have one shape of rank {}", label, shape_to_string(x.shape()),
                                   shape_to_string(indices.shape()), spatial + 2));
    // The unpooled shape I indexes: (in - 1) * stride + kernel - pads.
    Shape unpooled{x.shape()[0], x.shape()[1]};
    for (std::size_t d = 0; d < spatial; ++d) {
      const int64_t stride = strides_.size() > d ? strides_[d] : 1;
      const int64_t pad = (pads_.size() > d ? pads_[d] : 0) + (pads_.size() > d + spatial ? pads_[d + spatial] : 0);
      const std::string what = fmt::format("{}: output dim {}", label, d + 2);
      unpooled.push_back(checked_sub(checked_add(checked_mul(x.shape()[d + 2] - 1, stride, what), kernel_[d], what), pad, what));
    }
    // output_shape may be larger (the pool's input had dims the windows did not cover): the
    // unpooled values keep their coordinates, the rest is zero.
    Shape out_shape = unpooled;
    if (const Tensor* given = execution.input(2)) {
      out_shape = read_int64_values(*given, label, "output_shape");
      bool fits = out_shape.size() == x.rank();
      for (std::size_t d = 0; fits && d < out_shape.size(); ++d) fits = d < 2 ? out_shape[d] == x.shape()[d] : out_shape[d] >= unpooled[d];
      if (!fits)
        throw InputError(fmt::format("{}: output_shape {} does not hold the unpooled shape {}", label,
                                     shape_to_string(out_shape), shape_to_string(unpooled)));
    }
    for (int64_t d : unpooled)
      if (d < 0) throw InputError(fmt::format("{}: unpooled shape {} is negative", label, shape_to_string(unpooled)));
    Tensor& y = checked_output(execution, 0, x.element_type(), out_shape, /*zero=*/true);
    const std::vector<int64_t> where = read_int64_values(indices, label, "I");
    const int64_t unpooled_count = product(unpooled, 0, unpooled.size());
    const auto size = static_cast<int64_t>(element_size(x.element_type()));
    const auto* in = static_cast<const std::byte*>(x.raw_data());
    auto* out = static_cast<std::byte*>(y.raw_data());
    for (std::size_t e = 0; e < where.size(); ++e) {
      if (where[e] < 0 || where[e] >= unpooled_count)
        throw InputError(fmt::format("{}: index {} is outside the unpooled shape {}", label, where[e],
                                     shape_to_string(unpooled)));
      // Coordinates in the unpooled shape, re-addressed in the output's.
      int64_t rest = where[e], offset = 0, stride = 1;
      for (std::size_t d = unpooled.size(); d-- > 0;) {
        offset += (rest % unpooled[d]) * stride;
        rest /= unpooled[d];
        stride *= out_shape[d];
      }
      std::memcpy(out + offset * size, in + static_cast<int64_t>(e) * size, static_cast<std::size_t>(size));
    }
  }

 private:
  std::vector<int64_t> kernel_, pads_, strides_;
};

TuningSchema threshold_schema(const std::string& op_type, ElementType type) {
  return parallel_threshold_schema(elementwise_key(op_type, type, 1), kDefaultMinimumElements);
}

// A kernel that only moves bytes (one class for every element type) as `op_type` of `type`.
template <typename K>
void add_by_bytes(KernelTable& table, const std::string& op_type, OpsetRange opsets, ElementType type) {
  KernelDef def = make_def(op_type, opsets, type, threshold_schema(op_type, type));
  def.create = [](const KernelCreateInfo& info) -> std::unique_ptr<Kernel> { return std::make_unique<K>(info); };
  table.add(std::move(def));
}

}  // namespace

void register_indexing_kernels(KernelTable& table) {
  for (ElementType type : supported_element_types()) {
    add_by_bytes<GatherNDKernel>(table, "GatherND", {11}, type);
    add_by_bytes<CompressKernel>(table, "Compress", {9}, type);
    add_by_bytes<ReverseSequenceKernel>(table, "ReverseSequence", {10}, type);
    add_by_bytes<MaxUnpoolKernel>(table, "MaxUnpool", {9}, type);
  }
  for_each_type<float, double, int8_t, int16_t, int32_t, int64_t, uint8_t, uint16_t, uint32_t, uint64_t, bool, Float16,
                BFloat16>([&](auto v) {
    using T = decltype(v);
    constexpr ElementType type = ElementTraits<T>::type;
    KernelDef scatter_nd = make_def("ScatterND", {11}, type, threshold_schema("ScatterND", type));
    scatter_nd.create = [](const KernelCreateInfo& info) -> std::unique_ptr<Kernel> {
      return std::make_unique<ScatterNDKernel<T>>(info);
    };
    table.add(std::move(scatter_nd));
    for (const char* op : {"ScatterElements", "Scatter"}) {
      const std::string op_type = op;
      KernelDef scatter = make_def(op_type, op_type == "Scatter" ? OpsetRange{9} : OpsetRange{11}, type,
                                   threshold_schema(op_type, type));
      scatter.create = [](const KernelCreateInfo& info) -> std::unique_ptr<Kernel> {
        return std::make_unique<ScatterElementsKernel<T>>(info);
      };
      table.add(std::move(scatter));
    }
    // OneHot is chosen by its values' type (input 2), the output's.
    KernelDef one_hot = make_def("OneHot", {9}, type, threshold_schema("OneHot", type));
    one_hot.type_input = 2;
    one_hot.create = [](const KernelCreateInfo& info) -> std::unique_ptr<Kernel> {
      return std::make_unique<OneHotKernel<T>>(info);
    };
    table.add(std::move(one_hot));
    KernelDef non_zero = make_def("NonZero", {9}, type, threshold_schema("NonZero", type));
    non_zero.create = [](const KernelCreateInfo& info) -> std::unique_ptr<Kernel> {
      return std::make_unique<NonZeroKernel<T>>(info);
    };
    non_zero.output_types = [](const KernelCreateInfo&) { return std::vector<ElementType>{ElementType::int64}; };
    table.add(std::move(non_zero));
    // EyeLike's output type is its dtype attribute (else the input's).
    KernelDef eye = make_def("EyeLike", {9}, type, threshold_schema("EyeLike", type));
    auto output_type = [](const KernelCreateInfo& info) {
      const int64_t dtype = info.int_attribute("dtype", static_cast<int64_t>(ElementTraits<T>::type));
      if (!is_valid_element_type(static_cast<int32_t>(dtype)) ||
          std::find(supported_element_types().begin(), supported_element_types().end(),
                    static_cast<ElementType>(dtype)) == supported_element_types().end())
        throw UnsupportedError(fmt::format("{}: dtype {} is not supported", info.node_label(), dtype));
      return static_cast<ElementType>(dtype);
    };
    eye.create = [output_type](const KernelCreateInfo& info) -> std::unique_ptr<Kernel> {
      return std::make_unique<EyeLikeKernel>(info, output_type(info));
    };
    eye.output_types = [output_type](const KernelCreateInfo& info) { return std::vector<ElementType>{output_type(info)}; };
    table.add(std::move(eye));
  });
}

}  // namespace onnx_light::runtime::kernels
