// The vectorised float Softmax / LogSoftmax / reductions ("avx2", "avx512") against the portable
// kernels and double-precision references: row lengths around the vector width, edge values
// (-inf, NaN, huge magnitudes), the exp approximation over a dense sweep, and bit-identical
// results across 1..4 threads. Every implementation is exercised through its own KernelDef
// (copied from cpu_kernel_table() into a one-implementation table); one this host cannot run is
// reported with a WARN and skipped.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "onnx_light/runtime/calibration_workload.h"
#include "onnx_light/runtime/cpu_features.h"
#include "onnx_light/runtime/kernel_table.h"
#include "onnx_light/runtime/session.h"
#include "onnx_light/runtime/tuning_registry.h"
#include "implementation_tables.h"
#include "test_models.h"

#if defined(__x86_64__) || defined(_M_X64)
// The ISA functions are internal to libruntime; their header needs only <cstdint>.
#include "kernels/simd/softmax_f32.h"
#define ONNX_LIGHT_TEST_X86 1
#endif

using namespace onnx_light;
using namespace onnx_light::runtime;

namespace {

constexpr float kFloatInf = std::numeric_limits<float>::infinity();
const float kNaN = std::numeric_limits<float>::quiet_NaN();

// The CPU table with `op_type` restricted to `implementation` (all types and opsets).
const KernelTable& softmax_table(const std::string& op_type, const std::string& implementation) {
  return test::table_with_only(op_type, [op_type](const KernelDef& d) { return d.op_type == op_type; }, implementation);
}

// The implementations of `op_type` (float) this host can run; WARNs about the others.
std::vector<std::string> softmax_runnable(const std::string& op_type, const std::vector<std::string>& wanted) {
  std::vector<std::string> out;
  for (const auto& impl : wanted)
    if (test::host_runs(op_type, [op_type](const KernelDef& d) {
          return d.op_type == op_type && d.element_type == ElementType::float32;
        }, impl))
      out.push_back(impl);
  return out;
}

const std::vector<std::string> kSoftmaxImpls{"avx512", "avx2", "portable"};
const std::vector<std::string> kReduceImpls{"avx2", "portable"};

TuningRegistry& softmax_registry() { return test::threshold_one_registry(); }

Tensor float_tensor(const Shape& shape, const std::vector<float>& values) {
  Tensor t(ElementType::float32, shape);
  std::memcpy(t.data<float>(), values.data(), values.size() * sizeof(float));
  return t;
}

std::vector<float> softmax_values(const Tensor& t) {
  const float* p = t.data<float>();
  return std::vector<float>(p, p + t.element_count());
}

std::string dims_text(const Shape& shape) {
  std::string s;
  for (std::size_t i = 0; i < shape.size(); ++i) s += (i ? "," : "") + std::to_string(shape[i]);
  return s;
}

// y = op(x) for a one-node model; `attributes` like "<axis = 1>".
std::vector<float> run_node(const std::string& op_type, const std::string& implementation, const Shape& in_shape,
                            const Shape& out_shape, const std::vector<float>& x, const std::string& attributes,
                            int threads, int opset = 13) {
  const std::string text = fmt::format(
      "<ir_version: 8, opset_import: [\"\" : {}]>\ng (float[{}] x) => (float[{}] y) {{ y = {} {} (x) }}", opset,
      dims_text(in_shape), dims_text(out_shape), op_type, attributes);
  RuntimeSessionOptions options;
  options.parameters = RuntimeParameters(threads);
  options.registry = &softmax_registry();
  options.kernels = &softmax_table(op_type, implementation);
  RuntimeSession session(test::parse(text), options);
  RuntimeContext context;
  context.set("x", float_tensor(in_shape, x));
  session.run(context);
  return softmax_values(context.get("y"));
}

std::vector<float> softmax(const std::string& impl, int64_t rows, int64_t length, const std::vector<float>& x,
                           int threads = 1, bool log = false) {
  return run_node(log ? "LogSoftmax" : "Softmax", impl, {rows, length}, {rows, length}, x, "<axis = -1>", threads);
}

std::vector<float> softmax_random_values(int64_t n, uint32_t seed, float scale = 1.0f) {
  Tensor t = random_tensor(ElementType::float32, {n}, seed);
  std::vector<float> v = softmax_values(t);
  for (float& f : v) f *= scale;
  return v;
}

// Double-precision reference of one row.
std::vector<double> reference_row(const float* x, int64_t n, bool log) {
  double max = -std::numeric_limits<double>::infinity();
  for (int64_t i = 0; i < n; ++i) max = std::max(max, static_cast<double>(x[i]));
  double sum = 0;
  for (int64_t i = 0; i < n; ++i) sum += std::exp(static_cast<double>(x[i]) - max);
  std::vector<double> y(static_cast<std::size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    y[i] = log ? static_cast<double>(x[i]) - max - std::log(sum) : std::exp(static_cast<double>(x[i]) - max) / sum;
  return y;
}

void check_softmax_against_reference(const std::vector<float>& x, const std::vector<float>& y, int64_t rows, int64_t length,
                             bool log) {
  for (int64_t r = 0; r < rows; ++r) {
    const auto ref = reference_row(x.data() + r * length, length, log);
    for (int64_t i = 0; i < length; ++i) {
      const double got = y[r * length + i];
      // float rounding of x - max alone moves exp by |x - max| * 2^-24 relative; sums add a few ulp.
      const double tol = log ? 1e-5 * std::max(1.0, std::fabs(ref[i])) : 1e-5 * std::max(ref[i], 1e-30) + 1e-37;
      if (std::fabs(got - ref[i]) > tol) {
        FAIL_CHECK(fmt::format("row {} of {}, element {}: got {:.9g}, reference {:.9g}", r, length, i, got, ref[i]));
        return;
      }
    }
  }
}

bool same_bits_f32(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

int64_t ulp_distance(float a, float b) {
  int32_t ia, ib;
  std::memcpy(&ia, &a, 4);
  std::memcpy(&ib, &b, 4);
  if (ia < 0) ia = std::numeric_limits<int32_t>::min() - ia;
  if (ib < 0) ib = std::numeric_limits<int32_t>::min() - ib;
  return std::abs(static_cast<int64_t>(ia) - static_cast<int64_t>(ib));
}

}  // namespace

TEST_SUITE("softmax_reduce_simd") {

#if defined(ONNX_LIGHT_TEST_X86)
TEST_CASE("exp_matches_std_exp_within_2ulp") {
  // Every 4099th float in [-110, 100] (about 250k values, from subnormal results to overflow),
  // an even sweep of 1M values over [-104, 89], and the edges.
  std::vector<float> xs;
  for (uint64_t bits = 0; bits < (uint64_t{1} << 32); bits += 4099) {
    const auto b = static_cast<uint32_t>(bits);
    float x;
    std::memcpy(&x, &b, 4);
    if (x >= -110.0f && x <= 100.0f) xs.push_back(x);
  }
  for (int i = 0; i <= 1000000; ++i) xs.push_back(-104.0f + 193.0f * static_cast<float>(i) / 1e6f);
  const float edges[] = {0.0f, -0.0f, 1e-30f, -1e-30f, 88.7228f, 88.72283f, 88.72284f, 89.0f, 100.0f, -87.33654f,
                         -87.3365f, -87.34f, -103.9f, -103.97f, -104.0f, -1e30f, 1e30f, kFloatInf, -kFloatInf};
  xs.insert(xs.end(), std::begin(edges), std::end(edges));
  const auto n = static_cast<int64_t>(xs.size());

  struct Variant {
    const char* name;
    void (*fn)(const float*, float*, int64_t);
    std::string implementation;
    std::string unavailable;
    bool nonpositive;
  };
  const CpuFeatures& f = host_cpu_features();
  const std::string no_avx2 = f.avx2 && f.fma3 ? "" : "needs avx2 and fma";
  const std::string no_avx512 = f.avx512f && f.avx512vl && f.avx512bw && f.avx2 && f.fma3 ? "" : "needs avx512f/vl/bw";
  namespace simd = onnx_light::runtime::kernels::simd;
  const Variant variants[] = {{"exp_f32_avx2", simd::exp_f32_avx2, "avx2", no_avx2, false},
                              {"exp_f32_avx512", simd::exp_f32_avx512, "avx512", no_avx512, false},
                              {"exp_nonpositive_f32_avx2", simd::exp_nonpositive_f32_avx2, "avx2", no_avx2, true},
                              {"exp_nonpositive_f32_avx512", simd::exp_nonpositive_f32_avx512, "avx512", no_avx512, true}};
  for (const Variant& v : variants) {
    if (!v.unavailable.empty()) {
      test::report_untested(v.name, v.implementation, v.unavailable);
      continue;
    }
    const std::string name = v.name;
    CAPTURE(name);
    std::vector<float> y(xs.size());
    v.fn(xs.data(), y.data(), n);
    int64_t worst = 0;
    float worst_x = 0;
    for (int64_t i = 0; i < n; ++i) {
      const float x = xs[i];
      if (v.nonpositive && x > 0) continue;
      const float ref = std::exp(x);
      if (v.nonpositive && x < -87.33654f) {  // documented: flushed to 0 below ln FLT_MIN
        if (y[i] != 0.0f) FAIL_CHECK(fmt::format("exp({:.9g}) = {:.9g}, expected 0 below ln FLT_MIN", x, y[i]));
        continue;
      }
      const int64_t d = ulp_distance(y[i], ref);
      if (d > worst) worst = d, worst_x = x;
    }
    MESSAGE(fmt::format("{}: worst {} ulp at x = {:.9g}", v.name, worst, worst_x));
    CHECK(worst <= 2);
    // NaN propagates; infinities.
    const float special[] = {kNaN, -kFloatInf, kFloatInf};
    float out[3];
    v.fn(special, out, 3);
    CHECK(std::isnan(out[0]));
    CHECK(out[1] == 0.0f);
    if (!v.nonpositive) CHECK(out[2] == kFloatInf);
    // Lengths not a multiple of the vector width leave the rest of y alone.
    std::vector<float> in(21, -1.0f), outs(24, 7.0f);
    v.fn(in.data(), outs.data(), 21);
    CHECK(outs[20] == doctest::Approx(std::exp(-1.0f)));
    CHECK(outs[21] == 7.0f);
  }
}
TEST_CASE("sigmoid_and_exp_spans_match_the_portable_kernels_within_4_and_2_ulp") {
  // The Sigmoid and Exp kernels of the avx2 / avx512 implementations: every 4099th float in
  // [-110, 110] and an even sweep over [-30, 30] (where sigmoid is neither 0 nor 1), against the
  // portable kernels' expressions in double rounded once.
  std::vector<float> xs;
  for (uint64_t bits = 0; bits < (uint64_t{1} << 32); bits += 4099) {
    const auto b = static_cast<uint32_t>(bits);
    float x;
    std::memcpy(&x, &b, 4);
    if (x >= -110.0f && x <= 110.0f) xs.push_back(x);
  }
  for (int i = 0; i <= 200000; ++i) xs.push_back(-30.0f + 60.0f * static_cast<float>(i) / 2e5f);
  const auto n = static_cast<int64_t>(xs.size());
  const CpuFeatures& f = host_cpu_features();
  namespace simd = onnx_light::runtime::kernels::simd;
  struct Variant {
    const char* name;
    void (*fn)(const float*, float*, int64_t, bool);
    bool available;
    bool sigmoid;
  };
  const bool avx2 = f.avx2 && f.fma3, avx512 = f.avx512f && f.avx512vl && f.avx512bw && avx2;
  const Variant variants[] = {{"sigmoid_f32_avx2", simd::sigmoid_f32_avx2, avx2, true},
                              {"sigmoid_f32_avx512", simd::sigmoid_f32_avx512, avx512, true},
                              {"exp_span_f32_avx2", simd::exp_span_f32_avx2, avx2, false},
                              {"exp_span_f32_avx512", simd::exp_span_f32_avx512, avx512, false}};
  for (const Variant& v : variants) {
    if (!v.available) {
      test::report_untested(v.name, std::string(v.name).find("avx512") != std::string::npos ? "avx512" : "avx2",
                            "the host lacks the features");
      continue;
    }
    const std::string name = v.name;
    CAPTURE(name);
    std::vector<float> y(xs.size());
    v.fn(xs.data(), y.data(), n, false);
    int64_t worst = 0;
    float worst_x = 0;
    for (int64_t i = 0; i < n; ++i) {
      const double x = xs[static_cast<std::size_t>(i)];
      const float ref = v.sigmoid ? static_cast<float>(1.0 / (1.0 + std::exp(-x))) : std::exp(xs[static_cast<std::size_t>(i)]);
      const int64_t d = ulp_distance(y[static_cast<std::size_t>(i)], ref);
      if (d > worst) worst = d, worst_x = xs[static_cast<std::size_t>(i)];
    }
    MESSAGE(fmt::format("{}: worst {} ulp at x = {:.9g}", v.name, worst, worst_x));
    CHECK(worst <= (v.sigmoid ? 4 : 2));
    if (!v.sigmoid) continue;
    const float special[] = {kNaN, -kFloatInf, kFloatInf, 0.0f, -0.0f, 100.0f, -100.0f};
    float out[7];
    v.fn(special, out, 7, true);
    CHECK(std::isnan(out[0]));
    CHECK(out[1] == 0.0f);
    CHECK(out[2] == 1.0f);
    CHECK(out[3] == 0.5f);
    CHECK(out[4] == 0.5f);
    CHECK(out[5] == 1.0f);
    CHECK(out[6] > 0.0f);  // 3.7e-44, a subnormal, as the portable e / (1 + e)
    CHECK(out[6] < 1e-43f);
  }
}
#endif

TEST_CASE("row_len_lt_vector") {
  for (const auto& impl : softmax_runnable("Softmax", kSoftmaxImpls)) {
    CAPTURE(impl);
    for (int64_t length = 1; length < 16; ++length) {
      CAPTURE(length);
      const std::vector<float> x = softmax_random_values(5 * length, 11 + static_cast<uint32_t>(length), 4.0f);
      check_softmax_against_reference(x, softmax(impl, 5, length, x), 5, length, false);
      check_softmax_against_reference(x, softmax(impl, 5, length, x, 1, true), 5, length, true);
    }
  }
}

TEST_CASE("row_len_not_multiple_of_8") {
  for (const auto& impl : softmax_runnable("Softmax", kSoftmaxImpls)) {
    CAPTURE(impl);
    for (int64_t length : {9, 17, 31, 33, 47, 63, 65, 100, 127, 129, 1000, 1023, 1025}) {
      CAPTURE(length);
      const std::vector<float> x = softmax_random_values(3 * length, 7 + static_cast<uint32_t>(length), 10.0f);
      check_softmax_against_reference(x, softmax(impl, 3, length, x), 3, length, false);
      check_softmax_against_reference(x, softmax(impl, 3, length, x, 1, true), 3, length, true);
    }
  }
}

TEST_CASE("all_equal_row") {
  for (const auto& impl : softmax_runnable("Softmax", kSoftmaxImpls)) {
    CAPTURE(impl);
    for (int64_t length : {1, 7, 8, 33, 1024}) {
      CAPTURE(length);
      const std::vector<float> x(static_cast<std::size_t>(length), 3.75f);
      for (float v : softmax(impl, 1, length, x)) CHECK(v == 1.0f / static_cast<float>(length));
      for (float v : softmax(impl, 1, length, x, 1, true))
        CHECK(v == doctest::Approx(-std::log(static_cast<double>(length))).epsilon(1e-6));
    }
  }
}

TEST_CASE("large_magnitudes_no_overflow") {
  for (const auto& impl : softmax_runnable("Softmax", kSoftmaxImpls)) {
    CAPTURE(impl);
    // Values that overflow exp without the max subtraction, and a spread beyond float's exp range.
    std::vector<float> x = softmax_random_values(4 * 100, 5, 1000.0f);
    for (int i = 0; i < 100; ++i) x[i] += 1e4f;
    x[100] = 3e38f;
    x[101] = -3e38f;
    const std::vector<float> y = softmax(impl, 4, 100, x);
    for (float v : y) REQUIRE(std::isfinite(v));
    for (int r = 0; r < 4; ++r) {
      double sum = 0;
      for (int i = 0; i < 100; ++i) sum += y[r * 100 + i];
      CHECK(sum == doctest::Approx(1.0).epsilon(1e-5));
    }
    CHECK(y[100] == 1.0f);
    CHECK(y[101] == 0.0f);
    // LogSoftmax: -3e38 - 3e38 overflows float to -inf in every implementation; check the other rows.
    const std::vector<float> ly = softmax(impl, 4, 100, x, 1, true);
    CHECK(ly[100] == 0.0f);
    CHECK(ly[101] == -kFloatInf);
    const std::vector<float> x_rest(x.begin() + 200, x.end()), ly_rest(ly.begin() + 200, ly.end());
    check_softmax_against_reference(x_rest, ly_rest, 2, 100, true);
  }
}

TEST_CASE("minus_inf_entries") {
  for (const auto& impl : softmax_runnable("Softmax", kSoftmaxImpls)) {
    CAPTURE(impl);
    // An attention-mask row: -inf entries get exactly 0 (LogSoftmax: -inf).
    const int64_t length = 37;
    std::vector<float> x = softmax_random_values(length, 3);
    for (int64_t i = 0; i < length; i += 3) x[i] = -kFloatInf;
    const std::vector<float> y = softmax(impl, 1, length, x);
    const std::vector<float> ly = softmax(impl, 1, length, x, 1, true);
    std::vector<float> finite;
    for (int64_t i = 0; i < length; ++i)
      if (i % 3 != 0) finite.push_back(x[i]);
    const auto ref = reference_row(finite.data(), static_cast<int64_t>(finite.size()), false);
    std::size_t k = 0;
    for (int64_t i = 0; i < length; ++i) {
      if (i % 3 == 0) {
        CHECK(y[i] == 0.0f);
        CHECK(ly[i] == -kFloatInf);
      } else {
        CHECK(y[i] == doctest::Approx(ref[k++]).epsilon(2e-6));
      }
    }
  }
}

TEST_CASE("nan_propagates") {
  for (const auto& impl : softmax_runnable("Softmax", kSoftmaxImpls)) {
    CAPTURE(impl);
    for (bool log : {false, true}) {
      for (int64_t at : {0, 5, 16, 40}) {
        std::vector<float> x = softmax_random_values(2 * 41, 9);
        x[at] = kNaN;
        const std::vector<float> y = softmax(impl, 2, 41, x, 1, log);
        for (int64_t i = 0; i < 41; ++i) CHECK(std::isnan(y[i]));      // the row with the NaN
        for (int64_t i = 41; i < 82; ++i) CHECK(std::isfinite(y[i]));  // the other row
      }
    }
  }
}

TEST_CASE("threads_1_to_4_bit_identical") {
  for (const auto& impl : softmax_runnable("Softmax", kSoftmaxImpls)) {
    CAPTURE(impl);
    for (bool log : {false, true}) {
      const std::vector<float> x = softmax_random_values(67 * 1000, 21, 8.0f);
      const std::vector<float> one = softmax(impl, 67, 1000, x, 1, log);
      for (int threads = 2; threads <= 4; ++threads) CHECK(same_bits_f32(one, softmax(impl, 67, 1000, x, threads, log)));
      // Strided rows (axis 1 of [3, 29, 37]).
      const std::vector<float> xs = softmax_random_values(3 * 29 * 37, 22, 8.0f);
      const std::string op = log ? "LogSoftmax" : "Softmax";
      const auto strided = [&](int threads) { return run_node(op, impl, {3, 29, 37}, {3, 29, 37}, xs, "<axis = 1>", threads); };
      const std::vector<float> s1 = strided(1);
      for (int threads = 2; threads <= 4; ++threads) CHECK(same_bits_f32(s1, strided(threads)));
    }
  }
  for (const auto& impl : softmax_runnable("ReduceSum", kReduceImpls)) {
    CAPTURE(impl);
    const std::vector<float> x = softmax_random_values(131 * 517, 23);
    for (const std::string op : {"ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceSumSquare", "ReduceL2", "ReduceL1"}) {
      CAPTURE(op);
      for (int axis : {0, 1}) {
        const Shape out = axis == 0 ? Shape{1, 517} : Shape{131, 1};
        const auto reduce = [&](int threads) {
          return run_node(op, impl, {131, 517}, out, x, fmt::format("<axes = [{}]>", axis), threads, 12);
        };
        const std::vector<float> one = reduce(1);
        for (int threads = 2; threads <= 4; ++threads) CHECK(same_bits_f32(one, reduce(threads)));
      }
    }
  }
}

TEST_CASE("log_softmax_matches_portable") {
  for (const auto& impl : softmax_runnable("LogSoftmax", {"avx512", "avx2"})) {
    CAPTURE(impl);
    for (int64_t length : {3, 8, 64, 1000}) {
      const std::vector<float> x = softmax_random_values(9 * length, 31, 20.0f);
      const std::vector<float> got = softmax(impl, 9, length, x, 2, true);
      const std::vector<float> ref = softmax("portable", 9, length, x, 2, true);
      for (std::size_t i = 0; i < got.size(); ++i) CHECK(got[i] == doctest::Approx(ref[i]).epsilon(1e-5));
    }
  }
}

TEST_CASE("softmax_matches_portable_contiguous_strided_and_coerced") {
  for (const auto& impl : softmax_runnable("Softmax", {"avx512", "avx2"})) {
    CAPTURE(impl);
    for (const std::string op : {"Softmax", "LogSoftmax"}) {
      CAPTURE(op);
      const std::vector<float> x = softmax_random_values(2 * 5 * 19 * 7, 41, 6.0f);
      const Shape shape{2, 5, 19, 7};
      struct Form { std::string attributes; int opset; };
      for (const Form& form : {Form{"<axis = 1>", 13}, Form{"<axis = 2>", 13}, Form{"<axis = -1>", 13},
                               Form{"<axis = 2>", 11}, Form{"<axis = 0>", 11}}) {
        CAPTURE(form.attributes);
        CAPTURE(form.opset);
        const std::vector<float> got = run_node(op, impl, shape, shape, x, form.attributes, 3, form.opset);
        const std::vector<float> ref = run_node(op, "portable", shape, shape, x, form.attributes, 1, form.opset);
        for (std::size_t i = 0; i < got.size(); ++i) CHECK(got[i] == doctest::Approx(ref[i]).epsilon(2e-6));
      }
    }
  }
}

TEST_CASE("reductions_match_portable") {
  if (softmax_runnable("ReduceSum", {"avx2"}).empty()) return;
  // Rows around the vector width (contiguous last-axis reductions, lane order: tolerance) and
  // column reductions (vertical, same order as portable: bit for bit, but for the fused SumSquare).
  for (int64_t length : {1, 5, 8, 13, 32, 33, 100, 1027}) {
    CAPTURE(length);
    std::vector<float> x = softmax_random_values(6 * length, 51 + static_cast<uint32_t>(length), 3.0f);
    for (const std::string op : {"ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceSumSquare", "ReduceL2", "ReduceL1"}) {
      CAPTURE(op);
      const auto rows = [&](const std::string& impl) {
        return run_node(op, impl, {6, length}, {6, 1}, x, "<axes = [1]>", 2, 12);
      };
      const std::vector<float> got = rows("avx2"), ref = rows("portable");
      for (std::size_t i = 0; i < got.size(); ++i) CHECK(got[i] == doctest::Approx(ref[i]).epsilon(1e-5));
      const auto columns = [&](const std::string& impl) {
        return run_node(op, impl, {6, length}, {1, length}, x, "<axes = [0]>", 2, 12);
      };
      const std::vector<float> got_columns = columns("avx2"), ref_columns = columns("portable");
      if (op == "ReduceSumSquare" || op == "ReduceL2") {  // fused multiply-add: last bits may differ
        for (std::size_t i = 0; i < got_columns.size(); ++i)
          CHECK(got_columns[i] == doctest::Approx(ref_columns[i]).epsilon(1e-6));
      } else {
        CHECK(same_bits_f32(got_columns, ref_columns));
      }
    }
  }
  // Outer axes of a 3-D tensor (reduced dims before and after a kept one).
  const std::vector<float> x = softmax_random_values(4 * 9 * 40, 61);
  for (const std::string axes : {"<axes = [0, 1]>", "<axes = [0]>", "<axes = [1, 2]>", "<axes = [0, 2]>"}) {
    CAPTURE(axes);
    const Shape out = axes == "<axes = [0, 1]>" ? Shape{1, 1, 40}
                      : axes == "<axes = [0]>"  ? Shape{1, 9, 40}
                      : axes == "<axes = [1, 2]>" ? Shape{4, 1, 1}
                                                               : Shape{1, 9, 1};
    const std::vector<float> got = run_node("ReduceSum", "avx2", {4, 9, 40}, out, x, axes, 3, 12);
    const std::vector<float> ref = run_node("ReduceSum", "portable", {4, 9, 40}, out, x, axes, 1, 12);
    for (std::size_t i = 0; i < got.size(); ++i) CHECK(got[i] == doctest::Approx(ref[i]).epsilon(1e-5));
  }
}

TEST_CASE("reduce_max_min_nan_propagates") {
  for (const auto& impl : softmax_runnable("ReduceMax", kReduceImpls)) {
    CAPTURE(impl);
    for (const std::string op : {"ReduceMax", "ReduceMin"}) {
      CAPTURE(op);
      std::vector<float> x = softmax_random_values(4 * 45, 71);
      x[45 + 17] = kNaN;  // row 1, column 17
      x[3 * 45 + 44] = kNaN;  // row 3, last column (a vector tail)
      const std::vector<float> rows = run_node(op, impl, {4, 45}, {4, 1}, x, "<axes = [1]>", 1, 12);
      CHECK(!std::isnan(rows[0]));
      CHECK(std::isnan(rows[1]));
      CHECK(!std::isnan(rows[2]));
      CHECK(std::isnan(rows[3]));
      const std::vector<float> columns = run_node(op, impl, {4, 45}, {1, 45}, x, "<axes = [0]>", 1, 12);
      for (int64_t j = 0; j < 45; ++j) CHECK(std::isnan(columns[j]) == (j == 17 || j == 44));
    }
  }
}

}  // TEST_SUITE
