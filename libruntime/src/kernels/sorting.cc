// TopK: the k largest (or smallest) values along an axis and their int64 indices. Equal values
// keep the lower index first (ONNX's rule), NaN counts as larger than every number (as numpy's
// sort places it), and `sorted = 0` still returns them in that order (allowed: the order is then
// unspecified). Unique: the distinct elements (or slices along an axis), sorted or in order of
// first occurrence, with first indices, inverse indices and counts.
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


// Unique over the flattened input (no axis) or over slices along `axis` (compared element by
// element in row-major order of the other dims). Sorted ascending (sorted = 1, the default) or in
// order of first occurrence; outputs Y, then int64 indices (first occurrence), inverse_indices
// and counts. NaNs sort last and count as one value.
template <typename T>
class UniqueKernel final : public ThresholdKernel {
 public:
  explicit UniqueKernel(const KernelCreateInfo& info) : ThresholdKernel(kDefaultMinimumElements) {
    check_attributes(info, {"axis", "sorted"});
    has_axis_ = info.has_attribute("axis");
    axis_ = info.int_attribute("axis", 0);
    sorted_ = info.int_attribute("sorted", 1) != 0;
  }
  void run(KernelExecution& execution) override {
    const Tensor& x = execution.required_input(0);
    const std::string& label = execution.label();
    const Shape flat{x.element_count()};
    const Shape& shape = has_axis_ ? x.shape() : flat;
    const auto axis = has_axis_ ? static_cast<std::size_t>(normalize_axis(axis_, static_cast<int64_t>(x.rank()), label))
                                : std::size_t{0};
    int64_t outer = 1, inner = 1;
    for (std::size_t d = 0; d < axis; ++d) outer *= shape[d];
    for (std::size_t d = axis + 1; d < shape.size(); ++d) inner *= shape[d];
    const int64_t slices = shape[axis];
    const T* in = x.data<T>();
    auto element = [&](int64_t slice, int64_t k) {  // k-th element of a slice, row-major over (outer, inner)
      return load<T>(in[((k / inner) * slices + slice) * inner + k % inner]);
    };
    const int64_t length = outer * inner;
    // NaN after every number and equal to NaN (numpy's unique), so NaNs merge into one entry.
    auto less = [&](int64_t a, int64_t b) {
      for (int64_t k = 0; k < length; ++k) {
        const auto va = element(a, k), vb = element(b, k);
        const bool na = va != va, nb = vb != vb;
        if (na || nb) {
          if (na && nb) continue;
          return nb;
        }
        if (va < vb) return true;
        if (vb < va) return false;
      }
      return false;
    };
    auto equal = [&](int64_t a, int64_t b) { return !less(a, b) && !less(b, a); };
    // Slices by value, stable: equal slices keep their order, so the first of a run is the first occurrence.
    std::vector<int64_t> order(static_cast<std::size_t>(slices));
    std::iota(order.begin(), order.end(), int64_t{0});
    std::stable_sort(order.begin(), order.end(), less);
    std::vector<int64_t> first;    // unique slice -> its first occurrence
    std::vector<int64_t> counts;
    std::vector<int64_t> inverse(static_cast<std::size_t>(slices));
    for (std::size_t i = 0; i < order.size(); ++i) {
      if (i == 0 || !equal(order[i - 1], order[i])) {
        first.push_back(order[i]);
        counts.push_back(0);
      }
      ++counts.back();
      inverse[static_cast<std::size_t>(order[i])] = static_cast<int64_t>(first.size()) - 1;
    }
    if (!sorted_) {
      // Renumber the unique slices by first occurrence.
      std::vector<int64_t> by_first(first.size());
      std::iota(by_first.begin(), by_first.end(), int64_t{0});
      std::sort(by_first.begin(), by_first.end(), [&](int64_t a, int64_t b) {
        return first[static_cast<std::size_t>(a)] < first[static_cast<std::size_t>(b)];
      });
      std::vector<int64_t> rank(first.size()), first2(first.size()), counts2(first.size());
      for (std::size_t r = 0; r < by_first.size(); ++r) {
        const auto u = static_cast<std::size_t>(by_first[r]);
        rank[u] = static_cast<int64_t>(r);
        first2[r] = first[u];
        counts2[r] = counts[u];
      }
      for (int64_t& v : inverse) v = rank[static_cast<std::size_t>(v)];
      first.swap(first2);
      counts.swap(counts2);
    }
    const auto unique = static_cast<int64_t>(first.size());
    Shape y_shape = shape;
    y_shape[axis] = unique;
    Tensor& y = checked_output(execution, 0, x.element_type(), y_shape, false);
    T* out = y.data<T>();
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t u = 0; u < unique; ++u)
        for (int64_t i = 0; i < inner; ++i)
          out[(o * unique + u) * inner + i] = in[(o * slices + first[static_cast<std::size_t>(u)]) * inner + i];
    auto int64_output = [&](std::size_t index, const std::vector<int64_t>& v) {
      if (execution.output_count() <= index) return;
      Tensor& t = checked_output(execution, index, ElementType::int64, {static_cast<int64_t>(v.size())}, false);
      std::copy(v.begin(), v.end(), t.data<int64_t>());
    };
    int64_output(1, first);
    int64_output(2, inverse);
    int64_output(3, counts);
  }

 private:
  bool has_axis_ = false;
  int64_t axis_ = 0;
  bool sorted_ = true;
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
        KernelDef unique = make_def("Unique", {11}, type,
                                    parallel_threshold_schema(elementwise_key("Unique", type, 1), kDefaultMinimumElements));
        unique.create = [](const KernelCreateInfo& info) -> std::unique_ptr<Kernel> {
          return std::make_unique<UniqueKernel<T>>(info);
        };
        unique.output_types = [](const KernelCreateInfo&) {
          return std::vector<ElementType>{ElementTraits<T>::type, ElementType::int64, ElementType::int64, ElementType::int64};
        };
        table.add(std::move(unique));
      });
}

}  // namespace onnx_light::runtime::kernels
