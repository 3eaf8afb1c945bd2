// Memory planning: intermediate values go back to the session's pool after their last reader, so
// a chain's working set is a few buffers, not one per value; a value read later is never reused
// early; the report counts weights and the peak.
#include <doctest/doctest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "onnx_light/runtime/model.h"
#include "onnx_light/runtime/session.h"
#include "test_models.h"

using namespace onnx_light::runtime;

namespace {

Tensor random_floats(Shape shape, unsigned seed) {
  Tensor t(ElementType::float32, std::move(shape));
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-2.0f, 2.0f);
  for (int64_t i = 0; i < t.element_count(); ++i) t.data<float>()[i] = dist(rng);
  return t;
}

// n alternating Abs/Neg nodes over float[N]: every intermediate has one reader, the next node.
std::string chain_model(int nodes, int64_t n) {
  std::string body;
  std::string previous = "x";
  for (int i = 0; i < nodes; ++i) {
    std::string out = i + 1 == nodes ? "y" : "v" + std::to_string(i);
    body += out + " = " + (i % 2 == 0 ? "Abs(" : "Neg(") + previous + ")\n";
    previous = out;
  }
  return "<ir_version: 8, opset_import: [\"\" : 17]>\ng (float[" + std::to_string(n) + "] x) => (float[" +
         std::to_string(n) + "] y) {\n" + body + "}";
}

// The graph as written: under `all`, chains of elementwise nodes are one ElementwiseChain node.
RuntimeSessionOptions as_written() {
  RuntimeSessionOptions options;
  options.optimization = OptimizationLevel::none;
  return options;
}

}  // namespace

TEST_CASE("chain_of_12_values_peaks_at_three_buffers") {
  constexpr int64_t kN = 1 << 16;
  const auto bytes = static_cast<int64_t>(Tensor::storage_bytes(ElementType::float32, {kN}));
  RuntimeSessionOptions options;
  options.parameters = RuntimeParameters(1);
  options.optimization = OptimizationLevel::none;  // the graph as written, not one ElementwiseChain
  RuntimeSession session(onnx_light::test::parse(chain_model(12, kN)), options);
  RuntimeContext context;
  const Tensor x = random_floats({kN}, 7);
  context.set("x", x);
  for (int run = 0; run < 3; ++run) session.run(context);
  const SessionMemoryReport report = session.memory_report();
  CHECK(report.planned_releases == 11);  // v0..v10; y is a graph output
  CHECK(report.last_run_values_bytes == 12 * kN * 4);
  // A node's input and output, plus the caller-held output of the previous run: at most 3 blocks
  // (without release at last use: 12).
  CHECK(report.peak_activation_bytes <= 3 * bytes);
  CHECK(report.peak_activation_bytes >= 2 * bytes);
  const Tensor& y = context.get("y");  // 12 nodes: the last is Neg of a non-negative value
  for (int64_t i = 0; i < kN; ++i) REQUIRE(y.data<float>()[i] == -std::fabs(x.data<float>()[i]));
}

TEST_CASE("value_read_again_later_is_not_reused_before_its_last_reader") {
  // a is read by the last node only; b, c, d are made (same size) in between. Released early,
  // a's block would be taken by b and overwritten.
  constexpr int64_t kN = 4096;
  RuntimeSession session(onnx_light::test::parse(
      "<ir_version: 8, opset_import: [\"\" : 17]>\ng (float[4096] x) => (float[4096] y) "
      "{ a = Abs(x)\n b = Neg(x)\n c = Neg(b)\n d = Neg(c)\n y = Add(a, d) }"),
      as_written());
  const Tensor x = random_floats({kN}, 3);
  for (int run = 0; run < 3; ++run) {
    RuntimeContext context;
    context.set("x", x);
    session.run(context);
    const Tensor& y = context.get("y");
    for (int64_t i = 0; i < kN; ++i) REQUIRE(y.data<float>()[i] == std::fabs(x.data<float>()[i]) - x.data<float>()[i]);
  }
  CHECK(session.memory_report().planned_releases == 4);
}

TEST_CASE("unread_second_output_is_released_after_its_producer") {
  // MaxPool's Indices output is never read: released right after MaxPool, not kept to the end.
  RuntimeSession session(onnx_light::test::parse(
      "<ir_version: 8, opset_import: [\"\" : 17]>\ng (float[1, 2, 8, 8] x) => (float[1, 2, 4, 4] y) "
      "{ p, i = MaxPool <kernel_shape = [2, 2], strides = [2, 2]> (x)\n y = Relu(p) }"));
  RuntimeContext context;
  context.set("x", random_floats({1, 2, 8, 8}, 5));
  session.run(context);
  CHECK(session.memory_report().planned_releases == 2);  // p after Relu, i after MaxPool
  CHECK(context.get("y").shape() == Shape{1, 2, 4, 4});
}

TEST_CASE("weights_bytes_count_initializers_and_constants") {
  RuntimeSession session(onnx_light::test::parse(
      "<ir_version: 8, opset_import: [\"\" : 17]>\ng (float[4] x) => (float[4] y) "
      "{ k = Constant <value = float[4] {1, 2, 3, 4}> ()\n y = Add(x, k) }"));
  CHECK(session.memory_report().weights_bytes == 16);
}

TEST_CASE("chain_runs_in_place_through_one_buffer") {
  // v0 = Abs(x) cannot write over x (a graph input); every later node writes over the value it
  // kills, y included: one pool buffer carries the whole chain.
  constexpr int64_t kN = 1 << 14;
  const auto bytes = static_cast<int64_t>(Tensor::storage_bytes(ElementType::float32, {kN}));
  RuntimeSession session(onnx_light::test::parse(chain_model(12, kN)), as_written());
  const Tensor x = random_floats({kN}, 11);
  for (int run = 0; run < 3; ++run) {
    RuntimeContext context;  // the caller drops last run's y before this run
    context.set("x", x);
    session.run(context);
    const Tensor& y = context.get("y");
    for (int64_t i = 0; i < kN; ++i) REQUIRE(y.data<float>()[i] == -std::fabs(x.data<float>()[i]));
  }
  const SessionMemoryReport report = session.memory_report();
  CHECK(report.planned_in_place == 11);
  CHECK(report.last_run_in_place == 11);
  CHECK(report.peak_activation_bytes == bytes);
}

TEST_CASE("in_place_needs_input0_of_the_output_shape") {
  // a [1, 4] dies at the Add, but the Add's output is [4, 4]: written to a new buffer.
  RuntimeSession session(onnx_light::test::parse(
                             "<ir_version: 8, opset_import: [\"\" : 17]>\ng (float[1, 4] x, float[4, 4] m) => (float[4, 4] y) "
                             "{ a = Abs(x)\n y = Add(a, m) }"),
                         as_written());
  RuntimeContext context;
  const Tensor x = random_floats({1, 4}, 12), m = random_floats({4, 4}, 13);
  context.set("x", x);
  context.set("m", m);
  session.run(context);
  CHECK(session.memory_report().planned_in_place == 1);
  CHECK(session.memory_report().last_run_in_place == 0);
  const Tensor& y = context.get("y");
  for (int64_t r = 0; r < 4; ++r)
    for (int64_t c = 0; c < 4; ++c)
      REQUIRE(y.data<float>()[r * 4 + c] == std::fabs(x.data<float>()[c]) + m.data<float>()[r * 4 + c]);
}

TEST_CASE("chain_reading_its_own_input_is_not_in_place") {
  // Under `all`, Sigmoid(a) then Mul(a, s) is one ElementwiseChain whose Mul reads X = a again:
  // writing over a would feed Sigmoid(a) to that Mul.
  RuntimeSession session(onnx_light::test::parse(
      "<ir_version: 8, opset_import: [\"\" : 17]>\ng (float[256] x) => (float[256] y) "
      "{ a = Abs(x)\n s = Sigmoid(a)\n y = Mul(a, s) }"));
  REQUIRE(session.model().graph().node_size() == 2);  // Abs, ElementwiseChain
  RuntimeContext context;
  const Tensor x = random_floats({256}, 14);
  context.set("x", x);
  session.run(context);
  CHECK(session.memory_report().planned_in_place == 0);
  const Tensor& y = context.get("y");
  for (int64_t i = 0; i < 256; ++i) {
    const float a = std::fabs(x.data<float>()[i]);
    REQUIRE(y.data<float>()[i] == doctest::Approx(a / (1.0f + std::exp(-a))).epsilon(1e-6));
  }
}

TEST_CASE("bound_output_gets_the_result_not_the_dying_input") {
  // y = Neg(a) may write over a, but y is bound to the caller's buffer: the result lands there.
  RuntimeSession session(onnx_light::test::parse(
                             "<ir_version: 8, opset_import: [\"\" : 17]>\ng (float[64] x) => (float[64] y) "
                             "{ a = Abs(x)\n y = Neg(a) }"),
                         as_written());
  const Tensor x = random_floats({64}, 15);
  std::vector<float> memory(64, 7.0f);
  Tensor inputs[] = {x};
  Tensor outputs[] = {Tensor::borrow(ElementType::float32, {64}, memory.data())};
  for (int run = 0; run < 2; ++run) {
    session.run(inputs, outputs);
    REQUIRE(outputs[0].data<float>() == memory.data());
    for (int64_t i = 0; i < 64; ++i) REQUIRE(memory[static_cast<std::size_t>(i)] == -std::fabs(x.data<float>()[i]));
  }
  CHECK(session.memory_report().planned_in_place == 1);
  CHECK(session.memory_report().last_run_in_place == 0);
}
