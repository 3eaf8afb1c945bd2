// Kernels that keep their output shape and copy plan across runs (InputSignature, CachedBroadcast:
// a steady state allocates nothing) must recompute them whenever an input shape or a shape
// operand's values change, and must not keep a plan from a run that threw. Each case runs one
// session on changing inputs and checks every result against the values the inputs call for.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "onnx_light/runtime/error.h"
#include "onnx_light/runtime/session.h"
#include "test_models.h"

using namespace onnx_light;
using namespace onnx_light::runtime;

namespace {

Tensor counting_floats(const Shape& shape) {
  Tensor t(ElementType::float32, shape);
  for (int64_t i = 0; i < t.element_count(); ++i) t.data<float>()[i] = static_cast<float>(i);
  return t;
}

Tensor int64_input(const std::vector<int64_t>& values) {
  Tensor t(ElementType::int64, {static_cast<int64_t>(values.size())});
  for (std::size_t i = 0; i < values.size(); ++i) t.data<int64_t>()[i] = values[i];
  return t;
}

std::vector<float> float_values(const Tensor& t) { return {t.data<float>(), t.data<float>() + t.element_count()}; }

RuntimeSession unoptimized_session(const std::string& body, int opset = 17) {
  RuntimeSessionOptions options;
  options.optimization = OptimizationLevel::none;  // the nodes as written, not folded
  return RuntimeSession(
      test::parse("<ir_version: 8, opset_import: [\"\" : " + std::to_string(opset) + "]>\n" + body), options);
}

}  // namespace

TEST_CASE("reshape_follows_a_changed_shape_operand_and_recovers_after_a_bad_one") {
  RuntimeSession session = unoptimized_session("g (float[2, 6] x, int64[2] s) => (float[] y) { y = Reshape(x, s) }");
  RuntimeContext context;
  context.set("x", counting_floats({2, 6}));
  context.set("s", int64_input({3, 4}));
  session.run(context);
  CHECK(context.get("y").shape() == Shape{3, 4});
  context.set("s", int64_input({4, -1}));
  session.run(context);
  CHECK(context.get("y").shape() == Shape{4, 3});
  context.set("s", int64_input({5, 5}));
  CHECK_THROWS_AS(session.run(context), InputError);
  context.set("s", int64_input({4, -1}));  // the same values as before the error: no stale plan
  session.run(context);
  CHECK(context.get("y").shape() == Shape{4, 3});
  context.set("s", int64_input({5, 5}));
  CHECK_THROWS_AS(session.run(context), InputError);
}

TEST_CASE("slice_follows_changed_starts_axes_steps_and_input_shape") {
  RuntimeSession session = unoptimized_session(
      "g (float[N, 4] x, int64[1] b, int64[1] e, int64[1] a, int64[1] st) => (float[] y) { y = Slice(x, b, e, a, st) }");
  RuntimeContext context;
  context.set("x", counting_floats({3, 4}));
  context.set("b", int64_input({0}));
  context.set("e", int64_input({2}));
  context.set("a", int64_input({0}));
  context.set("st", int64_input({1}));
  session.run(context);
  CHECK(float_values(context.get("y")) == std::vector<float>{0, 1, 2, 3, 4, 5, 6, 7});
  context.set("b", int64_input({1}));  // each step below changes one input only
  session.run(context);
  CHECK(float_values(context.get("y")) == std::vector<float>{4, 5, 6, 7});
  context.set("e", int64_input({3}));
  session.run(context);
  CHECK(float_values(context.get("y")) == std::vector<float>{4, 5, 6, 7, 8, 9, 10, 11});
  context.set("st", int64_input({2}));  // rows 1 (3 is past the end)
  session.run(context);
  CHECK(float_values(context.get("y")) == std::vector<float>{4, 5, 6, 7});
  context.set("a", int64_input({1}));  // columns 1 of [1, 3) step 2
  session.run(context);
  CHECK(float_values(context.get("y")) == std::vector<float>{1, 5, 9});
  context.set("x", counting_floats({5, 4}));
  session.run(context);
  CHECK(float_values(context.get("y")) == std::vector<float>{1, 5, 9, 13, 17});
}

TEST_CASE("transpose_concat_squeeze_follow_changed_shapes") {
  RuntimeSession session = unoptimized_session(
      "g (float[A, B] x, float[A, C] z, int64[1] axes) => (float[] t, float[] c, float[] u) {"
      " t = Transpose(x)\n c = Concat <axis = 1> (x, z)\n u = Unsqueeze(x, axes) }",
      13);
  RuntimeContext context;
  context.set("x", counting_floats({2, 3}));
  context.set("z", counting_floats({2, 1}));
  context.set("axes", int64_input({0}));
  session.run(context);
  CHECK(context.get("t").shape() == Shape{3, 2});
  CHECK(float_values(context.get("t")) == std::vector<float>{0, 3, 1, 4, 2, 5});
  CHECK(context.get("c").shape() == Shape{2, 4});
  CHECK(context.get("u").shape() == Shape{1, 2, 3});
  context.set("x", counting_floats({3, 2}));
  context.set("z", counting_floats({3, 2}));
  context.set("axes", int64_input({2}));
  session.run(context);
  CHECK(context.get("t").shape() == Shape{2, 3});
  CHECK(float_values(context.get("t")) == std::vector<float>{0, 2, 4, 1, 3, 5});
  CHECK(context.get("c").shape() == Shape{3, 4});
  CHECK(float_values(context.get("c")) == std::vector<float>{0, 1, 0, 1, 2, 3, 2, 3, 4, 5, 4, 5});
  CHECK(context.get("u").shape() == Shape{3, 2, 1});
}

TEST_CASE("broadcast_binary_and_layer_norm_follow_changed_shapes") {
  RuntimeSession session = unoptimized_session(
      "g (float[A, B] x, float[C, D] b, float[B] s) => (float[] m, float[] n) {"
      " m = Mul(x, b)\n n = LayerNormalization(x, s) }");
  RuntimeContext context;
  context.set("x", counting_floats({2, 3}));
  context.set("b", counting_floats({1, 3}));
  context.set("s", counting_floats({3}));
  session.run(context);
  CHECK(float_values(context.get("m")) == std::vector<float>{0, 1, 4, 0, 4, 10});
  context.set("b", counting_floats({2, 1}));
  session.run(context);
  CHECK(float_values(context.get("m")) == std::vector<float>{0, 0, 0, 3, 4, 5});
  context.set("x", counting_floats({1, 4}));
  context.set("b", counting_floats({3, 1}));
  context.set("s", counting_floats({4}));
  session.run(context);
  CHECK(context.get("m").shape() == Shape{3, 4});
  CHECK(context.get("n").shape() == Shape{1, 4});
  // x = 0..3: mean 1.5, scale 0..3; element 3 = (3 - 1.5) / sqrt(1.25 + eps) * 3.
  CHECK(context.get("n").data<float>()[3] == doctest::Approx(1.5 / std::sqrt(1.25 + 1e-5) * 3).epsilon(1e-5));
}

TEST_CASE("gather_follows_changed_indices_of_the_same_shape") {
  RuntimeSession session = unoptimized_session("g (float[4, 2] x, int64[2] i) => (float[] y) { y = Gather(x, i) }");
  RuntimeContext context;
  context.set("x", counting_floats({4, 2}));
  context.set("i", int64_input({0, 3}));
  session.run(context);
  CHECK(float_values(context.get("y")) == std::vector<float>{0, 1, 6, 7});
  context.set("i", int64_input({-1, 1}));
  session.run(context);
  CHECK(float_values(context.get("y")) == std::vector<float>{6, 7, 2, 3});
  context.set("i", int64_input({4, 0}));
  CHECK_THROWS_AS(session.run(context), InputError);
  context.set("i", int64_input({-1, 1}));
  session.run(context);
  CHECK(float_values(context.get("y")) == std::vector<float>{6, 7, 2, 3});
}
