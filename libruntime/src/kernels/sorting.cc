// TopK: the k largest (or smallest) values along an axis and their int64 indices. Equal values
// keep the lower index first (ONNX's rule), NaN counts as larger than every number (as numpy's
// sort places it), and `sorted = 0` still returns them in that order (allowed: the order is then
// unspecified).
#include <algorithm>
#include <cmath>
#include <numeric>
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

template <typename T>
class TopKKernel final : public ThresholdKernel {
 public:
  explicit TopKKernel(const KernelCreateInfo& info) : ThresholdKernel(kDefaultMinimumElements) {
    check_attributes(info, {"axis", "largest", "sorted", "k"});
    axis_ = info.int_attribute("axis", -1);
    largest_ = info.int_attribute("largest", 1) != 0;
    k_attribute_ = info.int_attribute("k", -1);  // opset 1-9: k is an attribute
  }
  void run(KernelExecution& execution) override {
    const Tensor& x = execution.required_input(0);
    const std::string& label = execution.label();
    int64_t k = k_attribute_;
    if (const Tensor* k_tensor = execution.input(1)) {
      if (k_tensor->element_count() != 1)
        throw InputError(fmt::format("{}: K must hold one value, not {}", label, shape_to_string(k_tensor->shape())));
      k = read_int64_values(*k_tensor, label, "K")[0];
    }
    const auto axis = static_cast<std::size_t>(normalize_axis(axis_, static_cast<int64_t>(x.rank()), label));
    const int64_t dim = x.shape()[axis];
    if (k < 0 || k > dim) throw InputError(fmt::format("{}: K {} is outside [0, {}] (axis {})", label, k, dim, axis));
    Shape out_shape = x.shape();
    out_shape[axis] = k;
    Tensor& values = checked_output(execution, 0, x.element_type(), out_shape, false);
    Tensor& indices = checked_output(execution, 1, ElementType::int64, out_shape, false);
    int64_t outer = 1, inner = 1;
    for (std::size_t d = 0; d < axis; ++d) outer *= x.shape()[d];
    for (std::size_t d = axis + 1; d < x.rank(); ++d) inner *= x.shape()[d];
    const T* in = x.data<T>();
    T* out = values.data<T>();
    int64_t* index_out = indices.data<int64_t>();
    const bool largest = largest_;
    execution.parallel_for(outer * inner, 1, admitted(x.element_count(), execution), [&](int64_t begin, int64_t end) {
      std::vector<int64_t> order(static_cast<std::size_t>(dim));
      for (int64_t line = begin; line < end; ++line) {
        const int64_t o = line / inner, i = line % inner;
        const T* base = in + o * dim * inner + i;
        auto value = [&](int64_t j) { return load<T>(base[j * inner]); };
        // a before b: larger (smaller) first, NaN largest, ties by index.
        auto before = [&](int64_t a, int64_t b) {
          const auto va = value(a), vb = value(b);
          const bool na = va != va, nb = vb != vb;
          if (na || nb) {
            if (na && nb) return a < b;
            return largest ? na : nb;
          }
          if (va != vb) return largest ? va > vb : va < vb;
          return a < b;
        };
        std::iota(order.begin(), order.end(), int64_t{0});
        std::partial_sort(order.begin(), order.begin() + k, order.end(), before);
        for (int64_t j = 0; j < k; ++j) {
          const int64_t at = (o * k + j) * inner + i;
          out[at] = base[order[static_cast<std::size_t>(j)] * inner];
          index_out[at] = order[static_cast<std::size_t>(j)];
        }
      }
    });
  }

 private:
  int64_t axis_ = -1;
  bool largest_ = true;
  int64_t k_attribute_ = -1;
};

}  // namespace

void register_sorting_kernels(KernelTable& table) {
  for_each_type<float, double, Float16, BFloat16, int8_t, int16_t, int32_t, int64_t, uint8_t, uint16_t, uint32_t, uint64_t>(
      [&](auto v) {
        using T = decltype(v);
        constexpr ElementType type = ElementTraits<T>::type;
        KernelDef def = make_def("TopK", {1}, type,
                                 parallel_threshold_schema(elementwise_key("TopK", type, 1), kDefaultMinimumElements));
        def.create = [](const KernelCreateInfo& info) -> std::unique_ptr<Kernel> {
          return std::make_unique<TopKKernel<T>>(info);
        };
        def.output_types = [](const KernelCreateInfo&) {
          return std::vector<ElementType>{ElementTraits<T>::type, ElementType::int64};
        };
        table.add(std::move(def));
      });
}

}  // namespace onnx_light::runtime::kernels
