// `onnx-light-tune remove`: delete the cache (and its lock), or with filters only the matching
// profiles. --dry-run (and the terminal prompt) lists exactly what would go. Never touches the
// system cache.
#include <unistd.h>

#include <iostream>

#include <fmt/format.h>

#include "cli_common.h"
#include "cli_usage.h"
#include "onnx_light/tune/cache_path.h"
#include "onnx_light/tune/operations.h"
#include "verbs.h"

namespace onnx_light::cli {

namespace {

struct RemoveVerbOptions {
  FilterFlags filters;
  bool stale = false;
  bool incompatible = false;
  bool invalid = false;
  bool foreign = false;
  std::string hostname;
  bool dry_run = false;
  bool yes = false;
};

// One row per profile: what it is for, which machine wrote it, and why it is what it is.
void print_profiles(std::ostream& out, const std::vector<tune::InspectedProfile>& profiles, bool color) {
  if (profiles.empty()) return;
  Table table({"#", "KERNEL", "TYPE", "IMPLEMENTATION", "ABI", "THREADS", "HOST", "HOSTNAME", "CLASS", "SOURCE"});
  for (const auto& p : profiles) {
    const auto& h = p.profile.host;
    table.add({std::to_string(p.index), p.profile.key.kernel.empty() ? "(unreadable)" : p.profile.key.kernel,
               element_type_label(p.profile.key.element_type), p.profile.key.implementation,
               std::to_string(p.profile.key.tuning_abi), threads_label(h),
               host_label(h),
               p.profile.provenance.hostname.empty() ? "-" : p.profile.provenance.hostname,
               std::string(tune::profile_class_name(p.classification)), p.profile.provenance.source});
  }
  table.print(out, color, 2);
}

bool report_ok(const tune::RemoveReport& report) {
  return report.status == "removed" || report.status == "not_found" || report.status == "unchanged" ||
         report.status == "would_remove";
}

void print_report(std::ostream& out, const tune::RemoveReport& report, bool whole_file, bool color) {
  const std::size_t keys = report.removed.size();
  if (report.status == "not_found") {
    out << fmt::format("no cache at {}; nothing {}\n", report.path, report.dry_run ? "would be removed" : "removed");
  } else if (!report_ok(report)) {
    out << fmt::format("{}: {} was not changed\n", paint(report.status, Tone::bad, color), report.path);
  } else if (report.status == "unchanged") {
    out << fmt::format("no profile matches; nothing {} ({} kept in {})\n",
                       report.dry_run ? "would be removed" : "removed", plural(report.preserved_profiles, "profile"),
                       report.path);
  } else if (whole_file) {
    out << fmt::format("{} {} ({})\n", paint(report.dry_run ? "would remove" : "removed", Tone::good, color),
                       fmt::join(report.removed_files, " and "), plural(report.removed_profiles.size(), "profile"));
  } else {
    out << fmt::format("{} {} ({}) from {}; {} kept\n",
                       paint(report.dry_run ? "would remove" : "removed", Tone::good, color),
                       plural(report.removed_profiles.size(), "profile"), plural(keys, "key"), report.path,
                       plural(report.preserved_profiles, "profile"));
  }
  print_profiles(out, report.removed_profiles, color);
  print_diagnostics(out, report.diagnostics, color);
}

int remove_verb(const RemoveVerbOptions& options, AppContext& context) {
  log_cache_paths(context.cache_path);
  tune::RemoveOptions remove;
  remove.path = context.cache_path;
  remove.filter = options.filters.selection();
  remove.threads = options.filters.thread_count();
  if (options.stale) remove.classes.push_back(tune::ProfileClass::stale);
  if (options.incompatible) remove.classes.push_back(tune::ProfileClass::incompatible);
  if (options.invalid) remove.classes.push_back(tune::ProfileClass::invalid);
  remove.foreign = options.foreign;
  remove.hostname = options.hostname;
  const bool whole_file = remove.whole_file();
  const tune::OperationContext operation = operation_context(context);
  const bool color = stdout_color(context);
  auto& out = *context.out;

  if (!options.dry_run && !options.yes) {
    const std::string target = tune::resolve_cache_path(remove.path).string();
    if (isatty(STDIN_FILENO) == 0) {
      throw UsageError(fmt::format("remove: pass --yes to remove {} from {} (--dry-run lists them)",
                                   whole_file ? "every profile" : "the matching profiles", target));
    }
    // Show exactly what would go before asking.
    tune::RemoveOptions preview = remove;
    preview.dry_run = true;
    const tune::RemoveReport planned = tune::remove_kernel_tuning_cache(preview, operation);
    print_report(*context.err, planned, whole_file, context.use_color(isatty(STDERR_FILENO) != 0));
    if (planned.status != "would_remove") return report_ok(planned) ? kExitOk : kExitFailed;
    *context.err << fmt::format("Remove {} from {}? [y/N] ",
                                whole_file ? "the cache file" : plural(planned.removed_profiles.size(), "profile"),
                                target);
    std::string answer;
    std::getline(std::cin, answer);
    if (answer != "y" && answer != "Y" && answer != "yes") {
      *context.err << "nothing removed\n";
      return kExitFailed;
    }
  }
  remove.dry_run = options.dry_run;
  const tune::RemoveReport report = tune::remove_kernel_tuning_cache(remove, operation);
  if (options.filters.json) {
    print_json(out, report.to_json());
  } else {
    print_report(out, report, whole_file, color);
  }
  return report_ok(report) ? kExitOk : kExitFailed;
}

}  // namespace

void register_remove(CLI::App& app, AppContext& context) {
  auto options = std::make_shared<RemoveVerbOptions>();
  CLI::App* verb = app.add_subcommand("remove", "Delete the tuning cache, or only the profiles matching the filters");
  add_filter_flags(*verb, options->filters, ThreadsMeaning::filter);
  verb->add_flag("--stale", options->stale, "Only stale profiles (written for an older tuning ABI)");
  verb->add_flag("--incompatible", options->incompatible,
                 "Only incompatible profiles (another machine, or a key this build does not have)");
  verb->add_flag("--invalid", options->invalid, "Only invalid profiles (bad values or structure, duplicates)");
  verb->add_flag("--foreign", options->foreign, "Only profiles of other machines (host descriptor differs)");
  verb->add_option("--host", options->hostname, "Only profiles whose provenance names this hostname")
      ->type_name("HOSTNAME");
  verb->add_flag("-n,--dry-run", options->dry_run, "List what would be removed; change nothing");
  verb->add_flag("-y,--yes", options->yes, "Do not ask for confirmation (required when stdin is not a terminal)");
  verb->footer(
      "Without filters the cache file and its lock are deleted. With filters the profiles matching\n"
      "all of them are dropped in one locked update and the rest is kept; the classification flags\n"
      "(--stale, --incompatible, --invalid) combine as 'any of'. Filters match profiles of every\n"
      "host unless --foreign or --host narrows them; each removed profile is listed with its host.\n"
      "A malformed cache can only be removed whole. The system cache is never changed.\n"
      "On a terminal the profiles that would go are listed before the prompt.\n"
      "Exit status: 0 removed, nothing matched or no cache; 1 the cache could not be changed or the\n"
      "prompt was declined; 2 usage errors (an unknown kernel, --yes missing without a terminal).\n"
      "Examples:\n"
      "  onnx-light-tune remove --stale --yes               # what 'set --prune-stale' did\n"
      "  onnx-light-tune remove --foreign --dry-run\n"
      "  onnx-light-tune remove --kernel Abs --threads 2 --yes --json\n"
      "  onnx-light-tune remove --yes                       # the whole file");
  verb->callback([options, &context] {
    context.reads_whole_cache = true;  // fleet-sized files: the heap prefers huge pages
    context.action = [options, &context] { return remove_verb(*options, context); };
  });
}

}  // namespace onnx_light::cli
