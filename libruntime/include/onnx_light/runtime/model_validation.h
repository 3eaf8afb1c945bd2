#pragma once
// Checks a model against the operator schemas before a session builds it: the opset it imports
// and, per node of the default domain, input/output arity, required attributes and attribute
// types (ONNX's own OpSchema::Verify, the schemas of the ONNX release we build against).
#include <cstdint>

#include "onnx_light/runtime/model.h"

namespace onnx_light::runtime {

// The newest ai.onnx opset whose operator changes the kernels implement (opset 18: Reduce axes as
// an input, Split num_outputs, Resize antialias-free axes, ...). A model importing a newer one may
// use operators whose meaning changed after it; it is refused unless the caller allows it.
inline constexpr int64_t kNewestImplementedOpset = 18;

// The newest ai.onnx opset the linked ONNX library has schemas for (17 for ONNX 1.12). Nodes of
// opset-18 models are verified against these schemas except the operators that changed in 18
// (an older schema would reject the inputs they added); the kernels still check what they read.
// Models allowed past kNewestImplementedOpset are not verified.
int64_t newest_schema_opset();

// Throws ModelError listing every problem (node label, opset and what is wrong): an ai.onnx opset
// newer than kNewestImplementedOpset (unless allow_newer_opset), and nodes that break their
// operator's schema.
void validate_model(const Model& model, bool allow_newer_opset = false);

}  // namespace onnx_light::runtime
