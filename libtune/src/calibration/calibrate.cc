// calibrate_kernel_tuning: selects keys, runs the threshold search or the comparison for each
// within the budgets, validates, publishes everything in one generation and saves it with one
// locked update.
#include <algorithm>
#include <map>
#include <cmath>
#include <limits>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "onnx_light/runtime/error.h"
#include "onnx_light/runtime/tuning_registry.h"
#include "onnx_light/tune/cache_path.h"
#include "onnx_light/tune/calibration.h"
#include "onnx_light/tune/host.h"
#include "onnx_light/tune/reports.h"
#include "operation_support.h"

namespace onnx_light::tune {

using runtime::TuningKey;
using runtime::TuningValue;
using runtime::TuningValues;

bool has_calibration_routine(const runtime::KernelDef& def) {
  return def.schema.has_threshold() && static_cast<bool>(def.calibration_workload);
}

const runtime::ParameterSpec* threshold_parameter(const runtime::TuningSchema& schema) {
  for (const auto& p : schema.parameters)
    if (p.role == runtime::ParameterRole::threshold && p.type == runtime::ValueType::int64) return &p;
  return nullptr;
}

namespace {

// Comparison mode: work of each case over the last.
constexpr int64_t kComparisonGrowth = 8;
// Comparison mode: how much lower another value's summed medians must be to replace the baseline.
// Two sessions of the same values differ by up to ~2% on a small VM, and a parameter the cases
// never exercise (Conv's depthwise widths on its dense workload) measured x1.02 by noise alone.
constexpr double kComparisonMinimumGain = 0.02;

constexpr int64_t kNsPerMs = 1'000'000;

Diagnostic key_message(const TuningKey& key, std::string message) {
  Diagnostic d;
  d.key = key;
  d.message = std::move(message);
  return d;
}

// The bounded search of one key: owns the clock arithmetic so both modes share the budget rules.
class KeyRun {
 public:
  KeyRun(const CalibrationOptions& options, CalibrationClock& clock, CaseBenchmark& bench, int64_t deadline_ns,
         CalibrationProgress progress)
      : options_(options), clock_(clock), bench_(bench), deadline_ns_(deadline_ns), progress_(std::move(progress)) {}

  // Why the last loop stopped before finishing ("" when it did not stop early).
  std::string stop_reason;

  // Sizes growing by `growth` per case from first_size while memory and time allow. Returns false
  // (and sets stop_reason) when the next size may not run.
  bool may_run(int64_t size, std::size_t configurations, int64_t max_size, int64_t growth = 2) {
    if (size > max_size) {
      stop_reason = fmt::format("the parameter's maximum {} was reached", max_size);
      return false;
    }
    for (int v = 0; v < bench_.variants(); ++v)
      if (bench_.memory_bytes(size, v, configurations) > options_.maximum_memory_bytes) {
        stop_reason = fmt::format("the next case ({} elements) would need {} bytes, past the memory budget of {} bytes",
                                  size, bench_.memory_bytes(size, v, configurations), options_.maximum_memory_bytes);
        return false;
      }
    int64_t now = clock_.now_ns();
    // The next case costs about `growth` times the last one.
    int64_t predicted = last_case_ns_ * growth;
    if (now + predicted > deadline_ns_) {
      stop_reason = fmt::format("the time budget ran out after {} case{}", cases_run_, cases_run_ == 1 ? "" : "s");
      return false;
    }
    return true;
  }

  // Measures every variant of `size` for every configuration; medians summed over variants.
  CalibrationCaseReport run_case(int64_t size, const std::vector<TuningValues>& configurations) {
    int64_t start = clock_.now_ns();
    // Leave room for at least the next, larger case: this one may use a third of what is left.
    int64_t case_deadline = start + std::max<int64_t>(0, (deadline_ns_ - start) / 3);
    CalibrationCaseReport report;
    report.size = size;
    report.median_ns.assign(configurations.size(), 0.0);
    for (int v = 0; v < bench_.variants(); ++v) {
      if (options_.progress) {
        progress_.case_description = fmt::format("{} elements, variant {}", size, v);
        progress_.elapsed_ms = (clock_.now_ns() - progress_start_ns) / kNsPerMs;
        options_.progress(progress_);
      }
      int64_t variant_deadline = start + (case_deadline - start) * (v + 1) / bench_.variants();
      CaseTiming timing = bench_.measure(size, v, configurations, variant_deadline, options_.minimum_repetitions,
                                         options_.maximum_repetitions);
      for (std::size_t c = 0; c < configurations.size() && c < timing.median_ns.size(); ++c)
        report.median_ns[c] += timing.median_ns[c];
      report.descriptions.push_back(timing.description);
    }
    last_case_ns_ = clock_.now_ns() - start;
    ++cases_run_;
    return report;
  }

  int64_t progress_start_ns = 0;

 private:
  const CalibrationOptions& options_;
  CalibrationClock& clock_;
  CaseBenchmark& bench_;
  int64_t deadline_ns_;
  CalibrationProgress progress_;
  int64_t last_case_ns_ = 0;
  int cases_run_ = 0;
};

// Threshold mode: the sequential search, fed by interleaved serial/candidate pairs of the real
// (or injected) benchmark, within the key's hard deadline.
class PairSource {
 public:
  PairSource(const CalibrationOptions& options, CalibrationClock& clock, CaseBenchmark& bench, int64_t deadline_ns,
             std::vector<TuningValues> configurations)
      : options_(options), clock_(clock), bench_(bench), deadline_ns_(deadline_ns), configurations_(std::move(configurations)) {}

  PairBatch operator()(int64_t size, int pairs) {
    PairBatch batch;
    for (int v = 0; v < bench_.variants(); ++v)
      if (int64_t bytes = bench_.memory_bytes(size, v, 2); bytes > options_.maximum_memory_bytes) {
        batch.stop_reason = fmt::format("the next case ({} elements) would need {} bytes, past the memory budget of {} bytes",
                                        size, bytes, options_.maximum_memory_bytes);
        return batch;
      }
    const int64_t now = clock_.now_ns();
    // Predicted cost, warm-ups and minimum pairs included: a size's first batch (inputs, sessions,
    // warm-ups, validation) scales with the size from the last first batch; a further batch at a
    // measured size costs its pairs at that size's rate. A 25% allowance absorbs jitter.
    const auto seen = pair_ns_.find(size);
    const bool known = seen != pair_ns_.end();
    if (known || last_first_cost_ns_ > 0) {
      double predicted = known ? seen->second * pairs
                               : static_cast<double>(last_first_cost_ns_) *
                                     std::max(1.0, static_cast<double>(size) / static_cast<double>(last_first_size_)) *
                                     (pairs + 2.0) / (last_first_pairs_ + 2.0);
      if (static_cast<double>(now) + predicted * 1.25 > static_cast<double>(deadline_ns_)) {
        batch.stop_reason = fmt::format("the time budget ran out after {} batch{} of pairs", batches_, batches_ == 1 ? "" : "es");
        return batch;
      }
    } else if (now >= deadline_ns_) {
      batch.stop_reason = "the time budget ran out before the first case";
      return batch;
    }
    std::vector<double> serial(static_cast<std::size_t>(pairs), 0.0), candidate(static_cast<std::size_t>(pairs), 0.0);
    std::size_t complete = static_cast<std::size_t>(pairs);
    for (int v = 0; v < bench_.variants(); ++v) {
      if (options_.progress) {
        progress.case_description = fmt::format("{} elements, variant {}", size, v);
        progress.elapsed_ms = (clock_.now_ns() - progress_start_ns) / kNsPerMs;
        options_.progress(progress);
      }
      CaseTiming t = bench_.measure(size, v, configurations_, deadline_ns_, pairs, pairs);
      if (v == 0) batch.description = t.description;
      if (t.samples_ns.size() >= 2) {
        complete = std::min({complete, t.samples_ns[0].size(), t.samples_ns[1].size()});
        for (std::size_t i = 0; i < complete; ++i) {
          serial[i] += t.samples_ns[0][i];
          candidate[i] += t.samples_ns[1][i];
        }
      } else if (t.median_ns.size() >= 2) {
        // A benchmark that reports medians only: every pair is the medians' ratio.
        complete = std::min(complete, static_cast<std::size_t>(std::max(1, t.repetitions)));
        for (std::size_t i = 0; i < complete; ++i) {
          serial[i] += t.median_ns[0];
          candidate[i] += t.median_ns[1];
        }
      } else {
        complete = 0;
      }
    }
    for (std::size_t i = 0; i < complete; ++i)
      if (serial[i] > 0 && candidate[i] > 0) batch.ratios.push_back(candidate[i] / serial[i]);
    serial.resize(complete);
    candidate.resize(complete);
    batch.serial_ns = median(serial);
    batch.candidate_ns = median(candidate);
    const int64_t cost = clock_.now_ns() - now;
    if (!known) {
      last_first_cost_ns_ = std::max<int64_t>(cost, 1);
      last_first_size_ = size;
      last_first_pairs_ = pairs;
    }
    // Per pair at this size, the batch's overhead spread over its pairs (on the safe side).
    pair_ns_[size] = static_cast<double>(cost) / std::max(1, pairs);
    ++batches_;
    if (batch.ratios.empty()) batch.stop_reason = "the time budget ran out during a case";
    return batch;
  }

  CalibrationProgress progress;
  int64_t progress_start_ns = 0;

 private:
  static double median(std::vector<double> v) {
    if (v.empty()) return 0;
    std::sort(v.begin(), v.end());
    return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
  }
  const CalibrationOptions& options_;
  CalibrationClock& clock_;
  CaseBenchmark& bench_;
  int64_t deadline_ns_;
  std::vector<TuningValues> configurations_;
  int64_t last_first_cost_ns_ = 0;  // the last first batch at a new size
  int64_t last_first_size_ = 1;
  int last_first_pairs_ = 0;
  std::map<int64_t, double> pair_ns_;  // per pair at each measured size, overhead included
  int batches_ = 0;
};

// Config 0 never runs parallel (the reference), config 1 always does (the candidate).
std::vector<TuningValues> threshold_configurations(const runtime::ParameterSpec& spec, const TuningValues& base) {
  TuningValues serial = base;
  TuningValues candidate = base;
  serial[spec.name] = spec.maximum ? static_cast<int64_t>(*spec.maximum) : std::numeric_limits<int64_t>::max() / 4;
  candidate[spec.name] = spec.minimum ? std::max<int64_t>(1, static_cast<int64_t>(*spec.minimum)) : 1;
  return {serial, candidate};
}

// One discarded pass at the first size before any timed pair: the first case of a process pays
// one-off costs (pool start-up, first-touch pages, a CPU still ramping) that would bias its
// ratios and inflate the cost predictions. It runs inside the key's budget, before the budget
// is split between --repeat runs, so the first run is not shortchanged either.
void warm_up(const CalibrationOptions& options, CaseBenchmark& bench, int64_t deadline_ns,
             const std::vector<TuningValues>& configurations) {
  const int64_t size = std::max<int64_t>(1, options.first_size);
  for (int v = 0; v < bench.variants(); ++v)
    if (bench.memory_bytes(size, v, configurations.size()) > options.maximum_memory_bytes) return;
  for (int v = 0; v < bench.variants(); ++v) bench.measure(size, v, configurations, deadline_ns, 1, 1);
}

SequentialSearchResult run_threshold_search(const CalibrationOptions& options, CalibrationClock& clock, CaseBenchmark& bench,
                                            int64_t deadline_ns, const runtime::ParameterSpec& spec, const TuningValues& base,
                                            int64_t default_value, const CalibrationProgress& progress, int64_t start_ns) {
  const int64_t max_value = spec.maximum ? static_cast<int64_t>(*spec.maximum) : std::numeric_limits<int64_t>::max() / 4;
  const int64_t min_value = spec.minimum ? std::max<int64_t>(1, static_cast<int64_t>(*spec.minimum)) : 1;
  PairSource source(options, clock, bench, deadline_ns, threshold_configurations(spec, base));
  source.progress = progress;
  source.progress_start_ns = start_ns;
  SequentialSearchSettings s;
  s.margin = options.search.margin;
  s.consecutive_wins = options.search.consecutive_wins;
  // Five pairs: the fewest from which a 20% trimmed mean drops one value at each end.
  s.minimum_pairs = std::max(5, options.minimum_repetitions);
  s.maximum_pairs = std::max(s.minimum_pairs, options.maximum_repetitions);
  s.confirm_pairs = 8 * s.maximum_pairs;
  s.unsure_confirm_pairs = 3 * s.confirm_pairs;
  s.first_size = std::max<int64_t>(1, options.first_size);
  s.minimum_value = min_value;
  s.maximum_value = max_value;
  s.valid = [&spec](int64_t v) { return spec.validate(TuningValue(v)).empty(); };
  PairMeasure measure = [&source](int64_t size, int pairs) { return source(size, pairs); };
  return sequential_threshold_search(s, default_value, measure);
}

std::vector<CalibrationCaseReport> case_reports(const SequentialSearchResult& r) {
  std::vector<CalibrationCaseReport> out;
  for (const auto& e : r.sizes) {
    CalibrationCaseReport c;
    c.size = e.size;
    c.median_ns = {e.serial_ns, e.candidate_ns};
    c.descriptions = {e.description};
    c.candidate_wins = e.wins;
    c.ratio = e.ratio;
    c.ratio_low = e.low;
    c.ratio_high = e.high;
    c.fitted_ratio = e.fitted;
    c.verdict = size_verdict_name(e.verdict);
    c.pairs = static_cast<int>(e.ratios.size());
    c.pair_ratios = e.ratios;
    c.retested = e.retested;
    c.refined = e.refined;
    out.push_back(std::move(c));
  }
  return out;
}

std::vector<TuningValue> parse_comparison_values(const runtime::ParameterSpec& spec, const std::vector<std::string>& texts) {
  std::vector<TuningValue> values;
  for (const auto& text : texts) {
    TuningValue v = runtime::parse_value(text, spec.type, spec.name);
    if (auto problem = spec.validate(v); !problem.empty()) throw InvalidValueError(problem);
    values.push_back(std::move(v));
  }
  if (values.size() < 2)
    throw InvalidValueError(fmt::format("--parameter {}: give at least two values to compare (baseline first)", spec.name));
  return values;
}

// The provenance source of a saved result: "calibrate" for a measured pick the runs agree on;
// forced saves of anything less are labelled as such.
std::string_view saved_source(const KeyCalibration& k) {
  if (!k.measured) return kSourceUnmeasured;
  if (k.confidence == Confidence::low) return kSourceLowConfidence;
  return "calibrate";
}

}  // namespace

bool CalibrationReport::ok() const {
  if (!failed.empty() || !not_saved.empty()) return false;
  if (cache_update && !cache_update->ok()) return false;
  return true;
}

nlohmann::json CalibrationReport::to_json() const {
  nlohmann::json j;
  j["calibrated"] = nlohmann::json::array();
  nlohmann::json measurements = nlohmann::json::array();
  for (const auto& k : calibrated) {
    nlohmann::json entry = key_to_json(k.key);
    entry["values"] = values_to_json(k.values);
    j["calibrated"].push_back(entry);
    nlohmann::json m = key_to_json(k.key);
    m["parameter"] = k.parameter;
    m["changed_default"] = k.changed_default;
    m["bracket"] = k.bracket_high ? nlohmann::json{{"low", k.bracket_low ? nlohmann::json(*k.bracket_low) : nlohmann::json()},
                                                   {"high", *k.bracket_high}}
                                  : nlohmann::json();
    m["cases"] = nlohmann::json::array();
    for (const auto& c : k.cases)
    {
      nlohmann::json cj = {{"size", c.size}, {"median_ns", c.median_ns}, {"candidate_wins", c.candidate_wins},
                           {"descriptions", c.descriptions}};
      if (!c.verdict.empty()) {
        cj["ratio"] = c.ratio;
        cj["ratio_interval"] = {c.ratio_low, c.ratio_high};
        cj["fitted_ratio"] = c.fitted_ratio;
        cj["verdict"] = c.verdict;
        cj["pairs"] = c.pairs;
        cj["pair_ratios"] = c.pair_ratios;
        cj["retested"] = c.retested;
        cj["refined"] = c.refined;
      }
      m["cases"].push_back(std::move(cj));
    }
    if (!k.comparison.empty()) {
      m["comparison"] = nlohmann::json::array();
      for (const auto& e : k.comparison)
        m["comparison"].push_back({{"value", value_to_json(e.value)}, {"total_median_ns", e.total_median_ns},
                                   {"speedup", e.speedup}});
    }
    m["picks"] = k.picks;
    m["confidence"] = confidence_name(k.confidence);
    m["noisy"] = k.noisy;
    const auto optional_json = [](const std::optional<double>& v) { return v ? nlohmann::json(*v) : nlohmann::json(); };
    m["contention"] = k.contention ? nlohmann::json{{"other_cpus", optional_json(k.contention->other_cpus)},
                                                    {"waiting_threads", optional_json(k.contention->waiting_threads)},
                                                    {"window_ms", k.contention->window_ms},
                                                    {"cpus", k.contention->cpus}}
                                   : nlohmann::json();
    m["measured"] = k.measured;
    m["saved"] = k.saved;
    m["agreement"] = k.agreement;
    m["runs"] = repeat;
    m["elapsed_ms"] = k.elapsed_ms;
    measurements.push_back(m);
  }
  j["skipped"] = keys_to_json(skipped);
  j["unsupported"] = keys_to_json(unsupported);
  j["failed"] = keys_to_json(failed);
  j["not_saved"] = keys_to_json(not_saved);
  j["diagnostics"] = diagnostics_to_json(diagnostics);
  j["published_generation"] = published_generation;
  j["cache_update"] = cache_update ? update_to_json(*cache_update) : nlohmann::json();
  j["cache_path"] = cache_path;
  j["effective_threads"] = effective_threads;
  j["elapsed_ms"] = elapsed_ms;
  j["maximum_duration_ms"] = maximum_duration_ms;
  j["measurements"] = measurements;
  return j;
}

CalibrationReport calibrate_kernel_tuning(const CalibrationOptions& options, const OperationContext& context) {
  const runtime::KernelTable& table = context.kernels ? *context.kernels : runtime::cpu_kernel_table();
  runtime::TuningRegistry& registry = context.registry ? *context.registry : runtime::process_tuning_registry();
  const runtime::CpuFeatures& features = context.features ? *context.features : runtime::host_cpu_features();
  if (options.maximum_duration_ms <= 0)
    throw InvalidValueError(fmt::format("maximum_duration_ms must be positive, got {}", options.maximum_duration_ms));
  if (options.maximum_memory_bytes <= 0)
    throw InvalidValueError(fmt::format("maximum_memory_bytes must be positive, got {}", options.maximum_memory_bytes));
  if (options.repeat < 1 || options.repeat > 1000)
    throw InvalidValueError(fmt::format("repeat must be between 1 and 1000, got {}", options.repeat));
  if (options.parameters.size() > 1)
    throw InvalidValueError("compare one parameter at a time (--parameter NAME=V1,V2,...)");
  if (!options.all && options.selection.kernels.empty())
    throw InvalidValueError("name at least one kernel to calibrate, or ask for all calibratable kernels");

  std::shared_ptr<CalibrationClock> clock = options.clock ? options.clock : steady_calibration_clock();
  const int64_t start_ns = clock->now_ns();
  const int64_t threads = resolve_threads(options.num_threads.value_or(0), options.policy);
  // The spin class is recorded with the profile: parking workers move the crossover.
  const bool idle_spin = runtime::idle_workers_spin(options.policy);
  CalibrationReport report;
  try {
    report.cache_path = resolve_cache_path(options.path).string();
  } catch (const NotFoundError&) {
    if (options.save || options.only_missing) throw;  // a run that neither reads nor writes needs no path
  }
  report.effective_threads = threads;
  report.maximum_duration_ms = options.maximum_duration_ms;
  report.repeat = options.repeat;

  // Keys: named kernels must exist; --all takes every calibratable key the filters pass.
  std::vector<const runtime::TuningSchema*> schemas = select_schemas(table, options.selection, features);
  std::vector<const runtime::KernelDef*> work;
  for (const auto* schema : schemas) {
    const runtime::KernelDef* def = table.find_by_key(schema->key);
    bool routine = def != nullptr && def->calibration_workload &&
                   (options.parameters.empty() ? has_calibration_routine(*def) : true);
    if (!routine) {
      if (!options.all) {
        report.unsupported.push_back(schema->key);
        report.diagnostics.push_back(key_message(schema->key, fmt::format("{} has no calibration routine; set its values with `set`.",
                                                                          schema->key.kernel)));
      }
      continue;
    }
    work.push_back(def);
  }
  // A result that cannot be saved is not worth the budget: say so before measuring.
  if (options.save && !work.empty()) {
    UpdateResult check = check_cache_writable(resolve_cache_path(options.path));
    if (!check.ok()) {
      for (const auto& d : check.diagnostics)
        report.diagnostics.push_back(key_message(work.front()->schema.key,
                                                 fmt::format("nothing was measured: {}", d.message)));
      report.cache_update = std::move(check);
      for (const auto* def : work) report.failed.push_back(def->schema.key);
      return report;
    }
  }
  if (options.only_missing && !work.empty()) {
    ProposeOptions propose;
    propose.selection = options.selection;
    propose.path = options.path;
    propose.num_threads = threads;
    propose.idle_spin = idle_spin;
    ProposalReport proposal = propose_kernel_tuning_updates(propose, context);
    // A forced save of an unmeasured or low-confidence result is not a calibration to keep.
    const detail::Environment environment = detail::resolve(context);
    const SchemaIndex index(environment.kernels);
    const detail::Layers layers = detail::read_layers(resolve_cache_path(options.path), environment, index);
    const detail::LoadedIndex loaded = detail::index_loaded(layers);
    auto forced = [&](const TuningKey& key) {
      const auto it = loaded.find({key, threads, idle_spin});
      return it != loaded.end() && is_forced_source(it->second.profile->provenance.source);
    };
    std::vector<const runtime::KernelDef*> missing;
    for (const auto* def : work) {
      bool covered = !forced(def->schema.key) &&
                     std::any_of(proposal.covered.begin(), proposal.covered.end(),
                                 [&](const KernelTuningEntry& e) { return e.key == def->schema.key; });
      if (covered) report.skipped.push_back(def->schema.key);
      else missing.push_back(def);
    }
    work = std::move(missing);
  }

  auto generation = registry.snapshot();
  // The sessions resolve their node from the table being calibrated, not always the CPU table.
  const CaseBenchmarkFactory factory =
      options.benchmark_factory ? options.benchmark_factory
                                : CaseBenchmarkFactory([&table, &options](const runtime::KernelDef& kernel, int pool_threads,
                                                                          uint32_t seed) {
                                    return make_session_benchmark(kernel, pool_threads, seed, &table, options.policy);
                                  });
  // Searches plan to end at 85% of the budget: on a shared machine one batch can be preempted
  // for tens of ms after its prediction was made, and the budget is a hard limit.
  const int64_t budget_ns = options.maximum_duration_ms * kNsPerMs * 85 / 100;
  for (std::size_t index = 0; index < work.size(); ++index) {
    const runtime::KernelDef& def = *work[index];
    const TuningKey& key = def.schema.key;
    // The budget left is shared evenly by the keys left, so one slow key cannot starve the rest.
    int64_t now = clock->now_ns();
    int64_t key_budget = std::max<int64_t>(0, (start_ns + budget_ns - now) / static_cast<int64_t>(work.size() - index));
    int64_t key_deadline = now + key_budget;
    KeyCalibration result;
    result.key = key;
    TuningValues base = def.schema.defaults();
    if (const TuningValues* published = generation->find(key, static_cast<int>(threads), idle_spin);
        published && def.schema.validate(*published).empty())
      base = *published;
    result.values = base;
    CalibrationProgress progress{key, index, work.size(), 0, {}, 0, options.maximum_duration_ms};
    try {
      auto bench = factory(def, static_cast<int>(threads), options.seed);
      if (!options.parameters.empty()) {
        // Comparison mode: the values interleaved on the same cases, lowest summed median wins.
        const auto& [name, texts] = *options.parameters.begin();
        const runtime::ParameterSpec* spec = def.schema.find(name);
        if (spec == nullptr)
          throw NotFoundError(fmt::format("{} has no parameter '{}' (parameters: {})", key.to_string(), name,
                                          fmt::join(def.schema.parameter_names(), ", ")));
        result.parameter = name;
        std::vector<TuningValue> values = parse_comparison_values(*spec, texts);
        std::vector<TuningValues> configurations;
        for (const auto& v : values) {
          TuningValues c = base;
          c[name] = v;
          configurations.push_back(std::move(c));
        }
        std::vector<double> totals(values.size(), 0.0);
        for (int r = 0; r < options.repeat; ++r) {
          progress.repeat = r;
          int64_t run_deadline = clock->now_ns() + (key_deadline - clock->now_ns()) / (options.repeat - r);
          KeyRun run(options, *clock, *bench, run_deadline, progress);
          run.progress_start_ns = start_ns;
          result.cases.clear();
          int cases = 0;
          // Six cases, each kComparisonGrowth times the work of the last, so that they reach the
          // sizes where tile parameters matter (MatMul: 10^3 .. 320^3 multiply-adds; doubling
          // stopped at 32^3, below every gemm.block_k) while the budgets allow.
          for (int64_t size = std::max<int64_t>(1, options.first_size); cases < 6; size *= kComparisonGrowth, ++cases) {
            if (!run.may_run(size, configurations.size(), std::numeric_limits<int64_t>::max() / 4, kComparisonGrowth) &&
                cases > 0)
              break;
            CalibrationCaseReport c = run.run_case(size, configurations);
            for (std::size_t k = 0; k < totals.size(); ++k) totals[k] += c.median_ns[k];
            result.cases.push_back(std::move(c));
          }
        }
        std::size_t fastest = 0;
        for (std::size_t k = 0; k < totals.size(); ++k) {
          result.comparison.push_back({values[k], totals[k], totals[k] > 0 ? totals[0] / totals[k] : 1.0});
          if (totals[k] < totals[fastest]) fastest = k;
        }
        // The fastest replaces the baseline only by more than the noise between equal sessions.
        const bool beats_baseline = totals[fastest] <= totals[0] * (1.0 - kComparisonMinimumGain);
        const std::size_t best = beats_baseline ? fastest : 0;
        result.values = configurations[best];
        result.changed_default = best != 0;
        result.measured = !result.cases.empty();
        std::string table_text;
        for (const auto& e : result.comparison)
          table_text += fmt::format("{}{}={} x{:.3f}", table_text.empty() ? "" : ", ", name, runtime::format_value(e.value), e.speedup);
        const std::string over = fmt::format("over {} case{} (speedup vs baseline {}: {})", result.cases.size(),
                                             result.cases.size() == 1 ? "" : "s", runtime::format_value(values[0]), table_text);
        if (fastest == 0 || beats_baseline)
          report.diagnostics.push_back(key_message(key, fmt::format("{} selected {}={} by summed medians {}.", key.kernel,
                                                                    name, runtime::format_value(values[best]), over)));
        else
          report.diagnostics.push_back(key_message(
              key, fmt::format("{} kept the baseline {}={}: the fastest, {}, was not {:.0f}% faster (noise between equal "
                               "sessions) by summed medians {}.",
                               key.kernel, name, runtime::format_value(values[0]), runtime::format_value(values[fastest]),
                               kComparisonMinimumGain * 100, over)));
      } else {
        const runtime::ParameterSpec& spec = *threshold_parameter(def.schema);
        result.parameter = spec.name;
        if (threads <= 1) {
          report.diagnostics.push_back(key_message(
              key, fmt::format("{} kept {}={}: sessions run on one thread only, so there is no parallel candidate to measure.",
                               key.kernel, spec.name, runtime::format_value(base.at(spec.name)))));
        } else {
          const int64_t default_value = std::get<int64_t>(base.at(spec.name));
          std::vector<SequentialSearchResult> runs;
          const std::optional<CpuTimes> cpu_before = clock->cpu_times();
          warm_up(options, *bench, key_deadline, threshold_configurations(spec, base));
          for (int r = 0; r < options.repeat; ++r) {
            progress.repeat = r;
            int64_t run_deadline = clock->now_ns() + (key_deadline - clock->now_ns()) / (options.repeat - r);
            runs.push_back(run_threshold_search(options, *clock, *bench, run_deadline, spec, base, default_value, progress,
                                                start_ns));
            result.picks.push_back(runs.back().pick.value_or(default_value));
          }
          if (const std::optional<CpuTimes> cpu_after = clock->cpu_times(); cpu_before && cpu_after)
            result.contention = contention_between(*cpu_before, *cpu_after);
          // The saved value is the median pick (a kept default counts as its value).
          std::vector<int64_t> sorted = result.picks;
          std::sort(sorted.begin(), sorted.end());
          const int64_t pick = sorted[(sorted.size() - 1) / 2];
          const SequentialSearchResult* chosen = &runs.back();
          for (const auto& r : runs)
            if (r.pick.value_or(default_value) == pick) chosen = &r;
          result.cases = case_reports(*chosen);
          result.measured = std::any_of(runs.begin(), runs.end(), [](const auto& r) { return !r.sizes.empty(); });
          result.confidence = Confidence::high;
          for (const auto& r : runs) {
            result.confidence = std::min(result.confidence, r.confidence);
            result.noisy = result.noisy || r.noisy;
          }
          for (int64_t p : result.picks)
            if (p * 2 >= pick && p <= pick * 2) ++result.agreement;
          result.values[spec.name] = pick;
          result.changed_default = pick != default_value;
          result.bracket_low = chosen->bracket_low;
          result.bracket_high = chosen->bracket_high;
          if (chosen->pick) {
            report.diagnostics.push_back(key_message(key, fmt::format("{} selected {}={}.", key.kernel, spec.name, pick)));
            if (chosen->stop_rule_met && chosen->bracket_low)
              report.diagnostics.push_back(key_message(key, fmt::format("{} crossover is bracketed by measured sizes {} and {}.",
                                                                        key.kernel, *chosen->bracket_low, *chosen->bracket_high)));
            else if (chosen->stop_rule_met)
              report.diagnostics.push_back(key_message(key, fmt::format("{} crossover is at or below the smallest measured size {}.",
                                                                        key.kernel, *chosen->bracket_high)));
          }
          for (const auto& note : chosen->notes) report.diagnostics.push_back(key_message(key, fmt::format("{} {}.", key.kernel, note)));
          if (!chosen->pick && chosen->sizes.empty())
            report.diagnostics.push_back(
                key_message(key, fmt::format("{} kept {}={}: nothing was measured.", key.kernel, spec.name, default_value)));
          if (result.contention && contended(*result.contention, threads) && !options.allow_load) {
            result.confidence = Confidence::low;
            report.diagnostics.push_back(key_message(
                key, fmt::format("{} measured on a loaded machine: {}, leaving fewer CPUs than the {} threads "
                                 "calibrated for; a threshold measured so describes that load, not the machine "
                                 "(confidence low). Rerun when it is idle.",
                                 key.kernel, describe_load(*result.contention), threads)));
          }
          if (options.repeat > 1) {
            if (result.agreement < options.repeat) result.confidence = Confidence::low;
            report.diagnostics.push_back(key_message(key, fmt::format("{} repeat: {} of {} runs picked within one doubling of {}; picks {}.",
                                                                      key.kernel, result.agreement, options.repeat, pick,
                                                                      fmt::join(result.picks, ", "))));
          }
          report.diagnostics.push_back(key_message(key, fmt::format("{} confidence: {} ({} pairs over {} sizes{}).", key.kernel,
                                                                    confidence_name(result.confidence), chosen->pairs,
                                                                    chosen->sizes.size(),
                                                                    chosen->stop_rule_met ? "" : ", stop rule not met")));
        }
      }
      if (auto problems = def.schema.validate(result.values); !problems.empty())
        throw InvalidValueError(fmt::format("{}: calibrated values fail the schema: {}", key.to_string(), fmt::join(problems, "; ")));
      result.elapsed_ms = (clock->now_ns() - now) / kNsPerMs;
      report.calibrated.push_back(std::move(result));
    } catch (const Error& e) {
      report.failed.push_back(key);
      report.diagnostics.push_back(key_message(key, fmt::format("{} failed: {}", key.kernel, e.what())));
    }
  }

  // One generation for everything that succeeded, then one locked write.
  std::vector<runtime::PublishedProfile> published;
  for (const auto& k : report.calibrated) published.push_back({k.key, static_cast<int>(threads), k.values, idle_spin});
  report.published_generation =
      published.empty() || !options.publish ? registry.published_generation() : registry.publish(published);
  // A pick that measured nothing, or whose measurements disagree (low confidence), is published
  // for this process but not saved as calibrated unless forced.
  std::vector<KeyCalibration*> to_save;
  if (options.save)
    for (auto& k : report.calibrated) {
      if (!k.measured && !options.force_save) {
        report.diagnostics.push_back(key_message(k.key, fmt::format("{} not saved: nothing was measured (use force_save/--force "
                                                                    "to save the values anyway).", k.key.kernel)));
        report.not_saved.push_back(k.key);
        continue;
      }
      if (k.confidence == Confidence::low && !options.force_save) {
        report.diagnostics.push_back(key_message(
            k.key, fmt::format("{} not saved: confidence is low (the measurements disagree, are too noisy for the margin, or were "
                               "taken on a loaded machine); "
                               "rerun on a quieter machine or with a larger --max-duration-ms, or use --force to save it anyway.",
                               k.key.kernel)));
        report.not_saved.push_back(k.key);
        continue;
      }
      to_save.push_back(&k);
    }
  if (!to_save.empty()) {
    const HostDescriptor host = detect_host(threads, idle_spin).generalised(options.save_match);
    std::vector<CacheProfile> profiles;
    for (auto* kp : to_save) {
      KeyCalibration& k = *kp;
      k.saved = true;
      CacheProfile p;
      p.key = k.key;
      p.host = host;
      p.values = k.values;
      // A forced save says what it is, so that inspect and --only-missing can tell it from a
      // measured, agreeing calibration.
      p.provenance = provenance_now(std::string(saved_source(k)), std::string(tool_version()));
      profiles.push_back(std::move(p));
    }
    UpdateOptions update_options = detail::update_options_for(context, table);
    update_options.prune_stale = options.prune_stale;
    report.cache_update = write_profiles(resolve_cache_path(options.path), std::move(profiles), update_options);
    if (!report.cache_update->ok())
      for (auto* kp : to_save) kp->saved = false;
    for (const auto& d : report.cache_update->diagnostics) report.diagnostics.push_back(d);
  }
  report.elapsed_ms = (clock->now_ns() - start_ns) / kNsPerMs;
  return report;
}

}  // namespace onnx_light::tune
