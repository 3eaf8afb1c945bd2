#pragma once
// Moving caches between machines (issue 21, "Moving caches"): export the profiles of one host (or
// of every host) as a standalone cache file, import cache files into a cache, merge cache files
// into one, and compare two. Files are read by the cache reader and written by the locked update
// (cache_update.h); every input is validated whole before anything is written.
//
// Identity: a profile is (key, host), the host including effective_threads: the cache's own merge
// key. Two profiles of one identity *conflict* when their values differ; equal values with another
// provenance are the same profile (for merge the newest provenance is kept, so that the output
// does not depend on the order of the inputs).
//
// A class profile (format version 2: model, microarchitecture, ISA) is its own identity: its host
// records the class's fields and the match.
//
// Errors: an input file that does not exist throws NotFoundError; one that cannot be read,
// IoError; one that is malformed or holds an invalid profile (unreadable fields, values failing
// the schema of a registered key, a repeated (key, host)), InvalidValueError naming the file, the
// profile and the field. Nothing is written then. An output or cache that cannot be written is
// not an exception: the report's status says so, as for `set`.
#include <cstddef>
#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "onnx_light/tune/cache_file.h"
#include "onnx_light/tune/diagnostic.h"
#include "onnx_light/tune/kernel_selection.h"
#include "onnx_light/tune/operations.h"

namespace onnx_light::tune {

// What to do with a conflict (same key and host, different values):
//   fail     write nothing, report every conflict (status "conflict");
//   keep     the profile already there (in the cache, or from an earlier input) stays;
//   replace  the later one wins (the imported file's, or the later input's);
//   newest   the one whose provenance.written is later wins; on a tie, or when a date cannot be
//            read, the one already there stays.
enum class ConflictPolicy { fail, keep, replace, newest };
std::string_view conflict_policy_name(ConflictPolicy policy);
// "fail", "keep", "replace" or "newest"; InvalidValueError naming the allowed values otherwise.
ConflictPolicy parse_conflict_policy(std::string_view text);

// A profile and the file it was read from.
struct SourcedProfile {
  CacheProfile profile;
  std::string source;     // the file's path
  std::size_t index = 0;  // 0-based index of the profile in that file

  // profile_to_json() plus "source" and "index".
  nlohmann::json to_json() const;
};

// Two profiles of one identity with different values, and what became of them.
struct ProfileConflict {
  SourcedProfile existing;  // in the cache, or from an earlier input
  SourcedProfile incoming;  // from the imported file, or from a later input
  std::string resolution;   // "kept" (existing stays), "replaced" (incoming wins), "unresolved" (fail)

  // Key fields + device_name and host fields of the identity, "resolution", and "existing" and
  // "incoming", each {source, index, values, provenance}.
  nlohmann::json to_json() const;
};

// One input file: its path and how many profiles it holds.
struct TransferInput {
  std::string path;
  std::size_t profiles = 0;
};

struct ExportOptions {
  std::string path;                 // the cache to read; "": default_kernel_tuning_cache_path()
  KeySelection filter;              // literal filter on the keys ("" and "all": any implementation)
  std::optional<int64_t> threads;   // only profiles written for this thread count
  // Every host's profiles. Otherwise those of the context's machine (this one, or --as-host),
  // whatever their thread count.
  bool all_hosts = false;
  // Generalise the exported profiles to this class (those already as general stay as they are).
  // Profiles that become one (say two steppings of a model) must agree on their values; otherwise
  // InvalidValueError names both and nothing is written.
  HostMatch host_class = HostMatch::exact;
  std::string output;  // the file to write (locked, atomic); "-": write nothing, the text is in `text`
};

struct ExportReport {
  // "exported", or the status of writing the output (read_only, malformed: never overwritten, ...).
  std::string status;
  std::string path;    // the cache read
  std::string output;  // as given ("-": standard output)
  std::optional<HostDescriptor> host;  // whose profiles (effective_threads 0); unset: every host
  HostMatch host_class = HostMatch::exact;  // the class the profiles were generalised to
  std::vector<CacheProfile> profiles;  // exported, in file order (sorted by key, then host)
  // Selected profiles left out because an import would refuse them (unreadable, invalid values,
  // a repeated key and host), each named in `diagnostics`.
  std::size_t skipped = 0;
  std::vector<Diagnostic> diagnostics;
  std::string text;  // human: the file's text when output is "-" (nothing was written)

  // {status, path, output, all_hosts, host (descriptor without effective_threads, or null),
  // host_class, profiles (profile_to_json), exported_count, skipped_count, diagnostics}.
  nlohmann::json to_json() const;
  // Exactly to_json().dump(2), written without building the document, in chunks: what --json
  // prints (a report of a fleet's files lists tens of thousands of profiles).
  void write_json(std::ostream& out) const;
};

// The selected profiles as a standalone cache file of this format version. The source cache must
// exist and be well-formed (NotFoundError, IoError, InvalidValueError). Selecting nothing writes an
// empty cache (a diagnostic says so).
ExportReport export_kernel_tuning_cache(const ExportOptions& options, const OperationContext& context = {});

struct ImportOptions {
  std::vector<std::string> files;  // cache files to import, in order
  std::string path;                // the cache to import into; "": default
  ConflictPolicy on_conflict = ConflictPolicy::keep;
};

struct ImportReport {
  // "imported" (the cache changed), "unchanged" (everything was there already), "conflict"
  // (policy fail and a conflict: nothing written), or an update status (malformed: never
  // overwritten, read_only, unreadable, write_failed, lock_timeout).
  std::string status;
  std::string path;
  std::vector<TransferInput> files;
  ConflictPolicy on_conflict = ConflictPolicy::keep;
  // Profiles of the files, each in one list: added (a new key and host for the cache), replaced
  // (it took the place of the cache's profile), kept (not written: the same profile is there
  // already, or a conflict kept the other one).
  std::vector<SourcedProfile> added;
  std::vector<SourcedProfile> replaced;
  std::vector<SourcedProfile> kept;
  std::vector<ProfileConflict> conflicts;
  std::vector<Diagnostic> diagnostics;

  bool ok() const { return status == "imported" || status == "unchanged"; }
  // {status, path, files [{path, profiles}], on_conflict, added, replaced, kept (SourcedProfile),
  // conflicts, added_count, replaced_count, kept_count, conflict_count, diagnostics}.
  nlohmann::json to_json() const;
  // Exactly to_json().dump(2), written without building the document, in chunks: what --json
  // prints (a report of a fleet's files lists tens of thousands of profiles).
  void write_json(std::ostream& out) const;
};

// Reads and validates every profile of every file first (any problem: InvalidValueError listing
// them, nothing written), then merges them into the cache in one locked update: the files in
// order, conflicts with the cache (as re-read under the lock) and between the files resolved by
// `on_conflict`. Profiles of the cache the files do not name are kept as they are.
ImportReport import_kernel_tuning_cache(const ImportOptions& options, const OperationContext& context = {});

struct MergeOptions {
  std::vector<std::string> files;  // at least one
  std::string output;              // the file to write (locked, atomic); "-": text only
  ConflictPolicy on_conflict = ConflictPolicy::fail;
};

struct MergeReport {
  // "merged", "conflict" (policy fail: nothing written), or the status of writing the output.
  std::string status;
  std::string output;
  std::vector<TransferInput> inputs;
  ConflictPolicy on_conflict = ConflictPolicy::fail;
  std::size_t profile_count = 0;  // profiles of the merged file
  std::vector<ProfileConflict> conflicts;
  std::vector<Diagnostic> diagnostics;
  std::string text;  // human: the merged file's text when output is "-" (nothing was written)

  bool ok() const { return status == "merged"; }
  // {status, output, inputs [{path, profiles}], on_conflict, profile_count, conflicts,
  // conflict_count, diagnostics}.
  nlohmann::json to_json() const;
};

// One profile per key and host out of every input (validated first, as import), written sorted:
// without conflicts the same bytes whatever the order of the inputs, and merging a file this tool
// wrote with itself gives its bytes back. Touches no cache but the output.
MergeReport merge_kernel_tuning_caches(const MergeOptions& options, const OperationContext& context = {});

struct DiffOptions {
  std::string a;  // the old file
  std::string b;  // the new file
};

// A key and host in both files with different values.
struct ChangedProfile {
  SourcedProfile a;
  SourcedProfile b;
  std::vector<std::string> changed_values;  // parameter names added, removed or changed

  // Key fields + device_name and host fields, changed_values, and "a" and "b", each
  // {source, index, values, provenance}.
  nlohmann::json to_json() const;
};

struct DiffReport {
  TransferInput a;
  TransferInput b;
  std::vector<SourcedProfile> added;    // in b only
  std::vector<SourcedProfile> removed;  // in a only
  std::vector<ChangedProfile> changed;  // in both, values differ
  std::size_t unchanged = 0;            // in both, same values (provenance may differ)
  std::vector<Diagnostic> diagnostics;  // profiles that could not be compared (unreadable, repeated)

  bool identical() const { return added.empty() && removed.empty() && changed.empty(); }
  // {a {path, profiles}, b {path, profiles}, identical, added, removed, changed, added_count,
  // removed_count, changed_count, unchanged_count, diagnostics}; lists sorted by key, then host.
  nlohmann::json to_json() const;
  // Exactly to_json().dump(2), written without building the document, in chunks: what --json
  // prints (a report of a fleet's files lists tens of thousands of profiles).
  void write_json(std::ostream& out) const;
};

// Compares the profiles of two cache files by key and host. Read-only. Unreadable or repeated
// profiles are left out of the comparison with a diagnostic; a file that does not exist, cannot be
// read or is malformed throws as described above.
DiffReport diff_kernel_tuning_caches(const DiffOptions& options);

}  // namespace onnx_light::tune
