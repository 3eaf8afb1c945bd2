// com.onnx_light Gelu (float32): y = 0.5 * x * (1 + erf(x / sqrt(2))), the exact (erf) GELU that
// the graph optimizer fuses from its decomposed form (Div/Erf/Add/Mul/Mul).
#include <cmath>

#include "kernels/elementwise.h"
#include "kernels/epilogue.h"
#include "kernels/kernel_families.h"
#include "kernels/kernel_util.h"

namespace onnx_light::runtime::kernels {

namespace {

struct GeluOp {
  template <typename T>
  T operator()(T x) const {
    return T(0.5) * x * (T(1) + std::erf(x * T(0.7071067811865476)));
  }
};

}  // namespace

void register_gelu_kernels(KernelTable& table) {
  KernelDef def = functor_kernel_def<float, float, UnaryKernel>({"Gelu", {1}}, stateless(GeluOp{}), unary_workload);
  def.domain = std::string(kFusedDomain);
  def.calibration_workload = nullptr;  // the one-node calibration models are ai.onnx
  table.add(std::move(def));
}

}  // namespace onnx_light::runtime::kernels
