// `onnx-light-tune set KERNEL NAME=VALUE...`: validate and write one profile for this host, for
// the host of --as-host FILE, or (--match) for a class of hosts.
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "cli_common.h"
#include "cli_usage.h"
#include "onnx_light/runtime/error.h"
#include "onnx_light/runtime/cpu_features.h"
#include "onnx_light/runtime/kernel_table.h"
#include "onnx_light/tune/operations.h"
#include "verbs.h"

namespace onnx_light::cli {

namespace {

struct SetVerbOptions {
  std::vector<std::string> arguments;  // [KERNEL] NAME=VALUE...
  FilterFlags filters;
  bool no_load = false;
  bool prune_stale = false;
  std::string match = "exact";
  AsHostFlag as_host;
};

int set_verb(SetVerbOptions& options, AppContext& context) {
  log_cache_paths(context.cache_path);
  std::vector<std::string> assignments = options.arguments;
  std::string kernel;
  if (options.filters.kernels.size() > 1) {
    throw UsageError("set: give one kernel");
  }
  if (!options.filters.kernels.empty()) {
    kernel = options.filters.kernels.front();
  } else if (!assignments.empty() && assignments.front().find('=') == std::string::npos) {
    kernel = assignments.front();
    assignments.erase(assignments.begin());
  }
  if (kernel.empty() || assignments.empty()) {
    throw UsageError("set: expected KERNEL NAME=VALUE... (see 'onnx-light-tune set --help')");
  }
  if (options.filters.element_types.size() > 1) {
    throw UsageError("set: give one --element-type (one key is written)");
  }
  if (options.filters.implementation == tune::kAllImplementations) {
    throw UsageError("set: --implementation all names several keys; give one implementation");
  }
  tune::SetOptions set;
  set.kernel = kernel;
  set.element_type =
      options.filters.element_types.empty() ? 1 : element_type_number(options.filters.element_types.front());
  set.implementation = options.filters.implementation;
  if (!options.filters.library.empty()) set.library = options.filters.library;
  set.path = context.cache_path;
  set.num_threads = options.filters.thread_count();
  set.idle_spin = options.filters.idle_spin();
  set.load = !options.no_load;
  set.prune_stale = options.prune_stale;
  set.match = tune::parse_host_match(options.match);  // checked at parse time
  tune::OperationContext operation = operation_context(context);
  AsHostFlag& as_host = options.as_host;
  as_host.apply(operation);
  // With --as-host the key is the one that host dispatches to, not necessarily this machine's.
  const runtime::CpuFeatures& features = as_host.host ? as_host.features : runtime::host_cpu_features();
  const runtime::TuningSchema& schema = tune::resolve_schema(runtime::cpu_kernel_table(), set.kernel, set.element_type,
                                                             set.implementation, set.library, set.device, features);
  tune::SetReport report;
  try {
    set.values = tune::parse_assignments(schema, assignments);
    // Every value is checked before anything is written, so these errors are about the command line.
    report = tune::set_kernel_tuning_parameters(set, operation);
  } catch (const InvalidValueError& e) {
    throw UsageError(e.what());
  } catch (const TypeMismatchError& e) {
    throw UsageError(e.what());
  }
  const bool ok = report.status == tune::UpdateStatus::updated;
  if (options.filters.json) {
    print_json(*context.out, report.to_json());
    return ok ? kExitOk : kExitFailed;
  }
  const bool color = stdout_color(context);
  auto& out = *context.out;
  if (!ok) {
    out << fmt::format("{}: {} was not changed\n",
                       paint(std::string(tune::update_status_name(report.status)), Tone::bad, color), report.path);
    print_diagnostics(out, report.diagnostics, color);
    return kExitFailed;
  }
  out << fmt::format("{} {}\n", paint("updated", Tone::good, color), report.path);
  as_host.print(out);
  out << fmt::format("  {}, {} thread{}{}{}\n", report.key.to_string(), report.effective_threads,
                     report.effective_threads == 1 ? "" : "s", options.filters.idle_spin() ? "" : ", workers park (spin none)",
                     set.match == tune::HostMatch::exact
                         ? ""
                         : fmt::format(", for this host's {} class", tune::host_match_name(set.match)));
  Table table({"PARAMETER", "OLD", "FROM", "", "NEW"});
  for (const auto& change : report.changes) {
    table.add({change.name, runtime::format_value(change.old_value), std::string(tune::value_origin_name(change.old_origin)),
               "->", change.given ? runtime::format_value(change.new_value)
                                  : runtime::format_value(change.new_value) + " (kept)"});
  }
  table.print(out, color, 2);
  if (!report.pruned.empty()) out << fmt::format("  pruned {} stale key(s)\n", report.pruned.size());
  if (report.load) {
    out << fmt::format("  published {} profile(s) into this process (generation {})\n",
                       report.load->published_profiles, report.load->published_generation);
  }
  print_diagnostics(out, report.diagnostics, color);
  if (report.load) print_diagnostics(out, report.load->diagnostics, color);
  return kExitOk;
}

}  // namespace

void register_set(CLI::App& app, AppContext& context) {
  auto options = std::make_shared<SetVerbOptions>();
  CLI::App* verb = app.add_subcommand("set", "Write validated tuning values for one kernel on this host");
  verb->add_option("arguments", options->arguments, "KERNEL followed by NAME=VALUE pairs")->type_name("KERNEL NAME=VALUE");
  add_filter_flags(*verb, options->filters, ThreadsMeaning::session);
  add_spin_class_option(*verb, options->filters);
  verb->add_flag("--no-load", options->no_load, "Do not publish the cache into this process after writing");
  verb->add_flag("--prune-stale", options->prune_stale, "Also drop profiles of outdated tuning ABIs");
  add_match_option(*verb, options->match, "the profile");
  options->as_host.add(*verb);
  verb->get_option("--as-host")
      ->description("Write the profile for the host described in FILE (the JSON of 'onnx-light-tune host --json'), "
                    "at its effective_threads by default, instead of for this machine");
  verb->footer(
      std::string(
          "Omitted parameters keep the value of the cached profile of the same host (or class) and\n"
          "threads (user cache, else system cache), else the default. Every value is checked (name,\n"
          "type, range) before anything is written; the write is locked and atomic. The element type\n"
          "defaults to float. Integers take K/M/G suffixes and underscores (16K, 1_000_000).\n") +
      kHostMatchHelp +
      "Examples:\n"
      "  onnx-light-tune set Abs parallel.minimum_elements=16384\n"
      "  onnx-light-tune set Relu parallel.minimum_elements=64K --element-type double --threads 4\n"
      "  onnx-light-tune set Abs parallel.minimum_elements=32K --match model   # every stepping of this CPU\n"
      "  onnx-light-tune set Abs parallel.minimum_elements=32K --as-host build-07.host.json\n"
      "  onnx-light-tune --cache /tmp/t.cache set Abs parallel.minimum_elements=8192 --json");
  verb->callback([options, &context] { context.action = [options, &context] { return set_verb(*options, context); }; });
}

}  // namespace onnx_light::cli
