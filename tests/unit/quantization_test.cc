// QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear, MatMulInteger and QLinearMatMul at the
// edges the node tests leave out: ties rounding to even, saturation of uint8 and int8, per-axis
// parameters (and a wrong count named), an all-zero or NaN input to the dynamic quantizer,
// per-row/per-column zero points, mixed int8 x uint8 operands, batched products.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "onnx_light/runtime/error.h"
#include "onnx_light/runtime/session.h"
#include "tensor_values.h"
#include "test_models.h"

using namespace onnx_light;
using namespace onnx_light::runtime;
using namespace onnx_light::test;

namespace {

std::map<std::string, Tensor> run_quantized(const std::string& graph, const NamedTensors& inputs) {
  return run_graph("g " + graph, inputs, 13);
}

std::string input_error(const std::string& graph, const std::vector<std::pair<std::string, Tensor>>& inputs) {
  try {
    run_quantized(graph, inputs);
  } catch (const InputError& e) {
    return e.what();
  }
  FAIL("no InputError");
  return {};
}

}  // namespace

TEST_CASE("quantize_linear_rounds_ties_to_even_and_saturates") {
  const std::string g = "(float[6] x, float s, uint8 z) => (uint8[6] y) { y = QuantizeLinear(x, s, z) }";
  auto out = run_quantized(g, {{"x", floats({6}, {2.5f, 3.5f, -2.5f, 1000.0f, -1000.0f, 0.49f})},
                     {"s", floats({}, {1.0f})},
                     {"z", u8({}, {10})}});
  // 2.5 -> 2, 3.5 -> 4, -2.5 -> -2 (+10 each); 1000 and -1000 saturate.
  CHECK(values<uint8_t>(out["y"]) == std::vector<uint8_t>{12, 14, 8, 255, 0, 10});
  const std::string signed_g = "(float[3] x, float s, int8 z) => (int8[3] y) { y = QuantizeLinear(x, s, z) }";
  auto signed_out = run_quantized(signed_g, {{"x", floats({3}, {-1000.0f, 1000.0f, -0.5f})}, {"s", floats({}, {0.5f})}, {"z", i8({}, {0})}});
  CHECK(values<int8_t>(signed_out["y"]) == std::vector<int8_t>{-128, 127, -1});
  // No zero point: uint8 with zero 0.
  auto no_zero = run_quantized("(float[2] x, float s) => (uint8[2] y) { y = QuantizeLinear(x, s) }",
                     {{"x", floats({2}, {-1.0f, 3.0f})}, {"s", floats({}, {1.0f})}});
  CHECK(values<uint8_t>(no_zero["y"]) == std::vector<uint8_t>{0, 3});
}

TEST_CASE("per_axis_parameters_follow_the_axis_and_a_wrong_count_is_named") {
  const std::string g =
      "(float[2, 3] x, float[3] s, uint8[3] z) => (uint8[2, 3] y) { y = QuantizeLinear <axis = -1> (x, s, z) }";
  auto out = run_quantized(g, {{"x", floats({2, 3}, {1, 2, 3, 4, 5, 6})}, {"s", floats({3}, {1, 2, 4})}, {"z", u8({3}, {0, 1, 2})}});
  // 5 / 2 = 2.5 and 6 / 4 = 1.5 round to even: 2 and 2.
  CHECK(values<uint8_t>(out["y"]) == std::vector<uint8_t>{1, 2, 3, 4, 3, 4});
  const std::string d = "(uint8[2, 2] x, float[2] s, uint8[2] z) => (float[2, 2] y) { y = DequantizeLinear <axis = 0> (x, s, z) }";
  auto deq = run_quantized(d, {{"x", u8({2, 2}, {10, 20, 10, 20})}, {"s", floats({2}, {0.5f, 2.0f})}, {"z", u8({2}, {10, 0})}});
  CHECK(values<float>(deq["y"]) == std::vector<float>{0.0f, 5.0f, 20.0f, 40.0f});
  const std::string any_count =
      "(float[2, 3] x, float[S] s, uint8[S] z) => (uint8[2, 3] y) { y = QuantizeLinear <axis = -1> (x, s, z) }";
  const std::string message =
      input_error(any_count, {{"x", floats({2, 3}, {1, 2, 3, 4, 5, 6})}, {"s", floats({2}, {1, 2})}, {"z", u8({2}, {0, 0})}});
  CHECK(message.find("QuantizeLinear node #0: scale has 2 values for axis 1 of size 3") == 0);
}

TEST_CASE("dynamic_quantize_linear_all_zero_and_nan_inputs") {
  const std::string g =
      "(float[3] x) => (uint8[3] y, float s, uint8 z) { y, s, z = DynamicQuantizeLinear(x) }";
  auto zeros = run_quantized(g, {{"x", floats({3}, {0, 0, 0})}});
  CHECK(values<uint8_t>(zeros["y"]) == std::vector<uint8_t>{0, 0, 0});
  CHECK(*zeros["s"].data<float>() == 0.0f);
  auto positive = run_quantized(g, {{"x", floats({3}, {0.0f, 2.55f, 1.0f})}});
  CHECK(*positive["z"].data<uint8_t>() == 0);
  CHECK(values<uint8_t>(positive["y"]) == std::vector<uint8_t>{0, 255, 100});
  const std::string message = input_error(g, {{"x", floats({3}, {1.0f, std::nanf(""), 0.0f})}});
  CHECK(message.find("DynamicQuantizeLinear node #0: x holds NaN at element 1") == 0);
}

TEST_CASE("matmul_integer_mixed_signs_per_row_zero_points_and_batches") {
  // int8 A [2, 2] with per-row zero points [1, -1], uint8 B [2, 2] with zero 3.
  const std::string g =
      "(int8[2, 2] a, uint8[2, 2] b, int8[2] az, uint8 bz) => (int32[2, 2] y) { y = MatMulInteger(a, b, az, bz) }";
  auto out = run_quantized(g, {{"a", i8({2, 2}, {-128, 127, 0, 5})},
                     {"b", u8({2, 2}, {255, 3, 0, 4})},
                     {"az", i8({2}, {1, -1})},
                     {"bz", u8({}, {3})}});
  // (a - az) = [[-129, 126], [1, 6]]; (b - bz) = [[252, 0], [-3, 1]].
  CHECK(values<int32_t>(out["y"]) == std::vector<int32_t>{-129 * 252 + 126 * -3, 126, 252 - 18, 6});
  const std::string batched = "(uint8[2, 1, 2] a, uint8[2, 2, 1] b) => (int32[2, 1, 1] y) { y = MatMulInteger(a, b) }";
  auto b_out = run_quantized(batched, {{"a", u8({2, 1, 2}, {1, 2, 3, 4})}, {"b", u8({2, 2, 1}, {5, 6, 7, 8})}});
  CHECK(values<int32_t>(b_out["y"]) == std::vector<int32_t>{17, 53});
}

TEST_CASE("qlinear_matmul_saturates_int8_output") {
  const std::string g =
      "(int8[1, 2] a, float as, int8 az, int8[2, 1] b, float bs, int8 bz, float ys, int8 yz) => (int8[1, 1] y) "
      "{ y = QLinearMatMul(a, as, az, b, bs, bz, ys, yz) }";
  auto run_with = [&](float y_scale) {
    return values<int8_t>(run_quantized(g, {{"a", i8({1, 2}, {100, 100})}, {"as", floats({}, {1.0f})}, {"az", i8({}, {0})},
                                  {"b", i8({2, 1}, {100, -50})}, {"bs", floats({}, {1.0f})}, {"bz", i8({}, {0})},
                                  {"ys", floats({}, {y_scale})}, {"yz", i8({}, {-3})}})["y"]);
  };
  CHECK(run_with(1.0f) == std::vector<int8_t>{127});     // 5000 saturates
  CHECK(run_with(1000.0f) == std::vector<int8_t>{2});    // 5000 / 1000 = 5, + (-3)
  CHECK(run_with(2000.0f) == std::vector<int8_t>{-1});   // 2.5 rounds to 2 (ties to even), + (-3)
}

TEST_CASE("conv_integer_matches_a_float_conv_of_the_shifted_operands_with_groups_strides_and_pads") {
  // uint8 X [1, 4, 7, 6], int8 W [4, 2, 3, 3] (group 2), per-channel W zero points: every int32
  // sum is exact in float too, so the float Conv of (x - xz) and (w - wz) gives the same numbers.
  Tensor x(ElementType::uint8, {1, 4, 7, 6}), w(ElementType::int8, {4, 2, 3, 3});
  Tensor xf(ElementType::float32, {1, 4, 7, 6}), wf(ElementType::float32, {4, 2, 3, 3});
  const std::vector<int8_t> wz{1, -2, 0, 5};
  for (int64_t i = 0; i < x.element_count(); ++i) {
    x.data<uint8_t>()[i] = static_cast<uint8_t>((i * 37 + 11) % 256);
    xf.data<float>()[i] = static_cast<float>(x.data<uint8_t>()[i]) - 3.0f;
  }
  for (int64_t i = 0; i < w.element_count(); ++i) {
    w.data<int8_t>()[i] = static_cast<int8_t>((i * 53) % 256 - 128);
    wf.data<float>()[i] = static_cast<float>(w.data<int8_t>()[i]) - static_cast<float>(wz[static_cast<std::size_t>(i / 18)]);
  }
  const std::string attrs = "<group = 2, strides = [2, 1], dilations = [1, 2], pads = [1, 2, 0, 1]>";
  auto q = run_quantized("(uint8[1, 4, 7, 6] x, int8[4, 2, 3, 3] w, uint8 xz, int8[4] wz) => (int32[1, 4, A, B] y) { y = ConvInteger " +
                   attrs + " (x, w, xz, wz) }",
               {{"x", x}, {"w", w}, {"xz", u8({}, {3})}, {"wz", i8({4}, wz)}});
  auto f = run_quantized("(float[1, 4, 7, 6] x, float[4, 2, 3, 3] w) => (float[1, 4, A, B] y) { y = Conv " + attrs + " (x, w) }",
               {{"x", xf}, {"w", wf}});
  REQUIRE(q["y"].shape() == f["y"].shape());
  for (int64_t i = 0; i < q["y"].element_count(); ++i)
    CHECK(static_cast<float>(q["y"].data<int32_t>()[i]) == f["y"].data<float>()[i]);
}

TEST_CASE("qlinear_conv_adds_bias_before_requantizing_and_saturates") {
  // 1x1 conv of one pixel: acc = (10 - 0) * (3 - 1) = 20, + bias 5 = 25; scale 1 * 1 / 2 -> 12.5
  // rounds to 12 (ties to even), + zero point 100 = 112; with y_scale 0.01 it saturates at 255.
  const std::string g =
      "(uint8[1, 1, 1, 1] x, float xs, uint8 xz, uint8[1, 1, 1, 1] w, float ws, uint8 wz, float ys, uint8 yz, int32[1] b) "
      "=> (uint8[1, 1, 1, 1] y) { y = QLinearConv(x, xs, xz, w, ws, wz, ys, yz, b) }";
  auto with = [&](float y_scale) {
    return values<uint8_t>(run_quantized(g, {{"x", u8({1, 1, 1, 1}, {10})}, {"xs", floats({}, {1})}, {"xz", u8({}, {0})},
                                   {"w", u8({1, 1, 1, 1}, {3})}, {"ws", floats({}, {1})}, {"wz", u8({}, {1})},
                                   {"ys", floats({}, {y_scale})}, {"yz", u8({}, {100})},
                                   {"b", tensor(ElementType::int32, {1}, std::vector<int32_t>{5})}})["y"]);
  };
  CHECK(with(2.0f) == std::vector<uint8_t>{112});
  CHECK(with(0.01f) == std::vector<uint8_t>{255});
}
