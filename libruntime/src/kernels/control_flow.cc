// Control flow: If and Loop. Each branch or body is a session of its own (built once, when the node is created,
// through the enclosing session's SubgraphBuilder), whose graph inputs are the outer values the
// branch reads; the node's implicit inputs carry those values in (kernel.h).
#include <algorithm>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
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
  }
  return outer;
}

// One branch: its session and, per graph input of that session, the index of the node input
// (explicit inputs first, then implicit ones) holding the value.
struct Branch {
  std::string name;  // "If node 'x' then_branch"
  std::unique_ptr<RuntimeSession> session;
  std::vector<std::size_t> input_index;
  std::vector<Tensor> inputs, outputs;  // reused across runs
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
      types_.push_back(t);
    }
  }

  std::vector<ElementType> inferred_output_types() const override { return types_; }
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
    branch.session = info.subgraphs->build(attribute->g(), outer.names, outer.types, branch.name);
    branch.inputs.resize(outer.names.size());
    branch.outputs.resize(branch.session->outputs().size());
    return branch;
  }

  Branch then_, else_;
  std::vector<ElementType> types_;
  std::string_view taken_;
};

// Loop: the body session's inputs are (iteration_num, cond, N loop-carried values, the outer
// values it reads); its outputs (cond, N loop-carried values, K scan outputs). Loop-carried values
// move from one iteration's outputs to the next one's inputs without a copy; scan outputs are
// appended per iteration and stacked on a new axis 0 at the end.
class LoopKernel final : public Kernel {
 public:
  explicit LoopKernel(const KernelCreateInfo& info) : label_(info.node_label()) {
    if (info.subgraphs == nullptr)
      throw UnsupportedError(fmt::format("{}: Loop needs the enclosing session to build its body", label_));
    const onnx::AttributeProto* attribute = info.attribute("body");
    if (attribute == nullptr || !attribute->has_g())
      throw ModelError(fmt::format("{}: attribute 'body' (a graph) is missing", label_));
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
      auto* tensor_type = body.mutable_input(static_cast<int>(k))->mutable_type()->mutable_tensor_type();
      const ElementType type = k == 0 ? ElementType::int64 : k == 1 ? ElementType::boolean : info.input_types[k];
      if (type == ElementType::undefined)
        throw UnsupportedError(fmt::format("{}: loop-carried value {} has no element type", label_, k - 2));
      tensor_type->set_elem_type(static_cast<int32_t>(type));
      tensor_type->clear_shape();
    }
    OuterValues outer = outer_values(info, body, "body");
    outer_index_ = std::move(outer.input_index);
    body_ = info.subgraphs->build(body, outer.names, outer.types, label_ + " body");
    const auto& outs = body_->outputs();
    for (std::size_t k = 1; k < outs.size(); ++k) {
      ElementType t = outs[k].element_type;
      if (k <= carried_ && t == ElementType::undefined) t = info.input_types[k + 1];
      if (t == ElementType::undefined)
        throw UnsupportedError(fmt::format("{}: the element type of body output {} is not declared", label_, k));
      types_.push_back(t);
    }
    inputs_.resize(body_->inputs().size());
    outputs_.resize(outs.size());
    inputs_[0] = Tensor(ElementType::int64, Shape{});
    inputs_[1] = Tensor(ElementType::boolean, Shape{});
  }

  std::vector<ElementType> inferred_output_types() const override { return types_; }
  std::vector<std::pair<std::string, const RuntimeSession*>> subgraph_sessions() const override {
    return {{label_ + " body", body_.get()}};
  }

  void run(KernelExecution& execution) override {
    const Tensor* trip = execution.input(0);
    const Tensor* cond_in = execution.input(1);
    if (trip != nullptr && trip->element_count() != 1)
      throw InputError(fmt::format("{}: M must hold one element, got {}", label_, trip->describe()));
    if (cond_in != nullptr && cond_in->element_count() != 1)
      throw InputError(fmt::format("{}: cond must hold one element, got {}", label_, cond_in->describe()));
    const int64_t trips = trip != nullptr ? trip->data<int64_t>()[0] : std::numeric_limits<int64_t>::max();
    bool cond = cond_in != nullptr ? cond_in->data<bool>()[0] : true;
    for (std::size_t k = 0; k < carried_; ++k) {
      const Tensor* v = execution.input(k + 2);
      inputs_[k + 2] = v != nullptr ? *v : Tensor();
    }
    for (std::size_t k = 0; k < outer_index_.size(); ++k) {
      const Tensor* v = execution.input(outer_index_[k]);
      inputs_[carried_ + 2 + k] = v != nullptr ? *v : Tensor();
    }
    std::vector<std::vector<std::byte>> scanned(scans_);
    std::vector<Shape> scan_shapes(scans_);
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
      for (std::size_t k = 0; k < scans_; ++k) {
        const Tensor& s = outputs_[1 + carried_ + k];
        if (iterations == 0) scan_shapes[k] = s.shape();
        else if (s.shape() != scan_shapes[k])
          throw InputError(fmt::format("{}: scan output {} is {} in iteration {} but had shape [{}] before", label_, k,
                                       s.describe(), iterations, fmt::join(scan_shapes[k], ", ")));
        const auto* bytes = static_cast<const std::byte*>(s.raw_data());
        scanned[k].insert(scanned[k].end(), bytes, bytes + s.byte_size());
      }
    }
    for (std::size_t k = 0; k < carried_; ++k) {
      const Tensor& v = inputs_[k + 2];
      Tensor& out = execution.output_for_overwrite(k, v.element_type(), v.shape());
      if (v.byte_size() > 0) std::memcpy(out.raw_data(), v.raw_data(), v.byte_size());
    }
    for (std::size_t k = 0; k < scans_; ++k) {
      Shape shape{iterations};
      shape.insert(shape.end(), scan_shapes[k].begin(), scan_shapes[k].end());
      Tensor& out = execution.output_for_overwrite(carried_ + k, types_[carried_ + k], shape);
      if (!scanned[k].empty()) std::memcpy(out.raw_data(), scanned[k].data(), scanned[k].size());
    }
    // Borrowed values go back to their owners.
    for (std::size_t k = 2; k < inputs_.size(); ++k) inputs_[k] = Tensor();
    for (auto& t : outputs_) t = Tensor();
  }

 private:
  std::string label_;
  std::size_t carried_ = 0, scans_ = 0;
  std::unique_ptr<RuntimeSession> body_;
  std::vector<std::size_t> outer_index_;
  std::vector<ElementType> types_;
  std::vector<Tensor> inputs_, outputs_;
};

}  // namespace

void register_control_flow_kernels(KernelTable& table) {
  // cond is bool in every opset; 16 only adds optional and sequence outputs, which the runtime
  // refuses when a branch produces one (its sessions hold tensors only).
  KernelDef def = make_def("If", {1}, ElementType::boolean, TuningSchema{elementwise_key("If", ElementType::boolean, 1), {}});
  def.create = [](const KernelCreateInfo& info) -> std::unique_ptr<Kernel> { return std::make_unique<IfKernel>(info); };
  table.add(std::move(def));
  // Loop selects by M (int64) or, when M is omitted, by cond (bool). Opset 13 and 16 only add
  // sequence and optional loop-carried values, which the body session refuses.
  for (ElementType type : {ElementType::int64, ElementType::boolean}) {
    KernelDef loop = make_def("Loop", {1}, type, TuningSchema{elementwise_key("Loop", type, 1), {}});
    loop.create = [](const KernelCreateInfo& info) -> std::unique_ptr<Kernel> { return std::make_unique<LoopKernel>(info); };
    table.add(std::move(loop));
  }
}

}  // namespace onnx_light::runtime::kernels
