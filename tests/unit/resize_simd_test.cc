// The float32 "avx512" and "avx2" implementations of Resize and Upsample: their 2x nearest rows
// against the portable implementation, bit for bit (elements are moved, never computed: NaN
// payloads, -0 and denormals survive), over every vector tail width and at 1 and 2 threads; the
// label each node reports (the ISA rows when they ran, the portable loops' names otherwise).
#include <doctest/doctest.h>

#include <cstring>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "implementation_tables.h"
#include "onnx_light/runtime/kernel_table.h"
#include "onnx_light/runtime/session.h"
#include "test_models.h"

using namespace onnx_light;
using namespace onnx_light::runtime;

namespace {

bool is_resize_f32(const KernelDef& d) {
  return (d.op_type == "Resize" || d.op_type == "Upsample") && d.element_type == ElementType::float32;
}

const KernelTable& resize_table(const std::string& implementation) {
  return test::table_with_only("resize_f32", is_resize_f32, implementation);
}

struct ResizeSimdRun {
  Tensor y;
  std::string implementation;
};

ResizeSimdRun run_resize_text(const std::string& text, const Tensor& x, const std::string& implementation, int threads) {
  RuntimeSessionOptions options;
  options.parameters = RuntimeParameters(threads);
  options.registry = &test::threshold_one_registry();
  options.kernels = &resize_table(implementation);
  options.profile = true;
  RuntimeSession session(test::parse(text), options);
  RuntimeContext context;
  context.set("x", x);
  session.run(context);
  return {context.get("y"), session.profile().nodes.at(0).implementation};
}

std::string resize_text(const Shape& x, const std::string& attributes, float sh, float sw) {
  return fmt::format(
      "<ir_version: 8, opset_import: [\"\" : 13]>\ng (float[{},{},{},{}] x) => (float[] y) {{\n"
      "scales = Constant <value = float[4] {{1, 1, {}, {}}}> ()\ny = Resize <{}> (x, , scales)\n}}",
      x[0], x[1], x[2], x[3], sh, sw, attributes);
}

bool same_resize_simd_bits(const Tensor& a, const Tensor& b) {
  return a.shape() == b.shape() &&
         std::memcmp(a.raw_data(), b.raw_data(), static_cast<std::size_t>(a.byte_size())) == 0;
}

// Random values with special bit patterns mixed in: a signalling and a quiet NaN with payloads,
// -0, a denormal and infinity.
Tensor resize_simd_input(const Shape& shape, uint32_t seed) {
  Tensor x = random_tensor(ElementType::float32, shape, seed);
  const uint32_t specials[] = {0x7fa00001u, 0xffc12345u, 0x80000000u, 0x00000007u, 0x7f800000u};
  auto* bits = static_cast<uint32_t*>(x.raw_data());
  for (int64_t i = 0; i < x.element_count(); i += 7) bits[i] = specials[(i / 7) % 5];
  return x;
}

std::vector<std::string> resize_simd_runnable() {
  std::vector<std::string> out;
  for (const std::string impl : {"avx512", "avx2"})
    if (test::host_runs("Resize", is_resize_f32, impl)) out.push_back(impl);
  return out;
}

}  // namespace

TEST_CASE("resize_nearest_2x_rows_every_tail_width_bit_identical_to_portable") {
  // Widths around both vector sizes (8 and 16 inputs per load) and their masked or scalar tails.
  const std::string attributes =
      "mode = \"nearest\", coordinate_transformation_mode = \"asymmetric\", nearest_mode = \"floor\"";
  for (const std::string& impl : resize_simd_runnable())
    for (int64_t w : {1, 2, 7, 8, 9, 15, 16, 17, 24, 31, 32, 33, 40})
      for (int64_t h : {1, 3}) {
        CAPTURE(impl);
        CAPTURE(w);
        CAPTURE(h);
        const Shape shape{2, 3, h, w};
        const Tensor x = resize_simd_input(shape, static_cast<uint32_t>(w * 10 + h));
        const std::string text = resize_text(shape, attributes, 2, 2);
        const ResizeSimdRun portable = run_resize_text(text, x, "portable", 1);
        CHECK(portable.implementation == "nearest_2d");
        for (int threads : {1, 2}) {
          const ResizeSimdRun simd = run_resize_text(text, x, impl, threads);
          CHECK(simd.implementation == "nearest_2x_rows_" + impl);
          CHECK(same_resize_simd_bits(simd.y, portable.y));
        }
        // Every output element is its input's element: y[n, c, oy, ox] = x[n, c, oy / 2, ox / 2].
        const auto* xb = static_cast<const uint32_t*>(x.raw_data());
        const auto* yb = static_cast<const uint32_t*>(portable.y.raw_data());
        int wrong = 0;
        for (int64_t p = 0; p < 6; ++p)
          for (int64_t oy = 0; oy < 2 * h; ++oy)
            for (int64_t ox = 0; ox < 2 * w; ++ox)
              wrong += yb[(p * 2 * h + oy) * 2 * w + ox] != xb[(p * h + oy / 2) * w + ox / 2];
        CHECK(wrong == 0);
      }
}

TEST_CASE("resize_nearest_2x_rows_blocks_that_split_a_row_pair") {
  // The threads' blocks of output rows run their whole row pairs in one ISA call; a block that
  // starts or ends inside a pair writes that row alone. 6 and 10 output rows over 2-4 threads
  // (blocks of 3, 2 or 1 rows): every split point, bit for bit against the portable loops.
  const std::string attributes =
      "mode = \"nearest\", coordinate_transformation_mode = \"asymmetric\", nearest_mode = \"floor\"";
  for (const std::string& impl : resize_simd_runnable())
    for (const Shape& shape : {Shape{1, 1, 3, 17}, Shape{1, 1, 5, 8}, Shape{1, 3, 1, 16}})
      for (int threads : {2, 3, 4}) {
        CAPTURE(impl);
        CAPTURE(shape);
        CAPTURE(threads);
        const Tensor x = resize_simd_input(shape, static_cast<uint32_t>(shape[2] * 100 + shape[3] + threads));
        const std::string text = resize_text(shape, attributes, 2, 2);
        const ResizeSimdRun portable = run_resize_text(text, x, "portable", 1);
        const ResizeSimdRun simd = run_resize_text(text, x, impl, threads);
        CHECK(simd.implementation == "nearest_2x_rows_" + impl);
        CHECK(same_resize_simd_bits(simd.y, portable.y));
      }
}

TEST_CASE("resize_simd_other_factors_and_modes_report_the_portable_loops") {
  // The ISA implementations differ only on 2x nearest rows; everything else runs (and is
  // reported as) the portable loops, with the portable implementation's bits.
  struct OtherCase {
    std::string attributes;
    float sh, sw;
    std::string variant;
  };
  const std::vector<OtherCase> cases{
      {"mode = \"nearest\", coordinate_transformation_mode = \"asymmetric\", nearest_mode = \"floor\"", 3, 3,
       "nearest_2d"},
      {"mode = \"nearest\", coordinate_transformation_mode = \"asymmetric\", nearest_mode = \"floor\"", 1, 2,
       "nearest_2d"},
      {"mode = \"nearest\", coordinate_transformation_mode = \"asymmetric\", nearest_mode = \"floor\"", 2, 3,
       "nearest_2d"},
      {"mode = \"nearest\", coordinate_transformation_mode = \"align_corners\", nearest_mode = \"floor\"", 2, 2,
       "nearest_2d"},
      {"mode = \"linear\", coordinate_transformation_mode = \"half_pixel\"", 2, 2, "interpolate_2d"},
  };
  const Shape shape{1, 4, 5, 19};
  const Tensor x = resize_simd_input(shape, 5);
  for (const std::string& impl : resize_simd_runnable())
    for (const OtherCase& c : cases) {
      CAPTURE(impl);
      CAPTURE(c.attributes);
      CAPTURE(c.sh);
      CAPTURE(c.sw);
      const std::string text = resize_text(shape, c.attributes, c.sh, c.sw);
      const ResizeSimdRun simd = run_resize_text(text, x, impl, 2);
      CHECK(simd.implementation == c.variant);
      CHECK(same_resize_simd_bits(simd.y, run_resize_text(text, x, "portable", 1).y));
    }
}

TEST_CASE("upsample_opset9_nearest_2x_takes_the_isa_rows") {
  const Shape shape{1, 2, 3, 21};
  const Tensor x = resize_simd_input(shape, 9);
  const std::string text =
      "<ir_version: 8, opset_import: [\"\" : 9]>\ng (float[1,2,3,21] x) => (float[] y) {\n"
      "scales = Constant <value = float[4] {1, 1, 2, 2}> ()\ny = Upsample <mode = \"nearest\"> (x, scales)\n}";
  const ResizeSimdRun portable = run_resize_text(text, x, "portable", 1);
  for (const std::string& impl : resize_simd_runnable()) {
    CAPTURE(impl);
    const ResizeSimdRun simd = run_resize_text(text, x, impl, 2);
    CHECK(simd.implementation == "nearest_2x_rows_" + impl);
    CHECK(same_resize_simd_bits(simd.y, portable.y));
  }
}
