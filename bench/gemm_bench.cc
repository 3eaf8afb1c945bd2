// MatMul 256 / 1024, the peer MLP (64x512 -> 1024 -> 256, Gemm + Relu + Gemm with weights as
// initializers) and a 3x3 Conv per GEMM implementation (portable, avx2, avx512) and thread count, through a
// session whose kernel table holds only that implementation for MatMul/Gemm float32.
// BM_Blocks explores gemm.block_m/k/n of one implementation. Figures belong in bench/RESULTS.md.
#include <benchmark/benchmark.h>

#include <map>
#include <memory>
#include <string>

#include <fmt/format.h>

#include "onnx_light/runtime/calibration_workload.h"
#include "onnx_light/runtime/cpu_features.h"
#include "onnx_light/runtime/kernel_table.h"
#include "onnx_light/runtime/model.h"
#include "onnx_light/runtime/session.h"
#include "onnx_light/runtime/tuning_registry.h"

namespace {

using namespace onnx_light::runtime;

bool is_gemm_f32(const KernelDef& def) {
  return (def.op_type == "MatMul" || def.op_type == "Gemm" || def.op_type == "Conv") &&
         def.element_type == ElementType::float32;
}

// nullptr when the host cannot run `implementation`.
const KernelTable* table_for(const std::string& implementation) {
  static std::map<std::string, std::unique_ptr<KernelTable>> tables;
  auto& slot = tables[implementation];
  if (!slot) {
    for (const auto& def : cpu_kernel_table().definitions())
      if (is_gemm_f32(def) && def.implementation == implementation && def.unavailable_reason &&
          !def.unavailable_reason(host_cpu_features()).empty())
        return nullptr;
    slot = std::make_unique<KernelTable>();
    for (const auto& def : cpu_kernel_table().definitions())
      if (!is_gemm_f32(def) || def.implementation == implementation) slot->add(def);
  }
  return slot.get();
}

struct Workload {
  Model model;
  std::map<std::string, Tensor> inputs;
  double flops;
};

Workload workload(const std::string& name) {
  const auto f = ElementType::float32;
  const std::string header = "<ir_version: 8, opset_import: [\"\" : 17]>\ng ";
  if (name == "mlp") {
    Model m = parse_model_text(header +
                               "(float[64, 512] x, float[512, 1024] w1, float[1024] b1, float[1024, 256] w2, float[256] b2) "
                               "=> (float[64, 256] y) { h = Gemm(x, w1, b1)\n r = Relu(h)\n y = Gemm(r, w2, b2) }");
    m = with_initializers(m, {{"w1", random_tensor(f, {512, 1024}, 2)},
                              {"b1", random_tensor(f, {1024}, 3)},
                              {"w2", random_tensor(f, {1024, 256}, 4)},
                              {"b2", random_tensor(f, {256}, 5)}});
    return {m, {{"x", random_tensor(f, {64, 512}, 1)}}, 2.0 * 64 * 512 * 1024 + 2.0 * 64 * 1024 * 256};
  }
  if (name == "conv_3x3_64ch_56x56") {  // a ResNet-style 3x3 convolution, 64 -> 64 maps, "same" pads
    Model m = parse_model_text(header + "(float[1, 64, 56, 56] x, float[64, 64, 3, 3] w, float[64] b) "
                                        "=> (float[1, 64, 56, 56] y) { y = Conv <pads = [1, 1, 1, 1]> (x, w, b) }");
    m = with_initializers(m, {{"w", random_tensor(f, {64, 64, 3, 3}, 2)}, {"b", random_tensor(f, {64}, 3)}});
    return {m, {{"x", random_tensor(f, {1, 64, 56, 56}, 1)}}, 2.0 * 64 * 56 * 56 * 64 * 9};
  }
  if (name == "mlp_gemm1" || name == "mlp_gemm2") {  // the MLP's two products on their own
    const bool first = name == "mlp_gemm1";
    const int64_t k = first ? 512 : 1024, n = first ? 1024 : 256;
    Model m = parse_model_text(header + fmt::format("(float[64, {0}] x, float[{0}, {1}] w, float[{1}] b) => (float[64, {1}] y) "
                                                    "{{ y = Gemm(x, w, b) }}", k, n));
    m = with_initializers(m, {{"w", random_tensor(f, {k, n}, 2)}, {"b", random_tensor(f, {n}, 3)}});
    return {m, {{"x", random_tensor(f, {64, k}, 1)}}, 2.0 * 64 * static_cast<double>(k * n)};
  }
  const int64_t s = std::stoll(name.substr(7));  // "matmul_<s>"
  return {parse_model_text(header + "(float[S, S] a, float[S, S] b) => (float[S, S] y) { y = MatMul(a, b) }"),
          {{"a", random_tensor(f, {s, s}, 1)}, {"b", random_tensor(f, {s, s}, 2)}},
          2.0 * static_cast<double>(s * s * s)};
}

void run_bench(benchmark::State& state, const std::string& implementation, const std::string& name, int threads,
               const TuningValues* blocks) {
  const KernelTable* table = table_for(implementation);
  if (table == nullptr) {
    state.SkipWithError(("host cannot run " + implementation).c_str());
    return;
  }
  Workload w = workload(name);
  TuningRegistry registry;
  if (blocks != nullptr) {
    std::vector<PublishedProfile> profiles;
    for (const auto& def : table->definitions())
      if (is_gemm_f32(def)) {
        TuningValues values = def.schema.defaults();
        for (const auto& [k, v] : *blocks) values[k] = v;
        profiles.push_back({def.schema.key, threads, values});
      }
    registry.publish(std::move(profiles));
  }
  RuntimeSessionOptions options;
  options.parameters = RuntimeParameters(threads);
  options.registry = &registry;
  options.kernels = table;
  RuntimeSession session(w.model, options);
  RuntimeContext context;
  for (const auto& [n, t] : w.inputs) context.set(n, t);
  session.run(context);
  for (auto _ : state) {
    session.run(context);
    benchmark::DoNotOptimize(context.get("y").raw_data());
  }
  state.counters["GFLOPs"] = benchmark::Counter(w.flops * static_cast<double>(state.iterations()) / 1e9,
                                                benchmark::Counter::kIsRate);
}

void BM_Gemm(benchmark::State& state, const char* implementation, const char* name) {
  run_bench(state, implementation, name, static_cast<int>(state.range(0)), nullptr);
}

void BM_Blocks(benchmark::State& state, const char* implementation, const char* name) {
  const TuningValues blocks{{"gemm.block_m", state.range(1)}, {"gemm.block_k", state.range(2)},
                            {"gemm.block_n", state.range(3)}};
  run_bench(state, implementation, name, static_cast<int>(state.range(0)), &blocks);
}

#define GEMM_BENCH(impl, model)                                                                   \
  BENCHMARK_CAPTURE(BM_Gemm, impl##_##model, #impl, #model)->ArgName("threads")->Arg(1)->Arg(2) \
      ->Unit(benchmark::kMicrosecond)->UseRealTime()

GEMM_BENCH(avx512, matmul_256);
GEMM_BENCH(avx2, matmul_256);
GEMM_BENCH(portable, matmul_256);
GEMM_BENCH(avx512, matmul_1024);
GEMM_BENCH(avx2, matmul_1024);
GEMM_BENCH(portable, matmul_1024);
GEMM_BENCH(avx512, mlp);
GEMM_BENCH(avx2, mlp);
GEMM_BENCH(portable, mlp);
GEMM_BENCH(avx512, mlp_gemm1);
GEMM_BENCH(avx512, mlp_gemm2);
GEMM_BENCH(avx512, conv_3x3_64ch_56x56);
GEMM_BENCH(avx2, conv_3x3_64ch_56x56);
GEMM_BENCH(portable, conv_3x3_64ch_56x56);

void block_args(benchmark::internal::Benchmark* b) {
  b->ArgNames({"threads", "block_m", "block_k", "block_n"});
  for (int64_t bm : {48, 96, 192})
    for (int64_t bk : {128, 256, 512})
      for (int64_t bn : {128, 256, 512}) b->Args({1, bm, bk, bn});
}
BENCHMARK_CAPTURE(BM_Blocks, avx512_matmul_1024, "avx512", "matmul_1024")->Apply(block_args)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_Blocks, avx512_matmul_256, "avx512", "matmul_256")->Apply(block_args)->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
