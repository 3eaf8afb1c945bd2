#pragma once
// Drift verification (issue 16): re-measures the cached profiles of this host and thread count
// within a budget and says, per profile, whether the cached threshold still holds. For operators
// after a kernel upgrade, a BIOS change or a VM migration. Never writes the cache and never
// publishes into the process's registry.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "onnx_light/runtime/tuning_key.h"
#include "onnx_light/tune/calibration.h"
#include "onnx_light/tune/diagnostic.h"
#include "onnx_light/tune/kernel_selection.h"
#include "onnx_light/tune/operations.h"
#include "onnx_light/tune/threshold_search.h"

namespace onnx_light::tune {

// holds: the measured pick is within one doubling of the cached value; drifted: further apart;
// not_measured: the budget ran out, nothing could be measured, the key has no calibration, or other
// processes loaded the machine while it measured (no verdict from a loaded machine).
enum class DriftStatus { holds, drifted, not_measured };
const char* drift_status_name(DriftStatus s);

struct ProfileVerification {
  runtime::TuningKey key;
  std::string parameter;            // the threshold re-measured
  std::optional<int64_t> cached;    // the cached value
  std::optional<int64_t> measured;  // the pick measured now (with a pick, even when not_measured is not the status)
  DriftStatus status = DriftStatus::not_measured;
  Confidence confidence = Confidence::low;  // of the new measurement
  std::string reason;                       // not_measured: why; drifted: both values in words
  int64_t elapsed_ms = 0;
};

struct VerifyOptions {
  KeySelection selection;  // empty: every cached profile of this host
  std::string path;        // "": default cache path
  std::optional<int64_t> num_threads;  // unset/0: one per physical core (the profiles' thread count)
  // Spin and affinity of the re-measuring sessions; its spin class picks the profiles verified
  // (host.idle_spin). Its num_threads is not read.
  runtime::RuntimeParameters policy;
  int64_t maximum_duration_ms = 1000;  // for the whole call, shared by the profiles
  int64_t maximum_memory_bytes = kDefaultCalibrationMemoryBytes;
  bool allow_load = false;  // give verdicts from windows other processes loaded (see CalibrationOptions)
  std::function<void(const CalibrationProgress&)> progress;
  std::shared_ptr<CalibrationClock> clock;  // nullptr: steady clock
  CaseBenchmarkFactory benchmark_factory;   // nullptr: make_session_benchmark
};

struct VerificationReport {
  std::string cache_path;
  FileStatus cache_status = FileStatus::not_found;
  int64_t effective_threads = 0;
  std::vector<ProfileVerification> profiles;
  std::vector<Diagnostic> diagnostics;
  int64_t elapsed_ms = 0;
  int64_t maximum_duration_ms = 0;

  bool drifted() const;  // any profile drifted
  // {cache_path, cache_status, effective_threads, elapsed_ms, maximum_duration_ms, diagnostics,
  //  profiles: [key fields + parameter, cached, measured, status, confidence, reason, elapsed_ms],
  //  summary: {holds, drifted, not_measured}}.
  nlohmann::json to_json() const;
};

// Throws InvalidValueError for a non-positive budget, CacheError (naming the file) when the cache
// cannot be parsed; a profile that cannot be measured is reported, not thrown.
VerificationReport verify_kernel_tuning(const VerifyOptions& options, const OperationContext& context = {});

}  // namespace onnx_light::tune
