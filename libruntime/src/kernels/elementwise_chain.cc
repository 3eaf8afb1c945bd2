// com.onnx_light ElementwiseChain (float32): consecutive elementwise nodes on one shape, which the
// graph optimizer fuses (optimizer/elementwise_chain.cc), run as a single pass. Each tile of the
// chain's input is loaded once, every step applied while it sits in L1, and stored once, instead
// of one pass over memory per node. Node contract:
//   inputs:    X, then the binary steps' other operands (each X's element count, or one element)
//   ops:       strings, one per step: Add, Sub, Mul, Div (binary); Relu, Clip, LeakyRelu, Sigmoid,
//              HardSigmoid, HardSwish, Tanh, Abs, Neg, Sqrt, Exp (unary)
//   operands:  ints, one per step: the input index of a binary step's other operand (0 is X
//              itself, as in x * Sigmoid(x)); -1 for a unary step
//   reversed:  ints, one per step: 1 when the chain's value is the right-hand side (b - v, b / v)
//   params:    floats, two per step: Clip {min, max}, LeakyRelu {alpha, 0}, HardSigmoid {alpha, beta}
// Each step computes in float what the ONNX operator's own kernel computes (the activations share
// kernels/epilogue.h), so the chain equals the unfused nodes.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "kernels/elementwise.h"
#include "kernels/epilogue.h"
#include "kernels/kernel_families.h"
#include "kernels/kernel_util.h"
#include "onnx_light/runtime/error.h"

namespace onnx_light::runtime::kernels {

namespace {

enum class StepKind { add, sub, mul, div, abs, neg, sqrt, exp, activation };

struct ChainStep {
  StepKind kind = StepKind::activation;
  Epilogue activation;  // for StepKind::activation
  int operand = -1;     // binary steps: input index of the other operand
  bool reversed = false;
};

bool is_binary(StepKind k) { return k == StepKind::add || k == StepKind::sub || k == StepKind::mul || k == StepKind::div; }

ChainStep parse_step(const std::string& op, float alpha, float beta, const std::string& label, std::size_t index) {
  static constexpr std::pair<std::string_view, StepKind> kPlain[] = {
      {"Add", StepKind::add}, {"Sub", StepKind::sub}, {"Mul", StepKind::mul},   {"Div", StepKind::div},
      {"Abs", StepKind::abs}, {"Neg", StepKind::neg}, {"Sqrt", StepKind::sqrt}, {"Exp", StepKind::exp},
  };
  static constexpr std::string_view kActivations[] = {"Relu", "Clip", "LeakyRelu", "Sigmoid", "HardSigmoid", "HardSwish", "Tanh"};
  ChainStep s;
  for (const auto& [name, kind] : kPlain)
    if (op == name) {
      s.kind = kind;
      return s;
    }
  if (std::find(std::begin(kActivations), std::end(kActivations), op) == std::end(kActivations))
    throw ModelError(fmt::format("{}: attribute 'ops' step {} = \"{}\" is not one of Add, Sub, Mul, Div, Abs, Neg, Sqrt, "
                                 "Exp, Relu, Clip, LeakyRelu, Sigmoid, HardSigmoid, HardSwish, Tanh",
                                 label, index, op));
  std::vector<float> params;
  if (op == "Clip" || op == "HardSigmoid") params = {alpha, beta};
  if (op == "LeakyRelu") params = {alpha};
  s.activation = parse_epilogue(op, params, label);
  return s;
}

class ElementwiseChainKernel final : public ThresholdKernel {
 public:
  explicit ElementwiseChainKernel(const KernelCreateInfo& info) : ThresholdKernel(kDefaultMinimumElements) {
    check_attributes(info, {"ops", "operands", "reversed", "params"});
    const std::string label = info.node_label();
    std::vector<std::string> ops;
    if (const auto* a = info.attribute("ops")) ops.assign(a->strings().begin(), a->strings().end());
    const std::vector<int64_t> operands = info.ints_attribute("operands");
    const std::vector<int64_t> reversed = info.ints_attribute("reversed");
    std::vector<float> params;
    if (const auto* a = info.attribute("params")) params.assign(a->floats().begin(), a->floats().end());
    if (ops.empty()) throw ModelError(fmt::format("{}: attribute 'ops' is missing or empty", label));
    if (operands.size() != ops.size() || reversed.size() != ops.size() || params.size() != 2 * ops.size())
      throw ModelError(fmt::format("{}: attributes 'operands' ({}), 'reversed' ({}) and 'params' ({}) must have one, one "
                                   "and two values per step of 'ops' ({})",
                                   label, operands.size(), reversed.size(), params.size(), ops.size()));
    const auto inputs = static_cast<int64_t>(info.node.input_size());
    for (std::size_t i = 0; i < ops.size(); ++i) {
      ChainStep s = parse_step(ops[i], params[2 * i], params[2 * i + 1], label, i);
      if (is_binary(s.kind)) {
        if (operands[i] < 0 || operands[i] >= inputs)
          throw ModelError(fmt::format("{}: step {} ({}) reads input {}, but the node has {} inputs", label, i, ops[i],
                                       operands[i], inputs));
        s.operand = static_cast<int>(operands[i]);
        s.reversed = reversed[i] != 0;
      } else if (operands[i] != -1) {
        throw ModelError(fmt::format("{}: step {} ({}) is unary, its 'operands' entry must be -1", label, i, ops[i]));
      }
      steps_.push_back(s);
    }
    if (steps_.size() > kMaxSteps)
      throw UnsupportedError(fmt::format("{}: {} steps; at most {} are supported", label, steps_.size(), kMaxSteps));
  }

  // Not when a step reads X itself (x * Sigmoid(x)): the tile holding the chain's value is X's.
  bool may_overwrite_input0() const override {
    return std::none_of(steps_.begin(), steps_.end(), [](const ChainStep& s) { return is_binary(s.kind) && s.operand == 0; });
  }

  void run(KernelExecution& execution) override {
    const Tensor& x = execution.required_input(0);
    const int64_t n = x.element_count();
    // Per step: the operand's data and whether it is one value broadcast over the chain.
    struct Bound {
      const float* data = nullptr;
      bool scalar = false;
    };
    Bound bound[kMaxSteps];
    for (std::size_t i = 0; i < steps_.size(); ++i) {
      if (!is_binary(steps_[i].kind)) continue;
      const Tensor& b = execution.required_input(static_cast<std::size_t>(steps_[i].operand));
      check_input_type(execution, static_cast<std::size_t>(steps_[i].operand), b, ElementType::float32);
      if (b.element_count() != n && b.element_count() != 1)
        throw InputError(fmt::format("{}: input {} has {} elements; a chain operand has X's {} or one", execution.label(),
                                     steps_[i].operand, b.element_count(), n));
      bound[i] = {b.data<float>(), b.element_count() == 1 && n != 1};
    }
    Tensor& y = execution.output_for_overwrite(0, ElementType::float32, x.shape());
    const float* in = x.data<float>();
    float* out = y.data<float>();
    execution.parallel_for(n, kTile, admitted(n, execution), [&](int64_t begin, int64_t end) {
      for (int64_t t = begin; t < end; t += kTile) {
        const int64_t len = std::min(kTile, end - t);
        float* v = out + t;
        if (v != in + t) std::copy(in + t, in + t + len, v);  // in place (the session may alias Y to X): nothing to move
        for (std::size_t i = 0; i < steps_.size(); ++i) apply(steps_[i], bound[i], t, v, len);
      }
    });
  }

 private:
  static constexpr std::size_t kMaxSteps = 32;
  static constexpr int64_t kTile = 512;  // 2 KiB: the tile and its operands stay in L1 across steps

  template <typename Bound>
  static void apply(const ChainStep& s, const Bound& b, int64_t at, float* v, int64_t len) {
    switch (s.kind) {
      case StepKind::add: return binary(b, at, v, len, s.reversed, [](float l, float r) { return l + r; });
      case StepKind::sub: return binary(b, at, v, len, s.reversed, [](float l, float r) { return l - r; });
      case StepKind::mul: return binary(b, at, v, len, s.reversed, [](float l, float r) { return l * r; });
      case StepKind::div: return binary(b, at, v, len, s.reversed, [](float l, float r) { return l / r; });
      case StepKind::abs: return unary(v, len, [](float a) { return std::fabs(a); });
      case StepKind::neg: return unary(v, len, [](float a) { return -a; });
      case StepKind::sqrt: return unary(v, len, [](float a) { return std::sqrt(a); });
      case StepKind::exp: return unary(v, len, [](float a) { return std::exp(a); });
      case StepKind::activation: return apply_activation(s.activation, v, len);
    }
  }

  template <typename F>
  static void unary(float* v, int64_t len, F f) {
    for (int64_t i = 0; i < len; ++i) v[i] = f(v[i]);
  }

  template <typename Bound, typename F>
  static void binary(const Bound& b, int64_t at, float* v, int64_t len, bool reversed, F f) {
    if (b.scalar) {
      const float c = b.data[0];
      if (reversed)
        for (int64_t i = 0; i < len; ++i) v[i] = f(c, v[i]);
      else
        for (int64_t i = 0; i < len; ++i) v[i] = f(v[i], c);
      return;
    }
    const float* o = b.data + at;
    if (reversed)
      for (int64_t i = 0; i < len; ++i) v[i] = f(o[i], v[i]);
    else
      for (int64_t i = 0; i < len; ++i) v[i] = f(v[i], o[i]);
  }

  std::vector<ChainStep> steps_;
};

}  // namespace

void register_elementwise_chain_kernels(KernelTable& table) {
  constexpr ElementType type = ElementType::float32;
  KernelDef def = make_def("ElementwiseChain", {1}, type,
                           parallel_threshold_schema(elementwise_key("ElementwiseChain", type, 1), kDefaultMinimumElements));
  def.domain = std::string(kFusedDomain);
  def.create = [](const KernelCreateInfo& info) -> std::unique_ptr<Kernel> {
    return std::make_unique<ElementwiseChainKernel>(info);
  };
  def.calibration_workload = nullptr;  // the one-node calibration models are ai.onnx
  table.add(std::move(def));
}

}  // namespace onnx_light::runtime::kernels
