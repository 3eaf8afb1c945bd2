// NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss (inference operators of ai.onnx: scoring
// a model's output against labels). Input [N, C, d1, ...], target [N, d1, ...] of class indices;
// optional per-class weights; ignore_index masks entries out (loss 0, weight 0); reduction none,
// sum or mean (the weighted mean: the sum divided by the weights of the entries not ignored).
// Sums in double. A target outside [0, C) that is not ignore_index is an InputError.
#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "kernels/element_traits.h"
#include "kernels/elementwise.h"
#include "kernels/kernel_families.h"
#include "kernels/kernel_util.h"
#include "onnx_light/runtime/error.h"

namespace onnx_light::runtime::kernels {

namespace {

enum class LossReduction { none, sum, mean };

LossReduction loss_reduction(const KernelCreateInfo& info) {
  const std::string r = info.string_attribute("reduction", "mean");
  if (r == "none") return LossReduction::none;
  if (r == "sum") return LossReduction::sum;
  if (r == "mean") return LossReduction::mean;
  throw ModelError(fmt::format("{}: reduction '{}' is not one of none, sum, mean", info.node_label(), r));
}

// The loss of log-probabilities `log_prob` ([N, C, D] flattened, read through `at`) against
// `target` ([N, D]); writes per-entry losses into `out` (reduction none) or returns the reduced one.
template <typename T, typename At>
double nll(At&& at, const std::vector<int64_t>& target, const Tensor* weight, int64_t n, int64_t c, int64_t d,
           std::optional<int64_t> ignore, LossReduction reduction, T* out, const std::string& label) {
  const T* w = weight != nullptr ? weight->data<T>() : nullptr;
  double total = 0, weights = 0;
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < d; ++j) {
      const int64_t t = target[static_cast<std::size_t>(i * d + j)];
      double loss = 0, weight_of = 0;
      if (!(ignore && t == *ignore)) {
        if (t < 0 || t >= c)
          throw InputError(fmt::format("{}: target {} at entry {} is outside [0, {})", label, t, i * d + j, c));
        weight_of = w != nullptr ? static_cast<double>(load<T>(w[t])) : 1.0;
        loss = -at(i, t, j) * weight_of;
      }
      if (reduction == LossReduction::none) out[i * d + j] = store<T>(static_cast<compute_t<T>>(loss));
      total += loss;
      weights += weight_of;
    }
  return reduction == LossReduction::mean ? total / weights : total;
}

template <typename T>
class LossKernel final : public ThresholdKernel {
 public:
  LossKernel(const KernelCreateInfo& info, bool softmax) : ThresholdKernel(kDefaultMinimumElements), softmax_(softmax) {
    check_attributes(info, {"reduction", "ignore_index"});
    reduction_ = loss_reduction(info);
    if (info.has_attribute("ignore_index")) ignore_ = info.int_attribute("ignore_index", 0);
  }
  void run(KernelExecution& execution) override {
    const Tensor& x = execution.required_input(0);
    const Tensor& target_tensor = execution.required_input(1);
    const Tensor* weight = execution.input(2);
    const std::string& label = execution.label();
    if (x.rank() < 2) throw InputError(fmt::format("{}: input must be [N, C, ...], not {}", label, shape_to_string(x.shape())));
    const int64_t n = x.shape()[0], c = x.shape()[1], d = c == 0 || n == 0 ? 0 : x.element_count() / (n * c);
    Shape target_shape = x.shape();
    target_shape.erase(target_shape.begin() + 1);
    if (target_tensor.shape() != target_shape)
      throw InputError(fmt::format("{}: target {} must have shape {} (input {} without its class dim)", label,
                                   shape_to_string(target_tensor.shape()), shape_to_string(target_shape),
                                   shape_to_string(x.shape())));
    if (weight != nullptr) {
      check_input_type(execution, 2, *weight, x.element_type());
      if (weight->shape() != Shape{c})
        throw InputError(fmt::format("{}: weight {} must have shape [{}]", label, shape_to_string(weight->shape()), c));
    }
    const std::vector<int64_t> target = read_int64_values(target_tensor, label, "target");
    const T* in = x.data<T>();
    // SoftmaxCrossEntropyLoss: log_softmax over the classes first (kept as the optional output).
    std::vector<double> log_prob;
    if (softmax_) {
      log_prob.resize(static_cast<std::size_t>(x.element_count()));
      for (int64_t i = 0; i < n; ++i)
        for (int64_t j = 0; j < d; ++j) {
          double max = -std::numeric_limits<double>::infinity();
          for (int64_t k = 0; k < c; ++k) max = std::max(max, static_cast<double>(load<T>(in[(i * c + k) * d + j])));
          double sum = 0;
          for (int64_t k = 0; k < c; ++k) sum += std::exp(static_cast<double>(load<T>(in[(i * c + k) * d + j])) - max);
          const double shift = max + std::log(sum);
          for (int64_t k = 0; k < c; ++k)
            log_prob[static_cast<std::size_t>((i * c + k) * d + j)] =
                static_cast<double>(load<T>(store<T>(static_cast<compute_t<T>>(load<T>(in[(i * c + k) * d + j]) - shift))));
        }
    }
    auto at = [&](int64_t i, int64_t k, int64_t j) {
      const int64_t e = (i * c + k) * d + j;
      return softmax_ ? log_prob[static_cast<std::size_t>(e)] : static_cast<double>(load<T>(in[e]));
    };
    Tensor& loss = checked_output(execution, 0, x.element_type(),
                                  reduction_ == LossReduction::none ? target_shape : Shape{}, false);
    const double reduced = nll<T>(at, target, weight, n, c, d, ignore_, reduction_, loss.data<T>(), label);
    if (reduction_ != LossReduction::none) *loss.data<T>() = store<T>(static_cast<compute_t<T>>(reduced));
    if (softmax_ && execution.output_count() > 1) {
      Tensor& out = checked_output(execution, 1, x.element_type(), x.shape(), false);
      for (std::size_t e = 0; e < log_prob.size(); ++e) out.data<T>()[e] = store<T>(static_cast<compute_t<T>>(log_prob[e]));
    }
  }

 private:
  bool softmax_;
  LossReduction reduction_ = LossReduction::mean;
  std::optional<int64_t> ignore_;
};

}  // namespace

void register_loss_kernels(KernelTable& table) {
  for_each_type<float, double, Float16, BFloat16>([&](auto v) {
    using T = decltype(v);
    constexpr ElementType type = ElementTraits<T>::type;
    for (const std::string op_type : {"NegativeLogLikelihoodLoss", "SoftmaxCrossEntropyLoss"}) {
      const bool softmax = op_type == "SoftmaxCrossEntropyLoss";
      KernelDef def = make_def(op_type, {12}, type,
                               parallel_threshold_schema(elementwise_key(op_type, type, 1), kDefaultMinimumElements));
      def.create = [softmax](const KernelCreateInfo& info) -> std::unique_ptr<Kernel> {
        return std::make_unique<LossKernel<T>>(info, softmax);
      };
      def.output_types = [](const KernelCreateInfo&) {
        return std::vector<ElementType>{ElementTraits<T>::type, ElementTraits<T>::type};
      };
      table.add(std::move(def));
    }
  });
}

}  // namespace onnx_light::runtime::kernels
