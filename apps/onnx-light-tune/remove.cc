// `onnx-light-tune remove`: delete the cache (and its lock), or with filters only the matching
// profiles. Never touches the system cache.
#include <unistd.h>

#include <iostream>

#include <fmt/format.h>

#include "cli_common.h"
#include "onnx_light/tune/cache_path.h"
#include "onnx_light/tune/operations.h"
#include "verbs.h"

namespace onnx_light::cli {

namespace {

struct RemoveVerbOptions {
  FilterFlags filters;
  bool yes = false;
};

int remove_verb(const RemoveVerbOptions& options, AppContext& context) {
  log_cache_paths(context.cache_path);
  tune::RemoveOptions remove;
  remove.path = context.cache_path;
  remove.filter = options.filters.selection();
  remove.threads = options.filters.thread_count();
  const bool whole_file = remove.filter.empty() && !remove.threads;
  if (!options.yes) {
    const std::string target = tune::resolve_cache_path(remove.path).string();
    if (isatty(STDIN_FILENO) == 0) {
      *context.err << fmt::format("onnx-light-tune remove: pass --yes to remove {} from {}\n",
                                  whole_file ? "every profile" : "the matching profiles", target);
      return kExitUsage;
    }
    *context.err << fmt::format("Remove {} from {}? [y/N] ", whole_file ? "every profile" : "the matching profiles",
                                target);
    std::string answer;
    std::getline(std::cin, answer);
    if (answer != "y" && answer != "Y" && answer != "yes") {
      *context.err << "nothing removed\n";
      return kExitFailed;
    }
  }
  const tune::RemoveReport report = tune::remove_kernel_tuning_cache(remove, operation_context(context));
  const bool ok = report.status == "removed" || report.status == "not_found" || report.status == "unchanged";
  if (options.filters.json) {
    print_json(*context.out, report.to_json());
    return ok ? kExitOk : kExitFailed;
  }
  const bool color = stdout_color(context);
  auto& out = *context.out;
  if (report.status == "not_found") {
    out << fmt::format("no cache at {}; nothing removed\n", report.path);
  } else if (!ok) {
    out << fmt::format("{}: {} was not changed\n", paint(report.status, Tone::bad, color), report.path);
  } else if (whole_file) {
    out << fmt::format("{} {}\n", paint("removed", Tone::good, color), fmt::join(report.removed_files, " and "));
  } else {
    out << fmt::format("{} {} key(s) from {}; {} key(s) kept\n", paint("removed", Tone::good, color),
                       report.removed.size(), report.path, report.preserved.size());
    for (const auto& key : report.removed) out << "  " << key_label(key) << "\n";
  }
  print_diagnostics(out, report.diagnostics, color);
  return ok ? kExitOk : kExitFailed;
}

}  // namespace

void register_remove(CLI::App& app, AppContext& context) {
  auto options = std::make_shared<RemoveVerbOptions>();
  CLI::App* verb = app.add_subcommand("remove", "Delete the tuning cache, or only the profiles matching the filters");
  add_filter_flags(*verb, options->filters, ThreadsMeaning::filter);
  verb->add_flag("-y,--yes", options->yes, "Do not ask for confirmation (required when stdin is not a terminal)");
  verb->footer(
      "Without filters the cache file and its lock are deleted. With filters the matching profiles\n"
      "are dropped in one locked update and the rest is kept; a malformed cache can only be removed\n"
      "whole. The system cache is never changed.\n"
      "Examples:\n"
      "  onnx-light-tune remove --yes\n"
      "  onnx-light-tune remove --kernel Abs --threads 2 --yes --json");
  verb->callback(
      [options, &context] { context.action = [options, &context] { return remove_verb(*options, context); }; });
}

}  // namespace onnx_light::cli
