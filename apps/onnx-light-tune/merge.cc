// `onnx-light-tune merge FILE... -o OUT`: one cache file out of several (a fleet's exports), with
// one profile per key and host, sorted (issue 21). Touches no cache but OUT; without conflicts the
// output's bytes do not depend on the order of the inputs. Conflicts fail by default.
#include <fmt/format.h>

#include "cli_common.h"
#include "cli_usage.h"
#include "onnx_light/tune/cache_transfer.h"
#include "verbs.h"

namespace onnx_light::cli {

namespace {

struct MergeVerbOptions {
  std::vector<std::string> files;
  std::string output;
  std::string on_conflict = "fail";
  bool json = false;
};

int merge_verb(const MergeVerbOptions& options, AppContext& context) {
  if (options.output == "-" && options.json) {
    throw UsageError("--json with -o -: the merged cache itself goes to standard output; give -o FILE for the report");
  }
  tune::MergeOptions merging;
  merging.files = options.files;
  merging.output = options.output;
  merging.on_conflict = tune::parse_conflict_policy(options.on_conflict);
  const tune::MergeReport report = tune::merge_kernel_tuning_caches(merging, operation_context(context));
  if (options.json) {
    print_json(*context.out, report.to_json());
    return report.ok() ? kExitOk : kExitFailed;
  }
  // With -o - the report goes to stderr: stdout is the merged file (and nothing at all on failure).
  const bool to_stdout = options.output == "-";
  auto& out = to_stdout ? *context.err : *context.out;
  const bool color = to_stdout ? false : stdout_color(context);
  if (to_stdout && report.ok()) *context.out << report.text;
  const std::string inputs = describe_inputs(report.inputs);
  if (report.ok()) {
    if (!to_stdout) {
      out << fmt::format("{} {} into {}: {}, {} ({})\n", paint("merged", Tone::good, color), inputs, report.output,
                         plural(report.profile_count, "profile"), plural(report.conflicts.size(), "conflict"),
                         tune::conflict_policy_name(report.on_conflict));
    }
  } else {
    out << fmt::format("{}: {} was not written ({})\n", paint(report.status, Tone::bad, color), report.output,
                       inputs);
  }
  print_conflicts(out, report.conflicts, color);
  print_diagnostics(out, report.diagnostics, color);
  return report.ok() ? kExitOk : kExitFailed;
}

}  // namespace

void register_merge(CLI::App& app, AppContext& context) {
  auto options = std::make_shared<MergeVerbOptions>();
  CLI::App* verb =
      app.add_subcommand("merge", "Merge cache files into one (a fleet's exports), touching no cache");
  verb->add_option("files", options->files, "Cache files to merge, in order")
      ->required()
      ->check(existing_file())
      ->type_name("FILE");
  verb->add_option("-o,--output", options->output, "The file to write ('-': standard output)")
      ->required()
      ->type_name("FILE");
  add_conflict_option(*verb, options->on_conflict, "fail");
  verb->add_flag("--json", options->json, "Print the report as JSON (stable keys) instead of a summary");
  verb->footer(
      "Every profile of every FILE is checked first, as by 'import'; then one profile per key and\n"
      "host (threads included) goes to OUT, sorted by key and host, provenance kept. Without\n"
      "conflicts OUT has the same bytes whatever the order of the FILEs, and merging a file with\n"
      "itself gives it back byte for byte; of equal values written at different times the newest\n"
      "provenance is kept. A conflict (same key and host, other values) writes nothing by default\n"
      "(--on-conflict fail) and lists both sides; keep (the earlier FILE), replace (the later) or\n"
      "newest settle it. OUT is written like a cache: locked, atomic, never over a file that is not\n"
      "a cache. No cache is read or changed.\n"
      "Exit status: 0 merged; 1 a conflict (with fail), an invalid or unreadable FILE, or OUT could\n"
      "not be written; 2 usage errors and a missing FILE.\n"
      "Examples:\n"
      "  onnx-light-tune merge build-07.cache build-08.cache -o fleet.cache\n"
      "  onnx-light-tune merge exports/*.cache -o fleet.cache --on-conflict newest --json\n"
      "  onnx-light-tune merge a.cache b.cache -o - | sudo tee /etc/onnx-light/kernel_tuning.cache");
  verb->callback([options, &context] {
    context.reads_whole_cache = true;  // fleet-sized files: the heap prefers huge pages
    context.action = [options, &context] { return merge_verb(*options, context); };
  });
}

}  // namespace onnx_light::cli
