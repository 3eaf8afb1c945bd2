// The graph optimizer (graph_optimizer.h), transform by transform, on before/after graphs: the
// transform fired (its report count and the resulting op types) and the optimized session's
// outputs equal the unoptimized one's (`none`) within 1e-5 of the output's largest magnitude on
// random inputs (bit-exact for `basic`); and the cases where it must not fire.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "kernels/epilogue.h"
#include "onnx_light/runtime/calibration_workload.h"
#include "onnx_light/runtime/error.h"
#include "onnx_light/runtime/graph_optimizer.h"
#include "onnx_light/runtime/kernel_table.h"
#include "onnx_light/runtime/session.h"
#include "test_models.h"

using namespace onnx_light;
using namespace onnx_light::runtime;

namespace {

using Values = std::map<std::string, Tensor>;

struct LevelOutcome {
  Values outputs;
  OptimizationReport report;
  std::vector<std::string> ops;  // "Op" or "domain:Op", in graph order
};

LevelOutcome run_at_level(const Model& model, OptimizationLevel level, const Values& inputs) {
  RuntimeSessionOptions options;
  options.parameters = RuntimeParameters(1);
  options.optimization = level;
  RuntimeSession session(model, options);
  RuntimeContext context;
  for (const auto& [name, t] : inputs) context.set(name, t);
  session.run(context);
  LevelOutcome o;
  for (const auto& info : session.outputs()) o.outputs[info.name] = context.get(info.name);
  o.report = session.optimization_report();
  for (const auto& n : session.model().graph().node())
    o.ops.push_back(n.domain().empty() ? n.op_type() : n.domain() + ":" + n.op_type());
  return o;
}

int64_t applied(const OptimizationReport& r, const std::string& name) {
  int64_t total = 0;
  for (const auto& t : r.transforms)
    if (t.name == name) total += t.applied;
  return total;
}

bool has_op(const LevelOutcome& o, const std::string& op) { return std::find(o.ops.begin(), o.ops.end(), op) != o.ops.end(); }

// Outputs within 1e-5 of each output's largest magnitude (exact when `exact`).
void check_equal(const LevelOutcome& got, const LevelOutcome& want, bool exact = false) {
  REQUIRE(got.outputs.size() == want.outputs.size());
  for (const auto& entry : want.outputs) {
    const std::string& name = entry.first;  // not a structured binding: INFO's lambda cannot take one on clang 14
    const Tensor& w = entry.second;
    const Tensor& g = got.outputs.at(name);
    REQUIRE(g.shape() == w.shape());
    REQUIRE(g.element_type() == ElementType::float32);
    double largest = 0, worst = 0;
    for (int64_t i = 0; i < w.element_count(); ++i) {
      largest = std::max(largest, std::fabs(static_cast<double>(w.data<float>()[i])));
      const double d = std::fabs(static_cast<double>(g.data<float>()[i]) - w.data<float>()[i]);
      worst = std::max(worst, std::isnan(d) ? 1e30 : d);
    }
    INFO("output ", name, ": largest ", largest, ", max difference ", worst);
    if (exact)
      CHECK(worst == 0.0);
    else
      CHECK(worst <= 1e-5 * std::max(largest, 1e-3));
  }
}

Tensor positive(const Shape& shape, uint32_t seed) {
  Tensor t = random_tensor(ElementType::float32, shape, seed);
  for (int64_t i = 0; i < t.element_count(); ++i) t.data<float>()[i] = std::fabs(t.data<float>()[i]) + 0.5f;
  return t;
}

Tensor float_scalar(float v) {
  Tensor t(ElementType::float32, {});
  *t.data<float>() = v;
  return t;
}

// Runs `text` with `weights` as initializers at `level` and at none; checks equal outputs.
std::pair<LevelOutcome, LevelOutcome> compare(const std::string& text, const Values& weights, const Values& inputs,
                                    OptimizationLevel level = OptimizationLevel::all) {
  Model model = with_initializers(test::parse(text), weights);
  LevelOutcome optimized = run_at_level(model, level, inputs);
  LevelOutcome reference = run_at_level(model, OptimizationLevel::none, inputs);
  check_equal(optimized, reference, level == OptimizationLevel::basic);
  return {optimized, reference};
}

bool fused_conv_available() { return cpu_kernel_table().implements(kernels::kFusedDomain, "FusedConv"); }

}  // namespace

TEST_CASE("optimizer: none runs the graph as written; levels parse by name") {
  Model model = test::parse(test::kSeedAbsModel);
  Values in{{"x", random_tensor(ElementType::float32, {5}, 1)}};
  LevelOutcome none = run_at_level(model, OptimizationLevel::none, in);
  CHECK(none.report.transforms.empty());
  CHECK(none.report.nodes_before == 1);
  CHECK(none.report.nodes_after == 1);
  CHECK(parse_optimization_level("basic") == OptimizationLevel::basic);
  CHECK(optimization_level_name(OptimizationLevel::all) == "all");
  CHECK_THROWS_AS(parse_optimization_level("most"), InvalidValueError);
  CHECK(RuntimeSessionOptions{}.optimization == OptimizationLevel::all);
}

TEST_CASE("optimizer: constant folding of Shape/Gather/Unsqueeze/Concat chains and Constant arithmetic") {
  const std::string text = R"(<ir_version: 8, opset_import: ["" : 17]>
g (float[2,3,4] x) => (float[2,12] y, float[2,3,4] z) {
  s = Shape(x)
  i0 = Constant <value = int64[1] {0}> ()
  d0 = Gather <axis = 0> (s, i0)
  minus = Constant <value = int64[1] {-1}> ()
  shape = Concat <axis = 0> (d0, minus)
  f = Cast <to = 7> (shape)
  y = Reshape(x, f)
  c = Constant <value = float[1] {1.5}> ()
  c2 = Add(c, c)
  c3 = Sqrt(c2)
  z = Mul(x, c3)
})";
  auto [opt, ref] = compare(text, {}, {{"x", random_tensor(ElementType::float32, {2, 3, 4}, 3)}}, OptimizationLevel::basic);
  CHECK(applied(opt.report, "constant_folding") >= 7);
  CHECK(opt.ops == std::vector<std::string>{"Reshape", "Mul"});
  CHECK(ref.ops.size() == 11);
}

TEST_CASE("optimizer: Shape of a symbolic dimension is not folded") {
  const std::string text = R"(<ir_version: 8, opset_import: ["" : 17]>
g (float[N,4] x) => (float[M] y) {
  s = Shape(x)
  one = Constant <value = int64[1] {-1}> ()
  y = Reshape(x, one)
})";
  auto [opt, ref] = compare(text, {}, {{"x", random_tensor(ElementType::float32, {3, 4}, 3)}}, OptimizationLevel::basic);
  // The dead Shape goes; the Reshape's shape was a Constant and is now an initializer.
  CHECK(opt.ops == std::vector<std::string>{"Reshape"});
  const std::string kept = R"(<ir_version: 8, opset_import: ["" : 17]>
g (float[N,4] x) => (float[N,4] y) {
  s = Shape(x)
  y = Reshape(x, s)
})";
  auto [opt2, ref2] = compare(kept, {}, {{"x", random_tensor(ElementType::float32, {3, 4}, 3)}}, OptimizationLevel::basic);
  CHECK(has_op(opt2, "Shape"));
  CHECK(applied(opt2.report, "constant_folding") == 0);
}

TEST_CASE("optimizer: Identity, Dropout, same-type Cast and no-op Reshape go; graph inputs and outputs keep their names") {
  const std::string text = R"(<ir_version: 8, opset_import: ["" : 17]>
g (float[2,3] x) => (float[2,3] y, float[2,3] passthrough) {
  a = Identity(x)
  b, mask = Dropout(a)
  c = Cast <to = 1> (b)
  shape = Constant <value = int64[2] {2, 3}> ()
  d = Reshape(c, shape)
  e = Relu(d)
  y = Identity(e)
  passthrough = Identity(x)
  unused = Neg(x)
})";
  auto [opt, ref] = compare(text, {}, {{"x", random_tensor(ElementType::float32, {2, 3}, 4)}}, OptimizationLevel::basic);
  // y stays the Relu's output name; passthrough = Identity(x) must stay (both are graph names).
  CHECK(opt.ops == std::vector<std::string>{"Relu", "Identity"});
  CHECK(applied(opt.report, "identity_elimination") == 5);
  CHECK(applied(opt.report, "dead_node_elimination") == 1);
}

TEST_CASE("optimizer: BatchNormalization folds into the Conv before it, unless the Conv output is read elsewhere") {
  const std::string text = R"(<ir_version: 8, opset_import: ["" : 17]>
g (float[1,3,6,6] x, float[4,3,3,3] w, float[4] b, float[4] s, float[4] bias, float[4] mean, float[4] var) => (float[1,4,4,4] y) {
  c = Conv(x, w, b)
  y = BatchNormalization <epsilon = 0.001> (c, s, bias, mean, var)
})";
  Values weights{{"w", random_tensor(ElementType::float32, {4, 3, 3, 3}, 5)},
                 {"b", random_tensor(ElementType::float32, {4}, 6)},
                 {"s", random_tensor(ElementType::float32, {4}, 7)},
                 {"bias", random_tensor(ElementType::float32, {4}, 8)},
                 {"mean", random_tensor(ElementType::float32, {4}, 9)},
                 {"var", positive({4}, 10)}};
  Values in{{"x", random_tensor(ElementType::float32, {1, 3, 6, 6}, 11)}};
  auto [opt, ref] = compare(text, weights, in);
  CHECK(applied(opt.report, "conv_bn_folding") == 1);
  CHECK(opt.ops == std::vector<std::string>{"Conv"});

  // The Conv output is also a graph output: nothing folds.
  const std::string shared = R"(<ir_version: 8, opset_import: ["" : 17]>
g (float[1,3,6,6] x, float[4,3,3,3] w, float[4] b, float[4] s, float[4] bias, float[4] mean, float[4] var) => (float[1,4,4,4] y, float[1,4,4,4] c) {
  c = Conv(x, w, b)
  y = BatchNormalization(c, s, bias, mean, var)
})";
  auto [opt2, ref2] = compare(shared, weights, in);
  CHECK(applied(opt2.report, "conv_bn_folding") == 0);
  CHECK(has_op(opt2, "BatchNormalization"));
  // A second reader of the Conv output.
  const std::string second = R"(<ir_version: 8, opset_import: ["" : 17]>
g (float[1,3,6,6] x, float[4,3,3,3] w, float[4] b, float[4] s, float[4] bias, float[4] mean, float[4] var) => (float[1,4,4,4] y, float[1,4,4,4] n) {
  c = Conv(x, w, b)
  y = BatchNormalization(c, s, bias, mean, var)
  n = Neg(c)
})";
  auto [opt3, ref3] = compare(second, weights, in);
  CHECK(applied(opt3.report, "conv_bn_folding") == 0);
}

TEST_CASE("optimizer: BatchNormalization folds into a grouped ConvTranspose (W [C, M/group, k...]: scale along axis 1 per group)") {
  // group 2: C = 4 input channels, M/group = 3, M = 6 output channels; without a bias first.
  const std::string text = R"(<ir_version: 8, opset_import: ["" : 17]>
g (float[1,4,5,5] x, float[4,3,2,2] w, float[6] s, float[6] bias, float[6] mean, float[6] var) => (float[1,6,10,10] y) {
  c = ConvTranspose <group = 2, strides = [2, 2]> (x, w)
  y = BatchNormalization <epsilon = 0.001> (c, s, bias, mean, var)
})";
  Values weights{{"w", random_tensor(ElementType::float32, {4, 3, 2, 2}, 21)},
                 {"s", random_tensor(ElementType::float32, {6}, 22)},
                 {"bias", random_tensor(ElementType::float32, {6}, 23)},
                 {"mean", random_tensor(ElementType::float32, {6}, 24)},
                 {"var", positive({6}, 25)}};
  Values in{{"x", random_tensor(ElementType::float32, {1, 4, 5, 5}, 26)}};
  auto [opt, ref] = compare(text, weights, in);
  CHECK(applied(opt.report, "conv_bn_folding") == 1);
  CHECK(opt.ops == std::vector<std::string>{"ConvTranspose"});

  // With a bias, 3-D, group 1, then Mul and Add by per-channel constants.
  const std::string chain = R"(<ir_version: 8, opset_import: ["" : 17]>
g (float[2,3,2,3,3] x, float[3,5,3,2,2] w, float[5] b, float[5] s, float[5] bias, float[5] mean, float[5] var, float[1,5,1,1,1] m, float[5,1,1,1] a) => (float[2,5,4,6,6] y) {
  c = ConvTranspose <strides = [2, 2, 2], pads = [0, 0, 0, 1, 0, 0]> (x, w, b)
  n = BatchNormalization(c, s, bias, mean, var)
  d = Mul(n, m)
  y = Add(a, d)
})";
  Values weights2{{"w", random_tensor(ElementType::float32, {3, 5, 3, 2, 2}, 31)},
                  {"b", random_tensor(ElementType::float32, {5}, 32)},
                  {"s", random_tensor(ElementType::float32, {5}, 33)},
                  {"bias", random_tensor(ElementType::float32, {5}, 34)},
                  {"mean", random_tensor(ElementType::float32, {5}, 35)},
                  {"var", positive({5}, 36)},
                  {"m", random_tensor(ElementType::float32, {1, 5, 1, 1, 1}, 37)},
                  {"a", random_tensor(ElementType::float32, {5, 1, 1, 1}, 38)}};
  Values in2{{"x", random_tensor(ElementType::float32, {2, 3, 2, 3, 3}, 39)}};
  auto [opt2, ref2] = compare(chain, weights2, in2);
  CHECK(applied(opt2.report, "conv_bn_folding") == 1);
  CHECK(applied(opt2.report, "conv_mul_add_folding") == 2);
  CHECK(opt2.ops == std::vector<std::string>{"ConvTranspose"});
}

TEST_CASE("optimizer: Mul and Add by per-channel constants fold into a Conv; a spatial constant does not") {
  const std::string text = R"(<ir_version: 8, opset_import: ["" : 17]>
g (float[2,3,5,5] x, float[4,3,1,1] w, float[4,1,1] m, float[1,4,1,1] a, float[1] sub) => (float[2,4,5,5] y) {
  c = Conv(x, w)
  d = Mul(m, c)
  e = Add(d, a)
  y = Sub(e, sub)
})";
  Values weights{{"w", random_tensor(ElementType::float32, {4, 3, 1, 1}, 12)},
                 {"m", random_tensor(ElementType::float32, {4, 1, 1}, 13)},
                 {"a", random_tensor(ElementType::float32, {1, 4, 1, 1}, 14)},
                 {"sub", random_tensor(ElementType::float32, {1}, 15)}};
  Values in{{"x", random_tensor(ElementType::float32, {2, 3, 5, 5}, 16)}};
  auto [opt, ref] = compare(text, weights, in);
  CHECK(applied(opt.report, "conv_mul_add_folding") == 3);
  CHECK(opt.ops == std::vector<std::string>{"Conv"});

  const std::string spatial = R"(<ir_version: 8, opset_import: ["" : 17]>
g (float[2,3,5,5] x, float[4,3,1,1] w, float[5,5] m) => (float[2,4,5,5] y) {
  c = Conv(x, w)
  y = Mul(c, m)
})";
  auto [opt2, ref2] = compare(spatial, {{"w", weights.at("w")}, {"m", random_tensor(ElementType::float32, {5, 5}, 17)}}, in);
  CHECK(applied(opt2.report, "conv_mul_add_folding") == 0);
  CHECK(has_op(opt2, "Mul"));
}

TEST_CASE("optimizer: 2-D MatMul + Add(bias) becomes Gemm; a 3-D MatMul does not") {
  const std::string text = R"(<ir_version: 8, opset_import: ["" : 17]>
g (float[3,8] x, float[8,5] w, float[5] b) => (float[3,5] y) {
  m = MatMul(x, w)
  y = Add(b, m)
})";
  Values weights{{"w", random_tensor(ElementType::float32, {8, 5}, 18)}, {"b", random_tensor(ElementType::float32, {5}, 19)}};
  auto [opt, ref] = compare(text, weights, {{"x", random_tensor(ElementType::float32, {3, 8}, 20)}});
  CHECK(applied(opt.report, "matmul_add_to_gemm") == 1);
  CHECK(opt.ops == std::vector<std::string>{"Gemm"});

  const std::string batched = R"(<ir_version: 8, opset_import: ["" : 17]>
g (float[2,3,8] x, float[8,5] w, float[5] b) => (float[2,3,5] y) {
  m = MatMul(x, w)
  y = Add(m, b)
})";
  auto [opt2, ref2] = compare(batched, weights, {{"x", random_tensor(ElementType::float32, {2, 3, 8}, 21)}});
  CHECK(applied(opt2.report, "matmul_add_to_gemm") == 0);
  // The bias goes into the FusedMatMul epilogue instead.
  CHECK(opt2.ops == std::vector<std::string>{"com.onnx_light:FusedMatMul"});
}

TEST_CASE("optimizer: activations and residual Adds fuse into Gemm and MatMul") {
  struct Case {
    std::string body, activation;
  };
  const std::vector<Case> cases{
      {"y = Relu(g)", "Relu"},
      {"y = Sigmoid(g)", "Sigmoid"},
      {"y = Tanh(g)", "Tanh"},
      {"y = LeakyRelu <alpha = 0.1> (g)", "LeakyRelu"},
      {"y = HardSigmoid <alpha = 0.2, beta = 0.4> (g)", "HardSigmoid"},
      {"y = HardSwish(g)", "HardSwish"},
      {"lo = Constant <value_float = 0.0> ()\n hi = Constant <value_float = 6.0> ()\n y = Clip(g, lo, hi)", "Clip"},
      {"s = Sigmoid(g)\n y = Mul(s, g)", "SiLU"},
      {"h = HardSigmoid <alpha = 0.16666667, beta = 0.5> (g)\n y = Mul(g, h)", "HardSwish"},
      {"three = Constant <value_float = 3.0> ()\n zero = Constant <value_float = 0.0> ()\n"
       " six = Constant <value_float = 6.0> ()\n a = Add(g, three)\n c = Clip(a, zero, six)\n m = Mul(g, c)\n y = Div(m, six)",
       "HardSwish"},
      {"three = Constant <value_float = 3.0> ()\n zero = Constant <value_float = 0.0> ()\n"
       " six = Constant <value_float = 6.0> ()\n a = Add(three, g)\n c = Clip(a, zero, six)\n d = Div(c, six)\n y = Mul(d, g)",
       "HardSwish"},
      {"r = Add(g, z)\n y = Relu(r)", "Relu"},
      {"y = Add(z, g)", ""},
  };
  Values weights{{"w", random_tensor(ElementType::float32, {8, 5}, 22)}, {"b", random_tensor(ElementType::float32, {5}, 23)}};
  Values in{{"x", random_tensor(ElementType::float32, {3, 8}, 24)}, {"z", random_tensor(ElementType::float32, {3, 5}, 25)}};
  for (const auto& c : cases) {
    CAPTURE(c.body);
    for (const char* op : {"Gemm(x, w, b)", "MatMul(x, w)"}) {
      CAPTURE(op);
      const std::string text = fmt::format(R"(<ir_version: 8, opset_import: ["" : 17]>
g (float[3,8] x, float[3,5] z, float[8,5] w, float[5] b) => (float[3,5] y) {{
  g = {}
  {}
}})",
                                           op, c.body);
      auto [opt, ref] = compare(text, weights, in);
      CHECK(applied(opt.report, "epilogue_fusion") == 1);
      REQUIRE(opt.ops.size() == 1);
      CHECK(opt.ops[0] == (std::string(op).starts_with("Gemm") ? "com.onnx_light:FusedGemm" : "com.onnx_light:FusedMatMul"));
    }
  }
}

TEST_CASE("optimizer: no epilogue fusion across a second reader, a graph output or non-constant Clip bounds") {
  Values weights{{"w", random_tensor(ElementType::float32, {8, 5}, 26)}};
  Values in{{"x", random_tensor(ElementType::float32, {3, 8}, 27)}, {"lo", float_scalar(-0.1f)}, {"hi", float_scalar(0.2f)}};
  const std::vector<std::string> bodies{
      // the product is also a graph output
      "g = Gemm(x, w)\n y = Relu(g)\n out2 = Identity(g)",
      // the product has a second reader
      "g = Gemm(x, w)\n y = Relu(g)\n out2 = Neg(g)",
      // Clip bounds are graph inputs
      "g = Gemm(x, w)\n y = Clip(g, lo, hi)\n out2 = Neg(y)",
      // SiLU whose Sigmoid output is also read elsewhere
      "g = Gemm(x, w)\n s = Sigmoid(g)\n y = Mul(g, s)\n out2 = Neg(s)",
  };
  for (const auto& body : bodies) {
    CAPTURE(body);
    const std::string text = fmt::format(R"(<ir_version: 8, opset_import: ["" : 17]>
g (float[3,8] x, float lo, float hi, float[8,5] w) => (float[3,5] y, float[3,5] out2) {{
  {}
}})",
                                         body);
    auto [opt, ref] = compare(text, weights, in);
    CHECK(applied(opt.report, "epilogue_fusion") == 0);
    CHECK(has_op(opt, "Gemm"));
  }
}

TEST_CASE("optimizer: Conv + BatchNorm + residual + decomposed HardSwish becomes one FusedConv when the kernel exists") {
  const std::string text = R"(<ir_version: 8, opset_import: ["" : 13]>
g (float[1,4,6,6] x, float[4,1,3,3] w, float[4] s, float[4] bias, float[4] mean, float[4] var) => (float[1,4,6,6] y) {
  c = Conv <group = 4, pads = [1, 1, 1, 1]> (x, w)
  n = BatchNormalization(c, s, bias, mean, var)
  r = Add(n, x)
  three = Constant <value_float = 3.0> ()
  zero = Constant <value_float = 0.0> ()
  six = Constant <value_float = 6.0> ()
  a = Add(r, three)
  cl = Clip(a, zero, six)
  m = Mul(r, cl)
  y = Div(m, six)
})";
  Values weights{{"w", random_tensor(ElementType::float32, {4, 1, 3, 3}, 28)},
                 {"s", random_tensor(ElementType::float32, {4}, 29)},
                 {"bias", random_tensor(ElementType::float32, {4}, 30)},
                 {"mean", random_tensor(ElementType::float32, {4}, 31)},
                 {"var", positive({4}, 32)}};
  auto [opt, ref] = compare(text, weights, {{"x", random_tensor(ElementType::float32, {1, 4, 6, 6}, 33)}});
  CHECK(applied(opt.report, "conv_bn_folding") == 1);
  if (fused_conv_available()) {
    CHECK(applied(opt.report, "epilogue_fusion") == 1);
    CHECK(opt.ops == std::vector<std::string>{"com.onnx_light:FusedConv"});
  } else {
    CHECK(applied(opt.report, "epilogue_fusion") == 0);
    CHECK(has_op(opt, "Conv"));
  }
}

TEST_CASE("optimizer: decomposed LayerNormalization over the last axis fuses; over another axis it does not") {
  const std::string pattern = R"(<ir_version: 8, opset_import: ["" : {}]>
g (float[2,3,8] x, float[8] gamma, float[8] beta) => (float[2,3,8] y) {{
  mean = ReduceMean <axes = [{}]> (x)
  d = Sub(x, mean)
  two = Constant <value_float = 2.0> ()
  p = Pow(d, two)
  var = ReduceMean <axes = [{}]> (p)
  eps = Constant <value_float = 0.00001> ()
  ve = Add(var, eps)
  sd = Sqrt(ve)
  n = Div(d, sd)
  sc = Mul(n, gamma)
  y = Add(sc, beta)
}})";
  Values weights{{"gamma", random_tensor(ElementType::float32, {8}, 34)}, {"beta", random_tensor(ElementType::float32, {8}, 35)}};
  Values in{{"x", random_tensor(ElementType::float32, {2, 3, 8}, 36)}};
  for (int opset : {17, 13}) {
    CAPTURE(opset);
    for (int axis : {-1, 2}) {
      auto [opt, ref] = compare(fmt::format(fmt::runtime(pattern), opset, axis, axis), weights, in);
      CHECK(applied(opt.report, "layer_norm_fusion") == 1);
      CHECK(opt.ops == std::vector<std::string>{opset >= 17 ? "LayerNormalization" : "com.onnx_light:LayerNormalization"});
    }
  }
  // Axis 1 is not the last axis: not a LayerNormalization over [8].
  auto [opt, ref] = compare(fmt::format(fmt::runtime(pattern), 17, 1, 1), weights, in);
  CHECK(applied(opt.report, "layer_norm_fusion") == 0);
  CHECK(has_op(opt, "ReduceMean"));
}

TEST_CASE("optimizer: decomposed LayerNormalization fuses when the last axis is symbolic (shape computed by the graph)") {
  // Exporters reshape to Shape(x)-derived dims, so inference leaves the normalized axis unknown.
  const std::string text = R"(<ir_version: 8, opset_import: ["" : 13]>
g (float[N,T,C] x, float[G] gamma, float[G] beta) => (float[N,T,C] y) {
  mean = ReduceMean <axes = [-1]> (x)
  d = Sub(x, mean)
  two = Constant <value_float = 2.0> ()
  p = Pow(d, two)
  var = ReduceMean <axes = [-1]> (p)
  eps = Constant <value_float = 0.00001> ()
  ve = Add(var, eps)
  sd = Sqrt(ve)
  n = Div(d, sd)
  sc = Mul(n, gamma)
  y = Add(sc, beta)
})";
  Values weights{{"gamma", random_tensor(ElementType::float32, {8}, 37)}, {"beta", random_tensor(ElementType::float32, {8}, 38)}};
  auto [opt, ref] = compare(text, weights, {{"x", random_tensor(ElementType::float32, {2, 3, 8}, 39)}});
  CHECK(applied(opt.report, "layer_norm_fusion") == 1);
  CHECK(opt.ops == std::vector<std::string>{"com.onnx_light:LayerNormalization"});
  // A last axis of 1 broadcasts against gamma in the decomposed graph; the fused node rejects it
  // with an error naming the node rather than returning other values.
  Model model = with_initializers(test::parse(text), weights);
  Values thin{{"x", random_tensor(ElementType::float32, {2, 3, 1}, 40)}};
  CHECK(run_at_level(model, OptimizationLevel::none, thin).outputs.at("y").shape() == Shape{2, 3, 8});
  CHECK_THROWS_WITH_AS(run_at_level(model, OptimizationLevel::all, thin), doctest::Contains("LayerNormalization"), InputError);
  // A gamma of length 1 could be a broadcast over any last axis: not fused.
  Values one{{"gamma", random_tensor(ElementType::float32, {1}, 41)}, {"beta", random_tensor(ElementType::float32, {1}, 42)}};
  auto [opt1, ref1] = compare(text, one, {{"x", random_tensor(ElementType::float32, {2, 3, 8}, 43)}});
  CHECK(applied(opt1.report, "layer_norm_fusion") == 0);
}

TEST_CASE("optimizer: decomposed GELU in its exporter spellings becomes one Gelu") {
  const std::vector<std::string> bodies{
      "d = Div(x, sq)\n e = Erf(d)\n a = Add(e, one)\n m = Mul(x, a)\n y = Mul(m, half)",
      "d = Div(x, sq)\n e = Erf(d)\n a = Add(one, e)\n h = Mul(x, half)\n y = Mul(h, a)",
      "d = Mul(x, rsq)\n e = Erf(d)\n a = Add(e, one)\n h = Mul(a, half)\n y = Mul(x, h)",
  };
  for (const auto& body : bodies) {
    CAPTURE(body);
    const std::string text = fmt::format(R"(<ir_version: 8, opset_import: ["" : 17]>
g (float[4,16] x) => (float[4,16] y) {{
  sq = Constant <value_float = 1.4142135> ()
  rsq = Constant <value_float = 0.70710677> ()
  one = Constant <value_float = 1.0> ()
  half = Constant <value_float = 0.5> ()
  {}
}})",
                                         body);
    Tensor x = random_tensor(ElementType::float32, {4, 16}, 37);
    for (int64_t i = 0; i < x.element_count(); ++i) x.data<float>()[i] *= 4.0f;
    auto [opt, ref] = compare(text, {}, {{"x", x}});
    CHECK(applied(opt.report, "gelu_fusion") == 1);
    CHECK(opt.ops == std::vector<std::string>{"com.onnx_light:Gelu"});
  }
  // Erf of x / 2 is not GELU.
  const std::string wrong = R"(<ir_version: 8, opset_import: ["" : 17]>
g (float[4,16] x) => (float[4,16] y) {
  two = Constant <value_float = 2.0> ()
  one = Constant <value_float = 1.0> ()
  half = Constant <value_float = 0.5> ()
  d = Div(x, two)
  e = Erf(d)
  a = Add(e, one)
  m = Mul(x, a)
  y = Mul(m, half)
})";
  auto [opt, ref] = compare(wrong, {}, {{"x", random_tensor(ElementType::float32, {4, 16}, 38)}});
  CHECK(applied(opt.report, "gelu_fusion") == 0);
  CHECK(has_op(opt, "Erf"));
}

TEST_CASE("optimizer: consecutive elementwise nodes become one ElementwiseChain with every step kind") {
  // x * Sigmoid(x) (operand is the chain's input), scalars of rank 0 and 1, a reversed Sub and
  // Div by values of the chain's shape, then every unary step.
  const std::string text = R"(<ir_version: 8, opset_import: ["" : 14]>
g (float[2,3,5] x, float[2,3,5] u, float[2,3,5] w, float[1] k1, float k0) => (float[2,3,5] y) {
  s = Sigmoid(x)
  a = Mul(x, s)
  b = Mul(k1, a)
  c = Add(b, k0)
  d = Sub(u, c)
  e = Div(d, w)
  lo = Constant <value_float = -2.0> ()
  hi = Constant <value_float = 3.0> ()
  f = Clip(e, lo, hi)
  g1 = LeakyRelu <alpha = 0.2> (f)
  h = HardSigmoid <alpha = 0.3, beta = 0.4> (g1)
  i = HardSwish(h)
  j = Tanh(i)
  k = Neg(j)
  l = Abs(k)
  m = Exp(l)
  n = Sqrt(m)
  y = Relu(n)
})";
  Tensor k1(ElementType::float32, {1});
  *k1.data<float>() = 1.5f;
  Tensor w = positive({2, 3, 5}, 52);
  Values weights{{"k1", k1}, {"k0", float_scalar(-0.25f)}};
  auto [opt, ref] = compare(text, weights, {{"x", random_tensor(ElementType::float32, {2, 3, 5}, 50)},
                                            {"u", random_tensor(ElementType::float32, {2, 3, 5}, 51)},
                                            {"w", w}});
  CHECK(applied(opt.report, "elementwise_chain_fusion") == 1);
  CHECK(opt.ops == std::vector<std::string>{"com.onnx_light:ElementwiseChain"});
}

TEST_CASE("optimizer: an elementwise chain stops at a value read twice, a broadcast operand and a non-float type") {
  const std::string text = R"(<ir_version: 8, opset_import: ["" : 13]>
g (float[2,3,4] x, float[4] row) => (float[2,3,4] y, float[2,3,4] z) {
  a = Relu(x)
  b = Sigmoid(a)
  c = Tanh(b)
  z = Neg(b)
  d = Mul(c, row)
  y = Abs(d)
})";
  Values in{{"x", random_tensor(ElementType::float32, {2, 3, 4}, 53)}, {"row", random_tensor(ElementType::float32, {4}, 54)}};
  auto [opt, ref] = compare(text, {}, in);
  // Relu -> Sigmoid fuse (b is then read twice: the chain ends there); Tanh is alone before the Mul
  // by [4], which broadcasts and so is no step.
  CHECK(applied(opt.report, "elementwise_chain_fusion") == 1);
  CHECK(opt.ops == std::vector<std::string>{"com.onnx_light:ElementwiseChain", "Tanh", "Neg", "Mul", "Abs"});
  // Integer chains are left alone (the kernel is float32).
  const Model ints = test::parse(R"(<ir_version: 8, opset_import: ["" : 13]>
g (int32[2,3] n) => (int32[2,3] q) {
  n2 = Mul(n, n)
  n3 = Neg(n2)
  q = Abs(n3)
})");
  LevelOutcome o = run_at_level(ints, OptimizationLevel::all, {{"n", random_tensor(ElementType::int32, {2, 3}, 55)}});
  CHECK(o.ops == std::vector<std::string>{"Mul", "Neg", "Abs"});
}

TEST_CASE("optimizer: MatMul + bias fuses when inference lost the activations' shape") {
  // Reshape to Shape(x): nothing static is known about A, but B [8, 6] fixes the last axis at 6.
  const std::string text = R"(<ir_version: 8, opset_import: ["" : 13]>
g (float[N,T,8] x, float[8,6] b, float[6] bias) => (float[N,T,6] y) {
  s = Shape(x)
  r = Reshape(x, s)
  m = MatMul(r, b)
  y = Add(m, bias)
})";
  Values weights{{"b", random_tensor(ElementType::float32, {8, 6}, 56)}, {"bias", random_tensor(ElementType::float32, {6}, 57)}};
  auto [opt, ref] = compare(text, weights, {{"x", random_tensor(ElementType::float32, {2, 3, 8}, 58)}});
  CHECK(has_op(opt, "com.onnx_light:FusedMatMul"));
  CHECK(!has_op(opt, "Add"));
}

TEST_CASE("ElementwiseChain kernel: malformed attributes and operands are rejected naming the node") {
  const std::string base = R"(<ir_version: 8, opset_import: ["" : 13, "com.onnx_light" : 1]>
g (float[4] x, float[{}] b) => (float[4] y) {{
  y = com.onnx_light.ElementwiseChain <{}> (x, b)
}})";
  auto session_for = [&](int b_len, const std::string& attrs) {
    RuntimeSessionOptions options;
    options.optimization = OptimizationLevel::none;
    return RuntimeSession(test::parse(fmt::format(fmt::runtime(base), b_len, attrs)), options);
  };
  const std::string ok = R"(ops = ["Mul", "Relu"], operands = [1, -1], reversed = [0, 0], params = [0.0, 0.0, 0.0, 0.0])";
  CHECK_THROWS_WITH_AS(session_for(4, R"(ops = ["Mul", "Relu"], operands = [1, -1], reversed = [0, 0], params = [0.0])"),
                       doctest::Contains("'params'"), UnsupportedError);
  CHECK_THROWS_WITH_AS(session_for(4, R"(ops = ["Mul"], operands = [5], reversed = [0], params = [0.0, 0.0])"),
                       doctest::Contains("reads input 5"), UnsupportedError);
  CHECK_THROWS_WITH_AS(session_for(4, R"(ops = ["Relu"], operands = [1], reversed = [0], params = [0.0, 0.0])"),
                       doctest::Contains("unary"), UnsupportedError);
  CHECK_THROWS_WITH_AS(session_for(4, R"(ops = ["Softplus"], operands = [-1], reversed = [0], params = [0.0, 0.0])"),
                       doctest::Contains("step 0 = \"Softplus\" is not one of"), UnsupportedError);
  // Session creation lists every node that cannot run (as UnsupportedError) with the kernel's reason.
  // An operand of neither X's element count nor one: an InputError naming the node at run time.
  RuntimeSession bad = session_for(3, ok);
  RuntimeContext context;
  context.set("x", random_tensor(ElementType::float32, {4}, 59));
  context.set("b", random_tensor(ElementType::float32, {3}, 60));
  CHECK_THROWS_WITH_AS(bad.run(context), doctest::Contains("ElementwiseChain node"), InputError);
  // The valid node computes Relu(x * b), bit for bit.
  RuntimeSession good = session_for(4, ok);
  Tensor x = random_tensor(ElementType::float32, {4}, 61), b = random_tensor(ElementType::float32, {4}, 62);
  context.set("x", x);
  context.set("b", b);
  good.run(context);
  const Tensor& y = context.get("y");
  for (int i = 0; i < 4; ++i) CHECK(y.data<float>()[i] == std::max(0.0f, x.data<float>()[i] * b.data<float>()[i]));
}

TEST_CASE("optimizer: a scalar Mul/Add after the activation joins the epilogue as post_affine") {
  // PaddleOCR's learnable affine block: act(conv) * s + b with one-element constants. Dense Conv
  // (packed GEMM, Relu stored in the micro-kernel without the affine), depthwise (SIMD rows) and
  // MatMul (FusedMatMul), each with the Mul and Add, only the Mul, only the Add.
  const std::string text = R"(<ir_version: 8, opset_import: ["" : 14]>
g (float[1,8,10,12] x, float[16,8,3,3] w, float[16,1,3,3] dw, float[12,5] m, float[1] s, float b) => (float[1,16,10,12] y, float[1,16,10,12] z, float[1,8,10,5] v) {
  c = Conv <pads = [1, 1, 1, 1]> (x, w)
  r = Relu(c)
  rs = Mul(s, r)
  y = Add(rs, b)
  d = Conv <group = 16, pads = [1, 1, 1, 1]> (y, dw)
  h = HardSwish(d)
  z = Mul(h, s)
  p = MatMul(x, m)
  l = LeakyRelu <alpha = 0.1> (p)
  v = Add(b, l)
})";
  Tensor s(ElementType::float32, {1});
  *s.data<float>() = 0.75f;
  Values weights{{"w", random_tensor(ElementType::float32, {16, 8, 3, 3}, 70)},
                 {"dw", random_tensor(ElementType::float32, {16, 1, 3, 3}, 71)},
                 {"m", random_tensor(ElementType::float32, {12, 5}, 72)},
                 {"s", s},
                 {"b", float_scalar(-0.3f)}};
  auto [opt, ref] = compare(text, weights, {{"x", random_tensor(ElementType::float32, {1, 8, 10, 12}, 73)}});
  if (fused_conv_available()) {
    CHECK(opt.ops == std::vector<std::string>{"com.onnx_light:FusedConv", "com.onnx_light:FusedConv", "com.onnx_light:FusedMatMul"});
  }
}

TEST_CASE("FusedConv: post_affine takes exactly {scale, shift}") {
  const std::string text = R"(<ir_version: 8, opset_import: ["" : 13, "com.onnx_light" : 1]>
g (float[1,2,4,4] x, float[2,2,1,1] w) => (float[1,2,4,4] y) {
  y = com.onnx_light.FusedConv <activation = "Relu", post_affine = [2.0]> (x, w)
})";
  if (!fused_conv_available()) return;
  RuntimeSessionOptions options;
  options.optimization = OptimizationLevel::none;
  CHECK_THROWS_WITH_AS(RuntimeSession(test::parse(text), options), doctest::Contains("'post_affine' has 1 value(s)"),
                       UnsupportedError);
}

TEST_CASE("optimizer: BatchNormalization after a 2-D Gemm or MatMul folds into its weights and bias") {
  // Gemm with transB, alpha, beta and a [1, N] C; MatMul without bias (it becomes a Gemm).
  const std::string text = R"(<ir_version: 8, opset_import: ["" : 14]>
g (float[3,6] x, float[5,6] wt, float[1,5] c, float[5,4] m, float[5] s, float[5] bb, float[5] mu, float[5] v, float[4] s2, float[4] b2, float[4] mu2, float[4] v2) => (float[3,4] y) {
  p = Gemm <transB = 1, alpha = 0.5, beta = 2.0> (x, wt, c)
  q = BatchNormalization <epsilon = 0.001> (p, s, bb, mu, v)
  r = MatMul(q, m)
  y = BatchNormalization (r, s2, b2, mu2, v2)
})";
  Values weights{{"wt", random_tensor(ElementType::float32, {5, 6}, 80)}, {"c", random_tensor(ElementType::float32, {1, 5}, 81)},
                 {"m", random_tensor(ElementType::float32, {5, 4}, 82)},  {"s", random_tensor(ElementType::float32, {5}, 83)},
                 {"bb", random_tensor(ElementType::float32, {5}, 84)},    {"mu", random_tensor(ElementType::float32, {5}, 85)},
                 {"v", positive({5}, 86)},                                {"s2", random_tensor(ElementType::float32, {4}, 87)},
                 {"b2", random_tensor(ElementType::float32, {4}, 88)},    {"mu2", random_tensor(ElementType::float32, {4}, 89)},
                 {"v2", positive({4}, 90)}};
  auto [opt, ref] = compare(text, weights, {{"x", random_tensor(ElementType::float32, {3, 6}, 91)}});
  CHECK(applied(opt.report, "gemm_bn_folding") == 2);
  CHECK(!has_op(opt, "BatchNormalization"));
  // A 3-D MatMul puts N on the last axis, BatchNormalization normalizes axis 1: not folded.
  const std::string batched = R"(<ir_version: 8, opset_import: ["" : 14]>
g (float[2,4,3] x, float[3,4] m, float[4] s, float[4] b, float[4] mu, float[4] v) => (float[2,4,4] y) {
  r = MatMul(x, m)
  y = BatchNormalization (r, s, b, mu, v)
})";
  Values w3{{"m", random_tensor(ElementType::float32, {3, 4}, 92)}, {"s", random_tensor(ElementType::float32, {4}, 93)},
            {"b", random_tensor(ElementType::float32, {4}, 94)},   {"mu", random_tensor(ElementType::float32, {4}, 95)},
            {"v", positive({4}, 96)}};
  auto [opt3, ref3] = compare(batched, w3, {{"x", random_tensor(ElementType::float32, {2, 4, 3}, 97)}});
  CHECK(applied(opt3.report, "gemm_bn_folding") == 0);
  CHECK(has_op(opt3, "BatchNormalization"));
}
