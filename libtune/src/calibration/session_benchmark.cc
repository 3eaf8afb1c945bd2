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
  std::optional<CpuTimes> cpu_times() override { return sample_cpu_times(); }
};

class SessionBenchmark final : public CaseBenchmark {
 public:
  SessionBenchmark(const runtime::KernelDef& def, int threads, uint32_t seed, const runtime::KernelTable* kernels,
                   const runtime::RuntimeParameters& policy)
      : def_(def), threads_(threads), seed_(seed), kernels_(kernels), parameters_(policy) {
    parameters_.num_threads = threads;
    pool_ = std::make_shared<runtime::ThreadPool>(threads, runtime::thread_pool_options(parameters_));
  }

  int variants() const override { return std::max(1, def_.calibration_variants); }

  int64_t memory_bytes(int64_t size, int, std::size_t configurations) const override {
    // Up to three inputs as large as the case's largest tensor, plus one output per configuration.
    const int64_t element = std::max<int64_t>(1, static_cast<int64_t>(runtime::element_size(def_.element_type)));
    const int64_t elements = def_.calibration_elements ? def_.calibration_elements(size) : size;
    return elements * element * (3 + static_cast<int64_t>(configurations));
  }

  CaseTiming measure(int64_t size, int variant, const std::vector<runtime::TuningValues>& configurations,
                     int64_t deadline_ns, int minimum_repetitions, int maximum_repetitions) override {
    const std::size_t n = configurations.size();
    // Batches of a case built before reuse its sessions (the search adds pairs to a size, and its
    // confirmation rounds move between sizes): only a short re-warm-up is paid again.
    Case* found = nullptr;
    for (auto& c : cases_)
      if (c->size == size && c->variant == variant && c->configurations == configurations) found = c.get();
    const bool reuse = found != nullptr;
    Case& built = reuse ? *found : build(size, variant, configurations);
    if (!process_warmed_) {
      // The first case of a process runs on a cold pool, cold caches and a CPU that may still be
      // ramping its clock: a few untimed pairs keep the first search from being biased high.
      process_warmed_ = true;
      if (threads_ > 1) {
        // Keep every worker busy for up to 2 ms (a twentieth of the time left at most).
        const int64_t now = clock_.now_ns();
        const int64_t until = now + std::min<int64_t>(2'000'000, std::max<int64_t>(0, deadline_ns - now) / 20);
        std::vector<float> scratch(int64_t{1} << 15, 1.0f);
        while (clock_.now_ns() < until)
          pool_->parallel_for(static_cast<int64_t>(scratch.size()), 1024, threads_, [&scratch](int64_t b, int64_t e) {
            for (int64_t i = b; i < e; ++i) scratch[static_cast<std::size_t>(i)] = scratch[static_cast<std::size_t>(i)] * 0.5f + 0.5f;
          });
      }
      for (int i = 0; i < 4; ++i)
        for (std::size_t c = 0; c < n; ++c) built.sessions[c]->run(built.contexts[c]);
    }
    for (std::size_t c = 0; c < n; ++c) built.sessions[c]->run(built.contexts[c]);
    if (!reuse) {
      for (std::size_t c = 0; c < n; ++c) built.sessions[c]->run(built.contexts[c]);
      for (const auto& output : built.sessions[0]->outputs()) {
        const Tensor& reference = built.contexts[0].get(output.name);
        for (std::size_t c = 1; c < n; ++c)
          if (!runtime::bitwise_equal(reference, built.contexts[c].get(output.name)))
            throw CalibrationMismatch(fmt::format(
                "{}: output '{}' of configuration {} differs from the serial reference on {}; the kernel is not "
                "deterministic across thread counts (a bug; nothing was published for it)",
                def_.schema.key.to_string(), output.name, c, built.description));
      }
    }
    std::vector<std::vector<double>> samples(n);
    int repetitions = 0;
    // Hard deadline: after the first repetition none starts past it, minimum or not.
    while (repetitions < maximum_repetitions && (repetitions == 0 || clock_.now_ns() < deadline_ns) &&
           (repetitions < minimum_repetitions || clock_.now_ns() < deadline_ns)) {
      // Alternate the order so that neither side always runs on a warmer cache.
      for (std::size_t k = 0; k < n; ++k) {
        std::size_t c = (repetitions % 2 == 0) ? k : n - 1 - k;
        // Time the kernel with a warm pool, as between the nodes of a model: after a serial
        // case longer than the workers' spin the parallel one would otherwise also pay a
        // ~30 us futex wake-up (which made MatMul's crossover look 30x later than it is).
        if (threads_ > 1) pool_->parallel_for(threads_, 1, threads_, [](int64_t, int64_t) {});
        int64_t start = clock_.now_ns();
        built.sessions[c]->run(built.contexts[c]);
        samples[c].push_back(static_cast<double>(clock_.now_ns() - start));
      }
      ++repetitions;
    }
    CaseTiming timing;
    timing.repetitions = repetitions;
    timing.description = built.description;
    for (auto& s : samples) timing.median_ns.push_back(median(s));
    timing.samples_ns = std::move(samples);
    return timing;
  }

 private:
  // One case: a session per configuration (each with its private registry) and their inputs.
  struct Case {
    int64_t size = 0;
    int variant = 0;
    std::vector<runtime::TuningValues> configurations;
    std::vector<std::unique_ptr<runtime::TuningRegistry>> registries;
    std::vector<std::unique_ptr<runtime::RuntimeSession>> sessions;
    std::vector<runtime::RuntimeContext> contexts;
    std::string description;
    int64_t bytes = 0;  // memory_bytes() of the case
  };
  // Cases stay built while all of them together hold at most three times the largest one (so at
  // most three times the per-case memory budget the engine checks): the confirmation rounds cycle
  // through a geometric ladder of sizes, whose smaller cases mostly fit beside the largest.
  Case& build(int64_t size, int variant, const std::vector<runtime::TuningValues>& configurations) {
    const int64_t bytes = memory_bytes(size, variant, configurations.size());
    auto kept = [&] {
      int64_t total = bytes, largest = bytes;
      for (const auto& c : cases_) total += c->bytes, largest = std::max(largest, c->bytes);
      return total <= 3 * largest;
    };
    while (!cases_.empty() && !kept()) cases_.erase(cases_.begin());  // the oldest first
    auto built = std::make_unique<Case>();
    built->bytes = bytes;
    runtime::CalibrationWorkload workload = def_.calibration_workload(size, variant, seed_ + static_cast<uint32_t>(variant));
    runtime::Model model = runtime::parse_model_text(workload.model_text, fmt::format("calibration model for {}", def_.op_type));
    const std::size_t n = configurations.size();
    built->contexts.assign(n, runtime::RuntimeContext());
    for (std::size_t c = 0; c < n; ++c) {
      built->registries.push_back(std::make_unique<runtime::TuningRegistry>());
      built->registries.back()->publish(
          {{def_.schema.key, threads_, configurations[c], runtime::idle_workers_spin(parameters_)}});
      runtime::RuntimeSessionOptions options;
      options.parameters = parameters_;
      options.registry = built->registries.back().get();
      options.thread_pool = pool_;
      options.kernels = kernels_;
      built->sessions.push_back(std::make_unique<runtime::RuntimeSession>(model, options));
      // A session that did not take the configuration (a profile published for other conditions
      // than it runs under) would time the defaults under every configuration's name.
      built->sessions.back()->initialize();
      for (const auto& resolved : built->sessions.back()->resolved_tuning())
        if (resolved.key == def_.schema.key && resolved.source != runtime::TuningSource::published_profile)
          throw Error(fmt::format("{}: the calibration session for configuration {} did not resolve its "
                                           "values (a bug in the benchmark's registry; nothing was measured)",
                                           def_.schema.key.to_string(), c));
      for (const auto& [name, tensor] : workload.inputs) built->contexts[c].set(name, tensor);
    }
    built->description = workload.description;
    built->size = size;
    built->variant = variant;
    built->configurations = configurations;
    cases_.push_back(std::move(built));
    return *cases_.back();
  }

  bool process_warmed_ = false;
  std::vector<std::unique_ptr<Case>> cases_;

  const runtime::KernelDef& def_;
  int threads_;
  uint32_t seed_;
  const runtime::KernelTable* kernels_;
  runtime::RuntimeParameters parameters_;
  std::shared_ptr<runtime::ThreadPool> pool_;
  SteadyClock clock_;
};

}  // namespace

std::shared_ptr<CalibrationClock> steady_calibration_clock() { return std::make_shared<SteadyClock>(); }

std::unique_ptr<CaseBenchmark> make_session_benchmark(const runtime::KernelDef& def, int threads, uint32_t seed,
                                                      const runtime::KernelTable* kernels,
                                                      const runtime::RuntimeParameters& policy) {
  if (!def.calibration_workload)
    throw UnsupportedError(fmt::format("{} has no calibration workload", def.schema.key.to_string()));
  return std::make_unique<SessionBenchmark>(def, threads, seed, kernels, policy);
}

}  // namespace onnx_light::tune
