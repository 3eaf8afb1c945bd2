// Conv float32 on the packed GEMM driver ("avx512", "avx2") against the portable kernel: 1-3
// spatial dims, strides, dilations, asymmetric and automatic pads, groups, batches, bias or none,
// output positions around the register tile's width, and the thin-group (depthwise) fallback.
// Both held to a direct double-precision convolution within a float rounding bound; the packed
// result bit-identical across 1..3 threads and block sizes.
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
#include "test_models.h"

using namespace onnx_light;
using namespace onnx_light::runtime;

namespace {

using PackedConvInputs = std::vector<std::pair<std::string, Tensor>>;

bool is_unfused_conv_f32(const KernelDef& def) { return def.op_type == "Conv" && def.element_type == ElementType::float32; }

// Threshold 1 (parallel from the smallest problem) and the given blocks for every Conv float32.
std::unique_ptr<TuningRegistry> packed_conv_registry(int64_t block_m, int64_t block_k, int64_t block_n) {
  auto registry = std::make_unique<TuningRegistry>();
  std::vector<PublishedProfile> profiles;
  for (const auto& def : cpu_kernel_table().definitions()) {
    if (!is_unfused_conv_f32(def)) continue;
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

struct PackedConvCase {
  std::string name;
  std::string attributes;  // inside Conv <...>, may be empty
  Shape x, w;
  bool bias;
  // What the attributes mean, for the reference below (pads at the beginning of each dim).
  int64_t group;
  std::vector<int64_t> strides, dilations, pad_begin;
};

std::vector<PackedConvCase> packed_conv_cases() {
  return {
      {"3x3 same, bias", "pads = [1, 1, 1, 1]", {1, 8, 9, 11}, {16, 8, 3, 3}, true, 1, {1, 1}, {1, 1}, {1, 1}},
      {"stride 2, dilation 2, asymmetric pads, batch 2", "strides = [2, 2], dilations = [2, 2], pads = [0, 1, 2, 1]",
       {2, 5, 12, 10}, {13, 5, 3, 3}, false, 1, {2, 2}, {2, 2}, {0, 1}},
      {"1D SAME_UPPER", "auto_pad = \"SAME_UPPER\"", {2, 3, 37}, {14, 3, 5}, true, 1, {1}, {1}, {2}},
      {"3D pads 1, stride 2 in depth", "pads = [1, 1, 1, 1, 1, 1], strides = [2, 1, 1]", {1, 2, 5, 6, 7},
       {12, 2, 3, 3, 3}, true, 1, {2, 1, 1}, {1, 1, 1}, {1, 1, 1}},
      {"group 2, 12 maps per group", "group = 2", {1, 8, 6, 7}, {24, 4, 3, 3}, true, 2, {1, 1}, {1, 1}, {0, 0}},
      {"depthwise (thin groups fall back)", "group = 4, pads = [1, 1, 1, 1]", {1, 4, 9, 9}, {4, 1, 3, 3}, true, 4,
       {1, 1}, {1, 1}, {1, 1}},
      {"1x1, positions not a multiple of the tile", "", {1, 32, 7, 5}, {20, 32, 1, 1}, false, 1, {1, 1}, {1, 1}, {0, 0}},
      {"fewer positions than the tile", "", {1, 3, 2, 3}, {12, 3, 1, 1}, true, 1, {1, 1}, {1, 1}, {0, 0}},
      // The 2-D row-wise im2col (gather_rows_2d): output rows that straddle panels, pads wider than
      // the kernel (whole rows and columns of zeros), stride 3 across, dilation 3 across.
      {"2-D stride 1x3, dilation 2x3, pads larger than the kernel", "strides = [1, 3], dilations = [2, 3], pads = [3, 4, 2, 5]",
       {1, 3, 7, 40}, {16, 3, 3, 3}, true, 1, {1, 3}, {2, 3}, {3, 4}},
      {"2-D stem 3x3 s2, odd width, batch 2", "strides = [2, 2], pads = [1, 1, 1, 1]", {2, 3, 11, 37}, {14, 3, 3, 3},
       true, 1, {2, 2}, {1, 1}, {1, 1}},
      {"2-D one output column wider rows", "pads = [0, 2, 1, 0]", {1, 4, 5, 1}, {13, 4, 2, 3}, false, 1, {1, 1}, {1, 1},
       {0, 2}},
      // Deep im2col gathered a few panels per GEMM task (576 rows: 3 panels of 32 per task, 6
      // panels), with more maps than a row block of the small blocking (tasks of every row block
      // gather the same panels again), output rows straddling panels, batch 2.
      {"2-D deep im2col, panels gathered per task, several row blocks", "strides = [2, 1], pads = [1, 1, 1, 1]",
       {2, 64, 9, 21}, {40, 64, 3, 3}, true, 1, {2, 1}, {1, 1}, {1, 1}},
      // Stride 1 on AVX-512: the implicit im2col (padded input read through row pointers; the
      // padded-domain result copied to Y's valid columns): dilation, asymmetric pads, batch 2,
      // several row blocks and k-blocks, a last panel reaching into the padded input's slack.
      {"2-D stride 1 implicit im2col: dilation 2, asymmetric pads, batch 2", "dilations = [2, 2], pads = [2, 0, 1, 3]",
       {2, 30, 8, 11}, {40, 30, 3, 3}, true, 1, {1, 1}, {2, 2}, {2, 0}},
      {"2-D stride 1 implicit im2col: 5x5, one output row shorter than a panel", "pads = [2, 2, 2, 2]", {1, 7, 6, 5},
       {13, 7, 5, 5}, false, 1, {1, 1}, {1, 1}, {2, 2}},
      // Strided 2-D: the gathered im2col on every ISA.
      {"2-D stride 3x2, dilation 2x1, 5x3 kernel, pads wider than a stride", "strides = [3, 2], dilations = [2, 1], pads = [4, 1, 2, 3]",
       {2, 6, 17, 12}, {14, 6, 5, 3}, true, 1, {3, 2}, {2, 1}, {4, 1}},
  };
}

// A direct convolution in double over the shapes and values `run_packed_conv` uses: the oracle both the
// portable and the packed kernels are held to.
std::vector<double> packed_conv_reference(const PackedConvCase& c, const Shape& y_shape, const Tensor& x, const Tensor& w, const Tensor* b) {
  const std::size_t rank = c.x.size() - 2;
  const int64_t maps = c.w[0], group_channels = c.w[1], group_maps = maps / c.group;
  int64_t out_size = 1, kernel_size = 1, in_size = 1;
  for (std::size_t i = 0; i < rank; ++i) {
    out_size *= y_shape[i + 2];
    kernel_size *= c.w[i + 2];
    in_size *= c.x[i + 2];
  }
  std::vector<double> y(static_cast<std::size_t>(c.x[0] * maps * out_size));
  for (int64_t n = 0; n < c.x[0]; ++n)
    for (int64_t m = 0; m < maps; ++m)
      for (int64_t p = 0; p < out_size; ++p) {
        double sum = b != nullptr ? b->data<float>()[m] : 0.0;
        for (int64_t ci = 0; ci < group_channels; ++ci)
          for (int64_t q = 0; q < kernel_size; ++q) {
            int64_t index = 0, pp = p, qq = q, stride_in = 1;
            bool inside = true;
            for (std::size_t i = rank; i-- > 0;) {
              const int64_t o = pp % y_shape[i + 2], k = qq % c.w[i + 2];
              pp /= y_shape[i + 2];
              qq /= c.w[i + 2];
              const int64_t coord = o * c.strides[i] - c.pad_begin[i] + k * c.dilations[i];
              inside = inside && coord >= 0 && coord < c.x[i + 2];
              index += coord * stride_in;
              stride_in *= c.x[i + 2];
            }
            if (!inside) continue;
            const int64_t channel = (m / group_maps) * group_channels + ci;
            sum += static_cast<double>(x.data<float>()[(n * c.x[1] + channel) * in_size + index]) *
                   static_cast<double>(w.data<float>()[(m * group_channels + ci) * kernel_size + q]);
          }
        y[static_cast<std::size_t>((n * maps + m) * out_size + p)] = sum;
      }
  return y;
}

Tensor run_packed_conv(const PackedConvCase& c, const std::string& implementation, int threads, TuningRegistry& registry) {
  const std::string dims_x = fmt::format("{}", fmt::join(c.x, ", "));
  const std::string dims_w = fmt::format("{}", fmt::join(c.w, ", "));
  const std::string text = fmt::format(
      "<ir_version: 8, opset_import: [\"\" : 17]>\ng (float[{}] x, float[{}] w{}) => (float[] y) {{ y = Conv{}(x, w{}) }}",
      dims_x, dims_w, c.bias ? fmt::format(", float[{}] b", c.w[0]) : "",
      c.attributes.empty() ? "" : " <" + c.attributes + ">", c.bias ? ", b" : "");
  RuntimeSessionOptions options;
  options.parameters = RuntimeParameters(threads);
  options.registry = &registry;
  options.kernels = &test::table_with_only("conv_f32", is_unfused_conv_f32, implementation);
  RuntimeSession session(test::parse(text), options);
  RuntimeContext context;
  context.set("x", random_tensor(ElementType::float32, c.x, 3));
  context.set("w", random_tensor(ElementType::float32, c.w, 5));
  if (c.bias) context.set("b", random_tensor(ElementType::float32, {c.w[0]}, 7));
  session.run(context);
  REQUIRE(session.resolved_tuning().size() == 1);
  CHECK(session.resolved_tuning()[0].key.implementation == implementation);
  return context.get("y");
}

bool same_packed_conv_bits(const Tensor& a, const Tensor& b) {
  return a.shape() == b.shape() &&
         std::memcmp(a.raw_data(), b.raw_data(), static_cast<std::size_t>(a.byte_size())) == 0;
}

}  // namespace

TEST_CASE("packed_conv_matches_a_direct_convolution_and_ignores_threads_and_blocks") {
  auto defaults = packed_conv_registry(96, 256, 256);
  auto small = packed_conv_registry(24, 64, 32);
  for (const std::string implementation : {"avx512", "avx2"}) {
    if (!test::host_runs("Conv float32", is_unfused_conv_f32, implementation)) continue;
    for (const PackedConvCase& c : packed_conv_cases()) {
      CAPTURE(implementation);
      CAPTURE(c.name);
      const Tensor portable = run_packed_conv(c, "portable", 1, *defaults);
      const Tensor got = run_packed_conv(c, implementation, 1, *defaults);
      REQUIRE(got.shape() == portable.shape());
      const Tensor x = random_tensor(ElementType::float32, c.x, 3), w = random_tensor(ElementType::float32, c.w, 5);
      const Tensor b = random_tensor(ElementType::float32, {c.w[0]}, 7);
      const std::vector<double> exact = packed_conv_reference(c, got.shape(), x, w, c.bias ? &b : nullptr);
      REQUIRE(static_cast<int64_t>(exact.size()) == got.element_count());
      // Terms are products of values in [-1, 1), plus a bias in [-1, 1): a float sum of them is within
      // depth * u * (depth + 1) of the exact value (u = 2^-24).
      const int64_t positions = Tensor(ElementType::float32, c.w).element_count() / (c.w[0] * c.w[1]);
      const double depth = static_cast<double>(c.w[1] * positions);
      const double bound = depth * (depth + 1.0) * std::ldexp(1.0, -24);
      double worst_packed = 0, worst_portable = 0;
      for (int64_t i = 0; i < got.element_count(); ++i) {
        const double e = exact[static_cast<std::size_t>(i)];
        worst_packed = std::max(worst_packed, std::fabs(got.data<float>()[i] - e));
        worst_portable = std::max(worst_portable, std::fabs(portable.data<float>()[i] - e));
      }
      CAPTURE(worst_packed);
      CAPTURE(worst_portable);
      CHECK(worst_packed <= bound);
      CHECK(worst_portable <= bound);
      for (int threads = 2; threads <= 3; ++threads) {
        CAPTURE(threads);
        CHECK(same_packed_conv_bits(run_packed_conv(c, implementation, threads, *defaults), got));
        CHECK(same_packed_conv_bits(run_packed_conv(c, implementation, threads, *small), got));
      }
    }
  }
}
