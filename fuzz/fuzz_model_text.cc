// libFuzzer target for the ONNX text syntax front end (ONNX's parser behind parse_model_text), then
// schema validation and session creation as fuzz_model.cc.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "onnx_light/runtime/error.h"
#include "session_creation.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > (std::size_t{1} << 16)) return 0;
  try {
    create_session(
        onnx_light::runtime::parse_model_text(std::string_view(reinterpret_cast<const char*>(data), size), "<fuzz>"));
  } catch (const onnx_light::Error&) {
  }
  return 0;
}
