// libFuzzer target for the model loader: any bytes (binary protobuf, or the text syntax when they
// look like text) go through load_model_bytes, schema validation and session creation (kernel
// choice, constants, plans; no run). Everything must end in a session or an onnx_light::Error:
// never a crash, an abort, std::bad_alloc or another exception.
#include <cstddef>
#include <cstdint>
#include <span>

#include "onnx_light/runtime/error.h"
#include "onnx_light/runtime/graph_optimizer.h"
#include "onnx_light/runtime/model.h"
#include "onnx_light/runtime/session.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace onnx_light::runtime;
  if (size > (std::size_t{1} << 20)) return 0;
  try {
    Model model = load_model_bytes(std::as_bytes(std::span(data, size)), "<fuzz>");
    RuntimeSessionOptions options;
    options.parameters = RuntimeParameters(1);
    // No constant folding: a folded ConstantOfShape may legitimately ask for gigabytes, which
    // libFuzzer's malloc limit would report; creation itself must not.
    options.optimization = OptimizationLevel::none;
    RuntimeSession session(std::move(model), options);
  } catch (const onnx_light::Error&) {
  }
  return 0;
}
