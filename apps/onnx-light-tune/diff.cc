// `onnx-light-tune diff A B`: the profiles added, removed and changed from cache file A to cache
// file B, matched by key and host (issue 21). Read-only. Exit status as diff(1) with --exit-code:
// 0 the same, 1 different; any trouble is 2, so that 1 can only mean "they differ".
#include <fmt/format.h>

#include "cli_common.h"
#include "cli_usage.h"
#include "onnx_light/tune/cache_transfer.h"
#include "verbs.h"

namespace onnx_light::cli {

namespace {

constexpr int kExitTrouble = 2;

struct DiffVerbOptions {
  std::vector<std::string> files;  // A and B
  bool json = false;
  bool exit_code = false;
};

// "Abs float avx2 (abi 2) on x86_64 amd zen3, 4 threads (stepping 1, on build-07)".
std::string identity_line(const tune::CacheProfile& p) {
  return fmt::format("{} on {}, {} thread{}{} (family {} model {} stepping {}{})", key_label(p.key), host_label(p.host),
                     p.host.effective_threads, p.host.effective_threads == 1 ? "" : "s",
                     p.host.idle_spin ? "" : ", workers park", p.host.family, p.host.model,
                     p.host.stepping, p.provenance.hostname.empty() ? "" : ", written on " + p.provenance.hostname);
}

int diff_verb(const DiffVerbOptions& options, AppContext& context) {
  tune::DiffReport report;
  try {
    report = tune::diff_kernel_tuning_caches({options.files.at(0), options.files.at(1)});
  } catch (const onnx_light::Error& e) {
    // 1 means "different" here: every error is 2, also the ones other verbs exit 1 for.
    return report_error(*context.out, *context.err, options.json, error_kind(e), e.what(), kExitTrouble);
  }
  const int status = options.exit_code && !report.identical() ? kExitFailed : kExitOk;
  if (options.json) {
    report.write_json(*context.out);  // the bytes of to_json().dump(2), streamed
    *context.out << '\n';
    return status;
  }
  const bool color = stdout_color(context);
  auto& out = *context.out;
  out << fmt::format("--- {} ({} profiles)\n+++ {} ({} profiles)\n", report.a.path, report.a.profiles, report.b.path,
                     report.b.profiles);
  for (const auto& p : report.removed) {
    out << paint(fmt::format("- {}: {}", identity_line(p.profile), format_values(p.profile.values)), Tone::bad, color)
        << "\n";
  }
  for (const auto& p : report.added) {
    out << paint(fmt::format("+ {}: {}", identity_line(p.profile), format_values(p.profile.values)), Tone::good, color)
        << "\n";
  }
  for (const auto& c : report.changed) {
    out << paint(fmt::format("~ {}:", identity_line(c.b.profile)), Tone::warn, color) << "\n";
    for (const auto& name : c.changed_values) {
      const auto before = c.a.profile.values.find(name);
      const auto after = c.b.profile.values.find(name);
      out << fmt::format("    {}: {} -> {}\n", name,
                         before == c.a.profile.values.end() ? "(none)" : runtime::format_value(before->second),
                         after == c.b.profile.values.end() ? "(none)" : runtime::format_value(after->second));
    }
  }
  out << fmt::format("{} added, {} removed, {} changed, {} unchanged\n", report.added.size(), report.removed.size(),
                     report.changed.size(), report.unchanged);
  print_diagnostics(out, report.diagnostics, color);
  return status;
}

}  // namespace

void register_diff(CLI::App& app, AppContext& context) {
  auto options = std::make_shared<DiffVerbOptions>();
  CLI::App* verb = app.add_subcommand("diff", "Show the profiles added, removed and changed between two cache files");
  verb->add_option("files", options->files, "The two cache files: A (before) and B (after)")
      ->required()
      ->expected(2)
      ->check(existing_file())
      ->type_name("FILE");
  verb->add_flag("--json", options->json, "Print the differences as JSON (stable keys) instead of lines");
  verb->add_flag("--exit-code", options->exit_code, "Exit with 1 when the files differ (as git diff --exit-code)");
  verb->footer(
      "Profiles are matched by key and host (threads included): '+' in B only, '-' in A only, '~' in\n"
      "both with other values (each changed parameter: old -> new). Provenance alone is not a\n"
      "difference. Unreadable or repeated profiles are not compared (a diagnostic names them).\n"
      "Exit status: 0 whether or not the files differ, or with --exit-code 0 the same and 1\n"
      "different; 2 for any error (a missing, unreadable or malformed file, a usage error).\n"
      "Examples:\n"
      "  onnx-light-tune diff yesterday.cache fleet.cache\n"
      "  onnx-light-tune diff a.cache b.cache --json\n"
      "  onnx-light-tune diff /etc/onnx-light/kernel_tuning.cache fleet.cache --exit-code || deploy");
  verb->callback([options, &context] {
    context.reads_whole_cache = true;  // fleet-sized files: the heap prefers huge pages
    context.action = [options, &context] { return diff_verb(*options, context); };
  });
}

}  // namespace onnx_light::cli
