#pragma once
// One register function per verb, each in its own <verb>.cc.
#include <string>

#include <CLI/CLI.hpp>

#include "app_context.h"

namespace onnx_light::cli {

void register_run(CLI::App& app, AppContext& context);
void register_list(CLI::App& app, AppContext& context);
void register_propose(CLI::App& app, AppContext& context);
void register_set(CLI::App& app, AppContext& context);
void register_inspect(CLI::App& app, AppContext& context);
void register_load(CLI::App& app, AppContext& context);
void register_remove(CLI::App& app, AppContext& context);
void register_calibrate(CLI::App& app, AppContext& context);
void register_verify(CLI::App& app, AppContext& context);
void register_host(CLI::App& app, AppContext& context);
void register_export(CLI::App& app, AppContext& context);
void register_import(CLI::App& app, AppContext& context);
void register_merge(CLI::App& app, AppContext& context);
void register_diff(CLI::App& app, AppContext& context);
// Hidden: `completion bash|zsh|fish` prints a script generated from `app` and the kernel table.
void register_completion(CLI::App& app, AppContext& context);
std::string completion_script(const CLI::App& app, const std::string& shell);

}  // namespace onnx_light::cli
