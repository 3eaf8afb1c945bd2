#pragma once
// The one way the cache is written (DESIGN.md section 4): exclusive flock on <cache>.lock,
// re-read, merge by (key, host), write a temporary file in the same directory, fsync, rename over
// the cache, fsync the directory. A malformed or unreadable cache is never overwritten.
// Used by `set`, `remove --kernel ...`, `calibrate --save`, `import`, and `export`/`merge -o`.
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "onnx_light/runtime/kernel_table.h"
#include "onnx_light/tune/cache_file.h"
#include "onnx_light/tune/diagnostic.h"

namespace onnx_light::tune {

// lock_timeout: another process held the cache lock for longer than the timeout.
enum class UpdateStatus { updated, read_only, unreadable, malformed, write_failed, lock_timeout };
std::string_view update_status_name(UpdateStatus status);

// What to change, decided from the cache as re-read under the lock.
struct CacheEdit {
  // Added, or replacing every profile of the same (key, host).
  std::vector<CacheProfile> upserts;
  // Profiles of the file to drop (reported as `removed`); null keeps all.
  std::function<bool(const CacheProfile&)> erase;
  // Replace the whole file: every profile of it is dropped (reported as `removed`) and the
  // upserts alone are written, also when there was no file and there are no upserts (an empty
  // cache). How `export -o` and `merge -o` write: the output keeps the lock and atomicity of a
  // cache, and a file that is not a cache (malformed, unreadable) is never overwritten. A lock
  // file this update created is removed again: such an output is usually a file to ship.
  bool replace_all = false;
};
// Called once, under the lock, with the current file (status loaded or not_found). May throw;
// nothing is written then and the exception propagates.
using EditFunction = std::function<CacheEdit(const CacheFile& current)>;

// A writer waiting for the cache lock says so after this long (UpdateOptions::on_lock_wait), and
// gives up after lock_timeout_ms.
inline constexpr int kLockWaitNoticeMs = 1000;
inline constexpr int64_t kDefaultLockTimeoutMs = 30000;

struct UpdateOptions {
  // Drop profiles whose key identity is registered under another tuning_abi.
  bool prune_stale = false;
  // Needed by prune_stale; nullptr: cpu_kernel_table().
  const runtime::KernelTable* kernels = nullptr;
  // Called once, with the lock file's path, when another process has held the lock for
  // kLockWaitNoticeMs; the update then keeps waiting.
  std::function<void(const std::filesystem::path& lock_file)> on_lock_wait;
  // How long to wait for the lock before giving up with status lock_timeout (naming the lock file
  // and, where /proc/locks tells, the holder's pid); 0 or less waits forever.
  int64_t lock_timeout_ms = kDefaultLockTimeoutMs;
};


struct UpdateResult {
  UpdateStatus status = UpdateStatus::write_failed;
  std::filesystem::path path;
  std::vector<CacheProfile> updated;    // written by this update
  std::vector<CacheProfile> preserved;  // kept from the file as they were
  std::vector<CacheProfile> pruned;     // stale profiles dropped on request
  std::vector<CacheProfile> removed;    // dropped by the edit's `erase`
  std::vector<Diagnostic> diagnostics;  // why not updated, and warnings
  bool ok() const { return status == UpdateStatus::updated; }
};

// Runs one locked update. Creates the cache's directory when missing. When the edit changes
// nothing the file is left as it is (status updated). On any failure the cache keeps its bytes and
// no temporary file, lock file or directory created by this call is left behind. Blocks while
// another process holds the lock. Returns a status, never throws for I/O problems.
UpdateResult update_cache(const std::filesystem::path& path, const EditFunction& edit,
                          const UpdateOptions& options = {});

// Whether an update of `path` could succeed now, checked without the lock and without writing:
// the cache (if any) is readable, well-formed and writable, and its directory (or the nearest
// existing one it would be created in) is writable. Status updated when it could; otherwise the
// status and diagnostic update_cache would return. Long operations (calibrate --save) call it
// before they measure.
UpdateResult check_cache_writable(const std::filesystem::path& path);

// Why `profile` cannot be written into a cache file (unreadable fields, an empty key name, a
// non-positive tuning_abi or effective_threads, text that is not UTF-8), naming the field;
// nullopt when it can. update_cache refuses such upserts with InvalidValueError.
std::optional<ProfileProblem> profile_write_problem(const CacheProfile& profile);

// Convenience: merges `profiles` (many at once, e.g. a calibration run) in one locked update.
UpdateResult write_profiles(const std::filesystem::path& path, std::vector<CacheProfile> profiles,
                            const UpdateOptions& options = {});

// Deletes the cache and its lock file under the lock. Status updated (deleted), read_only,
// write_failed; `removed` lists nothing (whole-file removal), `path` says what was deleted.
// Returns not_found through `existed` = false when there was no cache.
struct RemoveFileResult {
  UpdateStatus status = UpdateStatus::write_failed;
  bool existed = false;
  std::vector<std::filesystem::path> removed_files;
  std::vector<Diagnostic> diagnostics;
};
// Waits for the lock as `options` say (on_lock_wait, lock_timeout_ms; the rest is unused).
RemoveFileResult remove_cache_file(const std::filesystem::path& path, const UpdateOptions& options = {});

// "pid 1234 (onnx-light-tune)" of the process holding an flock on `lock_file`, from /proc/locks;
// "" when that cannot be told (no /proc, the holder is gone, or in another namespace).
std::string lock_holder(const std::filesystem::path& lock_file);

}  // namespace onnx_light::tune
