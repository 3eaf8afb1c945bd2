#pragma once
// The cache file, TOML format versions 1 and 2 (DESIGN.md section 4): reading into profiles (one
// bad profile never discards the others) and writing in a stable sorted order. Version 2 adds class
// profiles (host.match, see HostMatch); a file is written as version 1 unless it holds one.
#include <cstddef>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "onnx_light/runtime/tuning_key.h"
#include "onnx_light/runtime/tuning_value.h"
#include "onnx_light/tune/diagnostic.h"
#include "onnx_light/tune/host.h"

namespace onnx_light::tune {

inline constexpr std::string_view kCacheFormat = "onnx-light-kernel-tuning";
// The newest version this build reads and writes.
inline constexpr int64_t kCacheFormatVersion = 2;

struct Provenance {
  std::string source;        // "set", "calibrate", "calibrate-unmeasured", "calibrate-low-confidence"
  std::string written;       // RFC 3339 UTC, "2026-12-02T11:39:29Z"
  std::string tool_version;  // "0.1.0"
  // The machine's name when it was written: for operators reading a shared cache, never part of
  // the match (profiles are matched by the host descriptor). "" in files of older versions.
  std::string hostname;

  auto operator<=>(const Provenance&) const = default;
  bool operator==(const Provenance&) const = default;
};

// A structural problem of one profile (a missing or mistyped field).
struct ProfileProblem {
  std::string field;  // "kernel", "host.effective_threads", "values.x"
  std::string message;
};

struct CacheProfile {
  runtime::TuningKey key;
  HostDescriptor host;
  runtime::TuningValues values;
  Provenance provenance;
  // Non-empty when the profile could not be read as written (see `problems`). Key and host then
  // hold what could be read; `raw_toml` keeps the whole [[profile]] so rewriting never drops it.
  std::vector<ProfileProblem> problems;
  std::string raw_toml;

  bool readable() const { return problems.empty(); }
};

// Whole-file states.
enum class FileStatus { not_found, unreadable, malformed, loaded };
std::string_view file_status_name(FileStatus status);

struct CacheFile {
  std::filesystem::path path;
  FileStatus status = FileStatus::not_found;
  std::vector<CacheProfile> profiles;  // in file order
  std::string error;                   // why unreadable or malformed
};

// Parses cache text. Never throws on bad input: a file that is not TOML, has another `format`,
// or a newer `format_version` is `malformed`; inside a good file each profile stands alone. An
// empty (whitespace-only) file is an empty cache.
CacheFile parse_cache_text(std::string_view text, const std::filesystem::path& path);
// The same result computed the slow, obvious way: the whole document through toml++.
// parse_cache_text reads the layout serialize_cache writes section by section (memoising repeated
// sections) and falls back to this for anything else. Exposed so tests can compare the two.
CacheFile parse_cache_text_reference(std::string_view text, const std::filesystem::path& path);
// Reads and parses a file: not_found, unreadable (permissions, not a regular file, I/O error), or
// as parse_cache_text.
CacheFile read_cache_file(const std::filesystem::path& path);

// The file text for `profiles`: a header comment, then readable profiles sorted by (key, host),
// then unreadable ones verbatim in their given order.
std::string serialize_cache(std::vector<CacheProfile> profiles);
// The same for profiles held elsewhere, without copying them (a fleet's cache is large).
std::string serialize_profiles(std::vector<const CacheProfile*> profiles);

// Orders profiles the way the file stores them; also the identity for merging: (key, host).
bool profile_less(const CacheProfile& a, const CacheProfile& b);
bool same_profile_identity(const CacheProfile& a, const CacheProfile& b);
// A hash of every field same_profile_identity compares. Leaving one out (stepping, caches,
// threads) puts the profiles of a fleet's cache, which differ in little else, into one bucket, and
// every lookup by identity becomes quadratic.
std::size_t profile_identity_hash(const CacheProfile& profile);
// Hash and equality on profiles by identity, for unordered containers of (pointers to) profiles.
struct ProfileIdentityHash {
  std::size_t operator()(const CacheProfile* profile) const { return profile_identity_hash(*profile); }
};
struct ProfileIdentityEqual {
  bool operator()(const CacheProfile* a, const CacheProfile* b) const { return same_profile_identity(*a, *b); }
};

// Provenance for a profile written now by this process: source, timestamp, version, hostname.
Provenance provenance_now(std::string source, std::string tool_version);

// The current time as an RFC 3339 UTC timestamp with second precision.
std::string utc_timestamp_now();

}  // namespace onnx_light::tune
