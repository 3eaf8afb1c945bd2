// Unary elementwise operators. Each is a functor over the compute type and one registration;
// functors that read attributes are built by a MakeOp that also rejects unknown attributes.
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "kernels/elementwise.h"
#include "kernels/integer_math.h"
#include "kernels/isa_requirements.h"
#include "kernels/simd_elementwise.h"
#include "kernels/simd/softmax_f32.h"
#include "kernels/kernel_families.h"
#include "kernels/kernel_util.h"
#include "onnx_light/runtime/error.h"

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

struct SignOp {
  template <typename T>
  T operator()(T x) const {
    if constexpr (std::is_floating_point_v<T>) {
      if (std::isnan(x)) return x;
      return x > T(0) ? T(1) : (x < T(0) ? T(-1) : T(0));
    } else if constexpr (std::is_signed_v<T>) {
      return x > 0 ? T(1) : (x < 0 ? T(-1) : T(0));
    } else {
      return x > 0 ? T(1) : T(0);
    }
  }
};

// Plain math functions of the floating compute type.
#define ONNX_LIGHT_FLOAT_OP(NAME, EXPR)   \
  struct NAME {                           \
    template <typename T>                 \
    T operator()(T x) const {             \
      return EXPR;                        \
    }                                     \
  };
ONNX_LIGHT_FLOAT_OP(ReciprocalOp, T(1) / x)
ONNX_LIGHT_FLOAT_OP(SqrtOp, std::sqrt(x))
ONNX_LIGHT_FLOAT_OP(ExpOp, std::exp(x))
ONNX_LIGHT_FLOAT_OP(LogOp, std::log(x))
ONNX_LIGHT_FLOAT_OP(SinOp, std::sin(x))
ONNX_LIGHT_FLOAT_OP(CosOp, std::cos(x))
ONNX_LIGHT_FLOAT_OP(TanOp, std::tan(x))
ONNX_LIGHT_FLOAT_OP(AsinOp, std::asin(x))
ONNX_LIGHT_FLOAT_OP(AcosOp, std::acos(x))
ONNX_LIGHT_FLOAT_OP(AtanOp, std::atan(x))
ONNX_LIGHT_FLOAT_OP(SinhOp, std::sinh(x))
ONNX_LIGHT_FLOAT_OP(CoshOp, std::cosh(x))
ONNX_LIGHT_FLOAT_OP(AsinhOp, std::asinh(x))
ONNX_LIGHT_FLOAT_OP(AcoshOp, std::acosh(x))
ONNX_LIGHT_FLOAT_OP(AtanhOp, std::atanh(x))
ONNX_LIGHT_FLOAT_OP(ErfOp, std::erf(x))
ONNX_LIGHT_FLOAT_OP(FloorOp, std::floor(x))
ONNX_LIGHT_FLOAT_OP(CeilOp, std::ceil(x))
// nearbyint in the default rounding mode rounds half to even, as ONNX Round requires.
ONNX_LIGHT_FLOAT_OP(RoundOp, std::nearbyint(x))
ONNX_LIGHT_FLOAT_OP(TanhOp, std::tanh(x))
ONNX_LIGHT_FLOAT_OP(SoftsignOp, x / (T(1) + std::fabs(x)))
#undef ONNX_LIGHT_FLOAT_OP

struct SigmoidOp {
  template <typename T>
  T operator()(T x) const {
    // Split by sign so that exp never overflows.
    if (x >= T(0)) return T(1) / (T(1) + std::exp(-x));
    T e = std::exp(x);
    return e / (T(1) + e);
  }
};

struct SoftplusOp {
  template <typename T>
  T operator()(T x) const {
    // log(1 + exp(x)) without overflow for large x.
    return x > T(0) ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x));
  }
};

struct HardSigmoidOp {
  float alpha = 0.2f, beta = 0.5f;
  template <typename T>
  T operator()(T x) const {
    T v = T(alpha) * x + T(beta);
    return std::max(T(0), std::min(T(1), v));
  }
};

struct HardSwishOp {
  template <typename T>
  T operator()(T x) const {
    T v = x / T(6) + T(0.5);
    return x * std::max(T(0), std::min(T(1), v));
  }
};

struct LeakyReluOp {
  float alpha = 0.01f;
  template <typename T>
  T operator()(T x) const { return x < T(0) ? T(alpha) * x : x; }
};

struct EluOp {
  float alpha = 1.0f;
  template <typename T>
  T operator()(T x) const { return x < T(0) ? T(alpha) * std::expm1(x) : x; }
};

struct SeluOp {
  float alpha = 1.67326319217681884765625f, gamma = 1.05070102214813232421875f;
  template <typename T>
  T operator()(T x) const { return x <= T(0) ? T(gamma) * (T(alpha) * std::exp(x) - T(alpha)) : T(gamma) * x; }
};

struct CeluOp {
  float alpha = 1.0f;
  template <typename T>
  T operator()(T x) const {
    return std::max(T(0), x) + std::min(T(0), T(alpha) * std::expm1(x / T(alpha)));
  }
};

struct ThresholdedReluOp {
  float alpha = 1.0f;
  template <typename T>
  T operator()(T x) const { return x > T(alpha) ? x : T(0); }
};

struct ShrinkOp {
  float bias = 0.0f, lambd = 0.5f;
  template <typename T>
  T operator()(T x) const {
    // Integers compare and shift in double, then truncate back, as the reference does.
    const double v = static_cast<double>(x);
    if (v < -static_cast<double>(lambd)) return saturate_cast<T>(v + bias);
    if (v > static_cast<double>(lambd)) return saturate_cast<T>(v - bias);
    return T(0);
  }
};

struct IsNaNOp {
  template <typename T>
  bool operator()(T x) const { return std::isnan(x); }
};

struct IsInfOp {
  bool negative = true, positive = true;
  template <typename T>
  bool operator()(T x) const { return std::isinf(x) && (x > T(0) ? positive : negative); }
};

// Clip: bounds from attributes (opset 6-10) or from the optional scalar inputs 1 and 2, which
// are read at run time (they may be computed by other nodes).
template <typename T>
struct ClipOp {
  using C = compute_t<T>;
  C lo = std::numeric_limits<C>::lowest();
  C hi = std::numeric_limits<C>::max();
  bool bounds_from_inputs = false;

  ClipOp bind(const KernelExecution& execution) const {
    if (!bounds_from_inputs) return *this;
    ClipOp bound = *this;
    auto read = [&](std::size_t index, C& target) {
      const Tensor* t = execution.input(index);
      if (t == nullptr) return;
      if (t->element_type() != ElementTraits<T>::type || t->element_count() != 1)
        throw InputError(fmt::format("{}: input {} ({}) must be a {} scalar", execution.label(), index, t->describe(),
                                     element_type_name(ElementTraits<T>::type)));
      target = load<T>(t->data<T>()[0]);
    };
    read(1, bound.lo);
    read(2, bound.hi);
    return bound;
  }
  C operator()(C x) const {
    // max then min, as numpy.clip: when lo > hi every value becomes hi.
    C y = x < lo ? lo : x;
    return y > hi ? hi : y;
  }
};

template <typename F>
void for_float_types(F&& f) {
  for_each_type<float, double, Float16, BFloat16>(f);
}

}  // namespace

void register_unary_kernels(KernelTable& table) {
  // Abs is one tuning ABI ahead of the others: its threshold's default moved when the kernel
  // became vectorisable (2), then every kernel's profiles began to record the spin class (3).
  const ElementwiseSpec abs_spec{"Abs", {6}, kTuningAbi + 1, 32768}, neg_spec{"Neg", {6}}, relu_spec{"Relu", {6}};
  const ElementwiseSpec exp_spec{"Exp", {6}}, sigmoid_spec{"Sigmoid", {6}};
#if ONNX_LIGHT_X86_SIMD
  // Span loops first: the table prefers them wherever the host has the features.
  add_span_unary(table, abs_spec, "avx2", needs_avx2_fma, simd::abs_f32_avx2);
  add_span_unary(table, neg_spec, "avx2", needs_avx2_fma, simd::neg_f32_avx2);
  add_span_unary(table, relu_spec, "avx2", needs_avx2_fma, simd::relu_f32_avx2);
  // Exp and Sigmoid with a polynomial exp (within 2 and 4 ulp of the portable kernels, not bit for
  // bit: their own implementation keys): the portable loop calls std::exp per element.
  add_span_unary(table, exp_spec, "avx512", needs_avx512, simd::exp_span_f32_avx512);
  add_span_unary(table, exp_spec, "avx2", needs_avx2_fma, simd::exp_span_f32_avx2);
  add_span_unary(table, sigmoid_spec, "avx512", needs_avx512, simd::sigmoid_f32_avx512);
  add_span_unary(table, sigmoid_spec, "avx2", needs_avx2_fma, simd::sigmoid_f32_avx2);
#endif
  for_each_type<float, double, Float16, BFloat16, int8_t, int16_t, int32_t, int64_t, uint8_t, uint16_t, uint32_t,
                uint64_t>([&](auto t) {
    using T = decltype(t);
    add_unary<T>(table, abs_spec, no_attributes(AbsOp{}));
    add_unary<T>(table, {"Sign", {9}}, no_attributes(SignOp{}));
    add_unary<T>(table, {"Clip", {11}}, [](const KernelCreateInfo& info) {
      check_attributes(info, {});
      ClipOp<T> op;
      op.bounds_from_inputs = true;
      return op;
    });
    add_unary<T>(table, {"Shrink", {9}}, [](const KernelCreateInfo& info) {
      check_attributes(info, {"bias", "lambd"});
      return ShrinkOp{info.float_attribute("bias", 0.0f), info.float_attribute("lambd", 0.5f)};
    });
  });
  for_each_type<float, double, Float16, BFloat16, int8_t, int16_t, int32_t, int64_t>([&](auto t) {
    using T = decltype(t);
    add_unary<T>(table, neg_spec, no_attributes(NegOp{}));
    add_unary<T>(table, relu_spec, no_attributes(ReluOp{}));
  });
  for_float_types([&](auto t) {
    using T = decltype(t);
    add_unary<T>(table, {"Reciprocal", {6}}, no_attributes(ReciprocalOp{}));
    add_unary<T>(table, {"Sqrt", {6}}, no_attributes(SqrtOp{}));
    add_unary<T>(table, exp_spec, no_attributes(ExpOp{}));
    add_unary<T>(table, {"Log", {6}}, no_attributes(LogOp{}));
    add_unary<T>(table, {"Sin", {7}}, no_attributes(SinOp{}));
    add_unary<T>(table, {"Cos", {7}}, no_attributes(CosOp{}));
    add_unary<T>(table, {"Tan", {7}}, no_attributes(TanOp{}));
    add_unary<T>(table, {"Asin", {7}}, no_attributes(AsinOp{}));
    add_unary<T>(table, {"Acos", {7}}, no_attributes(AcosOp{}));
    add_unary<T>(table, {"Atan", {7}}, no_attributes(AtanOp{}));
    add_unary<T>(table, {"Sinh", {9}}, no_attributes(SinhOp{}));
    add_unary<T>(table, {"Cosh", {9}}, no_attributes(CoshOp{}));
    add_unary<T>(table, {"Asinh", {9}}, no_attributes(AsinhOp{}));
    add_unary<T>(table, {"Acosh", {9}}, no_attributes(AcoshOp{}));
    add_unary<T>(table, {"Atanh", {9}}, no_attributes(AtanhOp{}));
    add_unary<T>(table, {"Erf", {9}}, no_attributes(ErfOp{}));
    add_unary<T>(table, {"Floor", {6}}, no_attributes(FloorOp{}));
    add_unary<T>(table, {"Ceil", {6}}, no_attributes(CeilOp{}));
    add_unary<T>(table, {"Round", {11}}, no_attributes(RoundOp{}));
    add_unary<T>(table, sigmoid_spec, no_attributes(SigmoidOp{}));
    add_unary<T>(table, {"Tanh", {6}}, no_attributes(TanhOp{}));
    add_unary<T>(table, {"Softplus", {1}}, no_attributes(SoftplusOp{}));
    add_unary<T>(table, {"Softsign", {1}}, no_attributes(SoftsignOp{}));
    add_unary<T>(table, {"HardSwish", {14}}, no_attributes(HardSwishOp{}));
    add_unary<T>(table, {"HardSigmoid", {6}}, [](const KernelCreateInfo& info) {
      check_attributes(info, {"alpha", "beta"});
      return HardSigmoidOp{info.float_attribute("alpha", 0.2f), info.float_attribute("beta", 0.5f)};
    });
    add_unary<T>(table, {"LeakyRelu", {6}}, [](const KernelCreateInfo& info) {
      check_attributes(info, {"alpha"});
      return LeakyReluOp{info.float_attribute("alpha", 0.01f)};
    });
    add_unary<T>(table, {"Elu", {6}}, [](const KernelCreateInfo& info) {
      check_attributes(info, {"alpha"});
      return EluOp{info.float_attribute("alpha", 1.0f)};
    });
    add_unary<T>(table, {"Selu", {6}}, [](const KernelCreateInfo& info) {
      check_attributes(info, {"alpha", "gamma"});
      SeluOp op;
      return SeluOp{info.float_attribute("alpha", op.alpha), info.float_attribute("gamma", op.gamma)};
    });
    add_unary<T>(table, {"Celu", {12}}, [](const KernelCreateInfo& info) {
      check_attributes(info, {"alpha"});
      float alpha = info.float_attribute("alpha", 1.0f);
      if (alpha == 0.0f) throw ModelError(fmt::format("{}: attribute 'alpha' must not be 0", info.node_label()));
      return CeluOp{alpha};
    });
    add_unary<T>(table, {"ThresholdedRelu", {10}}, [](const KernelCreateInfo& info) {
      check_attributes(info, {"alpha"});
      return ThresholdedReluOp{info.float_attribute("alpha", 1.0f)};
    });
    add_unary<T>(table, {"Clip", {6, 10}}, [](const KernelCreateInfo& info) {
      check_attributes(info, {"min", "max"});
      ClipOp<T> op;
      op.lo = info.float_attribute("min", -std::numeric_limits<float>::max());
      op.hi = info.float_attribute("max", std::numeric_limits<float>::max());
      return op;
    });
    add_unary<T, bool>(table, {"IsNaN", {9}}, no_attributes(IsNaNOp{}));
    add_unary<T, bool>(table, {"IsInf", {10}}, [](const KernelCreateInfo& info) {
      check_attributes(info, {"detect_negative", "detect_positive"});
      return IsInfOp{info.int_attribute("detect_negative", 1) != 0, info.int_attribute("detect_positive", 1) != 0};
    });
  });
}

}  // namespace onnx_light::runtime::kernels
