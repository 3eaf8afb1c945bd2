#pragma once
// Calibration driven by a model (issue 16): tunes the keys a model's nodes use on the shapes they
// run at in that model, then keeps the result only when the whole model is not slower.
//
// 1. Thresholds (threads > 1). Every node reports the work it compares with its key's parallel
//    threshold (NodeProfile::threshold_work). The model runs interleaved with every threshold at
//    its maximum (all serial) and at 1 (all parallel); each node's parallel/serial time ratio is
//    decided in place by the calibration statistic (20% trimmed mean, Yuen 95% interval), and per
//    key the threshold that minimises its nodes' summed time is proposed (the value in force is
//    kept when it already splits the nodes that way; else the geometric midpoint between the
//    largest serial and the smallest parallel work). Node times do not add up (a serial node
//    between parallel ones moves the data across cores), so the proposals together, every node
//    of the model serial and every node parallel are then compared on the whole model, and the
//    fastest confirmed candidate wins; failing that, each proposal alone is confirmed or dropped.
// 2. Block sizes of packed-GEMM keys (MatMul, Gemm, Conv, ConvTranspose): each tile parameter one
//    allowed step down and up, all keys at once, interleaved with the base; per key the summed
//    time of its nodes decides, and the steps taken are kept only when the whole model runs at
//    least 2% faster with them.
// 3. The whole model with the values in force and with the new values, interleaved: the
//    end-to-end speedup with its interval. Saved when the model is faster by the interval, or the
//    same with a mean ratio not above 1 (worth_saving); never when it is slower.
// The time budget covers all of it (sessions, warm-ups and all three phases).
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "onnx_light/runtime/model.h"
#include "onnx_light/runtime/tensor.h"
#include "onnx_light/runtime/tuning_key.h"
#include "onnx_light/runtime/tuning_value.h"
#include "onnx_light/tune/cache_update.h"
#include "onnx_light/tune/calibration.h"
#include "onnx_light/tune/diagnostic.h"
#include "onnx_light/tune/operations.h"
#include "onnx_light/tune/threshold_search.h"

namespace onnx_light::tune {

// A whole model runs many times per decision: the default budget is larger than a kernel's.
inline constexpr int64_t kDefaultModelCalibrationDurationMs = 20000;

struct ModelCalibrationProgress {
  std::string phase;  // "warm_up", "thresholds", "thresholds_confirm", "blocks", "blocks_confirm", "end_to_end"
  int round = 0;
  int64_t elapsed_ms = 0;
  int64_t budget_ms = 0;
};

struct ModelCalibrationOptions {
  // Graph inputs by name. One not given takes its initializer default, else a seeded random
  // tensor of its declared shape, symbolic dimensions bound by `dims` (InputError otherwise).
  std::vector<std::pair<std::string, runtime::Tensor>> inputs;
  std::map<std::string, int64_t> dims;
  uint32_t seed = 12345;
  int64_t maximum_duration_ms = kDefaultModelCalibrationDurationMs;
  bool save = true;
  HostMatch save_match = HostMatch::exact;  // the class saved profiles match by (calibrate --match)
  bool publish = true;  // publish the values saved into the process's registry
  std::string path;     // "": default cache path
  std::optional<int64_t> num_threads;  // unset/0: one per physical core (per CPU of a CPU list)
  runtime::RuntimeParameters policy;   // spin and affinity of the measured sessions (num_threads not read)
  bool tune_blocks = true;             // phase 2
  bool prune_stale = false;
  std::function<void(const ModelCalibrationProgress&)> progress;
  std::shared_ptr<CalibrationClock> clock;  // nullptr: steady clock
};

// One node's in-place measurement (phase 1).
struct ModelNodeEvidence {
  std::string node;  // the profiler's label: "Conv node 'conv1'"
  runtime::TuningKey key;
  int64_t work = -1;        // compared with the threshold (elements, rows or multiply-accumulates)
  double serial_us = 0;     // median per run
  double parallel_us = 0;
  TrimmedMean ratio;        // parallel / serial
  int pairs = 0;
  std::string verdict;      // parallel | serial | tie
};

// One key's result.
struct ModelKeyCalibration {
  runtime::TuningKey key;
  int nodes = 0;        // model nodes resolved to this key
  double share = 0;     // of the model's node time
  runtime::TuningValues old_values;  // in force before (cached profile, else defaults)
  runtime::TuningValues new_values;
  std::vector<std::string> changed;  // parameter names whose value changed
  std::vector<std::string> reasons;  // one sentence per decision
};

struct EndToEndComparison {
  bool measured = false;
  int pairs = 0;
  double old_ms = 0;  // median per run
  double new_ms = 0;
  TrimmedMean ratio;  // new / old per pair
  // faster: the interval is below 1; slower: above 1, or the mean is more than 1% above;
  // same: otherwise; unchanged: no value changed, nothing to compare.
  std::string verdict = "unchanged";
};

struct ModelCalibrationReport {
  std::string model;  // its origin (path)
  std::string cache_path;
  int64_t effective_threads = 0;
  double model_ms = 0;  // median run time with the values in force, profiled
  std::vector<ModelKeyCalibration> keys;
  std::vector<ModelNodeEvidence> nodes;
  EndToEndComparison end_to_end;
  bool saved = false;
  uint64_t published_generation = 0;
  std::optional<UpdateResult> cache_update;
  std::vector<Diagnostic> diagnostics;
  int64_t elapsed_ms = 0;
  int64_t maximum_duration_ms = 0;

  // The end-to-end check did not find a regression, and a requested save succeeded.
  bool ok() const;
  nlohmann::json to_json() const;
};

// Throws InputError for missing or wrong inputs, ModelError/UnsupportedError for a model the
// runtime cannot run, IoError when saving was asked and the cache cannot be written to at all
// (checked before measuring: a malformed or read-only cache is not discovered after the budget).
ModelCalibrationReport calibrate_model(const runtime::Model& model, const ModelCalibrationOptions& options,
                                       const OperationContext& context = {});

// Phase 1's per-key decision, exposed for tests. Nodes of one key with their work and verdict
// costs; `current` is the threshold in force, `maximum` the schema's. Returns the threshold to
// use and a sentence saying why.
struct ThresholdNode {
  int64_t work = 0;
  double serial_us = 0;
  double parallel_us = 0;
};
struct ThresholdChoice {
  int64_t value = 0;
  bool changed = false;
  double predicted_gain_us = 0;  // summed node time saved per run against `current`
  std::string reason;
};
ThresholdChoice choose_model_threshold(std::vector<ThresholdNode> nodes, int64_t current, int64_t maximum,
                                       double minimum_gain_us);

// Phase 3's verdict from interleaved run times (pair i: old_us[i], new_us[i]); fewer than
// kMinimumEndToEndPairs pairs is not_measured. Saving needs `faster`, or `same` with a mean ratio
// at or below 1.
inline constexpr int kMinimumEndToEndPairs = 6;
EndToEndComparison compare_end_to_end(const std::vector<double>& old_us, const std::vector<double>& new_us);
bool worth_saving(const EndToEndComparison& comparison);

}  // namespace onnx_light::tune
