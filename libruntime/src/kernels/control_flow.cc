// Control flow: If, Loop and Scan. Each branch or body is a session of its own (built once, when the node is created,
// through the enclosing session's SubgraphBuilder), whose graph inputs are the outer values the
// branch reads; the node's implicit inputs carry those values in (kernel.h).
#include <algorithm>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "kernel_families.h"
#include "kernel_util.h"
#include "onnx_light/runtime/error.h"
#include "onnx_light/runtime/session.h"
#include "subgraph.h"

namespace onnx_light::runtime::kernels {

namespace {

// The outer values `graph` reads, with their element types and the index of the node input (its
// own inputs first, then the implicit ones) that carries each.
struct OuterValues {
  std::vector<std::string> names;
  std::vector<ElementType> types;
  std::vector<ValueKind> kinds;
  std::vector<std::size_t> input_index;
};

OuterValues outer_values(const KernelCreateInfo& info, const onnx::GraphProto& graph, const std::string& what) {
  OuterValues outer;
  outer.names = free_variables(graph);
  for (const auto& value : outer.names) {
    auto it = std::find(info.implicit_inputs.begin(), info.implicit_inputs.end(), value);
    if (it == info.implicit_inputs.end())
      throw ModelError(fmt::format("{}: {} reads '{}', which no enclosing scope defines", info.node_label(), what, value));
    const std::size_t index =
        static_cast<std::size_t>(info.node.input_size()) + static_cast<std::size_t>(it - info.implicit_inputs.begin());
    outer.input_index.push_back(index);
    outer.types.push_back(info.input_types[index]);
    outer.kinds.push_back(info.input_kind(index));
  }
  return outer;
}

// Gives body input k the element type `type`, the kind `kind` (a tensor or a sequence, still
// optional when the body declares it so) and no shape (a value carried from one iteration to the
// next may change shape); `missing` is the error when the type is unknown.
void retype_body_input(onnx::GraphProto& body, std::size_t k, ElementType type, const std::string& missing,
                       ValueKind kind = ValueKind::tensor) {
  if (type == ElementType::undefined) throw UnsupportedError(missing);
  onnx::TypeProto* declared = body.mutable_input(static_cast<int>(k))->mutable_type();
  onnx::TypeProto* inner = declared->has_optional_type() ? declared->mutable_optional_type()->mutable_elem_type() : declared;
  auto* tensor_type = kind == ValueKind::sequence ? inner->mutable_sequence_type()->mutable_elem_type()->mutable_tensor_type()
                                                  : inner->mutable_tensor_type();
  tensor_type->set_elem_type(static_cast<int32_t>(type));
  tensor_type->clear_shape();
}

// Node input `index` as a value for a graph run with values: its sequence, its tensor, or none.
Value flow_input_value(const KernelExecution& execution, std::size_t index, ValueKind kind) {
  if (kind == ValueKind::sequence) {
    const TensorSequence* s = execution.sequence_input(index);
    return s != nullptr ? Value(*s) : Value();
  }
  const Tensor* t = execution.input(index);
  return t != nullptr ? Value(*t) : Value();
}

// Stores `value` as output `index` of kind `kind`: a sequence, none, or a copy of the tensor.
void flow_output_value(KernelExecution& execution, std::size_t index, ValueKind kind, Value& value) {
  if (value.is_none()) {
    execution.set_none_output(index);
  } else if (value.is_sequence() && kind == ValueKind::sequence) {
    execution.set_sequence_output(index, std::move(value.sequence()));
  } else if (value.is_tensor() && kind == ValueKind::tensor) {
    const Tensor& result = value.tensor();
    Tensor& out = execution.output_for_overwrite(index, result.element_type(), result.shape());
    if (result.byte_size() > 0) std::memcpy(out.raw_data(), result.raw_data(), result.byte_size());
  } else {
    throw InputError(fmt::format("{}: output {} must be a {} but the graph gave {}", execution.label(), index,
                                 value_kind_name(kind), value.describe()));
  }
}

// True when a graph session takes or gives a sequence or an optional: it runs with values.
bool runs_with_values(const RuntimeSession& session) {
  for (const auto* list : {&session.inputs(), &session.outputs()})
    for (const ValueInfo& v : *list)
      if (v.kind == ValueKind::sequence || v.optional) return true;
  return false;
}

// One branch: its session and, per graph input of that session, the index of the node input
// (explicit inputs first, then implicit ones) holding the value.
struct Branch {
  std::string name;  // "If node 'x' then_branch"
  std::unique_ptr<RuntimeSession> session;
  std::vector<std::size_t> input_index;
  std::vector<Tensor> inputs, outputs;  // reused across runs
  bool values = false;                  // sequences or optionals: runs with values
  std::vector<ValueKind> input_kinds;
};

class IfKernel final : public Kernel {
 public:
  explicit IfKernel(const KernelCreateInfo& info) {
    if (info.subgraphs == nullptr)
      throw UnsupportedError(fmt::format("{}: If needs the enclosing session to build its branches", info.node_label()));
    then_ = make_branch(info, "then_branch");
    else_ = make_branch(info, "else_branch");
    const auto& a = then_.session->outputs();
    const auto& b = else_.session->outputs();
    const std::size_t n = static_cast<std::size_t>(info.node.output_size());
    if (a.size() != n || b.size() != n)
      throw ModelError(fmt::format("{}: the node has {} output(s), then_branch {} and else_branch {}; they must agree",
                                   info.node_label(), n, a.size(), b.size()));
    for (std::size_t k = 0; k < n; ++k) {
      ElementType t = a[k].element_type != ElementType::undefined ? a[k].element_type : b[k].element_type;
      if (a[k].element_type != ElementType::undefined && b[k].element_type != ElementType::undefined &&
          a[k].element_type != b[k].element_type)
        throw ModelError(fmt::format("{}: output {} is {} in then_branch and {} in else_branch", info.node_label(), k,
                                     element_type_name(a[k].element_type), element_type_name(b[k].element_type)));
      if (t == ElementType::undefined)
        throw UnsupportedError(fmt::format("{}: the element type of output {} is declared by neither branch",
                                           info.node_label(), k));
      if (a[k].kind != b[k].kind)
        throw ModelError(fmt::format("{}: output {} is a {} in then_branch and a {} in else_branch", info.node_label(), k,
                                     value_kind_name(a[k].kind), value_kind_name(b[k].kind)));
      types_.push_back(t);
      kinds_.push_back(a[k].kind);
    }
  }

  std::vector<ElementType> inferred_output_types() const override { return types_; }
  std::vector<ValueKind> output_kinds() const override { return kinds_; }
  std::string_view variant() const override { return taken_; }
  std::vector<std::pair<std::string, const RuntimeSession*>> subgraph_sessions() const override {
    return {{then_.name, then_.session.get()}, {else_.name, else_.session.get()}};
  }

  void run(KernelExecution& execution) override {
    const Tensor& cond = execution.required_input(0);
    if (cond.element_count() != 1)
      throw InputError(fmt::format("{}: cond must hold one element, got {}", execution.label(), cond.describe()));
    const bool condition = cond.data<bool>()[0];  // the definition is chosen for a bool cond only
    Branch& branch = condition ? then_ : else_;
    taken_ = condition ? "then_branch" : "else_branch";
    if (branch.values) {
      std::vector<Value> inputs(branch.input_index.size()), outputs(branch.outputs.size());
      for (std::size_t k = 0; k < inputs.size(); ++k)
        inputs[k] = flow_input_value(execution, branch.input_index[k], branch.input_kinds[k]);
      branch.session->run(inputs, outputs);
      for (std::size_t k = 0; k < outputs.size(); ++k) flow_output_value(execution, k, kinds_[k], outputs[k]);
      return;
    }
    for (std::size_t k = 0; k < branch.input_index.size(); ++k) {
      const Tensor* value = execution.input(branch.input_index[k]);
      branch.inputs[k] = value != nullptr ? *value : Tensor();
    }
    branch.session->run(branch.inputs, branch.outputs);
    for (std::size_t k = 0; k < branch.outputs.size(); ++k) {
      const Tensor& result = branch.outputs[k];
      Tensor& out = execution.output_for_overwrite(k, result.element_type(), result.shape());
      if (result.byte_size() > 0) std::memcpy(out.raw_data(), result.raw_data(), result.byte_size());
    }
    // The outer values are only borrowed for the run.
    for (auto& t : branch.inputs) t = Tensor();
  }

 private:
  static Branch make_branch(const KernelCreateInfo& info, const char* name) {
    const onnx::AttributeProto* attribute = info.attribute(name);
    if (attribute == nullptr || !attribute->has_g())
      throw ModelError(fmt::format("{}: attribute '{}' (a graph) is missing", info.node_label(), name));
    Branch branch;
    OuterValues outer = outer_values(info, attribute->g(), name);
    branch.input_index = std::move(outer.input_index);
    branch.name = fmt::format("{} {}", info.node_label(), name);
    branch.session = info.subgraphs->build(attribute->g(), outer.names, outer.types, branch.name, outer.kinds);
    branch.values = runs_with_values(*branch.session);
    branch.input_kinds = outer.kinds;
    branch.inputs.resize(outer.names.size());
    branch.outputs.resize(branch.session->outputs().size());
    return branch;
  }

  Branch then_, else_;
  std::vector<ElementType> types_;
  std::vector<ValueKind> kinds_;
  std::string_view taken_;
};

// The `body` graph attribute of a Loop, Scan or SequenceMap node, which needs the enclosing
// session (info.subgraphs) to build it; throws naming the node when either is missing.
const onnx::AttributeProto* body_attribute(const KernelCreateInfo& info, std::string_view op, const std::string& label) {
  if (info.subgraphs == nullptr)
    throw UnsupportedError(fmt::format("{}: {} needs the enclosing session to build its body", label, op));
  const onnx::AttributeProto* attribute = info.attribute("body");
  if (attribute == nullptr || !attribute->has_g())
    throw ModelError(fmt::format("{}: attribute 'body' (a graph) is missing", label));
  return attribute;
}

// Loop: the body session's inputs are (iteration_num, cond, N loop-carried values, the outer
// values it reads); its outputs (cond, N loop-carried values, K scan outputs). Loop-carried values
// move from one iteration's outputs to the next one's inputs without a copy; scan outputs are
// appended per iteration and stacked on a new axis 0 at the end.
class LoopKernel final : public Kernel {
 public:
  explicit LoopKernel(const KernelCreateInfo& info) : label_(info.node_label()) {
    const onnx::AttributeProto* attribute = body_attribute(info, "Loop", label_);
    const std::size_t explicit_count = static_cast<std::size_t>(info.node.input_size());
    if (explicit_count < 2) throw ModelError(fmt::format("{}: Loop takes M, cond and the loop-carried values", label_));
    carried_ = explicit_count - 2;
    onnx::GraphProto body = attribute->g();
    if (static_cast<std::size_t>(body.input_size()) != carried_ + 2)
      throw ModelError(fmt::format("{}: the body has {} input(s); Loop gives it 2 + {} loop-carried value(s)", label_,
                                   body.input_size(), carried_));
    if (static_cast<std::size_t>(body.output_size()) < carried_ + 1)
      throw ModelError(fmt::format("{}: the body has {} output(s); it must give cond and {} loop-carried value(s)",
                                   label_, body.output_size(), carried_));
    scans_ = static_cast<std::size_t>(body.output_size()) - 1 - carried_;
    if (static_cast<std::size_t>(info.node.output_size()) != carried_ + scans_)
      throw ModelError(fmt::format("{}: the node has {} output(s); its body gives {} loop-carried and {} scan output(s)",
                                   label_, info.node.output_size(), carried_, scans_));
    // The body's own inputs take their types from the Loop's; shapes are dropped (a loop-carried
    // value may change shape from one iteration to the next).
    for (std::size_t k = 0; k < carried_ + 2; ++k) {
      const ElementType type = k == 0 ? ElementType::int64 : k == 1 ? ElementType::boolean : info.input_types[k];
      retype_body_input(body, k, type, fmt::format("{}: loop-carried value {} has no element type", label_, k - 2),
                        info.input_kind(k));
    }
    OuterValues outer = outer_values(info, body, "body");
    outer_index_ = std::move(outer.input_index);
    outer_kinds_ = outer.kinds;
    body_ = info.subgraphs->build(body, outer.names, outer.types, label_ + " body", outer.kinds);
    values_ = runs_with_values(*body_);
    for (std::size_t k = 0; k < carried_ + 2; ++k) input_kinds_.push_back(info.input_kind(k));
    const auto& outs = body_->outputs();
    for (std::size_t k = 1; k < outs.size(); ++k) {
      ElementType t = outs[k].element_type;
      if (k <= carried_ && t == ElementType::undefined) t = info.input_types[k + 1];
      if (t == ElementType::undefined)
        throw UnsupportedError(fmt::format("{}: the element type of body output {} is not declared", label_, k));
      if (k <= carried_ && outs[k].kind != info.input_kind(k + 1))
        throw ModelError(fmt::format("{}: loop-carried value {} enters the body as a {} but leaves it as a {}", label_,
                                     k - 1, value_kind_name(info.input_kind(k + 1)), value_kind_name(outs[k].kind)));
      if (k > carried_ && outs[k].kind != ValueKind::tensor)
        throw UnsupportedError(fmt::format("{}: scan output {} is a sequence; scan outputs must be tensors", label_,
                                           k - 1 - carried_));
      types_.push_back(t);
      kinds_.push_back(outs[k].kind);
    }
    inputs_.resize(body_->inputs().size());
    outputs_.resize(outs.size());
    inputs_[0] = Tensor(ElementType::int64, Shape{});
    inputs_[1] = Tensor(ElementType::boolean, Shape{});
  }

  std::vector<ElementType> inferred_output_types() const override { return types_; }
  std::vector<ValueKind> output_kinds() const override { return kinds_; }
  std::vector<std::pair<std::string, const RuntimeSession*>> subgraph_sessions() const override {
    return {{label_ + " body", body_.get()}};
  }

  void run(KernelExecution& execution) override {
    if (values_) {
      run_with_values(execution);
      return;
    }
    auto [trips, cond] = loop_control(execution);
    for (std::size_t k = 0; k < carried_; ++k) {
      const Tensor* v = execution.input(k + 2);
      inputs_[k + 2] = v != nullptr ? *v : Tensor();
    }
    for (std::size_t k = 0; k < outer_index_.size(); ++k) {
      const Tensor* v = execution.input(outer_index_[k]);
      inputs_[carried_ + 2 + k] = v != nullptr ? *v : Tensor();
    }
    ScanOutputs scanned(label_, scans_);
    int64_t iterations = 0;
    for (; iterations < trips && cond; ++iterations) {
      // A body that passes iteration_num or cond straight through hands out these very tensors:
      // never write one somebody still holds.
      if (!inputs_[0].exclusively_owned()) inputs_[0] = Tensor(ElementType::int64, Shape{});
      if (!inputs_[1].exclusively_owned()) inputs_[1] = Tensor(ElementType::boolean, Shape{});
      inputs_[0].data<int64_t>()[0] = iterations;
      inputs_[1].data<bool>()[0] = cond;
      body_->run(inputs_, outputs_);
      const Tensor& cond_out = outputs_[0];
      if (cond_out.element_type() != ElementType::boolean || cond_out.element_count() != 1)
        throw InputError(fmt::format("{}: the body's cond output must be one bool, got {}", label_, cond_out.describe()));
      cond = cond_out.data<bool>()[0];
      for (std::size_t k = 0; k < carried_; ++k) inputs_[k + 2] = std::move(outputs_[k + 1]);
      for (std::size_t k = 0; k < scans_; ++k) scanned.append(k, outputs_[1 + carried_ + k], iterations);
    }
    for (std::size_t k = 0; k < carried_; ++k) {
      const Tensor& v = inputs_[k + 2];
      Tensor& out = execution.output_for_overwrite(k, v.element_type(), v.shape());
      if (v.byte_size() > 0) std::memcpy(out.raw_data(), v.raw_data(), v.byte_size());
    }
    scanned.write(execution, carried_, types_, iterations);
    // Borrowed values go back to their owners.
    for (std::size_t k = 2; k < inputs_.size(); ++k) inputs_[k] = Tensor();
    for (auto& t : outputs_) t = Tensor();
  }

 private:
  // Loop's scan outputs: each iteration's value appended, all of the same shape, stacked on a new
  // leading axis when the loop ends.
  class ScanOutputs {
   public:
    ScanOutputs(const std::string& label, std::size_t count) : label_(label), bytes_(count), shapes_(count) {}

    void append(std::size_t k, const Tensor& s, int64_t iteration) {
      if (iteration == 0) shapes_[k] = s.shape();
      else if (s.shape() != shapes_[k])
        throw InputError(fmt::format("{}: scan output {} is {} in iteration {} but had shape [{}] before", label_, k,
                                     s.describe(), iteration, fmt::join(shapes_[k], ", ")));
      const auto* bytes = static_cast<const std::byte*>(s.raw_data());
      bytes_[k].insert(bytes_[k].end(), bytes, bytes + s.byte_size());
    }

    void write(KernelExecution& execution, std::size_t first_output, const std::vector<ElementType>& types,
               int64_t iterations) const {
      for (std::size_t k = 0; k < bytes_.size(); ++k) {
        Shape shape{iterations};
        shape.insert(shape.end(), shapes_[k].begin(), shapes_[k].end());
        Tensor& out = execution.output_for_overwrite(first_output + k, types[first_output + k], shape);
        if (!bytes_[k].empty()) std::memcpy(out.raw_data(), bytes_[k].data(), bytes_[k].size());
      }
    }

   private:
    const std::string& label_;
    std::vector<std::vector<std::byte>> bytes_;
    std::vector<Shape> shapes_;
  };

  // The trip count (M, or unbounded when omitted) and the first condition (cond, or true).
  std::pair<int64_t, bool> loop_control(KernelExecution& execution) const {
    const Tensor* trip = execution.input(0);
    const Tensor* cond_in = execution.input(1);
    if (trip != nullptr && trip->element_count() != 1)
      throw InputError(fmt::format("{}: M must hold one element, got {}", label_, trip->describe()));
    if (cond_in != nullptr && cond_in->element_count() != 1)
      throw InputError(fmt::format("{}: cond must hold one element, got {}", label_, cond_in->describe()));
    return {trip != nullptr ? trip->data<int64_t>()[0] : std::numeric_limits<int64_t>::max(),
            cond_in != nullptr ? cond_in->data<bool>()[0] : true};
  }

  // The same loop for a body that takes or gives sequences or optionals: values instead of tensors.
  void run_with_values(KernelExecution& execution) {
    auto [trips, cond] = loop_control(execution);
    std::vector<Value> inputs(body_->inputs().size()), outputs(body_->outputs().size());
    for (std::size_t k = 0; k < carried_; ++k) inputs[k + 2] = flow_input_value(execution, k + 2, input_kinds_[k + 2]);
    for (std::size_t k = 0; k < outer_index_.size(); ++k)
      inputs[carried_ + 2 + k] = flow_input_value(execution, outer_index_[k], outer_kinds_[k]);
    ScanOutputs scanned(label_, scans_);
    int64_t iterations = 0;
    for (; iterations < trips && cond; ++iterations) {
      Tensor number(ElementType::int64, Shape{}), flag(ElementType::boolean, Shape{});
      number.data<int64_t>()[0] = iterations;
      flag.data<bool>()[0] = cond;
      inputs[0] = std::move(number);
      inputs[1] = std::move(flag);
      body_->run(std::span<const Value>(inputs), std::span<Value>(outputs));
      if (!outputs[0].is_tensor() || outputs[0].tensor().element_type() != ElementType::boolean ||
          outputs[0].tensor().element_count() != 1)
        throw InputError(fmt::format("{}: the body's cond output must be one bool, got {}", label_, outputs[0].describe()));
      cond = outputs[0].tensor().data<bool>()[0];
      for (std::size_t k = 0; k < carried_; ++k) inputs[k + 2] = std::move(outputs[k + 1]);
      for (std::size_t k = 0; k < scans_; ++k) scanned.append(k, outputs[1 + carried_ + k].tensor(), iterations);
    }
    for (std::size_t k = 0; k < carried_; ++k) flow_output_value(execution, k, kinds_[k], inputs[k + 2]);
    scanned.write(execution, carried_, types_, iterations);
  }

  std::string label_;
  std::size_t carried_ = 0, scans_ = 0;
  std::unique_ptr<RuntimeSession> body_;
  std::vector<std::size_t> outer_index_;
  std::vector<ValueKind> outer_kinds_, input_kinds_, kinds_;
  bool values_ = false;
  std::vector<ElementType> types_;
  std::vector<Tensor> inputs_, outputs_;
};

// Scan: the body's inputs are (N state values, one slice of each of the M scan inputs, the outer
// values it reads); its outputs (N states, K scan-output slices). Opset 9 on scans along any axis
// in either direction and stacks each scan output along its own axis and direction; opset 8 has a
// leading batch axis (every batch entry scanned on its own, along axis 1) and an optional
// sequence_lens input, and pads scan outputs past an entry's length with zeros.
class ScanKernel final : public Kernel {
 public:
  explicit ScanKernel(const KernelCreateInfo& info) : label_(info.node_label()), batched_(info.opset < 9) {
    const onnx::AttributeProto* attribute = body_attribute(info, "Scan", label_);
    if (!info.has_attribute("num_scan_inputs"))
      throw ModelError(fmt::format("{}: attribute 'num_scan_inputs' is required", label_));
    const int64_t m = info.int_attribute("num_scan_inputs", 0);
    first_ = batched_ ? 1 : 0;  // opset 8's sequence_lens comes first
    const auto given = static_cast<int64_t>(info.node.input_size()) - first_;
    if (m < 1 || m > given)
      throw ModelError(fmt::format("{}: num_scan_inputs {} must be between 1 and the {} state and scan inputs", label_,
                                   m, given));
    scan_inputs_ = static_cast<std::size_t>(m);
    states_ = static_cast<std::size_t>(given - m);
    onnx::GraphProto body = attribute->g();
    if (static_cast<std::size_t>(body.input_size()) != states_ + scan_inputs_)
      throw ModelError(fmt::format("{}: the body has {} input(s); Scan gives it {} state(s) and {} scan slice(s)", label_,
                                   body.input_size(), states_, scan_inputs_));
    if (static_cast<std::size_t>(body.output_size()) < states_)
      throw ModelError(fmt::format("{}: the body has {} output(s) but {} state(s)", label_, body.output_size(), states_));
    scan_outputs_ = static_cast<std::size_t>(body.output_size()) - states_;
    if (static_cast<std::size_t>(info.node.output_size()) != states_ + scan_outputs_)
      throw ModelError(fmt::format("{}: the node has {} output(s); its body gives {} state(s) and {} scan output(s)",
                                   label_, info.node.output_size(), states_, scan_outputs_));
    auto per_value = [&](const char* name, std::size_t count, int64_t fallback) {
      std::vector<int64_t> v = info.has_attribute(name) ? info.ints_attribute(name) : std::vector<int64_t>(count, fallback);
      if (v.size() != count)
        throw ModelError(fmt::format("{}: attribute '{}' has {} value(s) for {} {}", label_, name, v.size(), count,
                                     std::string(name).find("output") != std::string::npos ? "scan outputs" : "scan inputs"));
      return v;
    };
    if (batched_) {
      input_directions_ = per_value("directions", scan_inputs_, 0);
      input_axes_.assign(scan_inputs_, 0);
      output_axes_.assign(scan_outputs_, 0);
      output_directions_.assign(scan_outputs_, 0);
    } else {
      input_axes_ = per_value("scan_input_axes", scan_inputs_, 0);
      input_directions_ = per_value("scan_input_directions", scan_inputs_, 0);
      output_axes_ = per_value("scan_output_axes", scan_outputs_, 0);
      output_directions_ = per_value("scan_output_directions", scan_outputs_, 0);
    }
    for (const auto* v : {&input_directions_, &output_directions_})
      for (int64_t d : *v)
        if (d != 0 && d != 1) throw ModelError(fmt::format("{}: a scan direction must be 0 or 1, not {}", label_, d));
    for (std::size_t k = 0; k < states_ + scan_inputs_; ++k)
      retype_body_input(body, k, info.input_types[first_ + k],
                        fmt::format("{}: input {} has no element type", label_, first_ + k));
    // Scan's states, scan inputs and the outer values its body reads are tensors only.
    for (std::size_t k = 0; k < info.input_kinds.size(); ++k)
      if (info.input_kind(k) == ValueKind::sequence)
        throw UnsupportedError(fmt::format("{}: input {} is a sequence; Scan takes tensors only", label_,
                                           k < static_cast<std::size_t>(info.node.input_size())
                                               ? fmt::format("'{}'", info.node.input(static_cast<int>(k)))
                                               : fmt::format("'{}' (read by the body)",
                                                             info.implicit_inputs[k - static_cast<std::size_t>(info.node.input_size())])));
    OuterValues outer = outer_values(info, body, "body");
    outer_index_ = std::move(outer.input_index);
    body_ = info.subgraphs->build(body, outer.names, outer.types, label_ + " body", outer.kinds);
    const auto& outs = body_->outputs();
    for (std::size_t k = 0; k < outs.size(); ++k) {
      ElementType t = outs[k].element_type;
      if (k < states_ && t == ElementType::undefined) t = info.input_types[first_ + k];
      if (t == ElementType::undefined)
        throw UnsupportedError(fmt::format("{}: the element type of body output {} is not declared", label_, k));
      types_.push_back(t);
    }
    inputs_.resize(body_->inputs().size());
    outputs_.resize(outs.size());
  }

  std::vector<ElementType> inferred_output_types() const override { return types_; }
  std::vector<std::pair<std::string, const RuntimeSession*>> subgraph_sessions() const override {
    return {{label_ + " body", body_.get()}};
  }

  void run(KernelExecution& execution) override {
    for (std::size_t k = 0; k < outer_index_.size(); ++k) {
      const Tensor* v = execution.input(outer_index_[k]);
      inputs_[states_ + scan_inputs_ + k] = v != nullptr ? *v : Tensor();
    }
    if (!batched_) {
      std::vector<Tensor> states, scans;
      for (std::size_t k = 0; k < states_; ++k) states.push_back(execution.required_input(k));
      for (std::size_t k = 0; k < scan_inputs_; ++k) scans.push_back(execution.required_input(states_ + k));
      Result r = scan(states, scans, -1);
      for (std::size_t k = 0; k < states_; ++k) copy_out(execution, k, r.states[k]);
      for (std::size_t k = 0; k < scan_outputs_; ++k) copy_out(execution, states_ + k, r.scans[k]);
    } else {
      run_batched(execution);
    }
    for (std::size_t k = 0; k < inputs_.size(); ++k) inputs_[k] = Tensor();
    for (auto& t : outputs_) t = Tensor();
  }

 private:
  struct Result {
    std::vector<Tensor> states, scans;
  };

  static void copy_out(KernelExecution& execution, std::size_t index, const Tensor& v) {
    Tensor& out = execution.output_for_overwrite(index, v.element_type(), v.shape());
    if (v.byte_size() > 0) std::memcpy(out.raw_data(), v.raw_data(), v.byte_size());
  }

  static int64_t normalized_axis(int64_t axis, int64_t rank, const std::string& label, const char* what, std::size_t k) {
    const int64_t a = axis < 0 ? axis + rank : axis;
    if (a < 0 || a >= rank)
      throw InputError(fmt::format("{}: {} axis {} of {} {} is outside a rank-{} value", label, what, axis, what, k, rank));
    return a;
  }

  // Slice `index` of `t` along `axis`, the axis removed.
  static Tensor take(const Tensor& t, int64_t axis, int64_t index) {
    Shape shape = t.shape();
    const int64_t length = shape[static_cast<std::size_t>(axis)];
    shape.erase(shape.begin() + axis);
    Tensor slice(t.element_type(), shape);
    const std::size_t size = element_size(t.element_type());
    int64_t outer = 1, inner = 1;
    for (int64_t d = 0; d < axis; ++d) outer *= t.shape()[static_cast<std::size_t>(d)];
    for (std::size_t d = static_cast<std::size_t>(axis) + 1; d < t.shape().size(); ++d) inner *= t.shape()[d];
    const auto* src = static_cast<const std::byte*>(t.raw_data());
    auto* dst = static_cast<std::byte*>(slice.raw_data());
    for (int64_t o = 0; o < outer; ++o)
      std::memcpy(dst + static_cast<std::size_t>(o * inner) * size, src + static_cast<std::size_t>((o * length + index) * inner) * size,
                  static_cast<std::size_t>(inner) * size);
    return slice;
  }

  // Runs the body over `length` (or the scan inputs' own length when < 0) slices.
  Result scan(std::vector<Tensor> states, const std::vector<Tensor>& scans, int64_t length) {
    int64_t sequence = -1;
    std::vector<int64_t> axes(scan_inputs_);
    for (std::size_t k = 0; k < scan_inputs_; ++k) {
      axes[k] = normalized_axis(input_axes_[k], scans[k].rank(), label_, "scan input", k);
      const int64_t n = scans[k].shape()[static_cast<std::size_t>(axes[k])];
      if (sequence >= 0 && n != sequence)
        throw InputError(fmt::format("{}: scan input {} has {} steps along axis {} but scan input 0 has {}", label_, k, n,
                                     axes[k], sequence));
      sequence = n;
    }
    const int64_t steps = length >= 0 ? std::min(length, sequence) : sequence;
    std::vector<std::vector<Tensor>> slices(scan_outputs_);
    for (int64_t t = 0; t < steps; ++t) {
      for (std::size_t k = 0; k < states_; ++k) inputs_[k] = std::move(states[k]);
      for (std::size_t k = 0; k < scan_inputs_; ++k)
        inputs_[states_ + k] = take(scans[k], axes[k], input_directions_[k] != 0 ? steps - 1 - t : t);
      body_->run(inputs_, outputs_);
      for (std::size_t k = 0; k < states_; ++k) states[k] = std::move(outputs_[k]);
      for (std::size_t k = 0; k < scan_outputs_; ++k) {
        Tensor& s = outputs_[states_ + k];
        if (t > 0 && s.shape() != slices[k].front().shape())
          throw InputError(fmt::format("{}: scan output {} is {} in step {} but had shape [{}] before", label_, k,
                                       s.describe(), t, fmt::join(slices[k].front().shape(), ", ")));
        slices[k].push_back(std::move(s));
      }
    }
    Result r;
    r.states = std::move(states);
    for (std::size_t k = 0; k < scan_outputs_; ++k) {
      // With no step the slice shape is unknown: the output holds the axis of length 0 only.
      const Shape slice = slices[k].empty() ? Shape{} : slices[k].front().shape();
      const int64_t axis = normalized_axis(output_axes_[k], static_cast<int64_t>(slice.size()) + 1, label_, "scan output", k);
      Shape shape = slice;
      shape.insert(shape.begin() + axis, steps);
      Tensor out(types_[states_ + k], shape);
      const std::size_t size = element_size(out.element_type());
      int64_t outer = 1, inner = 1;
      for (int64_t d = 0; d < axis; ++d) outer *= slice[static_cast<std::size_t>(d)];
      for (std::size_t d = static_cast<std::size_t>(axis); d < slice.size(); ++d) inner *= slice[d];
      auto* dst = static_cast<std::byte*>(out.raw_data());
      for (int64_t t = 0; t < steps; ++t) {
        const int64_t at = output_directions_[k] != 0 ? steps - 1 - t : t;
        const auto* src = static_cast<const std::byte*>(slices[k][static_cast<std::size_t>(t)].raw_data());
        for (int64_t o = 0; o < outer; ++o)
          std::memcpy(dst + static_cast<std::size_t>((o * steps + at) * inner) * size,
                      src + static_cast<std::size_t>(o * inner) * size, static_cast<std::size_t>(inner) * size);
      }
      r.scans.push_back(std::move(out));
    }
    return r;
  }

  // Opset 8: every batch entry scanned on its own (its states and scan inputs without the batch
  // axis), up to its sequence_lens; scan outputs [batch, longest, ...] padded with zeros.
  void run_batched(KernelExecution& execution) {
    std::vector<const Tensor*> states(states_), scans(scan_inputs_);
    int64_t batch = -1, longest = -1;
    auto check_batch = [&](const Tensor& t, const char* what, std::size_t k) {
      if (t.rank() < 1 || (batch >= 0 && t.shape()[0] != batch))
        throw InputError(fmt::format("{}: {} {} is {}; every state and scan input has the batch axis first ({})", label_,
                                     what, k, t.describe(), batch));
      batch = t.shape()[0];
    };
    for (std::size_t k = 0; k < states_; ++k) check_batch(*(states[k] = &execution.required_input(first_ + k)), "state", k);
    for (std::size_t k = 0; k < scan_inputs_; ++k) {
      scans[k] = &execution.required_input(first_ + states_ + k);
      check_batch(*scans[k], "scan input", k);
      if (scans[k]->rank() < 2)
        throw InputError(fmt::format("{}: scan input {} is {}; it needs [batch, sequence, ...]", label_, k, scans[k]->describe()));
      longest = std::max(longest, scans[k]->shape()[1]);
    }
    const Tensor* lens = execution.input(0);
    if (lens != nullptr && lens->element_count() > 0 &&
        (lens->element_type() != ElementType::int64 || lens->element_count() != batch))
      throw InputError(fmt::format("{}: sequence_lens must be int64[{}], got {}", label_, batch, lens->describe()));
    std::vector<Result> results;
    for (int64_t b = 0; b < batch; ++b) {
      std::vector<Tensor> s, x;
      for (std::size_t k = 0; k < states_; ++k) s.push_back(take(*states[k], 0, b));
      for (std::size_t k = 0; k < scan_inputs_; ++k) x.push_back(take(*scans[k], 0, b));
      int64_t length = longest;
      if (lens != nullptr && lens->element_count() > 0) {
        length = lens->data<int64_t>()[b];
        if (length < 0 || length > longest)
          throw InputError(fmt::format("{}: sequence_lens[{}] = {} is outside [0, {}]", label_, b, length, longest));
      }
      results.push_back(scan(std::move(s), x, length));
    }
    // Stack the entries: states [batch, ...], scan outputs [batch, longest, ...] (zeros past a length).
    auto stack = [&](std::size_t index, std::size_t k, bool is_scan) {
      // The shape of the entry that ran the most steps (an entry of 0 steps knows only [0]).
      Shape slice;
      int64_t most = -1;
      for (const auto& r : results) {
        const Tensor& t = is_scan ? r.scans[k] : r.states[k];
        const int64_t steps = is_scan ? t.shape()[0] : 0;
        if (steps > most) {
          most = steps;
          slice = t.shape();
        }
      }
      if (is_scan && !slice.empty()) slice[0] = longest;
      Shape shape{batch};
      shape.insert(shape.end(), slice.begin(), slice.end());
      Tensor& out = execution.output(index, types_[is_scan ? states_ + k : k], shape);
      const std::size_t bytes = static_cast<std::size_t>(out.byte_size() / std::max<int64_t>(1, batch));
      for (int64_t b = 0; b < batch; ++b) {
        const Tensor& t = is_scan ? results[static_cast<std::size_t>(b)].scans[k] : results[static_cast<std::size_t>(b)].states[k];
        if (!is_scan && t.shape() != slice)
          throw InputError(fmt::format("{}: state {} is {} for batch entry {} but {} for another", label_, k, t.describe(),
                                       b, fmt::format("[{}]", fmt::join(slice, ", "))));
        auto* dst = static_cast<std::byte*>(out.raw_data()) + static_cast<std::size_t>(b) * bytes;
        const std::size_t copied = std::min(bytes, t.byte_size());
        if (copied > 0) std::memcpy(dst, t.raw_data(), copied);
        std::memset(dst + copied, 0, bytes - copied);  // past a shorter sequence (the buffer may be reused)
      }
    };
    for (std::size_t k = 0; k < states_; ++k) stack(k, k, false);
    for (std::size_t k = 0; k < scan_outputs_; ++k) stack(states_ + k, k, true);
  }

  std::string label_;
  bool batched_;
  int64_t first_ = 0;
  std::size_t states_ = 0, scan_inputs_ = 0, scan_outputs_ = 0;
  std::vector<int64_t> input_axes_, input_directions_, output_axes_, output_directions_;
  std::unique_ptr<RuntimeSession> body_;
  std::vector<std::size_t> outer_index_;
  std::vector<ElementType> types_;
  std::vector<Tensor> inputs_, outputs_;
};

// SequenceMap: the body runs once per position of the input sequence(s), on that position's
// tensor of every sequence input and on every tensor input as it is (and the outer values it
// reads); output k is the sequence of the body's output k over the positions. Every sequence
// input must have the first one's length.
class SequenceMapKernel final : public Kernel {
 public:
  explicit SequenceMapKernel(const KernelCreateInfo& info) : label_(info.node_label()) {
    const onnx::AttributeProto* attribute = body_attribute(info, "SequenceMap", label_);
    explicit_ = static_cast<std::size_t>(info.node.input_size());
    if (explicit_ < 1 || info.input_kind(0) != ValueKind::sequence)
      throw ModelError(fmt::format("{}: input 0 (input_sequence) must be a sequence", label_));
    onnx::GraphProto body = attribute->g();
    if (static_cast<std::size_t>(body.input_size()) != explicit_)
      throw ModelError(fmt::format("{}: the body has {} input(s) but the node {}", label_, body.input_size(), explicit_));
    if (body.output_size() != info.node.output_size())
      throw ModelError(fmt::format("{}: the body has {} output(s) but the node {}", label_, body.output_size(),
                                   info.node.output_size()));
    for (std::size_t k = 0; k < explicit_; ++k) {
      if (info.node.input(static_cast<int>(k)).empty())
        throw ModelError(fmt::format("{}: input {} is omitted; SequenceMap takes no optional input", label_, k));
      // Each body input takes one tensor: a sequence input's element at the position, or a tensor input.
      onnx::TypeProto* declared = body.mutable_input(static_cast<int>(k))->mutable_type();
      declared->Clear();
      retype_body_input(body, k, info.input_types[k], fmt::format("{}: input {} has no element type", label_, k));
      input_kinds_.push_back(info.input_kind(k));
    }
    OuterValues outer = outer_values(info, body, "body");
    outer_index_ = std::move(outer.input_index);
    outer_kinds_ = outer.kinds;
    body_ = info.subgraphs->build(body, outer.names, outer.types, label_ + " body", outer.kinds);
    for (const ValueInfo& out : body_->outputs()) {
      if (out.kind != ValueKind::tensor || out.optional)
        throw UnsupportedError(fmt::format("{}: body output '{}' is not a tensor; SequenceMap collects tensors", label_,
                                           out.name));
      if (out.element_type == ElementType::undefined)
        throw UnsupportedError(fmt::format("{}: the element type of body output '{}' is not declared", label_, out.name));
      types_.push_back(out.element_type);
    }
  }

  std::vector<ElementType> inferred_output_types() const override { return types_; }
  std::vector<ValueKind> output_kinds() const override {
    return std::vector<ValueKind>(types_.size(), ValueKind::sequence);
  }
  std::vector<std::pair<std::string, const RuntimeSession*>> subgraph_sessions() const override {
    return {{label_ + " body", body_.get()}};
  }

  void run(KernelExecution& execution) override {
    const std::size_t length = execution.required_sequence_input(0).size();
    std::vector<Value> inputs(body_->inputs().size()), outputs(body_->outputs().size());
    for (std::size_t k = 0; k < explicit_; ++k) {
      if (input_kinds_[k] == ValueKind::sequence) {
        const TensorSequence& s = execution.required_sequence_input(k);
        if (s.size() != length)
          throw InputError(fmt::format("{}: input {} is {} but input_sequence has {} tensor(s); every sequence input "
                                       "needs the same length", label_, k, s.describe(), length));
      } else {
        inputs[k] = execution.required_input(k);
      }
    }
    for (std::size_t k = 0; k < outer_index_.size(); ++k)
      inputs[explicit_ + k] = flow_input_value(execution, outer_index_[k], outer_kinds_[k]);
    std::vector<std::vector<Tensor>> results(types_.size());
    for (std::size_t position = 0; position < length; ++position) {
      for (std::size_t k = 0; k < explicit_; ++k)
        if (input_kinds_[k] == ValueKind::sequence) inputs[k] = execution.sequence_input(k)->at(position);
      body_->run(std::span<const Value>(inputs), std::span<Value>(outputs));
      for (std::size_t o = 0; o < results.size(); ++o) {
        Tensor& t = outputs[o].tensor();
        // A body output that is one of its inputs shares the caller's storage: copied.
        results[o].push_back(t.exclusively_owned() ? std::move(t) : t.clone());
      }
    }
    for (std::size_t o = 0; o < results.size(); ++o)
      execution.set_sequence_output(o, TensorSequence(types_[o], std::move(results[o])));
  }

 private:
  std::string label_;
  std::size_t explicit_ = 0;
  std::unique_ptr<RuntimeSession> body_;
  std::vector<ValueKind> input_kinds_, outer_kinds_;
  std::vector<std::size_t> outer_index_;
  std::vector<ElementType> types_;
};

}  // namespace

void register_control_flow_kernels(KernelTable& table) {
  // cond is bool in every opset; 13 and 16 add sequence and optional outputs (value.h).
  KernelDef def = make_def("If", {1}, ElementType::boolean, TuningSchema{elementwise_key("If", ElementType::boolean, 1), {}});
  def.create = [](const KernelCreateInfo& info) -> std::unique_ptr<Kernel> { return std::make_unique<IfKernel>(info); };
  table.add(std::move(def));
  // Loop selects by M (int64) or, when M is omitted, by cond (bool). Opset 13 and 16 add sequence
  // and optional loop-carried values (value.h), run through the body with values.
  for (ElementType type : {ElementType::int64, ElementType::boolean}) {
    KernelDef loop = make_def("Loop", {1}, type, TuningSchema{elementwise_key("Loop", type, 1), {}});
    loop.create = [](const KernelCreateInfo& info) -> std::unique_ptr<Kernel> { return std::make_unique<LoopKernel>(info); };
    table.add(std::move(loop));
  }
  // Scan selects by its first state or scan input; opset 8's sequence_lens (int64, often omitted)
  // comes first, so every type a state or scan input can have is registered.
  for (ElementType type : {ElementType::float32, ElementType::float64, ElementType::float16, ElementType::bfloat16,
                           ElementType::int8, ElementType::int16, ElementType::int32, ElementType::int64,
                           ElementType::uint8, ElementType::uint16, ElementType::uint32, ElementType::uint64,
                           ElementType::boolean}) {
    KernelDef scan = make_def("Scan", {8}, type, TuningSchema{elementwise_key("Scan", type, 1), {}});
    scan.create = [](const KernelCreateInfo& info) -> std::unique_ptr<Kernel> { return std::make_unique<ScanKernel>(info); };
    table.add(std::move(scan));
  }
  // SequenceMap selects by its input sequence's element type.
  for (ElementType type : supported_element_types()) {
    KernelDef map = make_def("SequenceMap", {17}, type, TuningSchema{elementwise_key("SequenceMap", type, 1), {}});
    map.create = [](const KernelCreateInfo& info) -> std::unique_ptr<Kernel> {
      return std::make_unique<SequenceMapKernel>(info);
    };
    table.add(std::move(map));
  }
}

}  // namespace onnx_light::runtime::kernels
