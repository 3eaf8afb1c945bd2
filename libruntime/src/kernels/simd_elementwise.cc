#include "kernels/simd_elementwise.h"

#include "kernels/kernel_util.h"

namespace onnx_light::runtime::kernels {

TuningSchema span_elementwise_schema(TuningKey key, int64_t default_minimum_elements) {
  TuningSchema schema = parallel_threshold_schema(std::move(key), default_minimum_elements);
  ParameterSpec streaming;
  streaming.name = "store.streaming_minimum_elements";
  streaming.type = ValueType::int64;
  streaming.default_value = kDefaultStreamingMinimumElements;
  streaming.role = ParameterRole::plain;
  streaming.minimum = 1;
  streaming.maximum = static_cast<double>(kStreamingStoresOff);
  streaming.description =
      "Smallest output element count written with non-temporal stores (bypassing the caches); 2^40 turns them off.";
  schema.parameters.push_back(std::move(streaming));
  return schema;
}

void SpanKernelBase::apply_tuning(const TuningValues& values) {
  ThresholdKernel::apply_tuning(values);
  read_tuning(values, "store.streaming_minimum_elements", streaming_minimum_elements_);
}

void SpanUnaryKernel::run(KernelExecution& execution) {
  const Tensor& x = execution.required_input(0);
  check_input_type(execution, 0, x, ElementType::float32);
  Tensor& y = execution.output_for_overwrite(0, ElementType::float32, x.shape());
  const float* in = x.data<float>();
  float* out = y.data<float>();
  const int64_t n = x.element_count();
  const bool stream = streaming(n);
  execution.parallel_for(n, cache_line_grain<float>(), admitted(n, execution),
                         [&](int64_t begin, int64_t end) { fn_(in + begin, out + begin, end - begin, stream); });
}

KernelDef span_kernel_def(const ElementwiseSpec& spec, const std::string& implementation,
                          std::string (*unavailable)(const CpuFeatures&)) {
  KernelDef def;
  def.op_type = spec.op_type;
  def.since_version = spec.opsets.since;
  def.end_version = spec.opsets.end;
  def.element_type = ElementType::float32;
  def.implementation = implementation;
  def.unavailable_reason = unavailable;
  def.schema = span_elementwise_schema(elementwise_key(spec.op_type, def.element_type, spec.tuning_abi, implementation),
                                       spec.default_minimum_elements);
  return def;
}

void add_span_unary(KernelTable& table, const ElementwiseSpec& spec, const std::string& implementation,
                    std::string (*unavailable)(const CpuFeatures&), simd::UnarySpanFunction fn) {
  KernelDef def = span_kernel_def(spec, implementation, unavailable);
  const int64_t fallback = spec.default_minimum_elements;
  def.create = [fn, fallback](const KernelCreateInfo& info) -> std::unique_ptr<Kernel> {
    check_attributes(info, {});
    return std::make_unique<SpanUnaryKernel>(fn, fallback);
  };
  def.calibration_workload =
      unary_workload(spec.op_type, def.element_type, std::min(spec.opsets.end, std::max(spec.opsets.since, 17)));
  table.add(std::move(def));
}

}  // namespace onnx_light::runtime::kernels
