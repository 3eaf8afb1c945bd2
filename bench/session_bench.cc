// Micro-benchmarks of the per-call path: session.run on tiny inputs, ParallelFor wake-up, and
// elementwise kernels serial vs parallel. Figures belong in bench/RESULTS.md.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <cstring>

#include "onnx_light/runtime/calibration_workload.h"
#include "onnx_light/runtime/model.h"
#include "onnx_light/runtime/session.h"
#include "onnx_light/runtime/thread_pool.h"
#include "onnx_light/runtime/tuning_registry.h"

namespace {

using namespace onnx_light::runtime;

Model elementwise_model(const char* op, int inputs) {
  std::string text = "<ir_version: 8, opset_import: [\"\" : 17]>\ng (float[N] a";
  if (inputs == 2) text += ", float[N] b";
  text += std::string(") => (float[N] y) { y = ") + op + (inputs == 2 ? "(a, b) }" : "(a) }");
  return parse_model_text(text);
}

// Session run with a preallocated (reused) output: the per-call floor. `streaming` sets
// store.streaming_minimum_elements where the dispatched kernel has it (the SIMD span kernels).
void BM_SessionRun(benchmark::State& state, const char* op, int inputs, int threads, int64_t minimum,
                   int64_t streaming = 0) {
  const int64_t n = state.range(0);
  TuningRegistry registry;
  RuntimeSessionOptions options;
  options.parameters = RuntimeParameters(threads);
  options.registry = &registry;
  RuntimeSession probe(elementwise_model(op, inputs), options);
  probe.initialize();
  const ResolvedTuning resolved = probe.resolved_tuning()[0];
  TuningValues values = resolved.values;
  values["parallel.minimum_elements"] = minimum;
  if (streaming > 0) {
    if (!values.contains("store.streaming_minimum_elements")) {
      state.SkipWithError(("no streaming stores in " + resolved.key.implementation).c_str());
      return;
    }
    values["store.streaming_minimum_elements"] = streaming;
  }
  state.SetLabel(resolved.key.implementation);
  registry.publish({{resolved.key, threads, values}});
  RuntimeSession session(elementwise_model(op, inputs), options);
  RuntimeContext context;
  context.set("a", random_tensor(ElementType::float32, {n}, 1));
  if (inputs == 2) context.set("b", random_tensor(ElementType::float32, {n}, 2));
  for (auto _ : state) {
    session.run(context);
    benchmark::DoNotOptimize(context.get("y").raw_data());
  }
  state.SetBytesProcessed(state.iterations() * n * 4 * (inputs + 1));
}

BENCHMARK_CAPTURE(BM_SessionRun, abs_serial, "Abs", 1, 1, int64_t{1} << 40)->Arg(1)->Arg(1000)->Arg(100000)->Arg(1000000);
BENCHMARK_CAPTURE(BM_SessionRun, abs_2threads, "Abs", 1, 2, int64_t{1})->Arg(1000)->Arg(100000)->Arg(1000000);
BENCHMARK_CAPTURE(BM_SessionRun, add_serial, "Add", 2, 1, int64_t{1} << 40)->Arg(1)->Arg(100000)->Arg(1000000);
BENCHMARK_CAPTURE(BM_SessionRun, add_2threads, "Add", 2, 2, int64_t{1})->Arg(100000)->Arg(1000000);
// Non-temporal stores against cached ones on outputs past the L2 (the default keeps them off).
BENCHMARK_CAPTURE(BM_SessionRun, abs_serial_streaming, "Abs", 1, 1, int64_t{1} << 40, int64_t{1})
    ->Arg(1000000)->Arg(10000000);
BENCHMARK_CAPTURE(BM_SessionRun, abs_serial_cached, "Abs", 1, 1, int64_t{1} << 40)->Arg(1000000)->Arg(10000000);
BENCHMARK_CAPTURE(BM_SessionRun, add_2threads_streaming, "Add", 2, 2, int64_t{1}, int64_t{1})
    ->Arg(1000000)->Arg(10000000);
BENCHMARK_CAPTURE(BM_SessionRun, add_2threads_cached, "Add", 2, 2, int64_t{1})->Arg(1000000)->Arg(10000000);

// The positional run on one thread with the output bound to caller memory: no name lookups, no
// allocation.
// Args: n, and the output's offset in floats from a 64-byte boundary (caller memory such as a
// NumPy array is often only 16-byte aligned; the span loops align their stores with a masked head).
void BM_SessionRunPositional(benchmark::State& state) {
  const int64_t n = state.range(0);
  const int64_t offset = state.range(1);
  RuntimeSessionOptions options;
  options.parameters = RuntimeParameters(1);
  RuntimeSession session(elementwise_model("Abs", 1), options);
  std::vector<Tensor> inputs{random_tensor(ElementType::float32, {n}, 1)};
  Tensor caller_memory(ElementType::float32, {n + offset});
  std::vector<Tensor> outputs{Tensor::borrow(ElementType::float32, {n}, caller_memory.data<float>() + offset)};
  for (auto _ : state) {
    session.run(inputs, outputs);
    benchmark::DoNotOptimize(outputs[0].raw_data());
  }
  state.SetBytesProcessed(state.iterations() * n * 8);
}
BENCHMARK(BM_SessionRunPositional)->Args({1, 0})->Args({1000, 0})->Args({100000, 0})->Args({100000, 4});

// The floor an elementwise kernel cannot beat: one thread copying n floats between two tensors
// allocated as the session's are (the same bytes read and written as Abs, hot in cache as in the
// benchmarks above). Compare BM_SessionRun/abs_serial at the same n.
void BM_CopyFloor(benchmark::State& state) {
  const int64_t n = state.range(0);
  const Tensor source = random_tensor(ElementType::float32, {n}, 1);
  Tensor destination(ElementType::float32, {n});
  for (auto _ : state) {
    std::memcpy(destination.raw_data(), source.raw_data(), static_cast<std::size_t>(n) * 4);
    benchmark::DoNotOptimize(destination.raw_data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * n * 8);
}
BENCHMARK(BM_CopyFloor)->Arg(100000)->Arg(1000000)->Arg(10000000);

// The two halves of the copy floor, one thread: reading n floats (summed as integers, which
// vectorise without reassociating floats) and writing n floats. On this VM the line transfers
// into one core are the limit: read + write of 1e6 floats add up to the copy and to Abs.
void BM_ReadFloor(benchmark::State& state) {
  const int64_t n = state.range(0);
  const Tensor source = random_tensor(ElementType::float32, {n}, 1);
  for (auto _ : state) {
    const auto* words = static_cast<const uint64_t*>(source.raw_data());
    uint64_t sum = 0;
    for (int64_t i = 0; i < n / 2; ++i) sum += words[i];
    benchmark::DoNotOptimize(sum);
  }
  state.SetBytesProcessed(state.iterations() * n * 4);
}
BENCHMARK(BM_ReadFloor)->Arg(100000)->Arg(1000000)->Arg(10000000);

void BM_WriteFloor(benchmark::State& state) {
  const int64_t n = state.range(0);
  Tensor destination(ElementType::float32, {n});
  for (auto _ : state) {
    std::memset(destination.raw_data(), 0x3f, static_cast<std::size_t>(n) * 4);
    benchmark::DoNotOptimize(destination.raw_data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * n * 4);
}
BENCHMARK(BM_WriteFloor)->Arg(100000)->Arg(1000000)->Arg(10000000);

// ParallelFor round trip on a trivial body: the cost of waking the pool.
void BM_ParallelForWake(benchmark::State& state) {
  ThreadPool pool(static_cast<int>(state.range(0)));
  std::vector<int64_t> sink(64);
  for (auto _ : state) {
    pool.parallel_for(64, 1, pool.threads(), [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) sink[static_cast<std::size_t>(i)] += i;
    });
  }
  benchmark::DoNotOptimize(sink.data());
}
BENCHMARK(BM_ParallelForWake)->Arg(1)->Arg(2);

}  // namespace

BENCHMARK_MAIN();
