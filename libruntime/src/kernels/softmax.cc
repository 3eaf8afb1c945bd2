// Softmax, LogSoftmax and Hardmax: row kernels. From opset 13 a row is the `axis` dim (default
// -1) with the other dims outer and inner; before 13 the input is coerced to 2-D at `axis`
// (default 1) and a row is everything from `axis` on. Each row is processed by one thread in a
// fixed order; rows that share an outer index are processed in chunks of inner positions so
// that strided rows still stream through memory.
#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "kernels/elementwise.h"
#include "kernels/kernel_families.h"
#include "kernels/kernel_util.h"
#include "onnx_light/runtime/error.h"

namespace onnx_light::runtime::kernels {

namespace {

enum class RowOp { softmax, log_softmax, hardmax };

constexpr int64_t kInnerChunk = 64;

template <typename T, RowOp kOp>
class SoftmaxKernel final : public RowKernel {
 public:
  explicit SoftmaxKernel(const KernelCreateInfo& info) : RowKernel(kDefaultMinimumRows) {
    check_attributes(info, {"axis"});
    coerce_2d_ = info.opset < 13;
    axis_ = info.int_attribute("axis", coerce_2d_ ? 1 : -1);
  }

  void run(KernelExecution& execution) override {
    const Tensor& x = execution.required_input(0);
    const auto rank = static_cast<int64_t>(x.rank());
    Tensor& y = execution.output(0, ElementTraits<T>::type, x.shape());
    if (x.element_count() == 0) return;
    const auto axis = static_cast<std::size_t>(normalize_axis(axis_, std::max<int64_t>(rank, 1), execution.label()));
    int64_t outer = 1, length = 1, inner = 1;
    for (std::size_t d = 0; d < x.rank(); ++d) {
      if (d < axis) outer *= x.shape()[d];
      else if (d == axis || coerce_2d_) length *= x.shape()[d];
      else inner *= x.shape()[d];
    }
    const T* in = x.data<T>();
    T* out = y.data<T>();
    const int64_t rows = outer * inner;
    // Rows are numbered outer-major; a block of rows is split into chunks within one outer index.
    execution.parallel_for(rows, 1, admitted_rows(rows, execution), [&](int64_t begin, int64_t end) {
      using C = compute_t<T>;
      C max[kInnerChunk];
      C sum[kInnerChunk];
      int64_t arg[kInnerChunk];
      int64_t r = begin;
      while (r < end) {
        const int64_t o = r / inner;
        const int64_t j0 = r % inner;
        const int64_t count = std::min({inner - j0, end - r, kInnerChunk});
        const int64_t base = o * length * inner + j0;
        for (int64_t j = 0; j < count; ++j) {
          max[j] = load<T>(in[base + j]);
          arg[j] = 0;
        }
        for (int64_t k = 1; k < length; ++k)
          for (int64_t j = 0; j < count; ++j) {
            const C v = load<T>(in[base + k * inner + j]);
            if (v > max[j]) {  // the first maximum wins (Hardmax); NaN never replaces a number
              max[j] = v;
              arg[j] = k;
            }
          }
        if constexpr (kOp == RowOp::hardmax) {
          for (int64_t k = 0; k < length; ++k)
            for (int64_t j = 0; j < count; ++j) out[base + k * inner + j] = store<T>(k == arg[j] ? C(1) : C(0));
        } else {
          for (int64_t j = 0; j < count; ++j) sum[j] = C(0);
          for (int64_t k = 0; k < length; ++k)
            for (int64_t j = 0; j < count; ++j) {
              const C e = std::exp(load<T>(in[base + k * inner + j]) - max[j]);
              if constexpr (kOp == RowOp::softmax) out[base + k * inner + j] = store<T>(e);
              sum[j] += e;
            }
          if constexpr (kOp == RowOp::softmax) {
            for (int64_t j = 0; j < count; ++j) sum[j] = C(1) / sum[j];
            for (int64_t k = 0; k < length; ++k)
              for (int64_t j = 0; j < count; ++j) {
                // 16-bit outputs hold e rounded; recompute it in full precision instead.
                const C e = std::is_same_v<T, C> ? load<T>(out[base + k * inner + j])
                                                 : std::exp(load<T>(in[base + k * inner + j]) - max[j]);
                out[base + k * inner + j] = store<T>(e * sum[j]);
              }
          } else {
            for (int64_t j = 0; j < count; ++j) sum[j] = max[j] + std::log(sum[j]);
            for (int64_t k = 0; k < length; ++k)
              for (int64_t j = 0; j < count; ++j)
                out[base + k * inner + j] = store<T>(load<T>(in[base + k * inner + j]) - sum[j]);
          }
        }
        r += count;
      }
    });
  }

 private:
  bool coerce_2d_ = false;
  int64_t axis_ = -1;
};

template <typename T, RowOp kOp>
void add_row_op(KernelTable& table, const std::string& op_type, OpsetRange opsets) {
  constexpr ElementType type = ElementTraits<T>::type;
  KernelDef def = make_def(op_type, opsets, type, row_threshold_schema(elementwise_key(op_type, type, 1), kDefaultMinimumRows));
  def.create = [](const KernelCreateInfo& info) -> std::unique_ptr<Kernel> {
    return std::make_unique<SoftmaxKernel<T, kOp>>(info);
  };
  // Calibration: [rows, 64] over the last axis; the threshold counts rows.
  def.calibration_workload = [op_type](int64_t rows, int, uint32_t seed) {
    const Shape shape{std::max<int64_t>(1, rows), 64};
    return one_node_workload(op_type, 13, "axis = -1", {{"x", random_tensor(type, shape, seed)}},
                             {{"y", type, shape}}, shape[0]);
  };
  table.add(std::move(def));
}

}  // namespace

void register_softmax_kernels(KernelTable& table) {
  for_each_type<float, double, Float16, BFloat16>([&](auto t) {
    using T = decltype(t);
    add_row_op<T, RowOp::softmax>(table, "Softmax", {1});
    add_row_op<T, RowOp::log_softmax>(table, "LogSoftmax", {1});
    add_row_op<T, RowOp::hardmax>(table, "Hardmax", {1});
  });
}

}  // namespace onnx_light::runtime::kernels
