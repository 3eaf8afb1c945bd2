// Sequences and optionals (value.h): SequenceConstruct, SequenceEmpty, SequenceAt, SequenceInsert,
// SequenceErase, SequenceLength, SplitToSequence, ConcatFromSequence, Optional, OptionalGetElement,
// OptionalHasElement, and Identity over a sequence. SequenceMap runs a body: control_flow.cc.
//
// A tensor that enters a sequence is copied (owned storage of its own), so a sequence never aliases
// a session buffer that a later node or run writes; positions may be negative (counted from the
// end); a position outside the range ONNX allows is an InputError naming the node.
#include <algorithm>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "elementwise.h"
#include "kernel_families.h"
#include "kernel_util.h"
#include "onnx_light/runtime/error.h"

namespace onnx_light::runtime::kernels {

namespace {

// The position a scalar int32/int64 tensor holds.
int64_t seqk_position(const Tensor& t, const std::string& label) {
  if (t.element_count() != 1 || (t.element_type() != ElementType::int64 && t.element_type() != ElementType::int32))
    throw InputError(fmt::format("{}: position must be one int32 or int64, got {}", label, t.describe()));
  return t.element_type() == ElementType::int64 ? t.data<int64_t>()[0] : t.data<int32_t>()[0];
}

// `position` in [-length, length - 1] (or up to length when `end_allowed`), made non-negative.
std::size_t seqk_normalize(int64_t position, std::size_t size, bool end_allowed, const std::string& label,
                           const TensorSequence& sequence) {
  const auto length = static_cast<int64_t>(size);
  const int64_t last = end_allowed ? length : length - 1;
  if (position < -length || position > last)
    throw InputError(fmt::format("{}: position {} is outside [{}, {}] for a {}", label, position, -length, last,
                                 sequence.describe()));
  return static_cast<std::size_t>(position < 0 ? position + length : position);
}

void seqk_require_sequence(const KernelCreateInfo& info, std::size_t index, const char* what) {
  if (info.input_kind(index) != ValueKind::sequence)
    throw ModelError(fmt::format("{}: input {} ({}) must be a sequence, got a tensor", info.node_label(), index, what));
}

void seqk_require_tensor(const KernelCreateInfo& info, std::size_t index, const char* what) {
  if (index < info.input_kinds.size() && info.input_kind(index) != ValueKind::tensor)
    throw ModelError(fmt::format("{}: input {} ({}) must be a tensor, got a sequence", info.node_label(), index, what));
}

// Copies a tensor output of the execution out of `t`.
void seqk_copy_out(KernelExecution& execution, std::size_t index, const Tensor& t) {
  Tensor& out = execution.output_for_overwrite(index, t.element_type(), t.shape());
  if (t.byte_size() > 0) std::memcpy(out.raw_data(), t.raw_data(), t.byte_size());
}

class SequenceKernelBase : public Kernel {
 public:
  explicit SequenceKernelBase(std::vector<ValueKind> kinds) : kinds_(std::move(kinds)) {}
  std::vector<ValueKind> output_kinds() const override { return kinds_; }

 private:
  std::vector<ValueKind> kinds_;
};

class SequenceConstructKernel final : public SequenceKernelBase {
 public:
  explicit SequenceConstructKernel(const KernelCreateInfo& info)
      : SequenceKernelBase({ValueKind::sequence}), type_(info.input_types.empty() ? ElementType::undefined : info.input_types[0]) {
    check_attributes(info, {});
    if (info.node.input_size() < 1) throw ModelError(fmt::format("{}: SequenceConstruct takes at least one input", info.node_label()));
    for (std::size_t k = 0; k < static_cast<std::size_t>(info.node.input_size()); ++k) {
      seqk_require_tensor(info, k, "a tensor");
      if (info.input_types[k] != type_)
        throw ModelError(fmt::format("{}: input {} is {} but input 0 is {}; a sequence holds one element type",
                                     info.node_label(), k, element_type_name(info.input_types[k]), element_type_name(type_)));
    }
  }
  void run(KernelExecution& execution) override {
    std::vector<Tensor> tensors;
    for (std::size_t k = 0; k < execution.input_count(); ++k) tensors.push_back(execution.required_input(k).clone());
    execution.set_sequence_output(0, TensorSequence(type_, std::move(tensors)));
  }

 private:
  ElementType type_;
};

ElementType seqk_dtype(const KernelCreateInfo& info) {
  const auto type = static_cast<ElementType>(info.int_attribute("dtype", static_cast<int64_t>(ElementType::float32)));
  if (!is_fixed_size(type))
    throw UnsupportedError(fmt::format("{}: dtype {} is not an element type the runtime holds", info.node_label(),
                                       element_type_name(type)));
  return type;
}

class SequenceEmptyKernel final : public SequenceKernelBase {
 public:
  explicit SequenceEmptyKernel(const KernelCreateInfo& info) : SequenceKernelBase({ValueKind::sequence}), type_(seqk_dtype(info)) {
    check_attributes(info, {"dtype"});
  }
  void run(KernelExecution& execution) override { execution.set_sequence_output(0, TensorSequence(type_)); }

 private:
  ElementType type_;
};

class SequenceAtKernel final : public Kernel {
 public:
  explicit SequenceAtKernel(const KernelCreateInfo& info) {
    check_attributes(info, {});
    seqk_require_sequence(info, 0, "input_sequence");
  }
  void run(KernelExecution& execution) override {
    const TensorSequence& s = execution.required_sequence_input(0);
    const std::size_t at = seqk_normalize(seqk_position(execution.required_input(1), execution.label()), s.size(), false,
                                          execution.label(), s);
    seqk_copy_out(execution, 0, s.at(at));
  }
};

class SequenceInsertKernel final : public SequenceKernelBase {
 public:
  explicit SequenceInsertKernel(const KernelCreateInfo& info) : SequenceKernelBase({ValueKind::sequence}) {
    check_attributes(info, {});
    seqk_require_sequence(info, 0, "input_sequence");
    seqk_require_tensor(info, 1, "tensor");
    if (info.input_types.size() > 1 && info.input_types[1] != info.input_types[0])
      throw ModelError(fmt::format("{}: tensor is {} but the sequence holds {}", info.node_label(),
                                   element_type_name(info.input_types[1]), element_type_name(info.input_types[0])));
  }
  void run(KernelExecution& execution) override {
    TensorSequence s = execution.required_sequence_input(0);
    const Tensor& t = execution.required_input(1);
    if (t.element_type() != s.element_type())
      throw InputError(fmt::format("{}: cannot insert a tensor of {} into a {}", execution.label(), t.describe(), s.describe()));
    const Tensor* position = execution.input(2);
    const std::size_t at = position == nullptr ? s.size()
                                               : seqk_normalize(seqk_position(*position, execution.label()), s.size(),
                                                                true, execution.label(), s);
    s.insert(at, t.clone());
    execution.set_sequence_output(0, std::move(s));
  }
};

class SequenceEraseKernel final : public SequenceKernelBase {
 public:
  explicit SequenceEraseKernel(const KernelCreateInfo& info) : SequenceKernelBase({ValueKind::sequence}) {
    check_attributes(info, {});
    seqk_require_sequence(info, 0, "input_sequence");
  }
  void run(KernelExecution& execution) override {
    TensorSequence s = execution.required_sequence_input(0);
    const Tensor* position = execution.input(1);
    if (s.empty()) throw InputError(fmt::format("{}: cannot erase from an empty {}", execution.label(), s.describe()));
    const std::size_t at = seqk_normalize(position == nullptr ? -1 : seqk_position(*position, execution.label()), s.size(),
                                          false, execution.label(), s);
    s.erase(at);
    execution.set_sequence_output(0, std::move(s));
  }
};

class SequenceLengthKernel final : public Kernel {
 public:
  explicit SequenceLengthKernel(const KernelCreateInfo& info) {
    check_attributes(info, {});
    seqk_require_sequence(info, 0, "input_sequence");
  }
  void run(KernelExecution& execution) override {
    const TensorSequence& s = execution.required_sequence_input(0);
    execution.output(0, ElementType::int64, Shape{}).data<int64_t>()[0] = static_cast<int64_t>(s.size());
  }
};

// Copies [begin, end) of `axis` of `t` into a new tensor (that axis dropped when `squeeze`).
Tensor seqk_slice(const Tensor& t, std::size_t axis, int64_t begin, int64_t end, bool squeeze) {
  Shape shape = t.shape();
  const int64_t length = shape[axis];
  shape[axis] = end - begin;
  int64_t outer = 1, inner = 1;
  for (std::size_t d = 0; d < axis; ++d) outer *= t.shape()[d];
  for (std::size_t d = axis + 1; d < t.rank(); ++d) inner *= t.shape()[d];
  Tensor out(t.element_type(), shape);
  const std::size_t size = element_size(t.element_type());
  const auto* src = static_cast<const std::byte*>(t.raw_data());
  auto* dst = static_cast<std::byte*>(out.raw_data());
  const auto chunk = static_cast<std::size_t>((end - begin) * inner) * size;
  for (int64_t o = 0; o < outer; ++o)
    if (chunk > 0) std::memcpy(dst + static_cast<std::size_t>(o) * chunk, src + static_cast<std::size_t>((o * length + begin) * inner) * size, chunk);
  if (squeeze) {
    shape.erase(shape.begin() + static_cast<std::ptrdiff_t>(axis));
    return out.reshaped(shape);
  }
  return out;
}

class SplitToSequenceKernel final : public SequenceKernelBase {
 public:
  explicit SplitToSequenceKernel(const KernelCreateInfo& info)
      : SequenceKernelBase({ValueKind::sequence}), axis_(info.int_attribute("axis", 0)), keepdims_(info.int_attribute("keepdims", 1)) {
    check_attributes(info, {"axis", "keepdims"});
    if (keepdims_ != 0 && keepdims_ != 1)
      throw ModelError(fmt::format("{}: keepdims must be 0 or 1, not {}", info.node_label(), keepdims_));
  }
  void run(KernelExecution& execution) override {
    const Tensor& x = execution.required_input(0);
    const std::string& label = execution.label();
    const auto rank = static_cast<int64_t>(x.rank());
    if (axis_ < -rank || axis_ >= rank)
      throw InputError(fmt::format("{}: axis {} is outside [{}, {}] for {}", label, axis_, -rank, rank - 1, x.describe()));
    const auto axis = static_cast<std::size_t>(axis_ < 0 ? axis_ + rank : axis_);
    const int64_t length = x.shape()[axis];
    const Tensor* split = execution.input(1);
    std::vector<Tensor> parts;
    if (split == nullptr) {
      // One slice per index along the axis; keepdims = 0 drops the axis.
      for (int64_t i = 0; i < length; ++i) parts.push_back(seqk_slice(x, axis, i, i + 1, keepdims_ == 0));
    } else {
      if (split->element_type() != ElementType::int64 && split->element_type() != ElementType::int32)
        throw InputError(fmt::format("{}: split must be int32 or int64, got {}", label, split->describe()));
      auto value = [&](int64_t i) {
        return split->element_type() == ElementType::int64 ? split->data<int64_t>()[i] : split->data<int32_t>()[i];
      };
      std::vector<int64_t> sizes;
      if (split->rank() == 0) {
        // Chunks of that size; the last one holds what is left.
        const int64_t chunk = value(0);
        if (chunk <= 0) throw InputError(fmt::format("{}: split {} must be positive", label, chunk));
        for (int64_t begin = 0; begin < length; begin += chunk) sizes.push_back(std::min(chunk, length - begin));
      } else if (split->rank() == 1) {
        int64_t total = 0;
        for (int64_t i = 0; i < split->element_count(); ++i) {
          if (value(i) < 0) throw InputError(fmt::format("{}: split entry {} is negative ({})", label, i, value(i)));
          sizes.push_back(value(i));
          total += value(i);
        }
        if (total != length)
          throw InputError(fmt::format("{}: split sums to {} but axis {} of {} has length {}", label, total, axis,
                                       x.describe(), length));
      } else {
        throw InputError(fmt::format("{}: split must be a scalar or 1-D, got {}", label, split->describe()));
      }
      int64_t begin = 0;
      for (int64_t size : sizes) {
        parts.push_back(seqk_slice(x, axis, begin, begin + size, false));
        begin += size;
      }
    }
    execution.set_sequence_output(0, TensorSequence(x.element_type(), std::move(parts)));
  }

 private:
  int64_t axis_, keepdims_;
};

class ConcatFromSequenceKernel final : public Kernel {
 public:
  explicit ConcatFromSequenceKernel(const KernelCreateInfo& info) : new_axis_(info.int_attribute("new_axis", 0)) {
    check_attributes(info, {"axis", "new_axis"});
    seqk_require_sequence(info, 0, "input_sequence");
    if (!info.has_attribute("axis")) throw ModelError(fmt::format("{}: attribute 'axis' is required", info.node_label()));
    axis_ = info.int_attribute("axis", 0);
    if (new_axis_ != 0 && new_axis_ != 1)
      throw ModelError(fmt::format("{}: new_axis must be 0 or 1, not {}", info.node_label(), new_axis_));
  }
  void run(KernelExecution& execution) override {
    const TensorSequence& s = execution.required_sequence_input(0);
    const std::string& label = execution.label();
    if (s.empty()) throw InputError(fmt::format("{}: cannot concatenate an empty {}", label, s.describe()));
    const Shape& first = s.at(0).shape();
    const auto rank = static_cast<int64_t>(first.size());
    const int64_t out_rank = rank + new_axis_;
    if (axis_ < -out_rank || axis_ >= out_rank)
      throw InputError(fmt::format("{}: axis {} is outside [{}, {}] for tensors of rank {}{}", label, axis_, -out_rank,
                                   out_rank - 1, rank, new_axis_ ? " with new_axis" : ""));
    const auto axis = static_cast<std::size_t>(axis_ < 0 ? axis_ + out_rank : axis_);
    // Each tensor seen with the new axis of length 1 inserted (new_axis = 1).
    auto view_shape = [&](const Shape& shape) {
      Shape v = shape;
      if (new_axis_) v.insert(v.begin() + static_cast<std::ptrdiff_t>(axis), 1);
      return v;
    };
    Shape out_shape = view_shape(first);
    out_shape[axis] = 0;
    for (std::size_t i = 0; i < s.size(); ++i) {
      const Shape v = view_shape(s.at(i).shape());
      bool fits = v.size() == out_shape.size();
      for (std::size_t d = 0; fits && d < v.size(); ++d) fits = d == axis || v[d] == out_shape[d];
      if (!fits)
        throw InputError(fmt::format("{}: tensor {} of the sequence is {}, which does not concatenate with {} along axis {}",
                                     label, i, s.at(i).describe(), s.at(0).describe(), axis_));
      out_shape[axis] += v[axis];
    }
    Tensor& out = execution.output_for_overwrite(0, s.element_type(), out_shape);
    int64_t outer = 1, inner = 1;
    for (std::size_t d = 0; d < axis; ++d) outer *= out_shape[d];
    for (std::size_t d = axis + 1; d < out_shape.size(); ++d) inner *= out_shape[d];
    const std::size_t size = element_size(s.element_type());
    auto* dst = static_cast<std::byte*>(out.raw_data());
    const auto row = static_cast<std::size_t>(out_shape[axis] * inner) * size;
    std::size_t offset = 0;
    for (std::size_t i = 0; i < s.size(); ++i) {
      const Tensor& t = s.at(i);
      const auto chunk = static_cast<std::size_t>(view_shape(t.shape())[axis] * inner) * size;
      const auto* src = static_cast<const std::byte*>(t.raw_data());
      for (int64_t o = 0; o < outer; ++o)
        if (chunk > 0) std::memcpy(dst + static_cast<std::size_t>(o) * row + offset, src + static_cast<std::size_t>(o) * chunk, chunk);
      offset += chunk;
    }
  }

 private:
  int64_t axis_ = 0, new_axis_;
};

// Identity, Optional (with an input) and OptionalGetElement: the input as it is, a tensor copied,
// a sequence shared (its tensors are never written). `none_is_error`: OptionalGetElement.
class PassThroughKernel final : public SequenceKernelBase {
 public:
  PassThroughKernel(ValueKind kind, bool none_is_error) : SequenceKernelBase({kind}), kind_(kind), none_is_error_(none_is_error) {}
  void run(KernelExecution& execution) override {
    if (kind_ == ValueKind::sequence) {
      if (const TensorSequence* s = execution.sequence_input(0)) execution.set_sequence_output(0, *s);
      else none(execution);
    } else {
      if (const Tensor* t = execution.input(0)) seqk_copy_out(execution, 0, *t);
      else none(execution);
    }
  }

 private:
  void none(KernelExecution& execution) const {
    if (none_is_error_) throw InputError(fmt::format("{}: the optional input is empty (none)", execution.label()));
    execution.set_none_output(0);
  }
  ValueKind kind_;
  bool none_is_error_;
};

// Optional without an input: none of the type its `type` attribute gives.
class OptionalNoneKernel final : public SequenceKernelBase {
 public:
  explicit OptionalNoneKernel(ValueKind kind) : SequenceKernelBase({kind}) {}
  void run(KernelExecution& execution) override { execution.set_none_output(0); }
};

// The kind and element type an Optional's `type` attribute (a TypeProto) names.
std::pair<ValueKind, ElementType> seqk_optional_type(const KernelCreateInfo& info) {
  const onnx::AttributeProto* a = info.attribute("type");
  if (a == nullptr || !a->has_tp())
    throw ModelError(fmt::format("{}: Optional without an input needs the attribute 'type'", info.node_label()));
  const onnx::TypeProto* t = &a->tp();
  ValueKind kind = ValueKind::tensor;
  if (t->has_sequence_type()) {
    kind = ValueKind::sequence;
    t = &t->sequence_type().elem_type();
  }
  if (!t->has_tensor_type())
    throw UnsupportedError(fmt::format("{}: attribute 'type' is neither a tensor nor a sequence of tensors", info.node_label()));
  const auto type = static_cast<ElementType>(t->tensor_type().elem_type());
  if (!is_fixed_size(type))
    throw UnsupportedError(fmt::format("{}: attribute 'type' has element type {}, which the runtime does not hold",
                                       info.node_label(), element_type_name(type)));
  return {kind, type};
}

class OptionalHasElementKernel final : public Kernel {
 public:
  explicit OptionalHasElementKernel(const KernelCreateInfo& info) { check_attributes(info, {}); }
  void run(KernelExecution& execution) override {
    const bool has = execution.input_count() > 0 && (execution.input(0) != nullptr || execution.sequence_input(0) != nullptr);
    execution.output(0, ElementType::boolean, Shape{}).data<bool>()[0] = has;
  }
};

template <typename K>
KernelFactory seqk_factory() {
  return [](const KernelCreateInfo& info) -> std::unique_ptr<Kernel> { return std::make_unique<K>(info); };
}

}  // namespace

std::unique_ptr<Kernel> make_sequence_identity_kernel(const KernelCreateInfo& info) {
  check_attributes(info, {});
  return std::make_unique<PassThroughKernel>(info.input_kind(0), false);
}

void register_sequence_kernels(KernelTable& table) {
  auto add = [&table](const char* op, int since, ElementType type, KernelFactory create, OutputTypeFunction types = {}) {
    KernelDef def = make_def(op, {since}, type, TuningSchema{elementwise_key(op, type, 1), {}});
    def.create = std::move(create);
    def.output_types = std::move(types);
    table.add(std::move(def));
  };
  for (ElementType type : supported_element_types()) {
    add("SequenceConstruct", 11, type, seqk_factory<SequenceConstructKernel>());
    add("SequenceAt", 11, type, seqk_factory<SequenceAtKernel>());
    add("SequenceInsert", 11, type, seqk_factory<SequenceInsertKernel>());
    add("SequenceErase", 11, type, seqk_factory<SequenceEraseKernel>());
    add("SequenceLength", 11, type, seqk_factory<SequenceLengthKernel>(),
        [](const KernelCreateInfo&) { return std::vector<ElementType>{ElementType::int64}; });
    add("SplitToSequence", 11, type, seqk_factory<SplitToSequenceKernel>());
    add("ConcatFromSequence", 11, type, seqk_factory<ConcatFromSequenceKernel>());
    add("OptionalHasElement", 15, type, seqk_factory<OptionalHasElementKernel>(),
        [](const KernelCreateInfo&) { return std::vector<ElementType>{ElementType::boolean}; });
    add("OptionalGetElement", 15, type, [](const KernelCreateInfo& info) -> std::unique_ptr<Kernel> {
      check_attributes(info, {});
      return std::make_unique<PassThroughKernel>(info.input_kind(0), true);
    });
    // Optional with an input selects by its type; without one, by float32 (a node without inputs),
    // its kind and type from the attribute `type`.
    add("Optional", 15, type,
        [](const KernelCreateInfo& info) -> std::unique_ptr<Kernel> {
          check_attributes(info, {"type"});
          if (info.node.input_size() == 0 || info.node.input(0).empty())
            return std::make_unique<OptionalNoneKernel>(seqk_optional_type(info).first);
          return std::make_unique<PassThroughKernel>(info.input_kind(0), false);
        },
        [](const KernelCreateInfo& info) {
          if (info.node.input_size() == 0 || info.node.input(0).empty())
            return std::vector<ElementType>{seqk_optional_type(info).second};
          return std::vector<ElementType>{info.input_types[0]};
        });
  }
  // No input: one definition, keyed by float32 (the session's selector for input-less nodes).
  add("SequenceEmpty", 11, ElementType::float32, seqk_factory<SequenceEmptyKernel>(),
      [](const KernelCreateInfo& info) { return std::vector<ElementType>{seqk_dtype(info)}; });
}

}  // namespace onnx_light::runtime::kernels
