// verify_kernel_tuning: the cached profiles of this host re-measured by the calibration engine
// (no save, no publish), one key at a time within an even share of the budget left.
#include <algorithm>

#include <fmt/format.h>

#include "onnx_light/runtime/error.h"
#include "onnx_light/runtime/kernel_table.h"
#include "onnx_light/tune/reports.h"
#include "onnx_light/tune/verification.h"

namespace onnx_light::tune {

const char* drift_status_name(DriftStatus s) {
  switch (s) {
    case DriftStatus::holds: return "holds";
    case DriftStatus::drifted: return "drifted";
    case DriftStatus::not_measured: return "not_measured";
  }
  return "not_measured";
}

bool VerificationReport::drifted() const {
  return std::any_of(profiles.begin(), profiles.end(), [](const auto& p) { return p.status == DriftStatus::drifted; });
}

nlohmann::json VerificationReport::to_json() const {
  nlohmann::json j;
  j["cache_path"] = cache_path;
  j["cache_status"] = std::string(file_status_name(cache_status));
  j["effective_threads"] = effective_threads;
  j["elapsed_ms"] = elapsed_ms;
  j["maximum_duration_ms"] = maximum_duration_ms;
  j["diagnostics"] = nlohmann::json::array();
  for (const auto& d : diagnostics) j["diagnostics"].push_back(d.to_json());
  j["profiles"] = nlohmann::json::array();
  int counts[3] = {0, 0, 0};
  for (const auto& p : profiles) {
    nlohmann::json e = key_to_json(p.key);
    e["parameter"] = p.parameter;
    e["cached"] = p.cached ? nlohmann::json(*p.cached) : nlohmann::json();
    e["measured"] = p.measured ? nlohmann::json(*p.measured) : nlohmann::json();
    e["status"] = drift_status_name(p.status);
    e["confidence"] = p.measured ? nlohmann::json(confidence_name(p.confidence)) : nlohmann::json();
    e["reason"] = p.reason;
    e["elapsed_ms"] = p.elapsed_ms;
    j["profiles"].push_back(std::move(e));
    ++counts[static_cast<int>(p.status)];
  }
  j["summary"] = {{"holds", counts[0]}, {"drifted", counts[1]}, {"not_measured", counts[2]}};
  return j;
}

namespace {


std::optional<int64_t> int_value(const runtime::TuningValues& values, const std::string& name) {
  auto it = values.find(name);
  if (it == values.end()) return std::nullopt;
  if (const auto* v = std::get_if<int64_t>(&it->second)) return *v;
  return std::nullopt;
}

}  // namespace

VerificationReport verify_kernel_tuning(const VerifyOptions& options, const OperationContext& context) {
  if (options.maximum_duration_ms <= 0)
    throw InvalidValueError(fmt::format("maximum_duration_ms must be positive, got {}", options.maximum_duration_ms));
  // The engine's clock (injected in tests), so that the shares and the searches agree on time.
  const std::shared_ptr<CalibrationClock> clock = options.clock ? options.clock : steady_calibration_clock();
  const auto steady_ms = [&clock] { return clock->now_ns() / 1'000'000; };
  const int64_t start_ms = steady_ms();
  ProposeOptions propose;
  propose.selection = options.selection;
  propose.path = options.path;
  propose.num_threads = options.num_threads;
  propose.idle_spin = runtime::idle_workers_spin(options.policy);
  ProposalReport cached = propose_kernel_tuning_updates(propose, context);
  VerificationReport report;
  report.cache_path = cached.cache_path;
  report.cache_status = cached.cache_status;
  report.effective_threads = cached.effective_threads;
  report.maximum_duration_ms = options.maximum_duration_ms;
  report.diagnostics = cached.diagnostics;

  const runtime::KernelTable& table = context.kernels != nullptr ? *context.kernels : runtime::cpu_kernel_table();
  const std::size_t count = cached.covered.size();
  for (std::size_t index = 0; index < count; ++index) {
    const KernelTuningEntry& entry = cached.covered[index];
    ProfileVerification p;
    p.key = entry.key;
    const int64_t left_ms = options.maximum_duration_ms - (steady_ms() - start_ms);
    // An even share of what is left, so that one key cannot starve the rest.
    const int64_t share_ms = left_ms / static_cast<int64_t>(count - index);
    const runtime::KernelDef* def = table.find_by_key(entry.key);
    const runtime::ParameterSpec* spec = def != nullptr && has_calibration_routine(*def) ? threshold_parameter(def->schema) : nullptr;
    if (spec == nullptr) {
      p.reason = "no calibration routine: its values were set by hand and cannot be re-measured";
    } else {
      p.parameter = spec->name;
      p.cached = int_value(*entry.cached_values, spec->name);
      if (!p.cached) {
        p.reason = fmt::format("the cached profile has no integer {}", spec->name);
      } else if (share_ms < 1) {
        p.reason = "the time budget ran out before this profile";
      } else {
        CalibrationOptions c;
        c.selection.kernels = {entry.key.kernel};
        c.selection.element_types = {entry.key.element_type};
        c.selection.implementation = entry.key.implementation;
        c.selection.library = entry.key.library;
        c.num_threads = cached.effective_threads;
        c.policy = options.policy;
        c.maximum_duration_ms = share_ms;
        c.maximum_memory_bytes = options.maximum_memory_bytes;
        c.save = false;
        c.publish = false;
        c.allow_load = options.allow_load;
        c.path = options.path;
        c.progress = options.progress;
        c.clock = clock;
        c.benchmark_factory = options.benchmark_factory;
        const int64_t key_start = steady_ms();
        CalibrationReport r = calibrate_kernel_tuning(c, context);
        p.elapsed_ms = steady_ms() - key_start;
        auto it = std::find_if(r.calibrated.begin(), r.calibrated.end(), [&](const auto& k) { return k.key == entry.key; });
        if (it == r.calibrated.end() || !it->measured) {
          std::string why = "nothing could be measured";
          for (const auto& d : r.diagnostics)
            if (d.key && *d.key == entry.key) why = d.message;
          p.reason = it == r.calibrated.end() ? fmt::format("not measured: {}", why)
                                               : "not measured: the budget left no time for a case";
        } else {
          p.measured = int_value(it->values, spec->name);
          p.confidence = it->confidence;
          if (!p.measured) {
            p.reason = "the measurement ended without a value";
          } else if (it->contention && contended(*it->contention, cached.effective_threads) && !options.allow_load) {
            // A loaded machine moves a threshold by powers of two: no verdict either way.
            p.reason = fmt::format("not judged: measured on a loaded machine ({}; cached {}={}, measured now {}); rerun "
                                   "when the machine is idle",
                                   describe_load(*it->contention), spec->name, *p.cached, *p.measured);
          } else {
            const double a = static_cast<double>(*p.measured), b = static_cast<double>(*p.cached);
            const double apart = std::max(a, b) / std::max(1.0, std::min(a, b));
            p.status = apart > 2.0 ? DriftStatus::drifted : DriftStatus::holds;
            p.reason = fmt::format("cached {}={}, measured now {} ({:.1f}x {}, confidence {})", spec->name, *p.cached,
                                   *p.measured, apart, apart > 2.0 ? "apart: more than one doubling" : "apart",
                                   confidence_name(p.confidence));
          }
        }
      }
    }
    report.profiles.push_back(std::move(p));
  }
  report.elapsed_ms = steady_ms() - start_ms;
  return report;
}

}  // namespace onnx_light::tune
