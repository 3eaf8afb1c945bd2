#pragma once
// Turns `--input NAME=SOURCE` and `--dim SYMBOL=SIZE` into tensors for a session's inputs.
#include <string>
#include <vector>

#include "onnx_light/runtime/session.h"

namespace onnx_light::cli {

// Throws InputError naming the input (unknown name, missing input, symbolic dim without --dim).
void bind_cli_inputs(const runtime::RuntimeSession& session, const std::vector<std::string>& specs,
                     const std::vector<std::string>& dims, runtime::RuntimeContext& context);

// Deterministic test data: floats uniform in [-1, 1) (xorshift32, as the peer harness), small
// integers, random booleans.
runtime::Tensor random_tensor(runtime::ElementType type, const runtime::Shape& shape, uint32_t seed);

}  // namespace onnx_light::cli
