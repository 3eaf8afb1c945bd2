#pragma once
// Turns `--input NAME=SOURCE` and `--dim SYMBOL=SIZE` into tensors for a session's inputs.
#include <string>
#include <vector>

#include "onnx_light/runtime/session.h"

namespace onnx_light::cli {

// Throws InputError naming the input (unknown name, missing input, symbolic dim without --dim).
void bind_cli_inputs(const runtime::RuntimeSession& session, const std::vector<std::string>& specs,
                     const std::vector<std::string>& dims, runtime::RuntimeContext& context);

}  // namespace onnx_light::cli
