// libFuzzer target for the ONNX text syntax front end (ONNX's parser behind parse_model_text), then
// schema validation and session creation as fuzz_model.cc: every input ends in a session or an
// onnx_light::Error.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "onnx_light/runtime/error.h"
#include "onnx_light/runtime/graph_optimizer.h"
#include "onnx_light/runtime/model.h"
#include "onnx_light/runtime/session.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace onnx_light::runtime;
  if (size > (std::size_t{1} << 16)) return 0;
  try {
    Model model = parse_model_text(std::string_view(reinterpret_cast<const char*>(data), size), "<fuzz>");
    RuntimeSessionOptions options;
    options.parameters = RuntimeParameters(1);
    options.optimization = OptimizationLevel::none;
    RuntimeSession session(std::move(model), options);
  } catch (const onnx_light::Error&) {
  }
  return 0;
}
