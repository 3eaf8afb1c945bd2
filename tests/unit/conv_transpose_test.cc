// ConvTranspose: the portable gather and the packed GEMM + col2im paths ("avx512", "avx2") held
// to a double-precision scatter written here, whose output size and leading pads are given by hand
// per case (so the geometry is checked too), on the edges: strides larger than the kernel,
// output_padding, pads larger than the kernel, output_shape with and without auto_pad, SAME_* and
// VALID, dilations, groups, 1-D and 3-D, batches, W constant (transposed at creation) or not.
// The packed result is bit-identical across 1..3 threads and block sizes; invalid attributes are
// refused with an error naming the node.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "kernels/element_traits.h"
#include "onnx_light/runtime/calibration_workload.h"
#include "onnx_light/runtime/error.h"
#include "onnx_light/runtime/kernel_table.h"
#include "onnx_light/runtime/model.h"
#include "onnx_light/runtime/session.h"
#include "onnx_light/runtime/tuning_registry.h"
#include "implementation_tables.h"
#include "test_models.h"

using namespace onnx_light;
using namespace onnx_light::runtime;

namespace {

bool is_convt_f32(const KernelDef& def) {
  return def.op_type == "ConvTranspose" && def.element_type == ElementType::float32;
}

// Threshold 1 (parallel from the smallest problem) and the given blocks for every ConvTranspose.
std::unique_ptr<TuningRegistry> conv_transpose_registry(int64_t block_m, int64_t block_k, int64_t block_n) {
  auto registry = std::make_unique<TuningRegistry>();
  std::vector<PublishedProfile> profiles;
  for (const auto& def : cpu_kernel_table().definitions()) {
    if (def.op_type != "ConvTranspose") continue;
    TuningValues values = def.schema.defaults();
    values["parallel.minimum_macs"] = int64_t{1};
    if (def.implementation != "portable") {
      values["gemm.block_m"] = block_m;
      values["gemm.block_k"] = block_k;
      values["gemm.block_n"] = block_n;
    }
    for (int threads = 1; threads <= 3; ++threads) profiles.push_back({def.schema.key, threads, values});
  }
  registry->publish(std::move(profiles));
  return registry;
}

struct ConvTransposeCase {
  std::string name;
  std::string attributes;  // inside ConvTranspose <...>, may be empty
  Shape x, w;              // W [C, M/group, k...]
  bool bias;
  int64_t group;
  std::vector<int64_t> strides, dilations;
  // Worked out by hand from the ONNX definition: Y's spatial dims and the leading pads.
  std::vector<int64_t> out, pad_begin;
};

std::vector<ConvTransposeCase> conv_transpose_cases() {
  return {
      // full = s * (in - 1) + output_padding + (k - 1) * d + 1; out = full - pads, or given.
      {"2x2 stride 2 upsampling (kernel equals stride), bias", "strides = [2, 2]", {1, 8, 5, 7}, {8, 6, 2, 2}, true,
       1, {2, 2}, {1, 1}, {10, 14}, {0, 0}},
      {"4x4 stride 2 pads 1", "strides = [2, 2], pads = [1, 1, 1, 1]", {1, 6, 6, 5}, {6, 4, 4, 4}, true, 1, {2, 2},
       {1, 1}, {12, 10}, {1, 1}},
      {"strides larger than the kernel (gaps get the bias only)", "strides = [3, 4]", {1, 3, 4, 4}, {3, 2, 2, 2}, true,
       1, {3, 4}, {1, 1}, {11, 14}, {0, 0}},
      {"output_padding", "strides = [2, 3], output_padding = [1, 2]", {1, 2, 4, 3}, {2, 3, 3, 2}, true, 1, {2, 3},
       {1, 1}, {10, 10}, {0, 0}},
      {"pads larger than the kernel", "strides = [3, 3], pads = [3, 4, 4, 2]", {1, 2, 5, 5}, {2, 3, 2, 2}, false, 1,
       {3, 3}, {1, 1}, {7, 8}, {3, 4}},
      {"output_shape larger than the full output (negative pads), NOTSET", "strides = [2, 2], output_shape = [10, 12]",
       {1, 2, 4, 5}, {2, 2, 3, 3}, true, 1, {2, 2}, {1, 1}, {10, 12}, {0, 0}},
      {"output_shape with SAME_UPPER (smaller half first, floor division)",
       "strides = [2, 2], output_shape = [10, 9], auto_pad = \"SAME_UPPER\"", {1, 2, 4, 5}, {2, 2, 3, 3}, true, 1,
       {2, 2}, {1, 1}, {10, 9}, {-1, 1}},
      {"output_shape with SAME_LOWER", "strides = [2, 2], output_shape = [10, 9], auto_pad = \"SAME_LOWER\"",
       {1, 2, 4, 5}, {2, 2, 3, 3}, true, 1, {2, 2}, {1, 1}, {10, 9}, {0, 1}},
      {"output_shape of N, C and spatial dims", "strides = [2, 2], output_shape = [1, 2, 8, 9]", {1, 2, 4, 5},
       {2, 2, 3, 3}, false, 1, {2, 2}, {1, 1}, {8, 9}, {1, 1}},
      {"auto_pad SAME_UPPER, odd total padding", "strides = [2, 2], auto_pad = \"SAME_UPPER\"", {1, 3, 5, 4},
       {3, 2, 3, 3}, true, 1, {2, 2}, {1, 1}, {10, 8}, {0, 0}},
      {"auto_pad SAME_LOWER, odd total padding", "strides = [2, 2], auto_pad = \"SAME_LOWER\"", {1, 3, 5, 4},
       {3, 2, 3, 3}, true, 1, {2, 2}, {1, 1}, {10, 8}, {1, 1}},
      {"auto_pad VALID", "strides = [2, 1], auto_pad = \"VALID\"", {1, 3, 4, 4}, {3, 2, 3, 2}, false, 1, {2, 1},
       {1, 1}, {9, 5}, {0, 0}},
      {"dilations 2 with asymmetric pads", "strides = [2, 1], dilations = [2, 2], pads = [1, 0, 2, 1]", {1, 3, 5, 6},
       {3, 2, 3, 3}, true, 1, {2, 1}, {2, 2}, {10, 9}, {1, 0}},
      {"group 3, 4 maps per group, stride 2", "group = 3, strides = [2, 2]", {1, 6, 5, 5}, {6, 4, 3, 3}, true, 3,
       {2, 2}, {1, 1}, {11, 11}, {0, 0}},
      {"depthwise groups (one channel and one map per group), batch 2", "group = 4, strides = [2, 2], pads = [1, 1, 1, 1]",
       {2, 4, 5, 6}, {4, 1, 4, 4}, true, 4, {2, 2}, {1, 1}, {10, 12}, {1, 1}},
      {"1-D stride 3 pads 1 2, batch 2", "strides = [3], pads = [1, 2]", {2, 3, 17}, {3, 5, 4}, true, 1, {3}, {1},
       {49}, {1}},
      {"3-D strides and pads", "strides = [2, 1, 2], pads = [0, 1, 1, 0, 0, 1]", {1, 2, 3, 4, 5}, {2, 3, 2, 3, 2},
       true, 1, {2, 1, 2}, {1, 1, 1}, {6, 5, 8}, {0, 1, 1}},
      {"2x2 stride 2 with 96 GEMM rows and odd positions", "strides = [2, 2]", {1, 16, 9, 13}, {16, 24, 2, 2}, true,
       1, {2, 2}, {1, 1}, {18, 26}, {0, 0}},
      {"kernel equals stride 3 (exact tiling, width 3)", "strides = [3, 3]", {1, 5, 4, 7}, {5, 3, 3, 3}, false, 1,
       {3, 3}, {1, 1}, {12, 21}, {0, 0}},
      // col larger than the 512 KiB map block: per-thread blocks of maps, multiplied and added at once.
      {"4x4 stride 2 pads 1, col in map blocks", "strides = [2, 2], pads = [1, 1, 1, 1]", {1, 8, 33, 35},
       {8, 8, 4, 4}, true, 1, {2, 2}, {1, 1}, {66, 70}, {1, 1}},
      {"2x2 stride 2, col in map blocks, batch 2, groups 2", "strides = [2, 2], group = 2", {2, 8, 40, 48},
       {8, 24, 2, 2}, true, 2, {2, 2}, {1, 1}, {80, 96}, {0, 0}},
      {"kernel 1x1 stride 1 (a pointwise product)", "", {1, 7, 3, 5}, {7, 9, 1, 1}, true, 1, {1, 1}, {1, 1}, {3, 5},
       {0, 0}},
  };
}

Shape conv_transpose_y_shape(const ConvTransposeCase& c) {
  Shape s{c.x[0], c.w[1] * c.group};
  s.insert(s.end(), c.out.begin(), c.out.end());
  return s;
}

// The exact result as a scatter: input position i with tap k adds x * w to output
// i * stride + k * dilation - pad_begin, when that lies inside Y.
std::vector<double> conv_transpose_reference(const ConvTransposeCase& c, const Tensor& x, const Tensor& w, const Tensor* b) {
  const std::size_t rank = c.x.size() - 2;
  const int64_t channels = c.x[1], group_channels = channels / c.group, group_maps = c.w[1], maps = group_maps * c.group;
  int64_t in_size = 1, out_size = 1, kernel_size = 1;
  for (std::size_t i = 0; i < rank; ++i) {
    in_size *= c.x[i + 2];
    out_size *= c.out[i];
    kernel_size *= c.w[i + 2];
  }
  std::vector<double> y(static_cast<std::size_t>(c.x[0] * maps * out_size));
  for (int64_t n = 0; n < c.x[0]; ++n)
    for (int64_t m = 0; m < maps; ++m)
      for (int64_t p = 0; p < out_size; ++p)
        y[static_cast<std::size_t>((n * maps + m) * out_size + p)] = b != nullptr ? b->data<float>()[m] : 0.0;
  for (int64_t n = 0; n < c.x[0]; ++n)
    for (int64_t ch = 0; ch < channels; ++ch)
      for (int64_t p = 0; p < in_size; ++p)
        for (int64_t mg = 0; mg < group_maps; ++mg)
          for (int64_t q = 0; q < kernel_size; ++q) {
            int64_t pp = p, qq = q, index = 0, stride_out = 1;
            bool inside = true;
            for (std::size_t i = rank; i-- > 0;) {
              const int64_t coord = pp % c.x[i + 2], k = qq % c.w[i + 2];
              pp /= c.x[i + 2];
              qq /= c.w[i + 2];
              const int64_t o = coord * c.strides[i] + k * c.dilations[i] - c.pad_begin[i];
              inside = inside && o >= 0 && o < c.out[i];
              index += o * stride_out;
              stride_out *= c.out[i];
            }
            if (!inside) continue;
            const int64_t m = (ch / group_channels) * group_maps + mg;
            y[static_cast<std::size_t>((n * maps + m) * out_size + index)] +=
                static_cast<double>(x.data<float>()[(n * channels + ch) * in_size + p]) *
                static_cast<double>(w.data<float>()[(ch * group_maps + mg) * kernel_size + q]);
          }
  return y;
}

std::string conv_transpose_model_text(const ConvTransposeCase& c, const char* type = "float") {
  return fmt::format(
      "<ir_version: 8, opset_import: [\"\" : 17]>\ng ({0}[{1}] x, {0}[{2}] w{3}) => ({0}[] y) {{ y = ConvTranspose{4}(x, w{5}) }}",
      type, fmt::join(c.x, ", "), fmt::join(c.w, ", "), c.bias ? fmt::format(", {}[{}] b", type, c.w[1] * c.group) : "",
      c.attributes.empty() ? "" : " <" + c.attributes + ">", c.bias ? ", b" : "");
}

// The model with its node named "up" (error messages name it), W and B initializers when `constant_w`.
Model named_model(const std::string& text, const std::map<std::string, Tensor>& initializers) {
  onnx::ModelProto proto = test::parse(text).proto();
  proto.mutable_graph()->mutable_node(0)->set_name("up");
  Model model = model_from_proto(std::move(proto));
  return initializers.empty() ? model : with_initializers(model, initializers);
}

struct ConvTransposeOperands {
  Tensor x, w, b;
};
ConvTransposeOperands conv_transpose_operands(const ConvTransposeCase& c) {
  return {random_tensor(ElementType::float32, c.x, 3), random_tensor(ElementType::float32, c.w, 5),
          random_tensor(ElementType::float32, {c.w[1] * c.group}, 7)};
}

Tensor run_conv_transpose(const ConvTransposeCase& c, const std::string& implementation, int threads, TuningRegistry& registry, bool constant_w,
           std::string* variant = nullptr) {
  const ConvTransposeOperands o = conv_transpose_operands(c);
  std::map<std::string, Tensor> initializers;
  if (constant_w) {
    initializers["w"] = o.w;
    if (c.bias) initializers["b"] = o.b;
  }
  RuntimeSessionOptions options;
  options.parameters = RuntimeParameters(threads);
  options.registry = &registry;
  options.kernels = &test::table_with_only("convt_f32", is_convt_f32, implementation);
  options.profile = variant != nullptr;
  RuntimeSession session(named_model(conv_transpose_model_text(c), initializers), options);
  RuntimeContext context;
  context.set("x", o.x);
  if (!constant_w) {
    context.set("w", o.w);
    if (c.bias) context.set("b", o.b);
  }
  session.run(context);
  REQUIRE(session.resolved_tuning().size() == 1);
  CHECK(session.resolved_tuning()[0].key.implementation == implementation);
  if (variant != nullptr) {
    const auto profile = session.profile();
    REQUIRE(profile.nodes.size() == 1);
    *variant = profile.nodes[0].implementation;
  }
  return context.get("y");
}

bool same_conv_transpose_bits(const Tensor& a, const Tensor& b) {
  return a.shape() == b.shape() &&
         std::memcmp(a.raw_data(), b.raw_data(), static_cast<std::size_t>(a.byte_size())) == 0;
}

// Worst absolute difference from the reference; checks the shape first.
double worst_error(const ConvTransposeCase& c, const Tensor& got) {
  REQUIRE(got.shape() == conv_transpose_y_shape(c));
  const ConvTransposeOperands o = conv_transpose_operands(c);
  const std::vector<double> exact = conv_transpose_reference(c, o.x, o.w, c.bias ? &o.b : nullptr);
  REQUIRE(static_cast<int64_t>(exact.size()) == got.element_count());
  double worst = 0;
  for (int64_t i = 0; i < got.element_count(); ++i)
    worst = std::max(worst, std::fabs(static_cast<double>(got.data<float>()[i]) - exact[static_cast<std::size_t>(i)]));
  return worst;
}

// Products of values in [-1, 1) plus a bias in [-1, 1): a float sum of n terms is within
// n * (n + 1) * u of the exact value (u = 2^-24), n = C/group * kernel taps.
double bound(const ConvTransposeCase& c) {
  double n = static_cast<double>(c.x[1] / c.group);
  for (std::size_t i = 2; i < c.w.size(); ++i) n *= static_cast<double>(c.w[i]);
  return (n + 1.0) * (n + 2.0) * std::ldexp(1.0, -24);
}

}  // namespace

TEST_CASE("convtranspose_portable_matches_a_double_scatter_on_every_edge") {
  auto registry = conv_transpose_registry(96, 256, 256);
  for (const ConvTransposeCase& c : conv_transpose_cases())
    for (bool constant_w : {false, true}) {
      CAPTURE(c.name);
      CAPTURE(constant_w);
      const Tensor got = run_conv_transpose(c, "portable", 1, *registry, constant_w);
      const double worst = worst_error(c, got);
      CAPTURE(worst);
      CHECK(worst <= bound(c));
      CHECK(same_conv_transpose_bits(run_conv_transpose(c, "portable", 2, *registry, constant_w), got));
    }
}

TEST_CASE("convtranspose_packed_matches_the_reference_and_the_portable_kernel_and_ignores_threads_and_blocks") {
  auto defaults = conv_transpose_registry(96, 256, 256);
  auto small = conv_transpose_registry(24, 8, 32);
  for (const std::string implementation : {"avx512", "avx2"}) {
    if (!test::host_runs("ConvTranspose float32", is_convt_f32, implementation)) continue;
    for (const ConvTransposeCase& c : conv_transpose_cases())
      for (bool constant_w : {false, true}) {
        CAPTURE(implementation);
        CAPTURE(c.name);
        CAPTURE(constant_w);
        std::string variant;
        const Tensor got = run_conv_transpose(c, implementation, 1, *defaults, constant_w, &variant);
        CHECK(variant == "gemm_col2im_" + implementation);
        const double worst = worst_error(c, got);
        CAPTURE(worst);
        CHECK(worst <= bound(c));
        // Packed vs portable: both within the bound of the exact value, so within twice it of each other.
        const Tensor portable = run_conv_transpose(c, "portable", 1, *defaults, constant_w);
        double apart = 0;
        for (int64_t i = 0; i < got.element_count(); ++i)
          apart = std::max(apart, static_cast<double>(std::fabs(got.data<float>()[i] - portable.data<float>()[i])));
        CHECK(apart <= 2 * bound(c));
        for (int threads = 2; threads <= 3; ++threads) {
          CAPTURE(threads);
          CHECK(same_conv_transpose_bits(run_conv_transpose(c, implementation, threads, *defaults, constant_w), got));
          CHECK(same_conv_transpose_bits(run_conv_transpose(c, implementation, threads, *small, constant_w), got));
        }
      }
  }
}

TEST_CASE("convtranspose_double_and_float16_portable_follow_the_reference") {
  const ConvTransposeCase c = conv_transpose_cases()[1];  // 4x4 stride 2 pads 1, bias
  const ConvTransposeOperands o = conv_transpose_operands(c);
  const std::vector<double> exact = conv_transpose_reference(c, o.x, o.w, &o.b);
  for (const char* type : {"double", "float16"}) {
    CAPTURE(type);
    const ElementType et = std::string(type) == "double" ? ElementType::float64 : ElementType::float16;
    RuntimeSessionOptions options;
    options.parameters = RuntimeParameters(2);
    RuntimeSession session(named_model(conv_transpose_model_text(c, type), {}), options);
    RuntimeContext context;
    // The float32 operands converted (exactly for double; float16 rounds them: a looser bound).
    auto convert = [&](const Tensor& t) {
      Tensor r(et, t.shape());
      for (int64_t i = 0; i < t.element_count(); ++i) {
        if (et == ElementType::float64) r.data<double>()[i] = t.data<float>()[i];
        else r.data<kernels::Float16>()[i] = kernels::store<kernels::Float16>(t.data<float>()[i]);
      }
      return r;
    };
    context.set("x", convert(o.x));
    context.set("w", convert(o.w));
    context.set("b", convert(o.b));
    session.run(context);
    const Tensor y = context.get("y");
    REQUIRE(y.shape() == conv_transpose_y_shape(c));
    double worst = 0;
    for (int64_t i = 0; i < y.element_count(); ++i)
      worst = std::max(worst, std::fabs((et == ElementType::float64 ? y.data<double>()[i]
                                                                   : kernels::load(y.data<kernels::Float16>()[i])) -
                                        exact[static_cast<std::size_t>(i)]));
    CAPTURE(worst);
    CHECK(worst <= (et == ElementType::float64 ? 1e-12 : 0.05));
  }
}

TEST_CASE("convtranspose_invalid_attributes_and_operands_give_errors_naming_the_node") {
  auto refused = [](const std::string& attributes, Shape x, Shape w, const std::string& needle) {
    CAPTURE(attributes);
    const ConvTransposeCase c{"bad", attributes, x, w, false, 1, {}, {}, {}, {}};
    std::string message;
    try {
      RuntimeSessionOptions options;
      options.parameters = RuntimeParameters(1);
      RuntimeSession session(named_model(conv_transpose_model_text(c), {}), options);
      RuntimeContext context;
      context.set("x", random_tensor(ElementType::float32, x, 1));
      context.set("w", random_tensor(ElementType::float32, w, 2));
      session.run(context);
    } catch (const Error& e) {
      message = e.what();
    }
    CAPTURE(message);
    CHECK(message.find("ConvTranspose node 'up'") != std::string::npos);
    CHECK(message.find(needle) != std::string::npos);
  };
  refused("strides = [2, 2], output_padding = [2, 0]", {1, 2, 3, 3}, {2, 2, 3, 3}, "output_padding");
  refused("pads = [1, -1, 0, 0]", {1, 2, 3, 3}, {2, 2, 3, 3}, "must not be negative");
  refused("strides = [0, 1]", {1, 2, 3, 3}, {2, 2, 3, 3}, "must be positive");
  refused("auto_pad = \"SAME\"", {1, 2, 3, 3}, {2, 2, 3, 3}, "auto_pad");
  refused("auto_pad = \"SAME_UPPER\", pads = [1, 1, 1, 1]", {1, 2, 3, 3}, {2, 2, 3, 3}, "cannot both be set");
  refused("group = 0", {1, 2, 3, 3}, {2, 2, 3, 3}, "group");
  refused("group = 2", {1, 3, 3, 3}, {3, 2, 3, 3}, "group = 2");
  refused("kernel_shape = [2, 2]", {1, 2, 3, 3}, {2, 2, 3, 3}, "kernel_shape");
  refused("output_shape = [7]", {1, 2, 3, 3}, {2, 2, 3, 3}, "output_shape");
  refused("strides = [2, 2, 2]", {1, 2, 3, 3}, {2, 2, 3, 3}, "strides");
  refused("pads = [4, 4, 4, 4]", {1, 2, 3, 3}, {2, 2, 3, 3}, "larger than");
  refused("", {1, 2, 3, 3}, {3, 2, 3, 3}, "channels");
}

TEST_CASE("convtranspose_packed_hands_a_kernel_wider_than_64_taps_to_the_gather_and_reports_portable") {
  auto registry = conv_transpose_registry(96, 256, 256);
  const ConvTransposeCase c{"1-D kernel of 70 taps", "strides = [2]", {1, 2, 5}, {2, 3, 70}, true, 1, {2}, {1}, {78}, {0}};
  for (const std::string implementation : {"avx512", "avx2"}) {
    if (!test::host_runs("ConvTranspose float32", is_convt_f32, implementation)) continue;
    CAPTURE(implementation);
    std::string variant;
    const Tensor got = run_conv_transpose(c, implementation, 2, *registry, true, &variant);
    CHECK(variant == "portable");
    const double worst = worst_error(c, got);
    CAPTURE(worst);
    CHECK(worst <= bound(c));
  }
}
