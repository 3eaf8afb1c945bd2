// Training mode. BatchNormalization with training_mode = 1 (opset 14+): normalized with the
// batch's own mean and biased variance, running statistics blended by momentum, at the edges the
// two ONNX node tests leave out: a large mean (no cancellation), one element per channel, an empty
// batch, a double-typed running mean beside float data, and thread counts. Dropout with a true
// training_mode: the kept fraction, the scale, the mask, seeds, ratio 0 and out of range.
#include <doctest/doctest.h>

#include <cmath>
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

const std::string kTrainingGraph =
    "g (float[N, C, H] x, float[C] s, float[C] b, float[C] m, float[C] v) => (float[N, C, H] y, float[C] rm, "
    "float[C] rv) { y, rm, rv = BatchNormalization <training_mode = 1, momentum = 0.75, epsilon = 0.001> "
    "(x, s, b, m, v) }";

// The reference in double: per channel mean and biased variance over (N, H).
struct TrainingReference {
  std::vector<double> y, running_mean, running_var;
};

TrainingReference training_reference(const std::vector<float>& x, int64_t n, int64_t c, int64_t h,
                                     const std::vector<float>& s, const std::vector<float>& b,
                                     const std::vector<float>& m, const std::vector<float>& v, double momentum,
                                     double epsilon) {
  TrainingReference r;
  r.y.resize(x.size());
  for (int64_t ch = 0; ch < c; ++ch) {
    double sum = 0;
    for (int64_t i = 0; i < n; ++i)
      for (int64_t k = 0; k < h; ++k) sum += x[static_cast<std::size_t>((i * c + ch) * h + k)];
    const double mean = sum / static_cast<double>(n * h);
    double squares = 0;
    for (int64_t i = 0; i < n; ++i)
      for (int64_t k = 0; k < h; ++k) {
        const double d = x[static_cast<std::size_t>((i * c + ch) * h + k)] - mean;
        squares += d * d;
      }
    const double var = squares / static_cast<double>(n * h);
    const auto j = static_cast<std::size_t>(ch);
    for (int64_t i = 0; i < n; ++i)
      for (int64_t k = 0; k < h; ++k) {
        const auto e = static_cast<std::size_t>((i * c + ch) * h + k);
        r.y[e] = (x[e] - mean) / std::sqrt(var + epsilon) * s[j] + b[j];
      }
    r.running_mean.push_back(m[j] * momentum + mean * (1 - momentum));
    r.running_var.push_back(v[j] * momentum + var * (1 - momentum));
  }
  return r;
}

void check_close_to_reference(const std::vector<float>& actual, const std::vector<double>& expected, double tolerance) {
  REQUIRE(actual.size() == expected.size());
  for (std::size_t i = 0; i < actual.size(); ++i) {
    CAPTURE(i);
    CHECK(std::abs(actual[i] - expected[i]) <= tolerance * (1 + std::abs(expected[i])));
  }
}

}  // namespace

TEST_CASE("batch_norm_training_uses_batch_statistics_and_blends_the_running_ones") {
  const int64_t n = 3, c = 2, h = 5;
  std::vector<float> x;
  // Channel 1 sits at 10,000 with a spread of a few units: a one-pass E[x^2] - E[x]^2 in float
  // would lose the variance entirely.
  for (int64_t i = 0; i < n * c * h; ++i) {
    const int64_t ch = (i / h) % c;
    x.push_back(ch == 0 ? static_cast<float>(i % 7) - 3.0f : 10000.0f + static_cast<float>(i % 5));
  }
  const std::vector<float> s{1.5f, 0.5f}, b{0.25f, -1.0f}, m{0.1f, 9000.0f}, v{2.0f, 4.0f};
  const TrainingReference expected = training_reference(x, n, c, h, s, b, m, v, 0.75, 0.001);
  for (int threads : {1, 3}) {
    CAPTURE(threads);
    auto out = run_graph(kTrainingGraph,
                         {{"x", floats({n, c, h}, x)}, {"s", floats({c}, s)}, {"b", floats({c}, b)},
                          {"m", floats({c}, m)}, {"v", floats({c}, v)}},
                         15, threads);
    check_close_to_reference(values<float>(out["y"]), expected.y, 1e-5);
    check_close_to_reference(values<float>(out["rm"]), expected.running_mean, 1e-6);
    check_close_to_reference(values<float>(out["rv"]), expected.running_var, 1e-5);
  }
}

TEST_CASE("batch_norm_training_one_element_per_channel_normalizes_to_the_bias") {
  // Variance 0: y = (x - x) / sqrt(0 + eps) * s + b = b exactly.
  auto out = run_graph(kTrainingGraph,
                       {{"x", floats({1, 2, 1}, {5.0f, -7.0f})}, {"s", floats({2}, {3.0f, 3.0f})},
                        {"b", floats({2}, {0.5f, -0.5f})}, {"m", floats({2}, {0.0f, 0.0f})},
                        {"v", floats({2}, {1.0f, 1.0f})}},
                       15);
  CHECK(values<float>(out["y"]) == std::vector<float>{0.5f, -0.5f});
  CHECK(values<float>(out["rv"]) == std::vector<float>{0.75f, 0.75f});
}

TEST_CASE("batch_norm_training_empty_batch_gives_nan_statistics_and_an_empty_y") {
  auto out = run_graph(kTrainingGraph,
                       {{"x", floats({0, 2, 3}, {})}, {"s", floats({2}, {1.0f, 1.0f})}, {"b", floats({2}, {0.0f, 0.0f})},
                        {"m", floats({2}, {1.0f, 2.0f})}, {"v", floats({2}, {1.0f, 1.0f})}},
                       15);
  CHECK(out["y"].element_count() == 0);
  for (float value : values<float>(out["rm"])) CHECK(std::isnan(value));
}

TEST_CASE("batch_norm_training_running_statistics_take_the_type_of_input_mean") {
  // Opset 15 lets input_mean/input_var (T2) differ from X (T).
  const std::string graph =
      "g (float[N, C] x, float[C] s, float[C] b, double[C] m, double[C] v) => (float[N, C] y, double[C] rm, "
      "double[C] rv) { y, rm, rv = BatchNormalization <training_mode = 1> (x, s, b, m, v) }";
  auto out = run_graph(graph,
                       {{"x", floats({2, 1}, {1.0f, 3.0f})}, {"s", floats({1}, {1.0f})}, {"b", floats({1}, {0.0f})},
                        {"m", tensor<double>(ElementType::float64, {1}, {10.0})}, {"v", tensor<double>(ElementType::float64, {1}, {0.0})}},
                       15);
  REQUIRE(out["rm"].element_type() == ElementType::float64);
  CHECK(values<double>(out["rm"])[0] == doctest::Approx(10.0 * 0.9 + 2.0 * 0.1));
  CHECK(values<double>(out["rv"])[0] == doctest::Approx(1.0 * 0.1));
}

TEST_CASE("batch_norm_inference_with_statistics_outputs_is_refused_at_creation") {
  const std::string graph =
      "g (float[N, C] x, float[C] s, float[C] b, float[C] m, float[C] v) => (float[N, C] y, float[C] rm, float[C] rv) "
      "{ y, rm, rv = BatchNormalization (x, s, b, m, v) }";
  CHECK_THROWS_WITH_AS(run_graph(graph,
                                 {{"x", floats({1, 1}, {1.0f})}, {"s", floats({1}, {1.0f})}, {"b", floats({1}, {0.0f})},
                                  {"m", floats({1}, {0.0f})}, {"v", floats({1}, {1.0f})}},
                                 15),
                       doctest::Contains("written only with training_mode = 1"), UnsupportedError);
}

namespace {

const std::string kTrainingDropout =
    "g (float[N] x, float r, bool t) => (float[N] y, bool[N] mask) { y, mask = Dropout <seed = 7> (x, r, t) }";

NamedTensors dropout_inputs(const std::vector<float>& x, float ratio, bool training) {
  Tensor t(ElementType::boolean, {});
  *t.data<bool>() = training;
  return {{"x", floats({static_cast<int64_t>(x.size())}, x)}, {"r", floats({}, {ratio})}, {"t", t}};
}

}  // namespace

TEST_CASE("dropout_training_keeps_about_one_minus_ratio_scaled_and_says_so_in_the_mask") {
  std::vector<float> x(20000);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = 1.0f + static_cast<float>(i % 13);
  for (float ratio : {0.25f, 0.75f}) {
    CAPTURE(ratio);
    auto out = run_graph(kTrainingDropout, dropout_inputs(x, ratio, true), 13);
    const auto y = values<float>(out["y"]);
    const auto mask = values<bool>(out["mask"]);
    int64_t kept = 0;
    for (std::size_t i = 0; i < x.size(); ++i) {
      if (mask[i]) {
        ++kept;
        CHECK(y[i] == x[i] * static_cast<float>(1.0 / (1.0 - ratio)));
      } else {
        CHECK(y[i] == 0.0f);
      }
    }
    // 20,000 draws: the kept fraction is within 2% of 1 - ratio (about 7 standard deviations).
    CHECK(std::abs(static_cast<double>(kept) / static_cast<double>(x.size()) - (1.0 - ratio)) < 0.02);
  }
}

TEST_CASE("dropout_training_seeded_draws_repeat_across_sessions_and_thread_counts_but_not_across_runs") {
  const std::vector<float> x(257, 1.0f);
  auto one = run_graph(kTrainingDropout, dropout_inputs(x, 0.5f, true), 13, 1);
  auto three = run_graph(kTrainingDropout, dropout_inputs(x, 0.5f, true), 13, 3);
  CHECK(values<bool>(one["mask"]) == values<bool>(three["mask"]));
  // A session's second run continues the sequence: another mask.
  RuntimeSession session(parse("<ir_version: 8, opset_import: [\"\" : 13]>\n" + kTrainingDropout));
  std::vector<std::vector<bool>> masks;
  for (int run = 0; run < 2; ++run) {
    RuntimeContext context;
    for (const auto& [name, t] : dropout_inputs(x, 0.5f, true)) context.set(name, t);
    session.run(context);
    masks.push_back(values<bool>(context.get("mask")));
  }
  CHECK(masks[0] == values<bool>(one["mask"]));
  CHECK(masks[0] != masks[1]);
}

TEST_CASE("dropout_ratio_zero_or_inference_copies_and_a_ratio_of_one_is_refused") {
  const std::vector<float> x{1.5f, -2.0f, 0.0f, 3.25f};
  for (const auto& [ratio, training] : {std::pair{0.0f, true}, std::pair{0.5f, false}}) {
    auto out = run_graph(kTrainingDropout, dropout_inputs(x, ratio, training), 13);
    CHECK(values<float>(out["y"]) == x);
    CHECK(values<bool>(out["mask"]) == std::vector<bool>(x.size(), true));
  }
  CHECK_THROWS_WITH_AS(run_graph(kTrainingDropout, dropout_inputs(x, 1.0f, true), 13),
                       doctest::Contains("must be in [0, 1) in training mode"), InputError);
  // An empty input draws nothing.
  CHECK(run_graph(kTrainingDropout, dropout_inputs({}, 0.5f, true), 13)["y"].element_count() == 0);
}
