// `onnx-light-tune verify [KERNEL...]`: re-measure the cached thresholds of this host and say
// whether each still holds. Reads the cache only; never writes or publishes.
#include <unistd.h>

#include <fmt/format.h>

#include "cli_common.h"
#include "cli_usage.h"
#include "onnx_light/tune/verification.h"
#include "verbs.h"

namespace onnx_light::cli {

namespace {

struct VerifyVerbOptions {
  std::vector<std::string> kernels;
  FilterFlags filters;
  int64_t max_duration_ms = 1000;
  std::string max_memory = "64M";
  bool strict = false;
  bool allow_load = false;
};

int verify_verb(const VerifyVerbOptions& o, AppContext& context) {
  log_cache_paths(context.cache_path);
  tune::VerifyOptions options;
  options.selection = o.filters.selection();
  options.selection.kernels.insert(options.selection.kernels.end(), o.kernels.begin(), o.kernels.end());
  options.path = context.cache_path;
  options.allow_load = o.allow_load;
  options.num_threads = o.filters.thread_count();
  options.policy.spin_microseconds = runtime::parse_spin_policy(o.filters.spin);
  options.maximum_duration_ms = o.max_duration_ms;
  options.maximum_memory_bytes =
      std::get<int64_t>(runtime::parse_value(o.max_memory, runtime::ValueType::int64, "--max-memory"));
  const bool progress = !o.filters.json && context.verbosity >= 0 && isatty(STDERR_FILENO) != 0;
  if (progress)
    options.progress = [&context](const tune::CalibrationProgress& p) {
      fmt::print(stderr, "\r\x1b[2Kverify {} {}: {}", p.key.kernel, element_type_label(p.key.element_type),
                 p.case_description);
      std::fflush(stderr);
      (void)context;
    };
  const tune::VerificationReport report = tune::verify_kernel_tuning(options, operation_context(context));
  if (progress) fmt::print(stderr, "\r\x1b[2K");
  // A cache we cannot read is a failure: there is nothing trustworthy to verify against.
  const bool unreadable =
      report.cache_status == tune::FileStatus::malformed || report.cache_status == tune::FileStatus::unreadable;
  const int code = unreadable || (o.strict && report.drifted()) ? kExitFailed : kExitOk;
  if (o.filters.json) {
    print_json(*context.out, report.to_json());
    return code;
  }
  const bool color = stdout_color(context);
  auto& out = *context.out;
  out << fmt::format("cache: {} ({}); threads: {}; {} ms of {}\n", report.cache_path,
                     tune::file_status_name(report.cache_status), report.effective_threads, report.elapsed_ms,
                     report.maximum_duration_ms);
  if (report.profiles.empty() && !unreadable)
    out << "no cached profile of this host and thread count matches; nothing to verify\n";
  Table table({"STATUS", "KERNEL", "TYPE", "IMPLEMENTATION", "PARAMETER", "CACHED", "MEASURED", "CONFIDENCE"});
  for (const auto& p : report.profiles) {
    const Tone tone = p.status == tune::DriftStatus::holds ? Tone::good
                      : p.status == tune::DriftStatus::drifted ? Tone::bad
                                                                : Tone::warn;
    table.add({paint(tune::drift_status_name(p.status), tone, color), p.key.kernel,
               element_type_label(p.key.element_type), p.key.implementation, p.parameter.empty() ? "-" : p.parameter,
               p.cached ? std::to_string(*p.cached) : "-", p.measured ? std::to_string(*p.measured) : "-",
               p.measured ? tune::confidence_name(p.confidence) : "-"});
  }
  if (!table.empty()) table.print(out, color);
  for (const auto& p : report.profiles)
    if (p.status != tune::DriftStatus::holds) out << fmt::format("  {}: {}\n", key_label(p.key), p.reason);
  if (report.drifted())
    out << "re-calibrate the drifted keys with 'onnx-light-tune calibrate KERNEL --save'\n";
  print_diagnostics(out, report.diagnostics, color);
  return code;
}

}  // namespace

void register_verify(CLI::App& app, AppContext& context) {
  auto o = std::make_shared<VerifyVerbOptions>();
  CLI::App* verb = app.add_subcommand(
      "verify", "Re-measure the cached thresholds of this host and report which still hold (read-only)");
  verb->add_option("kernels", o->kernels, "Kernels to verify (default: every cached profile of this host)")
      ->type_name("KERNEL");
  add_filter_flags(*verb, o->filters, ThreadsMeaning::session);
  add_spin_class_option(*verb, o->filters);
  verb->add_option("--max-duration-ms", o->max_duration_ms,
                   "Time budget for the whole run, in ms, shared evenly by the profiles (hard limit)")
      ->check(integer_in_range(1, int64_t{24} * 3600 * 1000))
      ->type_name("MS")
      ->default_val(1000);
  verb->add_option("--max-memory", o->max_memory, "Memory budget for one case (K, M, G suffixes)")
      ->check(byte_size())
      ->type_name("BYTES")
      ->default_val("64M");
  verb->add_flag("--strict", o->strict, "Exit 1 when any profile drifted");
  verb->add_flag("--allow-load", o->allow_load,
                 "Give verdicts even when other processes loaded the CPUs while measuring (machines that are "
                 "always this busy); without it such profiles are not_measured");
  verb->footer(
      "Each cached profile of this host and thread count whose kernel has a calibration routine is\n"
      "measured again by the calibration search (nothing is saved or published) and reported as\n"
      "holds (the new pick is within one doubling of the cached value), drifted (further apart, both\n"
      "shown) or not_measured (budget, memory, or no calibration routine; the reason is given).\n"
      "Exit status: 0 unless the cache cannot be read (1) or --strict and something drifted (1);\n"
      "2 on usage errors.\n"
      "Examples:\n"
      "  onnx-light-tune verify                          # after a kernel upgrade or a VM migration\n"
      "  onnx-light-tune verify Abs --max-duration-ms 500 --json\n"
      "  onnx-light-tune verify --strict || onnx-light-tune calibrate --all --save");
  verb->callback([o, &context] { context.action = [o, &context] { return verify_verb(*o, context); }; });
}

}  // namespace onnx_light::cli
