// Control flow: If. Each branch is a session of its own (built once, when the node is created,
// through the enclosing session's SubgraphBuilder), whose graph inputs are the outer values the
// branch reads; the node's implicit inputs carry those values in (kernel.h).
#include <algorithm>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "kernel_families.h"
#include "kernel_util.h"
#include "onnx_light/runtime/error.h"
#include "onnx_light/runtime/session.h"
#include "subgraph.h"

namespace onnx_light::runtime::kernels {

namespace {

// One branch: its session and, per graph input of that session, the index of the node input
// (explicit inputs first, then implicit ones) holding the value.
struct Branch {
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
    const std::vector<std::string> outer = free_variables(attribute->g());
    std::vector<ElementType> types;
    const std::size_t explicit_count = static_cast<std::size_t>(info.node.input_size());
    for (const auto& value : outer) {
      auto it = std::find(info.implicit_inputs.begin(), info.implicit_inputs.end(), value);
      if (it == info.implicit_inputs.end())
        throw ModelError(fmt::format("{}: {} reads '{}', which no enclosing scope defines", info.node_label(), name, value));
      const std::size_t index = explicit_count + static_cast<std::size_t>(it - info.implicit_inputs.begin());
      branch.input_index.push_back(index);
      types.push_back(info.input_types[index]);
    }
    branch.session = info.subgraphs->build(attribute->g(), outer, types, fmt::format("{} {}", info.node_label(), name));
    branch.inputs.resize(outer.size());
    branch.outputs.resize(branch.session->outputs().size());
    return branch;
  }

  Branch then_, else_;
  std::vector<ElementType> types_;
  std::string_view taken_;
};

}  // namespace

void register_control_flow_kernels(KernelTable& table) {
  // cond is bool in every opset; 16 only adds optional and sequence outputs, which the runtime
  // refuses when a branch produces one (its sessions hold tensors only).
  KernelDef def = make_def("If", {1}, ElementType::boolean, TuningSchema{elementwise_key("If", ElementType::boolean, 1), {}});
  def.create = [](const KernelCreateInfo& info) -> std::unique_ptr<Kernel> { return std::make_unique<IfKernel>(info); };
  table.add(std::move(def));
}

}  // namespace onnx_light::runtime::kernels
