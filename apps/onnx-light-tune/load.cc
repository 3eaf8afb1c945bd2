// `onnx-light-tune load`: classify the cache and publish its loaded profiles into this process.
// A dry run for what `run` and Python sessions will use.
#include <fmt/format.h>

#include "cli_common.h"
#include "onnx_light/tune/operations.h"
#include "verbs.h"

namespace onnx_light::cli {

namespace {

struct LoadVerbOptions {
  FilterFlags filters;
  AsHostFlag as_host;
};

int load_verb(LoadVerbOptions& options, AppContext& context) {
  const FilterFlags& filters = options.filters;
  log_cache_paths(context.cache_path);
  tune::LoadOptions load;
  load.path = context.cache_path;
  load.selection = filters.selection();
  load.num_threads = filters.thread_count();
  tune::OperationContext operation = operation_context(context);
  options.as_host.apply(operation);
  const tune::LoadReport report = tune::load_kernel_tuning_cache(load, operation);
  const bool failed = report.status == tune::FileStatus::malformed || report.status == tune::FileStatus::unreadable;
  if (filters.json) {
    print_json(*context.out, report.to_json());
    return failed ? kExitFailed : kExitOk;
  }
  const bool color = stdout_color(context);
  auto& out = *context.out;
  options.as_host.print(out);
  out << fmt::format("cache: {} ({})\n", report.path,
                     paint(std::string(tune::file_status_name(report.status)),
                           failed ? Tone::bad : report.status == tune::FileStatus::loaded ? Tone::good : Tone::plain,
                           color));
  if (report.published) {
    // This process exits right away: say what a session's process would publish.
    out << fmt::format("a process loading this cache would publish {} profile{}\n", report.published_profiles,
                       report.published_profiles == 1 ? "" : "s");
  } else {
    out << "a process loading this cache would publish nothing (no layer could be read)\n";
  }
  Table table({"CLASS", "KERNEL", "TYPE", "IMPLEMENTATION", "ABI"});
  auto add = [&](const char* name, Tone tone, const std::vector<runtime::TuningKey>& keys) {
    for (const auto& key : keys) {
      table.add({paint(name, tone, color), key.kernel, element_type_label(key.element_type), key.implementation,
                 std::to_string(key.tuning_abi)});
    }
  };
  add("loaded", Tone::good, report.loaded);
  add("stale", Tone::warn, report.stale);
  add("incompatible", Tone::dim, report.incompatible);
  add("invalid", Tone::bad, report.invalid);
  add("missing", Tone::warn, report.missing);
  out << fmt::format("keys: {} loaded, {} stale, {} incompatible, {} invalid, {} missing\n", report.loaded.size(),
                     report.stale.size(), report.incompatible.size(), report.invalid.size(), report.missing.size());
  if (!table.empty()) table.print(out, color);
  print_diagnostics(out, report.diagnostics, color);
  return failed ? kExitFailed : kExitOk;
}

}  // namespace

void register_load(CLI::App& app, AppContext& context) {
  auto options = std::make_shared<LoadVerbOptions>();
  CLI::App* verb =
      app.add_subcommand("load", "Report what a process loading the cache would publish for this machine (a dry run)");
  add_filter_flags(*verb, options->filters, ThreadsMeaning::filter);
  options->as_host.add(*verb);
  verb->footer(
      "Classifies both layers and reports what a process would publish: every loaded profile (this\n"
      "machine, valid values, any thread count; user cache over system cache), as 'run' and Python\n"
      "sessions do before they create a session. Nothing stays published: this process exits.\n"
      "The JSON keys are unchanged (published_generation is this process's own). With\n"
      "filters only matching profiles are considered, and 'missing' lists the selected keys that\n"
      "have no loaded profile for --threads (default: one per physical core).\n"
      "--as-host FILE reports what a process on the host in FILE ('host --json') would publish, at\n"
      "its thread count; it publishes only into this process's registry and writes nothing.\n"
      "Exit status 1 when the cache is malformed or unreadable.\n"
      "Examples:\n"
      "  onnx-light-tune load\n"
      "  onnx-light-tune load --kernel Abs --kernel Relu --threads 2 --json");
  verb->callback([options, &context] {
    context.reads_whole_cache = true;
    context.action = [options, &context] { return load_verb(*options, context); };
  });
}

}  // namespace onnx_light::cli
