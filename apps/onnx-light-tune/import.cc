// `onnx-light-tune import FILE...`: merges cache files (another machine's `export`, a fleet's
// `merge`) into the cache (issue 21). Every profile of every file is checked before anything is
// written; the merge is one locked, atomic update; conflicts are resolved by --on-conflict.
#include <fmt/format.h>

#include "cli_common.h"
#include "cli_usage.h"
#include "onnx_light/tune/cache_transfer.h"
#include "verbs.h"

namespace onnx_light::cli {

namespace {

struct ImportVerbOptions {
  std::vector<std::string> files;
  std::string on_conflict = "keep";
  bool json = false;
};

int import_verb(const ImportVerbOptions& options, AppContext& context) {
  log_cache_paths(context.cache_path);
  tune::ImportOptions importing;
  importing.files = options.files;
  importing.path = context.cache_path;
  importing.on_conflict = tune::parse_conflict_policy(options.on_conflict);
  const tune::ImportReport report = tune::import_kernel_tuning_cache(importing, operation_context(context));
  if (options.json) {
    report.write_json(*context.out);  // the bytes of to_json().dump(2), streamed
    *context.out << '\n';
    return report.ok() ? kExitOk : kExitFailed;
  }
  const bool color = stdout_color(context);
  auto& out = *context.out;
  if (report.ok()) {
    out << fmt::format("{} {}: {} added, {} replaced, {} kept, {}\n",
                       paint(report.status, report.status == "imported" ? Tone::good : Tone::plain, color),
                       report.path, report.added.size(), report.replaced.size(), report.kept.size(),
                       plural(report.conflicts.size(), "conflict"));
  } else {
    out << fmt::format("{}: {} was not changed\n", paint(report.status, Tone::bad, color), report.path);
  }
  if (!report.files.empty()) out << fmt::format("  from {}\n", describe_inputs(report.files));
  print_conflicts(out, report.conflicts, color);
  print_diagnostics(out, report.diagnostics, color);
  return report.ok() ? kExitOk : kExitFailed;
}

}  // namespace

void register_import(CLI::App& app, AppContext& context) {
  auto options = std::make_shared<ImportVerbOptions>();
  CLI::App* verb = app.add_subcommand(
      "import", "Merge cache files (another machine's export, a fleet's merge) into the cache");
  verb->add_option("files", options->files, "Cache files to import, in order")
      ->required()
      ->check(existing_file())
      ->type_name("FILE");
  add_conflict_option(*verb, options->on_conflict, "keep");
  verb->add_flag("--json", options->json, "Print the report as JSON (stable keys) instead of a summary");
  verb->footer(
      "Every profile of every FILE is read and checked first (structure, and the values of the\n"
      "kernels this build registers); one problem anywhere and nothing is written, the error naming\n"
      "the file, the profile and the field. Then one locked, atomic update of the cache (--cache,\n"
      "--system or the default one) merges them by key and host (threads included), keeping the\n"
      "files' provenance. A profile already there with the same values is kept as it is; one with\n"
      "other values is a conflict, listed with both sides and settled by --on-conflict (default\n"
      "keep: the cache's values stay). Files are applied in order. A cache that is not\n"
      "well-formed is never overwritten.\n"
      "Exit status: 0 imported or nothing to change; 1 an invalid or unreadable FILE, a conflict with\n"
      "--on-conflict fail, or a cache that could not be written; 2 usage errors and a missing FILE.\n"
      "Examples:\n"
      "  onnx-light-tune import build-07.cache\n"
      "  onnx-light-tune import a.cache b.cache --on-conflict newest --json\n"
      "  sudo onnx-light-tune --system import fleet.cache --on-conflict replace");
  verb->callback([options, &context] {
    context.reads_whole_cache = true;  // fleet-sized files: the heap prefers huge pages
    context.action = [options, &context] { return import_verb(*options, context); };
  });
}

}  // namespace onnx_light::cli
