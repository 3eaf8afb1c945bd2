#pragma once
// Test fixture for libtune: a kernel table of made-up kernels (so the tests do not depend on which
// runtime kernels exist), a private registry, a fixed machine and a scratch directory.
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <sstream>
#include <string>

#include "onnx_light/runtime/kernel_table.h"
#include "onnx_light/runtime/tuning_registry.h"
#include "onnx_light/tune/host.h"
#include "onnx_light/tune/operations.h"
#include "sanitizer_build.h"

namespace tune_test {

// Sanitized builds run 3-10x slower: calibration tests whose claims need a measurement to fit in
// the budget (not tests of the budget itself) scale their budgets by this.
inline constexpr int kSanitizerSlowdown = onnx_light::test::kSanitizedBuild ? 5 : 1;

namespace rt = onnx_light::runtime;
namespace tn = onnx_light::tune;

// Alpha: four parameters of every type; float has "fast" (needs avx2) before "portable"; abi 3.
// Beta: one allowed-set tile parameter, no threshold (not calibratable); abi 1.
inline rt::TuningSchema alpha_schema(int32_t element_type, const std::string& implementation) {
  rt::TuningKey key;
  key.kernel = "Alpha";
  key.implementation = implementation;
  key.element_type = element_type;
  key.tuning_abi = 3;
  rt::TuningSchema schema = rt::parallel_threshold_schema(key, 4096);
  rt::ParameterSpec ratio;
  ratio.name = "split.ratio";
  ratio.type = rt::ValueType::float64;
  ratio.default_value = 0.5;
  ratio.minimum = 0.0;
  ratio.maximum = 1.0;
  schema.parameters.push_back(ratio);
  rt::ParameterSpec enabled;
  enabled.name = "vector.enabled";
  enabled.type = rt::ValueType::boolean;
  enabled.default_value = true;
  schema.parameters.push_back(enabled);
  rt::ParameterSpec mode;
  mode.name = "mode";
  mode.type = rt::ValueType::string;
  mode.default_value = std::string("auto");
  mode.allowed = {std::string("auto"), std::string("fast"), std::string("careful \"quoted\"")};
  schema.parameters.push_back(mode);
  return schema;
}

inline rt::TuningSchema beta_schema() {
  rt::TuningKey key;
  key.kernel = "Beta";
  key.implementation = "portable";
  key.element_type = 1;
  key.tuning_abi = 1;
  rt::ParameterSpec tile;
  tile.name = "tile.size";
  tile.type = rt::ValueType::int64;
  tile.default_value = int64_t{32};
  tile.role = rt::ParameterRole::tile;
  tile.allowed = {int64_t{16}, int64_t{32}, int64_t{64}};
  return rt::TuningSchema{key, {tile}};
}

inline rt::KernelDef make_def(std::string op, rt::ElementType type, rt::TuningSchema schema, bool calibratable) {
  rt::KernelDef def;
  def.op_type = std::move(op);
  def.element_type = type;
  def.implementation = schema.key.implementation;
  def.schema = std::move(schema);
  def.create = [](const rt::KernelCreateInfo&) -> std::unique_ptr<rt::Kernel> { return nullptr; };
  if (calibratable) {
    def.calibration_workload = [](int64_t, int, uint32_t) { return rt::CalibrationWorkload{}; };
  }
  return def;
}

inline std::unique_ptr<rt::KernelTable> make_table() {
  auto table = std::make_unique<rt::KernelTable>();
  rt::KernelDef fast = make_def("Alpha", rt::ElementType::float32, alpha_schema(1, "fast"), true);
  fast.unavailable_reason = [](const rt::CpuFeatures& f) { return f.avx2 ? std::string() : std::string("needs avx2"); };
  table->add(std::move(fast));
  table->add(make_def("Alpha", rt::ElementType::float32, alpha_schema(1, "portable"), true));
  table->add(make_def("Alpha", rt::ElementType::float64, alpha_schema(11, "portable"), true));
  table->add(make_def("Beta", rt::ElementType::float32, beta_schema(), false));
  return table;
}

inline tn::HostDescriptor test_machine() {
  tn::HostDescriptor host;
  host.architecture = "x86_64";
  host.vendor = "amd";
  host.family = 25;
  host.model = 33;
  host.stepping = 0;
  host.microarchitecture = "zen3";
  host.features = {"avx", "avx2", "fma"};
  host.l1d_cache_bytes = 32768;
  host.l2_cache_bytes = 524288;
  host.l3_cache_bytes = 33554432;
  host.physical_cores = 8;
  host.logical_cores = 16;
  return host;
}

inline std::string read_text(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

inline void write_text(const std::filesystem::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
}

// A fresh directory under the system temp dir, removed (made writable first) at the end.
class ScratchDir {
 public:
  ScratchDir() {
    static std::atomic<int> counter{0};
    path_ = std::filesystem::temp_directory_path() /
            ("onnx_light_tune_test_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~ScratchDir() {
    std::error_code error;
    for (auto it = std::filesystem::recursive_directory_iterator(path_, error);
         it != std::filesystem::recursive_directory_iterator(); it.increment(error)) {
      ::chmod(it->path().c_str(), 0755);
    }
    ::chmod(path_.c_str(), 0755);
    std::filesystem::remove_all(path_, error);
  }
  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(const std::string& name) const { return path_ / name; }
  // Names in the directory, sorted ("a.cache", "a.cache.lock").
  std::vector<std::string> entries() const {
    std::vector<std::string> names;
    for (const auto& entry : std::filesystem::directory_iterator(path_)) names.push_back(entry.path().filename());
    std::sort(names.begin(), names.end());
    return names;
  }

 private:
  std::filesystem::path path_;
};

// Everything an operation needs, private to one test.
struct Fixture {
  std::unique_ptr<rt::KernelTable> table = make_table();
  rt::TuningRegistry registry;
  rt::CpuFeatures features;  // no avx2: Alpha float dispatches to "portable"
  tn::HostDescriptor machine = test_machine();
  ScratchDir dir;
  std::filesystem::path cache = dir / "kernel_tuning.cache";
  std::filesystem::path system_cache = dir / "system.cache";

  tn::OperationContext context() const {
    tn::OperationContext context;
    context.kernels = table.get();
    context.registry = const_cast<rt::TuningRegistry*>(&registry);
    context.features = &features;
    context.machine = machine;
    context.system_cache_path = system_cache;
    context.tool_version = "9.9.9";
    return context;
  }

  tn::CacheProfile profile(const rt::TuningSchema& schema, int64_t threads) const {
    tn::CacheProfile p;
    p.key = schema.key;
    p.host = machine.with_threads(threads);
    p.values = schema.defaults();
    p.provenance = {"set", "2026-12-02T11:39:29Z", "9.9.9"};
    return p;
  }
};

}  // namespace tune_test
