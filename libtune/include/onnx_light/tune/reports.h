#pragma once
// The reports the operations return. to_json() gives exactly the dictionary shapes of the Python
// seed (../shared/seed/kernel_tuning_gallery.txt); fields marked "human" are extra detail for
// the CLI tables and stay out of the JSON.
#include <cstdint>
#include <optional>
#include <iosfwd>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "onnx_light/runtime/session.h"
#include "onnx_light/runtime/tuning_key.h"
#include "onnx_light/runtime/tuning_value.h"
#include "onnx_light/tune/cache_file.h"
#include "onnx_light/tune/cache_update.h"
#include "onnx_light/tune/classification.h"
#include "onnx_light/tune/diagnostic.h"

namespace onnx_light::tune {

// {library, kernel, implementation, element_type, device, device_name, tuning_abi}.
nlohmann::json key_to_json(const runtime::TuningKey& key);
nlohmann::json keys_to_json(const std::vector<runtime::TuningKey>& keys);
// int64 -> integer, double -> number with a fraction, bool, string.
nlohmann::json value_to_json(const runtime::TuningValue& value);
nlohmann::json values_to_json(const runtime::TuningValues& values);
// {status, path, updated, preserved, pruned (keys), diagnostics}.
nlohmann::json update_to_json(const UpdateResult& update);
// {source, written, tool_version, hostname}.
nlohmann::json provenance_to_json(const Provenance& provenance);
// One profile as the file holds it: key fields + device_name, every host field (flat, as in
// inspect), values and provenance.
nlohmann::json profile_to_json(const CacheProfile& profile);

// A loaded profile another profile is in force over (same key, threads and spin class): a less
// specific match, or the system layer's at equal specificity.
struct ShadowedProfile {
  CacheLayer layer = CacheLayer::user;
  std::size_t index = 0;  // in its layer's file
  HostMatch matched_by = HostMatch::exact;

  // {layer, index, matched_by}
  nlohmann::json to_json() const;
};

// One registered key as `list` and `propose` show it.
struct KernelTuningEntry {
  runtime::TuningKey key;
  std::vector<std::string> parameter_names;
  runtime::TuningValues defaults;
  bool calibratable = false;
  // The loaded profile of this host at the requested thread count (user layer over system).
  std::optional<runtime::TuningValues> cached_values;
  std::optional<CacheLayer> cached_layer;  // human
  // Why that profile applies here ("exact" host, or the class it matches by); null without one.
  std::optional<HostMatch> matched_by;
  std::vector<ShadowedProfile> shadows;    // the other loaded profiles it is in force over
  runtime::TuningValues active_values;     // what a session of this process would use
  runtime::TuningSource active_source = runtime::TuningSource::portable_default;

  // Key fields + device_name, parameter_names, defaults, calibratable, cached_values (or null),
  // matched_by (or null), shadows, active_values, active_source.
  nlohmann::json to_json() const;
};

struct KernelParametersReport {
  std::string cache_path;
  FileStatus cache_status = FileStatus::not_found;
  std::vector<Diagnostic> diagnostics;
  std::vector<KernelTuningEntry> kernels;
  int64_t effective_threads = 0;      // human
  std::string system_path;            // human; "" when there is no system layer
  FileStatus system_status = FileStatus::not_found;  // human

  // {cache_path, cache_status, diagnostics, kernels}.
  nlohmann::json to_json() const;
};

struct ProposalReport {
  std::string cache_path;
  FileStatus cache_status = FileStatus::not_found;
  std::vector<KernelTuningEntry> selected;      // every selected key
  std::vector<KernelTuningEntry> covered;       // with a local cached profile
  std::vector<KernelTuningEntry> missing;       // without one
  std::vector<KernelTuningEntry> calibratable;  // missing and calibratable
  std::vector<KernelTuningEntry> unsupported;   // missing and not calibratable
  std::vector<Diagnostic> diagnostics;
  int64_t effective_threads = 0;  // human

  // {cache_path, cache_status, selected, covered, missing, calibratable, unsupported, diagnostics}.
  nlohmann::json to_json() const;
};

struct LoadReport {
  FileStatus status = FileStatus::not_found;  // of the user cache
  std::string path;
  uint64_t published_generation = 0;
  // Keys (deduplicated, sorted) with at least one profile in that class. Per-profile detail,
  // index and reason, is in `diagnostics`.
  std::vector<runtime::TuningKey> loaded;
  std::vector<runtime::TuningKey> stale;
  std::vector<runtime::TuningKey> incompatible;
  std::vector<runtime::TuningKey> invalid;
  // Selected keys (only when a filter selects keys) without a local loaded profile.
  std::vector<runtime::TuningKey> missing;
  std::vector<Diagnostic> diagnostics;
  std::size_t published_profiles = 0;  // human: profiles (all thread counts) published
  bool published = false;              // human: false when nothing could be read
  int64_t effective_threads = 0;       // human

  // {status, path, published_generation, loaded, stale, incompatible, invalid, missing, diagnostics}.
  nlohmann::json to_json() const;
};

// Where a value `set` replaced came from.
enum class ValueOrigin { user_cache, system_cache, default_value };
std::string_view value_origin_name(ValueOrigin origin);  // "user cache", "system cache", "default"

struct ValueChange {
  std::string name;
  runtime::TuningValue old_value;
  ValueOrigin old_origin = ValueOrigin::default_value;
  runtime::TuningValue new_value;
  bool given = false;  // named by the caller (else filled in)
};

struct SetReport {
  UpdateStatus status = UpdateStatus::write_failed;
  std::string path;
  runtime::TuningValues values;  // the complete set written
  std::vector<runtime::TuningKey> updated;
  std::vector<runtime::TuningKey> preserved;
  std::vector<runtime::TuningKey> pruned;
  std::vector<Diagnostic> diagnostics;
  std::optional<LoadReport> load;     // null when load=false or nothing was written
  runtime::TuningKey key;             // human
  int64_t effective_threads = 0;      // human
  std::vector<ValueChange> changes;   // human: every parameter, old -> new

  // {status, path, values, updated, preserved, pruned, diagnostics, load}.
  nlohmann::json to_json() const;
};

struct InspectedProfile {
  std::size_t index = 0;  // in its file
  CacheLayer layer = CacheLayer::user;
  CacheProfile profile;
  ProfileClass classification = ProfileClass::invalid;
  bool local = false;
  // Loaded: how its host matches this machine (exact, or its class). Null otherwise.
  std::optional<HostMatch> matched_by;
  // Loaded and the one a session of its conditions (threads, spin class) uses: no more specific
  // or user-layer profile of the same key and conditions beats it.
  bool in_force = false;
  // Not in force though loaded (shadowed_by names the profile in force), or a system profile a
  // user profile of the same (key, host) overrides.
  bool shadowed = false;
  std::optional<ShadowedProfile> shadowed_by;  // the profile in force instead (its matched_by)
  std::vector<ShadowedProfile> shadows;        // in force: the loaded profiles it is in force over

  // Key fields + device_name, match and every host field (architecture, vendor, family, model,
  // stepping, microarchitecture, features, l1d/l2/l3_cache_bytes, physical_cores, logical_cores,
  // effective_threads, idle_spin), values, local, classification, matched_by, in_force, layer,
  // index, shadowed, shadowed_by, shadows, provenance.
  nlohmann::json to_json() const;
};

struct InspectReport {
  FileStatus status = FileStatus::not_found;  // of the user cache
  std::string path;
  std::vector<Diagnostic> diagnostics;
  std::vector<InspectedProfile> profiles;  // user layer first, then the system layer
  std::string system_path;                 // "" when there is no system layer (or user_only)
  FileStatus system_status = FileStatus::not_found;
  std::size_t system_profiles = 0;         // profiles read from the system layer (before filters)
  int64_t effective_threads = 0;           // human

  // {status, path, diagnostics, profiles, system_cache}; system_cache is {path, status, profiles
  // (a count)} or null when there is no system layer.
  nlohmann::json to_json() const;
  // Appends exactly to_json().dump(2) without building the document (a 10,000-profile cache
  // prints in a fraction of the time); what `inspect --json` prints.
  void write_json(std::string& out) const;
  // The same bytes written to `out` in chunks of about a megabyte: a 40,000-profile report is
  // 70 MB, which a process would otherwise hold (and fault in) whole.
  void write_json(std::ostream& out) const;
};

struct RemoveReport {
  // "removed", "unchanged" (nothing matched), "not_found", "would_remove" (dry run with matches),
  // or an update status name (malformed, read_only, ...).
  std::string status;
  std::string path;
  bool dry_run = false;
  std::vector<std::string> removed_files;     // whole-file removal (dry run: would be removed)
  std::vector<runtime::TuningKey> removed;    // keys of the profiles dropped, without repeats
  std::vector<runtime::TuningKey> preserved;  // keys of the profiles kept, without repeats
  // Every profile dropped (dry run: that would be), with host, classification and provenance.
  std::vector<InspectedProfile> removed_profiles;
  std::size_t preserved_profiles = 0;
  std::vector<Diagnostic> diagnostics;

  // {status, path, dry_run, removed_files, removed, preserved, removed_profiles (InspectedProfile
  // objects), removed_count, preserved_count (profiles), diagnostics}.
  nlohmann::json to_json() const;
};

}  // namespace onnx_light::tune
