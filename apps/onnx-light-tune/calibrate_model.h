#pragma once
// `onnx-light-tune calibrate --model MODEL`: the model-driven half of the calibrate verb.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "app_context.h"
#include "onnx_light/runtime/runtime_parameters.h"
#include "onnx_light/tune/host.h"

namespace onnx_light::cli {

struct CalibrateModelOptions {
  std::string model_path;
  std::vector<std::string> inputs;  // NAME=SOURCE (random[:SEED] or a .npy file); others random
  std::vector<std::string> dims;    // SYMBOL=SIZE
  std::optional<int64_t> threads;
  runtime::RuntimeParameters policy;  // spin and affinity (its num_threads is not read)
  int64_t max_duration_ms = 0;
  bool save = true;
  tune::HostMatch save_match = tune::HostMatch::exact;  // calibrate --match
  bool tune_blocks = true;
  bool prune_stale = false;
  bool json = false;
};

int calibrate_model_verb(const CalibrateModelOptions& options, AppContext& context);

}  // namespace onnx_light::cli
