// The float32 span kernels ("avx2") of Abs, Neg, Relu, Add, Sub, Mul and Div against the portable
// functor kernels, bit for bit: special values (NaN, signed zeros, infinities, subnormals), every
// length around the vector width and the 4-vector unroll, every broadcast form, 1..3 threads, and
// non-temporal stores (which start on a misaligned output in broadcast rows).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "onnx_light/runtime/calibration_workload.h"
#include "onnx_light/runtime/cpu_features.h"
#include "onnx_light/runtime/kernel_table.h"
#include "onnx_light/runtime/session.h"
#include "onnx_light/runtime/tuning_registry.h"
#include "implementation_tables.h"
#include "kernels/simd/elementwise_f32.h"
#include "test_models.h"

using namespace onnx_light;
using namespace onnx_light::runtime;

namespace {

const std::vector<std::string> kUnary{"Abs", "Neg", "Relu"};
const std::vector<std::string> kBinary{"Add", "Sub", "Mul", "Div"};

bool is_span_op(const KernelDef& def) {
  if (def.element_type != ElementType::float32) return false;
  for (const auto* list : {&kUnary, &kBinary})
    for (const auto& op : *list)
      if (def.op_type == op) return true;
  return false;
}

bool host_runs_elementwise(const std::string& implementation) {
  return test::host_runs("float32 elementwise kernels", is_span_op, implementation);
}

const KernelTable& elementwise_table(const std::string& implementation) {
  return test::table_with_only("elementwise", is_span_op, implementation);
}

// Every span op parallel from one element, with the given streaming-store threshold where the
// schema has one, for 1..4 threads.
std::unique_ptr<TuningRegistry> streaming_registry(int64_t streaming_minimum) {
  auto registry = std::make_unique<TuningRegistry>();
  std::vector<PublishedProfile> profiles;
  for (const auto& def : cpu_kernel_table().definitions()) {
    if (!is_span_op(def)) continue;
    TuningValues values = def.schema.defaults();
    values["parallel.minimum_elements"] = int64_t{1};
    if (values.contains("store.streaming_minimum_elements"))
      values["store.streaming_minimum_elements"] = streaming_minimum;
    for (int threads = 1; threads <= 4; ++threads) profiles.push_back({def.schema.key, threads, values});
  }
  registry->publish(std::move(profiles));
  return registry;
}

// Random values with the special ones sprinkled in at fixed positions.
Tensor special_tensor(const Shape& shape, uint32_t seed) {
  Tensor t = random_tensor(ElementType::float32, shape, seed);
  const float specials[] = {std::numeric_limits<float>::quiet_NaN(),
                            -std::numeric_limits<float>::quiet_NaN(),
                            0.0f,
                            -0.0f,
                            std::numeric_limits<float>::infinity(),
                            -std::numeric_limits<float>::infinity(),
                            std::numeric_limits<float>::denorm_min(),
                            -std::numeric_limits<float>::denorm_min(),
                            std::numeric_limits<float>::max(),
                            -1.0f};
  float* p = t.data<float>();
  for (int64_t i = 0; i < t.element_count(); ++i)
    if ((i * 7 + seed) % 5 == 0) p[i] = specials[static_cast<std::size_t>((i + seed) % 10)];
  return t;
}

struct ElementwiseCase {
  std::string op;
  Shape a, b;  // b empty for unary ops
};

Tensor run_elementwise(const ElementwiseCase& c, const std::string& implementation, int threads, TuningRegistry& registry) {
  const bool binary = !c.b.empty();
  auto dims = [](const Shape& s) { return fmt::format("{}", fmt::join(s, ",")); };
  std::string text = fmt::format("<ir_version: 8, opset_import: [\"\" : 17]>\ng (float[{}] a{}) => (float[] y) {{ y = {}(a{}) }}",
                                 dims(c.a), binary ? fmt::format(", float[{}] b", dims(c.b)) : "", c.op,
                                 binary ? ", b" : "");
  RuntimeSessionOptions options;
  options.parameters = RuntimeParameters(threads);
  options.registry = &registry;
  options.kernels = &elementwise_table(implementation);
  RuntimeSession session(test::parse(text), options);
  RuntimeContext context;
  context.set("a", special_tensor(c.a, 11));
  if (binary) context.set("b", special_tensor(c.b, 23));
  session.run(context);
  REQUIRE(session.resolved_tuning().size() == 1);
  CHECK(session.resolved_tuning()[0].key.implementation == implementation);
  return context.get("y");
}

void check_same_bits(const ElementwiseCase& c, const std::string& implementation, TuningRegistry& registry) {
  const Tensor expected = run_elementwise(c, "portable", 1, registry);
  for (int threads = 1; threads <= 3; ++threads) {
    const Tensor got = run_elementwise(c, implementation, threads, registry);
    INFO(c.op, " ", implementation, " a=", fmt::format("{}", fmt::join(c.a, "x")), " b=",
         fmt::format("{}", fmt::join(c.b, "x")), " threads=", threads);
    REQUIRE(got.shape() == expected.shape());
    CHECK(std::memcmp(got.raw_data(), expected.raw_data(), static_cast<std::size_t>(expected.byte_size())) == 0);
  }
}

const std::vector<int64_t> kLengths{1, 2, 7, 8, 9, 15, 16, 17, 31, 32, 33, 39, 40, 41, 64, 100, 1000, 4099};

std::vector<ElementwiseCase> binary_cases(const std::string& op) {
  std::vector<ElementwiseCase> cases;
  for (int64_t n : kLengths) {
    cases.push_back({op, {n}, {n}});  // same shape
    cases.push_back({op, {n}, {1}});  // scalar right
    cases.push_back({op, {1}, {n}});  // scalar left
  }
  cases.push_back({op, {33, 1}, {1, 35}});    // outer product: both operands repeat in rows
  cases.push_back({op, {5, 37}, {37}});       // row vector: contiguous rows
  cases.push_back({op, {37, 41}, {37, 1}});   // column vector: right operand repeats in a row
  cases.push_back({op, {41, 1}, {41, 43}});   // column vector on the left
  cases.push_back({op, {3, 1, 17}, {1, 9, 1}});  // mixed
  return cases;
}

}  // namespace

TEST_CASE("avx2_unary_lengths_around_vector_width_match_portable_bits") {
  if (!host_runs_elementwise("avx2")) return;
  auto registry = streaming_registry(int64_t{1} << 40);
  for (const auto& op : kUnary)
    for (int64_t n : kLengths) check_same_bits({op, {n}, {}}, "avx2", *registry);
}

TEST_CASE("avx2_binary_every_broadcast_form_matches_portable_bits") {
  if (!host_runs_elementwise("avx2")) return;
  auto registry = streaming_registry(int64_t{1} << 40);
  for (const auto& op : kBinary)
    for (const auto& c : binary_cases(op)) check_same_bits(c, "avx2", *registry);
}

TEST_CASE("avx2_streaming_stores_misaligned_rows_match_portable_bits") {
  if (!host_runs_elementwise("avx2")) return;
  auto registry = streaming_registry(1);  // every output written with non-temporal stores
  for (const auto& op : kUnary)
    for (int64_t n : {1, 9, 33, 4099}) check_same_bits({op, {n}, {}}, "avx2", *registry);
  for (const auto& op : kBinary)
    for (const auto& c : binary_cases(op)) check_same_bits(c, "avx2", *registry);
}

#if defined(__x86_64__) || defined(_M_X64)  // the avx2 span functions exist only there (libruntime/CMakeLists.txt)
namespace simd = onnx_light::runtime::kernels::simd;

// Direct calls at every output offset within a 32-byte line, around the length from which the
// loop first aligns its output with a masked head: the same bits as the aligned call, and not one
// float written outside [0, n) (the guards around the output keep their sentinel).
TEST_CASE("avx2_spans_at_every_output_offset_write_exactly_n_floats") {
  if (!host_runs_elementwise("avx2")) return;
  constexpr int64_t kGuard = 16;
  const float sentinel = 12345.0f;
  const Tensor a = special_tensor({4200}, 5), b = special_tensor({4200}, 9);
  struct Fn {
    std::string name;
    simd::UnarySpanFunction unary = nullptr;
    simd::BinarySpanFunction binary = nullptr;
  };
  const std::vector<Fn> fns{{"abs", simd::abs_f32_avx2}, {"relu", simd::relu_f32_avx2},
                            {"add", nullptr, simd::add_f32_avx2}, {"div", nullptr, simd::div_f32_avx2}};
  for (const auto& fn : fns)
    for (bool streaming : {false, true})
      for (int64_t n : {1, 7, 8, 9, 63, 64, 65, 71, 72, 100, 1000, 4099}) {
        auto call = [&](float* out, int64_t in_offset) {
          const float* x = a.data<float>() + in_offset;
          if (fn.unary) fn.unary(x, out, n, streaming);
          else fn.binary(x, b.data<float>() + 3, out, n, simd::BinarySpanShape::same, streaming);
        };
        Tensor reference(ElementType::float32, {n});  // 64-byte aligned
        call(reference.data<float>(), 0);
        for (int64_t out_offset = 0; out_offset < 8; ++out_offset)
          for (int64_t in_offset : {int64_t{0}, out_offset, int64_t{5}}) {
            Tensor buffer(ElementType::float32, {n + 2 * kGuard + 8});
            float* base = buffer.data<float>();
            std::fill(base, base + buffer.element_count(), sentinel);
            float* out = base + kGuard + out_offset;
            call(out, in_offset);
            INFO(fn.name, " n=", n, " out_offset=", out_offset, " in_offset=", in_offset, " streaming=", streaming);
            if (in_offset == 0)
              CHECK(std::memcmp(out, reference.data<float>(), static_cast<std::size_t>(n) * sizeof(float)) == 0);
            int64_t touched_outside = 0;
            for (float* p = base; p < base + buffer.element_count(); ++p)
              if ((p < out || p >= out + n) && std::memcmp(p, &sentinel, sizeof(float)) != 0) ++touched_outside;
            CHECK(touched_outside == 0);
          }
      }
}
#endif

TEST_CASE("relu_avx2_keeps_nan_and_turns_negative_zero_positive") {
  if (!host_runs_elementwise("avx2")) return;
  auto registry = streaming_registry(int64_t{1} << 40);
  RuntimeSessionOptions options;
  options.registry = registry.get();
  options.kernels = &elementwise_table("avx2");
  RuntimeSession session(test::parse("<ir_version: 8, opset_import: [\"\" : 17]>\ng (float[4] a) => (float[4] y) { y = Relu(a) }"),
                         options);
  RuntimeContext context;
  Tensor a(ElementType::float32, {4});
  a.data<float>()[0] = -0.0f;
  a.data<float>()[1] = std::numeric_limits<float>::quiet_NaN();
  a.data<float>()[2] = -3.0f;
  a.data<float>()[3] = 2.5f;
  context.set("a", a);
  session.run(context);
  const float* y = context.get("y").data<float>();
  CHECK(y[0] == 0.0f);
  CHECK_FALSE(std::signbit(y[0]));
  CHECK(std::isnan(y[1]));
  CHECK(y[2] == 0.0f);
  CHECK(y[3] == 2.5f);
}

TEST_CASE("dispatch_prefers_avx2_and_records_why_it_was_skipped_otherwise") {
  CpuFeatures none;
  const KernelChoice fallback = cpu_kernel_table().choose("", "Abs", 17, ElementType::float32, none);
  REQUIRE(fallback.def != nullptr);
  CHECK(fallback.def->implementation == "portable");
#if defined(__x86_64__)
  REQUIRE(fallback.skipped.size() >= 1);
  CHECK(fallback.skipped.front() == "avx2: needs avx2");
  CpuFeatures avx2_only;
  avx2_only.avx2 = true;
  CHECK(cpu_kernel_table().choose("", "Add", 17, ElementType::float32, avx2_only).skipped.front() == "avx2: needs fma");
  CpuFeatures both = avx2_only;
  both.fma3 = true;
  CHECK(cpu_kernel_table().choose("", "Relu", 17, ElementType::float32, both).def->implementation == "avx2");
  // Other element types have no span kernel: the portable one is chosen without a skip.
  CHECK(cpu_kernel_table().choose("", "Abs", 17, ElementType::float64, both).skipped.empty());
#endif
}
