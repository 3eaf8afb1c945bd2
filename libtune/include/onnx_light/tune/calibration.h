#pragma once
// Calibration (DESIGN.md section 6): bounded, checked, repeatable parameter search.
//
// Threshold search: for seeded inputs of doubling sizes, run the kernel forced serial (the
// reference) and always parallel (the candidate), check the candidate's output bytes equal the
// reference's, and decide each size from interleaved pairs (sequential_threshold_search in
// threshold_search.h: interval per size, retests, refinement, evidence-following picks and a
// confidence verdict). Low-confidence or unmeasured results are published but not saved unless
// `force_save`.
// Comparison mode (`parameters`): run given values of one parameter interleaved on the same cases
// and pick the lowest summed median. Budgets are hard: a case that would pass the memory budget
// is not built, and the time budget is checked before every batch of pairs against its predicted
// cost (set-up and warm-ups included) and between repetitions.
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "onnx_light/runtime/error.h"
#include "onnx_light/runtime/kernel_table.h"
#include "onnx_light/runtime/runtime_parameters.h"
#include "onnx_light/runtime/tuning_key.h"
#include "onnx_light/runtime/tuning_value.h"
#include "onnx_light/tune/cache_update.h"
#include "onnx_light/tune/cpu_contention.h"
#include "onnx_light/tune/diagnostic.h"
#include "onnx_light/tune/kernel_selection.h"
#include "onnx_light/tune/operations.h"
#include "onnx_light/tune/threshold_search.h"

namespace onnx_light::tune {

inline constexpr int64_t kDefaultCalibrationDurationMs = 250;
inline constexpr int64_t kDefaultCalibrationMemoryBytes = int64_t{64} << 20;

// Monotonic nanoseconds, and the machine's CPU accounting over the same time (how much of it other
// processes took); injectable so tests control both.
class CalibrationClock {
 public:
  virtual ~CalibrationClock() = default;
  virtual int64_t now_ns() = 0;
  // nullopt: not measured (fake clocks, machines without the accounting).
  virtual std::optional<CpuTimes> cpu_times() { return std::nullopt; }
};
std::shared_ptr<CalibrationClock> steady_calibration_clock();

// The timings of one case (one size, one variant) for each configuration, config 0 first.
struct CaseTiming {
  std::vector<double> median_ns;  // per configuration
  // Per configuration, every timed repetition in order: sample i of each configuration forms
  // interleaved pair i (threshold mode builds its per-pair ratios from these).
  std::vector<std::vector<double>> samples_ns;
  int repetitions = 0;
  std::string description;  // "float[65536]"
};

// Runs cases of one key. The real one builds sessions from the kernel's calibration workload;
// tests substitute synthetic timings.
class CaseBenchmark {
 public:
  virtual ~CaseBenchmark() = default;
  virtual int variants() const = 0;
  // Upper bound of the bytes a case of `size` holds (inputs and every configuration's outputs).
  virtual int64_t memory_bytes(int64_t size, int variant, std::size_t configurations) const = 0;
  // Warms every configuration up, checks every output equals configuration 0's bytes (throws
  // CalibrationMismatch otherwise), then times alternating repetitions: `minimum_repetitions`,
  // more while the clock is before `deadline_ns`, at most `maximum_repetitions`, and none started
  // after `deadline_ns` once one was timed (the budget is hard).
  virtual CaseTiming measure(int64_t size, int variant, const std::vector<runtime::TuningValues>& configurations,
                             int64_t deadline_ns, int minimum_repetitions, int maximum_repetitions) = 0;
};

// A candidate whose output differs from the serial reference: an error, never a silent pick.
class CalibrationMismatch : public Error {
 public:
  using Error::Error;
};

// The factories below make their pool with `policy`'s spin and placement (its num_threads is not
// read: `threads` is).
using CaseBenchmarkFactory =
    std::function<std::unique_ptr<CaseBenchmark>(const runtime::KernelDef& def, int threads, uint32_t seed)>;
// Sessions built from def.calibration_workload on a shared pool of `threads`, resolving their
// node from `kernels` (nullptr: cpu_kernel_table()): the table `def` came from, so that what is
// measured and checked is that definition's kernel.
std::unique_ptr<CaseBenchmark> make_session_benchmark(const runtime::KernelDef& def, int threads, uint32_t seed,
                                                      const runtime::KernelTable* kernels = nullptr,
                                                      const runtime::RuntimeParameters& policy = {});

struct CalibrationProgress {
  runtime::TuningKey key;
  std::size_t key_index = 0;
  std::size_t key_count = 0;
  int repeat = 0;  // 0-based run of --repeat
  std::string case_description;
  int64_t elapsed_ms = 0;
  int64_t budget_ms = 0;
};

// Provenance sources of results saved with force_save although nothing was measured, or the
// measurements disagree (low confidence). `inspect` shows them; --only-missing recalibrates them.
inline constexpr std::string_view kSourceUnmeasured = "calibrate-unmeasured";
inline constexpr std::string_view kSourceLowConfidence = "calibrate-low-confidence";
inline bool is_forced_source(std::string_view source) {
  return source == kSourceUnmeasured || source == kSourceLowConfidence;
}

struct CalibrationOptions {
  KeySelection selection;  // kernels + element types (+ implementation); `all` below for every key
  bool all = false;        // every calibratable key (selection filters still apply)
  int64_t maximum_duration_ms = kDefaultCalibrationDurationMs;  // for the whole call
  int64_t maximum_memory_bytes = kDefaultCalibrationMemoryBytes;
  bool save = true;
  // The class the saved profiles match by (calibrate --match): exact (this machine), or this
  // machine's model, microarchitecture or ISA class (cache format version 2).
  HostMatch save_match = HostMatch::exact;
  bool publish = true;  // false: measure and report only (verify), the process's registry untouched
  std::string path;  // "": default cache path
  bool only_missing = false;
  std::optional<int64_t> num_threads;  // unset/0: one per physical core (per CPU of a CPU list)
  // Spin and affinity of the measured sessions' pool (its num_threads is not read). The profile
  // records whether idle workers spin (host.idle_spin): parking at once moves the crossover
  // (bench/RESULTS.md); the affinity is not recorded.
  runtime::RuntimeParameters policy;
  // Comparison mode: parameter name -> values (text, parsed with the schema's type); first is baseline.
  std::map<std::string, std::vector<std::string>> parameters;
  int repeat = 1;  // whole search K times; saved value is the median pick
  ThresholdSearchSettings search;
  int64_t first_size = 1024;
  uint32_t seed = 20261202;
  int minimum_repetitions = 3;
  int maximum_repetitions = 15;
  // A low-confidence pick, or one from no measurement, is published but not saved unless forced.
  bool force_save = false;
  // Judge measurements taken while other processes load the CPUs as if the machine were idle (for
  // machines that are always this busy); the load is still reported. Off: such a key is low confidence.
  bool allow_load = false;
  bool prune_stale = false;
  std::function<void(const CalibrationProgress&)> progress;
  std::shared_ptr<CalibrationClock> clock;  // nullptr: steady clock
  CaseBenchmarkFactory benchmark_factory;   // nullptr: make_session_benchmark
};

// One measured case as reported.
struct CalibrationCaseReport {
  int64_t size = 0;
  std::vector<double> median_ns;  // per configuration (summed over variants)
  std::vector<std::string> descriptions;
  bool candidate_wins = false;  // threshold mode
  // Threshold mode: median candidate/serial pair ratio, its interval, verdict, pairs.
  double ratio = 0, ratio_low = 0, ratio_high = 0;
  double fitted_ratio = 0;  // after the non-increasing fit across sizes: what the pick is read from
  std::string verdict;  // win | loss | undecided
  int pairs = 0;
  std::vector<double> pair_ratios;  // every candidate/serial pair, in measurement order
  bool retested = false;
  bool refined = false;
};

struct ComparisonEntry {
  runtime::TuningValue value;
  double total_median_ns = 0;
  double speedup = 1.0;  // baseline total / this total
};

// The result for one key.
struct KeyCalibration {
  runtime::TuningKey key;
  runtime::TuningValues values;  // the complete set it ended with
  std::string parameter;         // the parameter searched or compared
  bool changed_default = false;  // a crossover or comparison winner was chosen
  std::optional<int64_t> bracket_low;
  std::optional<int64_t> bracket_high;
  std::vector<CalibrationCaseReport> cases;  // of the last run
  std::vector<ComparisonEntry> comparison;   // comparison mode
  std::vector<int64_t> picks;                // per repeat (threshold mode)
  int agreement = 0;                         // runs whose pick is within one doubling of the saved one
  Confidence confidence = Confidence::high;  // threshold mode; comparison mode reports high
  bool noisy = false;                        // the machine was too noisy for the margin
  // Threshold mode: how much of the machine other processes took while it measured (nullopt: not
  // measured); a contended window makes the confidence low.
  std::optional<CpuContention> contention;
  bool measured = false;                     // at least one case was measured
  bool saved = false;                        // written to the cache
  int64_t elapsed_ms = 0;
};

struct CalibrationReport {
  std::vector<KeyCalibration> calibrated;
  std::vector<runtime::TuningKey> skipped;      // passed over by only_missing
  std::vector<runtime::TuningKey> unsupported;  // no calibration routine
  std::vector<runtime::TuningKey> failed;       // errors (mismatch, invalid result)
  // Saving was asked but the result was refused (nothing measured, or low confidence) and not
  // forced: nothing of these keys was written.
  std::vector<runtime::TuningKey> not_saved;
  std::vector<Diagnostic> diagnostics;
  uint64_t published_generation = 0;
  std::optional<UpdateResult> cache_update;  // when saving was asked and attempted
  std::string cache_path;
  int64_t effective_threads = 0;
  int64_t elapsed_ms = 0;
  int64_t maximum_duration_ms = 0;
  int repeat = 1;

  // Nothing failed and, when saving, every result was saved (none refused) and the update succeeded.
  bool ok() const;
  // {calibrated: [key fields + values], skipped, unsupported, diagnostics, published_generation,
  //  cache_update} plus failed, cache_path, effective_threads, elapsed_ms and measurements.
  nlohmann::json to_json() const;
};

CalibrationReport calibrate_kernel_tuning(const CalibrationOptions& options, const OperationContext& context = {});

// The KernelDef behind a schema key (nullptr when none); calibratable when it has a threshold
// parameter and a calibration workload.
bool has_calibration_routine(const runtime::KernelDef& def);
// The int64 threshold parameter a search calibrates (nullptr when the schema has none).
const runtime::ParameterSpec* threshold_parameter(const runtime::TuningSchema& schema);

}  // namespace onnx_light::tune
