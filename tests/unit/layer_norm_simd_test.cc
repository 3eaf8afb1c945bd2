// The vectorised float LayerNormalization ("avx2", "avx512") against a double-precision reference
// and the portable kernel: row lengths around the vector width (tails), with and without B, the
// Mean and InvStdDev outputs, rows split over 1..4 threads (bit-identical), and a broadcast Scale,
// which the vector loop does not take (the node then reports "portable_loop"). Each implementation
// runs through its own KernelDef in a one-implementation table; one this host cannot run is
// reported with a WARN and skipped.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "onnx_light/runtime/calibration_workload.h"
#include "onnx_light/runtime/kernel_table.h"
#include "onnx_light/runtime/session.h"
#include "onnx_light/runtime/tuning_registry.h"
#include "implementation_tables.h"
#include "test_models.h"

using namespace onnx_light;
using namespace onnx_light::runtime;

namespace {

const KernelTable& layer_norm_table(const std::string& implementation) {
  return test::table_with_only(
      "LayerNormalization", [](const KernelDef& d) { return d.op_type == "LayerNormalization"; }, implementation);
}

std::vector<std::string> layer_norm_runnable() {
  std::vector<std::string> out;
  for (const std::string impl : {"avx512", "avx2", "portable"})
    if (test::host_runs("LayerNormalization", [](const KernelDef& d) {
          return d.op_type == "LayerNormalization" && d.element_type == ElementType::float32;
        }, impl))
      out.push_back(impl);
  return out;
}

TuningRegistry& layer_norm_registry() { return test::threshold_one_registry(); }

std::vector<float> layer_norm_values(const Tensor& t) { return {t.data<float>(), t.data<float>() + t.element_count()}; }

Tensor tensor_of(const Shape& shape, const std::vector<float>& values) {
  Tensor t(ElementType::float32, shape);
  std::memcpy(t.data<float>(), values.data(), values.size() * sizeof(float));
  return t;
}

struct LayerNormResult {
  std::vector<float> y, mean, inv;
  std::string variant;
};

// LayerNormalization over the last axis of [rows, length]; `scale_length` < length broadcasts Scale.
LayerNormResult layer_norm(const std::string& impl, int64_t rows, int64_t length, const std::vector<float>& x,
                  const std::vector<float>& scale, const std::vector<float>* bias, int threads,
                  int64_t scale_length = -1) {
  if (scale_length < 0) scale_length = length;
  const std::string text = fmt::format(
      "<ir_version: 8, opset_import: [\"\" : 17]>\ng (float[{0},{1}] x, float[{2}] s{3}) => (float[{0},{1}] y, "
      "float[{0},1] mean, float[{0},1] inv) {{ y, mean, inv = LayerNormalization <axis = -1, epsilon = 0.001> (x, "
      "s{4}) }}",
      rows, length, scale_length, bias != nullptr ? fmt::format(", float[{}] b", length) : "",
      bias != nullptr ? ", b" : "");
  RuntimeSessionOptions options;
  options.parameters = RuntimeParameters(threads);
  options.registry = &layer_norm_registry();
  options.kernels = &layer_norm_table(impl);
  options.profile = true;
  RuntimeSession session(test::parse(text), options);
  RuntimeContext context;
  context.set("x", tensor_of({rows, length}, x));
  context.set("s", tensor_of({scale_length}, scale));
  if (bias != nullptr) context.set("b", tensor_of({length}, *bias));
  session.run(context);
  return {layer_norm_values(context.get("y")), layer_norm_values(context.get("mean")), layer_norm_values(context.get("inv")),
          session.profile().nodes.at(0).implementation};
}

std::vector<float> layer_norm_random_values(int64_t n, uint32_t seed, float scale = 1.0f, float offset = 0.0f) {
  std::vector<float> v = layer_norm_values(random_tensor(ElementType::float32, {n}, seed));
  for (float& f : v) f = f * scale + offset;
  return v;
}

void check_layer_norm_against_reference(const LayerNormResult& got, const std::vector<float>& x, const std::vector<float>& scale,
                             const std::vector<float>* bias, int64_t rows, int64_t length) {
  for (int64_t r = 0; r < rows; ++r) {
    double mean = 0, squares = 0;
    for (int64_t i = 0; i < length; ++i) mean += x[r * length + i];
    mean /= static_cast<double>(length);
    for (int64_t i = 0; i < length; ++i) squares += (x[r * length + i] - mean) * (x[r * length + i] - mean);
    const double inv = 1.0 / std::sqrt(squares / static_cast<double>(length) + 0.001);
    // Float statistics (stash_type 1): the mean is off by about sqrt(length) roundings of the
    // row's magnitude, and every output inherits that error times inv * scale.
    double magnitude = 0;
    for (int64_t i = 0; i < length; ++i) magnitude = std::max(magnitude, std::fabs(static_cast<double>(x[r * length + i])));
    const double mean_error = 8.0 * 0x1p-24 * std::sqrt(static_cast<double>(length)) * magnitude;
    CHECK(std::fabs(got.mean[r] - mean) <= mean_error);
    CHECK(got.inv[r] == doctest::Approx(inv).epsilon(1e-4));
    for (int64_t i = 0; i < length; ++i) {
      const auto k = static_cast<std::size_t>(i % static_cast<int64_t>(scale.size()));
      const double want = (x[r * length + i] - mean) * inv * scale[k] + (bias ? (*bias)[i] : 0.0);
      const double got_i = got.y[r * length + i];
      const double tol = 2e-5 * std::max(1.0, std::fabs(want)) + mean_error * inv * std::fabs(scale[k]);
      if (std::fabs(got_i - want) > tol) {
        FAIL_CHECK(fmt::format("row {} of length {}, element {}: got {:.9g}, reference {:.9g}", r, length, i, got_i, want));
        return;
      }
    }
  }
}

}  // namespace

TEST_CASE("layer_norm_rows_around_the_vector_width_match_the_double_reference") {
  for (const auto& impl : layer_norm_runnable()) {
    for (int64_t length : {1, 2, 7, 8, 9, 15, 16, 17, 31, 63, 64, 65, 127, 128, 129, 768}) {
      CAPTURE(impl);
      CAPTURE(length);
      const int64_t rows = 5;
      // An offset far from zero: a one-pass variance, or x * inv - mean * inv, would lose its digits.
      const auto x = layer_norm_random_values(rows * length, static_cast<uint32_t>(length), 3.0f, 100.0f);
      const auto scale = layer_norm_random_values(length, 7);
      const auto bias = layer_norm_random_values(length, 8);
      const LayerNormResult with_bias = layer_norm(impl, rows, length, x, scale, &bias, 1);
      CHECK(with_bias.variant == impl);
      check_layer_norm_against_reference(with_bias, x, scale, &bias, rows, length);
      check_layer_norm_against_reference(layer_norm(impl, rows, length, x, scale, nullptr, 1), x, scale, nullptr, rows, length);
    }
  }
}

TEST_CASE("layer_norm_rows_split_over_threads_are_bit_identical") {
  for (const auto& impl : layer_norm_runnable()) {
    CAPTURE(impl);
    const int64_t rows = 37, length = 200;
    const auto x = layer_norm_random_values(rows * length, 3);
    const auto scale = layer_norm_random_values(length, 4);
    const auto bias = layer_norm_random_values(length, 5);
    const LayerNormResult one = layer_norm(impl, rows, length, x, scale, &bias, 1);
    for (int threads = 2; threads <= 4; ++threads) {
      const LayerNormResult many = layer_norm(impl, rows, length, x, scale, &bias, threads);
      CHECK(std::memcmp(one.y.data(), many.y.data(), one.y.size() * sizeof(float)) == 0);
      CHECK(std::memcmp(one.mean.data(), many.mean.data(), one.mean.size() * sizeof(float)) == 0);
    }
  }
}

TEST_CASE("layer_norm_broadcast_scale_runs_the_portable_loop_and_says_so") {
  for (const auto& impl : layer_norm_runnable()) {
    CAPTURE(impl);
    const int64_t rows = 3, length = 40;
    const auto x = layer_norm_random_values(rows * length, 9);
    const std::vector<float> scale{2.0f};
    const auto bias = layer_norm_random_values(length, 10);
    const LayerNormResult r = layer_norm(impl, rows, length, x, scale, &bias, 1, 1);
    CHECK(r.variant == (impl == "portable" ? "portable" : "portable_loop"));
    check_layer_norm_against_reference(r, x, scale, &bias, rows, length);
  }
}

TEST_CASE("layer_norm_vector_and_portable_agree_within_a_few_ulp") {
  const auto impls = layer_norm_runnable();
  const int64_t rows = 16, length = 256;
  const auto x = layer_norm_random_values(rows * length, 21, 2.0f);
  const auto scale = layer_norm_random_values(length, 22);
  const auto bias = layer_norm_random_values(length, 23);
  const LayerNormResult portable = layer_norm("portable", rows, length, x, scale, &bias, 1);
  for (const auto& impl : impls) {
    CAPTURE(impl);
    const LayerNormResult r = layer_norm(impl, rows, length, x, scale, &bias, 1);
    for (std::size_t i = 0; i < r.y.size(); ++i)
      if (std::fabs(r.y[i] - portable.y[i]) > 1e-5f * std::max(1.0f, std::fabs(portable.y[i]))) {
        FAIL_CHECK(fmt::format("element {}: {} gives {:.9g}, portable {:.9g}", i, impl, r.y[i], portable.y[i]));
        break;
      }
  }
}
