#include "onnx_light/runtime/kernel.h"

#include <fmt/format.h>

#include "onnx_light/runtime/error.h"

namespace onnx_light::runtime {

const onnx::AttributeProto* KernelCreateInfo::attribute(std::string_view name) const {
  for (const auto& a : node.attribute())
    if (a.name() == name) return &a;
  return nullptr;
}

namespace {

[[noreturn]] void wrong_attribute_type(const KernelCreateInfo& info, std::string_view name, std::string_view want) {
  throw ModelError(fmt::format("{}: attribute '{}' must be {}", info.node_label(), name, want));
}

}  // namespace

int64_t KernelCreateInfo::int_attribute(std::string_view name, int64_t fallback) const {
  const auto* a = attribute(name);
  if (a == nullptr) return fallback;
  if (a->type() != onnx::AttributeProto::INT && !(a->type() == onnx::AttributeProto::UNDEFINED && a->has_i()))
    wrong_attribute_type(*this, name, "an int");
  return a->i();
}

float KernelCreateInfo::float_attribute(std::string_view name, float fallback) const {
  const auto* a = attribute(name);
  if (a == nullptr) return fallback;
  if (a->type() != onnx::AttributeProto::FLOAT && !(a->type() == onnx::AttributeProto::UNDEFINED && a->has_f()))
    wrong_attribute_type(*this, name, "a float");
  return a->f();
}

std::string KernelCreateInfo::string_attribute(std::string_view name, const std::string& fallback) const {
  const auto* a = attribute(name);
  if (a == nullptr) return fallback;
  if (a->type() != onnx::AttributeProto::STRING && !(a->type() == onnx::AttributeProto::UNDEFINED && a->has_s()))
    wrong_attribute_type(*this, name, "a string");
  return a->s();
}

std::vector<int64_t> KernelCreateInfo::ints_attribute(std::string_view name) const {
  const auto* a = attribute(name);
  if (a == nullptr) return {};
  if (a->type() != onnx::AttributeProto::INTS && a->type() != onnx::AttributeProto::UNDEFINED)
    wrong_attribute_type(*this, name, "a list of ints");
  return {a->ints().begin(), a->ints().end()};
}

std::string KernelCreateInfo::node_label() const {
  if (node.name().empty()) return fmt::format("{} node (output '{}')", node.op_type(), node.output_size() ? node.output(0) : "");
  return fmt::format("{} node '{}'", node.op_type(), node.name());
}

const Tensor& KernelExecution::required_input(std::size_t index) const {
  const Tensor* t = index < input_count() ? input(index) : nullptr;
  if (t == nullptr || t->empty()) throw InputError(fmt::format("{}: input {} is required", label(), index));
  return *t;
}

const TensorSequence& KernelExecution::required_sequence_input(std::size_t index) const {
  const TensorSequence* s = index < input_count() ? sequence_input(index) : nullptr;
  if (s == nullptr) throw InputError(fmt::format("{}: input {} (a sequence) is required", label(), index));
  return *s;
}

void KernelExecution::set_sequence_output(std::size_t index, TensorSequence sequence) {
  (void)sequence;
  throw UnsupportedError(fmt::format("{}: output {} is a sequence, which this execution cannot hold", label(), index));
}

void KernelExecution::set_none_output(std::size_t index) {
  throw UnsupportedError(fmt::format("{}: output {} is an absent optional, which this execution cannot hold", label(), index));
}

}  // namespace onnx_light::runtime
