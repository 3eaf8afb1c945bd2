// The real CaseBenchmark: one session per configuration, each reading its values from a private
// registry, all on one shared thread pool, fed the same seeded inputs.
#include <algorithm>
#include <chrono>

#include <fmt/format.h>

#include "onnx_light/runtime/error.h"
#include "onnx_light/runtime/model.h"
#include "onnx_light/runtime/session.h"
#include "onnx_light/runtime/thread_pool.h"
#include "onnx_light/runtime/tuning_registry.h"
#include "onnx_light/tune/calibration.h"

namespace onnx_light::tune {

namespace {

using runtime::Tensor;

class SteadyClock final : public CalibrationClock {
 public:
  int64_t now_ns() override {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
  }
};

double median_of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  if (v.empty()) return 0;
  return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

class SessionBenchmark final : public CaseBenchmark {
 public:
  SessionBenchmark(const runtime::KernelDef& def, int threads, uint32_t seed, const runtime::KernelTable* kernels)
      : def_(def),
        threads_(threads),
        seed_(seed),
        kernels_(kernels),
        pool_(std::make_shared<runtime::ThreadPool>(threads)) {}

  int variants() const override { return std::max(1, def_.calibration_variants); }

  int64_t memory_bytes(int64_t size, int, std::size_t configurations) const override {
    // Up to three inputs as large as the case's largest tensor, plus one output per configuration.
    const int64_t element = std::max<int64_t>(1, static_cast<int64_t>(runtime::element_size(def_.element_type)));
    const int64_t elements = def_.calibration_elements ? def_.calibration_elements(size) : size;
    return elements * element * (3 + static_cast<int64_t>(configurations));
  }

  CaseTiming measure(int64_t size, int variant, const std::vector<runtime::TuningValues>& configurations,
                     int64_t deadline_ns, int minimum_repetitions, int maximum_repetitions) override {
    runtime::CalibrationWorkload workload = def_.calibration_workload(size, variant, seed_ + static_cast<uint32_t>(variant));
    runtime::Model model = runtime::parse_model_text(workload.model_text, fmt::format("calibration model for {}", def_.op_type));
    const std::size_t n = configurations.size();
    std::vector<std::unique_ptr<runtime::TuningRegistry>> registries;
    std::vector<std::unique_ptr<runtime::RuntimeSession>> sessions;
    std::vector<runtime::RuntimeContext> contexts(n);
    for (std::size_t c = 0; c < n; ++c) {
      registries.push_back(std::make_unique<runtime::TuningRegistry>());
      registries.back()->publish({{def_.schema.key, threads_, configurations[c]}});
      runtime::RuntimeSessionOptions options;
      options.parameters = runtime::RuntimeParameters(threads_);
      options.registry = registries.back().get();
      options.thread_pool = pool_;
      options.kernels = kernels_;
      sessions.push_back(std::make_unique<runtime::RuntimeSession>(model, options));
      for (const auto& [name, tensor] : workload.inputs) contexts[c].set(name, tensor);
    }
    // Warm up and validate: every configuration must produce configuration 0's bytes.
    for (std::size_t c = 0; c < n; ++c) {
      sessions[c]->run(contexts[c]);
      sessions[c]->run(contexts[c]);
    }
    for (const auto& output : sessions[0]->outputs()) {
      const Tensor& reference = contexts[0].get(output.name);
      for (std::size_t c = 1; c < n; ++c)
        if (!runtime::bitwise_equal(reference, contexts[c].get(output.name)))
          throw CalibrationMismatch(fmt::format(
              "{}: output '{}' of configuration {} differs from the serial reference on {}; the kernel is not "
              "deterministic across thread counts (a bug; nothing was published for it)",
              def_.schema.key.to_string(), output.name, c, workload.description));
    }
    std::vector<std::vector<double>> samples(n);
    int repetitions = 0;
    while (repetitions < maximum_repetitions &&
           (repetitions < minimum_repetitions || clock_.now_ns() < deadline_ns)) {
      // Alternate the order so that neither side always runs on a warmer cache.
      for (std::size_t k = 0; k < n; ++k) {
        std::size_t c = (repetitions % 2 == 0) ? k : n - 1 - k;
        // Time the kernel with a warm pool, as between the nodes of a model: after a serial
        // case longer than the workers' spin the parallel one would otherwise also pay a
        // ~30 us futex wake-up (which made MatMul's crossover look 30x later than it is).
        if (threads_ > 1) pool_->parallel_for(threads_, 1, threads_, [](int64_t, int64_t) {});
        int64_t start = clock_.now_ns();
        sessions[c]->run(contexts[c]);
        samples[c].push_back(static_cast<double>(clock_.now_ns() - start));
      }
      ++repetitions;
    }
    CaseTiming timing;
    timing.repetitions = repetitions;
    timing.description = workload.description;
    for (auto& s : samples) timing.median_ns.push_back(median_of(std::move(s)));
    return timing;
  }

 private:
  const runtime::KernelDef& def_;
  int threads_;
  uint32_t seed_;
  const runtime::KernelTable* kernels_;
  std::shared_ptr<runtime::ThreadPool> pool_;
  SteadyClock clock_;
};

}  // namespace

std::shared_ptr<CalibrationClock> steady_calibration_clock() { return std::make_shared<SteadyClock>(); }

std::unique_ptr<CaseBenchmark> make_session_benchmark(const runtime::KernelDef& def, int threads, uint32_t seed,
                                                      const runtime::KernelTable* kernels) {
  if (!def.calibration_workload)
    throw UnsupportedError(fmt::format("{} has no calibration workload", def.schema.key.to_string()));
  return std::make_unique<SessionBenchmark>(def, threads, seed, kernels);
}

}  // namespace onnx_light::tune
