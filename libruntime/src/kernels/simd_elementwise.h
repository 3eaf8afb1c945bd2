#pragma once
// Float32 elementwise kernels whose loops are ISA-specific span functions (simd/), registered
// ahead of the portable functor kernels of the same op. Their schema adds one value to the
// parallel threshold: store.streaming_minimum_elements, the output size from which stores bypass
// the caches.
#include <cstdint>
#include <memory>
#include <string>
#include <utility>

#include "kernels/elementwise.h"
#include "kernels/kernel_util.h"
#include "kernels/simd/elementwise_f32.h"

namespace onnx_light::runtime::kernels {

// Non-temporal stores pay once the output no longer stays in the caches between runs. Measured on
// the 2-vCPU Xeon VM (bench/session_bench, abs_serial_streaming vs abs_serial_cached): equal at
// 1e6 floats, about 15% faster at 1e7. 4 Mi elements (16 MiB of output) is past every L2 and most
// per-core L3 shares; `calibrate --parameter store.streaming_minimum_elements=...` refines it.
inline constexpr int64_t kDefaultStreamingMinimumElements = int64_t{1} << 22;
inline constexpr int64_t kStreamingStoresOff = int64_t{1} << 40;

TuningSchema span_elementwise_schema(TuningKey key, int64_t default_minimum_elements);

class SpanKernelBase : public ThresholdKernel {
 public:
  using ThresholdKernel::ThresholdKernel;
  void apply_tuning(const TuningValues& values) override;

 protected:
  bool streaming(int64_t n) const { return n >= streaming_minimum_elements_; }
  int64_t streaming_minimum_elements_ = kDefaultStreamingMinimumElements;
};

class SpanUnaryKernel final : public SpanKernelBase {
 public:
  SpanUnaryKernel(simd::UnarySpanFunction fn, int64_t minimum_elements) : SpanKernelBase(minimum_elements), fn_(fn) {}
  bool may_overwrite_input0() const override { return true; }  // each vector is loaded before it is stored
  void run(KernelExecution& execution) override;

 private:
  simd::UnarySpanFunction fn_;
};

// Op is the portable functor, used only for broadcast rows whose operands both repeat.
template <typename Op>
class SpanBinaryKernel final : public SpanKernelBase {
 public:
  SpanBinaryKernel(simd::BinarySpanFunction fn, Op op, int64_t minimum_elements)
      : SpanKernelBase(minimum_elements), fn_(fn), op_(std::move(op)) {}
  bool may_overwrite_input0() const override { return true; }

  void run(KernelExecution& execution) override {
    using Shape_ = simd::BinarySpanShape;
    const Tensor& a = execution.required_input(0);
    const Tensor& b = execution.required_input(1);
    check_input_type(execution, 1, b, ElementType::float32);
    // Equal shapes (the common case) need no copy, so repeated runs allocate nothing.
    const bool same = a.shape() == b.shape();
    const Shape* inputs[] = {&a.shape(), &b.shape()};
    if (!same) broadcast_.update(inputs, execution.label());
    const Shape& shape = same ? a.shape() : broadcast_.shape();
    Tensor& y = execution.output_for_overwrite(0, ElementType::float32, shape);
    const float* pa = a.data<float>();
    const float* pb = b.data<float>();
    float* out = y.data<float>();
    const int64_t n = y.element_count();
    const int64_t na = a.element_count();
    const int64_t nb = b.element_count();
    const bool stream = streaming(n);
    const int threads = admitted(n, execution);
    const int64_t grain = cache_line_grain<float>();
    if ((na == n && nb == n) || (nb == 1 && na == n) || (na == 1 && nb == n)) {
      const Shape_ span_shape = na != n ? Shape_::scalar_a : nb != n ? Shape_::scalar_b : Shape_::same;
      execution.parallel_for(n, grain, threads, [&](int64_t begin, int64_t end) {
        fn_(span_shape == Shape_::scalar_a ? pa : pa + begin, span_shape == Shape_::scalar_b ? pb : pb + begin,
            out + begin, end - begin, span_shape, stream);
      });
      return;
    }
    if (n == 0) {
      execution.parallel_for(0, grain, 1, [](int64_t, int64_t) {});
      return;
    }
    const BroadcastPlan& plan = broadcast_.plan();
    execution.parallel_for(n, grain, threads, [&](int64_t begin, int64_t end) {
      walk_broadcast<2>(plan, begin, end, [&](int64_t o, const int64_t* off, int64_t count, const int64_t* step) {
        const float* ra = pa + off[0];
        const float* rb = pb + off[1];
        if (step[0] == 1 && step[1] == 1) fn_(ra, rb, out + o, count, Shape_::same, stream);
        else if (step[0] == 1 && step[1] == 0) fn_(ra, rb, out + o, count, Shape_::scalar_b, stream);
        else if (step[0] == 0 && step[1] == 1) fn_(ra, rb, out + o, count, Shape_::scalar_a, stream);
        else
          for (int64_t i = 0; i < count; ++i) out[o + i] = op_(ra[i * step[0]], rb[i * step[1]]);
      });
    });
  }

 private:
  simd::BinarySpanFunction fn_;
  Op op_;
  CachedBroadcast broadcast_;
};

// The float32 definition of spec.op_type for `implementation` (checked by `unavailable`), with
// the same opsets and tuning ABI as the portable kernel; the caller adds create and workload.
KernelDef span_kernel_def(const ElementwiseSpec& spec, const std::string& implementation,
                          std::string (*unavailable)(const CpuFeatures&));

// Registers a float32 span kernel, calibrated with the portable kernel's workload.
void add_span_unary(KernelTable& table, const ElementwiseSpec& spec, const std::string& implementation,
                    std::string (*unavailable)(const CpuFeatures&), simd::UnarySpanFunction fn);

template <typename Op>
void add_span_binary(KernelTable& table, const ElementwiseSpec& spec, const std::string& implementation,
                     std::string (*unavailable)(const CpuFeatures&), simd::BinarySpanFunction fn, Op op) {
  KernelDef def = span_kernel_def(spec, implementation, unavailable);
  const int64_t fallback = spec.default_minimum_elements;
  def.create = [fn, op, fallback](const KernelCreateInfo& info) -> std::unique_ptr<Kernel> {
    check_attributes(info, {});
    return std::make_unique<SpanBinaryKernel<Op>>(fn, op, fallback);
  };
  def.calibration_workload =
      binary_workload(spec.op_type, def.element_type, std::min(spec.opsets.end, std::max(spec.opsets.since, 17)));
  def.calibration_variants = 3;
  table.add(std::move(def));
}

}  // namespace onnx_light::runtime::kernels
