// FusedConv (domain com.onnx_light, kernels/epilogue.h): each implementation against the unfused
// graph Conv -> Add(Z) -> activation node(s) run by the same Conv implementation, for every
// activation, with and without bias and Z, dense, grouped, depthwise and 1x1; the opset import it
// needs; its input checks; and Kernel::variant() naming the Conv code path that really ran.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <tuple>
#include <variant>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "onnx_light/runtime/calibration_workload.h"
#include "onnx_light/runtime/error.h"
#include "onnx_light/runtime/kernel_table.h"
#include "onnx_light/runtime/session.h"
#include "implementation_tables.h"
#include "direct_execution.h"
#include "test_models.h"

using namespace onnx_light;
using namespace onnx_light::runtime;

namespace {

bool is_conv_f32(const KernelDef& def) {
  return (def.op_type == "Conv" || def.op_type == "FusedConv") && def.element_type == ElementType::float32;
}

struct FusedActivation {
  std::string fused;    // activation = "...", activation_params = [...]
  std::string unfused;  // nodes from s to y
  bool exact = true;    // no exp: the same bits (a zero's sign aside), also from the packed micro-kernel's store
};

std::vector<FusedActivation> fused_activations() {
  return {
      {"activation = \"Identity\"", "y = Identity(s)"},
      {"activation = \"Relu\"", "y = Relu(s)"},
      {"activation = \"Clip\", activation_params = [-0.5, 0.75]", "y = Clip(s, lo, hi)"},
      {"activation = \"LeakyRelu\", activation_params = [0.125]", "y = LeakyRelu<alpha = 0.125>(s)"},
      {"activation = \"Sigmoid\"", "y = Sigmoid(s)", false},
      {"activation = \"HardSigmoid\", activation_params = [0.3, 0.4]", "y = HardSigmoid<alpha = 0.3, beta = 0.4>(s)"},
      {"activation = \"HardSwish\"", "y = HardSwish(s)"},
      {"activation = \"Tanh\"", "y = Tanh(s)", false},
      {"activation = \"SiLU\"", "g = Sigmoid(s)\n y = Mul(s, g)", false},
      // PaddleOCR's learnable affine after the activation (two roundings, as the nodes).
      {"activation = \"HardSwish\", post_affine = [1.5, -0.25]",
       "h = HardSwish(s)\n ps = Constant <value_float = 1.5> ()\n m = Mul(h, ps)\n"
       " pb = Constant <value_float = -0.25> ()\n y = Add(m, pb)"},
      {"activation = \"Identity\", post_affine = [0.75, 0.5]",
       "ps = Constant <value_float = 0.75> ()\n m = Mul(s, ps)\n pb = Constant <value_float = 0.5> ()\n y = Add(m, pb)"},
  };
}

struct ConvCase {
  std::string name, attributes;
  Shape x, w, y;
};

std::vector<ConvCase> conv_cases() {
  return {
      {"dense 3x3 same", "pads = [1, 1, 1, 1]", {1, 6, 7, 9}, {16, 6, 3, 3}, {1, 16, 7, 9}},
      {"group 2, stride 2, batch 2", "group = 2, strides = [2, 2]", {2, 4, 9, 8}, {26, 2, 3, 3}, {2, 26, 4, 3}},
      {"depthwise 5x5", "group = 8, pads = [2, 2, 2, 2]", {1, 8, 6, 21}, {8, 1, 5, 5}, {1, 8, 6, 21}},
      {"1x1", "", {1, 24, 5, 5}, {13, 24, 1, 1}, {1, 13, 5, 5}},
      // Depth 576 > block_k (<= 512): the epilogue runs on each tile once, after its last k-block.
      {"dense 3x3 two k-blocks, stride 2", "strides = [2, 2], pads = [1, 0, 1, 1]", {1, 64, 9, 13}, {20, 64, 3, 3},
       {1, 20, 5, 6}},
      // Stride 1 (AVX-512: the implicit im2col, whose tile copy to Y applies Z and the activation).
      {"dense 3x3 stride 1, two k-blocks, batch 2", "pads = [1, 1, 0, 2]", {2, 64, 6, 7}, {20, 64, 3, 3},
       {2, 20, 5, 8}},
      // Few input channels (SIMD: the direct kernel): a stem with two blocks of maps (the second
      // partial) and rows of one full group of pixels plus a remainder; 4 channels at stride 1.
      {"stem 3x3 stride 2, 18 maps", "strides = [2, 2], pads = [1, 1, 1, 1]", {1, 3, 9, 37}, {18, 3, 3, 3},
       {1, 18, 5, 19}},
      {"4 channels stride 1, batch 2", "pads = [1, 2, 0, 1]", {2, 4, 6, 20}, {9, 4, 3, 3}, {2, 9, 5, 21}},
  };
}

std::string dims(const Shape& s) { return fmt::format("{}", fmt::join(s, ", ")); }

Tensor clip_bound(float v) {
  Tensor t(ElementType::float32, {});
  t.data<float>()[0] = v;
  return t;
}

Tensor run_model(const std::string& text, const std::string& implementation, const ConvCase& c, bool bias, bool z,
                 int threads = 2) {
  RuntimeSessionOptions options;
  options.parameters = RuntimeParameters(threads);
  options.kernels = &test::table_with_only("conv_fused_f32", is_conv_f32, implementation);
  // The graphs as written: the unfused reference must not be fused by the graph optimizer.
  options.optimization = OptimizationLevel::none;
  RuntimeSession session(test::parse(text), options);
  RuntimeContext context;
  context.set("x", random_tensor(ElementType::float32, c.x, 3));
  context.set("w", random_tensor(ElementType::float32, c.w, 5));
  if (bias) context.set("b", random_tensor(ElementType::float32, {c.w[0]}, 7));
  if (z) context.set("z", random_tensor(ElementType::float32, c.y, 11));
  if (text.find(" lo") != std::string::npos) {
    context.set("lo", clip_bound(-0.5f));
    context.set("hi", clip_bound(0.75f));
  }
  session.run(context);
  for (const auto& t : session.resolved_tuning())
    if (t.key.kernel == "Conv" || t.key.kernel == "FusedConv") CHECK(t.key.implementation == implementation);
  return context.get("y");
}

std::string inputs_decl(const ConvCase& c, bool bias, bool z, bool clip) {
  std::string s = fmt::format("float[{}] x, float[{}] w", dims(c.x), dims(c.w));
  if (bias) s += fmt::format(", float[{}] b", c.w[0]);
  if (z) s += fmt::format(", float[{}] z", dims(c.y));
  if (clip) s += ", float lo, float hi";
  return s;
}

std::string with(const std::string& attributes, const std::string& more) {
  return attributes.empty() ? more : attributes + ", " + more;
}

}  // namespace

TEST_CASE("fused_conv_matches_conv_add_and_activation_nodes_for_every_activation") {
  for (const std::string implementation : {"portable", "avx2", "avx512"}) {
    if (implementation != "portable" && !test::host_runs("FusedConv float32", is_conv_f32, implementation)) continue;
    for (const ConvCase& c : conv_cases())
      for (bool bias : {false, true})
        for (bool z : {false, true})
          for (const FusedActivation& a : fused_activations()) {
            CAPTURE(implementation);
            CAPTURE(c.name);
            CAPTURE(bias);
            CAPTURE(z);
            CAPTURE(a.fused);
            const bool clip = a.unfused.find("Clip") != std::string::npos;
            const std::string conv_inputs = bias ? "x, w, b" : "x, w";
            const std::string unfused = fmt::format(
                "<ir_version: 8, opset_import: [\"\" : 17]>\ng ({}) => (float[{}] y) {{\n c = Conv{}({})\n {}\n {} }}",
                inputs_decl(c, bias, z, clip), dims(c.y), c.attributes.empty() ? "" : " <" + c.attributes + ">",
                conv_inputs, z ? "s = Add(c, z)" : "s = Identity(c)", a.unfused);
            const std::string fused = fmt::format(
                "<ir_version: 8, opset_import: [\"\" : 17, \"com.onnx_light\" : 1]>\ng ({}) => (float[{}] y) {{\n"
                " y = com.onnx_light.FusedConv <{}> (x, w, {}{}) }}",
                inputs_decl(c, bias, z, false), dims(c.y), with(c.attributes, a.fused), bias ? "b" : "",
                z ? ", z" : "");
            const Tensor want = run_model(unfused, implementation, c, bias, z);
            const Tensor got = run_model(fused, implementation, c, bias, z);
            REQUIRE(got.shape() == want.shape());
            // The same sums in the same order; the fused epilogue may differ only in the sign of a
            // zero (the packed micro-kernel's Relu) and by the last bit of an exp-based activation.
            double worst = 0;
            for (int64_t i = 0; i < got.element_count(); ++i) {
              const double g = got.data<float>()[i], w = want.data<float>()[i];
              worst = std::max(worst, std::fabs(g - w) / std::max(1.0, std::fabs(w)));
            }
            if (a.exact) CHECK(worst == 0.0);
            else CHECK(worst <= 1e-6);
          }
  }
}

TEST_CASE("fused_conv_needs_the_com_onnx_light_opset_import") {
  const std::string body =
      "g (float[1, 2, 4, 4] x, float[3, 2, 3, 3] w) => (float[1, 3, 2, 2] y) {"
      " y = com.onnx_light.FusedConv <activation = \"Relu\"> (x, w) }";
  try {
    RuntimeSession session(test::parse("<ir_version: 8, opset_import: [\"\" : 17]>\n" + body));
    FAIL("a FusedConv without its domain's opset import was accepted");
  } catch (const Error& e) {
    CHECK(std::string(e.what()).find("imports no opset for domain 'com.onnx_light'") != std::string::npos);
  }
  RuntimeSession session(test::parse("<ir_version: 8, opset_import: [\"\" : 17, \"com.onnx_light\" : 1]>\n" + body));
  RuntimeContext context;
  context.set("x", random_tensor(ElementType::float32, {1, 2, 4, 4}, 1));
  context.set("w", random_tensor(ElementType::float32, {3, 2, 3, 3}, 2));
  session.run(context);
  const Tensor& y = context.get("y");
  REQUIRE(y.shape() == Shape{1, 3, 2, 2});
  for (int64_t i = 0; i < y.element_count(); ++i) CHECK(y.data<float>()[i] >= 0.0f);
}

TEST_CASE("fused_conv_rejects_a_bad_activation_and_a_z_of_another_shape") {
  const std::string header = "<ir_version: 8, opset_import: [\"\" : 17, \"com.onnx_light\" : 1]>\n";
  CHECK_THROWS_WITH_AS(RuntimeSession(test::parse(
                           header + "g (float[1, 2, 4, 4] x, float[3, 2, 3, 3] w) => (float[1, 3, 2, 2] y) {"
                                    " y = com.onnx_light.FusedConv <activation = \"Clip\"> (x, w) }")),
                       doctest::Contains("attribute 'activation_params' has 0 value(s) but activation 'Clip' takes 2"),
                       Error);
  RuntimeSession session(test::parse(
      header + "g (float[1, 2, 4, 4] x, float[3, 2, 3, 3] w, float[1, 3, 2, 3] z) => (float[1, 3, 2, 2] y) {"
               " y = com.onnx_light.FusedConv (x, w, , z) }"));
  RuntimeContext context;
  context.set("x", random_tensor(ElementType::float32, {1, 2, 4, 4}, 1));
  context.set("w", random_tensor(ElementType::float32, {3, 2, 3, 3}, 2));
  context.set("z", random_tensor(ElementType::float32, {1, 3, 2, 3}, 3));
  CHECK_THROWS_WITH_AS(session.run(context), doctest::Contains("Z [1, 3, 2, 3] must have the shape of Y"), InputError);
}

namespace {

struct DirectRun {
  std::string variant;
  Tensor y;
};

// The variant label the chosen `implementation` of Conv float32 reports after one run, and Y.
DirectRun direct_run(const std::string& implementation, const std::string& attributes, const Shape& x_shape,
                     const Shape& w_shape, const TuningValues& tuning = {}) {
  const Model model = test::parse(fmt::format(
      "<ir_version: 8, opset_import: [\"\" : 17]>\ng (float[{}] x, float[{}] w) => (float[] y) {{ y = Conv{}(x, w) }}",
      dims(x_shape), dims(w_shape), attributes.empty() ? "" : " <" + attributes + ">"));
  const onnx::NodeProto& node = model.proto().graph().node(0);
  const KernelTable& table = test::table_with_only("conv_fused_f32", is_conv_f32, implementation);
  const KernelChoice choice = table.choose("", "Conv", 17, ElementType::float32, host_cpu_features());
  REQUIRE(choice.def != nullptr);
  REQUIRE(choice.def->implementation == implementation);
  const KernelCreateInfo info{node, 17, {ElementType::float32, ElementType::float32}, {nullptr, nullptr}};
  std::unique_ptr<Kernel> kernel = choice.def->create(info);
  if (!tuning.empty()) kernel->apply_tuning(tuning);
  const Tensor x = random_tensor(ElementType::float32, x_shape, 1), w = random_tensor(ElementType::float32, w_shape, 2);
  test::DirectExecution execution({&x, &w}, 1);
  kernel->run(execution);
  return {std::string(kernel->variant()), execution.y()};
}

std::string variant_after_run(const std::string& implementation, const std::string& attributes, const Shape& x_shape,
                              const Shape& w_shape) {
  return direct_run(implementation, attributes, x_shape, w_shape).variant;
}

}  // namespace

TEST_CASE("two_k_block_cases_are_deeper_than_every_packed_conv_default_block_k") {
  // The "two k-blocks" cases above (depth 576) and the narrow tail's depth-600 case probe the
  // accumulation across k-blocks only while the default gemm.block_k stays below their depth.
  int packed = 0;
  for (const auto& def : cpu_kernel_table().definitions()) {
    if (!is_conv_f32(def) || def.implementation == "portable") continue;
    CAPTURE(def.schema.key.to_string());
    const auto* block_k = def.schema.find("gemm.block_k");
    REQUIRE(block_k != nullptr);
    const auto* depth = std::get_if<int64_t>(&block_k->default_value);
    REQUIRE(depth != nullptr);
    CHECK(*depth < 576);
    ++packed;
  }
#if defined(__x86_64__) || defined(__i386__)
  CHECK(packed == 4);  // Conv and FusedConv, avx2 and avx512 (registered on x86 whatever the host runs)
#endif
}

TEST_CASE("conv_avx512_depthwise_chw_widths_are_tuned_and_move_only_the_path") {
  // Conv and FusedConv on AVX-512 (tuning ABI 3) carry the widths from which depthwise 3x3 planes
  // run the CHW loops; AVX-2 has no CHW loop (ABI 2, its other depthwise paths only).
  for (const auto& def : cpu_kernel_table().definitions()) {
    if (!is_conv_f32(def) || def.implementation == "portable") continue;
    CAPTURE(def.schema.key.to_string());
    const bool avx512 = def.implementation == "avx512";
    CHECK(def.schema.key.tuning_abi == (avx512 ? 3 : 2));
    const auto* s1 = def.schema.find("depthwise.chw_s1_from_width");
    const auto* s2 = def.schema.find("depthwise.chw_s2_from_width");
    CHECK((s1 != nullptr) == avx512);
    CHECK((s2 != nullptr) == avx512);
    if (s1 == nullptr || s2 == nullptr) continue;
    CHECK(s1->role == ParameterRole::tile);
    CHECK(s1->default_value == TuningValue{int64_t{32}});
    CHECK(s2->default_value == TuningValue{int64_t{12}});
    CHECK(s1->validate(TuningValue{int64_t{24}}).empty());
    CHECK_FALSE(s1->validate(TuningValue{int64_t{25}}).empty());  // only the allowed values
  }
  if (!test::host_runs("Conv float32", is_conv_f32, "avx512")) return;
  // Each width on both sides of its threshold: the label follows the tuned value and Y keeps its
  // bits (the CHW and blocked loops sum each output in the same order).
  struct Case {
    std::string attributes;
    Shape x;
    std::string parameter;
    int64_t value;
    std::string expect;
  };
  const std::string s1 = "group = 3, pads = [1, 1, 1, 1]", s2 = "group = 3, pads = [1, 1, 1, 1], strides = [2, 2]";
  for (const Case& c : std::vector<Case>{
           {s1, {1, 3, 9, 24}, "depthwise.chw_s1_from_width", 24, "dwconv_3x3s1_chw_avx512"},
           {s1, {1, 3, 9, 24}, "depthwise.chw_s1_from_width", 32, "dwconv_3x3s1_blocked16_avx512"},
           {s1, {1, 3, 9, 40}, "depthwise.chw_s1_from_width", 48, "dwconv_3x3s1_blocked16_avx512"},
           {s1, {1, 3, 9, 40}, "depthwise.chw_s1_from_width", 40, "dwconv_3x3s1_chw_avx512"},
           {s2, {1, 3, 9, 20}, "depthwise.chw_s2_from_width", 10, "dwconv_3x3s2_chw_avx512"},
           {s2, {1, 3, 9, 20}, "depthwise.chw_s2_from_width", 12, "dwconv_3x3s2_blocked16_avx512"},
           {s2, {1, 3, 9, 32}, "depthwise.chw_s2_from_width", 24, "dwconv_3x3s2_blocked16_avx512"},
           {s2, {1, 3, 9, 32}, "depthwise.chw_s2_from_width", 16, "dwconv_3x3s2_chw_avx512"}}) {
    CAPTURE(c.x);
    CAPTURE(c.parameter);
    CAPTURE(c.value);
    const DirectRun tuned = direct_run("avx512", c.attributes, c.x, {3, 1, 3, 3}, {{c.parameter, c.value}});
    CHECK(tuned.variant == c.expect);
    // The other path: a width above the plane's, or the smallest allowed one.
    const bool chw = c.expect.find("_chw_") != std::string::npos;
    const int64_t flip = chw ? 96 : c.parameter == "depthwise.chw_s1_from_width" ? 16 : 8;
    const DirectRun other = direct_run("avx512", c.attributes, c.x, {3, 1, 3, 3}, {{c.parameter, flip}});
    CHECK(other.variant != tuned.variant);
    REQUIRE(other.y.shape() == tuned.y.shape());
    CHECK(std::memcmp(other.y.raw_data(), tuned.y.raw_data(), tuned.y.byte_size()) == 0);
  }
}

TEST_CASE("conv_depthwise_rows_from_pixels_and_flat_below_width_are_tuned_and_move_only_the_path") {
  // A 5x5 stride-1 plane of 50 x 60 outputs (3000 pixels, 60 wide): blocked by default (rows from
  // 10000 pixels); from 2500 it keeps the row kernels, as one flat row while narrower than
  // flat_below_width. Each label names the loop that ran and Y keeps its bits.
  for (const auto& def : cpu_kernel_table().definitions()) {
    if (!is_conv_f32(def) || def.implementation == "portable") continue;
    CAPTURE(def.schema.key.to_string());
    const auto* rows = def.schema.find("depthwise.rows_from_pixels");
    const auto* flat = def.schema.find("depthwise.flat_below_width");
    REQUIRE(rows != nullptr);
    REQUIRE(flat != nullptr);
    CHECK(rows->default_value == TuningValue{int64_t{10000}});
    CHECK(flat->default_value == TuningValue{int64_t{64}});
    CHECK_FALSE(rows->validate(TuningValue{int64_t{3000}}).empty());  // only the allowed values
    CHECK(flat->validate(TuningValue{int64_t{0}}).empty());
  }
  const std::string attributes = "group = 3, pads = [2, 2, 2, 2]";
  const Shape x{1, 3, 50, 60}, w{3, 1, 5, 5};
  for (const std::string implementation : {"avx2", "avx512"}) {
    if (!test::host_runs("Conv float32", is_conv_f32, implementation)) continue;
    CAPTURE(implementation);
    const DirectRun by_default = direct_run(implementation, attributes, x, w);
    CHECK(by_default.variant == "dwconv_5x5s1_blocked" + std::string(implementation == "avx512" ? "16_" : "8_") +
                                    implementation);
    struct Case {
      TuningValues tuning;
      std::string expect;
    };
    for (const Case& c : std::vector<Case>{
             {{{"depthwise.rows_from_pixels", int64_t{5000}}}, by_default.variant},
             {{{"depthwise.rows_from_pixels", int64_t{2500}}}, "dwconv_5x5s1_flat_" + implementation},
             {{{"depthwise.rows_from_pixels", int64_t{2500}}, {"depthwise.flat_below_width", int64_t{128}}},
              "dwconv_5x5s1_flat_" + implementation},
             {{{"depthwise.rows_from_pixels", int64_t{2500}}, {"depthwise.flat_below_width", int64_t{32}}},
              "dwconv_5x5s1_" + implementation},
             {{{"depthwise.rows_from_pixels", int64_t{2500}}, {"depthwise.flat_below_width", int64_t{0}}},
              "dwconv_5x5s1_" + implementation}}) {
      CAPTURE(c.expect);
      const DirectRun tuned = direct_run(implementation, attributes, x, w, c.tuning);
      CHECK(tuned.variant == c.expect);
      REQUIRE(tuned.y.shape() == by_default.y.shape());
      CHECK(std::memcmp(tuned.y.raw_data(), by_default.y.raw_data(), by_default.y.byte_size()) == 0);
    }
  }
}

TEST_CASE("conv_variant_names_the_path_that_ran") {
  CHECK(variant_after_run("portable", "pads = [1, 1, 1, 1]", {1, 4, 6, 6}, {8, 4, 3, 3}) == "portable_loop");
  CHECK(variant_after_run("portable", "group = 4, pads = [2, 2, 2, 2], strides = [2, 2]", {1, 4, 9, 9}, {4, 1, 5, 5}) ==
        "dwconv_5x5s2_portable");
  for (const std::string implementation : {"avx2", "avx512"}) {
    if (!test::host_runs("Conv float32", is_conv_f32, implementation)) continue;
    CAPTURE(implementation);
    const std::string blocked = implementation == "avx512" ? "blocked16_" : "blocked8_";
    // A dense Conv (more than 4 input channels) runs the packed GEMM, with stride 1 on AVX-512 over
    // its padded input without an im2col; a group narrower than the register tile does not.
    CHECK(variant_after_run(implementation, "pads = [1, 1, 1, 1]", {1, 5, 6, 6}, {16, 5, 3, 3}) ==
          (implementation == "avx512" ? "implicit_gemm_" : "packed_gemm_") + implementation);
    CHECK(variant_after_run(implementation, "pads = [1, 1, 1, 1], strides = [2, 2]", {1, 5, 6, 6}, {16, 5, 3, 3}) ==
          "packed_gemm_" + implementation);
    CHECK(variant_after_run(implementation, "group = 2", {1, 4, 6, 6}, {4, 2, 3, 3}) == "portable_loop");
    // One group thinner than the register tile (a Conv 5 -> 5 maps, a 1x1 down to 5 maps): still
    // one GEMM per image, so the packed path with a partial tile; a stem (3 channels) runs the
    // direct kernel with a partial block of maps. Each matches the portable loop.
    for (const auto& [attributes, x, w, variant] :
         std::vector<std::tuple<std::string, Shape, Shape, std::string>>{
             {"strides = [2, 2], pads = [1, 1, 1, 1]", {1, 5, 11, 19}, {5, 5, 3, 3}, "packed_gemm_"},
             {"strides = [2, 2], pads = [1, 1, 1, 1]", {1, 3, 11, 19}, {5, 3, 3, 3}, "direct_3x3s2_" + blocked},
             {"", {2, 24, 5, 7}, {5, 24, 1, 1}, "pointwise_gemm_"}}) {
      const Shape weights = w;  // CAPTURE's lambda cannot take a structured binding on clang 14
      CAPTURE(weights);
      const DirectRun fast = direct_run(implementation, attributes, x, w);
      CHECK(fast.variant == variant + implementation);
      const DirectRun portable = direct_run("portable", attributes, x, w);
      REQUIRE(fast.y.shape() == portable.y.shape());
      double worst = 0;
      for (int64_t i = 0; i < fast.y.element_count(); ++i)
        worst = std::max(worst, double(std::fabs(fast.y.data<float>()[i] - portable.y.data<float>()[i])));
      CHECK(worst <= 1e-5);  // sums of at most 27 products of values in [-1, 1), in another order
    }
    // Depthwise (one input channel per group, any multiplier, 2-D) runs the depthwise kernels:
    // channel-blocked on small planes, the rows on wide stride-1 planes, 3x3 from 32 outputs across
    // straight from NCHW on AVX-512.
    CHECK(variant_after_run(implementation, "group = 4, pads = [1, 1, 1, 1]", {1, 4, 6, 6}, {4, 1, 3, 3}) ==
          "dwconv_3x3s1_" + blocked + implementation);
    CHECK(variant_after_run(implementation, "group = 4, dilations = [2, 2]", {1, 4, 9, 9}, {8, 1, 3, 3}) ==
          "dwconv_3x3s1d2_" + blocked + implementation);
    CHECK(variant_after_run(implementation, "group = 2, pads = [2, 2, 2, 2]", {1, 2, 120, 120}, {2, 1, 5, 5}) ==
          "dwconv_5x5s1_" + implementation);
    CHECK(variant_after_run(implementation, "group = 2, pads = [1, 1, 1, 1]", {1, 2, 120, 120}, {2, 1, 3, 3}) ==
          "dwconv_3x3s1_" + std::string(implementation == "avx512" ? "chw_" : "") + implementation);
    // A dense Conv with at most 4 input channels (a stem) runs the direct kernel, 1x1 the GEMM.
    CHECK(variant_after_run(implementation, "strides = [2, 2], pads = [1, 1, 1, 1]", {1, 3, 12, 12}, {16, 3, 3, 3}) ==
          "direct_3x3s2_" + blocked + implementation);
    CHECK(variant_after_run(implementation, "", {1, 3, 12, 12}, {16, 3, 1, 1}) == "pointwise_gemm_" + implementation);
    CHECK(variant_after_run(implementation, "pads = [1, 1, 1, 1]", {1, 5, 12, 12}, {16, 5, 3, 3}) !=
          "direct_3x3s1_" + blocked + implementation);
    // 1x1, stride 1, no pads: X's rows are the GEMM's B. With an A too large to pack B inside
    // the tasks (520 x 256 floats), B is packed in a region of its own; both match the portable loop.
    for (const Shape& w : {Shape{24, 40, 1, 1}, Shape{520, 256, 1, 1}}) {
      CAPTURE(w);
      const Shape x{1, w[1], 3, 7};
      const DirectRun fast = direct_run(implementation, "", x, w);
      CHECK(fast.variant == "pointwise_gemm_" + implementation);
      const DirectRun portable = direct_run("portable", "", x, w);
      REQUIRE(fast.y.shape() == portable.y.shape());
      double worst = 0;
      for (int64_t i = 0; i < fast.y.element_count(); ++i)
        worst = std::max(worst, double(std::fabs(fast.y.data<float>()[i] - portable.y.data<float>()[i])));
      CHECK(worst <= 1e-4);  // sums of 256 products of values in [-1, 1), in another order
    }
    CHECK(variant_after_run(implementation, "strides = [2, 2]", {1, 8, 6, 6}, {16, 8, 1, 1}) ==
          "packed_gemm_" + implementation);
    // A 1-D depthwise Conv is not one the 2-D rows handle.
    CHECK(variant_after_run(implementation, "group = 4", {1, 4, 9}, {4, 1, 3}) == "portable_loop");
  }
}

namespace {

// A 1x1 Conv or FusedConv (x, w[, b, z]) run directly; `constant`: W and B given as initializers
// (the kernel may then keep derived copies, as the narrow tail's transposed weights).
DirectRun pointwise_run(const std::string& attributes, const Shape& x_shape, const Shape& w_shape, bool fused, bool z_input,
                        bool constant, int threads) {
  const Shape y_shape{x_shape[0], w_shape[0], x_shape[2], x_shape[3]};
  const std::string text =
      fused ? fmt::format("<ir_version: 8, opset_import: [\"\" : 17, \"com.onnx_light\" : 1]>\ng (float[{}] x, "
                          "float[{}] w, float[{}] b{}) => (float[] y) {{ y = com.onnx_light.FusedConv <{}> "
                          "(x, w, b{}) }}",
                          dims(x_shape), dims(w_shape), w_shape[0], z_input ? fmt::format(", float[{}] z", dims(y_shape)) : "",
                          attributes, z_input ? ", z" : "")
            : fmt::format("<ir_version: 8, opset_import: [\"\" : 17]>\ng (float[{}] x, float[{}] w) => (float[] y) "
                          "{{ y = Conv(x, w) }}",
                          dims(x_shape), dims(w_shape));
  const Model model = test::parse(text);
  const onnx::NodeProto& node = model.proto().graph().node(0);
  const KernelTable& table = test::table_with_only("conv_fused_f32", is_conv_f32, "avx512");
  const KernelChoice choice = fused ? table.choose("com.onnx_light", "FusedConv", 1, ElementType::float32,
                                                   host_cpu_features())
                                    : table.choose("", "Conv", 17, ElementType::float32, host_cpu_features());
  REQUIRE(choice.def != nullptr);
  const Tensor x = random_tensor(ElementType::float32, x_shape, 1), w = random_tensor(ElementType::float32, w_shape, 2);
  const Tensor b = random_tensor(ElementType::float32, {w_shape[0]}, 3), z = random_tensor(ElementType::float32, y_shape, 4);
  std::vector<ElementType> types(fused ? (z_input ? 4 : 3) : 2, ElementType::float32);
  std::vector<const Tensor*> constants(types.size(), nullptr);
  if (constant) {
    constants[1] = &w;
    if (fused) constants[2] = &b;
  }
  const KernelCreateInfo info{node, fused ? 1 : 17, types, constants};
  std::unique_ptr<Kernel> kernel = choice.def->create(info);
  std::vector<const Tensor*> inputs{&x, &w};
  if (fused) inputs.push_back(&b);
  if (fused && z_input) inputs.push_back(&z);
  test::DirectExecution execution(inputs, threads);
  kernel->run(execution);
  return {std::string(kernel->variant()), execution.y()};
}

bool same_bits(const Tensor& a, const Tensor& b) {
  return a.shape() == b.shape() &&
         std::memcmp(a.data<float>(), b.data<float>(), static_cast<std::size_t>(a.element_count()) * sizeof(float)) == 0;
}

}  // namespace

TEST_CASE("pointwise_conv_narrow_tail_n_le_8_is_bit_identical_to_the_wide_tile") {
  // Pixels ending in a panel of at most 8 columns, with constant weights, run that panel with the
  // rows as lanes (simd/gemm_f32.h kernel_narrow): the same FMA chain per element as the wide
  // tile that the same Conv with weights given at run time uses.
  if (!test::host_runs("Conv float32", is_conv_f32, "avx512")) return;
  struct Case {
    std::string name, attributes;
    Shape x, w;
    bool fused, z;
  };
  for (const Case& c : std::vector<Case>{
           // 35 pixels = 32 + 3; 37 maps: one row chunk of three vectors (masked rows), wide tiles
           // of 9 and 10 rows reading W^T.
           {"conv_37_maps_tail_3", "", {1, 40, 5, 7}, {37, 40, 1, 1}, false, false},
           // 97 maps: row chunks of 32, 32 and 33 (two and three vectors).
           {"conv_97_maps_tail_5", "", {1, 24, 3, 11}, {97, 24, 1, 1}, false, false},
           // 100 pixels = 3 x 32 + 4, depth 600 > block_k 512 (the tail accumulates), bias, Z, HardSwish.
           {"fused_hardswish_z_two_k_blocks_tail_4", "activation = \"HardSwish\"", {1, 600, 10, 10}, {24, 600, 1, 1}, true, true},
           // The whole product one narrow panel (6 pixels), batch 2, bias and Relu in the micro-kernel's store.
           {"fused_relu_batch_2_n_6", "activation = \"Relu\"", {2, 16, 2, 3}, {20, 16, 1, 1}, true, false},
           // 8 columns, one map (a single masked lane), Clip in the store after the bias.
           {"fused_clip_one_map_n_8", "activation = \"Clip\", activation_params = [-0.5, 0.75]", {1, 12, 5, 8},
            {1, 12, 1, 1}, true, false},
       }) {
    CAPTURE(c.name);
    const DirectRun wide = pointwise_run(c.attributes, c.x, c.w, c.fused, c.z, false, 1);
    CHECK(wide.variant == "pointwise_gemm_avx512");
    for (const int threads : {1, 3}) {
      CAPTURE(threads);
      const DirectRun narrow = pointwise_run(c.attributes, c.x, c.w, c.fused, c.z, true, threads);
      CHECK(narrow.variant == "pointwise_gemm_avx512_narrow_tail");
      CHECK(same_bits(narrow.y, wide.y));
    }
  }
  // 16 columns past the last full panel (144 = 4 x 32 + 16) stay on the wide tile.
  CHECK(pointwise_run("", {1, 8, 12, 12}, {16, 8, 1, 1}, false, false, true, 1).variant == "pointwise_gemm_avx512");
}

TEST_CASE("fused_conv_tile_epilogue_is_bit_identical_across_thread_counts") {
  // The residual and the activation run on each register tile in the packed GEMM's store: the
  // tiles a thread gets change with the thread count, the bits must not.
  for (const std::string implementation : {"avx2", "avx512"}) {
    if (!test::host_runs("FusedConv float32", is_conv_f32, implementation)) continue;
    const ConvCase c{"dense 3x3", "pads = [1, 1, 1, 1]", {1, 24, 13, 37}, {40, 24, 3, 3}, {1, 40, 13, 37}};
    for (const std::string activation :
         {"activation = \"HardSwish\"", "activation = \"SiLU\"", "activation = \"Clip\", activation_params = [-0.5, 0.75]"}) {
      CAPTURE(implementation);
      CAPTURE(activation);
      const std::string fused = fmt::format(
          "<ir_version: 8, opset_import: [\"\" : 17, \"com.onnx_light\" : 1]>\ng ({}) => (float[{}] y) {{\n"
          " y = com.onnx_light.FusedConv <{}> (x, w, b, z) }}",
          inputs_decl(c, true, true, false), dims(c.y), with(c.attributes, activation));
      const Tensor one = run_model(fused, implementation, c, true, true, 1);
      const Tensor two = run_model(fused, implementation, c, true, true, 2);
      REQUIRE(one.shape() == two.shape());
      CHECK(std::memcmp(one.data<float>(), two.data<float>(), static_cast<std::size_t>(one.element_count()) * sizeof(float)) == 0);
    }
  }
}
