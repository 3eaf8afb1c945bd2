// The float32 packed GEMM implementations ("avx512", "avx2") of MatMul and Gemm against the
// portable one and a double-precision reference, around the edges of the register tiles and
// cache blocks; bit-identity across 1..4 threads and across block sizes. Each implementation is
// forced through a kernel table holding only it for MatMul/Gemm float32.
#include <doctest/doctest.h>

#include <array>
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
#include "kernels/packed_gemm.h"
#include "test_models.h"

using namespace onnx_light;
using namespace onnx_light::runtime;

namespace {

using GemmInputs = std::vector<std::pair<std::string, Tensor>>;

const std::vector<std::string> kSimd{"avx512", "avx2"};

bool is_gemm_f32(const KernelDef& def) {
  return (def.op_type == "MatMul" || def.op_type == "Gemm") && def.element_type == ElementType::float32;
}

bool host_runs_gemm(const std::string& implementation) { return test::host_runs("GEMM", is_gemm_f32, implementation); }

// The CPU table with MatMul/Gemm float32 restricted to one implementation.
const KernelTable& table_for(const std::string& implementation) {
  return test::table_with_only("gemm_f32", is_gemm_f32, implementation);
}

const KernelDef& def_of(const std::string& op_type, const std::string& implementation) {
  for (const auto& def : cpu_kernel_table().definitions())
    if (is_gemm_f32(def) && def.op_type == op_type && def.implementation == implementation) return def;
  FAIL("no definition for " << op_type << " " << implementation);
  throw 0;
}

// Threshold 1 (parallel from the smallest problem) and the given blocks, for 1..4 threads.
std::unique_ptr<TuningRegistry> registry_with(int64_t block_m, int64_t block_k, int64_t block_n) {
  auto registry = std::make_unique<TuningRegistry>();
  std::vector<PublishedProfile> profiles;
  for (const auto& def : cpu_kernel_table().definitions()) {
    if (!is_gemm_f32(def)) continue;
    TuningValues values = def.schema.defaults();
    for (const auto& spec : def.schema.parameters)
      if (spec.role == ParameterRole::threshold) values[spec.name] = int64_t{1};
    if (def.implementation != "portable") {
      values["gemm.block_m"] = block_m;
      values["gemm.block_k"] = block_k;
      values["gemm.block_n"] = block_n;
    } else {
      values["gemm.tile_m"] = int64_t{8};
      values["gemm.tile_n"] = int64_t{16};
      values["gemm.tile_k"] = int64_t{16};
    }
    for (int threads = 1; threads <= 4; ++threads) profiles.push_back({def.schema.key, threads, values});
  }
  registry->publish(std::move(profiles));
  return registry;
}

TuningRegistry& small_blocks() {
  static auto registry = registry_with(24, 64, 32);
  return *registry;
}

Model model_of(const std::string& graph) {
  return test::parse("<ir_version: 8, opset_import: [\"\" : 17]>\ngemm " + graph);
}

Model with_initializer(const Model& model, const std::string& name, const Tensor& value) {
  return with_initializers(model, {{name, value}});
}

struct SessionRun {
  Tensor y;                           // the first graph output
  std::vector<std::string> steps;     // the node label of every kernel that ran
  std::string last_implementation;    // of the last kernel
};

SessionRun run_session(const Model& model, const GemmInputs& inputs, const std::string& implementation, int threads,
                       TuningRegistry& registry, bool fuse_activations) {
  RuntimeSessionOptions options;
  options.parameters = RuntimeParameters(threads);
  options.registry = &registry;
  options.kernels = &table_for(implementation);
  options.fuse_activations = fuse_activations;
  // The graph as written: these tests are about the kernels and the session's own Relu fusion.
  options.optimization = OptimizationLevel::none;
  RuntimeSession session(model, options);
  RuntimeContext context;
  for (const auto& [name, t] : inputs) context.set(name, t);
  session.run(context);
  SessionRun result{context.get(session.outputs().front().name), {}, {}};
  for (const auto& r : session.resolved_tuning()) {
    result.steps.push_back(r.node);
    result.last_implementation = r.key.implementation;
  }
  return result;
}

Tensor run_gemm(const Model& model, const GemmInputs& inputs, const std::string& implementation, int threads,
           TuningRegistry& registry = small_blocks(), std::string* chosen = nullptr) {
  SessionRun result = run_session(model, inputs, implementation, threads, registry, true);
  if (chosen != nullptr) *chosen = result.last_implementation;
  return result.y;
}

Tensor random_f32(const Shape& shape, uint32_t seed) { return random_tensor(ElementType::float32, shape, seed); }

// y = alpha * op(a) op(b) + beta * c in double, with the sum of |terms| per element for the bound.
struct GemmReference {
  std::vector<double> value, magnitude;
};

GemmReference gemm_reference(const Tensor& a, const Tensor& b, const Tensor* c, bool ta, bool tb, double alpha, double beta) {
  const int64_t m = ta ? a.shape()[1] : a.shape()[0], k = ta ? a.shape()[0] : a.shape()[1];
  const int64_t n = tb ? b.shape()[0] : b.shape()[1];
  GemmReference r{std::vector<double>(static_cast<std::size_t>(m * n)), std::vector<double>(static_cast<std::size_t>(m * n))};
  const float* pa = a.data<float>();
  const float* pb = b.data<float>();
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double s = 0, mag = 0;
      for (int64_t kk = 0; kk < k; ++kk) {
        const double x = pa[ta ? kk * m + i : i * k + kk], y = pb[tb ? j * k + kk : kk * n + j];
        s += x * y;
        mag += std::fabs(x * y);
      }
      double bias = 0;
      if (c != nullptr) {
        const Shape& cs = c->shape();
        const int64_t rows = cs.size() == 2 ? cs[0] : 1, cols = cs.empty() ? 1 : cs.back();
        bias = c->data<float>()[(rows == 1 ? 0 : i) * cols + (cols == 1 ? 0 : j)];
      }
      r.value[static_cast<std::size_t>(i * n + j)] = alpha * s + beta * bias;
      r.magnitude[static_cast<std::size_t>(i * n + j)] = std::fabs(alpha) * mag + std::fabs(beta * bias);
    }
  return r;
}

// Every element within rtol of the reference's magnitude (the sum of |terms|).
void check_close(const Tensor& y, const GemmReference& ref, const std::string& what) {
  CAPTURE(what);
  REQUIRE(static_cast<std::size_t>(y.element_count()) == ref.value.size());
  int bad = 0;
  for (std::size_t i = 0; i < ref.value.size(); ++i) {
    const double got = y.data<float>()[i];
    const double tolerance = 1e-5 * ref.magnitude[i] + 1e-30;
    if (!(std::fabs(got - ref.value[i]) <= tolerance) && ++bad <= 3)
      FAIL_CHECK(fmt::format("element {}: got {} want {} (tolerance {})", i, got, ref.value[i], tolerance));
  }
  CHECK(bad == 0);
}

// Batched y = a x b ([.., m, k] x [.., k, n], `batches` products, A's matrix t % a_matrices): each
// batch's [m, n] block of y close to the double reference of its own product.
void check_each_batch(const Tensor& a, const Tensor& b, const Tensor& y, int64_t batches, int64_t a_matrices, int64_t m,
                      int64_t k, int64_t n) {
  for (int64_t t = 0; t < batches; ++t) {
    Tensor am(ElementType::float32, {m, k}), bm(ElementType::float32, {k, n}), ym(ElementType::float32, {m, n});
    std::memcpy(am.data<float>(), a.data<float>() + (t % a_matrices) * m * k, m * k * sizeof(float));
    std::memcpy(bm.data<float>(), b.data<float>() + t * k * n, k * n * sizeof(float));
    std::memcpy(ym.data<float>(), y.data<float>() + t * m * n, m * n * sizeof(float));
    check_close(ym, gemm_reference(am, bm, nullptr, false, false, 1, 0), fmt::format("batch {}", t));
  }
}

// Runs a Gemm-shaped problem on portable and every SIMD implementation at 1..4 threads: each
// implementation close to the double reference, bit-identical across thread counts.
void check_gemm(const std::string& graph, const GemmInputs& inputs, bool ta, bool tb, double alpha, double beta,
                const std::string& constant_b = "") {
  Model model = model_of(graph);
  GemmInputs feed = inputs;
  if (!constant_b.empty()) {
    for (std::size_t i = 0; i < feed.size(); ++i)
      if (feed[i].first == constant_b) {
        model = with_initializer(model, constant_b, feed[i].second);
        feed.erase(feed.begin() + static_cast<std::ptrdiff_t>(i));
        break;
      }
  }
  const Tensor* c = inputs.size() > 2 ? &inputs[2].second : nullptr;
  const GemmReference ref = gemm_reference(inputs[0].second, inputs[1].second, c, ta, tb, alpha, beta);
  for (const std::string impl : {"portable", "avx2", "avx512"}) {
    if (impl != "portable" && !host_runs_gemm(impl)) continue;
    std::string chosen;
    const Tensor one = run_gemm(model, feed, impl, 1, small_blocks(), &chosen);
    CHECK(chosen == impl);
    check_close(one, ref, impl);
    for (int threads = 2; threads <= 4; ++threads) {
      CAPTURE(impl);
      CAPTURE(threads);
      CHECK(bitwise_equal(one, run_gemm(model, feed, impl, threads)));
    }
  }
}

void check_matmul(int64_t m, int64_t k, int64_t n, uint32_t seed = 1) {
  CAPTURE(m);
  CAPTURE(k);
  CAPTURE(n);
  check_gemm("(float[M, K] a, float[K, N] b) => (float[M, N] y) { y = MatMul(a, b) }",
             {{"a", random_f32({m, k}, seed)}, {"b", random_f32({k, n}, seed + 1)}}, false, false, 1.0, 0.0);
}

}  // namespace

TEST_CASE("host_features_and_preference_order") {
  const CpuFeatures& f = host_cpu_features();
  MESSAGE(fmt::format("host: avx2={} fma3={} avx512f={} avx512vl={} avx512bw={}", f.avx2, f.fma3, f.avx512f,
                      f.avx512vl, f.avx512bw));
  for (const std::string& impl : kSimd) host_runs_gemm(impl);
  for (const std::string op : {"MatMul", "Gemm"}) {
    std::vector<std::string> order;
    for (const auto& def : cpu_kernel_table().definitions())
      if (is_gemm_f32(def) && def.op_type == op) order.push_back(def.implementation);
    REQUIRE(order.size() == 3);
    CHECK(order[0] == "avx512");
    CHECK(order[1] == "avx2");
    CHECK(order[2] == "portable");
    const KernelDef* chosen = cpu_kernel_table().choose("", op, 17, ElementType::float32, f).def;
    REQUIRE(chosen != nullptr);
    if (f.avx512f && f.avx512vl && f.avx512bw && f.avx2 && f.fma3) CHECK(chosen->implementation == "avx512");
    // Other types keep the portable kernel only.
    const KernelDef* d = cpu_kernel_table().choose("", op, 17, ElementType::float64, f).def;
    REQUIRE(d != nullptr);
    CHECK(d->implementation == "portable");
  }
}

TEST_CASE("schema_threshold_first_then_block_tiles") {
  for (const std::string& impl : kSimd)
    for (const std::string op : {"MatMul", "Gemm"}) {
      const KernelDef& def = def_of(op, impl);
      CHECK(def.schema.key.implementation == impl);
      CHECK(static_cast<bool>(def.calibration_workload));
      // Tuning ABI 2: the row-order bound (and MatMul's in-place B width) were constants in ABI 1.
      CHECK(def.schema.key.tuning_abi == 2);
      const std::size_t size = op == "MatMul" ? 6 : 5;
      REQUIRE(def.schema.parameters.size() == size);
      CHECK(def.schema.parameters[0].name == "parallel.minimum_macs");
      CHECK(def.schema.parameters[0].role == ParameterRole::threshold);
      for (std::size_t i = 1; i < size; ++i) {
        CHECK(def.schema.parameters[i].role == ParameterRole::tile);
        CHECK(!def.schema.parameters[i].allowed.empty());
      }
      CHECK(def.schema.parameters[1].name == "gemm.block_m");
      CHECK(def.schema.parameters[2].name == "gemm.block_k");
      CHECK(def.schema.parameters[2].default_value == TuningValue{int64_t{impl == "avx512" ? 512 : 256}});
      CHECK(def.schema.parameters[3].name == "gemm.block_n");
      CHECK(def.schema.parameters[4].name == "gemm.row_order_b_floats");
      CHECK(def.schema.parameters[4].default_value == TuningValue{int64_t{8192}});
      if (op == "MatMul") {
        CHECK(def.schema.parameters[5].name == "matmul.in_place_b_max_columns");
        CHECK(def.schema.parameters[5].default_value == TuningValue{int64_t{64}});
      }
      CHECK(def.schema.validate(def.schema.defaults()).empty());
    }
}

TEST_CASE("m_lt_mr") {
  for (int64_t m : {1, 2, 5, 6, 7, 11, 12, 13}) check_matmul(m, 37, 50);
}

TEST_CASE("n_not_multiple_of_nr") {
  for (int64_t n : {1, 7, 8, 9, 15, 16, 17, 31, 33, 47, 100}) check_matmul(13, 29, n);
}

TEST_CASE("n_le_16_tile_bit_identical_to_the_wide_tile") {
  // A tile of at most 16 columns runs one vector per row (AVX-512); its columns must carry the same
  // bits as when they sit in a full 32-column tile. Columns 16..31 of B: in the 48-wide product
  // they are the second vector of a wide tile, in the 16-wide product a narrow tile of their own.
  const Model model = model_of("(float[M, K] a, float[K, N] b) => (float[M, N] y) { y = MatMul(a, b) }");
  const Tensor a = random_f32({29, 300}, 21), wide_b = random_f32({300, 48}, 22);
  Tensor narrow_b(ElementType::float32, Shape{300, 16});
  for (int64_t k = 0; k < 300; ++k)
    for (int64_t j = 0; j < 16; ++j) narrow_b.data<float>()[k * 16 + j] = wide_b.data<float>()[k * 48 + 16 + j];
  for (const std::string& impl : kSimd) {
    if (!host_runs_gemm(impl)) continue;
    CAPTURE(impl);
    const Tensor wide = run_gemm(model, {{"a", a}, {"b", wide_b}}, impl, 1);
    const Tensor narrow = run_gemm(model, {{"a", a}, {"b", narrow_b}}, impl, 1);
    int differ = 0;
    for (int64_t i = 0; i < 29; ++i)
      for (int64_t j = 0; j < 16; ++j)
        differ += std::memcmp(&wide.data<float>()[i * 48 + 16 + j], &narrow.data<float>()[i * 16 + j], sizeof(float)) != 0;
    CHECK(differ == 0);
  }
}

TEST_CASE("k_eq_1") {
  check_matmul(14, 1, 40);
  check_matmul(1, 1, 1);
}

TEST_CASE("k_eq_0_writes_every_element") {
  // Outputs are not zero-filled before the kernel runs: an empty product must still store zeros
  // (MatMul) or beta * C (Gemm) in every element.
  check_matmul(13, 0, 40);
  check_gemm("(float[M, K] a, float[K, N] b, float[N] c) => (float[M, N] y) { y = Gemm <beta = 2.0> (a, b, c) }",
             {{"a", random_f32({9, 0}, 5)}, {"b", random_f32({0, 35}, 6)}, {"c", random_f32({35}, 7)}}, false, false, 1, 2);
}

TEST_CASE("k_gt_block_k") {
  // block_k is 64 in these runs: several k-blocks, the last one partial.
  check_matmul(30, 200, 70);
  check_matmul(7, 1000, 33);
}

TEST_CASE("large_square_crosses_every_block") { check_matmul(130, 300, 150); }

TEST_CASE("block_sizes_do_not_change_results") {
  // Every element accumulates k ascending, resuming from its stored partial sum: bit-identical.
  const Model model = model_of("(float[M, K] a, float[K, N] b) => (float[M, N] y) { y = MatMul(a, b) }");
  const GemmInputs inputs{{"a", random_f32({61, 700}, 3)}, {"b", random_f32({700, 83}, 4)}};
  for (const std::string& impl : kSimd) {
    if (!host_runs_gemm(impl)) continue;
    CAPTURE(impl);
    auto r0 = registry_with(24, 64, 32), r1 = registry_with(96, 256, 256), r2 = registry_with(768, 1024, 2048);
    const Tensor y0 = run_gemm(model, inputs, impl, 2, *r0);
    CHECK(bitwise_equal(y0, run_gemm(model, inputs, impl, 3, *r1)));
    CHECK(bitwise_equal(y0, run_gemm(model, inputs, impl, 1, *r2)));
  }
}

TEST_CASE("b_packed_in_tasks_or_in_own_region_bit_identical") {
  // With several threads a non-constant B is packed by the GEMM tasks when one k-block of A is
  // small, else in a region of its own first; one thread packs it serially. Same bits every way.
  const Model model = model_of("(float[M, K] a, float[K, N] b) => (float[M, N] y) { y = MatMul(a, b) }");
  const GemmInputs inputs{{"a", random_f32({200, 700}, 8)}, {"b", random_f32({700, 90}, 9)}};
  const kernels::GemmBlocking deep{96, 1024, 256}, shallow{96, 64, 256};
  REQUIRE_FALSE(kernels::pack_b_in_tasks(deep, 200, 700));
  REQUIRE(kernels::pack_b_in_tasks(shallow, 200, 700));
  auto own_region = registry_with(deep.m, deep.k, deep.n), in_tasks = registry_with(shallow.m, shallow.k, shallow.n);
  for (const std::string& impl : kSimd) {
    if (!host_runs_gemm(impl)) continue;
    CAPTURE(impl);
    const Tensor serial = run_gemm(model, inputs, impl, 1, *own_region);
    check_close(serial, gemm_reference(inputs[0].second, inputs[1].second, nullptr, false, false, 1, 0), impl);
    for (int threads : {2, 3}) {
      CHECK(bitwise_equal(serial, run_gemm(model, inputs, impl, threads, *own_region)));
      CHECK(bitwise_equal(serial, run_gemm(model, inputs, impl, threads, *in_tasks)));
    }
  }
}

TEST_CASE("threads_1_to_4_bit_identical") {
  // Sizes where the task grid is split differently for every thread count.
  for (int64_t s : {19, 64, 97}) check_matmul(s, s + 5, 2 * s + 3, 7);
}

TEST_CASE("batched_broadcast") {
  const Tensor a = random_f32({2, 1, 9, 21}, 5), b = random_f32({3, 21, 35}, 6);
  const Model model = model_of("(float[2, 1, M, K] a, float[3, K, N] b) => (float[2, 3, M, N] y) { y = MatMul(a, b) }");
  const Tensor portable = run_gemm(model, {{"a", a}, {"b", b}}, "portable", 1);
  for (const std::string& impl : kSimd) {
    if (!host_runs_gemm(impl)) continue;
    CAPTURE(impl);
    const Tensor y = run_gemm(model, {{"a", a}, {"b", b}}, impl, 1);
    REQUIRE(y.shape() == Shape{2, 3, 9, 35});
    // Each batch against the 2-D reference.
    for (int64_t i = 0; i < 2; ++i)
      for (int64_t j = 0; j < 3; ++j) {
        Tensor am(ElementType::float32, {9, 21}), bm(ElementType::float32, {21, 35}), ym(ElementType::float32, {9, 35});
        std::memcpy(am.data<float>(), a.data<float>() + i * 9 * 21, 9 * 21 * sizeof(float));
        std::memcpy(bm.data<float>(), b.data<float>() + j * 21 * 35, 21 * 35 * sizeof(float));
        std::memcpy(ym.data<float>(), y.data<float>() + (i * 3 + j) * 9 * 35, 9 * 35 * sizeof(float));
        check_close(ym, gemm_reference(am, bm, nullptr, false, false, 1, 0), fmt::format("batch {},{}", i, j));
      }
    for (int threads = 2; threads <= 4; ++threads) CHECK(bitwise_equal(y, run_gemm(model, {{"a", a}, {"b", b}}, impl, threads)));
    // Same shape and close to portable.
    REQUIRE(portable.shape() == y.shape());
  }
}

TEST_CASE("batched_per_batch_b_packed_in_tasks_bit_identical") {
  // Attention-style [2, 3, M, K] x [2, 3, K, N] with K >= 64: with several threads each GEMM task
  // packs its own batch's B panels (one parallel region); one thread packs B first. Same bits, and
  // every batch matches its own product (a task packing into another batch's buffer would not).
  const Tensor a = random_f32({2, 3, 37, 70}, 11), b = random_f32({2, 3, 70, 45}, 12);
  const Model model =
      model_of("(float[2, 3, M, K] a, float[2, 3, K, N] b) => (float[2, 3, M, N] y) { y = MatMul(a, b) }");
  REQUIRE(kernels::pack_b_in_tasks(kernels::GemmBlocking{}, 37, 70));
  for (const std::string& impl : kSimd) {
    if (!host_runs_gemm(impl)) continue;
    CAPTURE(impl);
    const Tensor serial = run_gemm(model, {{"a", a}, {"b", b}}, impl, 1);
    check_each_batch(a, b, serial, 6, 6, 37, 70, 45);
    for (int threads = 2; threads <= 4; ++threads)
      CHECK(bitwise_equal(serial, run_gemm(model, {{"a", a}, {"b", b}}, impl, threads)));
  }
}

TEST_CASE("shallow_k_widened_blocks_and_row_order_bit_identical") {
  // Attention scores with K = 16: block_n widens until a task's B panels fill kRowOrderBFloats
  // and tasks run along C's rows; deep products keep block_n (and run down the columns).
  const kernels::GemmBlocking defaults{96, 256, 256};
  CHECK(kernels::widened_for_depth(defaults, 32, 16).n == 512);
  CHECK(kernels::widened_for_depth(defaults, 32, 8).n == 1024);
  CHECK(kernels::widened_for_depth(defaults, 32, 64).n == 256);
  CHECK(kernels::widened_for_depth(defaults, 32, 700).n == 256);
  CHECK(kernels::widened_for_depth(kernels::GemmBlocking{96, 256, 2048}, 32, 16).n == 2048);  // a tuned wider block stays
  CHECK(kernels::widened_for_depth(defaults, 16, 16).n == 512);
  // The bound is gemm.row_order_b_floats: 0 never widens, 32768 widens K = 16 to 2048 columns.
  kernels::GemmBlocking tuned = defaults;
  int64_t minimum_macs = 0;
  kernels::read_packed_gemm_tuning({{"gemm.row_order_b_floats", int64_t{0}}}, minimum_macs, tuned);
  CHECK(tuned.row_order_b_floats == 0);
  CHECK(kernels::widened_for_depth(tuned, 32, 16).n == 256);
  kernels::read_packed_gemm_tuning({{"gemm.row_order_b_floats", int64_t{32768}}}, minimum_macs, tuned);
  CHECK(kernels::widened_for_depth(tuned, 32, 16).n == 2048);
  // Rows and columns not multiples of the tile (70 = 5 x 12 + 10, 150 = 4 x 32 + 22) with every
  // batch its own B; one thread against two and three, narrow and wide tuned blocks.
  const Tensor a = random_f32({2, 2, 70, 16}, 21), b = random_f32({2, 2, 16, 150}, 22);
  const Model model =
      model_of("(float[2, 2, M, K] a, float[2, 2, K, N] b) => (float[2, 2, M, N] y) { y = MatMul(a, b) }");
  auto narrow = registry_with(24, 64, 32), wide = registry_with(96, 256, 2048);
  for (const std::string& impl : kSimd) {
    if (!host_runs_gemm(impl)) continue;
    CAPTURE(impl);
    const Tensor serial = run_gemm(model, {{"a", a}, {"b", b}}, impl, 1);
    check_each_batch(a, b, serial, 4, 4, 70, 16, 150);
    for (int threads : {2, 3}) {
      CHECK(bitwise_equal(serial, run_gemm(model, {{"a", a}, {"b", b}}, impl, threads)));
      CHECK(bitwise_equal(serial, run_gemm(model, {{"a", a}, {"b", b}}, impl, threads, *narrow)));
      CHECK(bitwise_equal(serial, run_gemm(model, {{"a", a}, {"b", b}}, impl, threads, *wide)));
    }
  }
}

TEST_CASE("row_order_b_floats_bounds_the_tiles_run_along_c_s_rows") {
  // One task over a 24 x 64 C with K = 16 (two row tiles of 12, two column panels of 32: 1024
  // packed B floats): the tuned bound decides whether the direct-A loop finishes C's rows first
  // (each row stored in one run) or its column panels; the same bits either way.
  const kernels::PackedGemmIsa* isa = kernels::packed_gemm_avx512();
  if (isa == nullptr || !host_runs_gemm("avx512")) return;
  REQUIRE(static_cast<bool>(isa->kernel_direct_a));
  REQUIRE(isa->mr == 12);
  REQUIRE(isa->nr == 32);
  const int64_t m = 24, k = 16, n = 64;
  const Tensor a = random_f32({m, k}, 51), b = random_f32({k, n}, 52);
  std::vector<float> packed(static_cast<std::size_t>(kernels::packed_b_floats(*isa, k, n)) + 64);
  isa->pack_b(b.data<float>(), n, 1, k, n, 0, 2, packed.data());
  struct Run {
    std::vector<std::pair<int64_t, int64_t>> tiles;  // (i, j) in the order the hook saw them
    std::vector<float> c;
  };
  auto run = [&](int64_t row_order_b_floats) {
    kernels::GemmBlocking blocking;
    blocking.row_order_b_floats = row_order_b_floats;
    const kernels::PackedGemmPlan plan = kernels::plan_packed_gemm(*isa, blocking, 1, m, n, k, 1);
    REQUIRE(plan.tasks() == 1);
    Run r;
    r.c.assign(static_cast<std::size_t>(m * n), 0.0f);
    const kernels::PackedGemmOperands operands{kernels::MatrixView{a.data<float>(), k, 1}, packed.data(), r.c.data(),
                                               n};
    const kernels::PackedGemmTileHook hook{
        [](const void* context, int64_t, int64_t i, int64_t j, int, int, float*, int64_t) {
          static_cast<Run*>(const_cast<void*>(context))->tiles.emplace_back(i, j);
        },
        &r};
    kernels::run_packed_gemm_tasks(
        *isa, plan, 0, 1,
        [](const void* context, int64_t) { return static_cast<const kernels::PackedGemmOperands*>(context); },
        &operands, nullptr, &hook);
    return r;
  };
  using Order = std::vector<std::pair<int64_t, int64_t>>;
  const Order along_rows{{0, 0}, {0, 32}, {12, 0}, {12, 32}}, down_columns{{0, 0}, {12, 0}, {0, 32}, {12, 32}};
  const Run by_default = run(kernels::GemmBlocking{}.row_order_b_floats);
  CHECK(by_default.tiles == along_rows);
  CHECK(run(1024).tiles == along_rows);  // the task's B floats exactly at the bound
  const Run below = run(1023);
  CHECK(below.tiles == down_columns);
  CHECK(run(0).tiles == down_columns);
  CHECK(std::memcmp(below.c.data(), by_default.c.data(), below.c.size() * sizeof(float)) == 0);
}

TEST_CASE("row_blocks_split_whole_rows_with_a_in_place_and_whole_panels_with_a_packed") {
  // 128 rows in two row blocks (11 panels of 12, 8 per block): A read in place splits them 64 /
  // 64 (the tiles inside are evened anyway); A packed needs whole panels, 60 / 68. Same bits.
  const kernels::PackedGemmIsa* isa = kernels::packed_gemm_avx512();
  if (isa == nullptr || !host_runs_gemm("avx512")) return;
  REQUIRE(isa->mr == 12);
  const int64_t m = 128, k = 16, n = 32;
  const Tensor a = random_f32({m, k}, 61), b = random_f32({k, n}, 62);
  std::vector<float> a_transposed(static_cast<std::size_t>(m * k));
  for (int64_t i = 0; i < m; ++i)
    for (int64_t kk = 0; kk < k; ++kk) a_transposed[static_cast<std::size_t>(kk * m + i)] = a.data<float>()[i * k + kk];
  std::vector<float> packed(static_cast<std::size_t>(kernels::packed_b_floats(*isa, k, n)) + 64);
  isa->pack_b(b.data<float>(), n, 1, k, n, 0, 1, packed.data());
  struct Run {
    std::vector<std::pair<int64_t, int>> tiles;  // (first row, rows) in the order the hook saw them
    std::vector<float> c;
  };
  auto run = [&](const kernels::MatrixView& view) {
    kernels::GemmBlocking blocking;
    blocking.m = 96;
    const kernels::PackedGemmPlan plan = kernels::plan_packed_gemm(*isa, blocking, 1, m, n, k, 1);
    REQUIRE(plan.row_blocks == 2);
    REQUIRE(plan.tasks() == 2);
    Run r;
    r.c.assign(static_cast<std::size_t>(m * n), 0.0f);
    const kernels::PackedGemmOperands operands{view, packed.data(), r.c.data(), n};
    const kernels::PackedGemmTileHook hook{
        [](const void* context, int64_t, int64_t i, int64_t, int rows, int, float*, int64_t) {
          static_cast<Run*>(const_cast<void*>(context))->tiles.emplace_back(i, rows);
        },
        &r};
    kernels::run_packed_gemm_tasks(
        *isa, plan, 0, plan.tasks(),
        [](const void* context, int64_t) { return static_cast<const kernels::PackedGemmOperands*>(context); },
        &operands, nullptr, &hook);
    return r;
  };
  // Rows covered by the first task's tiles (they come first: one column block).
  auto first_block_rows = [](const Run& r, std::size_t tiles) {
    int64_t rows = 0;
    for (std::size_t t = 0; t < tiles; ++t) rows += r.tiles[t].second;
    return rows;
  };
  const Run in_place = run(kernels::MatrixView{a.data<float>(), k, 1});
  REQUIRE(in_place.tiles.size() == 12);  // 64 rows: six tiles of 10 or 11, per block
  CHECK(first_block_rows(in_place, 6) == 64);
  CHECK(in_place.tiles[6].first == 64);
  const Run packed_a = run(kernels::MatrixView{a_transposed.data(), 1, m});  // col_stride != 1: packed
  REQUIRE(packed_a.tiles.size() == 11);  // five panels, then six (the last one 8 rows)
  CHECK(first_block_rows(packed_a, 5) == 60);
  CHECK(packed_a.tiles[5].first == 60);
  CHECK(std::memcmp(in_place.c.data(), packed_a.c.data(), in_place.c.size() * sizeof(float)) == 0);
}

TEST_CASE("matmul_in_place_b_max_columns_is_tuned_and_names_the_path") {
  // av-shaped [2, 20, 33] x [2, 33, 32]: B read in place up to the tuned width (the profile names
  // the path), packed above it; the same bits both ways.
  const Model model = model_of("(float[2, 20, 33] a, float[2, 33, 32] b) => (float[2, 20, 32] y) { y = MatMul(a, b) }");
  const Tensor a = random_f32({2, 20, 33}, 61), b = random_f32({2, 33, 32}, 62);
  for (const std::string& impl : kSimd) {
    if (!host_runs_gemm(impl)) continue;
    CAPTURE(impl);
    const bool in_place_kernel = impl == "avx512";  // the ISA with a row-pointer micro-kernel
    auto run = [&](int64_t max_columns, std::string& ran) {
      auto registry = std::make_unique<TuningRegistry>();
      std::vector<PublishedProfile> profiles;
      for (const auto& def : cpu_kernel_table().definitions()) {
        if (!is_gemm_f32(def) || def.schema.find("matmul.in_place_b_max_columns") == nullptr) continue;
        TuningValues values = def.schema.defaults();
        values["matmul.in_place_b_max_columns"] = max_columns;
        profiles.push_back({def.schema.key, 1, values});
      }
      registry->publish(std::move(profiles));
      RuntimeSessionOptions options;
      options.parameters = RuntimeParameters(1);
      options.registry = registry.get();
      options.kernels = &table_for(impl);
      options.optimization = OptimizationLevel::none;
      options.profile = true;
      RuntimeSession session(model, options);
      RuntimeContext context;
      context.set("a", a);
      context.set("b", b);
      session.run(context);
      const auto profile = session.profile();
      REQUIRE(profile.nodes.size() == 1);
      ran = profile.nodes[0].implementation;
      return context.get("y");
    };
    std::string at_32, at_16, at_0;
    const Tensor y32 = run(32, at_32);
    CHECK(at_32 == (in_place_kernel ? "in_place_b_gemm_avx512" : impl));
    CHECK(bitwise_equal(run(16, at_16), y32));
    CHECK(at_16 == impl);
    CHECK(bitwise_equal(run(0, at_0), y32));
    CHECK(at_0 == impl);
  }
}

TEST_CASE("batched_narrow_b_read_in_place_matches_the_reference") {
  // B of 16, 48 and 64 columns (multiples of 16, at most 64) is read in place through row
  // pointers; 40 columns is packed. Both against the double reference per batch, bit-identical at
  // 1-3 threads, with a broadcast A batch and B as the last bytes of its tensor (a load past a
  // row's end would leave B; ASan builds run this too).
  for (int64_t n : {16, 40, 48, 64}) {
    CAPTURE(n);
    const int64_t m = 29, k = 70;
    const Tensor a = random_f32({1, 3, m, k}, 31), b = random_f32({2, 3, k, n}, 32);
    const Model model = model_of(fmt::format(
        "(float[1, 3, {0}, {1}] a, float[2, 3, {1}, {2}] b) => (float[2, 3, {0}, {2}] y) {{ y = MatMul(a, b) }}", m, k, n));
    for (const std::string& impl : kSimd) {
      if (!host_runs_gemm(impl)) continue;
      CAPTURE(impl);
      const Tensor serial = run_gemm(model, {{"a", a}, {"b", b}}, impl, 1);
      check_each_batch(a, b, serial, 6, 3, m, k, n);
      for (int threads : {2, 3}) CHECK(bitwise_equal(serial, run_gemm(model, {{"a", a}, {"b", b}}, impl, threads)));
    }
  }
}

TEST_CASE("batched_narrow_b_in_place_follows_b_to_another_address_between_runs") {
  // One session, three runs: B1, then B2 (another live tensor, so another address), then B1 with
  // new values in place. The row pointers kept across runs must follow B; each run matches a
  // fresh session's result bit for bit.
  const int64_t m = 20, k = 33, n = 32;
  const Model model = model_of(fmt::format(
      "(float[2, {0}, {1}] a, float[2, {1}, {2}] b) => (float[2, {0}, {2}] y) {{ y = MatMul(a, b) }}", m, k, n));
  const Tensor a = random_f32({2, m, k}, 41), b1 = random_f32({2, k, n}, 42), b2 = random_f32({2, k, n}, 43);
  for (const std::string& impl : kSimd) {
    if (!host_runs_gemm(impl)) continue;
    CAPTURE(impl);
    RuntimeSessionOptions options;
    options.parameters = RuntimeParameters(2);
    options.registry = &small_blocks();
    options.kernels = &table_for(impl);
    options.optimization = OptimizationLevel::none;
    RuntimeSession session(model, options);
    auto run = [&](const Tensor& b) {
      RuntimeContext context;
      context.set("a", a);
      context.set("b", b);
      session.run(context);
      return context.get("y");
    };
    CHECK(bitwise_equal(run(b1), run_gemm(model, {{"a", a}, {"b", b1}}, impl, 2)));
    CHECK(bitwise_equal(run(b2), run_gemm(model, {{"a", a}, {"b", b2}}, impl, 2)));
    Tensor b3 = b1;  // the same storage, new values
    for (int64_t i = 0; i < b3.element_count(); ++i) b3.data<float>()[i] = 0.5f - b3.data<float>()[i];
    CHECK(bitwise_equal(run(b3), run_gemm(model, {{"a", a}, {"b", b3}}, impl, 2)));
  }
}

TEST_CASE("batched_shared_b_folds_batches") {
  // A [2, 3, M, K] with one B: the batches run as one tall matrix; also B as an initializer.
  const Tensor a = random_f32({2, 3, 10, 17}, 8), b = random_f32({17, 20}, 9);
  const std::string graph = "(float[2, 3, M, K] a, float[K, N] b) => (float[2, 3, M, N] y) { y = MatMul(a, b) }";
  Tensor a2(ElementType::float32, {60, 17});
  std::memcpy(a2.data<float>(), a.data<float>(), 60 * 17 * sizeof(float));
  const GemmReference ref = gemm_reference(a2, b, nullptr, false, false, 1, 0);
  for (const std::string& impl : kSimd) {
    if (!host_runs_gemm(impl)) continue;
    CAPTURE(impl);
    const Tensor y = run_gemm(model_of(graph), {{"a", a}, {"b", b}}, impl, 3);
    check_close(y, ref, "inputs");
    const Tensor yc = run_gemm(with_initializer(model_of(graph), "b", b), {{"a", a}}, impl, 2);
    CHECK(bitwise_equal(y, yc));
  }
}

TEST_CASE("one_dimensional_operands") {
  const Tensor a = random_f32({23}, 10), b = random_f32({23, 40}, 11), v = random_f32({23}, 12);
  for (const std::string& impl : kSimd) {
    if (!host_runs_gemm(impl)) continue;
    CAPTURE(impl);
    const Tensor y = run_gemm(model_of("(float[K] a, float[K, N] b) => (float[N] y) { y = MatMul(a, b) }"),
                         {{"a", a}, {"b", b}}, impl, 2);
    const Tensor p = run_gemm(model_of("(float[K] a, float[K, N] b) => (float[N] y) { y = MatMul(a, b) }"),
                         {{"a", a}, {"b", b}}, "portable", 1);
    REQUIRE(y.shape() == Shape{40});
    for (int64_t j = 0; j < 40; ++j) CHECK(y.data<float>()[j] == doctest::Approx(p.data<float>()[j]).epsilon(1e-5));
    const Tensor yv = run_gemm(model_of("(float[K, N] b, float[N] v) => (float[K] y) { y = MatMul(b, v) }"),
                          {{"b", random_f32({23, 23}, 13)}, {"v", v}}, impl, 2);
    CHECK(yv.shape() == Shape{23});
  }
}

TEST_CASE("transposed_b") {
  check_gemm("(float[M, K] a, float[N, K] b) => (float[M, N] y) { y = Gemm <transB = 1> (a, b) }",
             {{"a", random_f32({13, 70}, 1)}, {"b", random_f32({45, 70}, 2)}}, false, true, 1, 0);
}

TEST_CASE("transposed_a_and_b_constant") {
  check_gemm("(float[K, M] a, float[N, K] b) => (float[M, N] y) { y = Gemm <transA = 1, transB = 1> (a, b) }",
             {{"a", random_f32({70, 15}, 3)}, {"b", random_f32({33, 70}, 4)}}, true, true, 1, 0, "b");
}

TEST_CASE("bias_row_broadcast") {
  check_gemm("(float[M, K] a, float[K, N] b, float[N] c) => (float[M, N] y) { y = Gemm <alpha = 0.5, beta = 2.0> (a, b, c) }",
             {{"a", random_f32({14, 90}, 5)}, {"b", random_f32({90, 37}, 6)}, {"c", random_f32({37}, 7)}}, false, false, 0.5, 2.0);
}

TEST_CASE("bias_column_scalar_and_full") {
  check_gemm("(float[M, K] a, float[K, N] b, float[M, 1] c) => (float[M, N] y) { y = Gemm (a, b, c) }",
             {{"a", random_f32({17, 20}, 5)}, {"b", random_f32({20, 35}, 6)}, {"c", random_f32({17, 1}, 7)}}, false, false, 1, 1);
  check_gemm("(float[M, K] a, float[K, N] b, float[1] c) => (float[M, N] y) { y = Gemm <beta = -1.5> (a, b, c) }",
             {{"a", random_f32({5, 20}, 5)}, {"b", random_f32({20, 3}, 6)}, {"c", random_f32({1}, 7)}}, false, false, 1, -1.5);
  check_gemm("(float[M, K] a, float[K, N] b, float[M, N] c) => (float[M, N] y) { y = Gemm <alpha = -2.0> (a, b, c) }",
             {{"a", random_f32({26, 130}, 5)}, {"b", random_f32({130, 50}, 6)}, {"c", random_f32({26, 50}, 7)}}, false, false, -2, 1);
}

TEST_CASE("constant_weights_mlp") {
  // The MLP shape class: Gemm + Relu + Gemm with weights and biases as initializers.
  const std::string graph =
      "(float[B, I] x, float[I, H] w1, float[H] b1, float[H, O] w2, float[O] b2) => (float[B, O] y) "
      "{ h = Gemm(x, w1, b1)\n r = Relu(h)\n y = Gemm(r, w2, b2) }";
  const Tensor x = random_f32({20, 48}, 1), w1 = random_f32({48, 70}, 2), b1 = random_f32({70}, 3), w2 = random_f32({70, 30}, 4),
               b2 = random_f32({30}, 5);
  Model model = model_of(graph);
  model = with_initializer(model, "w1", w1);
  model = with_initializer(model, "b1", b1);
  model = with_initializer(model, "w2", w2);
  model = with_initializer(model, "b2", b2);
  const Tensor portable = run_gemm(model, {{"x", x}}, "portable", 1);
  for (const std::string& impl : kSimd) {
    if (!host_runs_gemm(impl)) continue;
    CAPTURE(impl);
    const Tensor y = run_gemm(model, {{"x", x}}, impl, 1);
    for (int64_t i = 0; i < y.element_count(); ++i)
      CHECK(y.data<float>()[i] == doctest::Approx(portable.data<float>()[i]).epsilon(1e-4));
    for (int threads = 2; threads <= 4; ++threads) CHECK(bitwise_equal(y, run_gemm(model, {{"x", x}}, impl, threads)));
  }
}

TEST_CASE("default_tuning_runs_the_simd_kernel") {
  // Without a published profile (portable defaults of the avx schemas) results match small blocks.
  const Model model = model_of("(float[M, K] a, float[K, N] b) => (float[M, N] y) { y = MatMul(a, b) }");
  const GemmInputs inputs{{"a", random_f32({100, 300}, 3)}, {"b", random_f32({300, 260}, 4)}};
  for (const std::string& impl : kSimd) {
    if (!host_runs_gemm(impl)) continue;
    TuningRegistry empty;
    CHECK(bitwise_equal(run_gemm(model, inputs, impl, 2, empty), run_gemm(model, inputs, impl, 1)));
  }
}

// ---- Relu fused into the GEMM epilogue ----

TEST_CASE("relu_after_gemm_fused_bit_identical") {
  // Gemm + Relu + Gemm + Relu (the last Relu's output is the graph output), MatMul + Relu, with
  // NaN and signed zeros in the products: fused and separate Relu give the same bits.
  const std::string graph =
      "(float[B, I] x, float[I, H] w1, float[H] b1, float[H, O] w2, float[O] b2) => (float[B, O] y) "
      "{ h = Gemm(x, w1, b1)\n r = Relu(h)\n g = Gemm(r, w2, b2)\n y = Relu(g) }";
  Tensor x = random_f32({29, 40}, 1);
  x.data<float>()[3] = std::numeric_limits<float>::quiet_NaN();  // row 0 of h is NaN throughout
  Tensor b1 = random_f32({70}, 3);
  b1.data<float>()[5] = -0.0f;
  const GemmInputs inputs{{"x", x}, {"w1", random_f32({40, 70}, 2)}, {"b1", b1}, {"w2", random_f32({70, 33}, 4)},
                      {"b2", random_f32({33}, 5)}};
  const Model matmul = model_of("(float[M, K] a, float[K, N] b) => (float[M, N] y) { p = MatMul(a, b)\n y = Relu(p) }");
  const GemmInputs matmul_inputs{{"a", random_f32({17, 9}, 6)}, {"b", random_f32({9, 50}, 7)}};
  for (const std::string& impl : kSimd) {
    if (!host_runs_gemm(impl)) continue;
    CAPTURE(impl);
    for (int threads : {1, 3}) {
      const SessionRun fused = run_session(model_of(graph), inputs, impl, threads, small_blocks(), true);
      const SessionRun separate = run_session(model_of(graph), inputs, impl, threads, small_blocks(), false);
      CHECK(fused.steps.size() == 2);
      CHECK(separate.steps.size() == 4);
      REQUIRE_FALSE(fused.steps.empty());
      CHECK(fused.steps[0].find("Relu node") != std::string::npos);
      CHECK(bitwise_equal(fused.y, separate.y));
      CHECK(std::isnan(fused.y.data<float>()[0]));
      const SessionRun fused_matmul = run_session(matmul, matmul_inputs, impl, threads, small_blocks(), true);
      CHECK(fused_matmul.steps.size() == 1);
      CHECK(bitwise_equal(fused_matmul.y, run_session(matmul, matmul_inputs, impl, threads, small_blocks(), false).y));
    }
  }
}

TEST_CASE("relu_not_fused_when_the_product_has_other_readers") {
  // h is a graph output too; p feeds Relu and Add: both products must stay as they are.
  const Model seen = model_of(
      "(float[M, K] a, float[K, N] b) => (float[M, N] y, float[M, N] h) { h = MatMul(a, b)\n y = Relu(h) }");
  const Model shared = model_of(
      "(float[M, K] a, float[K, N] b) => (float[M, N] y) { p = MatMul(a, b)\n r = Relu(p)\n y = Add(r, p) }");
  const GemmInputs inputs{{"a", random_f32({10, 12}, 1)}, {"b", random_f32({12, 20}, 2)}};
  for (const std::string& impl : kSimd) {
    if (!host_runs_gemm(impl)) continue;
    CAPTURE(impl);
    RuntimeSessionOptions options;
    options.registry = &small_blocks();
    options.kernels = &table_for(impl);
    RuntimeSession session(seen, options);
    RuntimeContext context;
    for (const auto& [name, t] : inputs) context.set(name, t);
    session.run(context);
    CHECK(session.resolved_tuning().size() == 2);
    const Tensor& h = context.get("h");
    bool has_negative = false;
    for (int64_t i = 0; i < h.element_count(); ++i) has_negative |= h.data<float>()[i] < 0;
    CHECK(has_negative);  // h is the raw product, not Relu(h)
    const SessionRun s = run_session(shared, inputs, impl, 1, small_blocks(), true);
    CHECK(s.steps.size() == 3);
    CHECK(bitwise_equal(s.y, run_session(shared, inputs, impl, 1, small_blocks(), false).y));
  }
}

TEST_CASE("portable_gemm_keeps_its_relu_node") {
  const Model model = model_of("(float[M, K] a, float[K, N] b) => (float[M, N] y) { p = MatMul(a, b)\n y = Relu(p) }");
  const SessionRun s = run_session(model, {{"a", random_f32({5, 6}, 1)}, {"b", random_f32({6, 7}, 2)}}, "portable", 1,
                                   small_blocks(), true);
  CHECK(s.steps.size() == 2);
}

TEST_CASE("shape_change_between_runs_replans") {
  // MatMul and Gemm keep what the input shapes decide between runs; a new shape (or a new C
  // shape) must be planned again, and the old one again after it.
  const Model matmul = model_of("(float[M, K] a, float[K, N] b) => (float[M, N] y) { y = MatMul(a, b) }");
  const Model gemm =
      model_of("(float[M, K] a, float[K, N] b, float[C0, C1] c) => (float[M, N] y) { y = Gemm <beta = 2.0> (a, b, c) }");
  for (const std::string impl : {"portable", "avx2", "avx512"}) {
    if (impl != "portable" && !host_runs_gemm(impl)) continue;
    CAPTURE(impl);
    RuntimeSessionOptions options;
    options.registry = &small_blocks();
    options.kernels = &table_for(impl);
    RuntimeSession mm(matmul, options), gm(gemm, options);
    for (const auto& [m, k, n] : std::vector<std::array<int64_t, 3>>{{10, 20, 30}, {5, 20, 7}, {3, 1, 40}, {10, 20, 30}}) {
      const int64_t rows = m, columns = n;  // CAPTURE's lambda cannot take a structured binding on clang 14
      CAPTURE(rows);
      CAPTURE(columns);
      const Tensor a = random_f32({m, k}, 1), b = random_f32({k, n}, 2);
      RuntimeContext context;
      context.set("a", a);
      context.set("b", b);
      mm.run(context);
      check_close(context.get("y"), gemm_reference(a, b, nullptr, false, false, 1, 0), "MatMul");
      for (const Shape& c_shape : {Shape{1, n}, Shape{m, 1}, Shape{m, n}}) {
        const Tensor c = random_f32(c_shape, 3);
        context.set("c", c);
        gm.run(context);
        check_close(context.get("y"), gemm_reference(a, b, &c, false, false, 1, 2), "Gemm");
      }
    }
  }
}
