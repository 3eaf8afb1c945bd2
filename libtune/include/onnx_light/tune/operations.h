#pragma once
// The operations behind the CLI verbs and the Python module, each returning a report.
//
// Wherever an implementation is not given it means the one this host dispatches to for that
// kernel and element type, so kernel + element type name one key. `num_threads` unset or 0 means
// one thread per physical core, as a session with default parameters runs. `idle_spin` is the other
// condition a profile is for: whether the sessions' idle workers spin (runtime::idle_workers_spin;
// true for every spin policy but none, the default).
//
// Errors: an unknown kernel, parameter or element type throws NotFoundError, a value of the wrong
// type TypeMismatchError, a value breaking its rule InvalidValueError. A cache that cannot be read
// or written is not an exception: the report's status says so.
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "onnx_light/runtime/cpu_features.h"
#include "onnx_light/runtime/kernel_table.h"
#include "onnx_light/runtime/tuning_registry.h"
#include "onnx_light/tune/host.h"
#include "onnx_light/tune/kernel_selection.h"
#include "onnx_light/tune/reports.h"

namespace onnx_light::tune {

// What the operations work against. Every member has a process default; tests pass their own.
struct OperationContext {
  const runtime::KernelTable* kernels = nullptr;   // nullptr: runtime::cpu_kernel_table()
  runtime::TuningRegistry* registry = nullptr;     // nullptr: runtime::process_tuning_registry()
  const runtime::CpuFeatures* features = nullptr;  // dispatch features; nullptr: host_cpu_features()
  std::optional<HostDescriptor> machine;           // unset: this_machine() (threads ignored)
  // The threads a session of `machine` gets when an operation is given no thread count (or 0).
  // Unset: one per physical core of this machine. `--as-host FILE` sets it to the file's
  // effective_threads, so that "local" means that host at its own thread count.
  std::optional<int64_t> machine_threads;
  // unset: system_kernel_tuning_cache_path(); an empty path: no system layer.
  std::optional<std::filesystem::path> system_cache_path;
  std::string tool_version;  // "" : this library's version
  // Told when a write waits for another process's cache lock (see UpdateOptions::on_lock_wait).
  std::function<void(const std::filesystem::path& lock_file)> on_lock_wait;
  // How long a write waits for another process's cache lock (<= 0: forever).
  int64_t lock_timeout_ms = kDefaultLockTimeoutMs;
};

// Makes operations on `context` work as on `host` (--as-host FILE): its descriptor, its
// effective_threads as the default thread count, its dispatch features, kept in `features` (which
// must outlive the context's use).
void work_as_host(OperationContext& context, const HostDescriptor& host, runtime::CpuFeatures& features);

// The version written into provenance.tool_version.
std::string_view tool_version();

struct ParametersOptions {
  KeySelection selection;
  std::string path;  // "": default_kernel_tuning_cache_path()
  std::optional<int64_t> num_threads;
  bool idle_spin = true;
};
// Schemas, defaults, cached and active values of the selected keys. Reads only.
KernelParametersReport kernel_tuning_parameters(const ParametersOptions& options,
                                                const OperationContext& context = {});

struct ProposeOptions {
  KeySelection selection;  // empty: every kernel
  std::string path;
  std::optional<int64_t> num_threads;
  bool idle_spin = true;
};
// Which selected keys lack a local profile and which of those can be calibrated. Reads only.
ProposalReport propose_kernel_tuning_updates(const ProposeOptions& options, const OperationContext& context = {});

struct SetOptions {
  std::string kernel;
  int32_t element_type = 1;
  // Partial: omitted names come from the matching cached profile (user, else system layer), else
  // the defaults. An int64 is accepted for a double parameter.
  runtime::TuningValues values;
  std::string path;
  std::optional<int64_t> num_threads;
  bool load = true;  // publish the cache into the registry after writing
  std::string implementation;                    // "": dispatched
  std::string library = runtime::kLibraryName;
  int32_t device = runtime::kCpuDevice;
  bool prune_stale = false;
  std::string source = "set";  // provenance.source
  bool idle_spin = true;  // the profile is for sessions whose idle workers spin (false: spin none)
  // exact: for this machine. model, microarchitecture, isa: for every machine of this one's class
  // (cache format version 2); omitted values come from that class profile, else the defaults.
  HostMatch match = HostMatch::exact;
};
// Validates every value (unknown name, type, rule) before anything is written, then writes the
// profile for (key, this host at the resolved threads) with the locked update.
SetReport set_kernel_tuning_parameters(const SetOptions& options, const OperationContext& context = {});

// Parses "name=value" texts with the types of `schema` (integers take K/M/G suffixes). Throws
// NotFoundError for an unknown name, InvalidValueError for text that does not parse or a name
// given twice.
runtime::TuningValues parse_assignments(const runtime::TuningSchema& schema,
                                        const std::vector<std::string>& assignments);

struct InspectOptions {
  std::string path;
  KeySelection filter;                 // literal filter on the profiles' keys
  std::optional<int64_t> threads;      // only profiles of this thread count, and `local` against it
  bool user_only = false;              // leave the system layer out
  bool idle_spin = true;               // `local` against this spin class
};
// Every profile of both layers with host, values, local, classification and provenance.
// Changes neither the file nor the registry. A kernel named in the filter that is neither
// registered nor in either layer throws NotFoundError (with the nearest registered names).
InspectReport inspect_kernel_tuning_cache(const InspectOptions& options, const OperationContext& context = {});

struct LoadOptions {
  std::string path;
  // Empty: every profile is considered and no key is selected (`missing` stays empty). Otherwise
  // only profiles matching the filter, and `missing` lists the selected keys without a local
  // loaded profile.
  KeySelection selection;
  // Set: only profiles of this thread count are published; also the threads `missing` is about
  // (unset: one per physical core).
  std::optional<int64_t> num_threads;
  bool idle_spin = true;  // the spin class `missing` is about (every class is published)
};
// Classifies both layers and publishes every loaded profile (user over system for the same
// (key, threads, idle_spin)) into the registry with its conditions; bumps published_generation.
// Nothing is published when no layer could be read.
LoadReport load_kernel_tuning_cache(const LoadOptions& options, const OperationContext& context = {});

struct RemoveOptions {
  std::string path;
  // No filter at all (see whole_file): delete the cache file and its lock. Otherwise drop the
  // profiles matching every given filter with a locked update and keep the file.
  KeySelection filter;
  std::optional<int64_t> threads;
  std::vector<ProfileClass> classes;  // only profiles of one of these classifications
  bool foreign = false;               // only profiles that do not apply here (another machine or class)
  std::string hostname;               // only profiles whose provenance names this host
  bool dry_run = false;               // report what would go; write nothing, take no lock

  bool whole_file() const;
};
// Never touches the system layer. A kernel named in the filter that is neither registered nor in
// the cache throws NotFoundError (with the nearest registered names). Removed profiles are
// reported one by one (a key can have profiles of several hosts and thread counts).
RemoveReport remove_kernel_tuning_cache(const RemoveOptions& options, const OperationContext& context = {});

}  // namespace onnx_light::tune
