#pragma once
namespace onnx_light::tune {

// The tool version written into cache provenance ("0.1.0").
const char* tool_version();

}  // namespace onnx_light::tune
