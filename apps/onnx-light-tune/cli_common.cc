#include "cli_common.h"
#include "cli_usage.h"

#include <unistd.h>

#include <algorithm>

#include <fmt/color.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include "onnx_light/runtime/element_type.h"
#include "onnx_light/runtime/error.h"
#include "onnx_light/tune/cache_path.h"

namespace onnx_light::cli {

tune::KeySelection FilterFlags::selection() const {
  tune::KeySelection selection;
  selection.kernels = kernels;
  for (const auto& text : element_types) selection.element_types.push_back(element_type_number(text));
  selection.implementation = implementation;
  selection.library = library;
  return selection;
}

std::optional<int64_t> FilterFlags::thread_count() const {
  return threads >= 0 ? std::optional<int64_t>(threads) : std::nullopt;
}

bool FilterFlags::idle_spin() const { return runtime::parse_spin_policy(spin) > 0; }

namespace {

// Accepts the text `parse` accepts; otherwise CLI11 reports parse's InvalidValueError message.
template <typename Parse>
CLI::Validator parsing_validator(Parse parse) {
  return CLI::Validator(
      [parse](std::string& text) -> std::string {
        try {
          parse(text);
        } catch (const InvalidValueError& e) {
          return e.what();
        }
        return {};
      },
      "");
}

CLI::Validator spin_policy_validator() {
  return parsing_validator([](const std::string& text) { runtime::parse_spin_policy(text); });
}

}  // namespace

int32_t element_type_number(const std::string& text) {
  const auto type = runtime::parse_element_type(text);
  if (!type || *type == runtime::ElementType::undefined) {
    throw UsageError(fmt::format("unknown element type '{}' (use a name such as float, double, int64, or "
                                        "a TensorProto.DataType number such as 1)",
                                        text));
  }
  return static_cast<int32_t>(*type);
}

std::string element_type_label(int32_t element_type) {
  if (runtime::is_valid_element_type(element_type)) {
    return std::string(runtime::element_type_name(static_cast<runtime::ElementType>(element_type)));
  }
  return std::to_string(element_type);
}

CLI::Validator element_type_validator() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        const auto type = runtime::parse_element_type(text);
        if (!type || *type == runtime::ElementType::undefined) {
          return fmt::format("unknown element type '{}' (names such as float, double, int64, or numbers such as 1)",
                             text);
        }
        return {};
      },
      "");
}

void add_filter_flags(CLI::App& verb, FilterFlags& flags, ThreadsMeaning threads) {
  verb.add_option("--kernel", flags.kernels, "Only this kernel (ONNX op type, e.g. Abs); repeatable")
      ->delimiter(',')
      ->allow_extra_args(false)
      ->type_name("KERNEL");
  verb.add_option("--element-type", flags.element_types,
                  "Only this element type: a name (float, double, int64, ...) or a TensorProto number; repeatable")
      ->delimiter(',')
      ->allow_extra_args(false)
      ->check(element_type_validator())
      ->type_name("TYPE");
  verb.add_option("--implementation", flags.implementation,
                  "Only this implementation (portable, avx2, ...); default: the one this host dispatches to, "
                  "'all' for every one")
      ->type_name("NAME");
  verb.add_option("--library", flags.library, "Only this library (default: any)")->type_name("NAME");
  verb.add_option("--threads", flags.threads,
                  threads == ThreadsMeaning::session
                      ? "Session thread count the values are for (default: one per physical core)"
                      : "Only profiles written for this thread count (0: one per physical core)")
      ->check(integer_in_range(0, int64_t{1} << 16))
      ->type_name("N");
  verb.add_flag("--json", flags.json, "Print the report as JSON (stable keys) instead of a table");
}

void add_spin_class_option(CLI::App& verb, FilterFlags& flags) {
  verb.add_option("--spin", flags.spin,
                  "Spin policy of the sessions the values are for (see run --spin). Profiles are kept apart "
                  "by whether idle workers spin: none (they park at once, and parallel regions pay a "
                  "wake-up) against every other policy")
      ->check(spin_policy_validator())
      ->type_name("POLICY")
      ->default_val("short");
}

void add_policy_flags(CLI::App& verb, PolicyFlags& flags) {
  verb.add_option("--spin", flags.spin,
                  fmt::format("How long an idle pool thread spins before it sleeps: none (at once: least CPU "
                              "burnt, every parallel region pays a wake-up), short ({} us), long ({} us: keeps "
                              "back-to-back runs fast) or microseconds",
                              runtime::kSpinShortMicroseconds, runtime::kSpinLongMicroseconds))
      ->check(spin_policy_validator())
      ->type_name("POLICY")
      ->default_val("short");
  auto* affinity = verb.add_option("--affinity", flags.affinity,
                                   "Pin the pool's workers: none (the scheduler places them) or physical_cores "
                                   "(one per physical core, SMT siblings left free); the calling thread is never "
                                   "pinned")
                       ->check(one_of({"none", "physical_cores"}))
                       ->type_name("POLICY")
                       ->default_val("none");
  verb.add_option("--cpus", flags.cpus,
                  "Pin the pool's workers to these CPUs (e.g. 0-3,8), each allowed for this process; the thread "
                  "count defaults to their number")
      ->check(parsing_validator([](const std::string& text) { runtime::parse_cpu_list(text); }))
      ->type_name("LIST")
      ->excludes(affinity);
}

runtime::RuntimeParameters PolicyFlags::parameters(int threads) const {
  runtime::RuntimeParameters p(threads);
  p.spin_microseconds = runtime::parse_spin_policy(spin);
  if (!cpus.empty()) {
    p.affinity = runtime::AffinityPolicy::cpu_list;
    p.cpus = runtime::parse_cpu_list(cpus);
  } else {
    p.affinity = runtime::parse_affinity_policy(affinity);
  }
  try {
    runtime::validate_runtime_parameters(p);
  } catch (const InvalidValueError& e) {
    throw UsageError(fmt::format("--cpus: {}", e.what()));
  }
  return p;
}

nlohmann::json policy_json(const runtime::RuntimeParameters& p) {
  const std::vector<int> cpus = runtime::placement_cpus(p);
  return {{"spin", runtime::spin_policy_name(p.spin_microseconds)},
          {"spin_us", p.spin_microseconds},
          {"affinity", runtime::affinity_policy_name(p.affinity)},
          {"cpus", cpus}};
}

std::string policy_text(const runtime::RuntimeParameters& p) {
  std::string text = fmt::format("spin {} ({} us), affinity {}", runtime::spin_policy_name(p.spin_microseconds),
                                 p.spin_microseconds, runtime::affinity_policy_name(p.affinity));
  if (p.affinity != runtime::AffinityPolicy::none)
    text += fmt::format(" on CPUs {} (workers pinned, the calling thread not)",
                        runtime::format_cpu_list(runtime::placement_cpus(p)));
  return text;
}

tune::OperationContext operation_context(const AppContext& context) {
  tune::OperationContext operation;
  operation.lock_timeout_ms = context.lock_timeout_s * 1000;
  std::ostream* err = context.err;
  operation.on_lock_wait = [err](const std::filesystem::path& lock_file) {
    *err << fmt::format("onnx-light-tune: waiting for the cache lock {} (another process is writing the cache)\n",
                        lock_file.string());
    err->flush();
  };
  return operation;
}

void AsHostFlag::add(CLI::App& verb) {
  verb.add_option("--as-host", path,
                  "Classify as if on the host described in FILE (the JSON of 'onnx-light-tune host --json'); "
                  "its effective_threads is the default thread count. Writes nothing")
      ->type_name("FILE");
}

void AsHostFlag::apply(tune::OperationContext& operation) {
  if (path.empty()) return;
  host = tune::read_host_file(path);
  tune::work_as_host(operation, *host, features);
  spdlog::info("as host {}: {}", path, host->summary());
}

void AsHostFlag::print(std::ostream& out) const {
  if (host) out << fmt::format("as host: {}: {}\n", path, host->summary());
}

void log_cache_paths(const std::string& path) {
  spdlog::info("cache: {}", tune::resolve_cache_path(path).string());
  const auto system = tune::system_kernel_tuning_cache_path();
  spdlog::info("system cache: {}", system ? system->string() : std::string("(disabled)"));
}

bool stdout_color(const AppContext& context) { return context.use_color(isatty(STDOUT_FILENO) != 0); }

void print_json(std::ostream& out, const nlohmann::json& value) { out << value.dump(2) << "\n"; }

std::string paint(const std::string& text, Tone tone, bool color) {
  if (!color || tone == Tone::plain) return text;
  switch (tone) {
    case Tone::good: return fmt::format(fmt::fg(fmt::terminal_color::green), "{}", text);
    case Tone::warn: return fmt::format(fmt::fg(fmt::terminal_color::yellow), "{}", text);
    case Tone::bad: return fmt::format(fmt::fg(fmt::terminal_color::red), "{}", text);
    case Tone::dim: return fmt::format(fmt::emphasis::faint, "{}", text);
    case Tone::plain: break;
  }
  return text;
}

namespace {

// Display width: ANSI escapes take none, UTF-8 continuation bytes none.
std::size_t visible_width(const std::string& text) {
  std::size_t width = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\x1b') {
      while (i < text.size() && text[i] != 'm') ++i;
      continue;
    }
    if ((static_cast<unsigned char>(text[i]) & 0xC0) != 0x80) ++width;
  }
  return width;
}

}  // namespace

void Table::print(std::ostream& out, bool color, int indent) const {
  std::vector<std::size_t> widths(headers_.size(), 0);
  for (std::size_t c = 0; c < headers_.size(); ++c) widths[c] = visible_width(headers_[c]);
  for (const auto& row : rows_) {
    for (std::size_t c = 0; c < row.size() && c < widths.size(); ++c) widths[c] = std::max(widths[c], visible_width(row[c]));
  }
  auto line = [&](const std::vector<std::string>& cells, bool header) {
    std::string text(static_cast<std::size_t>(indent), ' ');
    for (std::size_t c = 0; c < widths.size(); ++c) {
      const std::string cell = c < cells.size() ? cells[c] : "";
      const bool last = c + 1 == widths.size();
      std::string shown = header && color ? fmt::format(fmt::emphasis::bold, "{}", cell) : cell;
      text += shown;
      if (!last) text += std::string(widths[c] - visible_width(cell) + 2, ' ');
    }
    while (!text.empty() && text.back() == ' ') text.pop_back();
    out << text << "\n";
  };
  line(headers_, true);
  for (const auto& row : rows_) line(row, false);
}

std::string format_values(const runtime::TuningValues& values) {
  std::string text;
  for (const auto& [name, value] : values) {
    if (!text.empty()) text += ' ';
    text += name + "=" + runtime::format_value(value);
  }
  return text;
}

std::string key_label(const runtime::TuningKey& key) {
  return fmt::format("{} {} {} (abi {})", key.kernel, element_type_label(key.element_type), key.implementation,
                     key.tuning_abi);
}

std::string host_label(const tune::HostDescriptor& h) {
  return fmt::format("{} {}{}", h.architecture, h.vendor, h.microarchitecture.empty() ? "" : " " + h.microarchitecture);
}

std::string threads_label(const tune::HostDescriptor& h) {
  return h.idle_spin ? std::to_string(h.effective_threads) : fmt::format("{} (park)", h.effective_threads);
}

const std::vector<std::string>& host_match_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> list;
    for (auto match : {tune::HostMatch::exact, tune::HostMatch::model, tune::HostMatch::microarchitecture,
                       tune::HostMatch::isa}) {
      list.emplace_back(tune::host_match_name(match));
    }
    return list;
  }();
  return names;
}

const char* const kHostMatchHelp =
    "Host classes, most specific first (the most specific profile that applies is in force; at\n"
    "equal specificity the user cache beats the system cache):\n"
    "  exact              this machine only: every host field (the default)\n"
    "  model              vendor, family and model: any stepping, cache size or core count\n"
    "  microarchitecture  vendor and microarchitecture (zen3, skylake, ...)\n"
    "  isa                machines with every ISA feature of this one (avx2, fma, ...)\n"
    "Every class keeps the thread count and spin class of the profile.\n";

CLI::Validator host_match_validator() {
  return parsing_validator([](const std::string& text) { tune::parse_host_match(text); });
}

void add_match_option(CLI::App& verb, std::string& match, const std::string& what) {
  verb.add_option("--match", match,
                  fmt::format("Write {} for a class of hosts: exact (this machine), model, microarchitecture or isa "
                              "(every machine of this one's class; see below)",
                              what))
      ->check(host_match_validator())
      ->type_name("CLASS")
      ->default_val("exact");
}

std::string matched_by_label(const std::optional<tune::HostMatch>& matched_by) {
  return matched_by ? std::string(tune::host_match_name(*matched_by)) : "-";
}

const std::vector<std::string>& conflict_policy_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> list;
    for (auto policy : {tune::ConflictPolicy::fail, tune::ConflictPolicy::keep, tune::ConflictPolicy::replace,
                        tune::ConflictPolicy::newest}) {
      list.emplace_back(tune::conflict_policy_name(policy));
    }
    return list;
  }();
  return names;
}

void add_conflict_option(CLI::App& verb, std::string& policy, const std::string& fallback) {
  verb.add_option("--on-conflict", policy,
                  "A profile of the same key, host and threads with other values: fail (write nothing), keep "
                  "(the one already there), replace (the later one) or newest (the later provenance.written)")
      ->check(one_of(conflict_policy_names()))
      ->type_name("POLICY")
      ->default_val(fallback);
}

std::string plural(std::size_t n, const char* word) { return fmt::format("{} {}{}", n, word, n == 1 ? "" : "s"); }

std::string describe_inputs(const std::vector<tune::TransferInput>& inputs) {
  std::vector<std::string> parts;
  for (const auto& input : inputs) parts.push_back(fmt::format("{} ({})", input.path, plural(input.profiles, "profile")));
  return fmt::format("{}", fmt::join(parts, ", "));
}

void print_conflicts(std::ostream& out, const std::vector<tune::ProfileConflict>& conflicts, bool color) {
  if (conflicts.empty()) return;
  out << paint(fmt::format("{} conflict{}:", conflicts.size(), conflicts.size() == 1 ? "" : "s"), Tone::warn, color)
      << "\n";
  auto origin = [](const tune::SourcedProfile& side) {
    const auto& p = side.profile.provenance;
    return fmt::format("{} #{} ({} {}{})", side.source, side.index, p.source.empty() ? "-" : p.source,
                       p.written.empty() ? "-" : p.written, p.hostname.empty() ? "" : " on " + p.hostname);
  };
  Table table({"KERNEL", "TYPE", "IMPLEMENTATION", "ABI", "THREADS", "HOST", "RESOLUTION", "EXISTING", "FROM",
               "INCOMING", "FROM"});
  for (const auto& c : conflicts) {
    const auto& key = c.existing.profile.key;
    const auto& host = c.existing.profile.host;
    table.add({key.kernel, element_type_label(key.element_type), key.implementation, std::to_string(key.tuning_abi),
               std::to_string(host.effective_threads), host_label(host),
               paint(c.resolution, c.resolution == "unresolved" ? Tone::bad : Tone::warn, color),
               format_values(c.existing.profile.values), origin(c.existing), format_values(c.incoming.profile.values),
               origin(c.incoming)});
  }
  table.print(out, color, 2);
}

void print_diagnostics(std::ostream& out, const std::vector<tune::Diagnostic>& diagnostics, bool color,
                       bool summarize_foreign) {
  if (diagnostics.empty()) return;
  auto foreign = [](const tune::Diagnostic& d) { return d.profile && d.field.starts_with("host."); };
  const auto foreign_count = static_cast<std::size_t>(std::count_if(diagnostics.begin(), diagnostics.end(), foreign));
  const bool summarize = summarize_foreign && foreign_count >= 2;
  out << paint("diagnostics:", Tone::warn, color) << "\n";
  for (const auto& diagnostic : diagnostics) {
    if (summarize && foreign(diagnostic)) continue;
    out << "  " << diagnostic.message << "\n";
  }
  if (summarize) {
    out << fmt::format("  kept {} profiles of other machines ('onnx-light-tune inspect' lists them, "
                       "'onnx-light-tune remove --foreign' drops them)\n",
                       foreign_count);
  }
}

void print_cache_update(std::ostream& out, const tune::UpdateResult& u, bool color) {
  out << fmt::format("cache: {} {} ({} updated, {} preserved, {} pruned)\n",
                     paint(std::string(tune::update_status_name(u.status)), u.ok() ? Tone::good : Tone::bad, color),
                     u.path.string(), u.updated.size(), u.preserved.size(), u.pruned.size());
}

}  // namespace onnx_light::cli
