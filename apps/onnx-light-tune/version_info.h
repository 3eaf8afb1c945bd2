#pragma once
#include <string>

namespace onnx_light::cli {

// Version, compiler, build type, kernel implementations compiled in, and this host.
std::string version_text();

}  // namespace onnx_light::cli
