// Kernel families: results are bit-identical across 1..4 threads at sizes around block and tile
// edges (every threshold at 1 and the smallest tiles, so that the parallel paths run), plus the
// behaviours the ONNX node tests do not pin down (run-time shape inputs, rejected attributes,
// saturating casts).
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "onnx_light/runtime/calibration_workload.h"
#include "onnx_light/runtime/error.h"
#include "onnx_light/runtime/kernel_table.h"
#include "onnx_light/runtime/session.h"
#include "onnx_light/runtime/tuning_registry.h"
#include "test_models.h"

using namespace onnx_light;
using namespace onnx_light::runtime;

namespace {

using Inputs = std::vector<std::pair<std::string, Tensor>>;

struct Case {
  std::string name;
  std::string graph;  // "(inputs) => (outputs) { nodes }", opset 17
  std::vector<int64_t> sizes;
  std::function<Inputs(int64_t n, uint32_t seed)> inputs;
};

Tensor random(ElementType type, const Shape& shape, uint32_t seed) { return random_tensor(type, shape, seed); }

Tensor int64_vector(const std::vector<int64_t>& values) {
  Tensor t(ElementType::int64, {static_cast<int64_t>(values.size())});
  std::copy(values.begin(), values.end(), t.data<int64_t>());
  return t;
}

// Thresholds at 1 and tiles at their smallest allowed value, for every thread count used here.
TuningRegistry& eager_registry() {
  static TuningRegistry registry;
  static const bool published = [] {
    std::vector<PublishedProfile> profiles;
    for (const auto& def : cpu_kernel_table().definitions()) {
      TuningValues values = def.schema.defaults();
      for (const auto& spec : def.schema.parameters) {
        if (spec.role == ParameterRole::threshold) values[spec.name] = int64_t{1};
        if (spec.role == ParameterRole::tile && !spec.allowed.empty()) {
          int64_t smallest = std::numeric_limits<int64_t>::max();
          for (const auto& a : spec.allowed) smallest = std::min(smallest, std::get<int64_t>(a));
          values[spec.name] = smallest;
        }
      }
      for (int threads = 1; threads <= 4; ++threads) profiles.push_back({def.schema.key, threads, values});
    }
    registry.publish(std::move(profiles));
    return true;
  }();
  (void)published;
  return registry;
}

struct RunResult {
  std::map<std::string, Tensor> outputs;
  int max_admitted = 0;
};

RunResult run_eager(const Model& model, const Inputs& inputs, int threads) {
  RuntimeSessionOptions options;
  options.parameters = RuntimeParameters(threads);
  options.registry = &eager_registry();
  options.parallel_region_collector = std::make_shared<ParallelRegionCollector>(256);
  RuntimeSession session(model, options);
  RuntimeContext context;
  for (const auto& [name, t] : inputs) context.set(name, t);
  session.run(context);
  RunResult result;
  for (const auto& out : session.outputs()) result.outputs[out.name] = context.get(out.name);
  for (const auto& e : session.parallel_region_report().events) result.max_admitted = std::max(result.max_admitted, e.admitted_threads);
  return result;
}

Model kernels_model(const std::string& graph) {
  return test::parse("<ir_version: 8, opset_import: [\"\" : 17]>\nkernels " + graph);
}

// Elementwise grains are 64-byte cache lines (16 floats); sizes straddle 1, 2, 3 and 4 blocks.
const std::vector<int64_t> kElementSizes{1, 2, 15, 16, 17, 47, 48, 49, 63, 64, 65, 127, 129, 1000, 4099};
// Small dims around the smallest tiles (8 rows, 16 columns, 16 deep).
const std::vector<int64_t> kTileSizes{1, 7, 8, 9, 15, 16, 17, 33};
const std::vector<int64_t> kRowSizes{1, 2, 3, 4, 5, 7, 8, 9, 31, 65};

std::vector<Case> cases() {
  const auto f = ElementType::float32;
  std::vector<Case> c;
  // unary.cc
  c.push_back({"Sigmoid", "(float[N] x) => (float[N] y) { y = Sigmoid(x) }", kElementSizes,
               [=](int64_t n, uint32_t s) { return Inputs{{"x", random(f, {n}, s)}}; }});
  c.push_back({"Clip with bound inputs (int32)", "(int32[N] x, int32 lo, int32 hi) => (int32[N] y) { y = Clip(x, lo, hi) }",
               kElementSizes, [](int64_t n, uint32_t s) {
                 Tensor lo(ElementType::int32, {}), hi(ElementType::int32, {});
                 *lo.data<int32_t>() = -20;
                 *hi.data<int32_t>() = 30;
                 return Inputs{{"x", random(ElementType::int32, {n}, s)}, {"lo", lo}, {"hi", hi}};
               }});
  c.push_back({"LeakyRelu float16", "(float16[N] x) => (float16[N] y) { y = LeakyRelu <alpha = 0.1> (x) }", kElementSizes,
               [](int64_t n, uint32_t s) { return Inputs{{"x", random(ElementType::float16, {n}, s)}}; }});
  // binary.cc, comparison_logic.cc
  c.push_back({"Add broadcast rows", "(float[R, C] a, float[C] b) => (float[R, C] y) { y = Add(a, b) }", kRowSizes,
               [=](int64_t n, uint32_t s) { return Inputs{{"a", random(f, {n, 37}, s)}, {"b", random(f, {37}, s + 1)}}; }});
  c.push_back({"Pow float^int32", "(float[N] a, int32[N] b) => (float[N] y) { y = Pow(a, b) }", kElementSizes,
               [=](int64_t n, uint32_t s) { return Inputs{{"a", random(f, {n}, s)}, {"b", random(ElementType::int32, {n}, s + 1)}}; }});
  c.push_back({"Mod int64", "(int64[N] a, int64[N] b) => (int64[N] y) { y = Mod(a, b) }", kElementSizes,
               [](int64_t n, uint32_t s) {
                 Tensor b = random(ElementType::int64, {n}, s + 1);
                 for (int64_t i = 0; i < n; ++i)
                   if (b.data<int64_t>()[i] == 0) b.data<int64_t>()[i] = 3;
                 return Inputs{{"a", random(ElementType::int64, {n}, s)}, {"b", b}};
               }});
  c.push_back({"LessOrEqual broadcast", "(float[R, 1] a, float[1, C] b) => (bool[R, C] y) { y = LessOrEqual(a, b) }",
               kRowSizes, [=](int64_t n, uint32_t s) { return Inputs{{"a", random(f, {n, 1}, s)}, {"b", random(f, {1, 23}, s + 1)}}; }});
  // variadic.cc
  c.push_back({"Sum of three broadcast",
               "(float[R, 1] a, float[1, C] b, float[R, C] c) => (float[R, C] y) { y = Sum(a, b, c) }", kRowSizes,
               [=](int64_t n, uint32_t s) {
                 return Inputs{{"a", random(f, {n, 1}, s)}, {"b", random(f, {1, 19}, s + 1)}, {"c", random(f, {n, 19}, s + 2)}};
               }});
  c.push_back({"Where", "(bool[R, C] c, float[R, C] x, float[C] z) => (float[R, C] y) { y = Where(c, x, z) }", kRowSizes,
               [=](int64_t n, uint32_t s) {
                 return Inputs{{"c", random(ElementType::boolean, {n, 21}, s)}, {"x", random(f, {n, 21}, s + 1)},
                               {"z", random(f, {21}, s + 2)}};
               }});
  // matmul_gemm.cc
  c.push_back({"MatMul batched", "(float[2, M, K] a, float[K, N] b) => (float[2, M, N] y) { y = MatMul(a, b) }",
               kTileSizes, [=](int64_t n, uint32_t s) {
                 return Inputs{{"a", random(f, {2, n, n + 3}, s)}, {"b", random(f, {n + 3, 2 * n + 1}, s + 1)}};
               }});
  c.push_back({"Gemm transB bias", "(float[M, K] a, float[N, K] b, float[N] c) => (float[M, N] y) "
               "{ y = Gemm <transB = 1, alpha = 0.5, beta = 2.0> (a, b, c) }",
               kTileSizes, [=](int64_t n, uint32_t s) {
                 return Inputs{{"a", random(f, {n, 2 * n + 5}, s)}, {"b", random(f, {n + 9, 2 * n + 5}, s + 1)},
                               {"c", random(f, {n + 9}, s + 2)}};
               }});
  c.push_back({"MatMul int64", "(int64[M, K] a, int64[K, N] b) => (int64[M, N] y) { y = MatMul(a, b) }", kTileSizes,
               [](int64_t n, uint32_t s) {
                 return Inputs{{"a", random(ElementType::int64, {n, 17}, s)}, {"b", random(ElementType::int64, {17, n + 16}, s + 1)}};
               }});
  // conv_pool.cc
  c.push_back({"Conv grouped strided", "(float[1, 4, H, W] x, float[6, 2, 3, 3] w, float[6] b) => (float[1, 6, P, Q] y) "
               "{ y = Conv <group = 2, pads = [1, 0, 1, 2], strides = [2, 1]> (x, w, b) }",
               {3, 4, 5, 8, 9, 17}, [=](int64_t n, uint32_t s) {
                 return Inputs{{"x", random(f, {1, 4, n, n + 1}, s)}, {"w", random(f, {6, 2, 3, 3}, s + 1)},
                               {"b", random(f, {6}, s + 2)}};
               }});
  c.push_back({"MaxPool with indices", "(float[N, C, H, W] x) => (float[N, C, P, Q] y, int64[N, C, P, Q] i) "
               "{ y, i = MaxPool <kernel_shape = [3, 2], pads = [1, 1, 1, 0], strides = [2, 1], ceil_mode = 1> (x) }",
               {3, 4, 5, 9, 16}, [=](int64_t n, uint32_t s) { return Inputs{{"x", random(f, {2, 3, n, n + 2}, s)}}; }});
  c.push_back({"AveragePool include pad", "(float[N, C, H, W] x) => (float[N, C, P, Q] y) "
               "{ y = AveragePool <kernel_shape = [2, 3], pads = [1, 1, 1, 1], count_include_pad = 1> (x) }",
               {2, 3, 5, 9, 16}, [=](int64_t n, uint32_t s) { return Inputs{{"x", random(f, {2, 3, n, n}, s)}}; }});
  // normalization.cc, softmax.cc
  c.push_back({"BatchNormalization", "(float[N, C, H] x, float[C] g, float[C] b, float[C] m, float[C] v) => (float[N, C, H] y) "
               "{ y = BatchNormalization <epsilon = 0.01> (x, g, b, m, v) }",
               kRowSizes, [=](int64_t n, uint32_t s) {
                 Tensor v = random(f, {5}, s + 4);
                 for (int i = 0; i < 5; ++i) v.data<float>()[i] = std::fabs(v.data<float>()[i]);
                 return Inputs{{"x", random(f, {n, 5, 7}, s)}, {"g", random(f, {5}, s + 1)}, {"b", random(f, {5}, s + 2)},
                               {"m", random(f, {5}, s + 3)}, {"v", v}};
               }});
  c.push_back({"LayerNormalization", "(float[R, C] x, float[C] g, float[C] b) => (float[R, C] y, float[R, 1] m, float[R, 1] d) "
               "{ y, m, d = LayerNormalization (x, g, b) }",
               kRowSizes, [=](int64_t n, uint32_t s) {
                 return Inputs{{"x", random(f, {n, 33}, s)}, {"g", random(f, {33}, s + 1)}, {"b", random(f, {33}, s + 2)}};
               }});
  c.push_back({"Softmax middle axis", "(float[R, C, I] x) => (float[R, C, I] y) { y = Softmax <axis = 1> (x) }", kRowSizes,
               [=](int64_t n, uint32_t s) { return Inputs{{"x", random(f, {n, 6, 70}, s)}}; }});
  c.push_back({"LogSoftmax last axis", "(float[R, C] x) => (float[R, C] y) { y = LogSoftmax (x) }", kRowSizes,
               [=](int64_t n, uint32_t s) { return Inputs{{"x", random(f, {n, 29}, s)}}; }});
  // reduce.cc
  c.push_back({"ReduceSum columns", "(float[R, C] x, int64[1] axes) => (float[1, C] y) { y = ReduceSum (x, axes) }", kRowSizes,
               [=](int64_t n, uint32_t s) { return Inputs{{"x", random(f, {n, 300}, s)}, {"axes", int64_vector({0})}}; }});
  c.push_back({"ReduceMean rows", "(float[R, C, D] x) => (float[R] y) { y = ReduceMean <axes = [1, 2], keepdims = 0> (x) }",
               kRowSizes, [=](int64_t n, uint32_t s) { return Inputs{{"x", random(f, {3 * n, 7, 5}, s)}}; }});
  c.push_back({"ReduceLogSumExp middle", "(double[R, C, D] x) => (double[R, 1, D] y) { y = ReduceLogSumExp <axes = [1]> (x) }",
               kRowSizes, [](int64_t n, uint32_t s) { return Inputs{{"x", random(ElementType::float64, {n, 9, 40}, s)}}; }});
  c.push_back({"ArgMax", "(float[R, C] x) => (int64[R, 1] y) { y = ArgMax <axis = 1> (x) }", kRowSizes,
               [=](int64_t n, uint32_t s) { return Inputs{{"x", random(f, {n * 17, 11}, s)}}; }});
  c.push_back({"GlobalAveragePool", "(float[N, C, H, W] x) => (float[N, C, 1, 1] y) { y = GlobalAveragePool (x) }", kRowSizes,
               [=](int64_t n, uint32_t s) { return Inputs{{"x", random(f, {2, n * 9, 5, 3}, s)}}; }});
  // shape_ops.cc, data_movement.cc, cast.cc
  c.push_back({"Transpose 3-D", "(float[A, B, C] x) => (float[C, A, B] y) { y = Transpose <perm = [2, 0, 1]> (x) }",
               kRowSizes, [=](int64_t n, uint32_t s) { return Inputs{{"x", random(f, {n, 13, 9}, s)}}; }});
  c.push_back({"Slice negative steps", "(float[R, C] x, int64[2] st, int64[2] en, int64[2] ax, int64[2] sp) => (float[P, Q] y) "
               "{ y = Slice(x, st, en, ax, sp) }",
               kRowSizes, [=](int64_t n, uint32_t s) {
                 return Inputs{{"x", random(f, {n + 2, 50}, s)}, {"st", int64_vector({-1, 3})}, {"en", int64_vector({-1000, 49})},
                               {"ax", int64_vector({0, 1})}, {"sp", int64_vector({-1, 2})}};
               }});
  c.push_back({"Concat and Split", "(float[R, A] a, float[R, B] b, int64[3] parts) => (float[R, P] p, float[R, Q] q, float[R, S] r) "
               "{ c = Concat <axis = 1> (a, b)  p, q, r = Split <axis = 1> (c, parts) }",
               kRowSizes, [=](int64_t n, uint32_t s) {
                 return Inputs{{"a", random(f, {n, 10}, s)}, {"b", random(f, {n, 7}, s + 1)}, {"parts", int64_vector({5, 9, 3})}};
               }});
  c.push_back({"Gather", "(float[R, C] x, int64[I] i) => (float[I, C] y) { y = Gather <axis = 0> (x, i) }", kRowSizes,
               [=](int64_t n, uint32_t s) {
                 std::vector<int64_t> index;
                 for (int64_t k = 0; k < 3 * n; ++k) index.push_back((k * 5) % n - (k % 2 == 0 ? 0 : n));
                 return Inputs{{"x", random(f, {n, 40}, s)}, {"i", int64_vector(index)}};
               }});
  c.push_back({"Expand and Tile", "(float[1, C] x, int64[2] shape, int64[2] reps) => (float[R, C] e, float[R, T] t) "
               "{ e = Expand(x, shape)  t = Tile(e, reps) }",
               kRowSizes, [=](int64_t n, uint32_t s) {
                 return Inputs{{"x", random(f, {1, 31}, s)}, {"shape", int64_vector({n, 31})}, {"reps", int64_vector({2, 3})}};
               }});
  c.push_back({"Reshape from computed shape", "(float[R, C] x) => (float[C, R] y) "
               "{ s = Shape(x)  r = Slice(s, zero, one)  k = Slice(s, one, two)  t = Concat <axis = 0> (k, r)  y = Reshape(x, t) }",
               kRowSizes, [=](int64_t n, uint32_t s) {
                 (void)s;
                 return Inputs{{"x", random(f, {n, 21}, s)}};
               }});
  c.push_back({"Cast double to float16 and int32", "(double[N] x) => (float16[N] h, int32[N] i) "
               "{ h = Cast <to = 10> (x)  i = Cast <to = 6> (x) }",
               kElementSizes, [](int64_t n, uint32_t s) {
                 Tensor x = random(ElementType::float64, {n}, s);
                 for (int64_t i = 0; i < n; ++i) x.data<double>()[i] *= 1e5;
                 return Inputs{{"x", x}};
               }});
  // Extras: Pad, DepthToSpace, CumSum, InstanceNormalization.
  c.push_back({"Pad reflect", "(float[R, C] x, int64[4] p) => (float[S, T] y) { y = Pad <mode = \"reflect\"> (x, p) }",
               kRowSizes, [=](int64_t n, uint32_t s) {
                 return Inputs{{"x", random(f, {n + 1, 30}, s)}, {"p", int64_vector({1, 3, 0, 4})}};
               }});
  c.push_back({"DepthToSpace CRD", "(float[N, C, H, W] x) => (float[N, D, P, Q] y) "
               "{ y = DepthToSpace <blocksize = 2, mode = \"CRD\"> (x) }",
               kRowSizes, [=](int64_t n, uint32_t s) { return Inputs{{"x", random(f, {2, 8, n, 5}, s)}}; }});
  c.push_back({"CumSum reverse exclusive", "(float[R, C, D] x, int32 a) => (float[R, C, D] y) "
               "{ y = CumSum <reverse = 1, exclusive = 1> (x, a) }",
               kRowSizes, [=](int64_t n, uint32_t s) {
                 Tensor axis(ElementType::int32, {});
                 *axis.data<int32_t>() = 1;
                 return Inputs{{"x", random(f, {n, 11, 70}, s)}, {"a", axis}};
               }});
  c.push_back({"InstanceNormalization", "(float[N, C, H] x, float[C] g, float[C] b) => (float[N, C, H] y) "
               "{ y = InstanceNormalization (x, g, b) }",
               kRowSizes, [=](int64_t n, uint32_t s) {
                 return Inputs{{"x", random(f, {n, 3, 40}, s)}, {"g", random(f, {3}, s + 1)}, {"b", random(f, {3}, s + 2)}};
               }});
  return c;
}

}  // namespace

TEST_CASE("every_kernel_family_is_bit_identical_across_1_to_4_threads") {
  for (Case& c : cases()) {
    std::string graph = c.graph;
    // The computed-shape case needs its constant slice bounds as initializer-free Constants.
    if (c.name == "Reshape from computed shape")
      graph.replace(graph.find("{ ") + 2, 0,
                    "zero = Constant <value = int64[1] {0}> ()  one = Constant <value = int64[1] {1}> ()  "
                    "two = Constant <value = int64[1] {2}> ()  ");
    const Model model = kernels_model(graph);
    int largest_admitted = 0;
    for (int64_t n : c.sizes) {
      CAPTURE(c.name);
      CAPTURE(n);
      const Inputs inputs = c.inputs(n, static_cast<uint32_t>(n * 7 + 1));
      const RunResult serial = run_eager(model, inputs, 1);
      REQUIRE(!serial.outputs.empty());
      for (int threads = 2; threads <= 4; ++threads) {
        CAPTURE(threads);
        const RunResult parallel = run_eager(model, inputs, threads);
        largest_admitted = std::max(largest_admitted, parallel.max_admitted);
        for (const auto& [name, expected] : serial.outputs) {
          const std::string output = name;  // CAPTURE's lambda cannot take a structured binding on clang 14
          CAPTURE(output);
          CHECK(bitwise_equal(expected, parallel.outputs.at(name)));
        }
      }
    }
    // Not vacuous: the largest sizes really ran on several threads.
    CAPTURE(c.name);
    CHECK(largest_admitted > 1);
  }
}

TEST_CASE("tile_sizes_do_not_change_portable_gemm_results") {
  // Every output element accumulates k in ascending order whatever the tiling. The portable float32
  // MatMul is forced through a table without the SIMD ones (gemm_simd_test covers those).
  const Model model = kernels_model("(float[M, K] a, float[K, N] b) => (float[M, N] y) { y = MatMul(a, b) }");
  const Inputs inputs{{"a", random(ElementType::float32, {37, 300}, 3)}, {"b", random(ElementType::float32, {300, 41}, 4)}};
  KernelTable portable_only;
  const KernelDef* def = nullptr;
  for (const auto& d : cpu_kernel_table().definitions()) {
    const bool simd_matmul = d.op_type == "MatMul" && d.implementation != "portable";
    if (!simd_matmul) portable_only.add(d);
  }
  def = portable_only.choose("", "MatMul", 17, ElementType::float32, host_cpu_features()).def;
  REQUIRE(def != nullptr);
  REQUIRE(def->implementation == "portable");
  std::vector<Tensor> results;
  for (int64_t tile : {16, 64, 256}) {  // each within the allowed sets of m, n = 2 * tile and k
    TuningRegistry registry;
    TuningValues values = def->schema.defaults();
    values["gemm.tile_m"] = tile;
    values["gemm.tile_n"] = tile * 2;
    values["gemm.tile_k"] = tile;
    values["parallel.minimum_macs"] = int64_t{1};
    registry.publish({{def->schema.key, 2, values}});
    RuntimeSessionOptions options;
    options.parameters = RuntimeParameters(2);
    options.registry = &registry;
    options.kernels = &portable_only;
    RuntimeSession session(model, options);
    RuntimeContext context;
    for (const auto& [name, t] : inputs) context.set(name, t);
    session.run(context);
    // The tiles were really applied (an invalid profile would silently fall back to defaults).
    REQUIRE(session.resolved_tuning()[0].source == TuningSource::published_profile);
    CHECK(std::get<int64_t>(session.resolved_tuning()[0].values.at("gemm.tile_k")) == tile);
    results.push_back(context.get("y"));
  }
  CHECK(bitwise_equal(results[0], results[1]));
  CHECK(bitwise_equal(results[0], results[2]));
}

TEST_CASE("unsupported_attributes_are_rejected_at_creation_naming_node_and_attribute") {
  // An attribute the operator does not have at all breaks the ONNX schema (ModelError at load);
  // one it has with a value the kernel does not implement is an UnsupportedError.
  auto message = [](const std::string& graph) -> std::string {
    try {
      RuntimeSession session(kernels_model(graph));
    } catch (const ModelError& e) {
      return std::string("ModelError: ") + e.what();
    } catch (const UnsupportedError& e) {
      return std::string("UnsupportedError: ") + e.what();
    }
    return "<created>";
  };
  const std::string conv = message("(float[1, 1, 4, 4] x, float[1, 1, 2, 2] w) => (float[1, 1, 3, 3] y) "
                                   "{ y = Conv <bogus = 1> (x, w) }");
  CHECK(conv.starts_with("ModelError: "));
  CHECK(conv.find("Conv node") != std::string::npos);
  CHECK(conv.find("Unrecognized attribute: bogus") != std::string::npos);
  const std::string bn = message("(float[1, 2] x, float[2] s, float[2] b, float[2] m, float[2] v) => (float[1, 2] y, "
                                 "float[2] rm, float[2] rv) { y, rm, rv = BatchNormalization (x, s, b, m, v) }");
  CHECK(bn.starts_with("UnsupportedError: "));
  CHECK(bn.find("outputs beyond Y are training statistics") != std::string::npos);
  const std::string abs = message("(float[2] x) => (float[2] y) { y = Abs <alpha = 1.0> (x) }");
  CHECK(abs.starts_with("ModelError: "));
  CHECK(abs.find("Unrecognized attribute: alpha") != std::string::npos);
}

TEST_CASE("shape_inputs_are_read_at_run_time") {
  // Reshape's target comes from a graph input, so it may change from run to run.
  const Model model = kernels_model("(float[N] x, int64[2] s) => (float[A, B] y) { y = Reshape(x, s) }");
  RuntimeSession session(model);
  for (const auto& shape : std::vector<std::vector<int64_t>>{{2, 6}, {4, -1}, {0, 12}}) {
    RuntimeContext context;
    context.set("x", random(ElementType::float32, {12}, 1));
    context.set("s", int64_vector(shape));
    if (shape[0] == 0) {
      CHECK_THROWS_AS(session.run(context), InputError);  // 0 copies a missing dim of a 1-D input
      continue;
    }
    session.run(context);
    CHECK(context.get("y").shape() == Shape{shape[0], 12 / shape[0]});
  }
}

TEST_CASE("float_to_integer_cast_saturates_and_maps_nan_to_zero") {
  const Model model = kernels_model("(float[5] x) => (int8[5] y, bool[5] b) { y = Cast <to = 3> (x)  b = Cast <to = 9> (x) }");
  RuntimeSession session(model);
  RuntimeContext context;
  Tensor x(ElementType::float32, {5});
  const float values[] = {1000.0f, -1000.0f, std::numeric_limits<float>::quiet_NaN(), -2.7f, 0.0f};
  std::memcpy(x.data<float>(), values, sizeof values);
  context.set("x", x);
  session.run(context);
  const int8_t* y = context.get("y").data<int8_t>();
  CHECK(y[0] == 127);
  CHECK(y[1] == -128);
  CHECK(y[2] == 0);
  CHECK(y[3] == -2);
  const bool* b = context.get("b").data<bool>();
  CHECK(b[2]);  // NaN is true, as in numpy
  CHECK_FALSE(b[4]);
}

TEST_CASE("double_to_float16_rounds_once") {
  // 1 + 2^-11 + 2^-30 lies just above the midpoint between two halves: rounding through float
  // first would land on the midpoint and round to even (down); one rounding goes up.
  const Model model = kernels_model("(double[1] x) => (float16[1] y) { y = Cast <to = 10> (x) }");
  RuntimeSession session(model);
  RuntimeContext context;
  Tensor x(ElementType::float64, {1});
  x.data<double>()[0] = 1.0 + std::ldexp(1.0, -11) + std::ldexp(1.0, -30);
  context.set("x", x);
  session.run(context);
  CHECK(context.get("y").data<uint16_t>()[0] == 0x3c01);
}

TEST_CASE("every_calibration_workload_of_the_kernel_table_builds_and_runs") {
  // The calibration engine times these one-node models; each must load, create and run.
  int checked = 0;
  for (const auto& def : cpu_kernel_table().definitions()) {
    if (!def.calibration_workload) continue;
    for (int variant = 0; variant < def.calibration_variants; ++variant) {
      CAPTURE(def.schema.key.to_string());
      CAPTURE(variant);
      const CalibrationWorkload w = def.calibration_workload(300, variant, 7);
      CAPTURE(w.model_text);
      CHECK(w.work_size > 0);
      try {
        RuntimeSession session(test::parse(w.model_text));
        RuntimeContext context;
        for (const auto& [name, t] : w.inputs) context.set(name, t);
        session.run(context);
        ++checked;
      } catch (const Error& e) {
        FAIL_CHECK(e.what());
      }
    }
  }
  CHECK(checked > 100);
}
