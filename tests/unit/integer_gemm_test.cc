// MatMulInteger and QLinearMatMul on AVX-512 VNNI ("avx512vnni") and AVX-VNNI ("avxvnni", 256-bit,
// each case on every VNNI implementation this host runs) against the portable reference, bit for bit: every pair of uint8/int8 operand types, zero points per tensor, per row of A and
// per column of B, depths that are not a multiple of 4, columns past the 32-wide panel, rows past
// the 12-row tile, batched operands, B as a constant (packed once) and as an input, 1-3 threads,
// and the reference itself on the extreme values; QuantizeLinear / DequantizeLinear "avx512"
// against the portable loops on ties, NaN, infinities and tails.
#include <doctest/doctest.h>

#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "onnx_light/runtime/calibration_workload.h"
#include "onnx_light/runtime/kernel_table.h"
#include "onnx_light/runtime/model.h"
#include "onnx_light/runtime/session.h"
#include "implementation_tables.h"
#include "test_models.h"

using namespace onnx_light;
using namespace onnx_light::runtime;

namespace {

bool is_integer_matmul(const KernelDef& d) { return d.op_type == "MatMulInteger" || d.op_type == "QLinearMatMul"; }

const KernelTable& integer_gemm_table(const std::string& implementation) {
  return test::table_with_only("integer_matmul", is_integer_matmul, implementation);
}

std::string type_name(ElementType t) { return t == ElementType::uint8 ? "uint8" : "int8"; }

std::string integer_gemm_dims(const Shape& shape) {
  std::string s;
  for (std::size_t i = 0; i < shape.size(); ++i) s += (i ? "," : "") + std::to_string(shape[i]);
  return s;
}

// "uint8[3,4]", or "uint8" for a scalar.
std::string declared(const std::string& type, const Shape& shape) {
  return shape.empty() ? type : type + "[" + integer_gemm_dims(shape) + "]";
}

// Every byte value, seeded: extremes (0, 127, 128, 255) are frequent enough in 1000s of bytes.
Tensor bytes(ElementType type, const Shape& shape, uint32_t seed) { return random_tensor(type, shape, seed); }

Tensor zero_point(ElementType type, const Shape& shape, uint32_t seed) { return random_tensor(type, shape, seed); }

struct IntegerGemmCase {
  ElementType a_type, b_type;
  Shape a_shape, b_shape;
  Shape a_zero_shape, b_zero_shape;  // {} with `has_*_zero` false: omitted
  bool has_a_zero = true, has_b_zero = true;
  bool constant_b = false;
};

Model matmul_integer_model(const IntegerGemmCase& c) {
  const std::string a = type_name(c.a_type), b = type_name(c.b_type);
  Shape out(c.a_shape.begin(), c.a_shape.end() - 1);
  out.push_back(c.b_shape.back());
  // Written with both zero points, then the omitted ones removed from the proto (an empty input
  // name is how ONNX omits an optional input before a given one).
  const std::string text = fmt::format(
      "<ir_version: 8, opset_import: [\"\" : 13]>\n"
      "g ({} a, {} b, {} az, {} bz) => ({} y) {{ y = MatMulInteger(a, b, az, bz) }}", declared(a, c.a_shape),
      declared(b, c.b_shape), declared(a, c.a_zero_shape), declared(b, c.b_zero_shape), declared("int32", out));
  onnx::ModelProto proto = test::parse(text).proto();
  auto* graph = proto.mutable_graph();
  auto* node = graph->mutable_node(0);
  auto drop_input = [&](const std::string& name) {
    for (int i = 0; i < graph->input_size(); ++i)
      if (graph->input(i).name() == name) {
        graph->mutable_input()->DeleteSubrange(i, 1);
        return;
      }
  };
  if (!c.has_b_zero) {
    node->mutable_input()->RemoveLast();
    drop_input("bz");
  }
  if (!c.has_a_zero) {
    if (c.has_b_zero) node->set_input(2, "");
    else node->mutable_input()->RemoveLast();
    drop_input("az");
  }
  return model_from_proto(proto, "<integer matmul test>");
}

Tensor run_integer_gemm(const Model& model, const test::NamedTensors& feeds, const std::string& implementation, int threads,
           std::string* ran = nullptr) {
  RuntimeSessionOptions options;
  options.parameters = RuntimeParameters(threads);
  options.registry = &test::threshold_one_registry();  // parallel at any size: block edges everywhere
  options.kernels = &integer_gemm_table(implementation);
  options.optimization = OptimizationLevel::none;
  RuntimeSession session(model, options);
  RuntimeContext context;
  for (const auto& [name, t] : feeds) context.set(name, t);
  session.run(context);
  if (ran != nullptr) *ran = session.resolved_tuning().front().key.implementation;
  return context.get(session.outputs().front().name);
}

bool same_bytes(const Tensor& x, const Tensor& y) {
  return x.element_type() == y.element_type() && x.shape() == y.shape() &&
         std::memcmp(x.raw_data(), y.raw_data(), x.byte_size()) == 0;
}

// The VNNI implementations this host runs, in table order (one it cannot run is reported untested).
std::vector<std::string> vnni_implementations() {
  std::vector<std::string> runs;
  for (const char* impl : {"avx512vnni", "avxvnni"})
    if (test::host_runs("MatMulInteger", is_integer_matmul, impl)) runs.emplace_back(impl);
  return runs;
}

}  // namespace

TEST_CASE("vnni_matmul_integer_matches_the_reference_bit_for_bit_on_tile_and_panel_edges") {
  const std::vector<std::string> implementations = vnni_implementations();
  const ElementType types[] = {ElementType::uint8, ElementType::int8};
  // (m, k, n): k % 4 != 0, n past a 32-column panel, m past the 12-row tile, single rows and columns.
  const int64_t sizes[][3] = {{1, 1, 1}, {6, 4, 32}, {7, 5, 33}, {13, 67, 65}, {2, 3, 1}, {1, 130, 31}, {25, 64, 96}};
  uint32_t seed = 1;
  for (ElementType at : types)
    for (ElementType bt : types)
      for (const auto& size : sizes)
        for (int zero_kind = 0; zero_kind < 4; ++zero_kind) {
          const int64_t m = size[0], k = size[1], n = size[2];
          IntegerGemmCase c{at, bt, {m, k}, {k, n}, {}, {}};
          // 0: per-tensor zero points; 1: per row of A / per column of B; 2: none; 3: only B's.
          c.has_a_zero = zero_kind != 2 && zero_kind != 3;
          c.has_b_zero = zero_kind != 2;
          if (zero_kind == 1) {
            c.a_zero_shape = {m};
            c.b_zero_shape = {n};
          }
          const Model model = matmul_integer_model(c);
          test::NamedTensors feeds{{"a", bytes(at, c.a_shape, seed++)}, {"b", bytes(bt, c.b_shape, seed++)}};
          if (c.has_a_zero) feeds.push_back({"az", zero_point(at, c.a_zero_shape, seed++)});
          if (c.has_b_zero) feeds.push_back({"bz", zero_point(bt, c.b_zero_shape, seed++)});
          const Tensor expected = run_integer_gemm(model, feeds, "portable", 1);
          for (const std::string& impl : implementations)
            for (int threads = 1; threads <= 3; ++threads) {
              std::string ran;
              const Tensor y = run_integer_gemm(model, feeds, impl, threads, &ran);
              const std::string what = fmt::format("{}: A {} B {} m={} k={} n={} zero points {} threads {}", impl,
                                                   type_name(at), type_name(bt), m, k, n, zero_kind, threads);
              CAPTURE(what);
              CHECK(ran == impl);
              CHECK(same_bytes(y, expected));
            }
        }
}

TEST_CASE("vnni_matmul_integer_with_a_constant_b_packs_it_once_and_stays_exact_across_runs") {
  const int64_t m = 9, k = 70, n = 40;
  for (const std::string& impl : vnni_implementations())
    for (ElementType bt : {ElementType::uint8, ElementType::int8}) {
      CAPTURE(impl);
      IntegerGemmCase c{ElementType::int8, bt, {2, m, k}, {k, n}, {}, {}};
      c.has_a_zero = false;
      c.b_zero_shape = {n};
      const Model plain = matmul_integer_model(c);
      const Tensor b = bytes(bt, c.b_shape, 77);
      const Tensor bz = zero_point(bt, c.b_zero_shape, 78);
      const Model with_constant = with_initializers(plain, {{"b", b}, {"bz", bz}});
      RuntimeSessionOptions options;
      options.parameters = RuntimeParameters(2);
      options.registry = &test::threshold_one_registry();
      options.kernels = &integer_gemm_table(impl);
      RuntimeSession session(with_constant, options);
      for (uint32_t run_index = 0; run_index < 3; ++run_index) {
        const Tensor a = bytes(ElementType::int8, c.a_shape, 100 + run_index);
        RuntimeContext context;
        context.set("a", a);
        session.run(context);
        const Tensor expected = run_integer_gemm(plain, {{"a", a}, {"b", b}, {"bz", bz}}, "portable", 1);
        CAPTURE(run_index);
        CHECK(same_bytes(context.get("y"), expected));
      }
    }
}

TEST_CASE("vnni_matmul_integer_batched_a_and_b_and_empty_depth") {
  const std::vector<std::string> implementations = vnni_implementations();
  for (const auto& [a_shape, b_shape] : std::vector<std::pair<Shape, Shape>>{
           {{3, 5, 9}, {3, 9, 34}},  // both batched
           {{2, 2, 4, 11}, {11, 7}},  // A batched, one B
           {{4, 0}, {0, 5}}}) {      // K = 0: every output is 0
    IntegerGemmCase c{ElementType::uint8, ElementType::uint8, a_shape, b_shape, {}, {}};
    const Model model = matmul_integer_model(c);
    const test::NamedTensors feeds{{"a", bytes(ElementType::uint8, a_shape, 5)},
                                   {"b", bytes(ElementType::uint8, b_shape, 6)},
                                   {"az", zero_point(ElementType::uint8, {}, 7)},
                                   {"bz", zero_point(ElementType::uint8, {}, 8)}};
    const Tensor expected = run_integer_gemm(model, feeds, "portable", 1);
    for (const std::string& impl : implementations) {
      const Tensor y = run_integer_gemm(model, feeds, impl, 2);
      const std::string what = impl + ": " + integer_gemm_dims(a_shape) + " x " + integer_gemm_dims(b_shape);
      CAPTURE(what);
      CHECK(same_bytes(y, expected));
    }
  }
}

TEST_CASE("reference_matmul_integer_is_the_exact_product_on_extreme_values") {
  // All 255 (uint8) times all -128 (int8) with zero points 0: every output is 255 * -128 * K.
  const int64_t m = 3, k = 37, n = 5;
  Tensor a(ElementType::uint8, {m, k});
  std::memset(a.raw_data(), 255, a.byte_size());
  Tensor b(ElementType::int8, {k, n});
  std::memset(b.raw_data(), 0x80, b.byte_size());
  IntegerGemmCase c{ElementType::uint8, ElementType::int8, {m, k}, {k, n}, {}, {}};
  c.has_a_zero = c.has_b_zero = false;
  const Model model = matmul_integer_model(c);
  std::vector<std::string> implementations{"portable"};
  for (const std::string& impl : vnni_implementations()) implementations.push_back(impl);
  for (const auto& impl : implementations) {
    const Tensor y = run_integer_gemm(model, {{"a", a}, {"b", b}}, impl, 2);
    CAPTURE(impl);
    for (int64_t e = 0; e < y.element_count(); ++e) CHECK(y.data<int32_t>()[e] == 255 * -128 * k);
  }
}

TEST_CASE("vnni_qlinear_matmul_matches_the_reference_bit_for_bit") {
  for (const std::string& impl : vnni_implementations())
    for (ElementType t : {ElementType::uint8, ElementType::int8}) {
      CAPTURE(impl);
      const std::string q = type_name(t);
      const Model model = test::parse(fmt::format(
          "<ir_version: 8, opset_import: [\"\" : 13]>\n"
          "g ({0}[7,45] a, float as, {0} az, {0}[45,50] b, float bs, {0} bz, float ys, {0} yz) => ({0}[7,50] y) "
          "{{ y = QLinearMatMul(a, as, az, b, bs, bz, ys, yz) }}",
          q));
      auto scalar = [](float v) {
        Tensor s(ElementType::float32, {});
        *s.data<float>() = v;
        return s;
      };
      const test::NamedTensors feeds{{"a", bytes(t, {7, 45}, 11)},  {"as", scalar(0.02f)},
                                     {"az", zero_point(t, {}, 12)},  {"b", bytes(t, {45, 50}, 13)},
                                     {"bs", scalar(0.015f)},         {"bz", zero_point(t, {}, 14)},
                                     {"ys", scalar(0.5f)},           {"yz", zero_point(t, {}, 15)}};
      const Tensor expected = run_integer_gemm(model, feeds, "portable", 1);
      for (int threads = 1; threads <= 2; ++threads) {
        std::string ran;
        const Tensor y = run_integer_gemm(model, feeds, impl, threads, &ran);
        CAPTURE(q);
        CAPTURE(threads);
        CHECK(ran == impl);
        CHECK(same_bytes(y, expected));
      }
      // B as a constant (input 3 of QLinearMatMul): packed once at creation, same bytes.
      test::NamedTensors without_b;
      Tensor b_value;
      for (const auto& [name, value] : feeds) {
        if (name == "b") b_value = value;
        else without_b.push_back({name, value});
      }
      const Model constant_b = with_initializers(model, {{"b", b_value}});
      RuntimeSessionOptions options;
      options.parameters = RuntimeParameters(2);
      options.registry = &test::threshold_one_registry();
      options.kernels = &integer_gemm_table(impl);
      RuntimeSession session(constant_b, options);
      for (int run_index = 0; run_index < 2; ++run_index) {
        RuntimeContext context;
        for (const auto& [name, value] : without_b) context.set(name, value);
        session.run(context);
        CAPTURE(q);
        CHECK(same_bytes(context.get("y"), expected));
      }
    }
}

TEST_CASE("vnni_table_prefers_avx512vnni_then_avxvnni_then_portable_and_says_why") {
#if defined(__x86_64__)
  CpuFeatures avx2;
  avx2.sse4_2 = avx2.avx = avx2.avx2 = avx2.fma3 = true;
  CpuFeatures alder_lake = avx2;  // AVX-VNNI without AVX-512
  alder_lake.avxvnni = true;
  CpuFeatures zen5 = alder_lake;
  zen5.avx512f = zen5.avx512bw = zen5.avx512vl = zen5.avx512vnni = true;
  const KernelTable& table = cpu_kernel_table();
  for (const std::string op : {"MatMulInteger", "QLinearMatMul", "QLinearConv", "ConvInteger"})
    for (ElementType type : {ElementType::uint8, ElementType::int8}) {
      CAPTURE(op);
      KernelChoice c = table.choose("", op, 13, type, zen5);
      REQUIRE(c.def != nullptr);
      CHECK(c.def->implementation == "avx512vnni");
      c = table.choose("", op, 13, type, alder_lake);
      REQUIRE(c.def != nullptr);
      CHECK(c.def->implementation == "avxvnni");
      CHECK(c.skipped == std::vector<std::string>{"avx512vnni: needs avx512f, avx512vl and avx512bw"});
      c = table.choose("", op, 13, type, avx2);
      REQUIRE(c.def != nullptr);
      CHECK(c.def->implementation == "portable");
      CHECK(c.skipped == std::vector<std::string>{"avx512vnni: needs avx512f, avx512vl and avx512bw",
                                                  "avxvnni: needs avxvnni"});
      CpuFeatures no_fma = alder_lake;
      no_fma.fma3 = false;
      c = table.choose("", op, 13, type, no_fma);
      REQUIRE(c.def != nullptr);
      CHECK(c.def->implementation == "portable");
      CHECK(c.skipped.back() == "avxvnni: needs fma");
    }
#endif
}

namespace {

bool is_quantize(const KernelDef& d) { return d.op_type == "QuantizeLinear" || d.op_type == "DequantizeLinear"; }

Tensor run_quantization(const std::string& graph, const test::NamedTensors& feeds, const std::string& implementation,
                        int threads, std::string* ran) {
  RuntimeSessionOptions options;
  options.parameters = RuntimeParameters(threads);
  options.registry = &test::threshold_one_registry();
  options.kernels = &test::table_with_only("quantize_linear", is_quantize, implementation);
  options.optimization = OptimizationLevel::none;
  options.profile = true;  // the implementation that ran, as the profile reports it
  RuntimeSession session(test::parse("<ir_version: 8, opset_import: [\"\" : 13]>\n" + graph), options);
  RuntimeContext context;
  for (const auto& [name, t] : feeds) context.set(name, t);
  session.run(context);
  *ran = session.profile().nodes.front().implementation;
  return context.get(session.outputs().front().name);
}

Tensor float_vector(const std::vector<float>& values) {
  Tensor t(ElementType::float32, {static_cast<int64_t>(values.size())});
  std::memcpy(t.raw_data(), values.data(), values.size() * sizeof(float));
  return t;
}

}  // namespace

TEST_CASE("avx512_quantize_and_dequantize_linear_match_the_reference_on_ties_nan_inf_and_tails") {
  if (!test::host_runs("QuantizeLinear", is_quantize, "avx512")) return;
  const float inf = std::numeric_limits<float>::infinity();
  // Halfway cases (x / scale = k + 0.5 rounds to even), saturation both ways, NaN, infinities,
  // denormals, and a length that leaves a 13-lane tail after two vectors.
  std::vector<float> x{0.25f, 0.75f, -0.25f, -0.75f, 1.25f, 63.75f, 64.25f, -64.25f, 1e9f, -1e9f,
                       std::numeric_limits<float>::quiet_NaN(), inf, -inf, 1e-40f, -0.0f, 31.74f};
  for (int i = 0; x.size() < 45; ++i) x.push_back(static_cast<float>(i) * 0.37f - 7.0f);
  for (const char* q : {"uint8", "int8"}) {
    for (const float scale : {0.5f, 0.1f, 3.0f}) {
      Tensor s(ElementType::float32, {});
      *s.data<float>() = scale;
      Tensor z(std::string(q) == "uint8" ? ElementType::uint8 : ElementType::int8, {});
      if (std::string(q) == "uint8") *z.data<uint8_t>() = 130;
      else *z.data<int8_t>() = -3;
      const std::string graph = fmt::format(
          "g (float[45] x, float s, {0} z) => ({0}[45] y, float[45] back) {{ y = QuantizeLinear(x, s, z)\n"
          " back = DequantizeLinear(y, s, z) }}",
          q);
      const test::NamedTensors feeds{{"x", float_vector(x)}, {"s", s}, {"z", z}};
      std::string ran_reference, ran_simd;
      const Tensor expected = run_quantization(graph, feeds, "portable", 1, &ran_reference);
      for (int threads = 1; threads <= 2; ++threads) {
        const Tensor y = run_quantization(graph, feeds, "avx512", threads, &ran_simd);
        const std::string what = fmt::format("{} scale {} threads {}", q, scale, threads);
        CAPTURE(what);
        CHECK(ran_simd == "avx512");
        CHECK(same_bytes(y, expected));
      }
    }
  }
  // Per-axis parameters take the portable loop, and the profile says so.
  Tensor scales = float_vector({0.5f, 0.25f});
  Tensor zeros(ElementType::uint8, {2});
  zeros.data<uint8_t>()[0] = 1;
  zeros.data<uint8_t>()[1] = 2;
  Tensor x2(ElementType::float32, {3, 2});
  for (int i = 0; i < 6; ++i) x2.data<float>()[i] = static_cast<float>(i);
  std::string ran;
  const Tensor y = run_quantization("g (float[3,2] x, float[2] s, uint8[2] z) => (uint8[3,2] y) { y = QuantizeLinear <axis = 1> (x, s, z) }",
                                    {{"x", x2}, {"s", scales}, {"z", zeros}}, "avx512", 1, &ran);
  CHECK(ran == "portable");
  CHECK(y.data<uint8_t>()[5] == 5 * 4 + 2);
}
