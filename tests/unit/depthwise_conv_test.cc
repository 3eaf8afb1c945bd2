// The depthwise Conv path (kernels/depthwise_conv.cc) of every implementation ("portable", "avx2",
// "avx512") against a direct double-precision convolution, one case per edge it probes: kernel
// sizes, strides (2 and 3, and unequal), dilations, symmetric, asymmetric, automatic and
// larger-than-kernel pads, widths below and around the vector width, batches, channel
// multipliers, channel counts that do not split evenly over threads, and the fused epilogue
// (bias, residual, each activation kind). SIMD results bit-identical at 1 and 3 threads.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "onnx_light/runtime/calibration_workload.h"
#include "onnx_light/runtime/kernel_table.h"
#include "onnx_light/runtime/session.h"
#include "onnx_light/runtime/tuning_registry.h"
#include "implementation_tables.h"
#include "kernels/depthwise_conv.h"
#include "kernels/simd/dwconv_f32.h"
#include "onnx_light/runtime/cpu_features.h"
#include "direct_execution.h"
#include "test_models.h"

using namespace onnx_light;
using namespace onnx_light::runtime;

namespace {

// A one-image 3x3 stride-2 depthwise plane description of `maps` maps, square in x in -> out x out
// (no pads; the operands left null).
kernels::DepthwiseConv depthwise_3x3s2(int64_t maps, int64_t in, int64_t out) {
  kernels::DepthwiseConv c;
  c.batch = 1;
  c.channels = c.maps = maps;
  c.kernel_h = c.kernel_w = 3;
  c.stride_h = c.stride_w = 2;
  c.in_h = c.in_w = in;
  c.out_h = c.out_w = out;
  return c;
}

bool is_conv_or_fused_f32(const KernelDef& def) {
  return (def.op_type == "Conv" || def.op_type == "FusedConv") && def.element_type == ElementType::float32;
}

// Threshold 1: parallel from the smallest problem.
std::unique_ptr<TuningRegistry> depthwise_parallel_registry() {
  auto registry = std::make_unique<TuningRegistry>();
  std::vector<PublishedProfile> profiles;
  for (const auto& def : cpu_kernel_table().definitions()) {
    if (!is_conv_or_fused_f32(def)) continue;
    TuningValues values = def.schema.defaults();
    values["parallel.minimum_macs"] = int64_t{1};
    for (int threads = 1; threads <= 3; ++threads) profiles.push_back({def.schema.key, threads, values});
  }
  registry->publish(std::move(profiles));
  return registry;
}

struct DepthwiseCase {
  std::string name;
  Shape x;                      // [n, c, h, w]
  int64_t multiplier;           // maps per channel
  int64_t kh, kw;
  int64_t sh, sw, dh, dw;
  std::vector<int64_t> pads;    // top, left, bottom, right; empty with auto_pad
  std::string auto_pad;         // "" or SAME_UPPER / SAME_LOWER / VALID
  bool bias = true, z = false;
  std::string activation = "Identity";
  std::vector<float> params = {};
  std::vector<float> post_affine = {};  // {scale, shift} after the activation
};

std::vector<DepthwiseCase> depthwise_cases() {
  return {
      {"dwconv_3x3_s1_pad1", {1, 5, 9, 21}, 1, 3, 3, 1, 1, 1, 1, {1, 1, 1, 1}, ""},
      {"dwconv_3x3_s2_pad1_odd_width", {1, 4, 11, 23}, 1, 3, 3, 2, 2, 1, 1, {1, 1, 1, 1}, ""},
      {"dwconv_5x5_s1_pad2_width_80", {1, 3, 12, 80}, 1, 5, 5, 1, 1, 1, 1, {2, 2, 2, 2}, ""},
      {"dwconv_5x5_s2_odd_width", {1, 6, 13, 37}, 1, 5, 5, 2, 2, 1, 1, {2, 2, 2, 2}, ""},
      {"dwconv_3x3_dilation_2", {1, 3, 10, 19}, 1, 3, 3, 1, 1, 2, 2, {2, 2, 2, 2}, ""},
      {"dwconv_3x3_s2_dilation_3x2", {1, 2, 15, 29}, 1, 3, 3, 2, 2, 3, 2, {1, 2, 0, 1}, ""},
      {"dwconv_3x3_no_pad_n_gt_1_direct_input", {2, 3, 8, 33}, 1, 3, 3, 1, 1, 1, 1, {0, 0, 0, 0}, ""},
      {"dwconv_5x5_s2_same_upper", {1, 4, 10, 17}, 1, 5, 5, 2, 2, 1, 1, {}, "SAME_UPPER"},
      {"dwconv_3x3_same_lower", {1, 2, 7, 9}, 1, 3, 3, 1, 1, 1, 1, {}, "SAME_LOWER"},
      {"dwconv_3x3_valid", {1, 2, 7, 40}, 1, 3, 3, 1, 1, 1, 1, {}, "VALID"},
      {"dwconv_3x3_asymmetric_pads", {1, 3, 8, 18}, 1, 3, 3, 1, 1, 1, 1, {0, 2, 1, 0}, ""},
      {"dwconv_3x3_width_below_vector", {1, 3, 5, 3}, 1, 3, 3, 1, 1, 1, 1, {1, 1, 1, 1}, ""},
      {"dwconv_3x3_width_one", {1, 2, 4, 1}, 1, 3, 3, 1, 1, 1, 1, {1, 1, 1, 1}, ""},
      {"dwconv_3x3_height_one", {1, 3, 1, 20}, 1, 3, 3, 1, 1, 1, 1, {1, 1, 1, 1}, ""},
      {"dwconv_3x3_pads_larger_than_kernel", {1, 2, 4, 6}, 1, 3, 3, 1, 1, 1, 1, {4, 5, 4, 3}, ""},
      {"dwconv_3x3_multiplier_2", {1, 3, 6, 20}, 2, 3, 3, 1, 1, 1, 1, {1, 1, 1, 1}, ""},
      {"dwconv_7x7_s3", {1, 2, 16, 31}, 1, 7, 7, 3, 3, 1, 1, {3, 3, 3, 3}, ""},
      {"dwconv_3x5_s1x2_nonsquare", {1, 3, 9, 26}, 1, 3, 5, 1, 2, 1, 1, {1, 2, 1, 2}, ""},
      {"dwconv_3x3_17_channels_n_2_no_bias", {2, 17, 6, 10}, 1, 3, 3, 1, 1, 1, 1, {1, 1, 1, 1}, "", false},
      {"dwconv_3x3_bias_residual_relu", {1, 4, 7, 35}, 1, 3, 3, 1, 1, 1, 1, {1, 1, 1, 1}, "", true, true, "Relu"},
      {"dwconv_5x5_s2_residual_hardswish", {1, 4, 9, 41}, 1, 5, 5, 2, 2, 1, 1, {2, 2, 2, 2}, "", true, true, "HardSwish"},
      {"dwconv_3x3_clip", {1, 3, 6, 33}, 1, 3, 3, 1, 1, 1, 1, {1, 1, 1, 1}, "", true, false, "Clip", {-0.25f, 0.5f}},
      {"dwconv_3x3_leaky_relu_residual", {1, 3, 6, 19}, 1, 3, 3, 1, 1, 1, 1, {1, 1, 1, 1}, "", false, true, "LeakyRelu",
       {0.1f}},
      {"dwconv_3x3_hard_sigmoid", {1, 3, 6, 17}, 1, 3, 3, 2, 2, 1, 1, {1, 1, 1, 1}, "", true, false, "HardSigmoid",
       {0.2f, 0.5f}},
      {"dwconv_3x3_sigmoid_residual", {1, 3, 6, 21}, 1, 3, 3, 1, 1, 1, 1, {1, 1, 1, 1}, "", true, true, "Sigmoid"},
      {"dwconv_3x3_silu", {1, 3, 6, 21}, 1, 3, 3, 1, 1, 1, 1, {1, 1, 1, 1}, "", true, false, "SiLU"},
      {"dwconv_3x3_tanh", {1, 3, 6, 21}, 1, 3, 3, 1, 1, 1, 1, {1, 1, 1, 1}, "", true, false, "Tanh"},
      // SIMD: blocks of 16 (8) maps whose lanes map to channels through the multiplier, a block
      // spanning two channels' maps, and a partial last block.
      {"dwconv_5x5_multiplier_2_blocks_span_channels", {1, 9, 6, 14}, 2, 5, 5, 1, 1, 1, 1, {2, 2, 2, 2}, "", true, true,
       "Relu"},
      // SIMD: a stride-2 plane larger than one task's L2 budget, cut into bands of output rows
      // (bottom and top pads move with the band).
      // (5x5: 3x3 stride-2 planes this wide run the CHW kernel on AVX-512.)
      {"dwconv_5x5_s2_plane_in_bands", {1, 3, 130, 200}, 1, 5, 5, 2, 2, 1, 1, {2, 2, 2, 2}, ""},
      {"dwconv_5x5_s1_plane_in_bands_asymmetric_pads", {1, 2, 90, 96}, 1, 5, 5, 1, 1, 1, 1, {3, 2, 1, 2}, ""},
      // The post affine after the activation (PaddleOCR's learnable affine block): in the vector
      // epilogue for the activations it has, after a scalar pass for the others.
      {"dwconv_5x5_hard_swish_post_affine", {1, 20, 6, 30}, 1, 5, 5, 1, 1, 1, 1, {2, 2, 2, 2}, "", true, false,
       "HardSwish", {}, {1.25f, -0.125f}},
      {"dwconv_3x3_s2_residual_relu_post_affine", {1, 18, 9, 21}, 1, 3, 3, 2, 2, 1, 1, {1, 1, 1, 1}, "", true, true,
       "Relu", {}, {0.5f, 0.25f}},
      {"dwconv_3x3_sigmoid_post_affine_scalar_pass", {1, 5, 6, 13}, 1, 3, 3, 1, 1, 1, 1, {1, 1, 1, 1}, "", true, false,
       "Sigmoid", {}, {2.0f, -1.0f}},
      {"dwconv_3x3_identity_post_affine_rows", {1, 2, 100, 112}, 1, 3, 3, 1, 1, 1, 1, {1, 1, 1, 1}, "", true, true,
       "Identity", {}, {0.75f, 0.5f}},
      // SIMD: a wide stride-1 plane keeps the row kernels.
      {"dwconv_3x3_s1_wide_plane_rows", {1, 2, 100, 112}, 1, 3, 3, 1, 1, 1, 1, {1, 1, 1, 1}, ""},
      // Wide stride-1 planes (the SIMD rows) at their edges: dilation (single rows, no pairs), pads
      // beyond the kernel's reach, an odd height with a residual and a scalar-pass activation, and an
      // input narrower than the kernel.
      {"dwconv_3x3_d2_wide_plane_rows_single_rows", {1, 2, 101, 103}, 1, 3, 3, 1, 1, 2, 2, {2, 2, 2, 2}, ""},
      {"dwconv_5x5_wide_plane_rows_pads_beyond_reach", {1, 1, 99, 110}, 1, 5, 5, 1, 1, 1, 1, {6, 7, 2, 3}, ""},
      {"dwconv_3x3_wide_plane_rows_sigmoid_residual_odd_height", {1, 2, 101, 100}, 1, 3, 3, 1, 1, 1, 1,
       {1, 1, 1, 1}, "", true, true, "Sigmoid"},
      {"dwconv_5x5_wide_plane_rows_input_narrower_than_kernel", {1, 1, 130, 3}, 1, 5, 5, 1, 1, 1, 1, {1, 40, 1, 40}, ""},
      // SIMD blocked: rows of whole vectors are reordered row by row; full blocks (16 and 32 maps)
      // take the unmasked loads, with pads on every side, bands and a residual.
      {"dwconv_5x5_s2_16_maps_rows_of_whole_vectors_in_bands", {1, 16, 150, 64}, 1, 5, 5, 2, 2, 1, 1, {2, 2, 2, 2}, ""},
      {"dwconv_3x3_32_maps_rows_of_whole_vectors_asymmetric_pads_residual_relu", {1, 32, 40, 32}, 1, 3, 3, 1, 1, 1, 1,
       {2, 1, 0, 3}, "", true, true, "Relu"},
      // The 3x3 row pairs with the activation and post affine fixed at compile time, one per kind
      // (three left pad columns: on AVX-512, 3x3 stride-1 planes with at most two run CHW).
      {"dwconv_3x3_wide_plane_rows_relu", {1, 1, 100, 101}, 1, 3, 3, 1, 1, 1, 1, {1, 3, 1, 1}, "", true, false, "Relu"},
      {"dwconv_3x3_wide_plane_rows_clip_residual", {1, 1, 100, 101}, 1, 3, 3, 1, 1, 1, 1, {1, 3, 1, 3}, "", true, true,
       "Clip", {-0.25f, 0.5f}},
      {"dwconv_3x3_wide_plane_rows_hard_swish_residual_post_affine", {1, 1, 101, 100}, 1, 3, 3, 1, 1, 1, 1,
       {1, 3, 1, 1}, "", true, true, "HardSwish", {}, {1.25f, -0.125f}},
      // AVX-512: 3x3 stride-1 planes from 32 outputs across run CHW: groups of four rows and one
      // to three last rows, two left pads, a residual with an epilogue.
      {"dwconv_3x3_s1_chw_two_left_pads_residual_relu_post_affine", {1, 3, 11, 47}, 1, 3, 3, 1, 1, 1, 1, {2, 2, 0, 0},
       "", true, true, "Relu", {}, {0.5f, 0.25f}},
      // AVX-512: 3x3 stride-2 planes from 12 outputs across run the CHW kernel: a partial last block,
      // odd heights (a single last row), no left pad, bottom and right pads beyond the input, a
      // multiplier, and epilogues in the vector code and in the scalar pass.
      {"dwconv_3x3_s2_chw_odd_width_residual_hard_swish", {1, 3, 13, 45}, 1, 3, 3, 2, 2, 1, 1, {1, 1, 1, 1}, "", true,
       true, "HardSwish"},
      {"dwconv_3x3_s2_chw_same_upper_no_left_pad", {1, 2, 10, 34}, 1, 3, 3, 2, 2, 1, 1, {}, "SAME_UPPER"},
      {"dwconv_3x3_s2_chw_pads_beyond_the_input_multiplier_2", {2, 2, 6, 40}, 2, 3, 3, 2, 2, 1, 1, {3, 1, 4, 9}, "",
       false},
      {"dwconv_3x3_s2_chw_sigmoid_post_affine_scalar_pass", {1, 2, 7, 33}, 1, 3, 3, 2, 2, 1, 1, {0, 0, 1, 1}, "", true,
       true, "Sigmoid", {}, {0.5f, 0.25f}},
  };
}

int64_t depthwise_out_dim(int64_t in, int64_t k, int64_t s, int64_t d, int64_t pb, int64_t pe, const std::string& auto_pad) {
  if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") return (in + s - 1) / s;
  return (in + pb + pe - ((k - 1) * d + 1)) / s + 1;
}

// Begin pads after auto_pad.
int64_t pad_begin(const DepthwiseCase& c, int axis, int64_t out) {
  const int64_t in = c.x[2 + axis], k = axis == 0 ? c.kh : c.kw, s = axis == 0 ? c.sh : c.sw,
                d = axis == 0 ? c.dh : c.dw;
  if (c.auto_pad == "SAME_UPPER" || c.auto_pad == "SAME_LOWER") {
    const int64_t total = std::max<int64_t>(0, (out - 1) * s + (k - 1) * d + 1 - in);
    return c.auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
  }
  if (c.auto_pad == "VALID") return 0;
  return c.pads[static_cast<std::size_t>(axis)];
}

Shape depthwise_y_shape(const DepthwiseCase& c) {
  const bool explicit_pads = !c.pads.empty();
  return {c.x[0], c.x[1] * c.multiplier,
          depthwise_out_dim(c.x[2], c.kh, c.sh, c.dh, explicit_pads ? c.pads[0] : 0, explicit_pads ? c.pads[2] : 0, c.auto_pad),
          depthwise_out_dim(c.x[3], c.kw, c.sw, c.dw, explicit_pads ? c.pads[1] : 0, explicit_pads ? c.pads[3] : 0, c.auto_pad)};
}

double activate(const DepthwiseCase& c, double v) {
  const auto sigmoid = [](double x) { return 1.0 / (1.0 + std::exp(-x)); };
  if (c.activation == "Relu") return std::max(v, 0.0);
  if (c.activation == "Clip") return std::min(std::max(v, double(c.params[0])), double(c.params[1]));
  if (c.activation == "LeakyRelu") return v < 0 ? c.params[0] * v : v;
  if (c.activation == "HardSigmoid") return std::max(0.0, std::min(1.0, c.params[0] * v + c.params[1]));
  if (c.activation == "HardSwish") return v * std::max(0.0, std::min(1.0, v / 6.0 + 0.5));
  if (c.activation == "Sigmoid") return sigmoid(v);
  if (c.activation == "SiLU") return v * sigmoid(v);
  if (c.activation == "Tanh") return std::tanh(v);
  return v;
}

struct DepthwiseOperands {
  Tensor x, w, b, z;
};

DepthwiseOperands depthwise_operands(const DepthwiseCase& c) {
  const Shape y = depthwise_y_shape(c);
  return {random_tensor(ElementType::float32, c.x, 3),
          random_tensor(ElementType::float32, {c.x[1] * c.multiplier, 1, c.kh, c.kw}, 5),
          random_tensor(ElementType::float32, {c.x[1] * c.multiplier}, 7), random_tensor(ElementType::float32, y, 11)};
}

std::vector<double> depthwise_reference(const DepthwiseCase& c, const DepthwiseOperands& o) {
  const Shape y = depthwise_y_shape(c);
  const int64_t top = pad_begin(c, 0, y[2]), left = pad_begin(c, 1, y[3]);
  std::vector<double> out(static_cast<std::size_t>(y[0] * y[1] * y[2] * y[3]));
  std::size_t e = 0;
  for (int64_t n = 0; n < y[0]; ++n)
    for (int64_t m = 0; m < y[1]; ++m)
      for (int64_t oy = 0; oy < y[2]; ++oy)
        for (int64_t ox = 0; ox < y[3]; ++ox, ++e) {
          double sum = 0;
          for (int64_t ky = 0; ky < c.kh; ++ky)
            for (int64_t kx = 0; kx < c.kw; ++kx) {
              const int64_t iy = oy * c.sh - top + ky * c.dh, ix = ox * c.sw - left + kx * c.dw;
              if (iy < 0 || iy >= c.x[2] || ix < 0 || ix >= c.x[3]) continue;
              const int64_t channel = m / c.multiplier;
              sum += double(o.x.data<float>()[((n * c.x[1] + channel) * c.x[2] + iy) * c.x[3] + ix]) *
                     double(o.w.data<float>()[(m * c.kh + ky) * c.kw + kx]);
            }
          if (c.bias) sum += o.b.data<float>()[m];
          if (c.z) sum += o.z.data<float>()[e];
          out[e] = activate(c, sum);
          if (!c.post_affine.empty()) out[e] = out[e] * c.post_affine[0] + c.post_affine[1];
        }
  return out;
}

Tensor run_depthwise(const DepthwiseCase& c, const DepthwiseOperands& o, const std::string& implementation, int threads, TuningRegistry& registry) {
  const Shape y = depthwise_y_shape(c);
  std::string attributes = fmt::format("group = {}, strides = [{}, {}], dilations = [{}, {}]", c.x[1], c.sh, c.sw, c.dh,
                                       c.dw);
  attributes += c.pads.empty() ? fmt::format(", auto_pad = \"{}\"", c.auto_pad)
                               : fmt::format(", pads = [{}]", fmt::join(c.pads, ", "));
  attributes += fmt::format(", activation = \"{}\"", c.activation);
  if (!c.params.empty()) attributes += fmt::format(", activation_params = [{}]", fmt::join(c.params, ", "));
  if (!c.post_affine.empty()) attributes += fmt::format(", post_affine = [{:.6f}]", fmt::join(c.post_affine, ", "));
  const std::string text = fmt::format(
      "<ir_version: 8, opset_import: [\"\" : 17, \"com.onnx_light\" : 1]>\n"
      "g (float[{}] x, float[{}] w, float[{}] b, float[{}] z) => (float[{}] y) {{\n"
      " y = com.onnx_light.FusedConv <{}> (x, w, {}{}) }}",
      fmt::join(c.x, ", "), fmt::join(o.w.shape(), ", "), o.b.shape()[0], fmt::join(y, ", "), fmt::join(y, ", "),
      attributes, c.bias ? "b" : "", c.z ? ", z" : "");
  RuntimeSessionOptions options;
  options.parameters = RuntimeParameters(threads);
  options.registry = &registry;
  options.kernels = &test::table_with_only("dwconv_f32", is_conv_or_fused_f32, implementation);
  RuntimeSession session(test::parse(text), options);
  RuntimeContext context;
  context.set("x", o.x);
  context.set("w", o.w);
  context.set("b", o.b);
  context.set("z", o.z);
  session.run(context);
  REQUIRE(session.resolved_tuning().size() == 1);
  CHECK(session.resolved_tuning()[0].key.implementation == implementation);
  return context.get("y");
}

bool same_depthwise_bits(const Tensor& a, const Tensor& b) {
  return a.shape() == b.shape() &&
         std::memcmp(a.raw_data(), b.raw_data(), static_cast<std::size_t>(a.byte_size())) == 0;
}

}  // namespace

TEST_CASE("depthwise_conv_matches_a_direct_convolution_on_every_edge") {
  auto registry = depthwise_parallel_registry();
  for (const std::string implementation : {"portable", "avx2", "avx512"}) {
    if (implementation != "portable" && !test::host_runs("Conv float32", is_conv_or_fused_f32, implementation)) continue;
    for (const DepthwiseCase& c : depthwise_cases()) {
      CAPTURE(implementation);
      CAPTURE(c.name);
      const DepthwiseOperands o = depthwise_operands(c);
      const Tensor got = run_depthwise(c, o, implementation, 1, *registry);
      REQUIRE(got.shape() == depthwise_y_shape(c));
      const std::vector<double> exact = depthwise_reference(c, o);
      // Products of values in [-1, 1): a float sum of `taps` of them plus bias and residual is within
      // (taps + 2)^2 u of the exact sum (u = 2^-24); the activations here have slope at most 1.5.
      const double taps = double(c.kh * c.kw) + 2.0;
      // The post affine scales that error and adds two roundings of values below ~30.
      const double scale = c.post_affine.empty() ? 1.0 : std::max(1.0, double(std::fabs(c.post_affine[0])));
      const double bound = (1.5 * taps * taps * std::ldexp(1.0, -24) + 2e-7) * scale + (c.post_affine.empty() ? 0 : 4e-6);
      double worst = 0;
      for (int64_t i = 0; i < got.element_count(); ++i)
        worst = std::max(worst, std::fabs(double(got.data<float>()[i]) - exact[static_cast<std::size_t>(i)]));
      CAPTURE(worst);
      CHECK(worst <= bound);
      CHECK(same_depthwise_bits(run_depthwise(c, o, implementation, 3, *registry), got));
    }
  }
}

TEST_CASE("depthwise_conv_reuses_its_scratch_across_shapes_without_stale_pads") {
  // One session sees plane shapes that change the padded layout and back (its slots keep their
  // zeroed pads per layout, and narrow stride-1 planes run flat): each run equals a fresh
  // session's bits.
  const std::string text =
      "<ir_version: 8, opset_import: [\"\" : 17]>\n"
      "g (float[1, 4, H, W] x, float[4, 1, 3, 3] w) => (float[1, 4, OH, OW] y) {\n"
      " y = Conv <group = 4, pads = [2, 1, 0, 1]> (x, w) }";
  const Tensor w = random_tensor(ElementType::float32, {4, 1, 3, 3}, 5);
  for (const std::string implementation : {"portable", "avx2", "avx512"}) {
    if (implementation != "portable" && !test::host_runs("Conv float32", is_conv_or_fused_f32, implementation)) continue;
    RuntimeSessionOptions options;
    options.parameters = RuntimeParameters(1);
    options.kernels = &test::table_with_only("dwconv_f32", is_conv_or_fused_f32, implementation);
    RuntimeSession reused(test::parse(text), options);
    for (const Shape& x_shape : std::vector<Shape>{{1, 4, 5, 7}, {1, 4, 9, 30}, {1, 4, 3, 70}, {1, 4, 5, 7}}) {
      CAPTURE(implementation);
      CAPTURE(x_shape[2]);
      CAPTURE(x_shape[3]);
      const Tensor x = random_tensor(ElementType::float32, x_shape, static_cast<uint32_t>(x_shape[3]));
      RuntimeContext a, b;
      a.set("x", x);
      a.set("w", w);
      b.set("x", x);
      b.set("w", w);
      reused.run(a);
      RuntimeSession fresh(test::parse(text), options);
      fresh.run(b);
      CHECK(same_depthwise_bits(a.get("y"), b.get("y")));
    }
  }
}

TEST_CASE("depthwise_conv_weights_input_changed_in_place_between_runs_is_repacked") {
  // The blocked path packs constant weights (initializers) once; weights that are a graph input
  // may hold new values at the same address on the next run, and must be packed again. 7x7
  // planes of 20 maps: the blocked kernel with a partial block, groups across row ends.
  const std::string text =
      "<ir_version: 8, opset_import: [\"\" : 17]>\n"
      "g (float[1, 20, 7, 7] x, float[20, 1, 3, 3] w, float[20] b) => (float[1, 20, 7, 7] y) {\n"
      " y = Conv <group = 20, pads = [1, 1, 1, 1]> (x, w, b) }";
  const Tensor x = random_tensor(ElementType::float32, {1, 20, 7, 7}, 3);
  Tensor w = random_tensor(ElementType::float32, {20, 1, 3, 3}, 5).clone();
  Tensor b = random_tensor(ElementType::float32, {20}, 7).clone();
  for (const std::string implementation : {"portable", "avx2", "avx512"}) {
    if (implementation != "portable" && !test::host_runs("Conv float32", is_conv_or_fused_f32, implementation)) continue;
    CAPTURE(implementation);
    RuntimeSessionOptions options;
    options.parameters = RuntimeParameters(1);
    options.kernels = &test::table_with_only("dwconv_f32", is_conv_or_fused_f32, implementation);
    RuntimeSession reused(test::parse(text), options);
    for (int round = 0; round < 3; ++round) {
      CAPTURE(round);
      const void* w_address = w.raw_data();
      RuntimeContext a, fresh_context;
      a.set("x", x);
      a.set("w", w);
      a.set("b", b);
      reused.run(a);
      RuntimeSession fresh(test::parse(text), options);
      fresh_context.set("x", x);
      fresh_context.set("w", w);
      fresh_context.set("b", b);
      fresh.run(fresh_context);
      CHECK(same_depthwise_bits(a.get("y"), fresh_context.get("y")));
      // New values at the same addresses for the next round.
      for (int64_t i = 0; i < w.element_count(); ++i) w.data<float>()[i] = -0.5f * w.data<float>()[i] + 0.125f;
      for (int64_t i = 0; i < b.element_count(); ++i) b.data<float>()[i] += 1.0f;
      REQUIRE(w.raw_data() == w_address);
    }
  }
}

#if defined(__x86_64__) || defined(_M_X64)  // the simd folder is built on x86-64 (libruntime/CMakeLists.txt)
TEST_CASE("depthwise_variant_names_the_blocked_kernel_and_wide_stride_1_planes_keep_the_rows") {
  using kernels::DepthwiseConv;
  using kernels::DepthwiseIsa;
  DepthwiseConv c = depthwise_3x3s2(32, 160, 80);
  // 3x3 stride 2 with at most one left pad column runs the CHW kernel on AVX-512, from 12 outputs
  // across; narrower rows, wider left pads and AVX2 run blocked.
  CHECK(kernels::depthwise_variant(c, DepthwiseIsa::avx512) == "dwconv_3x3s2_chw_avx512");
  CHECK(kernels::depthwise_variant(c, DepthwiseIsa::avx2) == "dwconv_3x3s2_blocked8_avx2");
  CHECK(kernels::depthwise_variant(c, DepthwiseIsa::portable) == "dwconv_3x3s2_portable");
  c.pad_left = 1;
  CHECK(kernels::depthwise_variant(c, DepthwiseIsa::avx512) == "dwconv_3x3s2_chw_avx512");
  c.pad_left = 2;
  CHECK(kernels::depthwise_variant(c, DepthwiseIsa::avx512) == "dwconv_3x3s2_blocked16_avx512");
  c.pad_left = 0;
  c.in_w = 23;
  c.out_w = 11;
  CHECK(kernels::depthwise_variant(c, DepthwiseIsa::avx512) == "dwconv_3x3s2_blocked16_avx512");
  c.in_w = 24;
  c.out_w = 12;
  CHECK(kernels::depthwise_variant(c, DepthwiseIsa::avx512) == "dwconv_3x3s2_chw_avx512");
  c.in_w = 160;
  c.out_w = 80;
  c.dilation_h = c.dilation_w = 2;
  CHECK(kernels::depthwise_variant(c, DepthwiseIsa::avx512) == "dwconv_3x3s2d2_blocked16_avx512");
  c.dilation_h = c.dilation_w = 1;
  c.kernel_h = c.kernel_w = 5;
  CHECK(kernels::depthwise_variant(c, DepthwiseIsa::avx512) == "dwconv_5x5s2_blocked16_avx512");
  c.stride_h = c.stride_w = 1;
  c.pad_top = c.pad_left = 2;
  c.out_h = c.out_w = 160;  // 5x5, 25600 output pixels at stride 1: the rows
  CHECK_FALSE(kernels::depthwise_runs_blocked(c, DepthwiseIsa::avx512));
  CHECK(kernels::depthwise_variant(c, DepthwiseIsa::avx512) == "dwconv_5x5s1_avx512");
  c.out_h = c.out_w = 80;  // 6400: blocked
  CHECK(kernels::depthwise_variant(c, DepthwiseIsa::avx512) == "dwconv_5x5s1_blocked16_avx512");
  // 3x3 stride 1 from 32 outputs across: CHW, whatever the plane's size; narrower, blocked.
  c.kernel_h = c.kernel_w = 3;
  c.pad_top = c.pad_left = 1;
  c.out_h = c.out_w = 160;
  CHECK(kernels::depthwise_variant(c, DepthwiseIsa::avx512) == "dwconv_3x3s1_chw_avx512");
  CHECK(kernels::depthwise_variant(c, DepthwiseIsa::avx2) == "dwconv_3x3s1_avx2");
  c.out_w = 32;
  CHECK(kernels::depthwise_variant(c, DepthwiseIsa::avx512) == "dwconv_3x3s1_chw_avx512");
  c.out_w = 31;
  CHECK(kernels::depthwise_variant(c, DepthwiseIsa::avx512) == "dwconv_3x3s1_blocked16_avx512");
  c.out_h = c.out_w = 80;
  c.pad_left = 3;  // beyond the CHW loop's left pads
  CHECK(kernels::depthwise_variant(c, DepthwiseIsa::avx512) == "dwconv_3x3s1_blocked16_avx512");
  // Stride-1 planes on the row kernels narrower than flat_below_width run as one flat row (not
  // with a residual, whose rows are read row by row); the portable loop takes the same rows.
  c.pad_left = 1;
  c.out_h = 300;
  c.out_w = 40;  // 12000 pixels: the rows on AVX2, CHW on AVX-512
  CHECK(kernels::depthwise_variant(c, DepthwiseIsa::avx2) == "dwconv_3x3s1_flat_avx2");
  CHECK(kernels::depthwise_variant(c, DepthwiseIsa::portable) == "dwconv_3x3s1_flat_portable");
  CHECK(kernels::depthwise_variant(c, DepthwiseIsa::avx512) == "dwconv_3x3s1_chw_avx512");
  c.paths.flat_below_width = 40;
  CHECK(kernels::depthwise_variant(c, DepthwiseIsa::avx2) == "dwconv_3x3s1_avx2");
  c.paths.flat_below_width = 41;
  CHECK(kernels::depthwise_variant(c, DepthwiseIsa::avx2) == "dwconv_3x3s1_flat_avx2");
  c.paths.rows_from_pixels = 12001;  // the plane one pixel short: blocked
  CHECK(kernels::depthwise_variant(c, DepthwiseIsa::avx2) == "dwconv_3x3s1_blocked8_avx2");
  c.paths.rows_from_pixels = 12000;
  float residual = 0.0f;
  c.z = &residual;
  CHECK(kernels::depthwise_variant(c, DepthwiseIsa::avx2) == "dwconv_3x3s1_avx2");
  c.z = nullptr;
  c.out_h = 1;  // a single row is already one row
  CHECK(kernels::depthwise_variant(c, DepthwiseIsa::portable) == "dwconv_3x3s1_portable");
}

namespace {

namespace simd = onnx_light::runtime::kernels::simd;

// Values in [-1, 1] from a fixed xorshift sequence: the SIMD loop tests' inputs and weights.
struct DepthwiseValues {
  uint32_t state;
  float operator()() {
    state ^= state << 13;
    state ^= state >> 17;
    state ^= state << 5;
    return static_cast<float>(state % 20001) / 10000.0f - 1.0f;
  }
};

// The fixed-tap rows (3x3) against the generic rows of the same ISA, bit for bit: one row
// and two rows at once, every activation, with and without the residual, widths across the
// vector and the 4-vector block edges.
void check_fixed_rows(const simd::DwconvF32Kernels& fixed, void (*row)(const simd::DwconvF32Row&),
                      void (*rows2)(const simd::DwconvF32Row&, const float* const*, int64_t, const float*, float*),
                      int64_t kh, int64_t kw) {
  REQUIRE(fixed.fixed);
  const int64_t stride = 130;  // input row pitch; every tap reads within it
  std::vector<float> input(static_cast<std::size_t>((kh + 3) * stride + 8));  // four output rows' inputs
  DepthwiseValues next{12345};
  for (float& v : input) v = next();
  std::vector<float> weights(static_cast<std::size_t>(kh * kw)), z(512);
  for (float& v : weights) v = next();
  for (float& v : z) v = next();
  std::vector<const float*> src(static_cast<std::size_t>(kh * kw)), below(static_cast<std::size_t>(kw));
  for (int64_t ky = 0; ky < kh; ++ky)
    for (int64_t kx = 0; kx < kw; ++kx) src[static_cast<std::size_t>(ky * kw + kx)] = input.data() + ky * stride + kx;
  for (int64_t kx = 0; kx < kw; ++kx) below[static_cast<std::size_t>(kx)] = input.data() + kh * stride + kx;
  for (int activation = simd::dwconv_f32_none; activation <= simd::dwconv_f32_hard_swish; ++activation)
    for (bool with_z : {false, true})
      for (int64_t n : {1, 7, 8, 9, 15, 16, 17, 24, 31, 33, 48, 63, 64, 65, 80, 96, 120}) {
        CAPTURE(activation);
        CAPTURE(with_z);
        CAPTURE(n);
        std::vector<float> expect(static_cast<std::size_t>(2 * n), 7.0f), got(expect);
        simd::DwconvF32Row r{src.data(), weights.data(), kh * kw, n, 0.25f, with_z ? z.data() : nullptr,
                             activation, 0.2f, 0.6f, expect.data()};
        r.post_affine = n % 2 == 1;  // odd widths with the post affine, even without
        r.post_scale = 1.5f;
        r.post_shift = -0.25f;
        row(r);
        r.y = got.data();
        fixed.row(r);
        CHECK(std::memcmp(expect.data(), got.data(), static_cast<std::size_t>(n) * sizeof(float)) == 0);
        r.y = expect.data();
        rows2(r, below.data(), kw, with_z ? z.data() + 100 : nullptr, expect.data() + n);
        r.y = got.data();
        fixed.rows2(r, below.data(), kw, with_z ? z.data() + 100 : nullptr, got.data() + n);
        CHECK(std::memcmp(expect.data(), got.data(), static_cast<std::size_t>(2 * n) * sizeof(float)) == 0);
        if (fixed.rows4 == nullptr) continue;
        // Four rows at once against four single rows, each one input row further down (outputs and
        // residual rows kStep apart, the widest n fits).
        constexpr int64_t kStep = 128;
        std::vector<float> expect4(static_cast<std::size_t>(4 * kStep), 7.0f), got4(expect4);
        std::vector<const float*> shifted(src.size());
        for (int64_t q = 0; q < 4; ++q) {
          for (std::size_t t = 0; t < src.size(); ++t) shifted[t] = src[t] + q * stride;
          simd::DwconvF32Row one = r;
          one.src = shifted.data();
          one.y = expect4.data() + q * kStep;
          one.z = with_z ? z.data() + q * kStep : nullptr;
          row(one);
        }
        simd::DwconvF32Row four = r;
        four.y = got4.data();
        four.z = with_z ? z.data() : nullptr;
        fixed.rows4(four, stride, kStep);
        CHECK(std::memcmp(expect4.data(), got4.data(), expect4.size() * sizeof(float)) == 0);
      }
}

}  // namespace

TEST_CASE("depthwise_fixed_tap_rows_are_bit_identical_to_the_generic_rows") {
  const CpuFeatures& f = host_cpu_features();
  for (int64_t k : {3}) {
    CAPTURE(k);
    if (f.avx2 && f.fma3)
      check_fixed_rows(simd::dwconv_f32_kernels_avx2(k, k), simd::dwconv_f32_row_avx2, simd::dwconv_f32_rows2_avx2, k, k);
    if (f.avx512f)
      check_fixed_rows(simd::dwconv_f32_kernels_avx512(k, k), simd::dwconv_f32_row_avx512, simd::dwconv_f32_rows2_avx512,
                       k, k);
  }
  // Other sizes keep the generic rows.
  if (f.avx2 && f.fma3) CHECK_FALSE(simd::dwconv_f32_kernels_avx2(5, 5).fixed);
  if (f.avx512f) CHECK_FALSE(simd::dwconv_f32_kernels_avx512(3, 5).fixed);
}

namespace {

// One plane through the blocked functions (lane 0 of a block of 16, the other lanes empty): the
// reference the CHW kernels must equal bit for bit.
std::vector<float> blocked_plane(const simd::DwconvF32Plane& p, int64_t kernel, int64_t stride) {
  constexpr int64_t L = simd::dwconv_f32_block_lanes_avx512;
  const int64_t pitch = stride * (p.out_w - 1) + kernel, rows = stride * (p.out_h - 1) + kernel;
  const int64_t n = p.out_h * p.out_w, taps = kernel * kernel;
  std::vector<float> in(static_cast<std::size_t>(rows * pitch * L), 0.0f), out(static_cast<std::size_t>(n * L));
  std::vector<float> weights(static_cast<std::size_t>(taps * L), 0.0f), bias(static_cast<std::size_t>(L), 0.0f);
  std::vector<int64_t> offsets;
  for (int64_t t = 0; t < taps; ++t) {
    weights[static_cast<std::size_t>(t * L)] = p.weights[t];
    offsets.push_back(((t / kernel) * pitch + t % kernel) * L);
  }
  bias[0] = p.bias;
  const float* planes[1] = {p.x};
  simd::dwconv_f32_to_blocked_avx512(planes, 1, p.in_h, p.in_w, in.data(), rows, pitch, p.pad_top, p.pad_left);
  const simd::DwconvF32Block b{in.data(), pitch, weights.data(), offsets.data(), taps, bias.data(), stride, stride,
                               p.out_h, p.out_w, p.z != nullptr ? simd::DwconvF32Epilogue{} : p.epilogue, out.data()};
  simd::dwconv_f32_block_avx512(b);
  std::vector<float> y(static_cast<std::size_t>(n), 7.0f);
  float* y_planes[1] = {y.data()};
  const float* z_planes[1] = {p.z};
  simd::dwconv_f32_from_blocked_avx512(out.data(), n, y_planes, 1, p.z != nullptr ? z_planes : nullptr, p.epilogue);
  return y;
}

// The blocked depthwise loop of each SIMD ISA, with whether this CPU runs it.
struct BlockedIsa {
  const char* name;
  bool runs;
  int64_t lanes;
  void (*block)(const simd::DwconvF32Block&);
};

std::vector<BlockedIsa> blocked_isas() {
  const CpuFeatures& f = host_cpu_features();
  return {{"avx2", f.avx2 && f.fma3, simd::dwconv_f32_block_lanes_avx2, simd::dwconv_f32_block_avx2},
          {"avx512", f.avx512f, simd::dwconv_f32_block_lanes_avx512, simd::dwconv_f32_block_avx512}};
}

}  // namespace

TEST_CASE("depthwise_blocked_row_reuse_is_bit_identical_to_the_generic_chains") {
  // The blocked loop with row_taps set (each input pixel of a kernel row loaded once for the
  // outputs of a group) against the same block with row_taps 0, per ISA: kernels 3 and 5, strides
  // 1 and 2, vertical dilation, rows of whole groups and with a remainder, an epilogue.
  const std::vector<BlockedIsa> isas = blocked_isas();
  DepthwiseValues next{4242};
  int blocks = 0;
  for (const BlockedIsa& isa : isas) {
    if (!isa.runs) {
      test::report_untested("depthwise blocked row reuse", isa.name, "the CPU lacks it");
      continue;
    }
    const int64_t L = isa.lanes;
    for (int64_t kernel : {3, 5})
      for (int64_t stride : {1, 2})
        for (int64_t dilation_h : {1, 2})
          for (int64_t out_w : {8, 16, 17, 31, 32, 33, 48})
            for (int64_t out_h : {1, 3}) {
              const int64_t pitch = stride * (out_w - 1) + kernel;
              const int64_t rows = stride * (out_h - 1) + (kernel - 1) * dilation_h + 1, taps = kernel * kernel;
              std::vector<float> in(static_cast<std::size_t>(rows * pitch * L)), weights(static_cast<std::size_t>(taps * L)),
                  bias(static_cast<std::size_t>(L));
              for (float& v : in) v = next();
              for (float& v : weights) v = next();
              for (float& v : bias) v = next();
              std::vector<int64_t> offsets;
              for (int64_t t = 0; t < taps; ++t) offsets.push_back(((t / kernel) * dilation_h * pitch + t % kernel) * L);
              simd::DwconvF32Epilogue e;
              e.activation = out_w % 2 == 0 ? simd::f32_activation_relu : simd::f32_activation_none;
              e.post_affine = out_h == 3;
              e.post_scale = 1.5f;
              e.post_shift = -0.25f;
              std::vector<float> generic(static_cast<std::size_t>(out_h * out_w * L), 7.0f), reused(generic);
              simd::DwconvF32Block b{in.data(), pitch, weights.data(), offsets.data(), taps, bias.data(), stride, stride,
                                     out_h, out_w, e, generic.data()};
              isa.block(b);
              b.y = reused.data();
              b.row_taps = kernel;
              isa.block(b);
              CAPTURE(isa.name);
              CAPTURE(kernel);
              CAPTURE(stride);
              CAPTURE(dilation_h);
              CAPTURE(out_w);
              CAPTURE(out_h);
              CHECK(std::memcmp(generic.data(), reused.data(), generic.size() * sizeof(float)) == 0);
              ++blocks;
            }
  }
  CHECK(blocks > 0);
}

TEST_CASE("depthwise_blocked_narrow_stride_1_planes_run_flat_within_the_band") {
  // Planes narrower than a group at stride 1 (7x7) run across row ends at the padded pitch
  // (dwconv_block_flat): against a scalar FMA chain per pixel and lane (the same bits), the band's
  // input allocated to its last float (a read past it is a heap overflow under ASan) and guards
  // after Y (a store past the last output). Widths 1..G-1, heights down to the fewest positions
  // one group needs, dilations that widen the pitch, and the group-wide-or-not boundary.
  const std::vector<BlockedIsa> isas = blocked_isas();
  DepthwiseValues next{9191};
  int blocks = 0;
  for (const BlockedIsa& isa : isas) {
    if (!isa.runs) {
      test::report_untested("depthwise blocked narrow planes", isa.name, "the CPU lacks it");
      continue;
    }
    const int64_t L = isa.lanes, group = L >= 16 ? 16 : 8;
    for (int64_t kernel : {3, 5})
      for (int64_t dilation : {1, 2})
        for (int64_t out_w = 1; out_w < group; ++out_w)
          for (int64_t out_h : {1, 2, 3, 7}) {
            const int64_t pitch = out_w + (kernel - 1) * dilation, rows = out_h + (kernel - 1) * dilation;
            const int64_t taps = kernel * kernel, n = out_h * out_w;
            constexpr int64_t kGuard = 64;
            std::vector<float> in(static_cast<std::size_t>(rows * pitch * L));
            for (float& v : in) v = next();
            std::vector<float> weights(static_cast<std::size_t>(taps * L)), bias(static_cast<std::size_t>(L));
            for (float& v : weights) v = next();
            for (float& v : bias) v = next();
            std::vector<int64_t> offsets;
            for (int64_t t = 0; t < taps; ++t)
              offsets.push_back(((t / kernel) * dilation * pitch + (t % kernel) * dilation) * L);
            std::vector<float> y(static_cast<std::size_t>(n * L + kGuard), 7.0f);
            const simd::DwconvF32Block b{in.data(), pitch, weights.data(), offsets.data(), taps, bias.data(), 1, 1,
                                         out_h, out_w, {}, y.data()};
            isa.block(b);
            CAPTURE(isa.name);
            CAPTURE(kernel);
            CAPTURE(dilation);
            CAPTURE(out_w);
            CAPTURE(out_h);
            int64_t wrong = 0;
            for (int64_t oy = 0; oy < out_h; ++oy)
              for (int64_t ox = 0; ox < out_w; ++ox)
                for (int64_t l = 0; l < L; ++l) {
                  float acc = 0.0f;
                  for (int64_t t = 0; t < taps; ++t)
                    acc = std::fma(in[static_cast<std::size_t>((oy * pitch + ox) * L + offsets[t] + l)],
                                   weights[static_cast<std::size_t>(t * L + l)], acc);
                  const float expect = acc + bias[static_cast<std::size_t>(l)];
                  const float got = y[static_cast<std::size_t>((oy * out_w + ox) * L + l)];
                  wrong += std::memcmp(&expect, &got, sizeof(float)) != 0;
                }
            CHECK(wrong == 0);
            CHECK(std::all_of(y.begin() + n * L, y.end(), [](float v) { return v == 7.0f; }));
            ++blocks;
          }
  }
  CHECK(blocks > 0);
}

TEST_CASE("depthwise_chw_planes_are_bit_identical_to_the_blocked_kernel_on_every_edge") {
  if (!host_cpu_features().avx512f) {
    test::report_untested("depthwise CHW planes", "avx512", "no AVX-512 F");
    return;
  }
  // Input planes with NaN before and after them: a read outside the plane reaches an output.
  DepthwiseValues next{777};
  std::vector<float> weights(25);
  for (float& v : weights) v = next();
  int planes = 0;
  // 3x3 at stride 2 (dwconv_f32_plane_3x3s2) and stride 1 (dwconv_f32_plane_3x3s1).
  auto check = [&](int64_t kernel, int64_t stride, int64_t in_h, int64_t in_w, int64_t pad_top, int64_t pad_left,
                   int64_t extra_bottom, int64_t extra_right, bool residual, const simd::DwconvF32Epilogue& e) {
    const int64_t out_h = (in_h + pad_top + extra_bottom - kernel) / stride + 1;
    const int64_t out_w = (in_w + pad_left + extra_right - kernel) / stride + 1;
    if (in_h + pad_top + extra_bottom < kernel || in_w + pad_left + extra_right < kernel) return;
    constexpr int64_t kGuard = 48;
    std::vector<float> x(static_cast<std::size_t>(in_h * in_w + 2 * kGuard), std::nanf(""));
    for (int64_t i = 0; i < in_h * in_w; ++i) x[static_cast<std::size_t>(kGuard + i)] = next();
    std::vector<float> z(static_cast<std::size_t>(out_h * out_w));
    for (float& v : z) v = next();
    std::vector<float> y(static_cast<std::size_t>(out_h * out_w + kGuard), 7.0f);
    const simd::DwconvF32Plane p{x.data() + kGuard, in_h, in_w, pad_top, pad_left, weights.data(), 0.375f,
                                 residual ? z.data() : nullptr, e, out_h, out_w, y.data()};
    if (stride == 2) simd::dwconv_f32_plane_3x3s2_avx512(p);
    else simd::dwconv_f32_plane_3x3s1_avx512(p);
    const std::vector<float> expect = blocked_plane(p, kernel, stride);
    CAPTURE(kernel);
    CAPTURE(stride);
    CAPTURE(in_h);
    CAPTURE(in_w);
    CAPTURE(pad_top);
    CAPTURE(pad_left);
    CAPTURE(extra_bottom);
    CAPTURE(extra_right);
    CAPTURE(residual);
    CAPTURE(e.activation);
    CHECK(std::memcmp(expect.data(), y.data(), expect.size() * sizeof(float)) == 0);
    // Nothing stored past the plane's outputs.
    CHECK(std::all_of(y.begin() + out_h * out_w, y.end(), [](float v) { return v == 7.0f; }));
    ++planes;
  };
  // Widths around the block's edges (whole blocks, a block reading exactly to the last column, one
  // column short of it, partial last blocks), heights with and without a single last row (stride
  // 2) or one to three last rows (stride 1), every left pad each kernel takes.
  for (int64_t in_w : {1, 2, 15, 16, 17, 31, 32, 33, 34, 35, 63, 64, 65, 66, 97})
    for (int64_t in_h : {1, 2, 3, 4, 7})
      for (int64_t extra : {0, 1, 5}) {
        for (int64_t pad_top : {0, 1, 3})
          for (int64_t pad_left : {0, 1}) check(3, 2, in_h, in_w, pad_top, pad_left, extra, extra, in_w % 2 == 1, {});
        for (int64_t pad : {0, 1, 2}) check(3, 1, in_h, in_w, pad, pad, extra, extra, in_w % 2 == 0, {});
      }
  // Every epilogue the vector code applies, with and without the post affine and the residual.
  for (int activation = simd::f32_activation_none; activation <= simd::f32_activation_hard_swish; ++activation)
    for (bool affine : {false, true})
      for (bool residual : {false, true}) {
        simd::DwconvF32Epilogue e;
        e.activation = activation;
        e.alpha = activation == simd::f32_activation_clip ? -0.25f : 0.2f;
        e.beta = activation == simd::f32_activation_clip ? 0.5f : 0.6f;
        e.post_affine = affine;
        e.post_scale = 1.25f;
        e.post_shift = -0.125f;
        check(3, 2, 9, 67, 1, 1, 1, 1, residual, e);
        check(3, 1, 9, 67, 1, 1, 1, 1, residual, e);
      }
  CHECK(planes > 1500);
}
#endif

TEST_CASE("depthwise_scratch_is_sized_only_in_the_slots_a_run_leases") {
  // A kernel told it may use two threads keeps three slots; a run whose region is one block leases
  // one. Only that slot holds scratch: the others are neither allocated nor zeroed (ppocr_cls's
  // first run at T=1: 11 -> 9 ms). Blocked 3x3 s2 planes (AVX2, AVX-512) and the padded rows
  // (portable), with the same Y as a second run.
  using kernels::DepthwiseConv;
  using kernels::DepthwiseIsa;
  DepthwiseConv c = depthwise_3x3s2(32, 20, 10);
  c.pad_top = c.pad_left = 1;
  DepthwiseValues next{777};
  std::vector<float> x(static_cast<std::size_t>(32 * 20 * 20)), w(static_cast<std::size_t>(32 * 9));
  for (float& v : x) v = next();
  for (float& v : w) v = next();
  c.x = x.data();
  c.w = w.data();
  const CpuFeatures& f = host_cpu_features();
  struct Isa {
    DepthwiseIsa isa;
    std::string name;
    bool runs;
  };
  for (const Isa& candidate : {Isa{DepthwiseIsa::portable, "portable", true}, Isa{DepthwiseIsa::avx2, "avx2", f.avx2 && f.fma3},
                               Isa{DepthwiseIsa::avx512, "avx512", f.avx512f}}) {
    const DepthwiseIsa isa = candidate.isa;
    const std::string& name = candidate.name;
    if (!candidate.runs) {
      test::report_untested("depthwise scratch slots", name, "the CPU lacks it");
      continue;
    }
    CAPTURE(name);
    const bool blocked = kernels::depthwise_runs_blocked(c, isa);
    CHECK(blocked == (isa != DepthwiseIsa::portable));
    kernels::DepthwiseWorkspace workspace;
    test::DirectExecution execution({}, 2);
    std::vector<float> first(static_cast<std::size_t>(32 * 10 * 10), -1.0f), second(first.size(), -2.0f);
    c.y = first.data();
    kernels::run_depthwise_conv(execution, c, isa, 2, workspace);
    c.y = second.data();
    kernels::run_depthwise_conv(execution, c, isa, 2, workspace);
    CHECK(std::memcmp(first.data(), second.data(), first.size() * sizeof(float)) == 0);
    REQUIRE(workspace.slots.size() == 3);
    for (std::size_t i = 0; i < 3; ++i) {
      CAPTURE(i);
      const bool leased = i == 0;
      CHECK((workspace.slots[i].blocked_in.data() != nullptr) == (leased && blocked));
      CHECK(workspace.slots[i].plane.empty() == (!leased || blocked));
    }
  }
}
