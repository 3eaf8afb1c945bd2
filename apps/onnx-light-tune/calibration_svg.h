#pragma once
// An SVG plot per calibrated key: serial and candidate median time against size, crossover marked.
#include <string>

#include "onnx_light/tune/calibration.h"

namespace onnx_light::cli {

std::string calibration_svg(const tune::CalibrationReport& report);

}  // namespace onnx_light::cli
