#pragma once
// What the model fuzz targets do with a parsed model: create a session (kernel choice, constants,
// plans; no run) on one thread and without constant folding (a folded ConstantOfShape may
// legitimately ask for gigabytes, which libFuzzer's malloc limit would report; creation itself
// must not). An onnx_light::Error is an accepted outcome; anything else escapes to the fuzzer.
#include <utility>

#include "onnx_light/runtime/graph_optimizer.h"
#include "onnx_light/runtime/model.h"
#include "onnx_light/runtime/session.h"

inline void create_session(onnx_light::runtime::Model model) {
  using namespace onnx_light::runtime;
  RuntimeSessionOptions options;
  options.parameters = RuntimeParameters(1);
  options.optimization = OptimizationLevel::none;
  RuntimeSession session(std::move(model), options);
}
