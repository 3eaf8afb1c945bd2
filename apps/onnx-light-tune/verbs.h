#pragma once
// One register function per verb, each in its own <verb>.cc.
#include <CLI/CLI.hpp>

#include "app_context.h"

namespace onnx_light::cli {

void register_run(CLI::App& app, AppContext& context);

}  // namespace onnx_light::cli
