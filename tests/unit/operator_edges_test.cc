// Window functions, TopK, Unique, Det, MeanVarianceNormalization, LRN, the losses and
// NonMaxSuppression at the edges the ONNX node tests
// leave out: windows of one sample and as integers, TopK ties / NaN / K = 0 / K past the axis,
// singular and batched determinants, MVN over chosen axes, LRN windows at the channel ends, losses
// with ignored, weighted and out-of-range targets.
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

std::map<std::string, Tensor> run_at_opset(const std::string& graph, const NamedTensors& inputs, int opset = 17) {
  return run_graph("g " + graph, inputs, opset);
}

}  // namespace

TEST_CASE("windows_of_one_sample_symmetric_and_integer_output") {
  auto one = run_at_opset("(int64 n) => (float[N] y) { y = HannWindow(n) }", {{"n", int64s({}, {1})}});
  CHECK(values<float>(one["y"]) == std::vector<float>{1.0f});
  auto sym = run_at_opset("(int64 n) => (float[N] y) { y = HannWindow <periodic = 0> (n) }", {{"n", int64s({}, {3})}});
  CHECK(values<float>(sym["y"]) == std::vector<float>{0.0f, 1.0f, 0.0f});
  auto ints = run_at_opset("(int64 n) => (int64[N] y) { y = HannWindow <output_datatype = 7, periodic = 0> (n) }",
                  {{"n", int64s({}, {3})}});
  CHECK(values<int64_t>(ints["y"]) == std::vector<int64_t>{0, 1, 0});
  CHECK_THROWS_AS(run_at_opset("(int64 n) => (float[N] y) { y = HammingWindow(n) }", {{"n", int64s({}, {-1})}}), InputError);
}

TEST_CASE("top_k_ties_keep_the_lower_index_nan_is_largest_and_k_is_checked") {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const std::string g = "(float[5] x, int64[1] k) => (float[K] v, int64[K] i) { v, i = TopK(x, k) }";
  auto top = run_at_opset(g, {{"x", floats({5}, {1, 3, nan, 3, 2})}, {"k", int64s({1}, {3})}});
  CHECK(values<int64_t>(top["i"]) == std::vector<int64_t>{2, 1, 3});
  const std::string small = "(float[5] x, int64[1] k) => (float[K] v, int64[K] i) { v, i = TopK <largest = 0> (x, k) }";
  auto bottom = run_at_opset(small, {{"x", floats({5}, {1, 3, nan, 3, 1})}, {"k", int64s({1}, {3})}});
  CHECK(values<int64_t>(bottom["i"]) == std::vector<int64_t>{0, 4, 1});
  CHECK(run_at_opset(g, {{"x", floats({5}, {1, 2, 3, 4, 5})}, {"k", int64s({1}, {0})}})["v"].element_count() == 0);
  CHECK_THROWS_WITH_AS(run_at_opset(g, {{"x", floats({5}, {1, 2, 3, 4, 5})}, {"k", int64s({1}, {6})}}),
                       doctest::Contains("K 6 is outside [0, 5]"), InputError);
  // Along axis 0 of a matrix.
  auto columns = run_at_opset("(float[3, 2] x, int64[1] k) => (float[K, 2] v, int64[K, 2] i) { v, i = TopK <axis = 0> (x, k) }",
                     {{"x", floats({3, 2}, {1, 6, 5, 2, 3, 4})}, {"k", int64s({1}, {1})}});
  CHECK(values<float>(columns["v"]) == std::vector<float>{5, 6});
}

TEST_CASE("det_singular_permuted_and_batched") {
  auto d = run_at_opset("(float[3, 2, 2] x) => (float[3] y) { y = Det(x) }",
               {{"x", floats({3, 2, 2}, {1, 2, 2, 4, 0, 1, 1, 0, 3, 0, 0, 2})}});
  CHECK(values<float>(d["y"]) == std::vector<float>{0.0f, -1.0f, 6.0f});
  CHECK_THROWS_AS(run_at_opset("(float[2, 3] x) => (float y) { y = Det(x) }", {{"x", floats({2, 3}, {1, 2, 3, 4, 5, 6})}}), InputError);
}

TEST_CASE("mvn_over_the_last_axis_and_a_constant_row") {
  auto y = run_at_opset("(float[2, 2] x) => (float[2, 2] y) { y = MeanVarianceNormalization <axes = [1]> (x) }",
               {{"x", floats({2, 2}, {1, 3, 5, 5})}}, 13);
  const std::vector<float> v = values<float>(y["y"]);
  CHECK(v[0] == doctest::Approx(-1.0));
  CHECK(v[1] == doctest::Approx(1.0));
  CHECK(v[2] == 0.0f);  // zero deviation: (x - mean) / 1e-9 with x == mean
  CHECK(v[3] == 0.0f);
}

TEST_CASE("lrn_window_is_clipped_at_the_channel_ends") {
  // size 3, alpha 3 (alpha / size = 1), beta 1, bias 0: y = x / sum of squares over c-1..c+1.
  auto y = run_at_opset("(float[1, 3, 1, 1] x) => (float[1, 3, 1, 1] y) { y = LRN <size = 3, alpha = 3.0, beta = 1.0, bias = 0.0> (x) }",
               {{"x", floats({1, 3, 1, 1}, {1, 2, 3})}}, 13);
  const std::vector<float> v = values<float>(y["y"]);
  CHECK(v[0] == doctest::Approx(1.0 / 5.0));
  CHECK(v[1] == doctest::Approx(2.0 / 14.0));
  CHECK(v[2] == doctest::Approx(3.0 / 13.0));
}

TEST_CASE("nll_loss_target_out_of_range_all_ignored_mean_and_weight_shape") {
  const std::string g =
      "(float[2, 3] x, int64[2] t) => (float y) { y = NegativeLogLikelihoodLoss <ignore_index = -1> (x, t) }";
  const Tensor x = floats({2, 3}, {-1, -2, -3, -4, -5, -6});
  CHECK(*run_at_opset(g, {{"x", x}, {"t", int64s({2}, {0, 2})}})["y"].data<float>() == doctest::Approx(3.5));
  CHECK(*run_at_opset(g, {{"x", x}, {"t", int64s({2}, {-1, 1})}})["y"].data<float>() == doctest::Approx(5.0));
  CHECK(std::isnan(*run_at_opset(g, {{"x", x}, {"t", int64s({2}, {-1, -1})}})["y"].data<float>()));  // 0 / 0 weights
  CHECK_THROWS_WITH_AS(run_at_opset(g, {{"x", x}, {"t", int64s({2}, {0, 3})}}), doctest::Contains("target 3 at entry 1 is outside [0, 3)"),
                       InputError);
  const std::string weighted =
      "(float[2, 3] x, int64[2] t, float[W] w) => (float y) { y = NegativeLogLikelihoodLoss <reduction = \"sum\"> (x, t, w) }";
  CHECK(*run_at_opset(weighted, {{"x", x}, {"t", int64s({2}, {0, 2})}, {"w", floats({3}, {2, 0, 1})}})["y"].data<float>() ==
        doctest::Approx(8.0));
  CHECK_THROWS_WITH_AS(run_at_opset(weighted, {{"x", x}, {"t", int64s({2}, {0, 2})}, {"w", floats({2}, {1, 1})}}),
                       doctest::Contains("weight [2] must have shape [3]"), InputError);
}

TEST_CASE("softmax_cross_entropy_of_equal_scores_is_log_c") {
  auto r = run_at_opset("(float[1, 4] x, int64[1] t) => (float y, float[1, 4] p) { y, p = SoftmaxCrossEntropyLoss(x, t) }",
               {{"x", floats({1, 4}, {7, 7, 7, 7})}, {"t", int64s({1}, {2})}});
  CHECK(*r["y"].data<float>() == doctest::Approx(std::log(4.0)));
  CHECK(values<float>(r["p"])[3] == doctest::Approx(-std::log(4.0)));
}

TEST_CASE("non_max_suppression_zero_outputs_score_threshold_and_flipped_corners") {
  const std::string g =
      "(float[1, 3, 4] b, float[1, 1, 3] s, int64[1] m, float[1] iou, float[1] st) => (int64[N, 3] y) "
      "{ y = NonMaxSuppression(b, s, m, iou, st) }";
  // Box 1 is box 0 with its corners given the other way round; box 2 is apart.
  const Tensor boxes = floats({1, 3, 4}, {0, 0, 1, 1, 1, 1, 0, 0, 5, 5, 6, 6});
  const Tensor scores = floats({1, 1, 3}, {0.9f, 0.8f, 0.3f});
  auto all = run_at_opset(g, {{"b", boxes}, {"s", scores}, {"m", int64s({1}, {10})}, {"iou", floats({1}, {0.5f})}, {"st", floats({1}, {0.0f})}});
  CHECK(values<int64_t>(all["y"]) == std::vector<int64_t>{0, 0, 0, 0, 0, 2});
  auto filtered = run_at_opset(g, {{"b", boxes}, {"s", scores}, {"m", int64s({1}, {10})}, {"iou", floats({1}, {0.5f})}, {"st", floats({1}, {0.3f})}});
  CHECK(values<int64_t>(filtered["y"]) == std::vector<int64_t>{0, 0, 0});  // 0.3 is not above 0.3
  auto none = run_at_opset(g, {{"b", boxes}, {"s", scores}, {"m", int64s({1}, {0})}, {"iou", floats({1}, {0.5f})}, {"st", floats({1}, {0.0f})}});
  CHECK(none["y"].shape() == Shape{0, 3});
  CHECK_THROWS_WITH_AS(run_at_opset(g, {{"b", boxes}, {"s", scores}, {"m", int64s({1}, {1})}, {"iou", floats({1}, {1.5f})}, {"st", floats({1}, {0.0f})}}),
                       doctest::Contains("iou_threshold 1.5 is outside [0, 1]"), InputError);
}

TEST_CASE("unique_merges_nans_and_keeps_first_occurrence_order_unsorted") {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const std::string g =
      "(float[6] x) => (float[U] y, int64[U] i, int64[6] inv, int64[U] c) { y, i, inv, c = Unique <sorted = 0> (x) }";
  auto r = run_at_opset(g, {{"x", floats({6}, {3, nan, 1, 3, nan, 1})}});
  const std::vector<float> y = values<float>(r["y"]);
  REQUIRE(y.size() == 3);
  CHECK(y[0] == 3.0f);
  CHECK(std::isnan(y[1]));
  CHECK(y[2] == 1.0f);
  CHECK(values<int64_t>(r["i"]) == std::vector<int64_t>{0, 1, 2});
  CHECK(values<int64_t>(r["inv"]) == std::vector<int64_t>{0, 1, 2, 0, 1, 2});
  CHECK(values<int64_t>(r["c"]) == std::vector<int64_t>{2, 2, 2});
  auto sorted = run_at_opset("(float[4] x) => (float[U] y) { y = Unique(x) }", {{"x", floats({4}, {2, 1, 2, 0})}});
  CHECK(values<float>(sorted["y"]) == std::vector<float>{0, 1, 2});
}
