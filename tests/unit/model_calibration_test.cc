#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "onnx_light/runtime/calibration_workload.h"
#include "onnx_light/runtime/error.h"
#include "onnx_light/runtime/tuning_registry.h"
#include "onnx_light/tune/cache_file.h"
#include "onnx_light/tune/model_calibration.h"
#include "implementation_tables.h"
#include "test_models.h"
#include "tune_fixture.h"

using namespace onnx_light;
using namespace onnx_light::runtime;
using namespace onnx_light::tune;

namespace {

// Three nodes of one key, work 1000 / 10000 / 100000: parallel loses on the small two, wins on
// the largest (times in us).
std::vector<ThresholdNode> three_nodes() { return {{10000, 5.0, 6.0}, {1000, 1.0, 3.0}, {100000, 50.0, 30.0}}; }

// The real CPU kernels, a private registry, the fixture's machine and scratch cache.
struct ModelFixture {
  tune_test::ScratchDir dir;
  TuningRegistry registry;
  std::filesystem::path cache = dir / "kernel_tuning.cache";
  OperationContext context() {
    OperationContext c;
    c.registry = &registry;
    c.machine = tune_test::test_machine();
    c.system_cache_path = std::filesystem::path();  // no system layer
    c.tool_version = "9.9.9";
    return c;
  }
};

// Abs over 4096 floats, then a MatMul [64,64] x [64,64]: an elementwise key and a packed-GEMM key.
const char* kTwoKeys =
    "<ir_version: 8, opset_import: [\"\" : 18]>\n"
    "g (float[64,64] x, float[64,64] w) => (float[64,64] y) { a = Abs(x)\n y = MatMul(a, w) }";

ModelCalibrationOptions two_key_options(const std::filesystem::path& cache) {
  ModelCalibrationOptions o;
  o.inputs = {{"x", random_tensor(ElementType::float32, {64, 64}, 1)}, {"w", random_tensor(ElementType::float32, {64, 64}, 2)}};
  o.path = cache.string();
  o.num_threads = 2;
  o.maximum_duration_ms = 1500 * tune_test::kSanitizerSlowdown;  // room for every phase to measure
  return o;
}

}  // namespace

TEST_CASE("model_threshold_current_already_gives_the_best_split_is_kept") {
  // Threshold 50000 runs only the largest node in parallel: what the measurements favour.
  ThresholdChoice c = choose_model_threshold(three_nodes(), 50000, 1 << 30, 0.5);
  CHECK_FALSE(c.changed);
  CHECK(c.value == 50000);
  CHECK(c.reason.find("already") != std::string::npos);
}

TEST_CASE("model_threshold_between_two_nodes_is_their_geometric_midpoint") {
  // From 512 every node runs in parallel and two lose: the split moves between 10000 and 100000.
  ThresholdChoice c = choose_model_threshold(three_nodes(), 512, 1 << 30, 0.5);
  CHECK(c.changed);
  CHECK(c.value == 31623);  // sqrt(10000 * 100000)
  CHECK(c.predicted_gain_us == doctest::Approx(3.0));  // (3 - 1) + (6 - 5)
}

TEST_CASE("model_threshold_every_node_losing_goes_above_the_largest_work") {
  std::vector<ThresholdNode> nodes = {{1000, 1.0, 2.0}, {100000, 10.0, 12.0}};
  ThresholdChoice c = choose_model_threshold(nodes, 5000, 1 << 30, 0.5);
  CHECK(c.changed);
  CHECK(c.value == 200000);  // twice the largest work: room for a slightly larger shape
  // Clamped to the schema's maximum.
  CHECK(choose_model_threshold(nodes, 5000, 150000, 0.5).value == 150000);
}

TEST_CASE("model_threshold_every_node_winning_is_the_smallest_work") {
  std::vector<ThresholdNode> nodes = {{4000, 10.0, 6.0}, {100000, 50.0, 30.0}};
  ThresholdChoice c = choose_model_threshold(nodes, 32768, 1 << 30, 0.5);
  CHECK(c.changed);
  CHECK(c.value == 4000);  // the largest value that keeps both parallel
}

TEST_CASE("model_threshold_gain_below_the_minimum_keeps_current") {
  ThresholdChoice c = choose_model_threshold(three_nodes(), 512, 1 << 30, 10.0);
  CHECK_FALSE(c.changed);
  CHECK(c.value == 512);
  CHECK(c.reason.find("below") != std::string::npos);
}

TEST_CASE("model_threshold_nodes_without_work_leave_it_alone") {
  std::vector<ThresholdNode> nodes = {{-1, 1.0, 1.0}, {1, 2.0, 1.0}};
  ThresholdChoice c = choose_model_threshold(nodes, 777, 1 << 30, 0.0);
  CHECK_FALSE(c.changed);
  CHECK(c.value == 777);
}

TEST_CASE("model_threshold_no_gain_changes_nothing") {
  std::vector<ThresholdNode> nodes = {{1000, 2.0, 2.0}, {5000, 4.0, 4.0}};
  ThresholdChoice c = choose_model_threshold(nodes, 100, 1 << 30, 0.0);
  CHECK_FALSE(c.changed);  // parallel neither wins nor loses: nothing pays for a change
}

TEST_CASE("model_threshold_equal_cost_splits_prefer_the_more_serial_one") {
  // From 1000 or from 5000 cost the same (the 1000 node ties): the split that wakes fewer
  // workers wins, between 1000 and 5000.
  std::vector<ThresholdNode> nodes = {{1000, 2.0, 2.0}, {5000, 4.0, 3.0}};
  ThresholdChoice c = choose_model_threshold(nodes, 100000, 1 << 30, 0.0);
  CHECK(c.changed);
  CHECK(c.value == 2236);  // sqrt(1000 * 5000)
}

TEST_CASE("end_to_end_verdicts_from_interleaved_pairs") {
  const std::vector<double> old_us(20, 1000.0);
  std::vector<double> faster, slower, same;
  for (int i = 0; i < 20; ++i) {
    faster.push_back(900.0 + (i % 3));
    slower.push_back(1100.0 + (i % 3));
    same.push_back(i % 2 == 0 ? 990.0 : 1008.0);
  }
  CHECK(compare_end_to_end(old_us, faster).verdict == "faster");
  CHECK(worth_saving(compare_end_to_end(old_us, faster)));
  CHECK(compare_end_to_end(old_us, slower).verdict == "slower");
  CHECK_FALSE(worth_saving(compare_end_to_end(old_us, slower)));
  const EndToEndComparison s = compare_end_to_end(old_us, same);
  CHECK(s.verdict == "same");
  CHECK(worth_saving(s));  // mean ratio 0.999: not slower
  // A mean more than 1% above 1 is slower even when the interval straddles 1.
  std::vector<double> noisy;
  for (int i = 0; i < 20; ++i) noisy.push_back(i % 2 == 0 ? 800.0 : 1260.0);
  CHECK(compare_end_to_end(old_us, noisy).verdict == "slower");
  // Too few pairs: nothing can be claimed.
  const EndToEndComparison few = compare_end_to_end({1000, 1000}, {500, 500});
  CHECK(few.verdict == "not_measured");
  CHECK_FALSE(worth_saving(few));
}

TEST_CASE("model_calibration_finds_the_keys_the_nodes_use_and_their_work") {
  ModelFixture f;
  ModelCalibrationOptions o = two_key_options(f.cache);
  o.save = false;
  ModelCalibrationReport r = calibrate_model(test::parse(kTwoKeys), o, f.context());
  std::vector<std::string> kernels;
  for (const auto& k : r.keys) kernels.push_back(k.key.kernel);
  std::sort(kernels.begin(), kernels.end());
  CHECK(kernels == std::vector<std::string>{"Abs", "MatMul"});
  for (const auto& k : r.keys) CHECK(k.nodes == 1);
  REQUIRE(r.nodes.size() == 2);  // both nodes measured in place (threads = 2)
  for (const auto& n : r.nodes) {
    if (n.key.kernel == "Abs") CHECK(n.work == 64 * 64);
    if (n.key.kernel == "MatMul") CHECK(n.work == 64 * 64 * 64);
    CHECK(n.pairs >= 1);
    CHECK((n.verdict == "parallel" || n.verdict == "serial" || n.verdict == "tie"));
  }
  CHECK(r.model_ms > 0);
  CHECK_FALSE(std::filesystem::exists(f.cache));  // save = false: nothing written
  CHECK(r.elapsed_ms <= o.maximum_duration_ms * 12 / 10);
  const auto json = r.to_json();
  CHECK(json["keys"].size() == 2);
  CHECK(json["end_to_end"].contains("verdict"));
}

TEST_CASE("model_calibration_compares_the_depthwise_widths_on_the_model_s_depthwise_nodes") {
  // A depthwise 3x3 over 24 columns (blocked by default, CHW from a width of 24): on AVX-512 the
  // Conv key's depthwise path parameters are stepped with the GEMM blocks, each with its decision.
  const auto is_conv = [](const KernelDef& d) { return d.op_type == "Conv" && d.element_type == ElementType::float32; };
  if (!test::host_runs("Conv float32", is_conv, "avx512")) return;
  ModelFixture f;
  ModelCalibrationOptions o;
  o.path = f.cache.string();
  o.num_threads = 1;
  o.save = false;
  o.maximum_duration_ms = 1500 * tune_test::kSanitizerSlowdown;
  const Model model = test::parse(
      "<ir_version: 8, opset_import: [\"\" : 18]>\n"
      "g (float[1,32,12,24] x, float[32,1,3,3] w) => (float[1,32,12,24] y) {"
      " y = Conv <group = 32, pads = [1, 1, 1, 1]> (x, w) }");
  const ModelCalibrationReport r = calibrate_model(model, o, f.context());
  const ModelKeyCalibration* conv = nullptr;
  for (const auto& k : r.keys)
    if (k.key.kernel == "Conv") conv = &k;
  REQUIRE(conv != nullptr);
  CHECK(conv->key.implementation == "avx512");
  CAPTURE(conv->reasons);
  for (const std::string name : {"depthwise.chw_s1_from_width: ", "depthwise.chw_s2_from_width: ",
                                  "depthwise.rows_from_pixels: ", "depthwise.flat_below_width: "})
    CHECK(std::any_of(conv->reasons.begin(), conv->reasons.end(),
                      [&](const std::string& reason) { return reason.rfind(name, 0) == 0; }));
}

TEST_CASE("model_calibration_on_one_thread_keeps_every_threshold") {
  ModelFixture f;
  ModelCalibrationOptions o = two_key_options(f.cache);
  o.num_threads = 1;
  o.tune_blocks = false;
  ModelCalibrationReport r = calibrate_model(test::parse(kTwoKeys), o, f.context());
  CHECK(r.nodes.empty());
  for (const auto& k : r.keys) CHECK(k.changed.empty());
  CHECK(r.end_to_end.verdict == "unchanged");
  CHECK_FALSE(r.saved);
  CHECK(r.ok());
  CHECK_FALSE(std::filesystem::exists(f.cache));
}

TEST_CASE("model_calibration_refuses_a_malformed_cache_before_measuring") {
  ModelFixture f;
  tune_test::write_text(f.cache, "this is not toml [[[");
  ModelCalibrationOptions o = two_key_options(f.cache);
  CHECK_THROWS_AS(calibrate_model(test::parse(kTwoKeys), o, f.context()), IoError);
  CHECK(tune_test::read_text(f.cache) == "this is not toml [[[");  // never overwritten
}

TEST_CASE("model_calibration_names_a_missing_or_unknown_input") {
  ModelFixture f;
  ModelCalibrationOptions o = two_key_options(f.cache);
  o.save = false;
  o.inputs.push_back({"z", random_tensor(ElementType::float32, {2}, 3)});
  CHECK_THROWS_WITH_AS(calibrate_model(test::parse(kTwoKeys), o, f.context()),
                       doctest::Contains("'z'"), InputError);
  // An input not given is a seeded random tensor of its declared shape...
  o.inputs = {{"x", random_tensor(ElementType::float32, {64, 64}, 1)}};
  o.num_threads = 1;
  o.maximum_duration_ms = 200;
  CHECK_NOTHROW(calibrate_model(test::parse(kTwoKeys), o, f.context()));
  // ...unless a dimension is symbolic and not bound by `dims`.
  const Model symbolic = test::parse("<ir_version: 8, opset_import: [\"\" : 18]>\n"
                                     "g (float[N] v) => (float[N] y) { y = Abs(v) }");
  o.inputs.clear();
  CHECK_THROWS_WITH_AS(calibrate_model(symbolic, o, f.context()), doctest::Contains("input 'v': dimension 0 is symbolic ('N')"),
                       InputError);
  o.dims["N"] = 32;
  CHECK_NOTHROW(calibrate_model(symbolic, o, f.context()));
  // Every open dimension of every input in one error, each symbol once in the hint.
  const Model two = test::parse("<ir_version: 8, opset_import: [\"\" : 18]>\n"
                                "g (float[B,4,W] u, float[B,H] v) => (float[B,4,W] y, float[B,H] z) {"
                                " y = Abs(u) z = Neg(v) }");
  o.dims = {{"W", 8}};
  CHECK_THROWS_WITH_AS(calibrate_model(two, o, f.context()),
                       "input 'u': dimension 0 is symbolic ('B'); input 'v': dimension 0 is symbolic ('B'), dimension 1 "
                       "is symbolic ('H'); bind them (--dim B=SIZE --dim H=SIZE, Python dims={'B': SIZE, 'H': SIZE}) "
                       "or give a tensor",
                       InputError);
}

TEST_CASE("bind_dimensions_takes_named_sizes_and_lists_what_stays_open") {
  ValueInfo info;
  info.name = "x";
  info.shape = {-1, 3, -1, -1};
  info.symbols = {"N", "", "H", ""};
  std::vector<UnboundDimension> open;
  CHECK(bind_dimensions(info, {{"N", 2}, {"W", 5}}, open) == Shape{2, 3, -1, -1});
  REQUIRE(open.size() == 2);
  CHECK(open[0].axis == 2);
  CHECK(open[0].symbol == "H");
  CHECK(open[1].axis == 3);
  CHECK(open[1].symbol.empty());
  CHECK(describe_unbound(open) == "dimension 2 is symbolic ('H'), dimension 3 is symbolic (unnamed)");
  open.clear();
  CHECK(bind_dimensions(info, {{"N", 0}, {"H", 7}}, open) == Shape{0, 3, 7, -1});
  CHECK(open.size() == 1);
}

TEST_CASE("model_calibration_with_no_time_left_changes_and_saves_nothing") {
  // A clock that jumps a second per read: every phase finds its deadline passed.
  struct JumpingClock final : CalibrationClock {
    int64_t now = 0;
    int64_t now_ns() override { return now += 1'000'000'000; }
  };
  ModelFixture f;
  ModelCalibrationOptions o = two_key_options(f.cache);
  o.clock = std::make_shared<JumpingClock>();
  ModelCalibrationReport r = calibrate_model(test::parse(kTwoKeys), o, f.context());
  for (const auto& k : r.keys) CHECK(k.changed.empty());
  CHECK_FALSE(r.saved);
  CHECK_FALSE(std::filesystem::exists(f.cache));
}
