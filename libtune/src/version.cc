#include "onnx_light/tune/version.h"

namespace onnx_light::tune {

const char* tool_version() { return ONNX_LIGHT_VERSION; }

}  // namespace onnx_light::tune
