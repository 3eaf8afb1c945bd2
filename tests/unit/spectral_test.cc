// DFT, STFT and MelWeightMatrix at the edges the six ONNX node tests leave out: each transform path
// (radix-2, direct sum, Bluestein for a prime length) against a double-precision DFT, padding and
// truncation by dft_length, one-sided spectra, the inverse round trip, thread-count independence,
// and the errors a malformed node or input gets.
#include <doctest/doctest.h>

#include <cmath>
#include <complex>
#include <map>
#include <numbers>
#include <random>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "onnx_light/runtime/error.h"
#include "onnx_light/runtime/session.h"
#include "tensor_values.h"
#include "test_models.h"

using namespace onnx_light;
using namespace onnx_light::runtime;
using namespace onnx_light::test;

namespace {

std::map<std::string, Tensor> run_spectral(const std::string& graph, const NamedTensors& inputs, int threads = 1) {
  return run_graph("g " + graph, inputs, 17, threads);
}

std::vector<float> random_values(std::size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

// The DFT of n complex values (interleaved), zero-padded or truncated to `length`, in double.
std::vector<std::complex<double>> reference_dft(const std::vector<float>& interleaved, int64_t length, bool inverse) {
  const auto count = static_cast<int64_t>(interleaved.size() / 2);
  std::vector<std::complex<double>> out(static_cast<std::size_t>(length));
  for (int64_t k = 0; k < length; ++k) {
    std::complex<double> s{};
    for (int64_t j = 0; j < std::min(count, length); ++j) {
      const double angle = (inverse ? 2.0 : -2.0) * std::numbers::pi * static_cast<double>(j * k % length) / static_cast<double>(length);
      s += std::complex<double>(interleaved[2 * j], interleaved[2 * j + 1]) * std::polar(1.0, angle);
    }
    out[static_cast<std::size_t>(k)] = inverse ? s / static_cast<double>(length) : s;
  }
  return out;
}

}  // namespace

TEST_CASE("dft_radix2_direct_and_bluestein_lengths_match_a_double_reference") {
  // 16: radix-2; 12: the direct sum; 97 (prime) and 100: Bluestein through a power of two.
  for (int64_t n : {16, 12, 97, 100}) {
    CAPTURE(n);
    const std::vector<float> x = random_values(static_cast<std::size_t>(2 * n), static_cast<unsigned>(n));
    const std::string g = fmt::format("(float[1,{0},2] x) => (float[1,{0},2] y) {{ y = DFT(x) }}", n);
    const std::vector<float> y = values<float>(run_spectral(g, {{"x", floats({1, n, 2}, x)}})["y"]);
    const auto expect = reference_dft(x, n, false);
    for (int64_t k = 0; k < n; ++k) {
      CHECK(y[static_cast<std::size_t>(2 * k)] == doctest::Approx(expect[static_cast<std::size_t>(k)].real()).epsilon(1e-4).scale(1.0));
      CHECK(y[static_cast<std::size_t>(2 * k + 1)] == doctest::Approx(expect[static_cast<std::size_t>(k)].imag()).epsilon(1e-4).scale(1.0));
    }
  }
}

TEST_CASE("dft_inverse_undoes_the_forward_transform") {
  const int64_t n = 30;
  const std::vector<float> x = random_values(2 * n, 3);
  const std::string g = "(float[1,30,2] x) => (float[1,30,2] y) { s = DFT(x)\n y = DFT <inverse = 1> (s) }";
  const std::vector<float> y = values<float>(run_spectral(g, {{"x", floats({1, n, 2}, x)}})["y"]);
  for (std::size_t i = 0; i < x.size(); ++i) CHECK(y[i] == doctest::Approx(x[i]).epsilon(1e-5).scale(1.0));
}

TEST_CASE("dft_length_pads_or_truncates_and_onesided_keeps_half_plus_one_bins") {
  const std::vector<float> real = {1, 2, 3, 4, 5, 6};
  std::vector<float> interleaved;
  for (float v : real) interleaved.insert(interleaved.end(), {v, 0.0f});
  for (int64_t length : {4, 10}) {
    CAPTURE(length);
    const std::string g = "(float[1,6,1] x, int64 n) => (float[1,N,2] y) { y = DFT <onesided = 1> (x, n) }";
    auto out = run_spectral(g, {{"x", floats({1, 6, 1}, real)}, {"n", int64s({}, {length})}});
    REQUIRE(out["y"].shape() == Shape{1, length / 2 + 1, 2});
    const std::vector<float> y = values<float>(out["y"]);
    const auto expect = reference_dft(interleaved, length, false);
    for (int64_t k = 0; k <= length / 2; ++k) {
      CHECK(y[static_cast<std::size_t>(2 * k)] == doctest::Approx(expect[static_cast<std::size_t>(k)].real()).epsilon(1e-5).scale(1.0));
      CHECK(y[static_cast<std::size_t>(2 * k + 1)] == doctest::Approx(expect[static_cast<std::size_t>(k)].imag()).epsilon(1e-5).scale(1.0));
    }
  }
}

TEST_CASE("dft_along_a_middle_axis_is_identical_at_one_and_three_threads") {
  const std::vector<float> x = random_values(4 * 96 * 20 * 2, 11);
  const std::string g = "(float[4,96,20,2] x) => (float[4,96,20,2] y) { y = DFT <axis = 1> (x) }";
  auto one = run_spectral(g, {{"x", floats({4, 96, 20, 2}, x)}}, 1);
  auto three = run_spectral(g, {{"x", floats({4, 96, 20, 2}, x)}}, 3);
  CHECK(values<float>(one["y"]) == values<float>(three["y"]));
  // Spot check one line against the reference: batch 2, column 7.
  std::vector<float> line;
  for (int64_t j = 0; j < 96; ++j) {
    const std::size_t at = static_cast<std::size_t>(((2 * 96 + j) * 20 + 7) * 2);
    line.insert(line.end(), {x[at], x[at + 1]});
  }
  const auto expect = reference_dft(line, 96, false);
  const std::vector<float> y = values<float>(one["y"]);
  for (int64_t k = 0; k < 96; ++k)
    CHECK(y[static_cast<std::size_t>(((2 * 96 + k) * 20 + 7) * 2)] ==
          doctest::Approx(expect[static_cast<std::size_t>(k)].real()).epsilon(1e-4).scale(1.0));
}

TEST_CASE("dft_rejects_the_batch_axis_a_bad_last_dimension_and_a_non_positive_length") {
  CHECK_THROWS_WITH_AS(run_spectral("(float[2,8,1] x) => (float[2,8,2] y) { y = DFT <axis = 0> (x) }", {{"x", floats({2, 8, 1}, std::vector<float>(16))}}),
                       doctest::Contains("axis 0 is not a signal dimension of [2, 8, 1] (1..1)"), InputError);
  CHECK_THROWS_WITH_AS(run_spectral("(float[2,8,3] x) => (float[2,8,2] y) { y = DFT(x) }", {{"x", floats({2, 8, 3}, std::vector<float>(48))}}),
                       doctest::Contains("input must be [batch, signal dims..., 1 or 2], not [2, 8, 3]"), InputError);
  CHECK_THROWS_WITH_AS(run_spectral("(float[2,8,1] x, int64 n) => (float[2,N,2] y) { y = DFT(x, n) }",
                           {{"x", floats({2, 8, 1}, std::vector<float>(16))}, {"n", int64s({}, {0})}}),
                       doctest::Contains("dft_length 0 must be positive"), InputError);
  CHECK_THROWS_WITH_AS(run_spectral("(float[2,8,1] x) => (float[2,5,2] y) { y = DFT <inverse = 1, onesided = 1> (x) }",
                           {{"x", floats({2, 8, 1}, std::vector<float>(16))}}),
                       doctest::Contains("inverse = 1 with onesided = 1 is not supported"), UnsupportedError);
  // Negative axes count from the last signal dimension.
  auto last = run_spectral("(float[1,3,4,1] x) => (float[1,3,4,2] y) { y = DFT <axis = -1> (x) }", {{"x", floats({1, 3, 4, 1}, {1, 1, 1, 1, 0, 0, 0, 0, 2, 0, 0, 0})}});
  CHECK(values<float>(last["y"]) == std::vector<float>{4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2, 0, 2, 0, 2, 0, 2, 0});
}

TEST_CASE("stft_frames_a_batch_and_checks_window_against_frame_length") {
  // Two signals of 10 samples, frames of 4 every 3 samples: 3 frames, one-sided 3 bins.
  std::vector<float> signal(20);
  for (std::size_t i = 0; i < signal.size(); ++i) signal[i] = static_cast<float>(i % 10) * (i < 10 ? 1.0f : -0.5f);
  const std::vector<float> window = {0.5f, 1.0f, 1.0f, 0.5f};
  auto out = run_spectral("(float[2,10,1] s, int64 step, float[4] w) => (float[2,F,B,2] y) { y = STFT(s, step, w) }",
                 {{"s", floats({2, 10, 1}, signal)}, {"step", int64s({}, {3})}, {"w", floats({4}, window)}});
  REQUIRE(out["y"].shape() == Shape{2, 3, 3, 2});
  const std::vector<float> y = values<float>(out["y"]);
  for (int b = 0; b < 2; ++b)
    for (int f = 0; f < 3; ++f) {
      std::vector<float> frame;
      for (int j = 0; j < 4; ++j) frame.insert(frame.end(), {signal[static_cast<std::size_t>(b * 10 + f * 3 + j)] * window[static_cast<std::size_t>(j)], 0.0f});
      const auto expect = reference_dft(frame, 4, false);
      for (int k = 0; k < 3; ++k) {
        const std::size_t at = static_cast<std::size_t>(((b * 3 + f) * 3 + k) * 2);
        CHECK(y[at] == doctest::Approx(expect[static_cast<std::size_t>(k)].real()).epsilon(1e-5).scale(1.0));
        CHECK(y[at + 1] == doctest::Approx(expect[static_cast<std::size_t>(k)].imag()).epsilon(1e-5).scale(1.0));
      }
    }
  CHECK_THROWS_WITH_AS(run_spectral("(float[2,10,1] s, int64 step, float[4] w, int64 n) => (float[2,F,B,2] y) { y = STFT(s, step, w, n) }",
                           {{"s", floats({2, 10, 1}, signal)}, {"step", int64s({}, {3})}, {"w", floats({4}, window)}, {"n", int64s({}, {5})}}),
                       doctest::Contains("frame_length 5 disagrees with the window's 4 samples"), InputError);
  CHECK_THROWS_WITH_AS(run_spectral("(float[2,10,1] s, int64 step, int64 n) => (float[2,F,B,2] y) { y = STFT(s, step, , n) }",
                           {{"s", floats({2, 10, 1}, signal)}, {"step", int64s({}, {3})}, {"n", int64s({}, {11})}}),
                       doctest::Contains("frame_length 11 is longer than the signal's 10 samples"), InputError);
  CHECK_THROWS_WITH_AS(run_spectral("(float[2,10,1] s, int64 step) => (float[2,F,B,2] y) { y = STFT(s, step) }",
                           {{"s", floats({2, 10, 1}, signal)}, {"step", int64s({}, {3})}}),
                       doctest::Contains("give a window or a frame_length"), InputError);
  CHECK_THROWS_WITH_AS(run_spectral("(float[2,10,1] s, int64 step, int64 n) => (float[2,F,B,2] y) { y = STFT(s, step, , n) }",
                           {{"s", floats({2, 10, 1}, signal)}, {"step", int64s({}, {0})}, {"n", int64s({}, {4})}}),
                       doctest::Contains("frame_step 0 must be positive"), InputError);
}

TEST_CASE("mel_weight_matrix_odd_dft_length_double_output_and_edge_errors") {
  const std::string g = "(int64 bins, int64 n, int64 rate, float lo, float hi) => (double[S,M] y) "
                        "{ y = MelWeightMatrix <output_datatype = 11> (bins, n, rate, lo, hi) }";
  // An odd dft_length puts the upper edge one bin past the spectrum: skipped, not written out of bounds.
  auto out = run_spectral(g, {{"bins", int64s({}, {4})}, {"n", int64s({}, {15})}, {"rate", int64s({}, {8000})},
                     {"lo", floats({}, {0.0f})}, {"hi", floats({}, {4000.0f})}});
  REQUIRE(out["y"].shape() == Shape{8, 4});
  REQUIRE(out["y"].element_type() == ElementType::float64);
  const std::vector<double> y = values<double>(out["y"]);
  for (double v : y) CHECK((v >= 0.0 && v <= 1.0));
  for (int m = 0; m < 4; ++m) {  // every filter has a peak of 1
    double peak = 0;
    for (int s = 0; s < 8; ++s) peak = std::max(peak, y[static_cast<std::size_t>(s * 4 + m)]);
    CHECK(peak == 1.0);
  }
  CHECK_THROWS_WITH_AS(run_spectral(g, {{"bins", int64s({}, {4})}, {"n", int64s({}, {16})}, {"rate", int64s({}, {8000})},
                               {"lo", floats({}, {0.0f})}, {"hi", floats({}, {5000.0f})}}),
                       doctest::Contains("must satisfy 0 <= lower < upper <= sample_rate / 2 = 4000"), InputError);
  CHECK_THROWS_WITH_AS(run_spectral(g, {{"bins", int64s({}, {0})}, {"n", int64s({}, {16})}, {"rate", int64s({}, {8000})},
                               {"lo", floats({}, {0.0f})}, {"hi", floats({}, {4000.0f})}}),
                       doctest::Contains("num_mel_bins 0, dft_length 16 and sample_rate 8000 must be positive"), InputError);
}
