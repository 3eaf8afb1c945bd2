#pragma once
// Small models shared by the unit tests, written in the ONNX text syntax.
#include <string>

#include "onnx_light/runtime/model.h"

namespace onnx_light::test {

// The seed's model: y = Abs(x) over float[N].
inline const char* kSeedAbsModel =
    "<ir_version: 10, opset_import: [\"\" : 18]>\n"
    "agraph (float[N] x) => (float[N] y) { y = Abs(x) }";

inline runtime::Model parse(const std::string& text) { return runtime::parse_model_text(text, "<test model>"); }

}  // namespace onnx_light::test
