// `onnx-light-tune export -o FILE`: the profiles of this machine (or of the host in --as-host FILE,
// or of every host) as a standalone cache file to carry to other machines (issue 21). Reads the
// cache; writes only FILE (locked and atomic, as a cache), or standard output with `-o -`.
#include <fmt/format.h>

#include "cli_common.h"
#include "cli_usage.h"
#include "onnx_light/tune/cache_transfer.h"
#include "verbs.h"

namespace onnx_light::cli {

namespace {

struct ExportVerbOptions {
  FilterFlags filters;
  AsHostFlag as_host;
  bool all_hosts = false;
  std::string host_class = "exact";
  std::string output;
};

void print_profiles(std::ostream& out, const std::vector<tune::CacheProfile>& profiles, bool color) {
  if (profiles.empty()) return;
  Table table({"KERNEL", "TYPE", "IMPLEMENTATION", "ABI", "THREADS", "HOST", "VALUES", "SOURCE", "WRITTEN"});
  for (const auto& p : profiles) {
    table.add({p.key.kernel, element_type_label(p.key.element_type), p.key.implementation,
               std::to_string(p.key.tuning_abi), threads_label(p.host), host_label(p.host),
               format_values(p.values), p.provenance.source, p.provenance.written});
  }
  table.print(out, color, 2);
}

int export_verb(ExportVerbOptions& options, AppContext& context) {
  if (options.output == "-" && options.filters.json) {
    throw UsageError("--json with -o -: the cache file itself goes to standard output; give -o FILE for the report");
  }
  log_cache_paths(context.cache_path);
  tune::OperationContext operation = operation_context(context);
  options.as_host.apply(operation);
  tune::ExportOptions exporting;
  exporting.path = context.cache_path;
  exporting.filter = options.filters.selection();
  exporting.threads = options.filters.thread_count();
  exporting.all_hosts = options.all_hosts;
  exporting.output = options.output;
  exporting.host_class = tune::parse_host_match(options.host_class);  // checked at parse time
  // Profiles that become one under --host-class and disagree are an InvalidValueError (exit 1):
  // the cache's contents, not the command line, are at fault.
  const tune::ExportReport report = tune::export_kernel_tuning_cache(exporting, operation);
  const bool ok = report.status == "exported";
  if (options.output == "-") {
    *context.out << report.text;
    print_diagnostics(*context.err, report.diagnostics, false);
    return kExitOk;
  }
  if (options.filters.json) {
    report.write_json(*context.out);  // the bytes of to_json().dump(2), streamed
    *context.out << '\n';
    return ok ? kExitOk : kExitFailed;
  }
  const bool color = stdout_color(context);
  auto& out = *context.out;
  std::string whose = !report.host                ? "of every host"
                      : options.as_host.host ? fmt::format("of host {}", options.as_host.path)
                                             : "of this machine";
  if (report.host_class != tune::HostMatch::exact) {
    whose += fmt::format(" as {} class profiles", tune::host_match_name(report.host_class));
  }
  if (ok) {
    out << fmt::format("{} {} profile{} {} from {} to {}\n", paint("exported", Tone::good, color),
                       report.profiles.size(), report.profiles.size() == 1 ? "" : "s", whose, report.path,
                       report.output);
  } else {
    out << fmt::format("{}: {} was not written\n", paint(report.status, Tone::bad, color), report.output);
  }
  print_profiles(out, report.profiles, color);
  print_diagnostics(out, report.diagnostics, color, /*summarize_foreign=*/false);
  return ok ? kExitOk : kExitFailed;
}

}  // namespace

void register_export(CLI::App& app, AppContext& context) {
  auto options = std::make_shared<ExportVerbOptions>();
  CLI::App* verb = app.add_subcommand(
      "export", "Write the cached profiles of this machine (or of any host) as a standalone cache file");
  verb->add_option("-o,--output", options->output,
                   "The file to write (a cache file of the same format; '-': standard output)")
      ->required()
      ->type_name("FILE");
  add_filter_flags(*verb, options->filters, ThreadsMeaning::filter);
  verb->get_option("--implementation")
      ->description("Only this implementation (portable, avx2, ...); default or 'all': every implementation");
  auto* all = verb->add_flag("--all-hosts", options->all_hosts,
                             "Export the profiles of every host, not only this machine's");
  options->as_host.add(*verb);
  verb->get_option("--as-host")
      ->description("Export the profiles of the host described in FILE (the JSON of 'onnx-light-tune host "
                    "--json') instead of this machine's")
      ->excludes(all);
  verb->add_option("--host-class", options->host_class,
                   "Generalise the profiles to a class of hosts: exact (as written), model, microarchitecture or "
                   "isa (see below); profiles already as general stay as they are")
      ->check(host_match_validator())
      ->type_name("CLASS")
      ->default_val("exact");
  verb->footer(
      "Reads the cache (--cache, --system or the default one) and writes the selected profiles to\n"
      "FILE as a cache file of the same format, sorted by key and host, provenance kept: what\n"
      "'import' and 'merge' read on another machine. By default the profiles of this machine at\n"
      "every thread count; --as-host FILE selects another host's, --all-hosts every host's; the\n"
      "filters narrow further. Profiles an import would refuse (unreadable, invalid values) are\n"
      "left out with a diagnostic. FILE is written like a cache: locked, atomic, never over a file\n"
      "that is not a cache. Exit status 0 exported, 1 FILE could not be written, a source cache\n"
      "unreadable or malformed, 2 usage errors and a missing source cache.\n"
      "--host-class CLASS writes each profile as one of CLASS (format_version 2, host.match = CLASS,\n"
      "only the class's host fields): profiles that become one (two steppings of a model at the same\n"
      "threads) must agree on their values, otherwise nothing is written (exit 1, both are named).\n" +
      std::string(kHostMatchHelp) +
      "Examples:\n"
      "  onnx-light-tune export -o \"$(hostname).cache\"\n"
      "  onnx-light-tune export --kernel Abs,Relu --threads 4 -o - > abs-relu.cache\n"
      "  onnx-light-tune export --host-class model -o \"$(hostname)-model.cache\"\n"
      "  onnx-light-tune --cache fleet.cache export --as-host build-07.host.json -o build-07.cache");
  verb->callback([options, &context] {
    context.reads_whole_cache = true;  // fleet-sized files: the heap prefers huge pages
    context.action = [options, &context] { return export_verb(*options, context); };
  });
}

}  // namespace onnx_light::cli
