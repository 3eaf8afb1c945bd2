// Det: the determinant of each [M, M] matrix of [..., M, M], by LU decomposition with partial
// pivoting in double precision, stored in the input's float type.
#include <cmath>
#include <string>
#include <utility>
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
class DetKernel final : public ThresholdKernel {
 public:
  explicit DetKernel(const KernelCreateInfo& info) : ThresholdKernel(kDefaultMinimumElements) { check_attributes(info, {}); }
  void run(KernelExecution& execution) override {
    const Tensor& x = execution.required_input(0);
    if (x.rank() < 2 || x.shape()[x.rank() - 1] != x.shape()[x.rank() - 2])
      throw InputError(fmt::format("{}: input must be [..., M, M], not {}", execution.label(), shape_to_string(x.shape())));
    const int64_t m = x.shape().back();
    const Shape out_shape(x.shape().begin(), x.shape().end() - 2);
    Tensor& y = checked_output(execution, 0, x.element_type(), out_shape, false);
    const T* in = x.data<T>();
    T* out = y.data<T>();
    std::vector<double> a(static_cast<std::size_t>(m * m));
    for (int64_t t = 0; t < y.element_count(); ++t) {
      for (int64_t e = 0; e < m * m; ++e) a[static_cast<std::size_t>(e)] = static_cast<double>(load<T>(in[t * m * m + e]));
      double det = 1.0;
      for (int64_t c = 0; c < m && det != 0.0; ++c) {
        int64_t pivot = c;
        for (int64_t r = c + 1; r < m; ++r)
          if (std::fabs(a[static_cast<std::size_t>(r * m + c)]) > std::fabs(a[static_cast<std::size_t>(pivot * m + c)]))
            pivot = r;
        if (pivot != c) {
          for (int64_t j = 0; j < m; ++j)
            std::swap(a[static_cast<std::size_t>(c * m + j)], a[static_cast<std::size_t>(pivot * m + j)]);
          det = -det;
        }
        const double d = a[static_cast<std::size_t>(c * m + c)];
        det *= d;
        if (d == 0.0) break;
        for (int64_t r = c + 1; r < m; ++r) {
          const double f = a[static_cast<std::size_t>(r * m + c)] / d;
          for (int64_t j = c; j < m; ++j) a[static_cast<std::size_t>(r * m + j)] -= f * a[static_cast<std::size_t>(c * m + j)];
        }
      }
      out[t] = store<T>(static_cast<compute_t<T>>(det));
    }
  }
};

}  // namespace

void register_linear_algebra_kernels(KernelTable& table) {
  for_each_type<float, double, Float16, BFloat16>([&](auto v) {
    using T = decltype(v);
    constexpr ElementType type = ElementTraits<T>::type;
    KernelDef def = make_def("Det", {11}, type, parallel_threshold_schema(elementwise_key("Det", type, 1), kDefaultMinimumElements));
    def.create = [](const KernelCreateInfo& info) -> std::unique_ptr<Kernel> { return std::make_unique<DetKernel<T>>(info); };
    table.add(std::move(def));
  });
}

}  // namespace onnx_light::runtime::kernels
