// `onnx-light-tune list [KERNEL...]`: every selected key's parameters, defaults, cached and
// active values. The cache is loaded first, so "active" is what `run` would use.
#include <fmt/format.h>

#include "cli_common.h"
#include "onnx_light/tune/operations.h"
#include "verbs.h"

namespace onnx_light::cli {

namespace {

struct ListOptions {
  std::vector<std::string> positional_kernels;
  FilterFlags filters;
  AsHostFlag as_host;
};

// The MATCH cell of a key: how its cached profile applies here and how many loaded profiles of
// the same key and threads it is in force over ("model, shadows 1"); "-" without one.
std::string match_cell(const tune::KernelTuningEntry& entry) {
  if (!entry.matched_by) return "-";
  std::string cell = matched_by_label(entry.matched_by);
  if (!entry.shadows.empty()) cell += fmt::format(", shadows {}", entry.shadows.size());
  return cell;
}

int list_verb(ListOptions& options, AppContext& context) {
  log_cache_paths(context.cache_path);
  tune::OperationContext operation = operation_context(context);
  options.as_host.apply(operation);
  tune::ParametersOptions parameters;
  parameters.selection = options.filters.selection();
  parameters.selection.kernels.insert(parameters.selection.kernels.end(), options.positional_kernels.begin(),
                                      options.positional_kernels.end());
  parameters.path = context.cache_path;
  parameters.num_threads = options.filters.thread_count();
  parameters.idle_spin = options.filters.idle_spin();
  // Publish the cache into this process first, as a session of `run` would see it (with --as-host,
  // as one on that host would; the registry is this process's own, nothing is written).
  tune::LoadOptions load;
  load.path = context.cache_path;
  (void)tune::load_kernel_tuning_cache(load, operation);
  const tune::KernelParametersReport report = tune::kernel_tuning_parameters(parameters, operation);
  if (options.filters.json) {
    print_json(*context.out, report.to_json());
    return kExitOk;
  }
  const bool color = stdout_color(context);
  auto& out = *context.out;
  options.as_host.print(out);
  out << fmt::format("cache: {} ({})", report.cache_path, tune::file_status_name(report.cache_status));
  if (!report.system_path.empty()) {
    out << fmt::format("; system cache: {} ({})", report.system_path, tune::file_status_name(report.system_status));
  }
  out << fmt::format("; threads: {}{}\n", report.effective_threads,
                     options.filters.idle_spin() ? "" : ", workers park (spin none)");
  Table table({"KERNEL", "TYPE", "IMPLEMENTATION", "ABI", "PARAMETER", "DEFAULT", "CACHED", "ACTIVE", "SOURCE",
               "CALIBRATABLE", "MATCH"});
  for (const auto& entry : report.kernels) {
    bool first = true;
    for (const auto& name : entry.parameter_names) {
      std::string cached = "-";
      if (entry.cached_values) {
        const auto it = entry.cached_values->find(name);
        cached = it == entry.cached_values->end()
                     ? "?"
                     : fmt::format("{} ({})", runtime::format_value(it->second),
                                   tune::cache_layer_name(entry.cached_layer.value_or(tune::CacheLayer::user)));
      }
      const auto active = entry.active_values.find(name);
      const auto fallback = entry.defaults.find(name);
      const bool published = entry.active_source == runtime::TuningSource::published_profile;
      table.add({first ? entry.key.kernel : "", first ? element_type_label(entry.key.element_type) : "",
                 first ? entry.key.implementation : "", first ? std::to_string(entry.key.tuning_abi) : "", name,
                 fallback == entry.defaults.end() ? "?" : runtime::format_value(fallback->second), cached,
                 active == entry.active_values.end() ? "?" : runtime::format_value(active->second),
                 paint(std::string(runtime::tuning_source_name(entry.active_source)), published ? Tone::good : Tone::dim,
                       color),
                 first ? (entry.calibratable ? "yes" : "no") : "", first ? match_cell(entry) : ""});
      first = false;
    }
    if (entry.parameter_names.empty()) {
      table.add({entry.key.kernel, element_type_label(entry.key.element_type), entry.key.implementation,
                 std::to_string(entry.key.tuning_abi), "(none)", "", "", "", "",
                 entry.calibratable ? "yes" : "no", match_cell(entry)});
    }
  }
  if (table.empty()) {
    out << "no kernel matches the filters\n";
  } else {
    table.print(out, color);
  }
  print_diagnostics(out, report.diagnostics, color);
  return kExitOk;
}

}  // namespace

void register_list(CLI::App& app, AppContext& context) {
  auto options = std::make_shared<ListOptions>();
  CLI::App* verb = app.add_subcommand(
      "list", "List tunable kernels: parameters, defaults, cached values and the values in force");
  verb->add_option("kernels", options->positional_kernels, "Kernels to list (default: all)")->type_name("KERNEL");
  add_filter_flags(*verb, options->filters, ThreadsMeaning::session);
  add_spin_class_option(*verb, options->filters);
  options->as_host.add(*verb);
  verb->footer(
      "Each (kernel, element type) shows the implementation this host dispatches to unless\n"
      "--implementation says otherwise. CACHED is this machine's profile for the thread count,\n"
      "from the user cache or the read-only system cache below it; ACTIVE is what a session\n"
      "uses after loading the cache. --as-host FILE shows all of this for the host in FILE\n"
      "('host --json'): its profiles, its dispatched implementations, its thread count.\n"
      "MATCH says why the cached profile applies (exact, or its class) and how many other loaded\n"
      "profiles of the key and threads it shadows ('inspect' lists them; --json: matched_by, shadows).\n" +
      std::string(kHostMatchHelp) +
      "Examples:\n"
      "  onnx-light-tune list\n"
      "  onnx-light-tune list Abs Relu --element-type float --threads 2\n"
      "  onnx-light-tune list --implementation all --json");
  verb->callback([options, &context] {
    context.reads_whole_cache = true;
    context.action = [options, &context] { return list_verb(*options, context); };
  });
}

}  // namespace onnx_light::cli
