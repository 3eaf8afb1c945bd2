// Operators that move or copy data without arithmetic: Identity, Transpose, Concat, Split,
// Slice, Gather, GatherElements, Expand, Tile, Trilu. They depend only on the element size,
// so each is one kernel per size (1, 2, 4, 8 bytes) registered for every element type. Inputs
// that shape the result (Slice starts, Split sizes, Expand shape, ...) are read at run time.
#include <algorithm>
#include <cstring>
#include <limits>
#include <span>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "checked_math.h"
#include "kernels/broadcast.h"
#include "kernels/elementwise.h"
#include "kernels/dropout.h"
#include "kernels/kernel_families.h"
#include "kernels/kernel_util.h"
#include "onnx_light/runtime/error.h"

namespace onnx_light::runtime::kernels {

namespace {

class IdentityKernel final : public ThresholdKernel {
 public:
  using ThresholdKernel::ThresholdKernel;
  void run(KernelExecution& execution) override {
    // Input 0 is required: absent, it is an optional tensor that is none, passed on as none.
    if (execution.input(0) == nullptr) {
      execution.set_none_output(0);
      return;
    }
    const Tensor& x = execution.required_input(0);
    Tensor& y = execution.output(0, x.element_type(), x.shape());
    const auto* in = static_cast<const std::byte*>(x.raw_data());
    auto* out = static_cast<std::byte*>(y.raw_data());
    const int64_t bytes = static_cast<int64_t>(x.byte_size());
    execution.parallel_for(bytes, 64, admitted(x.element_count(), execution), [&](int64_t begin, int64_t end) {
      if (end > begin) std::memcpy(out + begin, in + begin, static_cast<std::size_t>(end - begin));
    });
  }
};

// Copies `units` blocks in parallel; block(u) returns {dst, src, bytes}.
struct BlockCopy {
  std::byte* dst;
  const std::byte* src;
  std::size_t bytes;
};
template <typename Block>
void copy_blocks(KernelExecution& execution, int64_t units, int threads, Block&& block) {
  execution.parallel_for(units, 1, threads, [&](int64_t begin, int64_t end) {
    for (int64_t u = begin; u < end; ++u) {
      BlockCopy b = block(u);
      if (b.bytes > 0) std::memcpy(b.dst, b.src, b.bytes);
    }
  });
}

// The product of shape[begin, end): exact, or an InputError naming the dims.
int64_t product(const Shape& shape, std::size_t begin, std::size_t end) {
  return checked_product(std::span<const int64_t>(shape).subspan(begin, end - begin), "a product of dims");
}

// A copy of x through a strided plan (Transpose, Slice), kept across runs with its output shape.
template <typename U>
class StridedCopy {
 public:
  // Output shape, x's element strides per output dim, and the first element's offset in x.
  void set(Shape out_shape, const std::vector<int64_t>& strides, int64_t offset) {
    // Empty: nothing is copied, and huge dims beside a zero could overflow the plan's products.
    const bool empty = std::find(out_shape.begin(), out_shape.end(), 0) != out_shape.end();
    plan_ = empty ? BroadcastPlan{} : strided_plan(out_shape, strides);
    out_shape_ = std::move(out_shape);
    offset_ = offset;
    elements_ = empty ? 0 : product(out_shape_, 0, out_shape_.size());
  }
  int64_t elements() const { return elements_; }
  void run(KernelExecution& execution, const Tensor& x, int threads) const {
    Tensor& y = execution.output(0, x.element_type(), out_shape_);
    const int64_t n = y.element_count();
    if (n == 0) return;
    copy_with_plan(execution, plan_, x.data<U>() + offset_, y.data<U>(), n, threads);
  }

 private:
  Shape out_shape_;
  int64_t offset_ = 0;
  int64_t elements_ = 0;
  BroadcastPlan plan_;
};

// Transpose's default parallel.minimum_elements: 4x the elementwise default. A transpose copies
// runs of the inner dims at ~12 elements per ns on one thread, so a region's wake-up on this
// project's 2-vCPU KVM guest (several us) outweighed the split: [1,128,4,64] -> [1,4,128,64]
// (32768 elements) 2.5-3 us on one thread against 6 us on two, [1,128,12,64] (98304) 8 against
// 13, [1,512,2,64] (65536) 5 against 6 (bench/RESULTS.md). Calibration tunes it per host.
constexpr int64_t kTransposeMinimumElements = int64_t{1} << 17;

template <typename U>
class TransposeKernel final : public ThresholdKernel {
 public:
  explicit TransposeKernel(const KernelCreateInfo& info) : ThresholdKernel(kTransposeMinimumElements) {
    check_attributes(info, {"perm"});
    perm_ = info.ints_attribute("perm");
    has_perm_ = info.has_attribute("perm");
  }
  void run(KernelExecution& execution) override {
    const Tensor& x = execution.required_input(0);
    signature_.replan_if_changed(execution, 0, [&] { plan(execution, x); });
    copy_.run(execution, x, admitted(copy_.elements(), execution));
  }

 private:
  // The output shape and copy plan for x's shape (kept until it changes).
  void plan(const KernelExecution& execution, const Tensor& x) {
    const std::size_t rank = x.rank();
    std::vector<int64_t> perm = perm_;
    if (!has_perm_) {
      perm.resize(rank);
      for (std::size_t d = 0; d < rank; ++d) perm[d] = static_cast<int64_t>(rank - 1 - d);
    }
    if (perm.size() != rank)
      throw InputError(fmt::format("{}: perm {} does not match input rank {}", execution.label(), perm, rank));
    std::vector<bool> used(rank, false);
    const std::vector<int64_t> in_strides = row_major_strides(x.shape());
    Shape out_shape(rank);
    std::vector<int64_t> strides(rank);
    for (std::size_t d = 0; d < rank; ++d) {
      const auto p = static_cast<std::size_t>(normalize_axis(perm[d], static_cast<int64_t>(rank), execution.label(), "perm"));
      if (used[p]) throw InputError(fmt::format("{}: perm {} repeats axis {}", execution.label(), perm, p));
      used[p] = true;
      out_shape[d] = x.shape()[p];
      strides[d] = in_strides[p];
    }
    copy_.set(std::move(out_shape), strides, 0);
  }

  std::vector<int64_t> perm_;
  bool has_perm_ = false;
  InputSignature signature_;
  StridedCopy<U> copy_;
};

class ConcatKernel final : public ThresholdKernel {
 public:
  explicit ConcatKernel(const KernelCreateInfo& info) : ThresholdKernel(kDefaultMinimumElements) {
    check_attributes(info, {"axis"});
    if (!info.has_attribute("axis") && info.opset >= 4)
      throw ModelError(fmt::format("{}: attribute 'axis' is required", info.node_label()));
    axis_ = info.int_attribute("axis", 1);
  }
  void run(KernelExecution& execution) override {
    const std::size_t count = execution.input_count();
    const Tensor& first = execution.required_input(0);
    const int64_t rank = static_cast<int64_t>(first.rank());
    const auto axis = static_cast<std::size_t>(normalize_axis(axis_, rank, execution.label()));
    // Members, so that their capacity carries over and a repeated run allocates nothing.
    Shape& out_shape = out_shape_;
    out_shape = first.shape();
    out_shape[axis] = 0;
    std::vector<const Tensor*>& inputs = inputs_;
    inputs.clear();
    for (std::size_t k = 0; k < count; ++k) {
      const Tensor& t = execution.required_input(k);
      check_input_type(execution, k, t, first.element_type());
      bool fits = t.rank() == first.rank();
      for (std::size_t d = 0; fits && d < t.rank(); ++d) fits = d == axis || t.shape()[d] == first.shape()[d];
      if (!fits)
        throw InputError(fmt::format("{}: input {} has shape {}, which does not concatenate with {} on axis {}",
                                     execution.label(), k, shape_to_string(t.shape()), shape_to_string(first.shape()), axis));
      out_shape[axis] = checked_add(out_shape[axis], t.shape()[axis], "the concatenated dimension");
      inputs.push_back(&t);
    }
    Tensor& y = checked_output(execution, 0, first.element_type(), out_shape);
    // Empty: nothing to copy, and huge dims beside a zero would make the row products overflow.
    if (y.element_count() == 0) return;
    const std::size_t size = element_size(first.element_type());
    const int64_t outer = product(out_shape, 0, axis);
    const int64_t inner = product(out_shape, axis + 1, out_shape.size()) * static_cast<int64_t>(size);
    std::vector<int64_t>& begin_of = begin_of_;  // bytes from the start of an output row
    begin_of.resize(count);
    int64_t row = 0;
    for (std::size_t k = 0; k < count; ++k) {
      begin_of[k] = row;
      row += inputs[k]->shape()[axis] * inner;
    }
    auto* out = static_cast<std::byte*>(y.raw_data());
    const auto k_count = static_cast<int64_t>(count);
    copy_blocks(execution, outer * k_count, admitted(y.element_count(), execution), [&](int64_t u) {
      const int64_t o = u / k_count;
      const auto k = static_cast<std::size_t>(u % k_count);
      const int64_t bytes = inputs[k]->shape()[axis] * inner;
      return BlockCopy{out + o * row + begin_of[k], static_cast<const std::byte*>(inputs[k]->raw_data()) + o * bytes,
                       static_cast<std::size_t>(bytes)};
    });
  }

 private:
  int64_t axis_ = 0;
  Shape out_shape_;
  std::vector<const Tensor*> inputs_;
  std::vector<int64_t> begin_of_;
};

// Split sizes: input 1 (opset 13+), the `split` attribute (before 13), num_outputs (18+), or
// equal parts for every output.
class SplitKernel final : public ThresholdKernel {
 public:
  explicit SplitKernel(const KernelCreateInfo& info) : ThresholdKernel(kDefaultMinimumElements) {
    if (info.opset >= 18) check_attributes(info, {"axis", "num_outputs"});
    else if (info.opset >= 13) check_attributes(info, {"axis"});
    else check_attributes(info, {"axis", "split"});
    axis_ = info.int_attribute("axis", 0);
    split_ = info.ints_attribute("split");
    sizes_from_input_ = info.opset >= 13;
    num_outputs_ = info.int_attribute("num_outputs", 0);
    if (num_outputs_ != 0 && num_outputs_ != info.node.output_size())
      throw ModelError(fmt::format("{}: num_outputs = {} but the node has {} outputs", info.node_label(), num_outputs_,
                                   info.node.output_size()));
  }
  void run(KernelExecution& execution) override {
    const Tensor& x = execution.required_input(0);
    const int64_t rank = static_cast<int64_t>(x.rank());
    const auto axis = static_cast<std::size_t>(normalize_axis(axis_, rank, execution.label()));
    const int64_t dim = x.shape()[axis];
    const auto outputs = static_cast<int64_t>(execution.output_count());
    std::vector<int64_t> sizes = split_;
    if (sizes_from_input_)
      if (const Tensor* s = execution.input(1)) sizes = read_int64_values(*s, execution.label(), "split");
    if (sizes.empty()) {
      // Equal parts; with num_outputs (opset 18) the last part may be smaller.
      const int64_t part = num_outputs_ != 0 ? (dim + outputs - 1) / outputs : dim / outputs;
      if (num_outputs_ == 0 && dim % outputs != 0)
        throw InputError(fmt::format("{}: axis {} of size {} cannot be split into {} equal parts", execution.label(),
                                     axis, dim, outputs));
      for (int64_t k = 0; k < outputs; ++k) sizes.push_back(std::max<int64_t>(0, std::min(part, dim - k * part)));
    }
    bool divides = static_cast<int64_t>(sizes.size()) == outputs &&
                   std::none_of(sizes.begin(), sizes.end(), [](int64_t s) { return s < 0; });
    int64_t total = 0;
    for (std::size_t k = 0; divides && k < sizes.size(); ++k) divides = !__builtin_add_overflow(total, sizes[k], &total);
    if (!divides || total != dim)
      throw InputError(fmt::format("{}: split sizes {} do not divide axis {} of size {} into {} outputs",
                                   execution.label(), sizes, axis, dim, outputs));
    std::vector<std::byte*> out(sizes.size());
    for (std::size_t k = 0; k < sizes.size(); ++k) {
      Shape shape = x.shape();
      shape[axis] = sizes[k];
      out[k] = static_cast<std::byte*>(execution.output(k, x.element_type(), shape).raw_data());
    }
    // Empty: nothing to copy, and huge dims beside a zero would make the row products overflow.
    if (x.element_count() == 0) return;
    const std::size_t size = element_size(x.element_type());
    const int64_t outer = product(x.shape(), 0, axis);
    const int64_t inner = product(x.shape(), axis + 1, x.rank()) * static_cast<int64_t>(size);
    std::vector<int64_t> begin_of(sizes.size());
    int64_t row = 0;
    for (std::size_t k = 0; k < sizes.size(); ++k) {
      begin_of[k] = row;
      row += sizes[k] * inner;
    }
    const auto* in = static_cast<const std::byte*>(x.raw_data());
    copy_blocks(execution, outer * outputs, admitted(x.element_count(), execution), [&](int64_t u) {
      const int64_t o = u / outputs;
      const auto k = static_cast<std::size_t>(u % outputs);
      const int64_t bytes = sizes[k] * inner;
      return BlockCopy{out[k] + o * bytes, in + o * row + begin_of[k], static_cast<std::size_t>(bytes)};
    });
  }

 private:
  int64_t axis_ = 0;
  std::vector<int64_t> split_;
  bool sizes_from_input_ = false;
  int64_t num_outputs_ = 0;
};

// Slice: starts/ends/axes attributes before opset 10, inputs 1-4 (starts, ends, axes, steps) after.
template <typename U>
class SliceKernel final : public ThresholdKernel {
 public:
  explicit SliceKernel(const KernelCreateInfo& info) : ThresholdKernel(kDefaultMinimumElements) {
    from_inputs_ = info.opset >= 10;
    if (from_inputs_) {
      check_attributes(info, {});
    } else {
      check_attributes(info, {"starts", "ends", "axes"});
      starts_ = info.ints_attribute("starts");
      ends_ = info.ints_attribute("ends");
      axes_ = info.ints_attribute("axes");
    }
  }
  void run(KernelExecution& execution) override {
    const Tensor& x = execution.required_input(0);
    signature_.replan_if_changed(execution, 0b11110u, [&] { plan(execution, x); });  // starts, ends, axes, steps
    copy_.run(execution, x, admitted(copy_.elements(), execution));
  }

 private:
  // The output shape, first element and copy plan (kept until x's shape or the slice changes).
  void plan(const KernelExecution& execution, const Tensor& x) {
    const std::string& label = execution.label();
    std::vector<int64_t> starts = starts_, ends = ends_, axes = axes_, steps;
    if (from_inputs_) {
      starts = read_int64_values(execution.required_input(1), label, "starts");
      ends = read_int64_values(execution.required_input(2), label, "ends");
      if (const Tensor* a = execution.input(3)) axes = read_int64_values(*a, label, "axes");
      if (const Tensor* s = execution.input(4)) steps = read_int64_values(*s, label, "steps");
    }
    if (axes.empty())
      for (std::size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<int64_t>(i));
    if (steps.empty()) steps.assign(starts.size(), 1);
    if (ends.size() != starts.size() || axes.size() != starts.size() || steps.size() != starts.size())
      throw InputError(fmt::format("{}: starts {}, ends {}, axes {} and steps {} must have the same length", label,
                                   starts, ends, axes, steps));
    const std::size_t rank = x.rank();
    const std::vector<int64_t> in_strides = row_major_strides(x.shape());
    Shape out_shape = x.shape();
    std::vector<int64_t> strides = in_strides;
    std::vector<bool> seen(rank, false);
    int64_t offset = 0;
    for (std::size_t i = 0; i < starts.size(); ++i) {
      const auto a = static_cast<std::size_t>(normalize_axis(axes[i], static_cast<int64_t>(rank), label, "axes"));
      if (seen[a]) throw InputError(fmt::format("{}: axis {} is sliced twice", label, a));
      seen[a] = true;
      const int64_t dim = x.shape()[a];
      const int64_t step = steps[i];
      if (step == 0) throw InputError(fmt::format("{}: step 0 on axis {}", label, a));
      int64_t start = starts[i], end = ends[i];
      if (start < 0) start = start < -dim ? 0 : start + dim;
      if (end < 0) end = end < -dim ? -1 : end + dim;
      int64_t count = 0;
      if (dim == 0) {
        count = 0;
      } else if (step > 0) {
        start = std::clamp<int64_t>(start, 0, dim);
        end = std::clamp<int64_t>(end, 0, dim);
        count = end > start ? (end - start - 1) / step + 1 : 0;
      } else {
        // Negative steps walk from start (at most dim-1) down to just above end (at least -1).
        start = std::clamp<int64_t>(start, 0, dim - 1);
        end = std::clamp<int64_t>(end, -1, dim - 1);
        const int64_t stride = step == std::numeric_limits<int64_t>::min() ? std::numeric_limits<int64_t>::max() : -step;
        count = start > end ? (start - end - 1) / stride + 1 : 0;
      }
      out_shape[a] = count;
      if (count > 0) offset += start * in_strides[a];
      strides[a] = count > 1 ? in_strides[a] * step : 0;  // |step| < dim here, so no overflow
    }
    copy_.set(std::move(out_shape), strides, offset);
  }

  bool from_inputs_ = true;
  std::vector<int64_t> starts_, ends_, axes_;
  InputSignature signature_;
  StridedCopy<U> copy_;
};

// Reads int32/int64 indices, wraps negatives and checks the range once, before any copying.
std::vector<int64_t> checked_indices(const Tensor& indices, int64_t dim, const std::string& label) {
  std::vector<int64_t> values = read_int64_values(indices, label, "indices");
  for (int64_t& v : values) {
    if (v < -dim || v >= dim)
      throw InputError(fmt::format("{}: index {} is out of range for an axis of size {}", label, v, dim));
    if (v < 0) v += dim;
  }
  return values;
}

class GatherKernel final : public ThresholdKernel {
 public:
  explicit GatherKernel(const KernelCreateInfo& info) : ThresholdKernel(kDefaultMinimumElements) {
    check_attributes(info, {"axis"});
    axis_ = info.int_attribute("axis", 0);
  }
  void run(KernelExecution& execution) override {
    const Tensor& x = execution.required_input(0);
    const Tensor& indices = execution.required_input(1);
    const auto axis = static_cast<std::size_t>(normalize_axis(axis_, static_cast<int64_t>(x.rank()), execution.label()));
    // The checked indices and the output shape, kept until x's shape or the indices change.
    signature_.replan_if_changed(execution, 1u << 1, [&] {
      index_ = checked_indices(indices, x.shape()[axis], execution.label());
      out_shape_.assign(x.shape().begin(), x.shape().begin() + static_cast<std::ptrdiff_t>(axis));
      out_shape_.insert(out_shape_.end(), indices.shape().begin(), indices.shape().end());
      out_shape_.insert(out_shape_.end(), x.shape().begin() + static_cast<std::ptrdiff_t>(axis) + 1, x.shape().end());
    });
    const std::vector<int64_t>& index = index_;
    Tensor& y = checked_output(execution, 0, x.element_type(), out_shape_);
    if (y.element_count() == 0) return;  // and x's products below may then overflow beside a zero
    const auto size = static_cast<int64_t>(element_size(x.element_type()));
    const int64_t outer = product(x.shape(), 0, axis);
    const int64_t inner = product(x.shape(), axis + 1, x.rank()) * size;
    const int64_t dim = x.shape()[axis];
    const auto count = static_cast<int64_t>(index.size());
    const auto* in = static_cast<const std::byte*>(x.raw_data());
    auto* out = static_cast<std::byte*>(y.raw_data());
    copy_blocks(execution, outer * count, admitted(y.element_count(), execution), [&](int64_t u) {
      const int64_t o = u / count;
      const int64_t i = u % count;
      return BlockCopy{out + u * inner, in + (o * dim + index[static_cast<std::size_t>(i)]) * inner,
                       static_cast<std::size_t>(inner)};
    });
  }

 private:
  int64_t axis_ = 0;
  InputSignature signature_;
  std::vector<int64_t> index_;
  Shape out_shape_;
};

template <typename U>
class GatherElementsKernel final : public ThresholdKernel {
 public:
  explicit GatherElementsKernel(const KernelCreateInfo& info) : ThresholdKernel(kDefaultMinimumElements) {
    check_attributes(info, {"axis"});
    axis_ = info.int_attribute("axis", 0);
  }
  void run(KernelExecution& execution) override {
    const Tensor& x = execution.required_input(0);
    const Tensor& indices = execution.required_input(1);
    const std::string& label = execution.label();
    if (indices.rank() != x.rank())
      throw InputError(fmt::format("{}: indices {} must have the rank of data {}", label,
                                   shape_to_string(indices.shape()), shape_to_string(x.shape())));
    const auto axis = static_cast<std::size_t>(normalize_axis(axis_, static_cast<int64_t>(x.rank()), label));
    for (std::size_t d = 0; d < x.rank(); ++d)
      if (d != axis && indices.shape()[d] > x.shape()[d])
        throw InputError(fmt::format("{}: indices {} exceed data {} on axis {}", label, shape_to_string(indices.shape()),
                                     shape_to_string(x.shape()), d));
    const std::vector<int64_t> index = checked_indices(indices, x.shape()[axis], label);
    Tensor& y = execution.output(0, x.element_type(), indices.shape());
    const std::vector<int64_t> strides = row_major_strides(x.shape());
    const U* in = x.data<U>();
    U* out = y.data<U>();
    const Shape& shape = indices.shape();
    execution.parallel_for(y.element_count(), cache_line_grain<U>(), admitted(y.element_count(), execution),
                           [&](int64_t begin, int64_t end) {
      for (int64_t o = begin; o < end; ++o) {
        int64_t rest = o, offset = 0;
        for (std::size_t d = shape.size(); d-- > 0;) {
          const int64_t i = rest % shape[d];
          rest /= shape[d];
          offset += (d == axis ? index[static_cast<std::size_t>(o)] : i) * strides[d];
        }
        out[o] = in[offset];
      }
    });
  }

 private:
  int64_t axis_ = 0;
};

template <typename U>
class ExpandKernel final : public ThresholdKernel {
 public:
  explicit ExpandKernel(const KernelCreateInfo& info) : ThresholdKernel(kDefaultMinimumElements) {
    check_attributes(info, {});
  }
  void run(KernelExecution& execution) override {
    const Tensor& x = execution.required_input(0);
    const Shape target = read_int64_values(execution.required_input(1), execution.label(), "shape");
    const Shape out_shape = broadcast_shapes(x.shape(), target, execution.label());
    Tensor& y = checked_output(execution, 0, x.element_type(), out_shape);
    const int64_t n = y.element_count();
    if (n == 0) return;
    copy_with_plan(execution, strided_plan(out_shape, broadcast_strides(x.shape(), out_shape)), x.data<U>(),
                   y.data<U>(), n, admitted(n, execution));
  }
};

// Tile: output dims r*d walked as [r, d] pairs with input strides [0, stride].
template <typename U>
class TileKernel final : public ThresholdKernel {
 public:
  explicit TileKernel(const KernelCreateInfo& info) : ThresholdKernel(kDefaultMinimumElements) {
    check_attributes(info, {});
  }
  void run(KernelExecution& execution) override {
    const Tensor& x = execution.required_input(0);
    const std::vector<int64_t> repeats = read_int64_values(execution.required_input(1), execution.label(), "repeats");
    if (repeats.size() != x.rank() || std::any_of(repeats.begin(), repeats.end(), [](int64_t r) { return r < 0; }))
      throw InputError(fmt::format("{}: repeats {} must be {} non-negative values", execution.label(), repeats, x.rank()));
    const std::vector<int64_t> in_strides = row_major_strides(x.shape());
    Shape out_shape, walk_shape;
    std::vector<int64_t> walk_strides;
    for (std::size_t d = 0; d < x.rank(); ++d) {
      out_shape.push_back(checked_mul(x.shape()[d], repeats[d], "an output dimension (input dimension * repeats)"));
      walk_shape.insert(walk_shape.end(), {repeats[d], x.shape()[d]});
      walk_strides.insert(walk_strides.end(), {0, in_strides[d]});
    }
    Tensor& y = checked_output(execution, 0, x.element_type(), out_shape);
    const int64_t n = y.element_count();
    if (n == 0) return;
    copy_with_plan(execution, strided_plan(walk_shape, walk_strides), x.data<U>(), y.data<U>(), n,
                   admitted(n, execution));
  }
};

// Trilu: keeps the upper (j - i >= k) or lower (j - i <= k) triangle of the last two dims.
template <typename U>
class TriluKernel final : public ThresholdKernel {
 public:
  explicit TriluKernel(const KernelCreateInfo& info) : ThresholdKernel(kDefaultMinimumElements) {
    check_attributes(info, {"upper"});
    upper_ = info.int_attribute("upper", 1) != 0;
  }
  void run(KernelExecution& execution) override {
    const Tensor& x = execution.required_input(0);
    if (x.rank() < 2) throw InputError(fmt::format("{}: input must have rank 2 or more", execution.label()));
    int64_t k = 0;
    if (const Tensor* kt = execution.input(1)) {
      const std::vector<int64_t> values = read_int64_values(*kt, execution.label(), "k");
      if (values.size() != 1) throw InputError(fmt::format("{}: k must be a scalar", execution.label()));
      k = values[0];
    }
    Tensor& y = execution.output(0, x.element_type(), x.shape());
    const int64_t rows = x.shape()[x.rank() - 2];
    const int64_t cols = x.shape()[x.rank() - 1];
    const U* in = x.data<U>();
    U* out = y.data<U>();
    const int64_t lines = cols == 0 ? 0 : x.element_count() / cols;
    execution.parallel_for(lines, 1, admitted(x.element_count(), execution), [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) {
        const int64_t i = r % rows;
        for (int64_t j = 0; j < cols; ++j) {
          const bool keep = upper_ ? j - i >= k : j - i <= k;
          out[r * cols + j] = keep ? in[r * cols + j] : U(0);
        }
      }
    });
  }

 private:
  bool upper_ = true;
};

// DepthToSpace (DCR or CRD) and SpaceToDepth: a 6-D transpose of a reshaped view.
template <typename U>
class SpaceDepthKernel : public ThresholdKernel {
 public:
  SpaceDepthKernel(const KernelCreateInfo& info, bool to_space) : ThresholdKernel(kDefaultMinimumElements), to_space_(to_space) {
    if (to_space) check_attributes(info, {"blocksize", "mode"});
    else check_attributes(info, {"blocksize"});
    block_ = info.int_attribute("blocksize", 0);
    if (block_ < 1) throw ModelError(fmt::format("{}: attribute 'blocksize' must be positive", info.node_label()));
    const std::string mode = info.string_attribute("mode", "DCR");
    if (mode != "DCR" && mode != "CRD")
      throw ModelError(fmt::format("{}: attribute 'mode' = \"{}\" is not DCR or CRD", info.node_label(), mode));
    crd_ = mode == "CRD";
  }
  void run(KernelExecution& execution) override {
    const Tensor& x = execution.required_input(0);
    const std::string& label = execution.label();
    if (x.rank() != 4) throw InputError(fmt::format("{}: input {} must have rank 4", label, shape_to_string(x.shape())));
    const int64_t n = x.shape()[0], c = x.shape()[1], h = x.shape()[2], w = x.shape()[3], b = block_;
    const int64_t block_area = checked_mul(b, b, "blocksize * blocksize");
    Shape view, perm_order, out_shape;
    if (to_space_) {
      if (c % block_area != 0) throw InputError(fmt::format("{}: channels {} are not a multiple of {}", label, c, block_area));
      view = crd_ ? Shape{n, c / block_area, b, b, h, w} : Shape{n, b, b, c / block_area, h, w};
      perm_order = crd_ ? Shape{0, 1, 4, 2, 5, 3} : Shape{0, 3, 4, 1, 5, 2};
      out_shape = {n, c / block_area, checked_mul(h, b, "height * blocksize"), checked_mul(w, b, "width * blocksize")};
    } else {
      if (h % b != 0 || w % b != 0)
        throw InputError(fmt::format("{}: spatial dims {}x{} are not multiples of {}", label, h, w, b));
      view = {n, c, h / b, b, w / b, b};
      perm_order = {0, 3, 5, 1, 2, 4};
      out_shape = {n, checked_mul(c, block_area, "channels * blocksize * blocksize"), h / b, w / b};
    }
    const std::vector<int64_t> view_strides = row_major_strides(view);
    Shape walk(6);
    std::vector<int64_t> strides(6);
    for (std::size_t d = 0; d < 6; ++d) {
      walk[d] = view[static_cast<std::size_t>(perm_order[d])];
      strides[d] = view_strides[static_cast<std::size_t>(perm_order[d])];
    }
    Tensor& y = checked_output(execution, 0, x.element_type(), out_shape);
    const int64_t count = y.element_count();
    if (count == 0) return;
    copy_with_plan(execution, strided_plan(walk, strides), x.data<U>(), y.data<U>(), count, admitted(count, execution));
  }

 private:
  bool to_space_;
  bool crd_ = false;
  int64_t block_ = 0;
};
template <typename U>
struct DepthToSpaceKernel : SpaceDepthKernel<U> {
  explicit DepthToSpaceKernel(const KernelCreateInfo& info) : SpaceDepthKernel<U>(info, true) {}
};
template <typename U>
struct SpaceToDepthKernel : SpaceDepthKernel<U> {
  explicit SpaceToDepthKernel(const KernelCreateInfo& info) : SpaceDepthKernel<U>(info, false) {}
};

// Pad: constant, edge or reflect. Pads (and, from opset 11, the constant and axes) are read
// from the inputs at run time; negative pads crop.
template <typename U>
class PadKernel final : public ThresholdKernel {
 public:
  explicit PadKernel(const KernelCreateInfo& info) : ThresholdKernel(kDefaultMinimumElements) {
    from_inputs_ = info.opset >= 11;
    if (from_inputs_) check_attributes(info, {"mode"});
    else check_attributes(info, {"mode", "pads", "value"});
    const std::string mode = info.string_attribute("mode", "constant");
    if (mode != "constant" && mode != "edge" && mode != "reflect")
      throw UnsupportedError(fmt::format("{}: attribute 'mode' = \"{}\" is not supported (constant, edge, reflect)",
                                         info.node_label(), mode));
    mode_ = mode == "constant" ? 0 : (mode == "edge" ? 1 : 2);
    pads_ = info.ints_attribute("pads");
    value_ = info.float_attribute("value", 0.0f);
  }
  void run(KernelExecution& execution) override {
    const Tensor& x = execution.required_input(0);
    const std::string& label = execution.label();
    const auto rank = static_cast<int64_t>(x.rank());
    std::vector<int64_t> pads = pads_;
    U fill{};
    if (from_inputs_) {
      const std::vector<int64_t> given = read_int64_values(execution.required_input(1), label, "pads");
      std::vector<int64_t> axes;
      if (const Tensor* a = execution.input(3)) axes = read_int64_values(*a, label, "axes");
      if (axes.empty())
        for (int64_t d = 0; d < rank; ++d) axes.push_back(d);
      if (given.size() != 2 * axes.size())
        throw InputError(fmt::format("{}: pads {} must hold 2 values per padded axis ({})", label, given, axes.size()));
      pads.assign(static_cast<std::size_t>(2 * rank), 0);
      for (std::size_t i = 0; i < axes.size(); ++i) {
        const auto d = static_cast<std::size_t>(normalize_axis(axes[i], rank, label, "axes"));
        pads[d] = given[i];
        pads[d + static_cast<std::size_t>(rank)] = given[i + axes.size()];
      }
      if (const Tensor* v = execution.input(2)) {
        check_input_type(execution, 2, *v, x.element_type());
        if (v->element_count() != 1) throw InputError(fmt::format("{}: constant_value must be one value", label));
        std::memcpy(&fill, v->raw_data(), sizeof(U));
      }
    } else {
      const double v = value_;
      const float f = value_;
      if constexpr (sizeof(U) == sizeof(float))
        if (x.element_type() == ElementType::float32) std::memcpy(&fill, &f, sizeof f);
      if constexpr (sizeof(U) == sizeof(double))
        if (x.element_type() == ElementType::float64) std::memcpy(&fill, &v, sizeof v);
      if (value_ != 0.0f && x.element_type() != ElementType::float32 && x.element_type() != ElementType::float64) {
        throw UnsupportedError(fmt::format("{}: attribute 'value' is only supported for float and double", label));
      }
    }
    if (pads.size() != static_cast<std::size_t>(2 * rank))
      throw InputError(fmt::format("{}: pads {} must hold {} values", label, pads, 2 * rank));
    Shape out_shape(x.shape());
    for (std::size_t d = 0; d < x.rank(); ++d) {
      // Input coordinates o - pads[d] run from -pads[d] to dim + pads[d + rank]: both ends must be int64 too.
      checked_sub(0, pads[d], "a padded coordinate (0 - pad)");
      checked_add(x.shape()[d], pads[d + x.rank()], "a padded coordinate (dimension + pad)");
      out_shape[d] = checked_add(checked_add(out_shape[d], pads[d], "a padded dimension"), pads[d + x.rank()],
                                 "a padded dimension");
      if (out_shape[d] < 0) throw InputError(fmt::format("{}: pads {} crop more than the input {}", label, pads, shape_to_string(x.shape())));
      if (mode_ != 0 && x.shape()[d] == 0 && out_shape[d] > 0)
        throw InputError(fmt::format("{}: cannot {}-pad an empty axis {}", label, mode_ == 1 ? "edge" : "reflect", d));
    }
    Tensor& y = checked_output(execution, 0, x.element_type(), out_shape);
    const int64_t count = y.element_count();
    if (count == 0) return;
    const std::vector<int64_t> strides = row_major_strides(x.shape());
    const U* in = x.data<U>();
    U* out = y.data<U>();
    const std::size_t r = x.rank();
    // Output coordinate -> input coordinate, or -1 when it falls into constant padding.
    auto source = [&](std::size_t d, int64_t o) -> int64_t {
      const int64_t size = x.shape()[d];
      int64_t c = o - pads[d];
      if (c >= 0 && c < size) return c;
      if (mode_ == 0) return -1;
      if (mode_ == 1 || size == 1) return c < 0 ? 0 : size - 1;
      const int64_t period = 2 * (size - 1);  // reflect without repeating the edge
      c = ((c % period) + period) % period;
      return c < size ? c : period - c;
    };
    const int64_t inner = r == 0 ? 1 : out_shape[r - 1];
    const int64_t rows = count / inner;
    execution.parallel_for(rows, 1, admitted(count, execution), [&](int64_t begin, int64_t end) {
      for (int64_t row = begin; row < end; ++row) {
        int64_t rest = row, base = 0;
        bool constant_row = false;
        for (std::size_t d = r == 0 ? 0 : r - 1; d-- > 0;) {
          const int64_t c = source(d, rest % out_shape[d]);
          rest /= out_shape[d];
          if (c < 0) constant_row = true;
          else base += c * strides[d];
        }
        U* o = out + row * inner;
        for (int64_t j = 0; j < inner; ++j) {
          const int64_t c = r == 0 ? 0 : source(r - 1, j);
          o[j] = constant_row || c < 0 ? fill : in[base + c];
        }
      }
    });
  }

 private:
  bool from_inputs_ = true;
  int mode_ = 0;
  std::vector<int64_t> pads_;
  float value_ = 0.0f;
};

using WorkloadMaker = CalibrationWorkloadFunction (*)(ElementType);

// One definition per element type; Kernel<U> is chosen by the element size.
template <template <typename> class K>
void add_sized(KernelTable& table, const std::string& op_type, OpsetRange opsets, WorkloadMaker workload,
               int64_t minimum_elements = kDefaultMinimumElements) {
  for (ElementType type : supported_element_types()) {
    KernelDef def = make_def(op_type, opsets, type,
                             parallel_threshold_schema(elementwise_key(op_type, type, 1), minimum_elements));
    def.create = [type](const KernelCreateInfo& info) -> std::unique_ptr<Kernel> {
      std::unique_ptr<Kernel> kernel;
      dispatch_element_size(element_size(type), [&](auto u) { kernel = std::make_unique<K<decltype(u)>>(info); });
      return kernel;
    };
    def.calibration_workload = workload(type);
    table.add(std::move(def));
  }
}

template <typename K>
void add_bytewise(KernelTable& table, const std::string& op_type, OpsetRange opsets, WorkloadMaker workload) {
  for (ElementType type : supported_element_types()) {
    KernelDef def = make_def(op_type, opsets, type,
                             parallel_threshold_schema(elementwise_key(op_type, type, 1), kDefaultMinimumElements));
    def.create = [](const KernelCreateInfo& info) -> std::unique_ptr<Kernel> { return std::make_unique<K>(info); };
    def.calibration_workload = workload(type);
    table.add(std::move(def));
  }
}

// Calibration models: about `n` output elements each.
CalibrationWorkloadFunction transpose_workload(ElementType type) {
  return [type](int64_t n, int, uint32_t seed) {
    const Shape shape = rows_of_64(n);
    return one_node_workload("Transpose", 13, "perm = [1, 0]", {{"x", random_tensor(type, shape, seed)}},
                             {{"y", type, {shape[1], shape[0]}}}, shape[0] * shape[1]);
  };
}
CalibrationWorkloadFunction slice_workload(ElementType type) {
  return [type](int64_t n, int, uint32_t seed) {
    return one_node_workload("Slice", 13, "",
                             {{"x", random_tensor(type, {n + 2}, seed)}, {"starts", int64_tensor({1})},
                              {"ends", int64_tensor({n + 1})}},
                             {{"y", type, {n}}}, n);
  };
}
CalibrationWorkloadFunction gather_elements_workload(ElementType type) {
  return [type](int64_t n, int, uint32_t seed) {
    const Shape shape = rows_of_64(n);
    Tensor indices(ElementType::int64, shape);
    for (int64_t i = 0; i < indices.element_count(); ++i) indices.data<int64_t>()[i] = (i * 7) % 64;
    return one_node_workload("GatherElements", 13, "axis = 1",
                             {{"x", random_tensor(type, shape, seed)}, {"indices", std::move(indices)}},
                             {{"y", type, shape}}, shape[0] * shape[1]);
  };
}
CalibrationWorkloadFunction expand_workload(ElementType type) {
  return [type](int64_t n, int, uint32_t seed) {
    const Shape shape = rows_of_64(n);
    return one_node_workload("Expand", 13, "", {{"x", random_tensor(type, {1, 64}, seed)}, {"shape", int64_tensor(shape)}},
                             {{"y", type, shape}}, shape[0] * shape[1]);
  };
}
CalibrationWorkloadFunction tile_workload(ElementType type) {
  return [type](int64_t n, int, uint32_t seed) {
    const int64_t rows = std::max<int64_t>(1, n / 128);
    return one_node_workload("Tile", 13, "", {{"x", random_tensor(type, {rows, 64}, seed)}, {"repeats", int64_tensor({1, 2})}},
                             {{"y", type, {rows, 128}}}, rows * 128);
  };
}
CalibrationWorkloadFunction trilu_workload(ElementType type) {
  return [type](int64_t n, int, uint32_t seed) {
    const Shape shape = rows_of_64(n);
    return one_node_workload("Trilu", 14, "", {{"x", random_tensor(type, shape, seed)}}, {{"y", type, shape}},
                             shape[0] * shape[1]);
  };
}
CalibrationWorkloadFunction concat_workload(ElementType type) {
  return [type](int64_t n, int, uint32_t seed) {
    const int64_t half = std::max<int64_t>(1, n / 2);
    return one_node_workload("Concat", 13, "axis = 0",
                             {{"a", random_tensor(type, {half}, seed)}, {"b", random_tensor(type, {half}, seed + 1)}},
                             {{"y", type, {2 * half}}}, 2 * half);
  };
}
CalibrationWorkloadFunction split_workload(ElementType type) {
  return [type](int64_t n, int, uint32_t seed) {
    const int64_t half = std::max<int64_t>(1, n / 2);
    return one_node_workload("Split", 13, "axis = 0", {{"x", random_tensor(type, {2 * half}, seed)}},
                             {{"a", type, {half}}, {"b", type, {half}}}, 2 * half);
  };
}
CalibrationWorkloadFunction depth_to_space_workload(ElementType type) {
  return [type](int64_t n, int, uint32_t seed) {
    const int64_t c = std::max<int64_t>(1, n / 256) * 4;
    return one_node_workload("DepthToSpace", 13, "blocksize = 2", {{"x", random_tensor(type, {1, c, 8, 8}, seed)}},
                             {{"y", type, {1, c / 4, 16, 16}}}, c * 64);
  };
}
CalibrationWorkloadFunction space_to_depth_workload(ElementType type) {
  return [type](int64_t n, int, uint32_t seed) {
    const int64_t c = std::max<int64_t>(1, n / 256);
    return one_node_workload("SpaceToDepth", 13, "blocksize = 2", {{"x", random_tensor(type, {1, c, 16, 16}, seed)}},
                             {{"y", type, {1, 4 * c, 8, 8}}}, c * 256);
  };
}
CalibrationWorkloadFunction pad_workload(ElementType type) {
  return [type](int64_t n, int, uint32_t seed) {
    const Shape shape = rows_of_64(n);
    return one_node_workload("Pad", 13, "mode = \"reflect\"",
                             {{"x", random_tensor(type, shape, seed)}, {"pads", int64_tensor({1, 2, 1, 2})}},
                             {{"y", type, {shape[0] + 2, 68}}}, (shape[0] + 2) * 68);
  };
}
CalibrationWorkloadFunction dropout_workload(ElementType type) {
  return [type](int64_t n, int, uint32_t seed) {
    return one_node_workload("Dropout", 13, "", {{"x", random_tensor(type, {n}, seed)}}, {{"y", type, {n}}}, n);
  };
}
CalibrationWorkloadFunction gather_workload(ElementType type) {
  return [type](int64_t n, int, uint32_t seed) {
    const Shape shape = rows_of_64(n);
    Tensor indices(ElementType::int64, {shape[0]});
    for (int64_t i = 0; i < shape[0]; ++i) indices.data<int64_t>()[i] = (i * 7919) % shape[0];
    return one_node_workload("Gather", 13, "axis = 0", {{"x", random_tensor(type, shape, seed)}, {"indices", std::move(indices)}},
                             {{"y", type, shape}}, shape[0] * shape[1]);
  };
}

}  // namespace

void register_data_movement_kernels(KernelTable& table) {
  for (ElementType type : supported_element_types()) {
    KernelDef def;
    def.op_type = "Identity";
    def.since_version = 1;
    def.element_type = type;
    def.schema = parallel_threshold_schema(elementwise_key("Identity", type, 1), kDefaultMinimumElements);
    def.create = [](const KernelCreateInfo& info) -> std::unique_ptr<Kernel> {
      if (info.input_kind(0) == ValueKind::sequence) return make_sequence_identity_kernel(info);
      check_attributes(info, {});
      return std::make_unique<IdentityKernel>(kDefaultMinimumElements);
    };
    def.calibration_workload = unary_workload("Identity", type, 17);
    table.add(std::move(def));
  }
  add_sized<TransposeKernel>(table, "Transpose", {1}, transpose_workload, kTransposeMinimumElements);
  add_sized<SliceKernel>(table, "Slice", {1}, slice_workload);
  add_sized<GatherElementsKernel>(table, "GatherElements", {11}, gather_elements_workload);
  add_sized<ExpandKernel>(table, "Expand", {8}, expand_workload);
  add_sized<TileKernel>(table, "Tile", {6}, tile_workload);
  add_sized<TriluKernel>(table, "Trilu", {14}, trilu_workload);
  add_bytewise<ConcatKernel>(table, "Concat", {1}, concat_workload);
  add_bytewise<SplitKernel>(table, "Split", {2}, split_workload);
  add_bytewise<GatherKernel>(table, "Gather", {1}, gather_workload);
  add_sized<DepthToSpaceKernel>(table, "DepthToSpace", {1}, depth_to_space_workload);
  add_sized<SpaceToDepthKernel>(table, "SpaceToDepth", {1}, space_to_depth_workload);
  add_sized<PadKernel>(table, "Pad", {2}, pad_workload);
  for_each_type<float, double, Float16, BFloat16>([&](auto t) {
    constexpr ElementType type = ElementTraits<decltype(t)>::type;
    KernelDef def = make_def("Dropout", {10}, type,
                             parallel_threshold_schema(elementwise_key("Dropout", type, 1), kDefaultMinimumElements));
    def.create = [](const KernelCreateInfo& info) -> std::unique_ptr<Kernel> { return create_dropout_kernel(info, type); };
    def.output_types = [](const KernelCreateInfo&) {
      return std::vector<ElementType>{ElementTraits<decltype(t)>::type, ElementType::boolean};
    };
    def.calibration_workload = dropout_workload(type);
    table.add(std::move(def));
  });
}

}  // namespace onnx_light::runtime::kernels
