#pragma once
// Values beside dense tensors, as ONNX types them: a sequence of tensors of one element type
// (seq(tensor(T))) and an optional, which holds nothing ("none"), a tensor or a sequence
// (optional(tensor(T)), optional(seq(tensor(T)))). A `Value` is one of none, tensor or sequence,
// as ONNX Runtime's OrtValue holds a Tensor or a TensorSeq.
//
// A sequence's tensors share storage with whoever else holds them (copies are shallow, as Tensor's);
// the runtime's sequence kernels insert copies of their inputs' tensors, never views, so a sequence
// a run hands out never aliases a buffer the session writes later.
// The session's memory limit (RuntimeSessionOptions::max_memory_bytes) does not count the tensors
// sequences hold.
#include <cstddef>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "onnx_light/runtime/element_type.h"
#include "onnx_light/runtime/tensor.h"

namespace onnx_light::runtime {

// What a graph value holds: a tensor (an optional tensor too: none is an empty tensor) or a
// sequence of tensors (an optional sequence too: none is no sequence).
enum class ValueKind { tensor, sequence };
std::string_view value_kind_name(ValueKind kind);

class TensorSequence {
 public:
  TensorSequence() = default;
  // Throws InvalidValueError when a tensor is empty or not of `type`.
  explicit TensorSequence(ElementType type, std::vector<Tensor> tensors = {});

  ElementType element_type() const { return type_; }
  std::size_t size() const { return tensors_.size(); }
  bool empty() const { return tensors_.empty(); }
  const Tensor& at(std::size_t position) const;  // throws InvalidValueError past the end
  const std::vector<Tensor>& tensors() const { return tensors_; }
  // `position` in [0, size()]; throws InvalidValueError on a wrong type or position.
  void insert(std::size_t position, Tensor tensor);
  void push_back(Tensor tensor) { insert(tensors_.size(), std::move(tensor)); }
  // `position` in [0, size()).
  void erase(std::size_t position);
  // "seq(float)[3]".
  std::string describe() const;

 private:
  void check(const Tensor& tensor) const;
  ElementType type_ = ElementType::undefined;
  std::vector<Tensor> tensors_;
};

// Element-by-element bitwise_equal (tensor.h) and the same element type.
bool bitwise_equal(const TensorSequence& a, const TensorSequence& b);

class Value {
 public:
  Value() = default;  // none
  // An empty tensor (Tensor::empty) is none.
  Value(Tensor tensor);          // NOLINT(google-explicit-constructor): a tensor is a value
  Value(TensorSequence sequence);  // NOLINT(google-explicit-constructor)

  bool is_none() const { return std::holds_alternative<std::monostate>(value_); }
  bool is_tensor() const { return std::holds_alternative<Tensor>(value_); }
  bool is_sequence() const { return std::holds_alternative<TensorSequence>(value_); }
  // Throw InvalidValueError when the value is something else.
  const Tensor& tensor() const;
  Tensor& tensor();
  const TensorSequence& sequence() const;
  TensorSequence& sequence();
  // "none", "float[2, 3]" or "seq(float)[3]".
  std::string describe() const;

 private:
  std::variant<std::monostate, Tensor, TensorSequence> value_;
};

}  // namespace onnx_light::runtime
