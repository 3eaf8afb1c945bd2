// Operators that move or copy data without arithmetic.
#include <cstring>

#include "kernels/elementwise.h"
#include "kernels/kernel_families.h"

namespace onnx_light::runtime::kernels {

namespace {

class IdentityKernel final : public ThresholdKernel {
 public:
  using ThresholdKernel::ThresholdKernel;
  void run(KernelExecution& execution) override {
    const Tensor& x = execution.required_input(0);
    Tensor& y = execution.output(0, x.element_type(), x.shape());
    const auto* in = static_cast<const std::byte*>(x.raw_data());
    auto* out = static_cast<std::byte*>(y.raw_data());
    const int64_t bytes = static_cast<int64_t>(x.byte_size());
    execution.parallel_for(bytes, 64, admitted(x.element_count(), execution), [&](int64_t begin, int64_t end) {
      if (end > begin) std::memcpy(out + begin, in + begin, static_cast<std::size_t>(end - begin));
    });
  }
};

}  // namespace

void register_data_movement_kernels(KernelTable& table) {
  for (ElementType type : supported_element_types()) {
    KernelDef def;
    def.op_type = "Identity";
    def.since_version = 1;
    def.element_type = type;
    def.schema = parallel_threshold_schema(elementwise_key("Identity", type, 1), kDefaultMinimumElements);
    def.create = [](const KernelCreateInfo&) -> std::unique_ptr<Kernel> {
      return std::make_unique<IdentityKernel>(kDefaultMinimumElements);
    };
    table.add(std::move(def));
  }
}

}  // namespace onnx_light::runtime::kernels
