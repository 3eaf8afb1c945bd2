#include "onnx_light/tune/cache_update.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <thread>
#include <unordered_map>

#include <fmt/format.h>

#include "cache_text.h"
#include "sorted_runs.h"
#include "onnx_light/runtime/error.h"
#include "onnx_light/tune/cache_path.h"
#include "onnx_light/tune/kernel_selection.h"

namespace onnx_light::tune {

std::string_view update_status_name(UpdateStatus status) {
  switch (status) {
    case UpdateStatus::updated: return "updated";
    case UpdateStatus::read_only: return "read_only";
    case UpdateStatus::unreadable: return "unreadable";
    case UpdateStatus::malformed: return "malformed";
    case UpdateStatus::write_failed: return "write_failed";
    case UpdateStatus::lock_timeout: return "lock_timeout";
  }
  return "unknown";
}

namespace {

namespace fs = std::filesystem;

bool is_permission_error(int error) { return error == EACCES || error == EPERM || error == EROFS; }

UpdateStatus status_for_errno(int error) {
  return is_permission_error(error) ? UpdateStatus::read_only : UpdateStatus::write_failed;
}

// Write permission bits are honoured even for root: an operator who chmod -w'd a cache or its
// directory means "do not change it", and root would otherwise bypass that silently.
bool has_write_bits(mode_t mode) { return (mode & (S_IWUSR | S_IWGRP | S_IWOTH)) != 0; }

struct Failure {
  UpdateStatus status;
  std::string message;
};

// Why files cannot be created in `directory`, if they cannot.
std::optional<Failure> directory_failure(const fs::path& directory) {
  struct stat info {};
  if (::stat(directory.c_str(), &info) != 0) {
    const int e = errno;
    return Failure{status_for_errno(e), fmt::format("cannot stat {}: {}", directory.string(), std::strerror(e))};
  }
  if (::access(directory.c_str(), W_OK | X_OK) != 0) {
    const int e = errno;
    return Failure{status_for_errno(e), fmt::format("cannot write in {}: {}", directory.string(), std::strerror(e))};
  }
  if (!has_write_bits(info.st_mode)) {
    return Failure{UpdateStatus::read_only,
                   fmt::format("directory {} is write-protected (mode {:04o}); chmod u+w it to allow updates",
                               directory.string(), info.st_mode & 07777)};
  }
  return std::nullopt;
}

fs::path directory_of(const fs::path& path);

// Why the cache as read cannot be updated (unreadable, malformed, write-protected), if it cannot.
// Sets `existing` to the file's stat when it exists. An update renames a new file over the cache,
// so what it needs is the directory's permission (checked by the caller); the file's own mode
// only matters as the operator's word: no write bit at all means "do not change it". A file of
// another user in a sticky directory (/tmp) cannot be renamed over.
std::optional<Failure> file_failure(const CacheFile& current, const fs::path& path, const fs::path& target,
                                    std::optional<struct stat>& existing) {
  if (current.status == FileStatus::unreadable) {
    return Failure{UpdateStatus::unreadable, current.error + "; the cache is unchanged"};
  }
  if (current.status == FileStatus::malformed) {
    return Failure{UpdateStatus::malformed,
                   fmt::format("{} is malformed ({}); it is left unchanged: fix it, or remove it with "
                               "'onnx-light-tune remove'",
                               path.string(), current.error)};
  }
  if (current.status == FileStatus::loaded) {
    struct stat info {};
    if (::stat(target.c_str(), &info) == 0) {
      existing = info;
      if (!has_write_bits(info.st_mode)) {
        return Failure{UpdateStatus::read_only, fmt::format("{} is write-protected (mode {:04o}); chmod u+w it to "
                                                            "allow updates",
                                                            path.string(), info.st_mode & 07777)};
      }
      struct stat directory {};
      const uid_t me = ::geteuid();
      if (me != 0 && info.st_uid != me && ::stat(directory_of(target).c_str(), &directory) == 0 &&
          (directory.st_mode & S_ISVTX) != 0 && directory.st_uid != me) {
        return Failure{UpdateStatus::read_only,
                       fmt::format("{} belongs to uid {} in the sticky directory {}, which only its owner may "
                                   "replace",
                                   path.string(), info.st_uid, directory_of(target).string())};
      }
    }
  }
  return std::nullopt;
}

// flock(LOCK_EX) on `fd`, polled so that a waiter can be told (once, after kLockWaitNoticeMs) and
// can give up (after timeout_ms > 0). Returns 0 when locked, else the errno (EWOULDBLOCK: timed
// out).
int wait_for_lock(int fd, const fs::path& lock_path, const UpdateOptions& options) {
  if (::flock(fd, LOCK_EX | LOCK_NB) == 0) return 0;
  if (errno != EWOULDBLOCK && errno != EINTR) return errno;
  const auto start = std::chrono::steady_clock::now();
  const auto notice_at = start + std::chrono::milliseconds(kLockWaitNoticeMs);
  bool told = false;
  for (;;) {
    const auto now = std::chrono::steady_clock::now();
    if (options.on_lock_wait && !told && now >= notice_at) {
      options.on_lock_wait(lock_path);
      told = true;
    }
    if (options.lock_timeout_ms > 0 && now - start >= std::chrono::milliseconds(options.lock_timeout_ms)) {
      return EWOULDBLOCK;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    if (::flock(fd, LOCK_EX | LOCK_NB) == 0) return 0;
    if (errno != EWOULDBLOCK && errno != EINTR) return errno;
  }
}

// The cache file a path names: writers replace a symlink's target, not the link.
// A dangling link names the file to create. Chains are followed up to 40 links (as the kernel).
fs::path resolve_target(const fs::path& path) {
  std::error_code error;
  fs::path current = path;
  for (int hops = 0; hops < 40 && fs::is_symlink(fs::symlink_status(current, error)); ++hops) {
    const fs::path next = fs::read_symlink(current, error);
    if (error) return path;
    current = next.is_absolute() ? next : current.parent_path() / next;
  }
  return current.lexically_normal();
}

// A symlinked cache path is followed only when the link and its target (if any) belong to the
// writing user, as fs.protected_symlinks does for sticky directories: otherwise a link planted by
// another user in a shared directory would redirect this writer's update (root's, above all)
// into a file of the planter's choosing.
std::optional<Failure> symlink_failure(const fs::path& path) {
  struct stat link {};
  if (::lstat(path.c_str(), &link) != 0 || !S_ISLNK(link.st_mode)) return std::nullopt;
  const uid_t me = ::geteuid();
  if (link.st_uid != me) {
    return Failure{UpdateStatus::read_only,
                   fmt::format("{} is a symbolic link owned by uid {}, not by this user (uid {}); it is not followed "
                               "for writing: replace it, or name its target",
                               path.string(), link.st_uid, me)};
  }
  struct stat target {};
  if (::stat(path.c_str(), &target) == 0 && target.st_uid != me) {
    return Failure{UpdateStatus::read_only,
                   fmt::format("{} links to a file owned by uid {}, not by this user (uid {}); it is not followed "
                               "for writing",
                               path.string(), target.st_uid, me)};
  }
  return std::nullopt;
}

fs::path directory_of(const fs::path& path) {
  fs::path directory = path.parent_path();
  return directory.empty() ? fs::path(".") : directory;
}

// Everything an update creates and must undo when it fails: directories, the lock file, the
// temporary file. Released in reverse order by the destructor.
class UpdateScope {
 public:
  UpdateScope(fs::path target) : target_(std::move(target)), directory_(directory_of(target_)) {}
  UpdateScope(const UpdateScope&) = delete;
  UpdateScope& operator=(const UpdateScope&) = delete;
  ~UpdateScope() {
    if (!temp_.empty()) ::unlink(temp_.c_str());
    if (lock_fd_ >= 0) {
      // Unlinking while holding the lock is safe: waiters re-check the inode after flock.
      if (!succeeded_ && created_lock_) ::unlink(lock_path_for(target_).c_str());
      ::close(lock_fd_);
    }
    if (!succeeded_) {
      for (auto it = created_directories_.rbegin(); it != created_directories_.rend(); ++it) {
        if (::rmdir(it->c_str()) != 0) break;
      }
    }
  }

  const fs::path& target() const { return target_; }
  const fs::path& directory() const { return directory_; }
  void succeed() { succeeded_ = true; }
  bool created_lock() const { return created_lock_; }
  // Also drop the lock file on success (nothing was written and there is no cache).
  void forget_lock_on_success() { remove_lock_always_ = true; }
  void finish() {
    if (succeeded_ && remove_lock_always_ && created_lock_ && lock_fd_ >= 0) {
      ::unlink(lock_path_for(target_).c_str());
    }
  }

  std::optional<Failure> make_directory() {
    std::error_code error;
    if (fs::is_directory(directory_, error)) return std::nullopt;
    std::vector<fs::path> missing;
    for (fs::path p = directory_; !p.empty() && !fs::exists(fs::symlink_status(p, error)); p = p.parent_path()) {
      missing.push_back(p);
      if (p == p.parent_path()) break;
    }
    for (auto it = missing.rbegin(); it != missing.rend(); ++it) {
      if (::mkdir(it->c_str(), 0777) == 0) {
        created_directories_.push_back(*it);
        // The new entry is durable only once its parent is synced (as for the rename below).
        const int parent = ::open(directory_of(*it).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (parent >= 0) {
          ::fsync(parent);
          ::close(parent);
        }
      } else if (errno != EEXIST) {
        const int e = errno;
        return Failure{status_for_errno(e),
                       fmt::format("cannot create directory {}: {}", it->string(), std::strerror(e))};
      }
    }
    if (!fs::is_directory(directory_, error)) {
      return Failure{UpdateStatus::write_failed, fmt::format("{} is not a directory", directory_.string())};
    }
    return std::nullopt;
  }

  std::optional<Failure> check_directory_writable() const { return directory_failure(directory_); }

  // Exclusive flock on <cache>.lock. Loops until the locked file is the one the path names, so a
  // lock file unlinked by a failing writer cannot let two writers in.
  std::optional<Failure> lock(const UpdateOptions& options) {
    const fs::path lock_path = lock_path_for(target_);
    for (int attempt = 0; attempt < 1000; ++attempt) {
      bool created = true;
      int fd = ::open(lock_path.c_str(), O_RDONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
      if (fd < 0 && errno == EEXIST) {
        created = false;
        fd = ::open(lock_path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);  // a FIFO must not block
        if (fd < 0 && errno == ENOENT) continue;  // removed meanwhile
      }
      if (fd < 0) {
        const int e = errno;
        return Failure{status_for_errno(e), fmt::format("cannot open lock file {}: {}", lock_path.string(),
                                                        std::strerror(e))};
      }
      struct stat opened {};
      if (::fstat(fd, &opened) != 0 || !S_ISREG(opened.st_mode)) {
        ::close(fd);
        return Failure{UpdateStatus::write_failed,
                       fmt::format("lock file {} is not a regular file; remove it", lock_path.string())};
      }
      const int e = wait_for_lock(fd, lock_path, options);
      if (e == EWOULDBLOCK) {
        const std::string holder = lock_holder(lock_path);
        ::close(fd);
        return Failure{UpdateStatus::lock_timeout,
                       fmt::format("timed out after {:.1f} s waiting for the cache lock {}{}; the cache is unchanged "
                                   "(a writer still running? --lock-timeout waits longer)",
                                   static_cast<double>(options.lock_timeout_ms) / 1000.0, lock_path.string(),
                                   holder.empty() ? "" : fmt::format(" (held by {})", holder))};
      }
      if (e != 0) {
        ::close(fd);
        if (created) ::unlink(lock_path.c_str());
        return Failure{UpdateStatus::write_failed,
                       fmt::format("cannot lock {}: {}", lock_path.string(), std::strerror(e))};
      }
      struct stat held {}, named {};
      if (::fstat(fd, &held) == 0 && ::stat(lock_path.c_str(), &named) == 0 && held.st_dev == named.st_dev &&
          held.st_ino == named.st_ino) {
        lock_fd_ = fd;
        created_lock_ = created;
        return std::nullopt;
      }
      ::close(fd);  // the lock file was replaced or removed while we waited
    }
    return Failure{UpdateStatus::write_failed, fmt::format("cannot settle on lock file {}", lock_path.string())};
  }

  // Temporary files of writers that died (SIGKILL, power loss): only the lock holder writes one,
  // so any present now is an orphan.
  void remove_orphaned_temporaries() const {
    const std::string prefix = target_.filename().string() + ".tmp-";
    DIR* dir = ::opendir(directory_.c_str());
    if (dir == nullptr) return;
    while (const dirent* entry = ::readdir(dir)) {
      const std::string_view name(entry->d_name);
      if (name.starts_with(prefix)) ::unlinkat(::dirfd(dir), entry->d_name, 0);
    }
    ::closedir(dir);
  }

  std::optional<Failure> write_and_rename(const std::string& text, const std::optional<struct stat>& existing,
                                          std::vector<Diagnostic>& warnings) {
    static std::atomic<uint64_t> counter{0};
    temp_ = directory_ / fmt::format("{}.tmp-{}-{}", target_.filename().string(), ::getpid(), counter++);
    const int fd = ::open(temp_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0) {
      const int e = errno;
      temp_.clear();
      return Failure{status_for_errno(e), fmt::format("cannot create a temporary file in {}: {}",
                                                      directory_.string(), std::strerror(e))};
    }
    if (existing) {
      // Keep the permissions the operator gave the cache, and its owner where this writer may
      // (root updating a user's cache leaves it the user's; others keep the group if they can).
      const bool root = ::geteuid() == 0;
      if (::fchown(fd, root ? existing->st_uid : static_cast<uid_t>(-1), existing->st_gid) != 0 && root) {
        Diagnostic warning;
        warning.message = fmt::format("cannot keep the owner of {}: {}", target_.string(), std::strerror(errno));
        warnings.push_back(std::move(warning));
      }
      ::fchmod(fd, existing->st_mode & 07777);
    }
    std::size_t done = 0;
    std::string failure;
    while (done < text.size()) {
      const ssize_t wrote = ::write(fd, text.data() + done, text.size() - done);
      if (wrote < 0 && errno == EINTR) continue;
      if (wrote <= 0) {
        failure = fmt::format("cannot write {}: {}", temp_.string(), std::strerror(wrote < 0 ? errno : EIO));
        break;
      }
      done += static_cast<std::size_t>(wrote);
    }
    if (failure.empty() && ::fsync(fd) != 0) {
      failure = fmt::format("cannot fsync {}: {}", temp_.string(), std::strerror(errno));
    }
    if (::close(fd) != 0 && failure.empty()) {
      failure = fmt::format("cannot close {}: {}", temp_.string(), std::strerror(errno));
    }
    if (!failure.empty()) return Failure{UpdateStatus::write_failed, failure + "; the cache is unchanged"};
    if (::rename(temp_.c_str(), target_.c_str()) != 0) {
      const int e = errno;
      return Failure{status_for_errno(e), fmt::format("cannot replace {}: {}; the cache is unchanged",
                                                      target_.string(), std::strerror(e))};
    }
    temp_.clear();  // it is the cache now
    // The rename is durable only once the directory is synced; the new file is already in place,
    // so a failure here is a warning, not a failed update.
    const int dir_fd = ::open(directory_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dir_fd < 0 || (::fsync(dir_fd) != 0 && errno != EINVAL)) {
      Diagnostic warning;
      warning.message = fmt::format("cannot fsync directory {}: {}; the update may not survive a power loss",
                                    directory_.string(), std::strerror(errno));
      warnings.push_back(std::move(warning));
    }
    if (dir_fd >= 0) ::close(dir_fd);
    return std::nullopt;
  }

 private:
  fs::path target_;
  fs::path directory_;
  std::vector<fs::path> created_directories_;
  fs::path temp_;
  int lock_fd_ = -1;
  bool created_lock_ = false;
  bool succeeded_ = false;
  bool remove_lock_always_ = false;
};

void check_writable_profile(const CacheProfile& profile) {
  if (auto problem = profile_write_problem(profile)) {
    throw InvalidValueError(fmt::format("cannot write profile {}: {}", profile.key.to_string(), problem->message));
  }
}

UpdateResult failed(UpdateResult result, Failure failure) {
  result.status = failure.status;
  Diagnostic diagnostic;
  diagnostic.message = std::move(failure.message);
  result.diagnostics.push_back(std::move(diagnostic));
  return result;
}

}  // namespace

std::optional<ProfileProblem> profile_write_problem(const CacheProfile& profile) {
  if (!profile.readable()) {
    return ProfileProblem{profile.problems.front().field,
                          fmt::format("it has unreadable fields ({})", profile.problems.front().message)};
  }
  const auto& key = profile.key;
  if (key.kernel.empty() || key.implementation.empty() || key.library.empty()) {
    return ProfileProblem{key.kernel.empty() ? "kernel" : key.implementation.empty() ? "implementation" : "library",
                          "library, kernel and implementation must be set"};
  }
  if (key.tuning_abi < 1) return ProfileProblem{"tuning_abi", "tuning_abi must be positive"};
  if (profile.host.effective_threads < 1) {
    return ProfileProblem{"host.effective_threads", "host.effective_threads must be positive"};
  }
  if (profile.host.match != HostMatch::exact) {
    // The file records only a class's fields: anything else set would be lost (or, an empty
    // microarchitecture, refused) when the file is read back.
    HostDescriptor as_exact = profile.host;
    as_exact.match = HostMatch::exact;
    const std::string_view name = host_match_name(profile.host.match);
    if (profile.host.match == HostMatch::microarchitecture && profile.host.microarchitecture.empty()) {
      return ProfileProblem{"host.microarchitecture", "a microarchitecture profile needs host.microarchitecture"};
    }
    if (as_exact.generalised(profile.host.match) != profile.host) {
      return ProfileProblem{"host.match", fmt::format("a {} profile may set only the fields of its class", name)};
    }
  }
  std::optional<ProfileProblem> problem;
  auto check = [&](std::string_view field, std::string_view text) {
    if (!problem && !is_valid_utf8(text)) {
      problem = ProfileProblem{std::string(field), fmt::format("{} is not valid UTF-8", field)};
    }
  };
  check("library", key.library);
  check("kernel", key.kernel);
  check("implementation", key.implementation);
  check("host.architecture", profile.host.architecture);
  check("host.vendor", profile.host.vendor);
  check("host.microarchitecture", profile.host.microarchitecture);
  for (const auto& feature : profile.host.features) check("host.features", feature);
  for (const auto& [name, value] : profile.values) {
    if (name.empty()) return ProfileProblem{"values", "empty parameter name"};
    if (!is_valid_utf8(name)) return ProfileProblem{"values", "a parameter name is not valid UTF-8"};
    if (const auto* text = std::get_if<std::string>(&value); text != nullptr && !is_valid_utf8(*text)) {
      check(fmt::format("values.{}", name), *text);
    }
  }
  check("provenance.source", profile.provenance.source);
  check("provenance.written", profile.provenance.written);
  check("provenance.tool_version", profile.provenance.tool_version);
  check("provenance.hostname", profile.provenance.hostname);
  return problem;
}

UpdateResult check_cache_writable(const fs::path& path) {
  UpdateResult result;
  result.path = path;
  if (auto failure = symlink_failure(path)) return failed(std::move(result), std::move(*failure));
  const fs::path target = resolve_target(path);
  // The directory an update would create, or the nearest existing one it would be created in.
  fs::path directory = directory_of(target);
  std::error_code error;
  while (!fs::exists(fs::symlink_status(directory, error)) && directory.has_parent_path() &&
         directory != directory.parent_path()) {
    directory = directory.parent_path();
  }
  if (!fs::is_directory(directory, error)) {
    return failed(std::move(result), {UpdateStatus::write_failed, fmt::format("{} is not a directory", directory.string())});
  }
  if (auto failure = directory_failure(directory)) return failed(std::move(result), std::move(*failure));
  std::optional<struct stat> existing;
  if (auto failure = file_failure(read_cache_file(target), path, target, existing)) {
    return failed(std::move(result), std::move(*failure));
  }
  result.status = UpdateStatus::updated;
  return result;
}

UpdateResult update_cache(const fs::path& path, const EditFunction& edit, const UpdateOptions& options) {
  UpdateResult result;
  result.path = path;
  if (auto failure = symlink_failure(path)) return failed(std::move(result), std::move(*failure));
  UpdateScope scope(resolve_target(path));
  if (auto failure = scope.make_directory()) return failed(std::move(result), std::move(*failure));
  if (auto failure = scope.check_directory_writable()) return failed(std::move(result), std::move(*failure));
  if (auto failure = scope.lock(options)) return failed(std::move(result), std::move(*failure));

  CacheFile current = read_cache_file(scope.target());
  std::optional<struct stat> existing;
  if (auto failure = file_failure(current, path, scope.target(), existing)) {
    return failed(std::move(result), std::move(*failure));
  }

  CacheEdit change = edit(current);  // may throw: the scope undoes what this call created
  for (const auto& profile : change.upserts) check_writable_profile(profile);

  // Merge by (key, host): an upsert replaces every profile of its identity; the last upsert of
  // one identity wins. Hashed by identity: an import brings tens of thousands.
  std::unordered_map<const CacheProfile*, std::size_t, ProfileIdentityHash, ProfileIdentityEqual> upsert_index;
  upsert_index.reserve(change.upserts.size());
  std::vector<bool> superseded(change.upserts.size(), false);
  for (std::size_t i = 0; i < change.upserts.size(); ++i) {
    const auto [it, inserted] = upsert_index.try_emplace(&change.upserts[i], i);
    if (!inserted) {
      superseded[it->second] = true;
      it->second = i;
    }
  }
  std::unique_ptr<SchemaIndex> schemas;
  if (options.prune_stale) {
    schemas = std::make_unique<SchemaIndex>(options.kernels != nullptr ? *options.kernels : runtime::cpu_kernel_table());
  }
  // The profiles are moved into the result, and the file is written from there: no copies (a
  // fleet's cache holds tens of thousands).
  for (auto& profile : current.profiles) {
    if (profile.readable() && upsert_index.contains(&profile)) continue;  // replaced
    if (change.replace_all || (change.erase && change.erase(profile))) {
      result.removed.push_back(std::move(profile));
    } else if (schemas && profile.readable() && schemas->is_stale(profile.key)) {
      result.pruned.push_back(std::move(profile));
    } else {
      result.preserved.push_back(std::move(profile));
    }
  }
  // The last upsert of each identity, in the order given (sorted files stay sorted runs), then
  // sorted as the file stores them.
  std::vector<std::size_t> winners;
  winners.reserve(upsert_index.size());
  for (std::size_t i = 0; i < change.upserts.size(); ++i) {
    if (!superseded[i]) winners.push_back(i);
  }
  sort_by_runs(winners.begin(), winners.end(),
               [&](std::size_t a, std::size_t b) { return profile_less(change.upserts[a], change.upserts[b]); });
  result.updated.reserve(winners.size());
  for (const std::size_t index : winners) result.updated.push_back(std::move(change.upserts[index]));
  std::vector<const CacheProfile*> next;  // preserved in file order, then the upserts
  next.reserve(result.preserved.size() + result.updated.size());
  for (const auto& profile : result.preserved) next.push_back(&profile);
  for (const auto& profile : result.updated) next.push_back(&profile);

  if (change.replace_all && scope.created_lock()) scope.forget_lock_on_success();
  const bool create_empty = change.replace_all && current.status == FileStatus::not_found;
  if (result.updated.empty() && result.removed.empty() && result.pruned.empty() && !create_empty) {
    result.status = UpdateStatus::updated;  // nothing to change: keep the file as it is
    scope.succeed();
    if (current.status == FileStatus::not_found) scope.forget_lock_on_success();
    scope.finish();
    return result;
  }
  scope.remove_orphaned_temporaries();
  if (auto failure = scope.write_and_rename(serialize_profiles(std::move(next)), existing, result.diagnostics)) {
    result.updated.clear();
    result.removed.clear();
    result.pruned.clear();
    return failed(std::move(result), std::move(*failure));
  }
  result.status = UpdateStatus::updated;
  scope.succeed();
  scope.finish();
  return result;
}

UpdateResult write_profiles(const fs::path& path, std::vector<CacheProfile> profiles, const UpdateOptions& options) {
  return update_cache(
      path, [&](const CacheFile&) { return CacheEdit{std::move(profiles), nullptr}; }, options);
}

std::string lock_holder(const fs::path& lock_file) {
  struct stat info {};
  if (::stat(lock_file.c_str(), &info) != 0) return {};
  // Lines look like "1: FLOCK  ADVISORY  WRITE 1234 fd:01:5678 0 EOF" (major:minor in hex).
  const std::string device = fmt::format("{:02x}:{:02x}:{}", major(info.st_dev), minor(info.st_dev), info.st_ino);
  std::ifstream locks("/proc/locks");
  std::string line;
  while (std::getline(locks, line)) {
    std::istringstream fields(line);
    std::string number, kind, advisory, mode, pid, where;
    if (!(fields >> number >> kind >> advisory >> mode >> pid >> where)) continue;
    if (kind != "FLOCK" || where != device || pid == "-1") continue;
    std::ifstream comm("/proc/" + pid + "/comm");
    std::string name;
    std::getline(comm, name);
    return name.empty() ? fmt::format("pid {}", pid) : fmt::format("pid {} ({})", pid, name);
  }
  return {};
}

RemoveFileResult remove_cache_file(const fs::path& path, const UpdateOptions& options) {
  RemoveFileResult result;
  const fs::path target = resolve_target(path);
  auto fail = [&](UpdateStatus status, std::string message) {
    result.status = status;
    Diagnostic diagnostic;
    diagnostic.message = std::move(message);
    result.diagnostics.push_back(std::move(diagnostic));
    return result;
  };
  if (auto failure = symlink_failure(path)) return fail(failure->status, failure->message);
  struct stat info {};
  if (::lstat(target.c_str(), &info) != 0) {
    if (errno == ENOENT || errno == ENOTDIR) {
      result.status = UpdateStatus::updated;
      result.existed = false;
      // A lock file without a cache (left by an older tool) goes too.
      const fs::path lock = lock_path_for(target);
      if (::lstat(lock.c_str(), &info) == 0 && S_ISREG(info.st_mode) && ::unlink(lock.c_str()) == 0) {
        result.removed_files.push_back(lock_path_for(path));
      }
      return result;
    }
    return fail(UpdateStatus::unreadable, fmt::format("cannot stat {}: {}", target.string(), std::strerror(errno)));
  }
  result.existed = true;
  if (S_ISDIR(info.st_mode)) {
    return fail(UpdateStatus::unreadable, fmt::format("{} is a directory, not a tuning cache; not removed", target.string()));
  }
  UpdateScope scope(target);
  if (auto failure = scope.check_directory_writable()) return fail(failure->status, failure->message);
  if (!has_write_bits(info.st_mode)) {
    return fail(UpdateStatus::read_only, fmt::format("{} is write-protected (mode {:04o}); chmod u+w it to remove it",
                                                     path.string(), info.st_mode & 07777));
  }
  if (auto failure = scope.lock(options)) return fail(failure->status, failure->message);
  if (::unlink(target.c_str()) != 0 && errno != ENOENT) {
    const int e = errno;
    return fail(status_for_errno(e), fmt::format("cannot remove {}: {}", target.string(), std::strerror(e)));
  }
  result.removed_files.push_back(path);
  // Unlink the lock while holding it (safe: waiters re-check the inode), then release it.
  const fs::path lock = lock_path_for(target);
  if (::unlink(lock.c_str()) == 0) result.removed_files.push_back(lock_path_for(path));
  scope.succeed();
  result.status = UpdateStatus::updated;
  return result;
}

}  // namespace onnx_light::tune
