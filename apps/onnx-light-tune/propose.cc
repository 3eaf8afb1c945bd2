// `onnx-light-tune propose [KERNEL...]`: which keys lack a profile for this host and which of
// those calibration can fill. Reads only.
#include <fmt/format.h>

#include "cli_common.h"
#include "onnx_light/tune/operations.h"
#include "verbs.h"

namespace onnx_light::cli {

namespace {

struct ProposeOptions {
  std::vector<std::string> positional_kernels;
  FilterFlags filters;
  AsHostFlag as_host;
};

int propose_verb(ProposeOptions& options, AppContext& context) {
  log_cache_paths(context.cache_path);
  tune::ProposeOptions propose;
  propose.selection = options.filters.selection();
  propose.selection.kernels.insert(propose.selection.kernels.end(), options.positional_kernels.begin(),
                                   options.positional_kernels.end());
  propose.path = context.cache_path;
  propose.num_threads = options.filters.thread_count();
  propose.idle_spin = options.filters.idle_spin();
  tune::OperationContext operation = operation_context(context);
  options.as_host.apply(operation);
  const tune::ProposalReport report = tune::propose_kernel_tuning_updates(propose, operation);
  if (options.filters.json) {
    print_json(*context.out, report.to_json());
    return kExitOk;
  }
  const bool color = stdout_color(context);
  auto& out = *context.out;
  options.as_host.print(out);
  out << fmt::format("cache: {} ({}); threads: {}{}\n", report.cache_path, tune::file_status_name(report.cache_status),
                     report.effective_threads, options.filters.idle_spin() ? "" : ", workers park (spin none)");
  out << fmt::format("{} selected: {} covered, {} missing ({} calibratable, {} without a calibration routine)\n",
                     report.selected.size(), report.covered.size(), report.missing.size(), report.calibratable.size(),
                     report.unsupported.size());
  Table table({"STATUS", "KERNEL", "TYPE", "IMPLEMENTATION", "ABI", "CALIBRATABLE", "CACHED"});
  for (const auto& entry : report.selected) {
    const bool covered = entry.cached_values.has_value();
    table.add({paint(covered ? "covered" : "missing", covered ? Tone::good : Tone::warn, color), entry.key.kernel,
               element_type_label(entry.key.element_type), entry.key.implementation,
               std::to_string(entry.key.tuning_abi), entry.calibratable ? "yes" : "no",
               covered ? format_values(*entry.cached_values) : "-"});
  }
  if (!table.empty()) table.print(out, color);
  if (!report.calibratable.empty()) {
    out << "calibrate the missing ones with 'onnx-light-tune calibrate KERNEL --save', or set values with "
           "'onnx-light-tune set KERNEL NAME=VALUE'\n";
  }
  print_diagnostics(out, report.diagnostics, color);
  return kExitOk;
}

}  // namespace

void register_propose(CLI::App& app, AppContext& context) {
  auto options = std::make_shared<ProposeOptions>();
  CLI::App* verb = app.add_subcommand(
      "propose", "Show which kernels lack a tuning profile for this host and which can be calibrated (read-only)");
  verb->add_option("kernels", options->positional_kernels, "Kernels to consider (default: all)")->type_name("KERNEL");
  add_filter_flags(*verb, options->filters, ThreadsMeaning::session);
  add_spin_class_option(*verb, options->filters);
  options->as_host.add(*verb);
  verb->footer(
      "A key is covered when the cache holds a valid profile for this machine and thread count.\n"
      "Nothing is written. --as-host FILE proposes for the host in FILE ('host --json') instead.\n"
      "Examples:\n"
      "  onnx-light-tune propose\n"
      "  onnx-light-tune propose Abs --element-type float --threads 2 --json");
  verb->callback(
      [options, &context] {
    context.reads_whole_cache = true;
    context.action = [options, &context] { return propose_verb(*options, context); };
  });
}

}  // namespace onnx_light::cli
