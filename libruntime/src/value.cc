#include "onnx_light/runtime/value.h"

#include <fmt/format.h>

#include "onnx_light/runtime/error.h"

namespace onnx_light::runtime {

std::string_view value_kind_name(ValueKind kind) { return kind == ValueKind::sequence ? "sequence" : "tensor"; }

TensorSequence::TensorSequence(ElementType type, std::vector<Tensor> tensors) : type_(type) {
  for (const Tensor& t : tensors) check(t);
  tensors_ = std::move(tensors);
}

void TensorSequence::check(const Tensor& tensor) const {
  if (tensor.empty()) throw InvalidValueError(fmt::format("a {} cannot hold an empty (absent) tensor", describe()));
  if (tensor.element_type() != type_)
    throw InvalidValueError(fmt::format("a sequence of {} cannot hold a tensor of {} ({})", element_type_name(type_),
                                        element_type_name(tensor.element_type()), tensor.describe()));
}

const Tensor& TensorSequence::at(std::size_t position) const {
  if (position >= tensors_.size())
    throw InvalidValueError(fmt::format("position {} is past the end of a {}", position, describe()));
  return tensors_[position];
}

void TensorSequence::insert(std::size_t position, Tensor tensor) {
  check(tensor);
  if (position > tensors_.size())
    throw InvalidValueError(fmt::format("position {} is past the end of a {}", position, describe()));
  tensors_.insert(tensors_.begin() + static_cast<std::ptrdiff_t>(position), std::move(tensor));
}

void TensorSequence::erase(std::size_t position) {
  if (position >= tensors_.size())
    throw InvalidValueError(fmt::format("position {} is past the end of a {}", position, describe()));
  tensors_.erase(tensors_.begin() + static_cast<std::ptrdiff_t>(position));
}

std::string TensorSequence::describe() const {
  return fmt::format("seq({})[{}]", element_type_name(type_), tensors_.size());
}

bool bitwise_equal(const TensorSequence& a, const TensorSequence& b) {
  if (a.element_type() != b.element_type() || a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (!bitwise_equal(a.at(i), b.at(i))) return false;
  return true;
}

Value::Value(Tensor tensor) {
  if (!tensor.empty()) value_ = std::move(tensor);
}

Value::Value(TensorSequence sequence) : value_(std::move(sequence)) {}

const Tensor& Value::tensor() const {
  if (!is_tensor()) throw InvalidValueError(fmt::format("the value is {}, not a tensor", describe()));
  return std::get<Tensor>(value_);
}

Tensor& Value::tensor() {
  if (!is_tensor()) throw InvalidValueError(fmt::format("the value is {}, not a tensor", describe()));
  return std::get<Tensor>(value_);
}

const TensorSequence& Value::sequence() const {
  if (!is_sequence()) throw InvalidValueError(fmt::format("the value is {}, not a sequence", describe()));
  return std::get<TensorSequence>(value_);
}

TensorSequence& Value::sequence() {
  if (!is_sequence()) throw InvalidValueError(fmt::format("the value is {}, not a sequence", describe()));
  return std::get<TensorSequence>(value_);
}

std::string Value::describe() const {
  if (is_tensor()) return std::get<Tensor>(value_).describe();
  if (is_sequence()) return std::get<TensorSequence>(value_).describe();
  return "none";
}

}  // namespace onnx_light::runtime
