// Window functions of the signal operators (opset 17): HannWindow, HammingWindow and
// BlackmanWindow. A window of `size` samples, periodic (the default: N = size, as for a
// spectrogram) or symmetric (N = size - 1), computed in double and stored in output_datatype.
#include <cmath>
#include <numbers>
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

enum class Window { hann, hamming, blackman };

double window_value(Window window, int64_t n, double period) {
  const double x = 2.0 * std::numbers::pi * static_cast<double>(n) / period;
  switch (window) {
    case Window::hann: return 0.5 - 0.5 * std::cos(x);
    case Window::hamming: return 25.0 / 46.0 - (1.0 - 25.0 / 46.0) * std::cos(x);
    case Window::blackman: return 0.42 - 0.5 * std::cos(x) + 0.08 * std::cos(2.0 * x);
  }
  return 0.0;
}

ElementType window_type(const KernelCreateInfo& info) {
  const int64_t dtype = info.int_attribute("output_datatype", static_cast<int64_t>(ElementType::float32));
  for (ElementType t : {ElementType::float32, ElementType::float64, ElementType::float16, ElementType::bfloat16,
                        ElementType::int8, ElementType::int16, ElementType::int32, ElementType::int64,
                        ElementType::uint8, ElementType::uint16, ElementType::uint32, ElementType::uint64})
    if (static_cast<int64_t>(t) == dtype) return t;
  throw UnsupportedError(fmt::format("{}: output_datatype {} is not supported", info.node_label(), dtype));
}

class WindowKernel final : public ThresholdKernel {
 public:
  WindowKernel(const KernelCreateInfo& info, Window window)
      : ThresholdKernel(kDefaultMinimumElements), window_(window), type_(window_type(info)) {
    check_attributes(info, {"output_datatype", "periodic"});
    periodic_ = info.int_attribute("periodic", 1) != 0;
  }
  void run(KernelExecution& execution) override {
    const Tensor& size_tensor = execution.required_input(0);
    if (size_tensor.element_count() != 1)
      throw InputError(fmt::format("{}: size must hold one value, not {}", execution.label(),
                                   shape_to_string(size_tensor.shape())));
    const int64_t size = read_int64_values(size_tensor, execution.label(), "size")[0];
    if (size < 0) throw InputError(fmt::format("{}: size {} is negative", execution.label(), size));
    Tensor& y = checked_output(execution, 0, type_, {size}, false);
    const double period = periodic_ ? static_cast<double>(size) : static_cast<double>(size - 1);
    for_each_type<float, double, Float16, BFloat16, int8_t, int16_t, int32_t, int64_t, uint8_t, uint16_t, uint32_t,
                  uint64_t>([&](auto v) {
      using T = decltype(v);
      if (type_ != ElementTraits<T>::type) return;
      T* out = y.data<T>();
      for (int64_t n = 0; n < size; ++n)
        out[n] = store<T>(static_cast<compute_t<T>>(size == 1 ? 1.0 : window_value(window_, n, period)));
    });
  }

 private:
  Window window_;
  ElementType type_;
  bool periodic_ = true;
};

}  // namespace

void register_signal_kernels(KernelTable& table) {
  for (const auto& [op_type, window] : {std::pair{"HannWindow", Window::hann}, std::pair{"HammingWindow", Window::hamming},
                                        std::pair{"BlackmanWindow", Window::blackman}}) {
    for (ElementType type : {ElementType::int32, ElementType::int64}) {
      KernelDef def = make_def(op_type, {17}, type,
                               parallel_threshold_schema(elementwise_key(op_type, type, 1), kDefaultMinimumElements));
      const Window w = window;
      def.create = [w](const KernelCreateInfo& info) -> std::unique_ptr<Kernel> {
        return std::make_unique<WindowKernel>(info, w);
      };
      def.output_types = [](const KernelCreateInfo& info) { return std::vector<ElementType>{window_type(info)}; };
      table.add(std::move(def));
    }
  }
}

}  // namespace onnx_light::runtime::kernels
