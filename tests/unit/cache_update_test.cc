#include <fcntl.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <thread>

#include <doctest/doctest.h>
#include <fmt/format.h>

#include "onnx_light/runtime/error.h"
#include "onnx_light/tune/cache_path.h"
#include "onnx_light/tune/cache_update.h"
#include "tune_fixture.h"

using namespace onnx_light;
using namespace onnx_light::tune;
using tune_test::Fixture;
using tune_test::read_text;
using tune_test::write_text;

namespace {

UpdateOptions options_for(const Fixture& f, bool prune = false) {
  UpdateOptions options;
  options.kernels = f.table.get();
  options.prune_stale = prune;
  return options;
}

CacheProfile alpha(const Fixture& f, int64_t threads, int64_t minimum = 4096) {
  CacheProfile p = f.profile(tune_test::alpha_schema(1, "portable"), threads);
  p.values["parallel.minimum_elements"] = minimum;
  return p;
}

mode_t mode_of(const std::filesystem::path& path) {
  struct stat info {};
  REQUIRE(::stat(path.c_str(), &info) == 0);
  return info.st_mode & 07777;
}

}  // namespace

TEST_CASE("update_creates_missing_parent_directories") {
  Fixture f;
  const auto path = f.dir / "a" / "b" / "kernel_tuning.cache";
  const UpdateResult result = write_profiles(path, {alpha(f, 2)}, options_for(f));
  REQUIRE(result.status == UpdateStatus::updated);
  CHECK(result.updated.size() == 1);
  const CacheFile file = read_cache_file(path);
  CHECK(file.status == FileStatus::loaded);
  CHECK(file.profiles.size() == 1);
  // Only the cache and its lock: no temporary file left.
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(path.parent_path())) names.push_back(entry.path().filename());
  std::sort(names.begin(), names.end());
  CHECK(names == std::vector<std::string>{"kernel_tuning.cache", "kernel_tuning.cache.lock"});
}

TEST_CASE("update_merges_by_key_and_host_and_preserves_other_hosts") {
  Fixture f;
  CacheProfile other_machine = alpha(f, 2, 111);
  other_machine.host.vendor = "intel";
  REQUIRE(write_profiles(f.cache, {alpha(f, 2, 100), alpha(f, 4, 400), other_machine}, options_for(f)).ok());
  const UpdateResult result = write_profiles(f.cache, {alpha(f, 2, 200)}, options_for(f));
  REQUIRE(result.ok());
  CHECK(result.updated.size() == 1);
  CHECK(result.preserved.size() == 2);
  const CacheFile file = read_cache_file(f.cache);
  REQUIRE(file.profiles.size() == 3);
  std::map<std::pair<std::string, int64_t>, int64_t> minimum;
  for (const auto& p : file.profiles) {
    minimum[{p.host.vendor, p.host.effective_threads}] = std::get<int64_t>(p.values.at("parallel.minimum_elements"));
  }
  CHECK(minimum[{"amd", 2}] == 200);
  CHECK(minimum[{"amd", 4}] == 400);
  CHECK(minimum[{"intel", 2}] == 111);
}

TEST_CASE("update_many_profiles_in_one_locked_write_last_duplicate_wins") {
  Fixture f;
  std::vector<CacheProfile> batch;
  for (int64_t threads = 1; threads <= 10; ++threads) batch.push_back(alpha(f, threads, threads));
  batch.push_back(alpha(f, 3, 333));
  const UpdateResult result = write_profiles(f.cache, batch, options_for(f));
  REQUIRE(result.ok());
  CHECK(result.updated.size() == 10);
  const CacheFile file = read_cache_file(f.cache);
  REQUIRE(file.profiles.size() == 10);
  for (const auto& p : file.profiles) {
    if (p.host.effective_threads == 3) CHECK(std::get<int64_t>(p.values.at("parallel.minimum_elements")) == 333);
  }
}

TEST_CASE("update_prunes_stale_only_on_request") {
  Fixture f;
  CacheProfile stale = alpha(f, 2);
  stale.key.tuning_abi = 1;
  REQUIRE(write_profiles(f.cache, {stale}, options_for(f)).ok());
  UpdateResult kept = write_profiles(f.cache, {alpha(f, 2)}, options_for(f));
  REQUIRE(kept.ok());
  CHECK(kept.pruned.empty());
  CHECK(read_cache_file(f.cache).profiles.size() == 2);
  UpdateResult pruned = write_profiles(f.cache, {alpha(f, 4)}, options_for(f, true));
  REQUIRE(pruned.ok());
  REQUIRE(pruned.pruned.size() == 1);
  CHECK(pruned.pruned[0].key.tuning_abi == 1);
  const CacheFile file = read_cache_file(f.cache);
  CHECK(file.profiles.size() == 2);
  for (const auto& p : file.profiles) CHECK(p.key.tuning_abi == 3);
}

TEST_CASE("update_never_overwrites_a_malformed_cache") {
  Fixture f;
  const std::string bytes = "format = \"onnx-light-kernel-tuning\"\nformat_version = 99\n[[profile]]\nkernel = 1\n";
  write_text(f.cache, bytes);
  const auto before = f.dir.entries();
  const UpdateResult result = write_profiles(f.cache, {alpha(f, 2)}, options_for(f));
  CHECK(result.status == UpdateStatus::malformed);
  CHECK(result.updated.empty());
  REQUIRE_FALSE(result.diagnostics.empty());
  CHECK(result.diagnostics[0].message.find("left unchanged") != std::string::npos);
  CHECK(read_text(f.cache) == bytes);
  CHECK(f.dir.entries() == before);  // no lock or temporary file left behind
}

TEST_CASE("update_unreadable_cache_reports_unreadable_and_leaves_nothing") {
  Fixture f;
  std::filesystem::create_directory(f.cache);  // a directory where the cache should be
  const auto before = f.dir.entries();
  const UpdateResult result = write_profiles(f.cache, {alpha(f, 2)}, options_for(f));
  CHECK(result.status == UpdateStatus::unreadable);
  CHECK(f.dir.entries() == before);
  CHECK(std::filesystem::is_directory(f.cache));
}

TEST_CASE("update_read_only_directory") {
  Fixture f;
  const auto dir = f.dir / "ro";
  std::filesystem::create_directory(dir);
  const auto path = dir / "kernel_tuning.cache";
  REQUIRE(write_profiles(path, {alpha(f, 2)}, options_for(f)).ok());
  const std::string bytes = read_text(path);
  ::chmod(dir.c_str(), 0555);
  const UpdateResult result = write_profiles(path, {alpha(f, 4)}, options_for(f));
  ::chmod(dir.c_str(), 0755);
  CHECK(result.status == UpdateStatus::read_only);
  CHECK(result.diagnostics.at(0).message.find("write-protected") != std::string::npos);
  CHECK(read_text(path) == bytes);
}

TEST_CASE("update_write_protected_file_is_read_only") {
  Fixture f;
  REQUIRE(write_profiles(f.cache, {alpha(f, 2)}, options_for(f)).ok());
  const std::string bytes = read_text(f.cache);
  ::chmod(f.cache.c_str(), 0444);
  const auto before = f.dir.entries();
  const UpdateResult result = write_profiles(f.cache, {alpha(f, 4)}, options_for(f));
  CHECK(result.status == UpdateStatus::read_only);
  CHECK(read_text(f.cache) == bytes);
  CHECK(f.dir.entries() == before);
  CHECK(mode_of(f.cache) == 0444);
}

TEST_CASE("update_write_failed_when_the_directory_cannot_exist") {
  Fixture f;
  write_text(f.dir / "plain_file", "x");
  const auto before = f.dir.entries();
  const UpdateResult result = write_profiles(f.dir / "plain_file" / "sub" / "k.cache", {alpha(f, 2)}, options_for(f));
  CHECK(result.status == UpdateStatus::write_failed);
  CHECK_FALSE(result.diagnostics.empty());
  CHECK(f.dir.entries() == before);
}

TEST_CASE("update_write_failed_mid_write_keeps_old_bytes_and_removes_temporary") {
  Fixture f;
  REQUIRE(write_profiles(f.cache, {alpha(f, 1)}, options_for(f)).ok());
  const std::string bytes = read_text(f.cache);
  const auto before = f.dir.entries();
  std::vector<CacheProfile> big;
  for (int64_t threads = 1; threads <= 200; ++threads) big.push_back(alpha(f, threads, 7));
  // A file size limit makes write() fail with EFBIG part way through the temporary file.
  struct rlimit old_limit {};
  REQUIRE(::getrlimit(RLIMIT_FSIZE, &old_limit) == 0);
  auto old_handler = std::signal(SIGXFSZ, SIG_IGN);
  struct rlimit small = old_limit;
  small.rlim_cur = 4096;
  REQUIRE(::setrlimit(RLIMIT_FSIZE, &small) == 0);
  const UpdateResult result = write_profiles(f.cache, big, options_for(f));
  ::setrlimit(RLIMIT_FSIZE, &old_limit);
  std::signal(SIGXFSZ, old_handler);
  CHECK(result.status == UpdateStatus::write_failed);
  CHECK(result.updated.empty());
  CHECK(result.diagnostics.at(0).message.find("the cache is unchanged") != std::string::npos);
  CHECK(read_text(f.cache) == bytes);
  CHECK(f.dir.entries() == before);
}

TEST_CASE("update_edit_that_throws_writes_nothing_and_leaves_nothing") {
  Fixture f;
  const auto path = f.dir / "new" / "k.cache";
  CHECK_THROWS_AS(update_cache(
                      path, [](const CacheFile&) -> CacheEdit { throw InvalidValueError("refused"); }, options_for(f)),
                  InvalidValueError);
  CHECK_FALSE(std::filesystem::exists(f.dir / "new"));
}

TEST_CASE("update_refuses_profiles_that_cannot_be_written") {
  Fixture f;
  CacheProfile bad = alpha(f, 2);
  bad.values["mode"] = std::string("\xff invalid utf-8");
  CHECK_THROWS_AS(write_profiles(f.cache, {bad}, options_for(f)), InvalidValueError);
  CacheProfile no_threads = alpha(f, 2);
  no_threads.host.effective_threads = 0;
  CHECK_THROWS_AS(write_profiles(f.cache, {no_threads}, options_for(f)), InvalidValueError);
  CHECK(f.dir.entries().empty());
}

TEST_CASE("update_with_nothing_to_change_creates_nothing") {
  Fixture f;
  const UpdateResult result = update_cache(f.cache, [](const CacheFile&) { return CacheEdit{}; }, options_for(f));
  CHECK(result.ok());
  CHECK(f.dir.entries().empty());
}

TEST_CASE("update_removes_orphaned_temporary_files_of_killed_writers") {
  Fixture f;
  write_text(f.dir / "kernel_tuning.cache.tmp-12345-0", "half a file");
  write_text(f.dir / "unrelated.tmp-1", "keep me");
  REQUIRE(write_profiles(f.cache, {alpha(f, 2)}, options_for(f)).ok());
  CHECK(f.dir.entries() ==
        std::vector<std::string>{"kernel_tuning.cache", "kernel_tuning.cache.lock", "unrelated.tmp-1"});
}

TEST_CASE("update_keeps_the_cache_file_mode") {
  Fixture f;
  REQUIRE(write_profiles(f.cache, {alpha(f, 1)}, options_for(f)).ok());
  ::chmod(f.cache.c_str(), 0600);
  REQUIRE(write_profiles(f.cache, {alpha(f, 2)}, options_for(f)).ok());
  CHECK(mode_of(f.cache) == 0600);
}

TEST_CASE("update_through_a_symlink_replaces_the_target") {
  Fixture f;
  const auto target = f.dir / "real.cache";
  REQUIRE(write_profiles(target, {alpha(f, 1)}, options_for(f)).ok());
  std::filesystem::create_symlink(target, f.dir / "link.cache");
  REQUIRE(write_profiles(f.dir / "link.cache", {alpha(f, 2)}, options_for(f)).ok());
  CHECK(std::filesystem::is_symlink(f.dir / "link.cache"));
  CHECK(read_cache_file(target).profiles.size() == 2);
}

TEST_CASE("update_through_a_dangling_symlink_of_ones_own_creates_the_target") {
  Fixture f;
  std::filesystem::create_directory(f.dir / "real");
  std::filesystem::create_symlink("real/k.cache", f.dir / "link.cache");  // relative, dangling
  REQUIRE(write_profiles(f.dir / "link.cache", {alpha(f, 2)}, options_for(f)).ok());
  CHECK(std::filesystem::is_symlink(f.dir / "link.cache"));
  CHECK(read_cache_file(f.dir / "real" / "k.cache").profiles.size() == 1);
  CHECK(check_cache_writable(f.dir / "link.cache").ok());
}

TEST_CASE("update_keeps_unreadable_profiles_of_the_file") {
  Fixture f;
  REQUIRE(write_profiles(f.cache, {alpha(f, 1)}, options_for(f)).ok());
  write_text(f.cache, read_text(f.cache) + "\n[[profile]]\nkernel = 42\n");
  REQUIRE(write_profiles(f.cache, {alpha(f, 2)}, options_for(f)).ok());
  const CacheFile file = read_cache_file(f.cache);
  REQUIRE(file.profiles.size() == 3);
  CHECK_FALSE(file.profiles[2].readable());
  CHECK(file.profiles[2].raw_toml.find("\"kernel\" = 42") != std::string::npos);
}

TEST_CASE("update_erase_removes_matching_profiles") {
  Fixture f;
  REQUIRE(write_profiles(f.cache, {alpha(f, 1), alpha(f, 2), alpha(f, 3)}, options_for(f)).ok());
  const UpdateResult result = update_cache(
      f.cache,
      [](const CacheFile&) {
        CacheEdit edit;
        edit.erase = [](const CacheProfile& p) { return p.host.effective_threads == 2; };
        return edit;
      },
      options_for(f));
  REQUIRE(result.ok());
  CHECK(result.removed.size() == 1);
  CHECK(result.preserved.size() == 2);
  CHECK(read_cache_file(f.cache).profiles.size() == 2);
}

TEST_CASE("update_concurrent_writers_in_threads_lose_nothing") {
  Fixture f;
  constexpr int kThreads = 4;
  constexpr int kEach = 25;
  std::vector<std::thread> writers;
  std::atomic<int> failures{0};
  for (int t = 0; t < kThreads; ++t) {
    writers.emplace_back([&, t] {
      for (int i = 0; i < kEach; ++i) {
        if (!write_profiles(f.cache, {alpha(f, 1 + t * kEach + i)}, options_for(f)).ok()) ++failures;
      }
    });
  }
  for (auto& w : writers) w.join();
  CHECK(failures == 0);
  const CacheFile file = read_cache_file(f.cache);
  CHECK(file.status == FileStatus::loaded);
  CHECK(file.profiles.size() == kThreads * kEach);
}

TEST_CASE("remove_cache_file_deletes_cache_and_lock") {
  Fixture f;
  REQUIRE(write_profiles(f.cache, {alpha(f, 1)}, options_for(f)).ok());
  RemoveFileResult removed = remove_cache_file(f.cache);
  CHECK(removed.status == UpdateStatus::updated);
  CHECK(removed.existed);
  CHECK(removed.removed_files.size() == 2);
  CHECK(f.dir.entries().empty());
  RemoveFileResult again = remove_cache_file(f.cache);
  CHECK_FALSE(again.existed);
  CHECK(again.status == UpdateStatus::updated);
}

TEST_CASE("remove_cache_file_refuses_write_protected_directory") {
  Fixture f;
  const auto dir = f.dir / "ro";
  std::filesystem::create_directory(dir);
  REQUIRE(write_profiles(dir / "k.cache", {alpha(f, 1)}, options_for(f)).ok());
  ::chmod(dir.c_str(), 0555);
  RemoveFileResult removed = remove_cache_file(dir / "k.cache");
  ::chmod(dir.c_str(), 0755);
  CHECK(removed.status == UpdateStatus::read_only);
  CHECK(std::filesystem::exists(dir / "k.cache"));
}

TEST_CASE("check_cache_writable_answers_as_an_update_would_without_writing") {
  Fixture f;
  // Missing nested directories: writable (they would be created), and nothing is created now.
  const auto nested = f.dir / "a" / "b" / "kernel_tuning.cache";
  CHECK(check_cache_writable(nested).ok());
  CHECK_FALSE(std::filesystem::exists(f.dir / "a"));
  // Malformed: reported as update_cache would, bytes untouched.
  write_text(f.cache, "not [ toml\n");
  const UpdateResult malformed = check_cache_writable(f.cache);
  CHECK(malformed.status == UpdateStatus::malformed);
  CHECK(malformed.diagnostics.at(0).message.find("malformed") != std::string::npos);
  CHECK(read_text(f.cache) == "not [ toml\n");
  // A write-protected directory, even for a cache that does not exist yet.
  const auto dir = f.dir / "ro";
  std::filesystem::create_directory(dir);
  ::chmod(dir.c_str(), 0555);
  const UpdateResult read_only = check_cache_writable(dir / "kernel_tuning.cache");
  ::chmod(dir.c_str(), 0755);
  CHECK(read_only.status == UpdateStatus::read_only);
  // A write-protected file.
  const auto file = f.dir / "protected.cache";
  REQUIRE(write_profiles(file, {alpha(f, 2)}, options_for(f)).ok());
  ::chmod(file.c_str(), 0444);
  CHECK(check_cache_writable(file).status == UpdateStatus::read_only);
  ::chmod(file.c_str(), 0644);
  CHECK(check_cache_writable(file).ok());
}

TEST_CASE("update_tells_once_when_it_waits_for_the_lock_then_writes") {
  Fixture f;
  const auto lock = lock_path_for(f.cache);
  const int holder = ::open(lock.c_str(), O_RDONLY | O_CREAT, 0644);
  REQUIRE(holder >= 0);
  REQUIRE(::flock(holder, LOCK_EX) == 0);  // another open file description: the update must wait
  std::thread release([holder] {
    std::this_thread::sleep_for(std::chrono::milliseconds(kLockWaitNoticeMs + 400));
    ::flock(holder, LOCK_UN);
  });
  std::atomic<int> notices{0};
  std::filesystem::path named;
  UpdateOptions options = options_for(f);
  options.on_lock_wait = [&](const std::filesystem::path& lock_file) {
    ++notices;
    named = lock_file;
  };
  const auto start = std::chrono::steady_clock::now();
  const UpdateResult result = write_profiles(f.cache, {alpha(f, 2)}, options);
  const auto waited = std::chrono::steady_clock::now() - start;
  release.join();
  ::close(holder);
  CHECK(result.ok());
  CHECK(notices == 1);
  CHECK(named == lock);
  CHECK(waited >= std::chrono::milliseconds(kLockWaitNoticeMs));
}

TEST_CASE("update_gives_up_after_the_lock_timeout_naming_the_lock_and_its_holder") {
  Fixture f;
  REQUIRE(write_profiles(f.cache, {alpha(f, 2)}, options_for(f)).ok());
  const std::string bytes = read_text(f.cache);
  const auto lock = lock_path_for(f.cache);
  const int holder = ::open(lock.c_str(), O_RDONLY | O_CREAT, 0644);
  REQUIRE(holder >= 0);
  REQUIRE(::flock(holder, LOCK_EX) == 0);
  // /proc/locks names this process as the holder (without /proc the holder is not told).
  const bool proc_locks = std::filesystem::exists("/proc/locks");
  CHECK(lock_holder(lock).find(proc_locks ? fmt::format("pid {}", ::getpid()) : std::string()) == 0);
  UpdateOptions options = options_for(f);
  options.lock_timeout_ms = 200;
  const auto start = std::chrono::steady_clock::now();
  const UpdateResult result = write_profiles(f.cache, {alpha(f, 4)}, options);
  const auto waited = std::chrono::steady_clock::now() - start;
  CHECK(result.status == UpdateStatus::lock_timeout);
  REQUIRE(result.diagnostics.size() == 1);
  const std::string& message = result.diagnostics[0].message;
  CHECK(message.find(lock.string()) != std::string::npos);
  CHECK((message.find(fmt::format("held by pid {}", ::getpid())) != std::string::npos) == proc_locks);
  CHECK(waited >= std::chrono::milliseconds(200));
  CHECK(waited < std::chrono::milliseconds(5000));
  CHECK(read_text(f.cache) == bytes);
  // remove_cache_file waits the same way.
  CHECK(remove_cache_file(f.cache, options).status == UpdateStatus::lock_timeout);
  CHECK(std::filesystem::exists(f.cache));
  ::flock(holder, LOCK_UN);
  ::close(holder);
  CHECK(lock_holder(lock).empty());
  CHECK(write_profiles(f.cache, {alpha(f, 4)}, options).ok());
}

TEST_CASE("update_without_contention_does_not_tell_about_the_lock") {
  Fixture f;
  int notices = 0;
  UpdateOptions options = options_for(f);
  options.on_lock_wait = [&](const std::filesystem::path&) { ++notices; };
  CHECK(write_profiles(f.cache, {alpha(f, 2)}, options).ok());
  CHECK(notices == 0);
}
