// Binary arithmetic operators with numpy broadcasting.
#include <cmath>

#include <fmt/format.h>

#include "kernels/elementwise.h"
#include "kernels/integer_math.h"
#include "kernels/isa_requirements.h"
#include "kernels/simd_elementwise.h"
#include "kernels/kernel_families.h"
#include "kernels/kernel_util.h"
#include "onnx_light/runtime/error.h"

namespace onnx_light::runtime::kernels {

namespace {

struct AddOp {
  template <typename T>
  T operator()(T a, T b) const { return wrap_add(a, b); }
};
struct SubOp {
  template <typename T>
  T operator()(T a, T b) const { return wrap_sub(a, b); }
};
struct MulOp {
  template <typename T>
  T operator()(T a, T b) const { return wrap_mul(a, b); }
};
struct DivOp {
  template <typename T>
  T operator()(T a, T b) const { return checked_div(a, b); }
};

// Integer power by squaring with wrap-around; a negative exponent truncates the real result
// toward zero (only 1 and -1 keep a non-zero value).
template <typename T, typename E>
T integer_power(T base, E exponent) {
  if constexpr (std::is_signed_v<E>) {
    if (exponent < 0) {
      if (base == T(1)) return T(1);
      if constexpr (std::is_signed_v<T>)
        if (base == T(-1)) return exponent % 2 != 0 ? T(-1) : T(1);
      return T(0);
    }
  }
  T result = T(1);
  auto e = static_cast<std::make_unsigned_t<E>>(exponent);
  while (e != 0) {
    if (e & 1u) result = wrap_mul(result, base);
    base = wrap_mul(base, base);
    e >>= 1;
  }
  return result;
}

struct PowOp {
  template <typename A, typename B>
  A operator()(A a, B b) const {
    if constexpr (std::is_integral_v<A> && std::is_integral_v<B>) {
      return integer_power(a, b);
    } else if constexpr (std::is_same_v<A, float> && std::is_same_v<B, float>) {
      return std::pow(a, b);
    } else {
      // Mixed types compute in double and convert back, as numpy's type promotion does.
      return saturate_cast<A>(std::pow(static_cast<double>(a), static_cast<double>(b)));
    }
  }
};

struct ModOp {
  bool fmod = false;
  template <typename T>
  T operator()(T a, T b) const {
    if constexpr (std::is_floating_point_v<T>) {
      return std::fmod(a, b);
    } else {
      if (b == T(0)) throw InputError("integer modulo by zero");
      if constexpr (std::is_signed_v<T>) {
        if (b == T(-1)) return T(0);  // also avoids INT_MIN % -1
        T r = static_cast<T>(a % b);
        // fmod = 0: the result takes the divisor's sign (Python's %).
        if (!fmod && r != 0 && ((r < 0) != (b < 0))) r = static_cast<T>(r + b);
        return r;
      } else {
        return static_cast<T>(a % b);
      }
    }
  }
};

struct BitShiftOp {
  bool left = true;
  template <typename T>
  T operator()(T a, T b) const {
    if (b >= static_cast<T>(sizeof(T) * 8)) return T(0);  // shifting out every bit, without UB
    return left ? static_cast<T>(a << b) : static_cast<T>(a >> b);
  }
};

struct PReluOp {
  template <typename T>
  T operator()(T x, T slope) const { return x < T(0) ? wrap_mul(slope, x) : x; }
};

// Pow's exponent may have another type than its base: one definition per base type whose
// factory picks the kernel for the exponent type of this node.
template <typename T>
void add_pow(KernelTable& table) {
  constexpr ElementType type = ElementTraits<T>::type;
  KernelDef def = make_def("Pow", {7}, type, parallel_threshold_schema(elementwise_key("Pow", type, 1), kDefaultMinimumElements));
  def.create = [](const KernelCreateInfo& info) -> std::unique_ptr<Kernel> {
    check_attributes(info, {});
    const ElementType exponent = info.input_types.size() > 1 ? info.input_types[1] : ElementType::undefined;
    std::unique_ptr<Kernel> kernel;
    for_each_type<float, double, Float16, BFloat16, int8_t, int16_t, int32_t, int64_t, uint8_t, uint16_t, uint32_t,
                  uint64_t>([&](auto e) {
      using E = decltype(e);
      if (ElementTraits<E>::type == exponent)
        kernel = std::make_unique<BinaryKernel<T, T, PowOp, E>>(PowOp{}, kDefaultMinimumElements);
    });
    if (!kernel)
      throw UnsupportedError(fmt::format("{}: exponent type {} is not supported", info.node_label(),
                                         element_type_name(exponent)));
    return kernel;
  };
  def.calibration_workload = binary_workload("Pow", type, 17);
  def.calibration_variants = 3;
  table.add(std::move(def));
}

// A binary operator whose calibration model needs attributes (BitShift's direction, Mod's fmod).
template <typename T, typename MakeOp>
void add_binary_with_attributes(KernelTable& table, const std::string& op_type, OpsetRange opsets,
                                const std::string& calibration_attributes, MakeOp make_op) {
  constexpr ElementType type = ElementTraits<T>::type;
  KernelDef def = make_def(op_type, opsets, type, parallel_threshold_schema(elementwise_key(op_type, type, 1), kDefaultMinimumElements));
  def.create = [make_op](const KernelCreateInfo& info) -> std::unique_ptr<Kernel> {
    auto op = make_op(info);
    return std::make_unique<BinaryKernel<T, T, decltype(op)>>(std::move(op), kDefaultMinimumElements);
  };
  def.calibration_workload = [op_type, calibration_attributes](int64_t n, int, uint32_t seed) {
    constexpr ElementType element = ElementTraits<T>::type;  // not captured: clang 14 and GCC disagree on constexpr captures
    Tensor b = random_tensor(element, {n}, seed + 1);
    if constexpr (std::is_integral_v<T>)  // integer Mod must not divide by zero
      for (int64_t i = 0; i < n; ++i)
        if (b.data<T>()[i] == T(0)) b.data<T>()[i] = T(1);
    return one_node_workload(op_type, 13, calibration_attributes, {{"a", random_tensor(element, {n}, seed)}, {"b", std::move(b)}},
                             {{"y", element, {n}}}, n);
  };
  table.add(std::move(def));
}

}  // namespace

void register_binary_kernels(KernelTable& table) {
  const ElementwiseSpec add_spec{"Add", {7}}, sub_spec{"Sub", {7}}, mul_spec{"Mul", {7}}, div_spec{"Div", {7}};
#if ONNX_LIGHT_X86_SIMD
  // Span loops first: the table prefers them wherever the host has the features.
  add_span_binary(table, add_spec, "avx2", needs_avx2_fma, simd::add_f32_avx2, AddOp{});
  add_span_binary(table, sub_spec, "avx2", needs_avx2_fma, simd::sub_f32_avx2, SubOp{});
  add_span_binary(table, mul_spec, "avx2", needs_avx2_fma, simd::mul_f32_avx2, MulOp{});
  add_span_binary(table, div_spec, "avx2", needs_avx2_fma, simd::div_f32_avx2, DivOp{});
#endif
  for_each_type<float, double, Float16, BFloat16, int8_t, int16_t, int32_t, int64_t, uint8_t, uint16_t, uint32_t,
                uint64_t>([&](auto t) {
    using T = decltype(t);
    add_binary<T>(table, add_spec, no_attributes(AddOp{}));
    add_binary<T>(table, sub_spec, no_attributes(SubOp{}));
    add_binary<T>(table, mul_spec, no_attributes(MulOp{}));
    add_binary<T>(table, div_spec, no_attributes(DivOp{}));
    add_binary_with_attributes<T>(table, "Mod", {10}, is_floating_v<T> ? "fmod = 1" : "", [](const KernelCreateInfo& info) {
      check_attributes(info, {"fmod"});
      const bool fmod = info.int_attribute("fmod", 0) != 0;
      if (is_floating_v<T> && !fmod)
        throw ModelError(fmt::format("{}: attribute 'fmod' must be 1 for floating-point inputs", info.node_label()));
      return ModOp{fmod};
    });
  });
  for_each_type<float, double, Float16, BFloat16, int32_t, int64_t>([&](auto t) { add_pow<decltype(t)>(table); });
  for_each_type<float, double, Float16, BFloat16, int32_t, int64_t, uint32_t, uint64_t>([&](auto t) {
    add_binary<decltype(t)>(table, {"PRelu", {7}}, no_attributes(PReluOp{}));
  });
  for_each_type<uint8_t, uint16_t, uint32_t, uint64_t>([&](auto t) {
    add_binary_with_attributes<decltype(t)>(table, "BitShift", {11}, "direction = \"LEFT\"", [](const KernelCreateInfo& info) {
      check_attributes(info, {"direction"});
      const std::string direction = info.string_attribute("direction", "");
      if (direction != "LEFT" && direction != "RIGHT")
        throw ModelError(fmt::format("{}: attribute 'direction' must be \"LEFT\" or \"RIGHT\", not \"{}\"",
                                     info.node_label(), direction));
      return BitShiftOp{direction == "LEFT"};
    });
  });
}

}  // namespace onnx_light::runtime::kernels
