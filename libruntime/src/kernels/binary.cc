// Binary arithmetic operators with numpy broadcasting.
#include "kernels/elementwise.h"
#include "kernels/integer_math.h"
#include "kernels/kernel_families.h"

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

}  // namespace

void register_binary_kernels(KernelTable& table) {
  for_each_type<float, double, Float16, BFloat16, int8_t, int16_t, int32_t, int64_t, uint8_t, uint16_t, uint32_t,
                uint64_t>([&](auto t) {
    using T = decltype(t);
    add_binary<T>(table, {"Add", {7}}, stateless(AddOp{}));
    add_binary<T>(table, {"Sub", {7}}, stateless(SubOp{}));
    add_binary<T>(table, {"Mul", {7}}, stateless(MulOp{}));
    add_binary<T>(table, {"Div", {7}}, stateless(DivOp{}));
  });
}

}  // namespace onnx_light::runtime::kernels
