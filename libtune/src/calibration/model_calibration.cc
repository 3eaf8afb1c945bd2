// calibrate_model: thresholds placed around a model's own node sizes, block sizes compared on its
// own products, and an end-to-end check before anything is saved (model_calibration.h).
#include "onnx_light/tune/model_calibration.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <span>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "onnx_light/runtime/calibration_workload.h"
#include "onnx_light/runtime/error.h"
#include "onnx_light/runtime/kernel_table.h"
#include "onnx_light/runtime/session.h"
#include "onnx_light/runtime/thread_pool.h"
#include "onnx_light/runtime/tuning_registry.h"
#include "onnx_light/tune/cache_file.h"
#include "onnx_light/tune/cache_path.h"
#include "onnx_light/tune/host.h"
#include "onnx_light/tune/reports.h"
#include "operation_support.h"

namespace onnx_light::tune {

using runtime::Tensor;
using runtime::TuningKey;
using runtime::TuningValue;
using runtime::TuningValues;

namespace {

constexpr int64_t kNanosecondsPerMillisecond = 1'000'000;

Diagnostic calibration_note(std::string message, std::optional<TuningKey> key = std::nullopt) {
  Diagnostic d;
  d.message = std::move(message);
  d.key = std::move(key);
  return d;
}

// The work-vs-threshold parameter of a schema and its range.
struct ThresholdSpec {
  std::string name;
  int64_t maximum = std::numeric_limits<int64_t>::max();
};

std::optional<ThresholdSpec> threshold_of(const runtime::TuningSchema& schema) {
  const runtime::ParameterSpec* spec = threshold_parameter(schema);
  if (spec == nullptr) return std::nullopt;
  ThresholdSpec t{spec->name};
  if (spec->maximum) t.maximum = static_cast<int64_t>(*spec->maximum);
  return t;
}

// A model, its inputs in graph order, and sessions of it over one shared pool.
class ModelBench {
 public:
  ModelBench(const runtime::Model& model, const ModelCalibrationOptions& o, int threads, const runtime::KernelTable& table)
      : model_(model), threads_(threads), table_(table), parameters_(o.policy) {
    parameters_.num_threads = threads;
    pool_ = std::make_shared<runtime::ThreadPool>(threads, runtime::thread_pool_options(parameters_));
    runtime::RuntimeSession probe(model_, options(nullptr, false));
    std::map<std::string, const Tensor*> given;
    for (const auto& [name, tensor] : o.inputs) given[name] = &tensor;
    std::set<std::string> defaults;
    for (const auto& init : model_.graph().initializer()) defaults.insert(init.name());
    // Every symbolic dimension left open, named in one error.
    std::vector<std::string> unbound, symbols;
    for (const auto& info : probe.inputs()) {
      auto it = given.find(info.name);
      if (it == given.end()) {
        if (defaults.count(info.name) != 0) {
          inputs_.emplace_back();  // the initializer's value
          continue;
        }
        if (!info.has_shape)
          throw InputError(fmt::format("input '{}': the model declares no shape; give a tensor for it", info.name));
        std::vector<runtime::UnboundDimension> open;
        const runtime::Shape shape = runtime::bind_dimensions(info, o.dims, open);
        if (!open.empty()) {
          unbound.push_back(fmt::format("input '{}': {}", info.name, runtime::describe_unbound(open)));
          for (const auto& u : open)
            if (!u.symbol.empty() && std::find(symbols.begin(), symbols.end(), u.symbol) == symbols.end())
              symbols.push_back(u.symbol);
          inputs_.emplace_back();
          continue;
        }
        inputs_.push_back(runtime::random_tensor(info.element_type, shape, o.seed));
        continue;
      }
      inputs_.push_back(*it->second);
      given.erase(it);
    }
    if (!unbound.empty()) {
      std::vector<std::string> cli, python;
      for (const auto& symbol : symbols) {
        cli.push_back(fmt::format("--dim {}=SIZE", symbol));
        python.push_back(fmt::format("'{}': SIZE", symbol));
      }
      throw InputError(symbols.empty()
                           ? fmt::format("{}; give a tensor for it", fmt::join(unbound, "; "))
                           : fmt::format("{}; bind {} ({}, Python dims={{{}}}) or give a tensor", fmt::join(unbound, "; "),
                                         symbols.size() == 1 ? "it" : "them", fmt::join(cli, " "), fmt::join(python, ", ")));
    }
    if (!given.empty()) {
      std::string names;
      for (const auto& info : probe.inputs()) names += (names.empty() ? "" : ", ") + info.name;
      throw InputError(fmt::format("input '{}': the model has no such input (inputs: {})", given.begin()->first, names));
    }
    outputs_.resize(probe.outputs().size());
  }

  std::unique_ptr<runtime::RuntimeSession> session(const std::map<TuningKey, TuningValues>& values, bool profiled) {
    auto registry = std::make_unique<runtime::TuningRegistry>();
    std::vector<runtime::PublishedProfile> published;
    for (const auto& [key, v] : values) published.push_back({key, threads_, v, runtime::idle_workers_spin(parameters_)});
    registry->publish(std::move(published), runtime::PublishMode::replace);
    auto s = std::make_unique<runtime::RuntimeSession>(model_, options(registry.get(), profiled));
    s->initialize();
    registries_.push_back(std::move(registry));  // sessions resolve once; kept for their lifetime anyway
    return s;
  }

  // One run; returns its wall time in microseconds.
  double run(runtime::RuntimeSession& s) {
    const int64_t begin = SteadyNs();
    s.run(std::span<const Tensor>(inputs_), std::span<Tensor>(outputs_));
    return static_cast<double>(SteadyNs() - begin) / 1000.0;
  }

  // One profiled run; per node label its time in microseconds.
  std::map<std::string, double> profiled_run(runtime::RuntimeSession& s, std::map<std::string, int64_t>* work = nullptr) {
    s.reset_profile();
    run(s);
    std::map<std::string, double> times;
    for (const auto& n : s.profile().nodes) {
      times[n.label] = n.total_us;
      if (work != nullptr) (*work)[n.label] = n.threshold_work;
    }
    return times;
  }

 private:
  static int64_t SteadyNs() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
  }
  runtime::RuntimeSessionOptions options(runtime::TuningRegistry* registry, bool profiled) const {
    runtime::RuntimeSessionOptions o;
    o.parameters = parameters_;
    o.registry = registry;
    o.kernels = &table_;
    o.thread_pool = pool_;
    o.profile = profiled;
    o.profile_event_capacity = 1;  // node times only; no timeline
    return o;
  }

  const runtime::Model& model_;
  int threads_;
  const runtime::KernelTable& table_;
  runtime::RuntimeParameters parameters_;
  std::shared_ptr<runtime::ThreadPool> pool_;
  std::vector<std::unique_ptr<runtime::TuningRegistry>> registries_;
  std::vector<Tensor> inputs_;
  std::vector<Tensor> outputs_;
};

std::string verdict_of(const TrimmedMean& r) {
  if (r.high < 1.0) return "parallel";
  if (r.low > 1.0) return "serial";
  return "tie";
}

// Tile parameters of a schema with their allowed values, ascending.
std::map<std::string, std::vector<int64_t>> tile_parameters(const runtime::TuningSchema& schema) {
  std::map<std::string, std::vector<int64_t>> out;
  for (const auto& p : schema.parameters) {
    if (p.role != runtime::ParameterRole::tile) continue;
    std::vector<int64_t> allowed;
    for (const auto& v : p.allowed)
      if (const auto* i = std::get_if<int64_t>(&v)) allowed.push_back(*i);
    std::sort(allowed.begin(), allowed.end());
    if (allowed.size() > 1) out[p.name] = allowed;
  }
  return out;
}

}  // namespace

ThresholdChoice choose_model_threshold(std::vector<ThresholdNode> nodes, int64_t current, int64_t maximum,
                                       double minimum_gain_us) {
  ThresholdChoice choice;
  choice.value = current;
  nodes.erase(std::remove_if(nodes.begin(), nodes.end(), [](const ThresholdNode& n) { return n.work <= 1; }), nodes.end());
  if (nodes.empty()) {
    choice.reason = "no node of this key compares enough work with the threshold to run in parallel";
    return choice;
  }
  std::sort(nodes.begin(), nodes.end(), [](const auto& a, const auto& b) { return a.work < b.work; });
  // Threshold t runs the nodes with work >= t in parallel. Candidates: each distinct work (that
  // node and larger ones parallel), and one above the largest (every node serial).
  auto cost = [&nodes](int64_t t) {
    double c = 0;
    for (const auto& n : nodes) c += n.work >= t ? n.parallel_us : n.serial_us;
    return c;
  };
  std::vector<int64_t> candidates;
  for (const auto& n : nodes)
    if (candidates.empty() || candidates.back() != n.work) candidates.push_back(n.work);
  const int64_t largest = candidates.back();
  candidates.push_back(largest == std::numeric_limits<int64_t>::max() ? largest : largest + 1);
  const double current_cost = cost(current);
  std::size_t best = candidates.size() - 1;  // ties go to the more serial split: fewer wake-ups
  for (std::size_t i = candidates.size(); i-- > 0;)
    if (cost(candidates[i]) < cost(candidates[best])) best = i;
  const double gain = current_cost - cost(candidates[best]);
  auto same_split = [&](int64_t a, int64_t b) {
    return std::all_of(nodes.begin(), nodes.end(), [&](const auto& n) { return (n.work >= a) == (n.work >= b); });
  };
  const std::size_t parallel_nodes = static_cast<std::size_t>(
      std::count_if(nodes.begin(), nodes.end(), [&](const auto& n) { return n.work >= candidates[best]; }));
  const std::string split =
      parallel_nodes == 0 ? fmt::format("every node serial (largest work {})", largest)
      : parallel_nodes == nodes.size()
          ? fmt::format("every node parallel (smallest work {})", nodes.front().work)
          : fmt::format("{} of {} nodes parallel, from work {}", parallel_nodes, nodes.size(), candidates[best]);
  if (same_split(current, candidates[best])) {
    choice.reason = fmt::format("kept {}: it already gives the fastest split measured, {}", current, split);
    return choice;
  }
  if (gain <= 0 || gain < minimum_gain_us) {
    choice.reason = fmt::format("kept {}: the fastest split measured ({}) would save {:.1f} us per run, below the {:.1f} us "
                                "that counts",
                                current, split, gain, minimum_gain_us);
    return choice;
  }
  int64_t value = 0;
  if (best == candidates.size() - 1) {
    // Above every node: no evidence further up, so twice the largest work leaves room for a
    // slightly larger shape of the same node.
    value = largest > maximum / 2 ? maximum : std::max(largest + 1, largest * 2);
  } else if (best == 0) {
    value = candidates[0];  // the largest value that keeps every node parallel
  } else {
    const double lo = static_cast<double>(candidates[best - 1]);
    const double hi = static_cast<double>(candidates[best]);
    value = std::clamp(static_cast<int64_t>(std::llround(std::sqrt(lo * hi))), candidates[best - 1] + 1, candidates[best]);
  }
  value = std::clamp<int64_t>(value, 1, maximum);
  choice.value = value;
  choice.changed = value != current;
  choice.predicted_gain_us = gain;
  choice.reason = fmt::format("chose {} (was {}): {}, saving {:.1f} us per run of the measured node time", value, current,
                              split, gain);
  return choice;
}

EndToEndComparison compare_end_to_end(const std::vector<double>& old_us, const std::vector<double>& new_us) {
  EndToEndComparison e;
  const std::size_t n = std::min(old_us.size(), new_us.size());
  std::vector<double> ratios;
  for (std::size_t i = 0; i < n; ++i) ratios.push_back(new_us[i] / std::max(1e-3, old_us[i]));
  e.pairs = static_cast<int>(n);
  e.old_ms = median(old_us) / 1000.0;
  e.new_ms = median(new_us) / 1000.0;
  e.ratio = trimmed_mean_interval(ratios);
  if (e.pairs < kMinimumEndToEndPairs) {
    e.verdict = "not_measured";
    return e;
  }
  e.measured = true;
  e.verdict = e.ratio.high < 1.0 ? "faster" : (e.ratio.low > 1.0 || e.ratio.mean > 1.01) ? "slower" : "same";
  return e;
}

bool worth_saving(const EndToEndComparison& e) {
  return e.measured && (e.verdict == "faster" || (e.verdict == "same" && e.ratio.mean <= 1.0));
}

bool ModelCalibrationReport::ok() const {
  // A regression, or changes that could not be checked, leave the cache as it was: not a success.
  if (end_to_end.verdict == "slower" || end_to_end.verdict == "not_measured") return false;
  if (cache_update && !cache_update->ok()) return false;
  return true;
}

nlohmann::json ModelCalibrationReport::to_json() const {
  nlohmann::json j;
  j["model"] = model;
  j["cache_path"] = cache_path;
  j["effective_threads"] = effective_threads;
  j["model_ms"] = model_ms;
  j["elapsed_ms"] = elapsed_ms;
  j["maximum_duration_ms"] = maximum_duration_ms;
  j["keys"] = nlohmann::json::array();
  for (const auto& k : keys) {
    nlohmann::json e = key_to_json(k.key);
    e["nodes"] = k.nodes;
    e["share"] = k.share;
    e["old_values"] = values_to_json(k.old_values);
    e["new_values"] = values_to_json(k.new_values);
    e["changed"] = k.changed;
    e["reasons"] = k.reasons;
    j["keys"].push_back(std::move(e));
  }
  j["nodes"] = nlohmann::json::array();
  for (const auto& n : nodes)
    j["nodes"].push_back({{"node", n.node},
                          {"kernel", n.key.kernel},
                          {"implementation", n.key.implementation},
                          {"work", n.work},
                          {"serial_us", n.serial_us},
                          {"parallel_us", n.parallel_us},
                          {"ratio", n.ratio.mean},
                          {"ratio_low", n.ratio.low},
                          {"ratio_high", n.ratio.high},
                          {"pairs", n.pairs},
                          {"verdict", n.verdict}});
  const auto& e = end_to_end;
  nlohmann::json ee = {{"measured", e.measured}, {"pairs", e.pairs}, {"verdict", e.verdict}};
  if (e.measured) {
    ee["old_ms"] = e.old_ms;
    ee["new_ms"] = e.new_ms;
    ee["ratio"] = e.ratio.mean;
    ee["ratio_low"] = e.ratio.low;
    ee["ratio_high"] = e.ratio.high;
    ee["speedup"] = e.ratio.mean > 0 ? 1.0 / e.ratio.mean : 0.0;
    ee["speedup_low"] = e.ratio.high > 0 ? 1.0 / e.ratio.high : 0.0;
    ee["speedup_high"] = e.ratio.low > 0 ? 1.0 / e.ratio.low : 0.0;
  }
  j["end_to_end"] = ee;
  j["saved"] = saved;
  j["published_generation"] = published_generation;
  j["cache_update"] = cache_update ? update_to_json(*cache_update) : nlohmann::json();
  j["diagnostics"] = diagnostics_to_json(diagnostics);
  j["ok"] = ok();
  return j;
}

ModelCalibrationReport calibrate_model(const runtime::Model& model, const ModelCalibrationOptions& options,
                                       const OperationContext& context) {
  if (options.maximum_duration_ms <= 0)
    throw InvalidValueError(fmt::format("maximum_duration_ms must be positive, got {}", options.maximum_duration_ms));
  const runtime::KernelTable& table = context.kernels ? *context.kernels : runtime::cpu_kernel_table();
  runtime::TuningRegistry& process_registry = context.registry ? *context.registry : runtime::process_tuning_registry();
  const std::shared_ptr<CalibrationClock> clock = options.clock ? options.clock : steady_calibration_clock();
  const int64_t start_ns = clock->now_ns();
  const int64_t deadline_ns = start_ns + options.maximum_duration_ms * kNanosecondsPerMillisecond;
  const int threads = static_cast<int>(resolve_threads(options.num_threads.value_or(0), options.policy));
  const bool idle_spin = runtime::idle_workers_spin(options.policy);

  ModelCalibrationReport report;
  report.model = model.origin();
  report.cache_path = resolve_cache_path(options.path).string();
  report.effective_threads = threads;
  report.maximum_duration_ms = options.maximum_duration_ms;
  auto elapsed_ms = [&] { return (clock->now_ns() - start_ns) / kNanosecondsPerMillisecond; };
  auto progress = [&](const char* phase, int round) {
    if (options.progress) options.progress({phase, round, elapsed_ms(), options.maximum_duration_ms});
  };

  // The values in force: this host's cached profile (user over system layer), else the defaults.
  ParametersOptions parameters;
  parameters.path = options.path;
  parameters.num_threads = threads;
  parameters.idle_spin = idle_spin;
  KernelParametersReport in_force = kernel_tuning_parameters(parameters, context);
  if (options.save) {
    const UpdateResult check = check_cache_writable(resolve_cache_path(options.path));
    if (!check.ok())
      throw IoError(fmt::format("{}; nothing was measured, since the result could not be saved (see "
                                "'onnx-light-tune inspect')",
                                check.diagnostics.empty()
                                    ? fmt::format("{} is {}", in_force.cache_path, update_status_name(check.status))
                                    : check.diagnostics.front().message));
  }
  std::map<TuningKey, TuningValues> old_values;
  for (const auto& e : in_force.kernels) old_values[e.key] = e.cached_values ? *e.cached_values : e.defaults;

  ModelBench bench(model, options, threads, table);
  std::unique_ptr<runtime::RuntimeSession> base = bench.session(old_values, /*profiled=*/true);

  // Which key each node runs, and the work it compares with its threshold.
  std::map<std::string, TuningKey> node_key;
  std::map<TuningKey, std::vector<std::string>> key_nodes;
  for (const auto& r : base->resolved_tuning()) {
    node_key[r.node] = r.key;
    key_nodes[r.key].push_back(r.node);
  }
  std::map<std::string, int64_t> work;
  progress("warm_up", 0);
  bench.profiled_run(*base, &work);  // warm-up: buffers, caches, packed weights
  std::vector<double> base_ms;
  std::map<std::string, double> base_node_us;
  {
    std::map<std::string, std::vector<double>> per_node;
    for (int i = 0; i < 3; ++i) {
      const auto times = bench.profiled_run(*base);
      double total = 0;
      for (const auto& [label, us] : times) {
        per_node[label].push_back(us);
        total += us;
      }
      base_ms.push_back(total / 1000.0);
    }
    for (auto& [label, v] : per_node) base_node_us[label] = median(v);
  }
  report.model_ms = median(base_ms);
  const double model_us = report.model_ms * 1000.0;

  std::map<TuningKey, ModelKeyCalibration> results;
  for (const auto& [key, labels] : key_nodes) {
    ModelKeyCalibration k;
    k.key = key;
    k.nodes = static_cast<int>(labels.size());
    for (const auto& l : labels) k.share += model_us > 0 ? base_node_us[l] / model_us : 0.0;
    auto it = old_values.find(key);
    if (it == old_values.end()) {
      const runtime::KernelDef* def = table.find_by_key(key);
      it = old_values.emplace(key, def ? def->schema.defaults() : TuningValues{}).first;
    }
    k.old_values = it->second;
    k.new_values = it->second;
    results[key] = std::move(k);
  }

  // Each phase takes a share of the time left when it starts; the end-to-end check gets the rest.
  const double run_ns = std::max(1.0, model_us * 1000.0);
  auto phase_deadline = [&](double share) {
    const int64_t now = clock->now_ns();
    return now + static_cast<int64_t>(static_cast<double>(deadline_ns - now) * share);
  };

  // The whole model with values `a` against values `b`, interleaved run by run until `until`, at most
  // `maximum_pairs`; from 20 pairs on it stops once the interval of b/a clears 1 either way. Two
  // sessions of the same values differ by ~2% on this VM (buffer and weight placement, creation
  // order), so both are built again every 10 pairs, in alternating order: that bias averages out
  // instead of deciding.
  auto whole_model_ab = [&](const std::map<TuningKey, TuningValues>& a, const std::map<TuningKey, TuningValues>& b,
                            int64_t until, int maximum_pairs, const char* phase, bool stop_early = true) {
    std::unique_ptr<runtime::RuntimeSession> s_a, s_b;
    std::vector<double> a_t, b_t;
    for (int pair = 0; pair < maximum_pairs; ++pair) {
      if (clock->now_ns() + static_cast<int64_t>(2.5 * run_ns) > until) break;
      if (pair % 10 == 0) {
        s_a.reset();
        s_b.reset();
        if ((pair / 10) % 2 == 0) {
          s_a = bench.session(a, false);
          s_b = bench.session(b, false);
        } else {
          s_b = bench.session(b, false);
          s_a = bench.session(a, false);
        }
        bench.run(*s_a);
        bench.run(*s_b);
      }
      if (pair % 8 == 0) progress(phase, pair);
      const bool a_first = pair % 2 == 0;
      const double x = bench.run(a_first ? *s_a : *s_b);
      const double y = bench.run(a_first ? *s_b : *s_a);
      a_t.push_back(a_first ? x : y);
      b_t.push_back(a_first ? y : x);
      if (stop_early && a_t.size() >= 20 && a_t.size() % 10 == 0) {
        const EndToEndComparison e = compare_end_to_end(a_t, b_t);
        if (e.ratio.high < 1.0 || e.ratio.low > 1.0) break;
      }
    }
    return compare_end_to_end(a_t, b_t);
  };

  // Phase 1: thresholds, in place.
  std::map<TuningKey, ThresholdSpec> threshold_keys;
  for (const auto& [key, labels] : key_nodes) {
    const runtime::KernelDef* def = table.find_by_key(key);
    if (def == nullptr) continue;
    auto spec = threshold_of(def->schema);
    if (!spec) continue;
    if (std::any_of(labels.begin(), labels.end(), [&](const std::string& l) { return work[l] > 1; }))
      threshold_keys[key] = *spec;
  }
  const bool tiles_possible = options.tune_blocks && std::any_of(key_nodes.begin(), key_nodes.end(), [&](const auto& kv) {
    const runtime::KernelDef* def = table.find_by_key(kv.first);
    return def != nullptr && !tile_parameters(def->schema).empty();
  });
  if (threads <= 1) {
    report.diagnostics.push_back(calibration_note("Thresholds kept: sessions run on one thread, so no node runs in parallel."));
  } else if (threshold_keys.empty()) {
    report.diagnostics.push_back(calibration_note("Thresholds kept: no node of the model compares work with a parallel threshold."));
  } else {
    const int64_t phase_end = phase_deadline(tiles_possible ? 0.2 : 0.3);
    std::map<TuningKey, TuningValues> serial = old_values, parallel = old_values;
    for (const auto& [key, spec] : threshold_keys) {
      serial[key][spec.name] = spec.maximum;
      parallel[key][spec.name] = int64_t{1};
    }
    auto s_serial = bench.session(serial, true);
    auto s_parallel = bench.session(parallel, true);
    bench.profiled_run(*s_serial);
    bench.profiled_run(*s_parallel);
    std::map<std::string, std::vector<double>> ser, par;
    int rounds = 0;
    for (; rounds < 60; ++rounds) {
      if (clock->now_ns() + static_cast<int64_t>(2.5 * run_ns) > phase_end) break;
      progress("thresholds", rounds);
      const bool serial_first = rounds % 2 == 0;
      auto a = bench.profiled_run(serial_first ? *s_serial : *s_parallel);
      auto b = bench.profiled_run(serial_first ? *s_parallel : *s_serial);
      const auto& s = serial_first ? a : b;
      const auto& p = serial_first ? b : a;
      for (const auto& [label, key] : node_key) {
        if (!threshold_keys.count(key) || work[label] <= 1) continue;
        ser[label].push_back(s.count(label) ? s.at(label) : 0.0);
        par[label].push_back(p.count(label) ? p.at(label) : 0.0);
      }
      // Stop early once every node is decided.
      if (rounds >= 11) {
        bool all_decided = true;
        for (const auto& [label, sv] : ser) {
          std::vector<double> ratios;
          for (std::size_t i = 0; i < sv.size(); ++i) ratios.push_back(sv[i] > 0 ? par[label][i] / sv[i] : 1.0);
          if (verdict_of(trimmed_mean_interval(ratios)) == "tie") all_decided = false;
        }
        if (all_decided) {
          ++rounds;
          break;
        }
      }
    }
    std::map<TuningKey, std::vector<ThresholdNode>> per_key;
    for (const auto& [label, sv] : ser) {
      ModelNodeEvidence n;
      n.node = label;
      n.key = node_key[label];
      n.work = work[label];
      std::vector<double> ratios;
      for (std::size_t i = 0; i < sv.size(); ++i) ratios.push_back(sv[i] > 0 ? par[label][i] / sv[i] : 1.0);
      n.pairs = static_cast<int>(ratios.size());
      n.ratio = trimmed_mean_interval(ratios);
      n.serial_us = median(sv);
      n.parallel_us = median(par[label]);
      n.verdict = verdict_of(n.ratio);
      // A tie is no evidence either way: it weighs the same on both sides of any split.
      per_key[n.key].push_back({n.work, n.serial_us, n.verdict == "tie" ? n.serial_us : n.parallel_us});
      report.nodes.push_back(std::move(n));
    }
    std::sort(report.nodes.begin(), report.nodes.end(), [](const auto& a, const auto& b) {
      return a.key.kernel != b.key.kernel ? a.key.kernel < b.key.kernel : a.work < b.work;
    });
    report.diagnostics.push_back(calibration_note(fmt::format("Thresholds: {} nodes of {} keys measured in place, {} interleaved "
                                                  "all-serial/all-parallel runs each.",
                                                  ser.size(), threshold_keys.size(), rounds)));
    struct Proposal {
      TuningKey key;
      std::string parameter;
      ThresholdChoice choice;
    };
    std::vector<Proposal> proposals;
    // Small gains per key add up (every parallel region of a model that does not pay costs a
    // little), so every key with a predicted gain takes part in a combined trial first; a key
    // on its own must promise 1% of the model's run.
    const double minimum_alone_us = std::max(2.0, 0.01 * model_us);
    for (const auto& [key, spec] : threshold_keys) {
      ModelKeyCalibration& k = results[key];
      const int64_t current = std::get<int64_t>(k.old_values.at(spec.name));
      ThresholdChoice c = choose_model_threshold(per_key[key], current, spec.maximum, std::max(0.5, 0.001 * model_us));
      if (c.changed) proposals.push_back({key, spec.name, c});
      else k.reasons.push_back(fmt::format("{}: {}", spec.name, c.reason));
    }
    std::sort(proposals.begin(), proposals.end(),
              [](const auto& a, const auto& b) { return a.choice.predicted_gain_us > b.choice.predicted_gain_us; });
    const int64_t verify_end = phase_deadline(tiles_possible ? 0.15 : 0.25);
    auto speedup_text = [](const EndToEndComparison& e) {
      return fmt::format("x{:.3f} [{:.3f}, {:.3f}] over {} pairs", 1.0 / e.ratio.mean, 1.0 / e.ratio.high,
                         e.ratio.low > 0 ? 1.0 / e.ratio.low : 0.0, e.pairs);
    };
    auto confirmed = [](const EndToEndComparison& e) { return e.measured && e.pairs >= 20 && e.ratio.high < 1.0; };
    auto accept = [&](const Proposal& p, const std::string& how) {
      ModelKeyCalibration& k = results[p.key];
      k.new_values[p.parameter] = p.choice.value;
      k.changed.push_back(p.parameter);
      k.reasons.push_back(fmt::format("{}: {}; {}", p.parameter, p.choice.reason, how));
    };
    std::set<std::size_t> decided;
    // Whole-model candidates: the per-key proposals together, every node of the model serial, and
    // every node parallel. Node sums miss what the extremes have and a mix has not: when every
    // node runs on the same split, each thread finds its part of a layer's input in its own
    // cache; a serial node between two parallel ones moves the data across cores twice.
    struct Candidate {
      std::string name;
      std::map<TuningKey, TuningValues> values;
      std::vector<Proposal> changes;
    };
    std::vector<Candidate> candidates;
    if (proposals.size() > 1) {
      Candidate c{fmt::format("the {} proposed threshold changes together", proposals.size()), old_values, proposals};
      for (const auto& p : proposals) c.values[p.key][p.parameter] = p.choice.value;
      candidates.push_back(std::move(c));
    }
    for (const bool all_serial : {true, false}) {
      Candidate c{all_serial ? "every node serial" : "every node parallel", old_values, {}};
      for (const auto& [key, spec] : threshold_keys) {
        // A profile holds for every model on this machine: a key whose nodes take under 1% of this
        // one cannot pay back here what an extreme value may cost elsewhere (Concat parallel from
        // 3 elements).
        if (results[key].share < 0.01) continue;
        int64_t lo = std::numeric_limits<int64_t>::max(), hi = 0;
        for (const auto& n : per_key[key])
          if (n.work > 1) {
            lo = std::min(lo, n.work);
            hi = std::max(hi, n.work);
          }
        if (hi == 0) continue;
        const int64_t current = std::get<int64_t>(old_values[key].at(spec.name));
        // The value nearest the current one that gives this split (as choose_model_threshold).
        const int64_t value = all_serial ? (current > hi ? current : (hi > spec.maximum / 2 ? spec.maximum : hi * 2))
                                     : (current <= lo ? current : lo);
        if (value == current) continue;
        ThresholdChoice choice;
        choice.value = value;
        choice.changed = true;
        choice.reason = fmt::format("chose {} (was {}): {}", value, current, c.name);
        c.values[key][spec.name] = value;
        c.changes.push_back({key, spec.name, choice});
      }
      if (!c.changes.empty()) candidates.push_back(std::move(c));
    }
    {
      std::optional<std::size_t> best;
      EndToEndComparison best_e;
      const int64_t share_end = [&] {
        const int64_t now = clock->now_ns();
        return now + (verify_end - now) * 2 / 3;
      }();
      for (std::size_t i = 0; i < candidates.size(); ++i) {
        const int64_t now = clock->now_ns();
        const int64_t until = now + (share_end - now) / static_cast<int64_t>(candidates.size() - i);
        // The same number of pairs for each (no early stop): the best of several is chosen, and
        // a candidate stopped early on a lucky streak would win by its luck.
        const EndToEndComparison e =
            whole_model_ab(old_values, candidates[i].values, until, 100, "thresholds_confirm", /*stop_early=*/false);
        report.diagnostics.push_back(calibration_note(fmt::format("Whole-model candidate, {}: {}.", candidates[i].name,
                                                      e.measured ? speedup_text(e) : std::string("not measured"))));
        if (confirmed(e) && (!best || e.ratio.mean < best_e.ratio.mean)) {
          best = i;
          best_e = e;
        }
      }
      if (best) {
        const Candidate& c = candidates[*best];
        for (const auto& p : c.changes)
          accept(p, fmt::format("the whole model confirmed {}: {}", c.name, speedup_text(best_e)));
        // Every proposal is settled: the winner replaced them.
        for (std::size_t i = 0; i < proposals.size(); ++i) {
          decided.insert(i);
          const bool taken = std::any_of(c.changes.begin(), c.changes.end(), [&](const Proposal& q) {
            return q.key == proposals[i].key && q.parameter == proposals[i].parameter;
          });
          if (!taken)
            results[proposals[i].key].reasons.push_back(
                fmt::format("{}: kept: {} won on the whole model without it", proposals[i].parameter, c.name));
        }
      }
    }
    // Alone, largest predicted gain first, each against the values kept so far: a node's parallel
    // region costs more when the one before ran serially (the workers have parked), so node sums
    // are only a guide.
    std::map<TuningKey, TuningValues> kept = old_values;
    for (std::size_t i = 0; i < proposals.size(); ++i) {
      if (decided.count(i) != 0) continue;
      const Proposal& p = proposals[i];
      ModelKeyCalibration& k = results[p.key];
      const std::string was = runtime::format_value(k.old_values.at(p.parameter));
      if (p.choice.predicted_gain_us < minimum_alone_us) {
        k.reasons.push_back(fmt::format("{}: kept {}: alone, {} would save {:.1f} us per run by its nodes, below the "
                                        "{:.1f} us that counts",
                                        p.parameter, was, p.choice.value, p.choice.predicted_gain_us, minimum_alone_us));
        continue;
      }
      std::map<TuningKey, TuningValues> trial = kept;
      trial[p.key][p.parameter] = p.choice.value;
      const int64_t now = clock->now_ns();
      const int64_t until = now + (verify_end - now) / static_cast<int64_t>(proposals.size() - i);
      const EndToEndComparison e = whole_model_ab(kept, trial, until, 200, "thresholds_confirm");
      if (confirmed(e)) {
        kept = trial;
        accept(p, fmt::format("the whole model confirmed it: {}", speedup_text(e)));
      } else if (e.measured) {
        k.reasons.push_back(fmt::format("{}: kept {}: its nodes said {} would save {:.1f} us per run, but the whole model "
                                        "ran {} with it",
                                        p.parameter, was, p.choice.value, p.choice.predicted_gain_us, speedup_text(e)));
      } else {
        k.reasons.push_back(fmt::format("{}: kept {}: {} was proposed but the budget left no time to confirm it on the "
                                        "whole model",
                                        p.parameter, was, p.choice.value));
      }
    }
  }

  // Phase 2: block sizes of the packed-GEMM keys, one allowed step down and up.
  if (tiles_possible) {
    std::map<TuningKey, TuningValues> phase_base;
    for (const auto& [key, v] : old_values) phase_base[key] = v;
    for (const auto& [key, k] : results) phase_base[key] = k.new_values;
    struct Variant {
      std::string parameter;
      int direction;
      std::map<TuningKey, TuningValues> values;
      std::set<TuningKey> changed;
    };
    std::vector<Variant> variants;
    std::map<TuningKey, std::map<std::string, std::vector<int64_t>>> tiles;
    std::set<std::string> names;
    for (const auto& [key, labels] : key_nodes) {
      const runtime::KernelDef* def = table.find_by_key(key);
      if (def == nullptr) continue;
      auto t = tile_parameters(def->schema);
      if (t.empty()) continue;
      tiles[key] = t;
      for (const auto& [name, allowed] : t) names.insert(name);
    }
    for (const auto& name : names)
      for (int direction : {-1, +1}) {
        Variant v{name, direction, phase_base, {}};
        for (const auto& [key, t] : tiles) {
          auto it = t.find(name);
          if (it == t.end()) continue;
          const auto& allowed = it->second;
          const int64_t now = std::get<int64_t>(phase_base[key].at(name));
          auto pos = std::find(allowed.begin(), allowed.end(), now);
          if (pos == allowed.end()) continue;
          if (direction < 0 && pos == allowed.begin()) continue;
          if (direction > 0 && pos + 1 == allowed.end()) continue;
          v.values[key][name] = direction < 0 ? *(pos - 1) : *(pos + 1);
          v.changed.insert(key);
        }
        if (!v.changed.empty()) variants.push_back(std::move(v));
      }
    const int64_t phase_end = phase_deadline(0.55);
    auto s_base = bench.session(phase_base, true);
    std::vector<std::unique_ptr<runtime::RuntimeSession>> sessions;
    for (const auto& v : variants) sessions.push_back(bench.session(v.values, true));
    auto key_sum = [&](const std::map<std::string, double>& times, const TuningKey& key) {
      double sum = 0;
      for (const auto& l : key_nodes[key]) sum += times.count(l) ? times.at(l) : 0.0;
      return sum;
    };
    bench.profiled_run(*s_base);
    for (auto& s : sessions) bench.profiled_run(*s);
    // ratios[variant][key]: variant's key time / base's, per round.
    std::vector<std::map<TuningKey, std::vector<double>>> ratios(variants.size());
    int rounds = 0;
    const double round_ns = run_ns * static_cast<double>(variants.size() + 1) * 1.2;
    for (; rounds < 40; ++rounds) {
      if (clock->now_ns() + static_cast<int64_t>(round_ns) > phase_end) break;
      progress("blocks", rounds);
      const bool base_first = rounds % 2 == 0;
      std::map<std::string, double> base_times;
      if (base_first) base_times = bench.profiled_run(*s_base);
      std::vector<std::map<std::string, double>> times(variants.size());
      for (std::size_t i = 0; i < variants.size(); ++i) {
        const std::size_t v = (i + static_cast<std::size_t>(rounds)) % variants.size();
        times[v] = bench.profiled_run(*sessions[v]);
      }
      if (!base_first) base_times = bench.profiled_run(*s_base);
      for (std::size_t v = 0; v < variants.size(); ++v)
        for (const auto& key : variants[v].changed) {
          const double b = key_sum(base_times, key);
          ratios[v][key].push_back(b > 0 ? key_sum(times[v], key) / b : 1.0);
        }
    }
    if (rounds < 6) {
      report.diagnostics.push_back(calibration_note(fmt::format("Block sizes kept: only {} rounds fitted the budget (6 needed); one "
                                                    "round runs the model {} times.",
                                                    rounds, variants.size() + 1)));
    } else {
      report.diagnostics.push_back(calibration_note(fmt::format("Block sizes: {} variants against the base, {} interleaved rounds.",
                                                    variants.size(), rounds)));
      for (const auto& [key, t] : tiles) {
        ModelKeyCalibration& k = results[key];
        double key_us = 0;
        for (const auto& l : key_nodes[key]) key_us += base_node_us[l];
        const double minimum_gain_us = std::max(2.0, 0.01 * model_us);
        for (const auto& [name, allowed] : t) {
          std::optional<std::size_t> best;
          TrimmedMean best_ratio;
          for (std::size_t v = 0; v < variants.size(); ++v) {
            if (variants[v].parameter != name || !variants[v].changed.count(key)) continue;
            TrimmedMean r = trimmed_mean_interval(ratios[v][key]);
            // A step must beat the base by its whole interval, by 3% on this key's nodes (two
            // sessions of the same values differ by up to ~2%), and by 1% of the model's run (a key
            // with a tiny share cannot pay for a profile).
            if (r.high < 1.0 && r.mean < 0.97 && (1.0 - r.mean) * key_us >= minimum_gain_us &&
                (!best || r.mean < best_ratio.mean)) {
              best = v;
              best_ratio = r;
            }
          }
          const int64_t was = std::get<int64_t>(phase_base[key].at(name));
          if (best) {
            const int64_t value = std::get<int64_t>(variants[*best].values[key].at(name));
            k.new_values[name] = value;
            k.changed.push_back(name);
            k.reasons.push_back(fmt::format("{}: chose {} (was {}): this key's nodes took {:.3f}x [{:.3f}, {:.3f}] the time",
                                            name, value, was, best_ratio.mean, best_ratio.low, best_ratio.high));
          } else {
            k.reasons.push_back(fmt::format("{}: kept {}: neither neighbouring allowed value was faster by its whole "
                                            "interval, 3% of this key's time and 1% of the model's",
                                            name, was));
          }
        }
      }
      // Per-key node sums can favour a block size the whole model does not (the next node reads
      // what this one wrote, in the layout its blocks left in cache): the steps taken are kept
      // only when the whole model confirms them.
      std::map<TuningKey, TuningValues> with_blocks = phase_base;
      std::vector<std::pair<TuningKey, std::string>> steps;
      for (const auto& [key, t] : tiles)
        for (const auto& [name, allowed] : t)
          if (results[key].new_values.at(name) != phase_base[key].at(name)) {
            with_blocks[key][name] = results[key].new_values.at(name);
            steps.emplace_back(key, name);
          }
      if (!steps.empty()) {
        const int64_t now = clock->now_ns();
        const EndToEndComparison e = whole_model_ab(phase_base, with_blocks, now + (deadline_ns - now) / 3, 200, "blocks_confirm");
        const std::string text = e.measured ? fmt::format("x{:.3f} [{:.3f}, {:.3f}] over {} pairs", 1.0 / e.ratio.mean,
                                                          1.0 / e.ratio.high, e.ratio.low > 0 ? 1.0 / e.ratio.low : 0.0, e.pairs)
                                            : std::string("not measured");
        // 2% by the whole interval: block steps that passed in process at +1-3% did not hold across
        // processes (bench/RESULTS.md, "Calibration driven by a model").
        const bool keep = e.measured && e.pairs >= 20 && e.ratio.high < 1.0 / 1.02;
        report.diagnostics.push_back(calibration_note(fmt::format("Block sizes: the {} step{} on the whole model: {}; {}.", steps.size(),
                                                      steps.size() == 1 ? "" : "s", text, keep ? "kept" : "undone")));
        if (!keep)
          for (const auto& [key, name] : steps) {
            ModelKeyCalibration& k = results[key];
            k.new_values[name] = phase_base[key].at(name);
            k.changed.erase(std::remove(k.changed.begin(), k.changed.end(), name), k.changed.end());
            k.reasons.push_back(fmt::format("{}: undone: the whole model did not confirm the block steps ({})", name, text));
          }
      }
    }
  }

  // Phase 3: the whole model, values in force against the new ones, interleaved.
  std::map<TuningKey, TuningValues> new_values = old_values;
  bool any_change = false;
  for (const auto& [key, k] : results) {
    new_values[key] = k.new_values;
    any_change = any_change || !k.changed.empty();
  }
  if (any_change) {
    report.end_to_end = whole_model_ab(old_values, new_values, deadline_ns, 400, "end_to_end");
    const EndToEndComparison& e = report.end_to_end;
    if (!e.measured) {
      report.diagnostics.push_back(
          calibration_note(fmt::format("End-to-end check: only {} pairs fitted the budget ({} needed); nothing is saved. Give a larger "
                           "--max-duration-ms (one run takes {:.1f} ms).",
                           e.pairs, kMinimumEndToEndPairs, report.model_ms)));
    } else {
      report.diagnostics.push_back(calibration_note(fmt::format(
          "End-to-end: {:.3f} ms -> {:.3f} ms per run (medians), speedup x{:.3f} [{:.3f}, {:.3f}] over {} interleaved pairs: {}.",
          e.old_ms, e.new_ms, 1.0 / e.ratio.mean, 1.0 / e.ratio.high, e.ratio.low > 0 ? 1.0 / e.ratio.low : 0.0, e.pairs,
          e.verdict)));
    }
  } else {
    report.diagnostics.push_back(calibration_note("Nothing changed: the values in force are the best measured for this model."));
  }
  for (auto& [key, k] : results) report.keys.push_back(std::move(k));
  std::sort(report.keys.begin(), report.keys.end(), [](const auto& a, const auto& b) { return a.share > b.share; });

  const bool keep = worth_saving(report.end_to_end);
  if (report.end_to_end.verdict == "slower")
    report.diagnostics.push_back(calibration_note("Not saved: the model ran slower with the new values (a regression; nothing written)."));
  else if (report.end_to_end.verdict == "same" && !keep)
    report.diagnostics.push_back(calibration_note("Not saved: the new values were not faster on the whole model."));
  std::vector<runtime::PublishedProfile> published;
  std::vector<CacheProfile> profiles;
  if (keep) {
    // The machine the context describes (tests pass one), else this one.
    HostDescriptor host =
        (context.machine ? context.machine->with_conditions(threads, idle_spin) : detect_host(threads, idle_spin))
            .generalised(options.save_match);
    const Provenance provenance = provenance_now(
        "calibrate", context.tool_version.empty() ? std::string(tool_version()) : context.tool_version);
    for (const auto& k : report.keys) {
      if (k.changed.empty()) continue;
      published.push_back({k.key, threads, k.new_values, idle_spin});
      CacheProfile p;
      p.key = k.key;
      p.host = host;
      p.values = k.new_values;
      p.provenance = provenance;
      profiles.push_back(std::move(p));
    }
  }
  if (!published.empty() && options.publish) report.published_generation = process_registry.publish(published);
  else report.published_generation = process_registry.published_generation();
  if (options.save && !profiles.empty()) {
    UpdateOptions update = detail::update_options_for(context, table);
    update.prune_stale = options.prune_stale;
    report.cache_update = write_profiles(resolve_cache_path(options.path), std::move(profiles), update);
    report.saved = report.cache_update->ok();
    for (const auto& d : report.cache_update->diagnostics) report.diagnostics.push_back(d);
  }
  report.elapsed_ms = elapsed_ms();
  return report;
}

}  // namespace onnx_light::tune
