// Benchmarks of the tuning cache (issue 3): `inspect --json` of a 10,000-profile cache (goal
// < 100 ms) and `set` into a 1,000-profile cache (goal < 30 ms plus the fsyncs). Library-level;
// bench/cache_cli_bench.sh times the same through the CLI. Figures go to bench/RESULTS.md.
// The caches are written under $ONNX_LIGHT_BENCH_DIR (default: the current directory), so that
// fsync hits a real disk rather than tmpfs.
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "onnx_light/runtime/kernel_table.h"
#include "onnx_light/runtime/tuning_registry.h"
#include "onnx_light/tune/cache_file.h"
#include "onnx_light/tune/cache_update.h"
#include "onnx_light/tune/host.h"
#include "onnx_light/tune/operations.h"

namespace {

namespace fs = std::filesystem;
using namespace onnx_light;
using namespace onnx_light::tune;

fs::path bench_dir() {
  const char* dir = std::getenv("ONNX_LIGHT_BENCH_DIR");
  fs::path path = fs::path(dir != nullptr && dir[0] != '\0' ? dir : ".") /
                  ("onnx_light_cache_bench_" + std::to_string(::getpid()));
  fs::create_directories(path);
  return path;
}

// `count` profiles over every registered key: this machine at 1, 2, ... threads, and one in five
// for another machine (a shared cache seen from several hosts).
std::vector<CacheProfile> make_profiles(std::size_t count) {
  std::vector<CacheProfile> profiles;
  const auto& defs = runtime::cpu_kernel_table().definitions();
  const HostDescriptor machine = this_machine();
  HostDescriptor other = machine;
  other.vendor = "other-vendor";
  other.microarchitecture = "elsewhere";
  for (int64_t threads = 1; profiles.size() < count; ++threads) {
    for (const auto& def : defs) {
      if (profiles.size() == count) break;
      CacheProfile p;
      p.key = def.schema.key;
      p.host = (profiles.size() % 5 == 4 ? other : machine).with_threads(threads);
      p.values = def.schema.defaults();
      p.provenance = {"calibrate", "2026-12-02T11:39:29Z", "0.1.0"};
      profiles.push_back(std::move(p));
    }
  }
  return profiles;
}

fs::path write_cache(const fs::path& dir, const std::string& name, std::size_t count) {
  const fs::path path = dir / name;
  std::ofstream(path, std::ios::binary | std::ios::trunc) << serialize_cache(make_profiles(count));
  return path;
}

OperationContext isolated_context(runtime::TuningRegistry& registry) {
  OperationContext context;
  context.registry = &registry;
  context.system_cache_path = fs::path();  // no system layer
  return context;
}

void BM_ParseCache(benchmark::State& state) {
  const std::string text = serialize_cache(make_profiles(static_cast<std::size_t>(state.range(0))));
  for (auto _ : state) {
    CacheFile file = parse_cache_text(text, "bench.cache");
    benchmark::DoNotOptimize(file.profiles.data());
  }
  state.counters["bytes"] = static_cast<double>(text.size());
}
BENCHMARK(BM_ParseCache)->Arg(1000)->Arg(10000)->Unit(benchmark::kMillisecond);

void BM_SerializeCache(benchmark::State& state) {
  const auto profiles = make_profiles(static_cast<std::size_t>(state.range(0)));
  for (auto _ : state) {
    std::string text = serialize_cache(profiles);
    benchmark::DoNotOptimize(text.data());
  }
}
BENCHMARK(BM_SerializeCache)->Arg(1000)->Arg(10000)->Unit(benchmark::kMillisecond);

// What `inspect --json` does after start-up: read, classify both layers, write the JSON
// (InspectReport::write_json, the same bytes as to_json().dump(2)).
void BM_InspectJson(benchmark::State& state) {
  const fs::path dir = bench_dir();
  const fs::path path = write_cache(dir, "inspect.cache", static_cast<std::size_t>(state.range(0)));
  runtime::TuningRegistry registry;
  const OperationContext context = isolated_context(registry);
  InspectOptions options;
  options.path = path.string();
  std::size_t bytes = 0;
  for (auto _ : state) {
    std::string json;
    inspect_kernel_tuning_cache(options, context).write_json(json);
    bytes = json.size();
    benchmark::DoNotOptimize(json.data());
  }
  state.counters["json_bytes"] = static_cast<double>(bytes);
  fs::remove_all(dir);
}
BENCHMARK(BM_InspectJson)->Arg(10000)->Unit(benchmark::kMillisecond);

// The same through the nlohmann document (what Python gets as a dict), for comparison.
void BM_InspectToJsonDump(benchmark::State& state) {
  const fs::path dir = bench_dir();
  const fs::path path = write_cache(dir, "inspect.cache", static_cast<std::size_t>(state.range(0)));
  runtime::TuningRegistry registry;
  const OperationContext context = isolated_context(registry);
  InspectOptions options;
  options.path = path.string();
  std::size_t bytes = 0;
  for (auto _ : state) {
    const std::string json = inspect_kernel_tuning_cache(options, context).to_json().dump(2);
    bytes = json.size();
    benchmark::DoNotOptimize(json.data());
  }
  state.counters["json_bytes"] = static_cast<double>(bytes);
  fs::remove_all(dir);
}
BENCHMARK(BM_InspectToJsonDump)->Arg(10000)->Unit(benchmark::kMillisecond);

// One `set` into a cache of N profiles: lock, re-read, merge, write, fsync, rename, fsync dir
// (and with load=true, the re-read and publication).
void BM_SetIntoCache(benchmark::State& state) {
  const fs::path dir = bench_dir();
  const fs::path path = write_cache(dir, "set.cache", static_cast<std::size_t>(state.range(0)));
  runtime::TuningRegistry registry;
  const OperationContext context = isolated_context(registry);
  SetOptions options;
  options.kernel = "Abs";
  options.path = path.string();
  options.num_threads = 1;
  options.load = state.range(1) != 0;
  int64_t value = 1000;
  for (auto _ : state) {
    options.values = {{"parallel.minimum_elements", ++value}};
    const SetReport report = set_kernel_tuning_parameters(options, context);
    if (report.status != UpdateStatus::updated) state.SkipWithError("set failed");
  }
  fs::remove_all(dir);
}
BENCHMARK(BM_SetIntoCache)->Args({1000, 0})->Args({1000, 1})->ArgNames({"profiles", "load"})->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
