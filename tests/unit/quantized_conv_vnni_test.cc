// QLinearConv and ConvInteger on AVX-512 VNNI ("avx512vnni") and AVX-VNNI ("avxvnni", 256-bit)
// against the portable reference, bit for bit, each case on every VNNI implementation this host
// runs (one it cannot run is reported untested, see implementation_tables.h): uint8 and int8 activations and weights, depthwise and grouped convolutions, pads larger
// than the kernel, strides and dilations of 2, auto_pad, channel counts that leave a depth tail
// (K % 4 != 0) and output channels / positions past the register tile and the 32-column panel,
// per-tensor and per-output-channel weight zero points and scales, bias, saturation at both ends,
// an empty batch, each path (1x1 packed from X, depthwise direct, stride 1 over padded planes,
// im2col), and the variant each reports, W as a constant (packed once) and as an
// input, and 1 and 3 threads.
// Under ASan / TSan (test::kSanitizedBuild; this file took 184 s of TSan's 323 s test run in CI) each
// check runs at 3 threads only and each QLinearConv combination at one of its two y scales, taken
// in turn: the serial run and the second scale add no code path for the sanitizers to watch (the
// threads and scales change values, not addresses); the Release suite runs every combination.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "onnx_light/runtime/calibration_workload.h"
#include "onnx_light/runtime/kernel_table.h"
#include "onnx_light/runtime/model.h"
#include "onnx_light/runtime/session.h"
#include "implementation_tables.h"
#include "sanitizer_build.h"
#include "test_models.h"

using namespace onnx_light;
using namespace onnx_light::runtime;

namespace {

bool qconv_is_quantized_conv(const KernelDef& d) { return d.op_type == "QLinearConv" || d.op_type == "ConvInteger"; }

const KernelTable& qconv_table(const std::string& implementation) {
  return test::table_with_only("quantized_conv", qconv_is_quantized_conv, implementation);
}

// The VNNI implementations this host runs, in table order.
std::vector<std::string> qconv_vnni_implementations() {
  std::vector<std::string> runs;
  for (const char* impl : {"avx512vnni", "avxvnni"})
    if (test::host_runs("QLinearConv", qconv_is_quantized_conv, impl)) runs.emplace_back(impl);
  return runs;
}

std::string qconv_type_name(ElementType t) { return t == ElementType::uint8 ? "uint8" : "int8"; }

std::string qconv_dims(const Shape& shape) {
  std::string s;
  for (std::size_t i = 0; i < shape.size(); ++i) s += (i ? "," : "") + std::to_string(shape[i]);
  return s;
}

std::string qconv_declared(const std::string& type, const Shape& shape) {
  return shape.empty() ? type : type + "[" + qconv_dims(shape) + "]";
}

// One convolution: X [n, c, h, w], W [m, c / group, kh, kw] and its attributes.
struct QConvCase {
  std::string name;
  int64_t n, c, h, w, m, kh, kw, group = 1;
  std::vector<int64_t> pads{0, 0, 0, 0}, strides{1, 1}, dilations{1, 1};
  std::string auto_pad = "NOTSET";
};

Shape qconv_output_shape(const QConvCase& k) {
  auto dim = [&](int64_t in, int64_t kernel, int64_t stride, int64_t dilation, int64_t pb, int64_t pe) {
    const int64_t extent = (kernel - 1) * dilation + 1;
    if (k.auto_pad == "SAME_UPPER" || k.auto_pad == "SAME_LOWER") return (in + stride - 1) / stride;
    if (k.auto_pad == "VALID") return std::max<int64_t>(0, (in - extent) / stride + 1);
    return std::max<int64_t>(0, (in + pb + pe - extent) / stride + 1);
  };
  return {k.n, k.m, dim(k.h, k.kh, k.strides[0], k.dilations[0], k.pads[0], k.pads[2]),
          dim(k.w, k.kw, k.strides[1], k.dilations[1], k.pads[1], k.pads[3])};
}

std::string qconv_attributes(const QConvCase& k) {
  std::string a = fmt::format("group = {}, strides = [{}], dilations = [{}], kernel_shape = [{},{}]", k.group,
                              qconv_dims(k.strides), qconv_dims(k.dilations), k.kh, k.kw);
  if (k.auto_pad == "NOTSET") a += fmt::format(", pads = [{}]", qconv_dims(k.pads));
  else a += fmt::format(", auto_pad = \"{}\"", k.auto_pad);
  return a;
}

// The edge cases, each run with every operand type pair.
std::vector<QConvCase> qconv_cases() {
  std::vector<QConvCase> cases;
  cases.push_back({"3x3 pad 1, odd channels (K tail), 7 maps", 2, 5, 6, 7, 7, 3, 3});
  cases.back().pads = {1, 1, 1, 1};
  cases.push_back({"depthwise 3x3 stride 2", 1, 6, 9, 8, 6, 3, 3, 6});
  cases.back().pads = {1, 1, 1, 1};
  cases.back().strides = {2, 2};
  cases.push_back({"depthwise multiplier 2, 5x5 pad 2", 1, 3, 7, 6, 6, 5, 5, 3});
  cases.back().pads = {2, 2, 2, 2};
  cases.push_back({"depthwise 3x3 dilation 2, pad 3, 37 wide (16-lane tails)", 2, 4, 5, 37, 4, 3, 3, 4});
  cases.back().pads = {3, 3, 3, 3};
  cases.back().dilations = {2, 2};
  cases.push_back({"depthwise 9x9 (81 taps)", 1, 2, 10, 10, 2, 9, 9, 2});
  cases.back().pads = {4, 4, 4, 4};
  cases.push_back({"grouped 3, dilation 2, pads 2", 1, 6, 8, 9, 9, 3, 3, 3});
  cases.back().pads = {2, 2, 2, 2};
  cases.back().dilations = {2, 2};
  cases.push_back({"pads larger than the kernel", 1, 3, 4, 5, 5, 2, 2});
  cases.back().pads = {3, 4, 3, 2};
  cases.push_back({"stride 2, asymmetric pads", 2, 4, 9, 10, 8, 3, 2});
  cases.back().pads = {0, 1, 2, 0};
  cases.back().strides = {2, 2};
  cases.push_back({"1x1 fast path, 35 maps, 63 positions", 1, 13, 7, 9, 35, 1, 1});
  cases.push_back({"1x1 stride 2 (im2col)", 1, 9, 7, 8, 33, 1, 1});
  cases.back().strides = {2, 2};
  cases.push_back({"1x1 with pads (im2col)", 1, 8, 5, 5, 6, 1, 1});
  cases.back().pads = {1, 0, 0, 1};
  cases.push_back({"SAME_UPPER stride 2", 1, 5, 9, 11, 12, 3, 3});
  cases.back().auto_pad = "SAME_UPPER";
  cases.back().strides = {2, 2};
  cases.push_back({"SAME_LOWER 4x4", 1, 3, 8, 7, 4, 4, 4});
  cases.back().auto_pad = "SAME_LOWER";
  cases.push_back({"VALID, dilation 2 by 1", 1, 4, 10, 9, 5, 3, 3});
  cases.back().auto_pad = "VALID";
  cases.back().dilations = {2, 1};
  cases.push_back({"33 channels to 40 maps, 110 positions", 1, 33, 10, 11, 40, 3, 3});
  cases.back().pads = {1, 1, 1, 1};
  cases.push_back({"kernel larger than the input", 1, 2, 3, 3, 3, 5, 5});
  cases.back().pads = {2, 2, 2, 2};
  cases.push_back({"empty batch", 0, 4, 6, 6, 8, 3, 3});
  cases.back().pads = {1, 1, 1, 1};
  return cases;
}

Tensor qconv_floats(const std::vector<float>& values, bool scalar) {
  Tensor t(ElementType::float32, scalar ? Shape{} : Shape{static_cast<int64_t>(values.size())});
  std::memcpy(t.raw_data(), values.data(), values.size() * sizeof(float));
  return t;
}

// Runs `model` with `feeds` on `implementation`; *ran: what the profile says ran.
Tensor qconv_run(const Model& model, const test::NamedTensors& feeds, const std::string& implementation, int threads,
                 std::string* ran = nullptr) {
  RuntimeSessionOptions options;
  options.parameters = RuntimeParameters(threads);
  options.registry = &test::threshold_one_registry();  // parallel at any size
  options.kernels = &qconv_table(implementation);
  options.optimization = OptimizationLevel::none;
  options.profile = true;
  RuntimeSession session(model, options);
  RuntimeContext context;
  for (const auto& [name, t] : feeds) context.set(name, t);
  session.run(context);
  if (ran != nullptr) *ran = session.profile().nodes.front().implementation;
  return context.get(session.outputs().front().name);
}

bool qconv_same_bytes(const Tensor& x, const Tensor& y) {
  return x.element_type() == y.element_type() && x.shape() == y.shape() &&
         std::memcmp(x.raw_data(), y.raw_data(), x.byte_size()) == 0;
}

// Moves the feeds named in `names` into the model as initializers (constants).
std::pair<Model, test::NamedTensors> qconv_with_constants(const Model& model, const test::NamedTensors& feeds,
                                                          const std::vector<std::string>& names) {
  std::map<std::string, Tensor> constants;
  test::NamedTensors rest;
  for (const auto& [name, value] : feeds) {
    if (std::find(names.begin(), names.end(), name) != names.end()) constants[name] = value;
    else rest.push_back({name, value});
  }
  return {with_initializers(model, constants), rest};
}

// The path a VNNI implementation takes for `k` (its variant without the ISA prefix).
std::string qconv_expected_path(const QConvCase& k) {
  const Shape out = qconv_output_shape(k);
  const bool pointwise = k.kh == 1 && k.kw == 1 && k.strides == std::vector<int64_t>{1, 1} && out[2] == k.h &&
                         out[3] == k.w && (k.auto_pad != "NOTSET" || k.pads == std::vector<int64_t>{0, 0, 0, 0});
  if (pointwise) return "1x1";
  if (k.strides != std::vector<int64_t>{1, 1}) return "im2col";
  return k.c == k.group ? "depthwise" : "padded";
}

// Checks every VNNI implementation the host runs against the reference for `model`, with W as an
// input and as a constant; `path`: the variant each must report after its ISA ("padded" for
// "avx512vnni_padded"), or "portable" for a node left to the portable loops.
void qconv_check(const Model& model, const test::NamedTensors& feeds, const std::vector<std::string>& constants,
                 const std::string& path, const std::string& what) {
  CAPTURE(what);
  std::string ran;
  const Tensor expected = qconv_run(model, feeds, "portable", 1, &ran);
  CHECK(ran == "portable");
  const auto [constant_model, rest] = qconv_with_constants(model, feeds, constants);
  for (const std::string& impl : qconv_vnni_implementations()) {
    CAPTURE(impl);
    const std::string expected_variant = path == "portable" ? path : impl + "_" + path;
    for (int threads : {1, 3}) {
      if (test::kSanitizedBuild && threads == 1) continue;
      CAPTURE(threads);
      const Tensor y = qconv_run(model, feeds, impl, threads, &ran);
      CHECK(ran == expected_variant);
      CHECK(qconv_same_bytes(y, expected));
      const Tensor y_constant = qconv_run(constant_model, rest, impl, threads, &ran);
      CHECK(ran == expected_variant);
      CHECK(qconv_same_bytes(y_constant, expected));
    }
  }
}

Model qconv_qlinear_model(const QConvCase& k, ElementType xt, ElementType wt, ElementType yt, bool per_channel,
                          bool bias) {
  const Shape w_shape{k.m, k.c / k.group, k.kh, k.kw};
  const Shape per = per_channel ? Shape{k.m} : Shape{};
  return test::parse(fmt::format(
      "<ir_version: 8, opset_import: [\"\" : 13]>\n"
      "g ({} x, float xs, {} xz, {} w, {} ws, {} wz, float ys, {} yz{}) => ({} y) "
      "{{ y = QLinearConv <{}> (x, xs, xz, w, ws, wz, ys, yz{}) }}",
      qconv_declared(qconv_type_name(xt), {k.n, k.c, k.h, k.w}), qconv_type_name(xt),
      qconv_declared(qconv_type_name(wt), w_shape), qconv_declared("float", per),
      qconv_declared(qconv_type_name(wt), per), qconv_type_name(yt), bias ? fmt::format(", int32[{}] b", k.m) : "",
      qconv_declared(qconv_type_name(yt), qconv_output_shape(k)), qconv_attributes(k), bias ? ", b" : ""));
}

}  // namespace

TEST_CASE("qconv_vnni_qlinear_conv_matches_the_reference_bit_for_bit_on_every_edge") {
  if (qconv_vnni_implementations().empty()) return;
  const ElementType types[] = {ElementType::uint8, ElementType::int8};
  uint32_t seed = 1000;
  int variant_index = 0;
  for (const QConvCase& k : qconv_cases())
    for (ElementType xt : types)
      for (ElementType wt : types) {
        // Alternate the output type, per-channel parameters and bias across the combinations.
        ++variant_index;
        const ElementType yt = variant_index % 3 == 0 ? (xt == ElementType::uint8 ? ElementType::int8 : ElementType::uint8) : xt;
        const bool per_channel = variant_index % 2 == 0;
        const bool bias = variant_index % 4 != 1;
        const Model model = qconv_qlinear_model(k, xt, wt, yt, per_channel, bias);
        const Shape w_shape{k.m, k.c / k.group, k.kh, k.kw};
        std::vector<float> w_scales;
        for (int64_t m = 0; m < (per_channel ? k.m : 1); ++m) w_scales.push_back(0.004f + 0.0013f * static_cast<float>(m % 7));
        // A y scale that keeps most outputs inside the range, and one that saturates most of them.
        for (const float y_scale : {0.9f, 0.011f}) {
          if (test::kSanitizedBuild && (y_scale == 0.9f) != ((variant_index / 2) % 2 == 1)) continue;
          test::NamedTensors feeds{{"x", random_tensor(xt, {k.n, k.c, k.h, k.w}, seed++)},
                                   {"xs", qconv_floats({0.05f}, true)},
                                   {"xz", random_tensor(xt, {}, seed++)},
                                   {"w", random_tensor(wt, w_shape, seed++)},
                                   {"ws", qconv_floats(w_scales, !per_channel)},
                                   {"wz", random_tensor(wt, per_channel ? Shape{k.m} : Shape{}, seed++)},
                                   {"ys", qconv_floats({y_scale}, true)},
                                   {"yz", random_tensor(yt, {}, seed++)}};
          if (bias) {
            Tensor b = random_tensor(ElementType::int32, {k.m}, seed++);
            for (int64_t m = 0; m < k.m; ++m) b.data<int32_t>()[m] %= 20000;
            feeds.push_back({"b", b});
          }
          const std::string what = fmt::format("{}: x {} w {} y {} per-channel {} bias {} y_scale {}", k.name,
                                               qconv_type_name(xt), qconv_type_name(wt), qconv_type_name(yt),
                                               per_channel, bias, y_scale);
          qconv_check(model, feeds, {"w", "ws", "wz"}, qconv_expected_path(k), what);
        }
      }
}

TEST_CASE("qconv_vnni_qlinear_conv_saturates_at_both_ends_like_the_reference") {
  if (qconv_vnni_implementations().empty()) return;
  // A tiny y scale: nearly every output saturates; the reference's output holds both extremes.
  QConvCase k{"saturation", 1, 16, 9, 9, 20, 3, 3};
  k.pads = {1, 1, 1, 1};
  for (ElementType xt : {ElementType::uint8, ElementType::int8}) {
    const Model model = qconv_qlinear_model(k, xt, ElementType::int8, xt, true, true);
    Tensor wz(ElementType::int8, {k.m});
    std::memset(wz.raw_data(), 0, wz.byte_size());
    Tensor b(ElementType::int32, {k.m});
    for (int64_t m = 0; m < k.m; ++m) b.data<int32_t>()[m] = (m % 2 == 0 ? 1 : -1) * 2000000;  // both signs
    const test::NamedTensors feeds{{"x", random_tensor(xt, {k.n, k.c, k.h, k.w}, 5)},
                                   {"xs", qconv_floats({0.1f}, true)},
                                   {"xz", random_tensor(xt, {}, 6)},
                                   {"w", random_tensor(ElementType::int8, {k.m, k.c, k.kh, k.kw}, 7)},
                                   {"ws", qconv_floats(std::vector<float>(static_cast<std::size_t>(k.m), 0.01f), false)},
                                   {"wz", wz},
                                   {"ys", qconv_floats({0.001f}, true)},
                                   {"yz", random_tensor(xt, {}, 8)},
                                   {"b", b}};
    const Tensor expected = qconv_run(model, feeds, "portable", 1);
    int lows = 0, highs = 0;
    for (int64_t e = 0; e < expected.element_count(); ++e) {
      const int v = xt == ElementType::uint8 ? expected.data<uint8_t>()[e] : expected.data<int8_t>()[e];
      lows += v == (xt == ElementType::uint8 ? 0 : -128);
      highs += v == (xt == ElementType::uint8 ? 255 : 127);
    }
    CHECK(lows > 0);
    CHECK(highs > 0);
    qconv_check(model, feeds, {"w", "ws", "wz"}, qconv_expected_path(k), "saturation " + qconv_type_name(xt));
    QConvCase depthwise{"saturation, depthwise", 1, 16, 9, 9, 16, 3, 3, 16};
    depthwise.pads = {1, 1, 1, 1};
    const Model dw_model = qconv_qlinear_model(depthwise, xt, ElementType::int8, xt, true, true);
    test::NamedTensors dw_feeds = feeds;
    for (auto& [name, value] : dw_feeds) {
      if (name == "w") value = random_tensor(ElementType::int8, {16, 1, 3, 3}, 9);
      if (name == "ws" || name == "wz" || name == "b") {
        Tensor cut(value.element_type(), {16});
        std::memcpy(cut.raw_data(), value.raw_data(), cut.byte_size());
        value = cut;
      }
    }
    qconv_check(dw_model, dw_feeds, {"w", "ws", "wz"}, "depthwise", "saturation, depthwise " + qconv_type_name(xt));
  }
}

TEST_CASE("qconv_vnni_conv_integer_matches_the_reference_with_and_without_zero_points") {
  if (qconv_vnni_implementations().empty()) return;
  const ElementType types[] = {ElementType::uint8, ElementType::int8};
  uint32_t seed = 5000;
  int zero_kind = 0;
  for (const QConvCase& k : qconv_cases())
    for (ElementType xt : types)
      for (ElementType wt : types) {
        // 0: per-tensor zero points; 1: per-channel w zero point; 2: none; 3: only x's.
        zero_kind = (zero_kind + 1) % 4;
        const Shape w_shape{k.m, k.c / k.group, k.kh, k.kw};
        const bool has_xz = zero_kind != 2, has_wz = zero_kind < 2;
        const Shape wz_shape = zero_kind == 1 ? Shape{k.m} : Shape{};
        std::string inputs = "x, w", signature = fmt::format("{} x, {} w", qconv_declared(qconv_type_name(xt), {k.n, k.c, k.h, k.w}),
                                                             qconv_declared(qconv_type_name(wt), w_shape));
        if (has_xz) {  // (w's zero point comes only with x's)
          inputs += ", xz";
          signature += fmt::format(", {} xz", qconv_type_name(xt));
        }
        if (has_wz) {
          inputs += ", wz";
          signature += fmt::format(", {} wz", qconv_declared(qconv_type_name(wt), wz_shape));
        }
        const Model model = test::parse(fmt::format(
            "<ir_version: 8, opset_import: [\"\" : 13]>\n"
            "g ({}) => ({} y) {{ y = ConvInteger <{}> ({}) }}",
            signature, qconv_declared("int32", qconv_output_shape(k)), qconv_attributes(k), inputs));
        test::NamedTensors feeds{{"x", random_tensor(xt, {k.n, k.c, k.h, k.w}, seed++)},
                                 {"w", random_tensor(wt, w_shape, seed++)}};
        if (has_xz) feeds.push_back({"xz", random_tensor(xt, {}, seed++)});
        if (has_wz) feeds.push_back({"wz", random_tensor(wt, wz_shape, seed++)});
        const std::string what = fmt::format("ConvInteger {}: x {} w {} zero points {}", k.name, qconv_type_name(xt),
                                             qconv_type_name(wt), zero_kind);
        qconv_check(model, feeds, {"w"}, qconv_expected_path(k), what);
      }
}

TEST_CASE("qconv_vnni_conv_integer_extreme_values_are_the_exact_sums") {
  if (qconv_vnni_implementations().empty()) return;
  // X all 255 (uint8, zero point 0), W all -128 (int8): every interior output is 255 * -128 * K.
  const int64_t c = 37, m = 33, h = 6, w = 6;
  Tensor x(ElementType::uint8, {1, c, h, w});
  std::memset(x.raw_data(), 255, x.byte_size());
  Tensor wt(ElementType::int8, {m, c, 3, 3});
  std::memset(wt.raw_data(), 0x80, wt.byte_size());
  const Model model = test::parse(
      "<ir_version: 8, opset_import: [\"\" : 13]>\n"
      "g (uint8[1,37,6,6] x, int8[33,37,3,3] w) => (int32[1,33,4,4] y) { y = ConvInteger (x, w) }");
  for (const std::string& impl : qconv_vnni_implementations())
    for (int threads : {1, 3}) {
      CAPTURE(impl);
      std::string ran;
      const Tensor y = qconv_run(model, {{"x", x}, {"w", wt}}, impl, threads, &ran);
      CHECK(ran == impl + "_padded");
      for (int64_t e = 0; e < y.element_count(); ++e) CHECK(y.data<int32_t>()[e] == 255 * -128 * c * 9);
    }
}

TEST_CASE("qconv_vnni_constant_weights_stay_exact_across_runs_and_batches") {
  if (qconv_vnni_implementations().empty()) return;
  // A real network's shape, smaller: 3x3 pad 1 over two images, W and its parameters constant.
  QConvCase k{"network layer", 2, 24, 14, 14, 40, 3, 3};
  k.pads = {1, 1, 1, 1};
  const Model model = qconv_qlinear_model(k, ElementType::uint8, ElementType::int8, ElementType::uint8, true, true);
  std::vector<float> scales;
  for (int64_t m = 0; m < k.m; ++m) scales.push_back(0.002f * static_cast<float>(1 + m % 5));
  const Tensor w = random_tensor(ElementType::int8, {k.m, k.c, 3, 3}, 41);
  Tensor wz(ElementType::int8, {k.m});
  std::memset(wz.raw_data(), 0, wz.byte_size());
  const Tensor b = random_tensor(ElementType::int32, {k.m}, 42);
  const std::map<std::string, Tensor> constants{{"w", w}, {"ws", qconv_floats(scales, false)}, {"wz", wz}, {"b", b}};
  const Model constant_model = with_initializers(model, constants);
  for (const std::string& impl : qconv_vnni_implementations()) {
    CAPTURE(impl);
    RuntimeSessionOptions options;
    options.parameters = RuntimeParameters(3);
    options.registry = &test::threshold_one_registry();
    options.kernels = &qconv_table(impl);
    RuntimeSession session(constant_model, options);
    for (uint32_t run_index = 0; run_index < 3; ++run_index) {
      test::NamedTensors feeds{{"x", random_tensor(ElementType::uint8, {k.n, k.c, k.h, k.w}, 100 + run_index)},
                               {"xs", qconv_floats({0.02f}, true)},
                               {"xz", random_tensor(ElementType::uint8, {}, 200 + run_index)},
                               {"ys", qconv_floats({0.05f}, true)},
                               {"yz", random_tensor(ElementType::uint8, {}, 300 + run_index)}};
      RuntimeContext context;
      for (const auto& [name, t] : feeds) context.set(name, t);
      session.run(context);
      for (const auto& [name, t] : constants) feeds.push_back({name, t});
      const Tensor expected = qconv_run(model, feeds, "portable", 1);
      CAPTURE(run_index);
      CHECK(qconv_same_bytes(context.get("y"), expected));
    }
  }
}

TEST_CASE("qconv_vnni_zero_depth_runs_the_portable_loops_and_says_so") {
  if (qconv_vnni_implementations().empty()) return;
  // X with no channels: every sum is empty (0), QLinearConv's output the requantized bias.
  const Model integer = test::parse(
      "<ir_version: 8, opset_import: [\"\" : 13]>\n"
      "g (uint8[1,0,5,5] x, int8[4,0,3,3] w) => (int32[1,4,3,3] y) { y = ConvInteger (x, w) }");
  const test::NamedTensors integer_feeds{{"x", Tensor(ElementType::uint8, {1, 0, 5, 5})},
                                         {"w", Tensor(ElementType::int8, {4, 0, 3, 3})}};
  qconv_check(integer, integer_feeds, {"w"}, "portable", "ConvInteger with no channels");
  QConvCase k{"no channels", 1, 0, 5, 5, 4, 3, 3};
  const Model qlinear = qconv_qlinear_model(k, ElementType::uint8, ElementType::int8, ElementType::uint8, false, true);
  Tensor b(ElementType::int32, {4});
  for (int m = 0; m < 4; ++m) b.data<int32_t>()[m] = (m - 2) * 1000;
  const test::NamedTensors feeds{{"x", Tensor(ElementType::uint8, {1, 0, 5, 5})},
                                 {"xs", qconv_floats({0.1f}, true)},
                                 {"xz", random_tensor(ElementType::uint8, {}, 1)},
                                 {"w", Tensor(ElementType::int8, {4, 0, 3, 3})},
                                 {"ws", qconv_floats({0.1f}, true)},
                                 {"wz", random_tensor(ElementType::int8, {}, 2)},
                                 {"ys", qconv_floats({0.5f}, true)},
                                 {"yz", random_tensor(ElementType::uint8, {}, 3)},
                                 {"b", b}};
  qconv_check(qlinear, feeds, {"w", "ws", "wz"}, "portable", "QLinearConv with no channels");
}
