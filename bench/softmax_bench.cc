// Softmax / LogSoftmax 256x1024 (last axis) and float reductions, per implementation
// (avx512, avx2, portable) and thread count, through a session with a reused output. Each
// implementation runs from a one-implementation kernel table; those this host cannot run are
// skipped with an error naming the missing feature. Figures belong in bench/RESULTS.md.
#include <benchmark/benchmark.h>

#include <fmt/format.h>

#include <map>
#include <memory>
#include <string>

#include "onnx_light/runtime/calibration_workload.h"
#include "onnx_light/runtime/cpu_features.h"
#include "onnx_light/runtime/kernel_table.h"
#include "onnx_light/runtime/model.h"
#include "onnx_light/runtime/session.h"
#include "onnx_light/runtime/tuning_registry.h"

namespace {

using namespace onnx_light::runtime;

// The definitions of one (op, implementation), or nullptr when none is registered.
const KernelTable* table_of(const std::string& op_type, const std::string& implementation, std::string& why) {
  static std::map<std::string, std::unique_ptr<KernelTable>> tables;
  auto& slot = tables[op_type + "/" + implementation];
  if (!slot) {
    slot = std::make_unique<KernelTable>();
    for (const auto& def : cpu_kernel_table().definitions()) {
      if (def.op_type != op_type || def.implementation != implementation) continue;
      if (def.element_type == ElementType::float32 && def.unavailable_reason) why = def.unavailable_reason(host_cpu_features());
      slot->add(def);
    }
  }
  if (slot->definitions().empty()) why = "not registered";
  return why.empty() ? slot.get() : nullptr;
}

// y = op(x) over float[rows, cols]; `threads` with the row/element threshold at the default.
void BM_Node(benchmark::State& state, const char* op, const char* implementation, int threads, const char* attributes,
             int64_t rows, int64_t cols, bool reduce_rows) {
  std::string why;
  const KernelTable* table = table_of(op, implementation, why);
  if (!table) {
    state.SkipWithError(fmt::format("{} {}: {}", op, implementation, why).c_str());
    return;
  }
  const bool reduction = std::string(op).rfind("Reduce", 0) == 0;
  const std::string out_dims = !reduction ? fmt::format("{}, {}", rows, cols)
                               : reduce_rows ? fmt::format("{}, 1", rows)
                                             : fmt::format("1, {}", cols);
  const std::string text = fmt::format(
      "<ir_version: 8, opset_import: [\"\" : 13]>\ng (float[{}, {}] x) => (float[{}] y) {{ y = {} {} (x) }}", rows, cols,
      out_dims, op, attributes);
  TuningRegistry registry;  // portable defaults
  RuntimeSessionOptions options;
  options.parameters = RuntimeParameters(threads);
  options.registry = &registry;
  options.kernels = table;
  RuntimeSession session(parse_model_text(text), options);
  RuntimeContext context;
  context.set("x", random_tensor(ElementType::float32, {rows, cols}, 1));
  session.run(context);
  for (auto _ : state) {
    session.run(context);
    benchmark::DoNotOptimize(context.get("y").raw_data());
  }
  state.SetLabel(implementation);
  state.SetItemsProcessed(state.iterations() * rows * cols);
}

#define SOFTMAX_BENCH(op, impl, threads)                                                                   \
  BENCHMARK_CAPTURE(BM_Node, op##_256x1024_##impl##_t##threads, #op, #impl, threads, "<axis = -1>", 256, 1024, \
                    false)                                                                                 \
      ->Unit(benchmark::kMicrosecond)

SOFTMAX_BENCH(Softmax, avx512, 1);
SOFTMAX_BENCH(Softmax, avx512, 2);
SOFTMAX_BENCH(Softmax, avx2, 1);
SOFTMAX_BENCH(Softmax, avx2, 2);
SOFTMAX_BENCH(Softmax, portable, 1);
SOFTMAX_BENCH(Softmax, portable, 2);
SOFTMAX_BENCH(LogSoftmax, avx512, 1);
SOFTMAX_BENCH(LogSoftmax, avx2, 1);
SOFTMAX_BENCH(LogSoftmax, portable, 1);

// ReduceSum over the last axis (rows) and over the first (columns) of 256x1024; ReduceMax rows.
#define REDUCE_BENCH(op, impl, threads, axis, rows_flag)                                                          \
  BENCHMARK_CAPTURE(BM_Node, op##_256x1024_axis##axis##_##impl##_t##threads, #op, #impl, threads, "<axes = [" #axis "]>", \
                    256, 1024, rows_flag)                                                                          \
      ->Unit(benchmark::kMicrosecond)

REDUCE_BENCH(ReduceMean, avx2, 1, 1, true);
REDUCE_BENCH(ReduceMean, avx2, 2, 1, true);
REDUCE_BENCH(ReduceMean, portable, 1, 1, true);
REDUCE_BENCH(ReduceMean, portable, 2, 1, true);
REDUCE_BENCH(ReduceMean, avx2, 1, 0, false);
REDUCE_BENCH(ReduceMean, portable, 1, 0, false);
REDUCE_BENCH(ReduceMax, avx2, 1, 1, true);
REDUCE_BENCH(ReduceMax, portable, 1, 1, true);

}  // namespace

BENCHMARK_MAIN();
