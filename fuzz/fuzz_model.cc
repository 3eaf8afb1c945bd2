// libFuzzer target for the model loader: any bytes (binary protobuf, or the text syntax when they
// look like text) go through load_model_bytes, schema validation and session creation. Everything
// must end in a session or an onnx_light::Error: never a crash, an abort, std::bad_alloc or
// another exception.
#include <cstddef>
#include <cstdint>
#include <span>

#include "onnx_light/runtime/error.h"
#include "session_creation.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > (std::size_t{1} << 20)) return 0;
  try {
    create_session(onnx_light::runtime::load_model_bytes(std::as_bytes(std::span(data, size)), "<fuzz>"));
  } catch (const onnx_light::Error&) {
  }
  return 0;
}
