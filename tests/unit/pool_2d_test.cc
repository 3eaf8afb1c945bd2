// The 2-D MaxPool / AveragePool path (precomputed windows, interior columns tap by tap) against a
// direct double-precision pool, one case per edge: strides 1-3, dilations, symmetric and
// asymmetric pads, ceil_mode (including a last window that starts in the padding), auto_pad,
// count_include_pad, odd widths, Indices in both storage orders, float and int8; results (float16
// too) identical at 1 and 3 threads.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
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
#include "parallel_registry.h"
#include "test_models.h"

using namespace onnx_light;
using namespace onnx_light::runtime;

namespace {

struct PoolCase {
  std::string name;
  bool max;
  Shape x;
  int64_t kh, kw, sh, sw, dh = 1, dw = 1;
  std::vector<int64_t> pads = {0, 0, 0, 0};  // top, left, bottom, right
  bool ceil_mode = false;
  bool count_include_pad = false;
  int storage_order = 0;
  std::string auto_pad = "";
};

std::vector<PoolCase> pool_cases() {
  return {
      {"maxpool_2x2_s2", true, {1, 5, 2, 96}, 2, 2, 2, 2},
      {"maxpool_3x3_s1_pad1_odd_width", true, {2, 3, 9, 23}, 3, 3, 1, 1, 1, 1, {1, 1, 1, 1}},
      {"maxpool_3x3_s2_pad1_ceil_mode", true, {1, 4, 10, 21}, 3, 3, 2, 2, 1, 1, {1, 1, 1, 1}, true},
      {"maxpool_2x2_s2_ceil_mode_last_window_partial", true, {1, 2, 7, 9}, 2, 2, 2, 2, 1, 1, {0, 0, 0, 0}, true},
      {"maxpool_3x3_dilation_2", true, {1, 2, 11, 19}, 3, 3, 1, 1, 2, 2, {2, 2, 2, 2}},
      {"maxpool_2x3_s3x1_asymmetric_pads", true, {1, 3, 12, 17}, 2, 3, 3, 1, 1, 1, {0, 2, 1, 0}},
      {"maxpool_3x3_column_major_indices", true, {1, 2, 8, 13}, 3, 3, 2, 1, 1, 1, {1, 0, 1, 1}, false, false, 1},
      {"maxpool_3x3_same_upper", true, {1, 2, 9, 14}, 3, 3, 2, 2, 1, 1, {}, false, false, 0, "SAME_UPPER"},
      {"maxpool_width_one", true, {1, 2, 6, 1}, 3, 1, 1, 1, 1, 1, {1, 0, 1, 0}},
      {"avgpool_2x2_s2", false, {1, 5, 4, 34}, 2, 2, 2, 2},
      {"avgpool_3x3_s1_pad1_exclude_pad", false, {2, 3, 9, 23}, 3, 3, 1, 1, 1, 1, {1, 1, 1, 1}},
      {"avgpool_3x3_s1_pad1_include_pad", false, {2, 3, 9, 23}, 3, 3, 1, 1, 1, 1, {1, 1, 1, 1}, false, true},
      {"avgpool_3x3_s2_ceil_mode_include_pad", false, {1, 3, 10, 21}, 3, 3, 2, 2, 1, 1, {1, 1, 1, 1}, true, true},
      {"avgpool_5x5_s2_asymmetric_pads", false, {1, 2, 13, 27}, 5, 5, 2, 2, 1, 1, {2, 1, 0, 2}},
      {"avgpool_3x3_same_lower_include_pad", false, {1, 2, 9, 14}, 3, 3, 2, 2, 1, 1, {}, false, true, 0, "SAME_LOWER"},
  };
}

int64_t out_dim(const PoolCase& c, int axis) {
  const int64_t in = c.x[2 + axis], k = axis == 0 ? c.kh : c.kw, s = axis == 0 ? c.sh : c.sw,
                d = axis == 0 ? c.dh : c.dw;
  if (!c.auto_pad.empty()) return (in + s - 1) / s;
  const int64_t span = in + c.pads[static_cast<std::size_t>(axis)] + c.pads[static_cast<std::size_t>(axis + 2)] -
                       ((k - 1) * d + 1);
  int64_t out = (c.ceil_mode ? (span + s - 1) / s : span / s) + 1;
  if (c.ceil_mode && (out - 1) * s >= in + c.pads[static_cast<std::size_t>(axis)]) --out;
  return out;
}

// Pads at the beginning and end of an axis after auto_pad.
std::pair<int64_t, int64_t> pads_of(const PoolCase& c, int axis) {
  if (c.auto_pad.empty())
    return {c.pads[static_cast<std::size_t>(axis)], c.pads[static_cast<std::size_t>(axis + 2)]};
  const int64_t in = c.x[2 + axis], k = axis == 0 ? c.kh : c.kw, s = axis == 0 ? c.sh : c.sw,
                d = axis == 0 ? c.dh : c.dw;
  const int64_t total = std::max<int64_t>(0, (out_dim(c, axis) - 1) * s + (k - 1) * d + 1 - in);
  const int64_t begin = c.auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
  return {begin, total - begin};
}

struct PoolReference {
  std::vector<double> values;
  std::vector<int64_t> indices;
};

PoolReference pool_reference(const PoolCase& c, const std::vector<double>& x) {
  const int64_t oh = out_dim(c, 0), ow = out_dim(c, 1), h = c.x[2], w = c.x[3];
  const auto [top, bottom] = pads_of(c, 0);
  const auto [left, right] = pads_of(c, 1);
  PoolReference r;
  for (int64_t plane = 0; plane < c.x[0] * c.x[1]; ++plane)
    for (int64_t oy = 0; oy < oh; ++oy)
      for (int64_t ox = 0; ox < ow; ++ox) {
        double best = -std::numeric_limits<double>::infinity(), sum = 0;
        int64_t best_index = -1, valid = 0, padded = 0;
        for (int64_t ky = 0; ky < c.kh; ++ky)
          for (int64_t kx = 0; kx < c.kw; ++kx) {
            const int64_t iy = oy * c.sh - top + ky * c.dh, ix = ox * c.sw - left + kx * c.dw;
            if (iy >= -top && iy < h + bottom && ix >= -left && ix < w + right) ++padded;
            if (iy < 0 || iy >= h || ix < 0 || ix >= w) continue;
            const double v = x[static_cast<std::size_t>((plane * h + iy) * w + ix)];
            ++valid;
            sum += v;
            if (v > best || best_index < 0) {
              best = v;
              best_index = plane * h * w + (c.storage_order == 1 ? ix * h + iy : iy * w + ix);
            }
          }
        r.values.push_back(c.max ? best : sum / double(c.count_include_pad ? padded : valid));
        r.indices.push_back(best_index);
      }
  return r;
}

std::string attributes(const PoolCase& c) {
  std::string a = fmt::format("kernel_shape = [{}, {}], strides = [{}, {}]", c.kh, c.kw, c.sh, c.sw);
  a += c.auto_pad.empty() ? fmt::format(", pads = [{}]", fmt::join(c.pads, ", ")) : fmt::format(", auto_pad = \"{}\"", c.auto_pad);
  if (c.ceil_mode) a += ", ceil_mode = 1";
  if (c.max) {
    if (c.dh != 1 || c.dw != 1) a += fmt::format(", dilations = [{}, {}]", c.dh, c.dw);
    a += fmt::format(", storage_order = {}", c.storage_order);
  } else {
    a += fmt::format(", count_include_pad = {}", c.count_include_pad ? 1 : 0);
  }
  return a;
}

std::vector<Tensor> run_pool(const PoolCase& c, const std::string& type, const Tensor& x, int threads, TuningRegistry* registry) {
  const std::string outputs = c.max ? fmt::format("{}[] y, int64[] i", type) : fmt::format("{}[] y", type);
  const std::string text = fmt::format(
      "<ir_version: 8, opset_import: [\"\" : 12]>\ng ({}[{}] x) => ({}) {{ {} = {} <{}> (x) }}", type,
      fmt::join(c.x, ", "), outputs, c.max ? "y, i" : "y", c.max ? "MaxPool" : "AveragePool", attributes(c));
  RuntimeSessionOptions options;
  options.parameters = RuntimeParameters(threads);
  options.registry = registry;
  RuntimeSession session(test::parse(text), options);
  RuntimeContext context;
  context.set("x", x);
  session.run(context);
  std::vector<Tensor> result{context.get("y")};
  if (c.max) result.push_back(context.get("i"));
  return result;
}

std::unique_ptr<TuningRegistry> pool_parallel_registry() { return test::parallel_registry({"MaxPool", "AveragePool"}); }

bool same_pool_bits(const Tensor& a, const Tensor& b) {
  return a.shape() == b.shape() && a.element_type() == b.element_type() &&
         std::memcmp(a.raw_data(), b.raw_data(), static_cast<std::size_t>(a.byte_size())) == 0;
}

}  // namespace

TEST_CASE("pool_2d_matches_a_direct_pool_on_every_edge") {
  auto registry = pool_parallel_registry();
  for (const PoolCase& c : pool_cases())
    for (const std::string type : {"float", "int8"}) {
      if (type == "int8" && !c.max) continue;  // AveragePool has no integer kernels
      CAPTURE(c.name);
      CAPTURE(type);
      const ElementType et = type == "float" ? ElementType::float32 : ElementType::int8;
      const Tensor x = random_tensor(et, c.x, 17);
      std::vector<double> xv(static_cast<std::size_t>(x.element_count()));
      for (std::size_t i = 0; i < xv.size(); ++i)
        xv[i] = et == ElementType::float32 ? double(x.data<float>()[i]) : double(x.data<int8_t>()[i]);
      const std::vector<Tensor> got = run_pool(c, type, x, 1, registry.get());
      const PoolReference want = pool_reference(c, xv);
      REQUIRE(got[0].element_count() == static_cast<int64_t>(want.values.size()));
      REQUIRE(got[0].shape() == Shape{c.x[0], c.x[1], out_dim(c, 0), out_dim(c, 1)});
      double worst = 0;
      int64_t wrong_indices = 0;
      for (int64_t i = 0; i < got[0].element_count(); ++i) {
        const double v = et == ElementType::float32 ? double(got[0].data<float>()[i]) : double(got[0].data<int8_t>()[i]);
        worst = std::max(worst, std::fabs(v - want.values[static_cast<std::size_t>(i)]));
        if (c.max && got[1].data<int64_t>()[i] != want.indices[static_cast<std::size_t>(i)]) ++wrong_indices;
      }
      // MaxPool is exact; an average of at most 25 values in [-1, 1) is within 26 u of exact.
      CHECK(worst <= (c.max ? 0.0 : 26 * std::ldexp(1.0, -24)));
      CHECK(wrong_indices == 0);
      const std::vector<Tensor> threaded = run_pool(c, type, x, 3, registry.get());
      for (std::size_t k = 0; k < got.size(); ++k) CHECK(same_pool_bits(threaded[k], got[k]));
    }
}

TEST_CASE("pool_2d_float16_is_identical_across_threads") {
  auto registry = pool_parallel_registry();
  for (const PoolCase& c : pool_cases()) {
    CAPTURE(c.name);
    const Tensor x = random_tensor(ElementType::float16, c.x, 19);
    const std::vector<Tensor> one = run_pool(c, "float16", x, 1, registry.get());
    const std::vector<Tensor> three = run_pool(c, "float16", x, 3, registry.get());
    for (std::size_t k = 0; k < one.size(); ++k) CHECK(same_pool_bits(three[k], one[k]));
  }
}

namespace {

bool is_pool_f32(const KernelDef& def) {
  return (def.op_type == "MaxPool" || def.op_type == "AveragePool") && def.element_type == ElementType::float32;
}

// Y only (no Indices: the interior columns run through the SIMD rows), with the kernel table
// narrowed to one implementation; the variant the node reported comes back in `variant`.
Tensor run_pool_only_y(const PoolCase& c, const Tensor& x, const std::string& implementation, int threads,
                       TuningRegistry* registry, std::string& variant) {
  const std::string text = fmt::format(
      "<ir_version: 8, opset_import: [\"\" : 12]>\ng (float[{}] x) => (float[] y) {{ y = {} <{}> (x) }}",
      fmt::join(c.x, ", "), c.max ? "MaxPool" : "AveragePool", attributes(c));
  RuntimeSessionOptions options;
  options.parameters = RuntimeParameters(threads);
  options.registry = registry;
  options.kernels = &test::table_with_only("pool_f32", is_pool_f32, implementation);
  options.profile = true;
  RuntimeSession session(test::parse(text), options);
  RuntimeContext context;
  context.set("x", x);
  session.run(context);
  REQUIRE(session.resolved_tuning().size() == 1);
  CHECK(session.resolved_tuning()[0].key.implementation == implementation);
  variant = session.profile().nodes.at(0).implementation;
  return context.get("y");
}

}  // namespace

TEST_CASE("pool_2d_avx512_rows_are_bit_identical_to_portable_with_nan_and_signed_zeros") {
  if (!test::host_runs("pooling float32", is_pool_f32, "avx512")) return;
  auto registry = pool_parallel_registry();
  std::vector<PoolCase> cases = pool_cases();
  // Interior spans past one and two vectors at strides 1, 2 (2 and 3 taps: the shared loads) and 3.
  cases.push_back({"maxpool_3x3_s2_pad1_wide", true, {1, 3, 21, 113}, 3, 3, 2, 2, 1, 1, {1, 1, 1, 1}});
  cases.push_back({"avgpool_2x2_s2_wide_n_gt_16", false, {1, 2, 6, 70}, 2, 2, 2, 2});
  cases.push_back({"maxpool_2x2_s2_odd_width_tail", true, {1, 2, 6, 67}, 2, 2, 2, 2});
  cases.push_back({"avgpool_3x3_s2_pad1_include_pad_wide", false, {1, 2, 9, 99}, 3, 3, 2, 2, 1, 1, {1, 1, 1, 1}, false, true});
  cases.push_back({"maxpool_3x3_s3_gather", true, {1, 2, 9, 100}, 3, 3, 3, 3});
  cases.push_back({"maxpool_3x3_s1_wide", true, {1, 2, 5, 50}, 3, 3, 1, 1, 1, 1, {1, 1, 1, 1}});
  // A left pad of one at stride 2: output column 0 runs in the SIMD row (its pad tap repeated).
  cases.push_back({"maxpool_2x2_s2_left_pad_lead", true, {1, 2, 7, 41}, 2, 2, 2, 2, 1, 1, {1, 1, 0, 0}});
  cases.push_back({"maxpool_3x3_s2_pad1_lead_n_lt_16", true, {2, 2, 9, 17}, 3, 3, 2, 2, 1, 1, {1, 1, 1, 1}});
  for (const PoolCase& c : cases) {
    CAPTURE(c.name);
    Tensor x = random_tensor(ElementType::float32, c.x, 23).clone();
    // NaNs and zeros of both signs where windows meet them first, last and in between.
    float* v = x.data<float>();
    for (int64_t i = 0; i < x.element_count(); i += 7) v[i] = i % 3 == 0 ? -0.0f : 0.0f;
    for (int64_t i = 5; i < x.element_count(); i += 29) v[i] = std::numeric_limits<float>::quiet_NaN();
    // And in the first two columns, where the left edge's windows start.
    const int64_t w = c.x[3];
    for (int64_t row = 0; row * w < x.element_count(); ++row) {
      if (row % 5 == 1) v[row * w] = std::numeric_limits<float>::quiet_NaN();
      if (row % 3 == 2 && w > 1) v[row * w + 1] = row % 2 == 0 ? -0.0f : std::numeric_limits<float>::quiet_NaN();
      if (row % 4 == 3) v[row * w] = row % 8 == 3 ? 0.0f : -0.0f;
    }
    std::string simd_variant, portable_variant;
    const Tensor simd = run_pool_only_y(c, x, "avx512", 1, registry.get(), simd_variant);
    const Tensor portable = run_pool_only_y(c, x, "portable", 1, registry.get(), portable_variant);
    CHECK(same_pool_bits(simd, portable));
    std::string threaded_variant;
    CHECK(same_pool_bits(run_pool_only_y(c, x, "avx512", 3, registry.get(), threaded_variant), simd));
    // What ran is named: the SIMD rows wherever a window lies inside the input.
    CHECK(simd_variant == "avx512");
  }
}

TEST_CASE("pool_2d_avx512_names_portable_when_indices_keep_it_on_the_window_loop") {
  if (!test::host_runs("pooling float32", is_pool_f32, "avx512")) return;
  const std::string text =
      "<ir_version: 8, opset_import: [\"\" : 12]>\n"
      "g (float[1, 2, 8, 40] x) => (float[] y, int64[] i) { y, i = MaxPool <kernel_shape = [3, 3], strides = [2, 2]> (x) }";
  RuntimeSessionOptions options;
  options.kernels = &test::table_with_only("pool_f32", is_pool_f32, "avx512");
  options.profile = true;
  RuntimeSession session(test::parse(text), options);
  RuntimeContext context;
  context.set("x", random_tensor(ElementType::float32, {1, 2, 8, 40}, 3));
  session.run(context);
  CHECK(session.profile().nodes.at(0).implementation == "portable");
}
