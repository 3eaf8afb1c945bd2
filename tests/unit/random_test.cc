// RandomUniform, RandomNormal, their *Like forms, Bernoulli and Multinomial: seeds repeat across
// sessions and continue across runs, nothing random is folded into a constant, the draws have the
// distribution asked for (means, bounds, frequencies over 20000 draws, with margins of > 6 standard
// errors), values do not depend on the thread count, and bad attributes and inputs are named.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
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

RuntimeSession session(const std::string& graph, int threads = 1) {
  RuntimeSessionOptions options;
  options.parameters = RuntimeParameters(threads);
  return RuntimeSession(test::parse("<ir_version: 8, opset_import: [\"\" : 17]>\ng " + graph), options);
}

Tensor run_once(RuntimeSession& s, const std::vector<std::pair<std::string, Tensor>>& inputs = {}) {
  RuntimeContext context;
  for (const auto& [name, t] : inputs) context.set(name, t);
  s.run(context);
  return context.get("y");
}

double mean(const std::vector<float>& v) { return std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size()); }

}  // namespace

TEST_CASE("seeded_generators_repeat_across_sessions_and_continue_across_runs") {
  const std::string g = "() => (float[100] y) { y = RandomUniform <shape = [100], seed = 3.0> () }";
  RuntimeSession a = session(g), b = session(g);
  const auto first = values<float>(run_once(a));
  CHECK(first == values<float>(run_once(b)));
  const auto second = values<float>(run_once(a));
  CHECK(second != first);  // not folded into a constant, and the sequence goes on
  CHECK(second == values<float>(run_once(b)));
  // A different seed, and no seed at all, draw other values.
  RuntimeSession other = session("() => (float[100] y) { y = RandomUniform <shape = [100], seed = 3.5> () }");
  CHECK(values<float>(run_once(other)) != first);
  RuntimeSession unseeded1 = session("() => (float[100] y) { y = RandomUniform <shape = [100]> () }");
  RuntimeSession unseeded2 = session("() => (float[100] y) { y = RandomUniform <shape = [100]> () }");
  CHECK(values<float>(run_once(unseeded1)) != values<float>(run_once(unseeded2)));
}

TEST_CASE("uniform_and_normal_draws_have_their_bounds_means_and_spreads") {
  RuntimeSession u = session("() => (float[20000] y) { y = RandomUniform <shape = [20000], low = -2.0, high = 6.0, seed = 1.0> () }");
  const auto uv = values<float>(run_once(u));
  CHECK(*std::min_element(uv.begin(), uv.end()) >= -2.0f);
  CHECK(*std::max_element(uv.begin(), uv.end()) < 6.0f);
  CHECK(std::fabs(mean(uv) - 2.0) < 0.1);  // sd of the mean 0.016
  RuntimeSession n = session("() => (double[20000] y) { y = RandomNormal <shape = [20000], mean = 1.5, scale = 0.5, dtype = 11, seed = 2.0> () }");
  const Tensor nt = run_once(n);
  REQUIRE(nt.element_type() == ElementType::float64);
  const auto nv = values<double>(nt);
  const double m = std::accumulate(nv.begin(), nv.end(), 0.0) / static_cast<double>(nv.size());
  double var = 0;
  for (double x : nv) var += (x - m) * (x - m);
  var /= static_cast<double>(nv.size() - 1);
  CHECK(std::fabs(m - 1.5) < 0.025);               // sd of the mean 0.0035
  CHECK(std::fabs(std::sqrt(var) - 0.5) < 0.02);  // sd of the sd 0.0025
}

TEST_CASE("like_generators_take_the_inputs_shape_and_type_unless_dtype_says_otherwise") {
  RuntimeSession s = session("(double[3,4] x) => (double[3,4] y) { y = RandomNormalLike <seed = 1.0> (x) }");
  const Tensor y = run_once(s, {{"x", tensor<double>(ElementType::float64, {3, 4}, std::vector<double>(12))}});
  CHECK(y.element_type() == ElementType::float64);
  CHECK(y.shape() == Shape{3, 4});
  RuntimeSession ints = session("(int64[2,5] x) => (float[2,5] y) { y = RandomUniformLike <dtype = 1, seed = 1.0> (x) }");
  CHECK(run_once(ints, {{"x", int64s({2, 5}, std::vector<int64_t>(10))}}).shape() == Shape{2, 5});
  CHECK_THROWS_WITH_AS(session("(int64[2] x) => (float[2] y) { y = RandomUniformLike(x) }"),
                       doctest::Contains("the input is int64, not a float type: give dtype"), UnsupportedError);
  CHECK_THROWS_WITH_AS(session("() => (float[2] y) { y = RandomUniform <shape = [2], low = 3.0, high = 1.0> () }"),
                       doctest::Contains("low 3 is above high 1"), UnsupportedError);
  CHECK_THROWS_WITH_AS(session("() => (float[2] y) { y = RandomUniform <shape = [2], dtype = 6> () }"),
                       doctest::Contains("dtype 6 is not supported"), Error);
}

TEST_CASE("bernoulli_certain_probabilities_are_exact_and_frequencies_follow_p") {
  RuntimeSession s = session("(float[20004] x) => (int32[20004] y) { y = Bernoulli <dtype = 6, seed = 5.0> (x) }");
  std::vector<float> p(20004, 0.3f);
  p[0] = 0.0f, p[1] = 1.0f, p[2] = 0.0f, p[3] = 1.0f;
  const auto y = values<int32_t>(run_once(s, {{"x", floats({20004}, p)}}));
  CHECK(y[0] == 0);
  CHECK(y[1] == 1);
  CHECK(y[2] == 0);
  CHECK(y[3] == 1);
  const double frequency = std::accumulate(y.begin() + 4, y.end(), 0.0) / 20000.0;
  CHECK(std::fabs(frequency - 0.3) < 0.02);  // sd 0.0032
  CHECK(std::all_of(y.begin(), y.end(), [](int32_t v) { return v == 0 || v == 1; }));
  RuntimeSession bad = session("(float[2] x) => (float[2] y) { y = Bernoulli(x) }");
  CHECK_THROWS_WITH_AS(run_once(bad, {{"x", floats({2}, {0.5f, 1.5f})}}), doctest::Contains("probability 1.5 at element 1 is outside [0, 1]"),
                       InputError);
}

TEST_CASE("multinomial_frequencies_follow_the_softmax_of_each_row") {
  RuntimeSession s = session("(float[2,3] x) => (int64[2,20000] y) { y = Multinomial <sample_size = 20000, dtype = 7, seed = 9.0> (x) }");
  // Row 0: log-probabilities of 0.2, 0.3, 0.5; row 1: class 2 only (the others -inf).
  const float inf = INFINITY;
  const Tensor y = run_once(s, {{"x", floats({2, 3}, {std::log(0.2f), std::log(0.3f), std::log(0.5f), -inf, -inf, 0.0f})}});
  REQUIRE(y.shape() == Shape{2, 20000});
  const auto v = values<int64_t>(y);
  std::vector<double> counts(3, 0.0);
  for (int i = 0; i < 20000; ++i) counts[static_cast<std::size_t>(v[static_cast<std::size_t>(i)])] += 1.0;
  CHECK(std::fabs(counts[0] / 20000 - 0.2) < 0.02);
  CHECK(std::fabs(counts[1] / 20000 - 0.3) < 0.02);
  CHECK(std::fabs(counts[2] / 20000 - 0.5) < 0.02);
  CHECK(std::all_of(v.begin() + 20000, v.end(), [](int64_t c) { return c == 2; }));
  CHECK_THROWS_WITH_AS(session("(float[2,3] x) => (int64[2,1] y) { y = Multinomial <dtype = 1> (x) }"),
                       doctest::Contains("dtype 1 is not supported (int32 or int64)"), Error);
}

TEST_CASE("seeded_draws_do_not_depend_on_the_thread_count") {
  const std::string g = "(float[70000] x) => (float[70000] y) { y = RandomNormalLike <seed = 4.0> (x) }";
  RuntimeSession one = session(g, 1), three = session(g, 3);
  const Tensor x = floats({70000}, std::vector<float>(70000));
  CHECK(values<float>(run_once(one, {{"x", x}})) == values<float>(run_once(three, {{"x", x}})));
}
