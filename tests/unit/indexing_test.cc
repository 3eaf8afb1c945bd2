// GatherND, ScatterND, ScatterElements, OneHot, Compress, NonZero, EyeLike, ReverseSequence and MaxUnpool at
// the edges the ONNX node tests leave out: negative and out-of-range indices (an InputError naming
// the node, nothing written), batch_dims, duplicate indices under reductions, opset-18 max/min,
// conditions shorter or longer than the axis, NaN counted as non-zero, empty tensors.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
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

struct Run {
  Tensor y;
  std::string error;
};

// One node `y = OP <attrs> (inputs...)` at `opset` over the named tensors.
Run run_indexing(const std::string& graph, const std::vector<std::pair<std::string, Tensor>>& inputs, int opset = 17) {
  RuntimeSessionOptions options;
  options.parameters = RuntimeParameters(1);
  RuntimeSession session(test::parse("<ir_version: 8, opset_import: [\"\" : " + std::to_string(opset) + "]>\ng " + graph),
                         options);
  RuntimeContext context;
  for (const auto& [name, t] : inputs) context.set(name, t);
  try {
    session.run(context);
  } catch (const InputError& e) {
    return {Tensor{}, e.what()};
  }
  return {context.get("y"), {}};
}

bool indexing_error_mentions(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace

TEST_CASE("gather_nd_negative_indices_batch_dims_and_out_of_range") {
  const std::string g = "(float[2, 3] x, int64[I, K] i) => (float[I] y) { y = GatherND(x, i) }";
  const Tensor x = floats({2, 3}, {0, 1, 2, 3, 4, 5});
  CHECK(values<float>(run_indexing(g, {{"x", x}, {"i", int64s({2, 2}, {-1, -1, 0, 1})}}).y) == std::vector<float>{5, 1});
  const std::string message = run_indexing(g, {{"x", x}, {"i", int64s({1, 2}, {2, 0})}}).error;
  CHECK(message.find("GatherND node #0: index 2 is out of range for a dimension of size 2") == 0);
  // batch_dims = 1: row b picks its own element.
  const std::string batched =
      "(float[2, 3] x, int64[2, 1] i) => (float[2] y) { y = GatherND <batch_dims = 1> (x, i) }";
  CHECK(values<float>(run_indexing(batched, {{"x", x}, {"i", int64s({2, 1}, {2, -3})}}).y) == std::vector<float>{2, 3});
  // Slices: a tuple shorter than the rank copies the rest.
  const std::string rows = "(float[2, 3] x, int64[1, 1] i) => (float[1, 3] y) { y = GatherND(x, i) }";
  CHECK(values<float>(run_indexing(rows, {{"x", x}, {"i", int64s({1, 1}, {1})}}).y) == std::vector<float>{3, 4, 5});
  // No tuples: an empty result.
  CHECK(run_indexing(g, {{"x", x}, {"i", int64s({0, 2}, {})}}).y.element_count() == 0);
}

TEST_CASE("scatter_nd_duplicates_reduce_in_order_and_max_min_need_opset_18") {
  const Tensor data = floats({4}, {1, 2, 3, 4});
  const Tensor idx = int64s({3, 1}, {1, 1, -1});
  const Tensor upd = floats({3}, {10, 20, 5});
  CHECK(values<float>(run_indexing("(float[4] d, int64[3, 1] i, float[3] u) => (float[4] y) { y = ScatterND <reduction = \"add\"> (d, i, u) }",
                          {{"d", data}, {"i", idx}, {"u", upd}}, 16)
                          .y) == std::vector<float>{1, 32, 3, 9});
  CHECK(values<float>(run_indexing("(float[4] d, int64[3, 1] i, float[3] u) => (float[4] y) { y = ScatterND <reduction = \"max\"> (d, i, u) }",
                          {{"d", data}, {"i", idx}, {"u", upd}}, 18)
                          .y) == std::vector<float>{1, 20, 3, 5});
  CHECK_THROWS_AS(run_indexing("(float[4] d, int64[3, 1] i, float[3] u) => (float[4] y) { y = ScatterND <reduction = \"min\"> (d, i, u) }",
                      {{"d", data}, {"i", idx}, {"u", upd}}, 16),
                  Error);
  const std::string message =
      run_indexing("(float[4] d, int64[1, 1] i, float[1] u) => (float[4] y) { y = ScatterND(d, i, u) }",
          {{"d", data}, {"i", int64s({1, 1}, {4})}, {"u", floats({1}, {9})}})
          .error;
  CHECK(message.find("ScatterND node #0: index 4 is out of range") == 0);
  const std::string shape_message =
      run_indexing("(float[4] d, int64[1, 1] i, float[2] u) => (float[4] y) { y = ScatterND(d, i, u) }",
          {{"d", data}, {"i", int64s({1, 1}, {0})}, {"u", floats({2}, {9, 9})}})
          .error;
  CHECK(indexing_error_mentions(shape_message, "updates [2] must have shape [1]"));
}

TEST_CASE("scatter_elements_negative_axis_negative_index_and_mul") {
  const std::string g =
      "(float[2, 2] d, int64[2, 1] i, float[2, 1] u) => (float[2, 2] y) { y = ScatterElements <axis = -1, "
      "reduction = \"mul\"> (d, i, u) }";
  const Run r = run_indexing(g, {{"d", floats({2, 2}, {1, 2, 3, 4})}, {"i", int64s({2, 1}, {-1, 0})}, {"u", floats({2, 1}, {10, 100})}}, 16);
  CHECK(values<float>(r.y) == std::vector<float>{1, 20, 300, 4});
  const std::string bad =
      run_indexing(g, {{"d", floats({2, 2}, {1, 2, 3, 4})}, {"i", int64s({2, 1}, {0, -3})}, {"u", floats({2, 1}, {1, 1})}}, 16).error;
  CHECK(bad.find("ScatterElements node #0: index -3 is out of range for a dimension of size 2") == 0);
}

TEST_CASE("one_hot_out_of_range_indices_give_off_values_and_axis_zero") {
  const std::string g =
      "(float[3] i, int64[1] d, float[2] v) => (float[4, 3] y) { y = OneHot <axis = 0> (i, d, v) }";
  const Run r = run_indexing(g, {{"i", floats({3}, {1.9f, -1, 7})}, {"d", int64s({1}, {4})}, {"v", floats({2}, {0, 5})}});
  // Column 0: index 1 (1.9 truncated); column 1: -1 wraps to 3; column 2: 7 is out of range.
  CHECK(values<float>(r.y) == std::vector<float>{0, 0, 0, 5, 0, 0, 0, 0, 0, 0, 5, 0});
  const std::string zero = run_indexing(g, {{"i", floats({3}, {0, 0, 0})}, {"d", int64s({1}, {0})}, {"v", floats({2}, {0, 1})}}).error;
  CHECK(indexing_error_mentions(zero, "depth 0 must be a positive count"));
}

TEST_CASE("compress_flattened_short_condition_and_too_long_condition") {
  const Tensor x = floats({2, 2}, {1, 2, 3, 4});
  const std::string flat = "(float[2, 2] x, bool[3] c) => (float[N] y) { y = Compress(x, c) }";
  CHECK(values<float>(run_indexing(flat, {{"x", x}, {"c", tensor<bool>(ElementType::boolean, {3}, {false, true, true})}}).y) ==
        std::vector<float>{2, 3});
  const std::string axis = "(float[2, 2] x, bool[3] c) => (float[N, 2] y) { y = Compress <axis = 0> (x, c) }";
  CHECK(indexing_error_mentions(run_indexing(axis, {{"x", x}, {"c", tensor<bool>(ElementType::boolean, {3}, {true, true, true})}}).error,
                 "condition has 3 entries for an axis of size 2"));
  const std::string none = "(float[2, 2] x, bool[1] c) => (float[2, N] y) { y = Compress <axis = -1> (x, c) }";
  CHECK(run_indexing(none, {{"x", x}, {"c", tensor<bool>(ElementType::boolean, {1}, {false})}}).y.shape() == Shape{2, 0});
}

TEST_CASE("non_zero_counts_nan_and_orders_row_major") {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const Run r = run_indexing("(float[2, 2] x) => (int64[2, N] y) { y = NonZero(x) }", {{"x", floats({2, 2}, {0, nan, -0.0f, 3})}});
  CHECK(r.y.shape() == Shape{2, 2});
  CHECK(values<int64_t>(r.y) == std::vector<int64_t>{0, 1, 1, 1});
  CHECK(run_indexing("(float[0] x) => (int64[1, N] y) { y = NonZero(x) }", {{"x", floats({0}, {})}}).y.shape() == Shape{1, 0});
}

TEST_CASE("eye_like_off_diagonal_past_the_matrix_and_dtype") {
  const Run far = run_indexing("(float[2, 3] x) => (float[2, 3] y) { y = EyeLike <k = 3> (x) }", {{"x", floats({2, 3}, {1, 1, 1, 1, 1, 1})}});
  CHECK(values<float>(far.y) == std::vector<float>(6, 0.0f));
  const Run typed = run_indexing("(float[2, 2] x) => (int64[2, 2] y) { y = EyeLike <dtype = 7, k = -1> (x) }",
                        {{"x", floats({2, 2}, {5, 5, 5, 5})}});
  CHECK(typed.y.element_type() == ElementType::int64);
  CHECK(values<int64_t>(typed.y) == std::vector<int64_t>{0, 0, 1, 0});
}

TEST_CASE("reverse_sequence_batch_axis_zero_and_lengths_out_of_range") {
  const std::string g =
      "(float[2, 3] x, int64[2] l) => (float[2, 3] y) { y = ReverseSequence <batch_axis = 0, time_axis = 1> (x, l) }";
  const Tensor x = floats({2, 3}, {1, 2, 3, 4, 5, 6});
  CHECK(values<float>(run_indexing(g, {{"x", x}, {"l", int64s({2}, {3, 0})}}).y) == std::vector<float>{3, 2, 1, 4, 5, 6});
  CHECK(indexing_error_mentions(run_indexing(g, {{"x", x}, {"l", int64s({2}, {4, 1})}}).error, "sequence length 4 is outside [0, 3]"));
}

TEST_CASE("max_unpool_index_outside_the_unpooled_shape_and_too_small_output_shape") {
  const std::string g =
      "(float[1, 1, 1, 2] x, int64[1, 1, 1, 2] i) => (float[1, 1, 2, 4] y) { y = MaxUnpool <kernel_shape = [2, 2], "
      "strides = [2, 2]> (x, i) }";
  const Tensor x = floats({1, 1, 1, 2}, {5, 6});
  CHECK(values<float>(run_indexing(g, {{"x", x}, {"i", int64s({1, 1, 1, 2}, {1, 6})}}).y) ==
        std::vector<float>{0, 5, 0, 0, 0, 0, 6, 0});
  CHECK(indexing_error_mentions(run_indexing(g, {{"x", x}, {"i", int64s({1, 1, 1, 2}, {1, 8})}}).error,
                 "index 8 is outside the unpooled shape [1, 1, 2, 4]"));
  const std::string shaped =
      "(float[1, 1, 1, 2] x, int64[1, 1, 1, 2] i, int64[4] s) => (float[1, 1, H, W] y) { y = MaxUnpool "
      "<kernel_shape = [2, 2], strides = [2, 2]> (x, i, s) }";
  CHECK(indexing_error_mentions(run_indexing(shaped, {{"x", x}, {"i", int64s({1, 1, 1, 2}, {1, 6})}, {"s", int64s({4}, {1, 1, 2, 3})}}).error,
                 "output_shape [1, 1, 2, 3] does not hold the unpooled shape [1, 1, 2, 4]"));
  // A larger output keeps each value at its coordinates.
  CHECK(values<float>(run_indexing(shaped, {{"x", x}, {"i", int64s({1, 1, 1, 2}, {1, 6})}, {"s", int64s({4}, {1, 1, 2, 5})}}).y) ==
        std::vector<float>{0, 5, 0, 0, 0, 0, 0, 6, 0, 0});
}
