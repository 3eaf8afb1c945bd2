#pragma once
// The shared elementwise framework: a new unary or binary operator is a functor and one
// registration line. Every kernel here has one tuning parameter, parallel.minimum_elements.
#include <algorithm>
#include <cstdint>
#include <memory>
#include <type_traits>
#include <string>
#include <utility>

#include "kernels/broadcast.h"
#include "kernels/element_traits.h"
#include "onnx_light/runtime/kernel.h"
#include "onnx_light/runtime/kernel_table.h"

namespace onnx_light::runtime::kernels {

inline constexpr int kLatestOpset = 1 << 30;
inline constexpr int64_t kDefaultMinimumElements = 32768;

struct OpsetRange {
  int since = 1;
  int end = kLatestOpset;
};

// Block boundaries on cache lines, so that two threads never write one line.
template <typename T>
constexpr int64_t cache_line_grain() {
  return std::max<int64_t>(1, 64 / static_cast<int64_t>(sizeof(T)));
}

// Base of kernels whose only tuning value is the parallel threshold.
class ThresholdKernel : public Kernel {
 public:
  explicit ThresholdKernel(int64_t minimum_elements) : minimum_elements_(minimum_elements) {}
  void apply_tuning(const TuningValues& values) override;
  int64_t minimum_elements() const { return minimum_elements_; }

 protected:
  int admitted(int64_t n, const KernelExecution& execution) const {
    return execution.admitted_threads(n, minimum_elements_);
  }
  int64_t minimum_elements_;
};

// An op whose parameters come from inputs read at run time (Clip's bounds) has
// `Op bind(const KernelExecution&) const`; the kernel binds once per run, before the loop.
template <typename Op>
Op bind_op(const Op& op, const KernelExecution& execution) {
  if constexpr (requires { op.bind(execution); }) return op.bind(execution);
  else return op;
}

// y = op(x), same shape. Op maps compute_t<In> to compute_t<Out>.
template <typename In, typename Out, typename Op>
class UnaryKernel final : public ThresholdKernel {
 public:
  UnaryKernel(Op op, int64_t minimum_elements) : ThresholdKernel(minimum_elements), op_(std::move(op)) {}
  bool may_overwrite_input0() const override { return true; }
  void run(KernelExecution& execution) override {
    const Tensor& x = execution.required_input(0);
    const Op op = bind_op(op_, execution);
    Tensor& y = execution.output_for_overwrite(0, ElementTraits<Out>::type, x.shape());
    const In* in = x.data<In>();
    Out* out = y.data<Out>();
    const int64_t n = x.element_count();
    execution.parallel_for(n, cache_line_grain<Out>(), admitted(n, execution), [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) out[i] = store<Out>(op(load<In>(in[i])));
    });
  }

 private:
  Op op_;
};

// Throws InputError when an input's element type is not the one the kernel was built for.
void check_input_type(const KernelExecution& execution, std::size_t index, const Tensor& t, ElementType expected);

// y = op(a, b) with numpy broadcasting. Op maps (compute_t<In>, compute_t<InB>) to compute_t<Out>;
// InB differs from In only for mixed-type operators (Pow's exponent).
template <typename In, typename Out, typename Op, typename InB = In>
class BinaryKernel final : public ThresholdKernel {
 public:
  BinaryKernel(Op op, int64_t minimum_elements) : ThresholdKernel(minimum_elements), op_(std::move(op)) {}
  // In place only when input 0 has the output's shape (the session checks), so it is read at the
  // output's own index in every path below.
  bool may_overwrite_input0() const override { return std::is_same_v<In, Out>; }
  void run(KernelExecution& execution) override {
    const Tensor& a = execution.required_input(0);
    const Tensor& b = execution.required_input(1);
    check_input_type(execution, 1, b, ElementTraits<InB>::type);
    const Shape* inputs[] = {&a.shape(), &b.shape()};
    const bool same = a.shape() == b.shape();
    if (!same) broadcast_.update(inputs, execution.label());
    const Shape& shape = same ? a.shape() : broadcast_.shape();
    Tensor& y = execution.output_for_overwrite(0, ElementTraits<Out>::type, shape);
    const In* pa = a.data<In>();
    const InB* pb = b.data<InB>();
    Out* out = y.data<Out>();
    const int64_t n = y.element_count();
    const int64_t na = a.element_count();
    const int64_t nb = b.element_count();
    const int64_t grain = cache_line_grain<Out>();
    const int threads = admitted(n, execution);
    if (na == n && nb == n) {
      execution.parallel_for(n, grain, threads, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) out[i] = store<Out>(op_(load<In>(pa[i]), load<InB>(pb[i])));
      });
    } else if (nb == 1 && na == n) {
      const auto scalar = load<InB>(pb[0]);
      execution.parallel_for(n, grain, threads, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) out[i] = store<Out>(op_(load<In>(pa[i]), scalar));
      });
    } else if (na == 1 && nb == n) {
      const auto scalar = load<In>(pa[0]);
      execution.parallel_for(n, grain, threads, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) out[i] = store<Out>(op_(scalar, load<InB>(pb[i])));
      });
    } else if (n > 0) {
      const BroadcastPlan& plan = broadcast_.plan();
      execution.parallel_for(n, grain, threads, [&](int64_t begin, int64_t end) {
        walk_broadcast<2>(plan, begin, end, [&](int64_t o, const int64_t* off, int64_t count, const int64_t* step) {
          const In* ra = pa + off[0];
          const InB* rb = pb + off[1];
          for (int64_t i = 0; i < count; ++i) out[o + i] = store<Out>(op_(load<In>(ra[i * step[0]]), load<InB>(rb[i * step[1]])));
        });
      });
    } else {
      execution.parallel_for(0, grain, 1, [](int64_t, int64_t) {});
    }
  }

 private:
  Op op_;
  CachedBroadcast broadcast_;
};

// The schema of an elementwise kernel variant.
TuningKey elementwise_key(const std::string& op_type, ElementType type, int tuning_abi,
                          const std::string& implementation = "portable");

struct ElementwiseSpec {
  std::string op_type;
  OpsetRange opsets;
  int tuning_abi = kTuningAbi;
  int64_t default_minimum_elements = kDefaultMinimumElements;
};

// One-node calibration models: a unary op over [n]; a binary op over [n] and [n] (variant 0),
// [n] and a scalar (1), or [r, 1] and [1, c] with r * c ~ n (2).
CalibrationWorkloadFunction unary_workload(const std::string& op_type, ElementType type, int opset);
CalibrationWorkloadFunction binary_workload(const std::string& op_type, ElementType type, int opset);

// What every functor-kernel definition shares: identity, threshold schema, the kernel built from
// MakeOp's functor, its calibration workload and (when it differs) its output type.
// MakeOp: (const KernelCreateInfo&) -> functor; lets attributes (alpha, ...) reach the functor.
template <typename In, typename Out, template <typename, typename, typename> class KernelT, typename MakeOp>
KernelDef functor_kernel_def(const ElementwiseSpec& spec, MakeOp make_op,
                             CalibrationWorkloadFunction (*workload)(const std::string&, ElementType, int)) {
  KernelDef def;
  def.op_type = spec.op_type;
  def.since_version = spec.opsets.since;
  def.end_version = spec.opsets.end;
  def.element_type = ElementTraits<In>::type;
  def.schema = parallel_threshold_schema(elementwise_key(spec.op_type, def.element_type, spec.tuning_abi),
                                         spec.default_minimum_elements);
  const int64_t fallback = spec.default_minimum_elements;
  def.create = [make_op, fallback](const KernelCreateInfo& info) -> std::unique_ptr<Kernel> {
    auto op = make_op(info);
    return std::make_unique<KernelT<In, Out, decltype(op)>>(std::move(op), fallback);
  };
  def.calibration_workload = workload(spec.op_type, def.element_type, std::min(spec.opsets.end, std::max(spec.opsets.since, 17)));
  if constexpr (!std::is_same_v<In, Out>)
    def.output_types = [](const KernelCreateInfo&) { return std::vector<ElementType>{ElementTraits<Out>::type}; };
  return def;
}

template <typename In, typename Out = In, typename MakeOp>
void add_unary(KernelTable& table, const ElementwiseSpec& spec, MakeOp make_op) {
  table.add(functor_kernel_def<In, Out, UnaryKernel>(spec, std::move(make_op), unary_workload));
}

// BinaryKernel with its operands of one type, as a three-parameter template (clang 14 does not
// match a template with a defaulted fourth parameter to a three-parameter template parameter).
template <typename In, typename Out, typename Op>
using SameTypeBinaryKernel = BinaryKernel<In, Out, Op>;

template <typename In, typename Out = In, typename MakeOp>
void add_binary(KernelTable& table, const ElementwiseSpec& spec, MakeOp make_op) {
  KernelDef def = functor_kernel_def<In, Out, SameTypeBinaryKernel>(spec, std::move(make_op), binary_workload);
  def.calibration_variants = 3;
  table.add(std::move(def));
}

// Wraps an attribute-free functor as a MakeOp.
template <typename Op>
auto stateless(Op op) {
  return [op](const KernelCreateInfo&) { return op; };
}

}  // namespace onnx_light::runtime::kernels
