// `onnx-light-tune inspect [PATH]`: every profile of the cache (and the system cache under it)
// with host, values, local, classification, how it matches this host, whether it is in force, and
// provenance. Changes nothing.
#include <fmt/format.h>

#include "cli_common.h"
#include "onnx_light/tune/operations.h"
#include "verbs.h"

namespace onnx_light::cli {

namespace {

struct InspectVerbOptions {
  std::string path;
  FilterFlags filters;
  bool long_format = false;
  bool user_only = false;
  AsHostFlag as_host;
};

bool unusable(tune::FileStatus status) {
  return status == tune::FileStatus::malformed || status == tune::FileStatus::unreadable;
}

Tone class_tone(tune::ProfileClass value) {
  switch (value) {
    case tune::ProfileClass::loaded: return Tone::good;
    case tune::ProfileClass::stale: return Tone::warn;
    case tune::ProfileClass::incompatible: return Tone::dim;
    case tune::ProfileClass::invalid: return Tone::bad;
  }
  return Tone::plain;
}

// The MATCH cell: how a loaded profile applies here, and for a class profile that does not apply,
// its class in brackets ("[model]"), so the table shows every profile's match.
std::string match_cell(const tune::InspectedProfile& p) {
  if (p.matched_by) return matched_by_label(p.matched_by);
  if (p.profile.host.match != tune::HostMatch::exact) return fmt::format("[{}]", tune::host_match_name(p.profile.host.match));
  return "-";
}

// "in force", "shadowed by user 3 (exact)": why a loaded profile is or is not the one used.
std::string force_text(const tune::InspectedProfile& p) {
  if (p.in_force) return "in force";
  if (p.shadowed_by) {
    return fmt::format("shadowed by {} {} ({})", tune::cache_layer_name(p.shadowed_by->layer), p.shadowed_by->index,
                       tune::host_match_name(p.shadowed_by->matched_by));
  }
  if (p.shadowed) return "shadowed by the user cache's profile of the same key and host";
  return "not in force";
}

int inspect_verb(InspectVerbOptions& options, AppContext& context) {
  tune::InspectOptions inspect;
  inspect.path = options.path.empty() ? context.cache_path : options.path;
  log_cache_paths(inspect.path);
  inspect.filter = options.filters.selection();
  inspect.threads = options.filters.thread_count();
  inspect.user_only = options.user_only;
  tune::OperationContext operation = operation_context(context);
  options.as_host.apply(operation);
  const tune::InspectReport report = tune::inspect_kernel_tuning_cache(inspect, operation);
  // A path the user named must exist; the default one may not exist yet. A system cache that
  // cannot be read fails too: every session on this machine silently goes without it.
  std::vector<std::string> problems;
  if (unusable(report.status)) {
    problems.push_back(fmt::format("{} is {}", report.path, tune::file_status_name(report.status)));
  } else if (report.status == tune::FileStatus::not_found && !inspect.path.empty()) {
    problems.push_back(fmt::format("{}: no such cache file", report.path));
  }
  if (!report.system_path.empty() && unusable(report.system_status)) {
    problems.push_back(fmt::format("system cache {} is {} (--user-only inspects the user cache alone)",
                                   report.system_path, tune::file_status_name(report.system_status)));
  }
  const bool failed = !problems.empty();
  for (const auto& problem : problems) *context.err << "onnx-light-tune: error: " << problem << "\n";
  if (options.filters.json) {
    // The same bytes as to_json().dump(2), without the document, in chunks (large caches).
    report.write_json(*context.out);
    *context.out << '\n';
    return failed ? kExitFailed : kExitOk;
  }
  const bool color = stdout_color(context);
  auto& out = *context.out;
  options.as_host.print(out);
  out << fmt::format("cache: {} ({})", report.path,
                     paint(std::string(tune::file_status_name(report.status)),
                           report.status == tune::FileStatus::loaded ? Tone::good
                           : report.status == tune::FileStatus::not_found ? Tone::plain
                                                                          : Tone::bad,
                           color));
  if (!report.system_path.empty()) {
    out << fmt::format("; system cache: {} ({})", report.system_path, tune::file_status_name(report.system_status));
  }
  out << fmt::format("; {} profile{}; local means {} at {} thread{}\n", report.profiles.size(),
                     report.profiles.size() == 1 ? "" : "s", options.as_host.host ? "that host" : "this machine",
                     report.effective_threads,
                     report.effective_threads == 1 ? "" : "s");
  if (options.long_format) {
    for (const auto& p : report.profiles) {
      out << fmt::format("\n[{} {}] {}\n", tune::cache_layer_name(p.layer), p.index,
                         p.profile.key.kernel.empty() ? "(unreadable key)" : p.profile.key.to_string());
      out << fmt::format("  classification: {}{}\n", paint(std::string(tune::profile_class_name(p.classification)),
                                                           class_tone(p.classification), color),
                         p.local ? ", local" : "");
      if (p.matched_by) {
        out << fmt::format("  matched by: {}; {}\n", tune::host_match_name(*p.matched_by),
                           paint(force_text(p), p.in_force ? Tone::good : Tone::warn, color));
      } else if (p.shadowed) {
        out << fmt::format("  {}\n", paint(force_text(p), Tone::warn, color));
      }
      // The summary names a class profile's class; it records no caches or cores (nor features
      // unless it is an isa class), so those lines would only show zeros.
      const tune::HostDescriptor& h = p.profile.host;
      out << fmt::format("  host: {}\n", h.summary());
      if (tune::host_field_in_class("features", h.match)) {
        out << fmt::format("  features: {}\n", fmt::join(h.features, " "));
      }
      if (h.match == tune::HostMatch::exact) {
        out << fmt::format("  caches: L1d {} L2 {} L3 {} bytes; cores: {} physical, {} logical\n", h.l1d_cache_bytes,
                           h.l2_cache_bytes, h.l3_cache_bytes, h.physical_cores, h.logical_cores);
      }
      out << fmt::format("  values: {}\n", format_values(p.profile.values));
      out << fmt::format("  provenance: {} {} (tool {}){}\n", p.profile.provenance.source, p.profile.provenance.written,
                         p.profile.provenance.tool_version,
                         p.profile.provenance.hostname.empty() ? ""
                                                               : fmt::format(" on host {}", p.profile.provenance.hostname));
    }
  } else if (!report.profiles.empty()) {
    Table table({"LAYER", "#", "KERNEL", "TYPE", "IMPLEMENTATION", "ABI", "THREADS", "HOST", "MATCH", "CLASS",
                 "LOCAL", "VALUES", "SOURCE", "WRITTEN"});
    for (const auto& p : report.profiles) {
      const auto& h = p.profile.host;
      table.add({std::string(tune::cache_layer_name(p.layer)) + (p.shadowed ? "*" : ""), std::to_string(p.index),
                 p.profile.key.kernel, element_type_label(p.profile.key.element_type), p.profile.key.implementation,
                 std::to_string(p.profile.key.tuning_abi), threads_label(h),
                 host_label(h), match_cell(p),
                 paint(std::string(tune::profile_class_name(p.classification)), class_tone(p.classification), color),
                 p.local ? "yes" : "no", format_values(p.profile.values), p.profile.provenance.source,
                 p.profile.provenance.written});
    }
    table.print(out, color);
    if (std::any_of(report.profiles.begin(), report.profiles.end(), [](const auto& p) { return p.shadowed; })) {
      out << "* shadowed: not in force; a more specific profile of the same key and threads applies (exact >\n"
             "  model > microarchitecture > isa), or one of the user cache at equal specificity (--long names it)\n";
    }
  }
  print_diagnostics(out, report.diagnostics, color, /*summarize_foreign=*/false);
  return failed ? kExitFailed : kExitOk;
}

}  // namespace

void register_inspect(CLI::App& app, AppContext& context) {
  auto options = std::make_shared<InspectVerbOptions>();
  CLI::App* verb = app.add_subcommand(
      "inspect", "Show every cached profile with its host, values, classification and provenance (read-only)");
  verb->add_option("path", options->path, "Cache file to inspect (default: --cache or the default cache)")
      ->type_name("PATH");
  add_filter_flags(*verb, options->filters, ThreadsMeaning::filter);
  verb->add_flag("-l,--long", options->long_format, "One block per profile with every host field and the hostname");
  verb->add_flag("--user-only", options->user_only, "Leave the system cache out (and its state out of the exit status)");
  options->as_host.add(*verb);
  verb->footer(
      "Classification: loaded (this machine, valid), stale (outdated tuning ABI), incompatible\n"
      "(another machine or an unknown key), invalid (bad values or structure). local = loaded and\n"
      "written for this thread count (--threads, default one per physical core). Profiles of the\n"
      "system cache ($ONNX_LIGHT_SYSTEM_TUNING_CACHE, default /etc/onnx-light/kernel_tuning.cache)\n"
      "are listed after the user's; --json reports the system cache as system_cache {path, status,\n"
      "profiles}. Exit status 1 when the cache or the system cache is malformed or unreadable, or\n"
      "a named file does not exist (the reason is on stderr); --user-only ignores the system cache.\n"
      "--as-host FILE classifies against the host in FILE ('host --json') instead of this machine.\n"
      "MATCH says why a loaded profile applies: its host is this one (exact) or its class matches\n"
      "(model, microarchitecture, isa); a class profile that does not apply shows its class in\n"
      "brackets. Of the loaded profiles of one key, threads and spin class one is in force; the\n"
      "others are shadowed (* on LAYER; --long names the profile in force, --json has in_force,\n"
      "shadowed_by {layer, index, matched_by}).\n" +
      std::string(kHostMatchHelp) +
      "Examples:\n"
      "  onnx-light-tune inspect\n"
      "  onnx-light-tune inspect /srv/shared/kernel_tuning.cache --long\n"
      "  onnx-light-tune inspect --kernel Abs --threads 2 --json\n"
      "  onnx-light-tune inspect --as-host build-07.host.json   # as build-07 would see this cache");
  verb->callback(
      [options, &context] {
    context.reads_whole_cache = true;
    context.action = [options, &context] { return inspect_verb(*options, context); };
  });
}

}  // namespace onnx_light::cli
