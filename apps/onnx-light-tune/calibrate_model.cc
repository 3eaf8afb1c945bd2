#include "calibrate_model.h"

#include <unistd.h>

#include <algorithm>

#include <fmt/format.h>

#include "cli_common.h"
#include "onnx_light/runtime/error.h"
#include "onnx_light/runtime/model.h"
#include "onnx_light/runtime/session.h"
#include "onnx_light/tune/model_calibration.h"
#include "run_inputs.h"

namespace onnx_light::cli {

namespace {

std::string changes_text(const tune::ModelKeyCalibration& k) {
  std::string text;
  for (const auto& name : k.changed)
    text += fmt::format("{}{} {} -> {}", text.empty() ? "" : ", ", name, runtime::format_value(k.old_values.at(name)),
                        runtime::format_value(k.new_values.at(name)));
  return text.empty() ? "-" : text;
}

}  // namespace

int calibrate_model_verb(const CalibrateModelOptions& o, AppContext& context) {
  runtime::Model model = runtime::load_model_file(o.model_path);
  tune::ModelCalibrationOptions options;
  options.maximum_duration_ms = o.max_duration_ms;
  options.save = o.save;
  options.save_match = o.save_match;
  options.path = context.cache_path;
  options.num_threads = o.threads;
  options.policy = o.policy;
  options.tune_blocks = o.tune_blocks;
  options.prune_stale = o.prune_stale;
  {
    // Inputs named with -i; the library makes the others random, binding --dim symbols.
    runtime::RuntimeSession probe(model);
    runtime::RuntimeContext bound;
    bind_cli_inputs(probe, o.inputs, o.dims, bound);
    for (const auto& name : bound.names()) options.inputs.emplace_back(name, bound.get(name));
    for (const auto& d : o.dims) {
      const auto eq = d.find('=');
      options.dims[d.substr(0, eq)] = std::stoll(d.substr(eq + 1));  // bind_cli_inputs checked the form
    }
  }
  const bool show_progress = context.verbosity >= 0 && isatty(STDERR_FILENO) != 0 && !o.json;
  bool drawn = false;
  options.progress = [&](const tune::ModelCalibrationProgress& p) {
    if (!show_progress) return;
    fmt::print(stderr, "\r\x1b[2Kcalibrate --model: {} round {}  {}/{} ms", p.phase, p.round + 1, p.elapsed_ms, p.budget_ms);
    std::fflush(stderr);
    drawn = true;
  };
  const tune::ModelCalibrationReport report = tune::calibrate_model(model, options, operation_context(context));
  if (drawn) fmt::print(stderr, "\r\x1b[2K");
  const int code = report.ok() ? kExitOk : kExitFailed;
  if (report.end_to_end.verdict == "slower")
    *context.err << "onnx-light-tune calibrate: warning: the model ran slower with the new values; nothing was saved\n";
  if (o.json) {
    print_json(*context.out, report.to_json());
    return code;
  }
  const bool color = stdout_color(context);
  auto& out = *context.out;
  out << fmt::format("calibrated {} for {} key{} in {} ms on {} thread{} (budget {} ms); one run takes {:.3f} ms\n",
                     report.model, report.keys.size(), report.keys.size() == 1 ? "" : "s", report.elapsed_ms,
                     report.effective_threads, report.effective_threads == 1 ? "" : "s", report.maximum_duration_ms,
                     report.model_ms);
  Table table({"KEY", "NODES", "SHARE", "CHANGE"});
  for (const auto& k : report.keys)
    table.add({key_label(k.key), std::to_string(k.nodes), fmt::format("{:.1f}%", 100.0 * k.share),
               k.changed.empty() ? paint("kept", Tone::dim, color) : paint(changes_text(k), Tone::good, color)});
  if (!table.empty()) table.print(out, color, 2);
  for (const auto& k : report.keys)
    for (const auto& r : k.reasons) out << fmt::format("  {}: {}\n", key_label(k.key), r);
  if (!report.nodes.empty() && context.verbosity > 0) {
    out << "evidence per node (parallel/serial time in place, 20% trimmed mean [95% interval]):\n";
    for (const auto& n : report.nodes)
      out << fmt::format("  {:<40} work {:>10}  {:8.1f} us serial {:8.1f} us parallel  {:.3f} [{:.3f}, {:.3f}] {}\n",
                         n.node, n.work, n.serial_us, n.parallel_us, n.ratio.mean, n.ratio.low, n.ratio.high, n.verdict);
  }
  const auto& e = report.end_to_end;
  if (e.measured) {
    const Tone tone = e.verdict == "faster" ? Tone::good : e.verdict == "slower" ? Tone::bad : Tone::warn;
    out << fmt::format("end to end: {:.3f} ms -> {:.3f} ms, speedup x{:.3f} [{:.3f}, {:.3f}] over {} pairs: {}\n", e.old_ms,
                       e.new_ms, 1.0 / e.ratio.mean, 1.0 / e.ratio.high, e.ratio.low > 0 ? 1.0 / e.ratio.low : 0.0, e.pairs,
                       paint(e.verdict, tone, color));
  }
  print_diagnostics(out, report.diagnostics, color);
  if (report.cache_update) {
    print_cache_update(out, *report.cache_update, color);
  } else {
    out << fmt::format("cache: nothing written{}\n", o.save ? "" : " (--no-save)");
  }
  return code;
}

}  // namespace onnx_light::cli
