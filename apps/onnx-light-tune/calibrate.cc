// `onnx-light-tune calibrate [KERNEL...|--all]`: bounded threshold search (or an explicit
// comparison), published in-process and saved to the cache with one locked write.
#include <unistd.h>

#include <fstream>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "calibrate_model.h"
#include "calibration_svg.h"
#include "cli_common.h"
#include "cli_usage.h"
#include "onnx_light/runtime/error.h"
#include "onnx_light/tune/calibration.h"
#include "onnx_light/tune/model_calibration.h"
#include "verbs.h"

namespace onnx_light::cli {

namespace {

struct CalibrateVerbOptions {
  std::vector<std::string> kernels;
  FilterFlags filters;
  bool all = false;
  int64_t max_duration_ms = tune::kDefaultCalibrationDurationMs;
  std::string max_memory = "64M";
  bool save = true;     // resolved from the two flags below
  bool save_flag = false;
  bool no_save = false;
  std::string match = "exact";
  bool only_missing = false;
  std::vector<std::string> parameters;
  int repeat = 1;
  std::string report_path;
  bool prune_stale = false;
  bool force = false;
  bool allow_load = false;
  // --model: the model-driven calibration (calibrate_model.h)
  std::string model_path;
  std::vector<std::string> inputs;
  std::vector<std::string> dims;
  bool no_blocks = false;
  bool duration_given = false;
  PolicyFlags policy;
};

// One status line on stderr, redrawn in place; only on a terminal and not with -q.
class ProgressLine {
 public:
  explicit ProgressLine(bool enabled) : enabled_(enabled) {}
  ~ProgressLine() { finish(); }
  void show(const tune::CalibrationProgress& p) {
    if (!enabled_) return;
    std::string line = fmt::format("calibrate [{}/{}] {} {}{}: {}  {}/{} ms", p.key_index + 1, p.key_count, p.key.kernel,
                                   element_type_label(p.key.element_type),
                                   p.repeat > 0 ? fmt::format(" run {}", p.repeat + 1) : "", p.case_description,
                                   p.elapsed_ms, p.budget_ms);
    fmt::print(stderr, "\r\x1b[2K{}", line);
    std::fflush(stderr);
    drawn_ = true;
  }
  void finish() {
    if (enabled_ && drawn_) fmt::print(stderr, "\r\x1b[2K");
    drawn_ = false;
  }

 private:
  bool enabled_;
  bool drawn_ = false;
};

int calibrate_verb(CalibrateVerbOptions o, AppContext& context) {
  if (!o.save && o.match != "exact") {
    throw UsageError(fmt::format("calibrate: --match {} is the class of the saved profiles; --no-save saves none",
                                 o.match));
  }
  if (!o.model_path.empty()) {
    std::string conflict = !o.kernels.empty() || !o.filters.kernels.empty() ? "kernel names"
                           : o.all                                        ? "--all"
                           : !o.parameters.empty()                        ? "--parameter"
                           : o.repeat > 1                                 ? "--repeat"
                           : o.only_missing                               ? "--only-missing"
                           : !o.report_path.empty()                       ? "--report"
                           : o.force                                      ? "--force"
                                                                          : "";
    if (!conflict.empty()) {
      throw UsageError(fmt::format("calibrate: --model chooses the keys from the model's nodes; it does not "
                                  "take {} (see 'onnx-light-tune calibrate --help')",
                                  conflict));
    }
    CalibrateModelOptions m;
    m.model_path = o.model_path;
    m.inputs = o.inputs;
    m.dims = o.dims;
    m.threads = o.filters.thread_count();
    m.policy = o.policy.parameters(0);
    m.max_duration_ms = o.duration_given ? o.max_duration_ms : tune::kDefaultModelCalibrationDurationMs;
    m.save = o.save;
    m.save_match = tune::parse_host_match(o.match);  // checked at parse time
    m.tune_blocks = !o.no_blocks;
    m.prune_stale = o.prune_stale;
    m.json = o.filters.json;
    return calibrate_model_verb(m, context);
  }
  if (!o.inputs.empty() || !o.dims.empty() || o.no_blocks) {
    throw UsageError("calibrate: --input, --dim and --no-blocks need --model");
  }
  tune::CalibrationOptions options;
  for (auto& k : o.kernels) o.filters.kernels.push_back(k);
  if (o.all == !o.filters.kernels.empty()) {
    throw UsageError("calibrate: name kernels or give --all (see 'onnx-light-tune calibrate --help')");
  }
  options.selection = o.filters.selection();
  // Without --element-type a named kernel means its float key (what CI jobs time); --all means every type.
  if (options.selection.element_types.empty() && !o.all) options.selection.element_types = {1};
  options.all = o.all;
  options.maximum_duration_ms = o.max_duration_ms;
  options.maximum_memory_bytes =
      std::get<int64_t>(runtime::parse_value(o.max_memory, runtime::ValueType::int64, "--max-memory"));
  options.save = o.save;
  options.save_match = tune::parse_host_match(o.match);  // checked at parse time
  options.path = context.cache_path;
  options.only_missing = o.only_missing;
  options.num_threads = o.filters.thread_count();
  options.policy = o.policy.parameters(0);
  spdlog::info("calibrate: {}", policy_text(options.policy));
  options.repeat = o.repeat;
  options.prune_stale = o.prune_stale;
  options.force_save = o.force;
  options.allow_load = o.allow_load;
  for (const auto& p : o.parameters) {
    auto eq = p.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == p.size()) {
      throw UsageError(fmt::format("calibrate: --parameter '{}' must look like NAME=V1,V2,...", p));
    }
    std::vector<std::string> values;
    std::string rest = p.substr(eq + 1);
    for (std::size_t start = 0;;) {
      auto comma = rest.find(',', start);
      values.push_back(rest.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
    options.parameters[p.substr(0, eq)] = values;
  }
  ProgressLine progress(context.verbosity >= 0 && isatty(STDERR_FILENO) != 0 && !o.filters.json);
  options.progress = [&progress](const tune::CalibrationProgress& p) { progress.show(p); };

  const tune::CalibrationReport report = tune::calibrate_kernel_tuning(options, operation_context(context));
  progress.finish();
  if (!o.report_path.empty()) {
    std::ofstream svg(o.report_path);
    svg << calibration_svg(report);
    if (!svg) throw IoError(fmt::format("{}: cannot write the SVG report", o.report_path));
  }
  const int code = report.ok() ? kExitOk : kExitFailed;
  // Warnings go to stderr too (also under --json), so that CI logs show an untrustworthy result.
  for (const auto& k : report.calibrated) {
    if (!k.comparison.empty()) continue;
    if (k.noisy || k.confidence == tune::Confidence::low)
      *context.err << fmt::format("onnx-light-tune calibrate: warning: {} confidence {}{}{}{}\n", key_label(k.key),
                                  tune::confidence_name(k.confidence),
                                  k.noisy ? "; the machine is too noisy for the margin (see diagnostics)" : "",
                                  k.contention && tune::contended(*k.contention, report.effective_threads)
                                      ? fmt::format("; measured on a loaded machine ({})", tune::describe_load(*k.contention))
                                      : "",
                                  o.save && !k.saved ? "; not saved (--force saves it anyway)" : "");
  }
  if (!report.not_saved.empty()) {
    *context.err << fmt::format(
        "onnx-light-tune calibrate: {} result{} not saved (nothing measured, or the measurements disagree); "
        "nothing of {} was written\n",
        report.not_saved.size(), report.not_saved.size() == 1 ? "" : "s",
        report.not_saved.size() == 1 ? "it" : "them");
  }
  if (o.filters.json) {
    print_json(*context.out, report.to_json());
    return code;
  }
  const bool color = stdout_color(context);
  auto& out = *context.out;
  out << fmt::format("calibrated {} key{} in {} ms on {} thread{} (budget {} ms{})\n", report.calibrated.size(),
                     report.calibrated.size() == 1 ? "" : "s", report.elapsed_ms, report.effective_threads,
                     report.effective_threads == 1 ? "" : "s", report.maximum_duration_ms,
                     report.repeat > 1 ? fmt::format(", {} runs each", report.repeat) : "");
  Table table({"KEY", "PARAMETER", "VALUE", "BRACKET", "CONFIDENCE", "RESULT"});
  for (const auto& k : report.calibrated) {
    std::string bracket = k.bracket_high ? fmt::format("{}..{}", k.bracket_low ? std::to_string(*k.bracket_low) : "", *k.bracket_high)
                                         : "-";
    std::string result = k.changed_default ? paint("chosen", Tone::good, color) : paint("kept", Tone::warn, color);
    if (report.repeat > 1 && k.comparison.empty())
      result += fmt::format(" ({}/{} agree)", k.agreement, report.repeat);
    const std::string confidence = k.comparison.empty() ? std::string(tune::confidence_name(k.confidence)) : "-";
    const Tone tone = k.confidence == tune::Confidence::high ? Tone::good
                      : k.confidence == tune::Confidence::medium ? Tone::warn : Tone::bad;
    table.add({key_label(k.key), k.parameter, runtime::format_value(k.values.at(k.parameter)), bracket,
               paint(confidence, tone, color), result});
  }
  for (const auto& key : report.failed) table.add({key_label(key), "", "", "", "", paint("failed", Tone::bad, color)});
  for (const auto& key : report.skipped) table.add({key_label(key), "", "", "", "", paint("skipped (cached)", Tone::dim, color)});
  for (const auto& key : report.unsupported) table.add({key_label(key), "", "", "", "", paint("unsupported", Tone::dim, color)});
  if (!table.empty()) table.print(out, color, 2);
  // The evidence per size: median parallel/serial pair ratio, its interval and verdict.
  for (const auto& k : report.calibrated) {
    if (!k.comparison.empty() || k.cases.empty()) continue;
    out << fmt::format("evidence {} (parallel/serial time, 20% trimmed mean [95% interval] of pairs, fit across "
                       "sizes):\n",
                       key_label(k.key));
    for (const auto& c : k.cases)
      out << fmt::format("  {:>9} {:.3f} [{:.3f}, {:.3f}] fit {:.3f} {:<9} {:>3} pairs{}{}\n", c.size, c.ratio,
                         c.ratio_low, c.ratio_high, c.fitted_ratio, c.verdict, c.pairs, c.retested ? ", measured again" : "",
                         c.refined ? ", refinement" : "");
  }
  print_diagnostics(out, report.diagnostics, color);
  if (report.cache_update) {
    print_cache_update(out, *report.cache_update, color);
  } else if (!o.save) {
    out << "cache: not saved (--no-save); published in this process only\n";
  }
  if (!o.report_path.empty()) out << fmt::format("report: {}\n", o.report_path);
  return code;
}

}  // namespace

void register_calibrate(CLI::App& app, AppContext& context) {
  auto o = std::make_shared<CalibrateVerbOptions>();
  CLI::App* verb = app.add_subcommand(
      "calibrate", "Measure where parallel execution starts to pay off and save the result to the cache");
  verb->add_option("kernels", o->kernels, "Kernels (ONNX op types) to calibrate, e.g. Abs Add")
      ->type_name("KERNEL");
  verb->add_flag("--all", o->all, "Calibrate every calibratable key (filters still apply)");
  add_filter_flags(*verb, o->filters, ThreadsMeaning::session);
  add_policy_flags(*verb, o->policy);
  CLI::Option* duration = verb->add_option("--max-duration-ms", o->max_duration_ms,
                   "Time budget for the whole run, in ms (hard limit); default 250, or 20000 with --model")
      ->check(integer_in_range(1, int64_t{24} * 3600 * 1000))
      ->type_name("MS")
      ->default_val(tune::kDefaultCalibrationDurationMs);
  verb->add_option("--model", o->model_path,
                   "Calibrate the keys MODEL's nodes use, on the shapes they run at in it, and save only when the "
                   "whole model is not slower (binary .onnx or ONNX text)")
      ->type_name("MODEL")
      ->check(existing_file());
  verb->add_option("-i,--input", o->inputs,
                   "With --model: NAME=FILE.npy or NAME=random[:SEED] (inputs not named are random)")
      ->type_name("NAME=SOURCE");
  verb->add_option("--dim", o->dims, "With --model: bind a symbolic dimension of random inputs: SYMBOL=SIZE")
      ->type_name("SYMBOL=SIZE");
  verb->add_flag("--no-blocks", o->no_blocks, "With --model: tune parallel thresholds only, not tile parameters (GEMM blocks, depthwise widths)");
  verb->add_option("--max-memory", o->max_memory, "Memory budget for one case (K, M, G suffixes); larger cases are not run. The confirmation rounds keep a few smaller cases built beside the largest: at most 3x this in all")
      ->check(byte_size())
      ->type_name("BYTES")
      ->default_val("64M");
  CLI::Option* save = verb->add_flag("--save", o->save_flag, "Merge the results into the cache (the default)");
  CLI::Option* no_save = verb->add_flag("--no-save", o->no_save, "Only publish the results in this process; write nothing");
  save->excludes(no_save);
  add_match_option(*verb, o->match, "the saved results");
  verb->add_flag("--only-missing", o->only_missing, "Skip keys that already have a profile for this host");
  verb->add_option("--parameter", o->parameters,
                   "Comparison mode: run NAME=V1,V2,... interleaved on the same cases (up to six sizes, each 8x the "
                   "work of the last, within the budgets); the first value is the baseline, replaced only by a value at "
                   "least 2% faster")
      ->type_name("NAME=V1,V2,...");
  verb->add_option("--repeat", o->repeat, "Run the whole search K times; report agreement, save the median pick")
      ->check(integer_in_range(1, 1000))
      ->type_name("K")
      ->default_val(1);
  verb->add_option("--report", o->report_path, "Write an SVG plot per key (times against size, crossover marked)")
      ->type_name("FILE.svg");
  verb->add_flag("--prune-stale", o->prune_stale, "Drop profiles of older tuning ABIs while saving");
  verb->add_flag("--allow-load", o->allow_load,
                 "Judge measurements taken while other processes load the CPUs as usual (for machines that are "
                 "always this busy); without it such a result is low confidence and not saved. The load is "
                 "reported either way");
  verb->add_flag("--force,--save-unmeasured", o->force,
                 "Save results of low confidence (measurements disagree or too noisy) or with nothing measured, "
                 "labelled so in their provenance; without it they are published in-process only and the exit "
                 "status is 1");
  verb->footer(
      "Without --element-type a named kernel means its float key; --all means every element type.\n"
      "Each size is decided from interleaved serial/parallel pairs (20% trimmed mean of the ratios with\n"
      "Yuen's 95% interval); the sizes around the crossover are confirmed in rounds. Confidence is high\n"
      "when decided sizes pin the crossover within one doubling, medium within two, else low.\n"
      "Low-confidence picks are not saved without --force.\n"
      "Exit status: 0 when every selected key was calibrated (and, when saving, saved) or kept with a\n"
      "diagnostic; 1 when a result was not saved (nothing measured, or low confidence: --force saves it\n"
      "with provenance calibrate-unmeasured / calibrate-low-confidence), on errors (output mismatch,\n"
      "invalid result) and when the cache cannot be written (checked before measuring); 2 on usage errors.\n"
      "With --model, the keys come from the model's nodes: each node's parallel/serial time is measured\n"
      "in place (thresholds are placed around the work sizes of the model's nodes), tile parameters\n"
      "(GEMM block sizes, depthwise CHW widths) are compared one allowed step down and up on the\n"
      "model's own nodes, and the whole model is\n"
      "then run with the values in force and the new ones interleaved: the new values are saved only\n"
      "when the model is not slower (exit 1 and nothing written on a regression).\n"
      "--match saves the results as class profiles (measured here, used on every machine of the class):\n" +
      std::string(kHostMatchHelp) +
      "Examples:\n"
      "  onnx-light-tune calibrate Abs --save                 # the CI recipe\n"
      "  onnx-light-tune calibrate --model model.onnx --dim batch=1 --threads 2\n"
      "  onnx-light-tune calibrate Abs Add --element-type float,double --max-duration-ms 1000\n"
      "  onnx-light-tune calibrate --all --only-missing --max-duration-ms 60000\n"
      "  onnx-light-tune calibrate Abs --match model          # for every machine of this CPU model\n"
      "  onnx-light-tune calibrate Abs --repeat 5 --no-save --json\n"
      "  onnx-light-tune calibrate Abs --parameter parallel.minimum_elements=32768,16384,65536 --report abs.svg");
  verb->callback([o, duration, &context] {
    o->duration_given = duration->count() > 0;
    o->save = !o->no_save;
    context.action = [o, &context] { return calibrate_verb(*o, context); };
  });
}

}  // namespace onnx_light::cli
