// Cast and CastLike between every numeric type and bool. Conversions go straight from the
// source to the target type (never through a narrower intermediate), so that double -> float16
// rounds once. Float to integer truncates toward zero and saturates (NaN becomes 0): ONNX
// leaves out-of-range values undefined, and C++ would make them undefined behaviour.
#include <bit>
#include <cmath>
#include <cstring>

#include <fmt/format.h>

#include "onnx_light/runtime/runtime_scope.h"

#include "kernels/elementwise.h"
#include "kernels/kernel_families.h"
#include "kernels/kernel_util.h"
#include "onnx_light/runtime/error.h"

namespace onnx_light::runtime::kernels {

namespace {

// A double rounded to float with round-to-odd: the float's last bit records inexactness, so a
// second rounding to any format with at most 22 fraction bits (half, bfloat16) is correct.
float to_float_round_to_odd(double v) {
  float f = static_cast<float>(v);
  if (!std::isfinite(f) || static_cast<double>(f) == v || std::isnan(v)) return f;
  // Step toward zero when nearest rounding went away from zero, then mark the value inexact.
  if (std::fabs(static_cast<double>(f)) > std::fabs(v)) f = std::nextafter(f, 0.0f);
  uint32_t bits = std::bit_cast<uint32_t>(f) | 1u;
  return std::bit_cast<float>(bits);
}

template <typename To, typename From>
To convert(From v) {
  if constexpr (std::is_same_v<To, From>) {
    return v;
  } else if constexpr (std::is_same_v<From, Float16> || std::is_same_v<From, BFloat16>) {
    return convert<To>(load<From>(v));  // exact in float
  } else if constexpr (std::is_same_v<To, bool>) {
    return v != From(0);
  } else if constexpr (std::is_same_v<To, Float16> || std::is_same_v<To, BFloat16>) {
    float f;
    if constexpr (std::is_same_v<From, double>) f = to_float_round_to_odd(v);
    else if constexpr (std::is_integral_v<From> && sizeof(From) >= 4) f = to_float_round_to_odd(static_cast<double>(v));
    else f = static_cast<float>(v);
    return store<To>(f);
  } else if constexpr (std::is_floating_point_v<From> && std::is_integral_v<To>) {
    return saturate_cast<To>(static_cast<double>(v));
  } else {
    return static_cast<To>(v);  // integer <-> integer wraps (C++20), integer -> float rounds
  }
}

template <typename From, typename To>
class CastKernel final : public ThresholdKernel {
 public:
  CastKernel() : ThresholdKernel(kDefaultMinimumElements) {}
  void run(KernelExecution& execution) override {
    const Tensor& x = execution.required_input(0);
    Tensor& y = execution.output(0, ElementTraits<To>::type, x.shape());
    const From* in = x.data<From>();
    To* out = y.data<To>();
    const int64_t n = x.element_count();
    execution.parallel_for(n, cache_line_grain<To>(), admitted(n, execution), [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) out[i] = convert<To>(in[i]);
    });
  }
};

// The target type of a Cast (`to`) or CastLike (input 1's type) node.
ElementType target_type(const KernelCreateInfo& info, bool like) {
  if (like) {
    check_attributes(info, {});
    if (info.input_types.size() < 2 || info.input_types[1] == ElementType::undefined)
      throw ModelError(fmt::format("{}: input 1 (target_type) is required", info.node_label()));
    return info.input_types[1];
  }
  check_attributes(info, {"to"});
  if (!info.has_attribute("to")) throw ModelError(fmt::format("{}: attribute 'to' is required", info.node_label()));
  return static_cast<ElementType>(info.int_attribute("to", 0));
}

template <typename From>
std::unique_ptr<Kernel> make_cast(const KernelCreateInfo& info, bool like) {
  const ElementType to = target_type(info, like);
  std::unique_ptr<Kernel> kernel;
  for_each_type<float, double, Float16, BFloat16, int8_t, int16_t, int32_t, int64_t, uint8_t, uint16_t, uint32_t,
                uint64_t, bool>([&](auto t) {
    using To = decltype(t);
    if (ElementTraits<To>::type == to) kernel = std::make_unique<CastKernel<From, To>>();
  });
  if (!kernel) {
    const auto name = element_type_name(to);
    throw UnsupportedError(fmt::format("{}: {} to element type {} is not supported{}", info.node_label(),
                                       like ? "input 1 (target_type): casting" : "attribute 'to': casting",
                                       name.empty() ? std::to_string(static_cast<int>(to)) : std::string(name),
                                       to == ElementType::string ? fmt::format(" ({})", string_tensors_out_of_scope()) : ""));
  }
  return kernel;
}

}  // namespace

void register_cast_kernels(KernelTable& table) {
  for_each_type<float, double, Float16, BFloat16, int8_t, int16_t, int32_t, int64_t, uint8_t, uint16_t, uint32_t,
                uint64_t, bool>([&](auto t) {
    using From = decltype(t);
    constexpr ElementType type = ElementTraits<From>::type;
    for (bool like : {false, true}) {
      const std::string op = like ? "CastLike" : "Cast";
      KernelDef def = make_def(op, {like ? 15 : 6}, type,
                               parallel_threshold_schema(elementwise_key(op, type, 1), kDefaultMinimumElements));
      def.create = [like](const KernelCreateInfo& info) { return make_cast<From>(info, like); };
      def.output_types = [like](const KernelCreateInfo& info) {
        return std::vector<ElementType>{target_type(info, like)};
      };
      // Calibration casts to float (double from float).
      def.calibration_workload = [op, like](int64_t n, int, uint32_t seed) {
        constexpr ElementType element = ElementTraits<From>::type;  // not captured: clang 14 and GCC disagree on constexpr captures
        const ElementType to = element == ElementType::float32 ? ElementType::float64 : ElementType::float32;
        std::vector<std::pair<std::string, Tensor>> inputs{{"x", random_tensor(element, {n}, seed)}};
        if (like) inputs.emplace_back("like", Tensor(to, {1}));
        return one_node_workload(op, 15, like ? "" : fmt::format("to = {}", static_cast<int>(to)), std::move(inputs),
                                 {{"y", to, {n}}}, n);
      };
      table.add(std::move(def));
    }
  });
}

}  // namespace onnx_light::runtime::kernels
