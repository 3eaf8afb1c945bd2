// Unary elementwise operators. Each is a functor over the compute type and one registration.
#include <cmath>

#include "kernels/elementwise.h"
#include "kernels/integer_math.h"
#include "kernels/kernel_families.h"

namespace onnx_light::runtime::kernels {

namespace {

struct AbsOp {
  template <typename T>
  T operator()(T x) const {
    if constexpr (std::is_floating_point_v<T>) return std::fabs(x);
    else if constexpr (std::is_signed_v<T>) return x < 0 ? wrap_neg(x) : x;
    else return x;
  }
};

struct NegOp {
  template <typename T>
  T operator()(T x) const {
    if constexpr (std::is_integral_v<T>) return wrap_neg(x);
    else return -x;
  }
};

struct ReluOp {
  template <typename T>
  T operator()(T x) const {
    // NaN stays NaN, -0.0 becomes +0.0 as max(0, x) does.
    if constexpr (std::is_floating_point_v<T>) return x > T(0) || std::isnan(x) ? x : T(0);
    else return x > T(0) ? x : T(0);
  }
};

}  // namespace

void register_unary_kernels(KernelTable& table) {
  // Abs carries tuning ABI 2: its threshold's default moved when the kernel became vectorisable.
  for_each_type<float, double, Float16, BFloat16, int8_t, int16_t, int32_t, int64_t, uint8_t, uint16_t, uint32_t,
                uint64_t>([&](auto t) {
    using T = decltype(t);
    add_unary<T>(table, {"Abs", {6}, 2, 32768}, stateless(AbsOp{}));
  });
  for_each_type<float, double, Float16, BFloat16, int8_t, int16_t, int32_t, int64_t>([&](auto t) {
    using T = decltype(t);
    add_unary<T>(table, {"Neg", {6}}, stateless(NegOp{}));
    add_unary<T>(table, {"Relu", {6}}, stateless(ReluOp{}));
  });
}

}  // namespace onnx_light::runtime::kernels
