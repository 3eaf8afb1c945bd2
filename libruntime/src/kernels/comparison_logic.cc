// Comparisons (numeric -> bool) and boolean logic, all with numpy broadcasting.
#include "kernels/elementwise.h"
#include "kernels/kernel_families.h"
#include "kernels/kernel_util.h"

namespace onnx_light::runtime::kernels {

namespace {

// 16-bit floats compare in float (exact), so NaN compares false everywhere but in !=.
struct EqualOp {
  template <typename T>
  bool operator()(T a, T b) const { return a == b; }
};
struct LessOp {
  template <typename T>
  bool operator()(T a, T b) const { return a < b; }
};
struct LessOrEqualOp {
  template <typename T>
  bool operator()(T a, T b) const { return a <= b; }
};
struct GreaterOp {
  template <typename T>
  bool operator()(T a, T b) const { return a > b; }
};
struct GreaterOrEqualOp {
  template <typename T>
  bool operator()(T a, T b) const { return a >= b; }
};
struct AndOp {
  bool operator()(bool a, bool b) const { return a && b; }
};
struct OrOp {
  bool operator()(bool a, bool b) const { return a || b; }
};
struct XorOp {
  bool operator()(bool a, bool b) const { return a != b; }
};

}  // namespace

void register_comparison_logic_kernels(KernelTable& table) {
  for_each_type<float, double, Float16, BFloat16, int8_t, int16_t, int32_t, int64_t, uint8_t, uint16_t, uint32_t,
                uint64_t>([&](auto t) {
    using T = decltype(t);
    add_binary<T, bool>(table, {"Equal", {7}}, no_attributes(EqualOp{}));
    add_binary<T, bool>(table, {"Less", {7}}, no_attributes(LessOp{}));
    add_binary<T, bool>(table, {"LessOrEqual", {12}}, no_attributes(LessOrEqualOp{}));
    add_binary<T, bool>(table, {"Greater", {7}}, no_attributes(GreaterOp{}));
    add_binary<T, bool>(table, {"GreaterOrEqual", {12}}, no_attributes(GreaterOrEqualOp{}));
  });
  add_binary<bool, bool>(table, {"Equal", {7}}, no_attributes(EqualOp{}));
  add_binary<bool>(table, {"And", {7}}, no_attributes(AndOp{}));
  add_binary<bool>(table, {"Or", {7}}, no_attributes(OrOp{}));
  add_binary<bool>(table, {"Xor", {7}}, no_attributes(XorOp{}));
  add_unary<bool>(table, {"Not", {1}}, no_attributes([](bool x) { return !x; }));
}

}  // namespace onnx_light::runtime::kernels
