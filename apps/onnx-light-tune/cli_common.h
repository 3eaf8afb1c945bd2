#pragma once
// Helpers shared by the cache verbs (list, propose, set, inspect, load, remove): the filter
// flags, --json, table printing and the operation context built from the global options.
#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "app_context.h"
#include "onnx_light/runtime/runtime_parameters.h"
#include "onnx_light/runtime/tuning_key.h"
#include "onnx_light/runtime/tuning_value.h"
#include "onnx_light/tune/cache_transfer.h"
#include "onnx_light/tune/cache_update.h"
#include "onnx_light/tune/diagnostic.h"
#include "onnx_light/tune/host.h"
#include "onnx_light/tune/kernel_selection.h"
#include "onnx_light/tune/operations.h"

namespace onnx_light::cli {

// --kernel, --element-type, --implementation, --library, --threads, --json; --spin is added by
// add_spin_class_option (list, propose, set, verify).
struct FilterFlags {
  std::vector<std::string> kernels;
  std::vector<std::string> element_types;  // names ("float") or numbers ("1"), checked at parse time
  std::string implementation;
  std::string library;
  int64_t threads = -1;  // -1: not given
  std::string spin = "short";
  bool json = false;

  tune::KeySelection selection() const;
  std::optional<int64_t> thread_count() const;
  // Whether the sessions' idle workers spin (--spin other than none): the profiles' spin class.
  bool idle_spin() const;
};

// What --threads means for a verb, for its help text.
enum class ThreadsMeaning {
  session,  // the session thread count the values are for (list, propose, set)
  filter,   // only profiles written for this thread count (inspect, load, remove)
};
void add_filter_flags(CLI::App& verb, FilterFlags& flags, ThreadsMeaning threads);
// --spin POLICY into flags.spin: the spin class of the sessions a verb's values are for.
void add_spin_class_option(CLI::App& verb, FilterFlags& flags);

// --spin, --affinity, --cpus (run, calibrate): how the session's pool threads behave.
struct PolicyFlags {
  std::string spin = "short";
  std::string affinity = "none";
  std::string cpus;  // empty: not given

  // The parameters for `threads` (0: the policy's default count). A CPU the process may not use is
  // a UsageError naming it.
  runtime::RuntimeParameters parameters(int threads) const;
};
void add_policy_flags(CLI::App& verb, PolicyFlags& flags);
// {"spin", "spin_us", "affinity", "cpus"} of resolved parameters, for --json.
nlohmann::json policy_json(const runtime::RuntimeParameters& parameters);
// "spin short (50 us), affinity none" / "..., CPUs 0-1 (workers pinned, caller not)".
std::string policy_text(const runtime::RuntimeParameters& parameters);

// A CLI11 check accepting what parse_element_type accepts.
CLI::Validator element_type_validator();
// Number of an element type name or number; throws InvalidValueError.
int32_t element_type_number(const std::string& text);
// "float" for 1, the number itself when unknown.
std::string element_type_label(int32_t element_type);

tune::OperationContext operation_context(const AppContext& context);

// --as-host FILE (inspect, list, propose, load, export, set): work as if on the host described in
// FILE, the JSON of 'host --json'. The read verbs write nothing with or without it; set writes
// the profile for that host.
struct AsHostFlag {
  std::string path;  // "": this machine
  // Set by apply(): the descriptor read from `path` and its dispatch features.
  std::optional<tune::HostDescriptor> host;
  runtime::CpuFeatures features;

  void add(CLI::App& verb);
  // Reads `path` (the library's typed errors name the file and the field) and makes `operation`
  // work as that host: its descriptor, its thread count by default, its dispatch features.
  // `operation` points into this object: keep it alive while the operation runs.
  void apply(tune::OperationContext& operation);
  // "as host: FILE: x86_64 intel ... (family 6 ...), 8 cores, 2 threads" for human output;
  // nothing without --as-host.
  void print(std::ostream& out) const;
};
// Logs (info, -v) which cache files a verb works on.
void log_cache_paths(const std::string& path);
bool stdout_color(const AppContext& context);

void print_json(std::ostream& out, const nlohmann::json& value);

// A plain text table: columns padded to their widest cell, header bold when colour is on.
class Table {
 public:
  explicit Table(std::vector<std::string> headers) : headers_(std::move(headers)) {}
  void add(std::vector<std::string> row) { rows_.push_back(std::move(row)); }
  bool empty() const { return rows_.empty(); }
  void print(std::ostream& out, bool color, int indent = 0) const;

 private:
  std::vector<std::string> headers_;
  std::vector<std::vector<std::string>> rows_;
};

// "name=value name=value".
std::string format_values(const runtime::TuningValues& values);
// "Abs float portable (abi 2)".
std::string key_label(const runtime::TuningKey& key);
// Colour a word by meaning: good (green), warn (yellow), bad (red).
enum class Tone { plain, good, warn, bad, dim };
std::string paint(const std::string& text, Tone tone, bool color);

// "x86_64 amd zen3": the host columns of the profile tables.
std::string host_label(const tune::HostDescriptor& host);
// A profile's THREADS cell: "2", or "2 (park)" for sessions whose idle workers park at once.
std::string threads_label(const tune::HostDescriptor& host);

// The host match classes, most specific first, as help, man pages and completions show them.
const std::vector<std::string>& host_match_names();
// One line per class for the help footers of set, calibrate, export, inspect and list.
extern const char* const kHostMatchHelp;
// A CLI11 check accepting what tune::parse_host_match accepts; its message names the classes.
CLI::Validator host_match_validator();
// `--match CLASS` (set, calibrate): the class of the profiles written, default exact.
void add_match_option(CLI::App& verb, std::string& match, const std::string& what);
// The MATCH cell: how a profile applies here ("exact", "model", ...), "-" when it does not.
std::string matched_by_label(const std::optional<tune::HostMatch>& matched_by);

// --on-conflict fail|keep|replace|newest (import, merge), with `fallback` as the default.
void add_conflict_option(CLI::App& verb, std::string& policy, const std::string& fallback);
// The values of --on-conflict, in the order help, man pages and completions show them.
const std::vector<std::string>& conflict_policy_names();
// "1 profile", "2 profiles".
std::string plural(std::size_t n, const char* word);
// "a.cache (2 profiles), b.cache (1 profile)": the inputs of import and merge.
std::string describe_inputs(const std::vector<tune::TransferInput>& inputs);
// One row per conflict: the key and host, the resolution, and both sides' values and provenance.
void print_conflicts(std::ostream& out, const std::vector<tune::ProfileConflict>& conflicts, bool color);

// "diagnostics:" followed by one indented line per message; nothing when empty. With
// `summarize_foreign`, two or more "written on another machine" notes become one line (a shared
// cache can hold hundreds; `inspect` lists them).
void print_diagnostics(std::ostream& out, const std::vector<tune::Diagnostic>& diagnostics, bool color,
                       bool summarize_foreign = true);
// "cache: updated PATH (N updated, N preserved, N pruned)", the status painted by outcome.
void print_cache_update(std::ostream& out, const tune::UpdateResult& update, bool color);

}  // namespace onnx_light::cli
