// N-ary elementwise operators with numpy broadcasting: Sum, Mean, Max, Min fold any number of
// inputs left to right; Where selects between two inputs by a condition.
#include <cmath>
#include <span>

#include <fmt/format.h>

#include "kernels/broadcast.h"
#include "kernels/elementwise.h"
#include "kernels/integer_math.h"
#include "kernels/kernel_families.h"
#include "kernels/kernel_util.h"
#include "onnx_light/runtime/error.h"

namespace onnx_light::runtime::kernels {

namespace {

// Visits output elements [begin, end) paired with elements of one input broadcast to `output`:
// row(out_index, input_pointer, count, input_step).
template <typename T, typename Row>
void walk_input(const Tensor& input, const BroadcastPlan* plan, int64_t begin, int64_t end, Row&& row) {
  const T* data = input.data<T>();
  if (plan == nullptr) {
    row(begin, data + begin, end - begin, int64_t{1});
    return;
  }
  walk_broadcast<1>(*plan, begin, end, [&](int64_t o, const int64_t* off, int64_t count, const int64_t* step) {
    row(o, data + off[0], count, step[0]);
  });
}

// The fold: y = op(...op(op(x0, x1), x2)..., xn-1), then finish(y, n). Each output element is
// folded in input order by one thread, so results do not depend on the thread count.
template <typename T, typename Op, bool kMean>
class VariadicKernel final : public ThresholdKernel {
 public:
  explicit VariadicKernel(int64_t minimum_elements) : ThresholdKernel(minimum_elements) {}

  void run(KernelExecution& execution) override {
    const std::size_t count = execution.input_count();
    std::vector<const Tensor*> inputs;
    std::vector<const Shape*> shapes;
    for (std::size_t i = 0; i < count; ++i) {
      const Tensor& t = execution.required_input(i);
      check_input_type(execution, i, t, ElementTraits<T>::type);
      inputs.push_back(&t);
      shapes.push_back(&t.shape());
    }
    if (inputs.empty()) throw InputError(fmt::format("{}: needs at least one input", execution.label()));
    const Shape shape = broadcast_shapes(std::span<const Shape* const>(shapes), execution.label());
    std::vector<BroadcastPlan> plans(count);
    std::vector<const BroadcastPlan*> plan_of(count, nullptr);
    for (std::size_t i = 0; i < count; ++i) {
      if (inputs[i]->shape() == shape) continue;
      const Shape* one[] = {&inputs[i]->shape()};
      plans[i] = make_broadcast_plan(shape, one);
      plan_of[i] = &plans[i];
    }
    Tensor& y = execution.output(0, ElementTraits<T>::type, shape);
    T* out = y.data<T>();
    const int64_t n = y.element_count();
    const Op op;
    execution.parallel_for(n, cache_line_grain<T>(), admitted(n, execution),
                           [&](int64_t begin, int64_t end) {
      walk_input<T>(*inputs[0], plan_of[0], begin, end, [&](int64_t o, const T* in, int64_t c, int64_t step) {
        for (int64_t i = 0; i < c; ++i) out[o + i] = in[i * step];
      });
      for (std::size_t k = 1; k < count; ++k)
        walk_input<T>(*inputs[k], plan_of[k], begin, end, [&](int64_t o, const T* in, int64_t c, int64_t step) {
          for (int64_t i = 0; i < c; ++i) out[o + i] = store<T>(op(load<T>(out[o + i]), load<T>(in[i * step])));
        });
      if constexpr (kMean) {
        const auto divisor = static_cast<compute_t<T>>(count);
        for (int64_t i = begin; i < end; ++i) out[i] = store<T>(load<T>(out[i]) / divisor);
      }
    });
  }
};

struct SumOp {
  template <typename C>
  C operator()(C a, C b) const { return wrap_add(a, b); }
};
// NaN propagates, as numpy.maximum/minimum do.
struct MaxOp {
  template <typename C>
  C operator()(C a, C b) const {
    if constexpr (std::is_floating_point_v<C>)
      if (std::isnan(a) || std::isnan(b)) return std::isnan(a) ? a : b;
    return a < b ? b : a;
  }
};
struct MinOp {
  template <typename C>
  C operator()(C a, C b) const {
    if constexpr (std::is_floating_point_v<C>)
      if (std::isnan(a) || std::isnan(b)) return std::isnan(a) ? a : b;
    return b < a ? b : a;
  }
};

// Where(condition, x, y) on the storage of x (only the element size matters).
template <typename U>
class WhereKernel final : public ThresholdKernel {
 public:
  WhereKernel(ElementType type, int64_t minimum_elements) : ThresholdKernel(minimum_elements), type_(type) {}

  void run(KernelExecution& execution) override {
    const Tensor& c = execution.required_input(0);
    const Tensor& x = execution.required_input(1);
    const Tensor& y = execution.required_input(2);
    check_input_type(execution, 0, c, ElementType::boolean);
    check_input_type(execution, 2, y, type_);
    const Shape* shapes[] = {&c.shape(), &x.shape(), &y.shape()};
    broadcast_.update(shapes, execution.label());
    const Shape& shape = broadcast_.shape();
    Tensor& result = execution.output(0, type_, shape);
    U* out = result.data<U>();
    const bool* pc = c.data<bool>();
    const U* px = x.data<U>();
    const U* py = y.data<U>();
    const int64_t n = result.element_count();
    if (n == 0) return;
    const BroadcastPlan& plan = broadcast_.plan();
    execution.parallel_for(n, cache_line_grain<U>(), admitted(n, execution), [&](int64_t begin, int64_t end) {
      walk_broadcast<3>(plan, begin, end, [&](int64_t o, const int64_t* off, int64_t count, const int64_t* step) {
        const bool* rc = pc + off[0];
        const U* rx = px + off[1];
        const U* ry = py + off[2];
        for (int64_t i = 0; i < count; ++i) out[o + i] = rc[i * step[0]] ? rx[i * step[1]] : ry[i * step[2]];
      });
    });
  }

 private:
  ElementType type_;
  CachedBroadcast broadcast_;
};

template <typename T, typename Op, bool kMean = false>
void add_variadic(KernelTable& table, const std::string& op_type, int since) {
  constexpr ElementType type = ElementTraits<T>::type;
  KernelDef def = make_def(op_type, {since}, type,
                           parallel_threshold_schema(elementwise_key(op_type, type, 1), kDefaultMinimumElements));
  def.create = [](const KernelCreateInfo& info) -> std::unique_ptr<Kernel> {
    check_attributes(info, {});
    return std::make_unique<VariadicKernel<T, Op, kMean>>(kDefaultMinimumElements);
  };
  def.calibration_workload = binary_workload(op_type, type, 17);
  def.calibration_variants = 3;
  table.add(std::move(def));
}

}  // namespace

void register_variadic_kernels(KernelTable& table) {
  for_each_type<float, double, Float16, BFloat16>([&](auto t) {
    using T = decltype(t);
    add_variadic<T, SumOp>(table, "Sum", 6);
    add_variadic<T, SumOp, true>(table, "Mean", 6);
  });
  for_each_type<float, double, Float16, BFloat16, int8_t, int16_t, int32_t, int64_t, uint8_t, uint16_t, uint32_t,
                uint64_t>([&](auto t) {
    using T = decltype(t);
    add_variadic<T, MaxOp>(table, "Max", 6);
    add_variadic<T, MinOp>(table, "Min", 6);
  });
  // Where is selected by x (input 1); the bool condition is checked at run time.
  for (ElementType type : supported_element_types()) {
    KernelDef def = make_def("Where", {9}, type,
                             parallel_threshold_schema(elementwise_key("Where", type, 1), kDefaultMinimumElements));
    def.type_input = 1;
    def.calibration_workload = [type](int64_t n, int, uint32_t seed) {
      return one_node_workload("Where", 16, "",
                               {{"c", random_tensor(ElementType::boolean, {n}, seed)},
                                {"x", random_tensor(type, {n}, seed + 1)},
                                {"y", random_tensor(type, {n}, seed + 2)}},
                               {{"z", type, {n}}}, n);
    };
    def.create = [type](const KernelCreateInfo& info) -> std::unique_ptr<Kernel> {
      check_attributes(info, {});
      std::unique_ptr<Kernel> kernel;
      dispatch_element_size(element_size(type), [&](auto u) {
        kernel = std::make_unique<WhereKernel<decltype(u)>>(type, kDefaultMinimumElements);
      });
      return kernel;
    };
    table.add(std::move(def));
  }
}

}  // namespace onnx_light::runtime::kernels
