// export, import, merge and diff of cache files (issue 21, "Moving caches"), through the real
// reader, validation and locked update: round trips, order independence, conflicts under each
// policy, and inputs that must change nothing.
#include <algorithm>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include <doctest/doctest.h>
#include <fmt/format.h>

#include "onnx_light/runtime/error.h"
#include "onnx_light/tune/cache_file.h"
#include "onnx_light/tune/cache_transfer.h"
#include "onnx_light/tune/cache_update.h"
#include "tune_fixture.h"

using namespace onnx_light;
using namespace onnx_light::tune;
using tune_test::Fixture;
using tune_test::read_text;
using tune_test::write_text;

namespace {

namespace fs = std::filesystem;

CacheProfile alpha_profile(const Fixture& f, int64_t threads, int64_t minimum, const std::string& written = "2026-12-02T11:39:29Z") {
  CacheProfile p = f.profile(tune_test::alpha_schema(1, "portable"), threads);
  p.values["parallel.minimum_elements"] = minimum;
  p.provenance.written = written;
  return p;
}

CacheProfile beta(const Fixture& f, int64_t threads, int64_t tile) {
  CacheProfile p = f.profile(tune_test::beta_schema(), threads);
  p.values["tile.size"] = tile;
  return p;
}

HostDescriptor other_machine(const Fixture& f, int64_t stepping) {
  HostDescriptor host = f.machine;
  host.stepping = stepping;
  return host;
}

CacheProfile on_host(CacheProfile p, const HostDescriptor& host) {
  const int64_t threads = p.host.effective_threads;
  p.host = host.with_threads(threads);
  return p;
}

// A cache file written by the real writer.
fs::path write_cache(const fs::path& path, std::vector<CacheProfile> profiles) {
  const UpdateResult result = write_profiles(path, std::move(profiles));
  REQUIRE(result.ok());
  return path;
}

std::vector<CacheProfile> profiles_of(const fs::path& path) {
  CacheFile file = read_cache_file(path);
  REQUIRE(file.status == FileStatus::loaded);
  return file.profiles;
}

// Key, host, values and provenance of every profile, in order (CacheProfile has no operator==).
bool same_profiles(const std::vector<CacheProfile>& a, const std::vector<CacheProfile>& b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end(), [](const CacheProfile& x, const CacheProfile& y) {
    return x.key == y.key && x.host == y.host && x.values == y.values && x.provenance == y.provenance;
  });
}

int64_t minimum_of(const CacheProfile& p) { return std::get<int64_t>(p.values.at("parallel.minimum_elements")); }

// What an import or merge must leave as it was: the cache's bytes and the directory's names.
struct Snapshot {
  std::string text;
  std::vector<std::string> entries;
  bool operator==(const Snapshot&) const = default;
};
Snapshot snapshot(const Fixture& f, const fs::path& cache) { return {read_text(cache), f.dir.entries()}; }

}  // namespace

TEST_CASE("export_then_import_into_an_empty_cache_gives_the_same_profiles") {
  Fixture f;
  const HostDescriptor foreign = other_machine(f, 7);
  write_cache(f.cache, {alpha_profile(f, 1, 1000), alpha_profile(f, 2, 2000), beta(f, 2, 64), on_host(alpha_profile(f, 4, 3000), foreign)});

  SUBCASE("this machine's profiles, every thread count") {
    ExportOptions exporting;
    exporting.path = f.cache.string();
    exporting.output = (f.dir / "mine.cache").string();
    const ExportReport exported = export_kernel_tuning_cache(exporting, f.context());
    REQUIRE(exported.status == "exported");
    CHECK(exported.profiles.size() == 3);
    CHECK(exported.skipped == 0);
    REQUIRE(exported.host);
    CHECK(exported.host->same_machine(f.machine));
    CHECK(exported.to_json()["exported_count"] == 3);
    // A new output leaves no lock file behind.
    CHECK(!fs::exists(f.dir / "mine.cache.lock"));

    ImportOptions importing;
    importing.files = {exporting.output};
    importing.path = (f.dir / "fresh" / "kernel_tuning.cache").string();
    const ImportReport imported = import_kernel_tuning_cache(importing, f.context());
    REQUIRE(imported.status == "imported");
    CHECK(imported.added.size() == 3);
    CHECK(imported.replaced.empty());
    CHECK(imported.kept.empty());
    CHECK(imported.conflicts.empty());

    std::vector<CacheProfile> original = profiles_of(f.cache);
    original.erase(std::remove_if(original.begin(), original.end(),
                                  [&](const CacheProfile& p) { return !p.host.same_machine(f.machine); }),
                   original.end());
    CHECK(original.size() == 3);
    CHECK(same_profiles(profiles_of(importing.path), original));
  }

  SUBCASE("every host: the same bytes as the cache") {
    ExportOptions exporting;
    exporting.path = f.cache.string();
    exporting.output = (f.dir / "all.cache").string();
    exporting.all_hosts = true;
    const ExportReport exported = export_kernel_tuning_cache(exporting, f.context());
    REQUIRE(exported.status == "exported");
    CHECK(exported.profiles.size() == 4);
    CHECK(!exported.host);
    CHECK(read_text(exporting.output) == read_text(f.cache));

    ImportOptions importing;
    importing.files = {exporting.output};
    importing.path = (f.dir / "fresh.cache").string();
    REQUIRE(import_kernel_tuning_cache(importing, f.context()).status == "imported");
    CHECK(read_text(importing.path) == read_text(f.cache));
    // Importing the same file again changes nothing: every profile is kept.
    const ImportReport again = import_kernel_tuning_cache(importing, f.context());
    CHECK(again.status == "unchanged");
    CHECK(again.kept.size() == 4);
    CHECK(again.added.empty());
    CHECK(read_text(importing.path) == read_text(f.cache));
  }
}

TEST_CASE("export_selects_by_host_threads_and_key_and_leaves_out_what_an_import_would_refuse") {
  Fixture f;
  const HostDescriptor foreign = other_machine(f, 7);
  CacheProfile broken = alpha_profile(f, 1, -5);  // out of the schema's range
  write_cache(f.cache, {alpha_profile(f, 2, 2000), beta(f, 2, 64), on_host(alpha_profile(f, 4, 3000), foreign), broken});
  ExportOptions exporting;
  exporting.path = f.cache.string();
  exporting.output = "-";

  SUBCASE("threads and kernel filters") {
    const std::vector<std::string> entries = f.dir.entries();
    exporting.threads = 2;
    exporting.filter.kernels = {"Alpha"};
    const ExportReport report = export_kernel_tuning_cache(exporting, f.context());
    REQUIRE(report.profiles.size() == 1);
    CHECK(minimum_of(report.profiles[0]) == 2000);
    CHECK(report.skipped == 0);  // the broken profile is for 1 thread: not selected
    // "-": the text is returned, nothing written.
    CHECK(same_profiles(parse_cache_text(report.text, "x").profiles, report.profiles));
    CHECK(f.dir.entries() == entries);
  }
  SUBCASE("an invalid profile is left out with a diagnostic naming it") {
    const ExportReport report = export_kernel_tuning_cache(exporting, f.context());
    CHECK(report.profiles.size() == 2);
    CHECK(report.skipped == 1);
    REQUIRE(report.diagnostics.size() == 1);
    CHECK(report.diagnostics[0].message.find("profile 0") != std::string::npos);  // sorted: 1 thread first
    CHECK(report.diagnostics[0].message.find("parallel.minimum_elements") != std::string::npos);
  }
  SUBCASE("another host, as --as-host does") {
    OperationContext context = f.context();
    context.machine = foreign.with_threads(4);
    const ExportReport report = export_kernel_tuning_cache(exporting, context);
    REQUIRE(report.profiles.size() == 1);
    CHECK(minimum_of(report.profiles[0]) == 3000);
  }
  SUBCASE("nothing selected: an empty cache and a diagnostic") {
    exporting.threads = 16;
    exporting.output = (f.dir / "empty.cache").string();
    const ExportReport report = export_kernel_tuning_cache(exporting, f.context());
    CHECK(report.status == "exported");
    CHECK(report.profiles.empty());
    REQUIRE(fs::exists(exporting.output));
    CHECK(read_cache_file(exporting.output).status == FileStatus::loaded);
    CHECK(report.diagnostics.back().message.find("no profile") != std::string::npos);
  }
  SUBCASE("an unknown kernel, a missing cache") {
    exporting.filter.kernels = {"Gamma"};
    CHECK_THROWS_AS(export_kernel_tuning_cache(exporting, f.context()), NotFoundError);
    exporting.filter.kernels.clear();
    exporting.path = (f.dir / "absent.cache").string();
    CHECK_THROWS_WITH_AS(export_kernel_tuning_cache(exporting, f.context()),
                         doctest::Contains("absent.cache: no such cache file"), NotFoundError);
  }
  SUBCASE("an output that is not a cache is never overwritten") {
    exporting.output = (f.dir / "notes.txt").string();
    write_text(exporting.output, "not a cache\n");
    const ExportReport report = export_kernel_tuning_cache(exporting, f.context());
    CHECK(report.status == "malformed");
    CHECK(read_text(exporting.output) == "not a cache\n");
    CHECK(!fs::exists(exporting.output + ".lock"));
  }
}

TEST_CASE("merge_is_order_independent_and_idempotent_without_conflicts") {
  Fixture f;
  const HostDescriptor b_host = other_machine(f, 1);
  const HostDescriptor c_host = other_machine(f, 2);
  // A and B share one profile with equal values and different provenance; C shares one with A
  // with the very same provenance.
  const fs::path a = write_cache(f.dir / "a.cache", {alpha_profile(f, 1, 1000), alpha_profile(f, 2, 2000, "2026-12-01T00:00:00Z")});
  const fs::path b = write_cache(f.dir / "b.cache",
                                 {alpha_profile(f, 2, 2000, "2026-12-05T00:00:00Z"), on_host(beta(f, 2, 16), b_host)});
  const fs::path c = write_cache(f.dir / "c.cache", {alpha_profile(f, 1, 1000), on_host(alpha_profile(f, 8, 8000), c_host)});
  std::vector<std::string> files{a.string(), b.string(), c.string()};
  std::sort(files.begin(), files.end());
  std::string first;
  int orders = 0;
  do {
    MergeOptions merging;
    merging.files = files;
    merging.output = (f.dir / fmt::format("merged-{}.cache", orders)).string();
    const MergeReport report = merge_kernel_tuning_caches(merging, f.context());
    REQUIRE(report.status == "merged");
    CHECK(report.conflicts.empty());
    CHECK(report.profile_count == 4);
    const std::string text = read_text(merging.output);
    if (orders++ == 0) first = text;
    CHECK(text == first);
  } while (std::next_permutation(files.begin(), files.end()));
  CHECK(orders == 6);
  // Of equal values the newest provenance is kept.
  const auto merged = profiles_of(f.dir / "merged-0.cache");
  const auto shared = std::find_if(merged.begin(), merged.end(), [](const CacheProfile& p) {
    return p.key.kernel == "Alpha" && p.host.effective_threads == 2;
  });
  REQUIRE(shared != merged.end());
  CHECK(shared->provenance.written == "2026-12-05T00:00:00Z");

  // merge(X, X) == X, byte for byte, and "-" gives the same text without writing.
  const fs::path x = f.dir / "merged-0.cache";
  MergeOptions twice;
  twice.files = {x.string(), x.string()};
  twice.output = "-";
  const MergeReport same = merge_kernel_tuning_caches(twice, f.context());
  REQUIRE(same.status == "merged");
  CHECK(same.text == read_text(x));
  CHECK(!fs::exists(f.dir / "-"));
}

TEST_CASE("a_conflict_is_reported_with_both_sides_and_resolved_by_the_policy") {
  Fixture f;
  // In the cache: 1000, written 12:30 at +02:00 (10:30 UTC). Imported: 5000, written 11:00 UTC:
  // later, though it sorts first as text.
  const CacheProfile old_profile = alpha_profile(f, 2, 1000, "2026-12-02T12:30:00+02:00");
  CacheProfile new_profile = alpha_profile(f, 2, 5000, "2026-12-02T11:00:00Z");
  new_profile.provenance.hostname = "build-07";
  const fs::path incoming = write_cache(f.dir / "incoming.cache", {new_profile, alpha_profile(f, 1, 300)});

  auto import_with = [&](ConflictPolicy policy) {
    write_cache(f.cache, {old_profile});
    ImportOptions importing;
    importing.files = {incoming.string()};
    importing.path = f.cache.string();
    importing.on_conflict = policy;
    return import_kernel_tuning_cache(importing, f.context());
  };
  auto cached_minimum = [&] {
    for (const auto& p : profiles_of(f.cache))
      if (p.host.effective_threads == 2) return minimum_of(p);
    FAIL("no 2-thread profile");
    return int64_t{0};
  };

  SUBCASE("keep") {
    const ImportReport report = import_with(ConflictPolicy::keep);
    CHECK(report.status == "imported");  // the 1-thread profile is added
    REQUIRE(report.conflicts.size() == 1);
    const ProfileConflict& conflict = report.conflicts[0];
    CHECK(conflict.resolution == "kept");
    CHECK(minimum_of(conflict.existing.profile) == 1000);
    CHECK(conflict.existing.profile.provenance.written == "2026-12-02T12:30:00+02:00");
    CHECK(conflict.existing.source == f.cache.string());
    CHECK(minimum_of(conflict.incoming.profile) == 5000);
    CHECK(conflict.incoming.profile.provenance.hostname == "build-07");
    CHECK(conflict.incoming.source == incoming.string());
    CHECK(conflict.incoming.index == 1);  // the file is sorted: the 1-thread profile comes first
    const nlohmann::json json = conflict.to_json();
    CHECK(json["existing"]["values"]["parallel.minimum_elements"] == 1000);
    CHECK(json["incoming"]["values"]["parallel.minimum_elements"] == 5000);
    CHECK(json["incoming"]["provenance"]["hostname"] == "build-07");
    CHECK(json["effective_threads"] == 2);
    CHECK(report.added.size() == 1);
    CHECK(report.kept.size() == 1);
    CHECK(cached_minimum() == 1000);
  }
  SUBCASE("replace") {
    const ImportReport report = import_with(ConflictPolicy::replace);
    REQUIRE(report.conflicts.size() == 1);
    CHECK(report.conflicts[0].resolution == "replaced");
    CHECK(report.replaced.size() == 1);
    CHECK(cached_minimum() == 5000);
  }
  SUBCASE("newest: instants, not text") {
    const ImportReport report = import_with(ConflictPolicy::newest);
    REQUIRE(report.conflicts.size() == 1);
    CHECK(report.conflicts[0].resolution == "replaced");
    CHECK(cached_minimum() == 5000);
  }
  SUBCASE("newest: an older import is kept out") {
    write_cache(f.dir / "older.cache", {alpha_profile(f, 2, 7000, "2026-12-02T10:00:00Z")});
    write_cache(f.cache, {old_profile});
    ImportOptions importing;
    importing.files = {(f.dir / "older.cache").string()};
    importing.path = f.cache.string();
    importing.on_conflict = ConflictPolicy::newest;
    const ImportReport report = import_kernel_tuning_cache(importing, f.context());
    CHECK(report.status == "unchanged");
    REQUIRE(report.conflicts.size() == 1);
    CHECK(report.conflicts[0].resolution == "kept");
    CHECK(cached_minimum() == 1000);
  }
  SUBCASE("fail: nothing written") {
    write_cache(f.cache, {old_profile});
    const Snapshot before = snapshot(f, f.cache);
    ImportOptions importing;
    importing.files = {incoming.string()};
    importing.path = f.cache.string();
    importing.on_conflict = ConflictPolicy::fail;
    const ImportReport report = import_kernel_tuning_cache(importing, f.context());
    CHECK(report.status == "conflict");
    CHECK(!report.ok());
    REQUIRE(report.conflicts.size() == 1);
    CHECK(report.conflicts[0].resolution == "unresolved");
    CHECK(report.added.empty());
    CHECK(snapshot(f, f.cache) == before);
  }
  SUBCASE("merge: fail by default, keep the first, replace with the last") {
    const fs::path mine = write_cache(f.dir / "mine.cache", {old_profile});
    MergeOptions merging;
    merging.files = {mine.string(), incoming.string()};
    merging.output = (f.dir / "out.cache").string();
    const MergeReport failed = merge_kernel_tuning_caches(merging, f.context());
    CHECK(failed.status == "conflict");
    REQUIRE(failed.conflicts.size() == 1);
    CHECK(failed.conflicts[0].resolution == "unresolved");
    CHECK(minimum_of(failed.conflicts[0].existing.profile) == 1000);
    CHECK(minimum_of(failed.conflicts[0].incoming.profile) == 5000);
    CHECK(!fs::exists(merging.output));
    for (const auto& item : {std::pair{ConflictPolicy::keep, int64_t{1000}},
                             std::pair{ConflictPolicy::replace, int64_t{5000}},
                             std::pair{ConflictPolicy::newest, int64_t{5000}}}) {
      const ConflictPolicy policy = item.first;
      const int64_t expected = item.second;
      CAPTURE(conflict_policy_name(policy));
      merging.on_conflict = policy;
      REQUIRE(merge_kernel_tuning_caches(merging, f.context()).status == "merged");
      const auto merged = profiles_of(merging.output);
      REQUIRE(merged.size() == 2);
      CHECK(minimum_of(merged[1]) == expected);  // sorted: 1 thread, then 2 threads
    }
  }
}

TEST_CASE("a_malformed_or_partly_invalid_input_changes_nothing_byte_for_byte") {
  Fixture f;
  write_cache(f.cache, {alpha_profile(f, 2, 2000), beta(f, 1, 32)});
  const fs::path good = write_cache(f.dir / "good.cache", {alpha_profile(f, 1, 100), alpha_profile(f, 4, 400)});
  const fs::path single = write_cache(f.dir / "single.cache", {alpha_profile(f, 1, 100)});
  const Snapshot before = snapshot(f, f.cache);
  const std::string good_profile = read_text(single).substr(read_text(single).find("[[profile]]"));
  const std::string header = "format = \"onnx-light-kernel-tuning\"\nformat_version = 1\n\n";

  struct Case {
    const char* name;
    std::string text;
    std::vector<std::string> message;  // every part must be in the error
  };
  std::string out_of_range = good_profile;
  const std::string value = "\"parallel.minimum_elements\" = 100";
  out_of_range.replace(out_of_range.find(value), value.size(), "\"parallel.minimum_elements\" = -3");
  out_of_range.replace(out_of_range.find("effective_threads = 1"), 21, "effective_threads = 3");
  std::string no_threads = good_profile;
  no_threads.erase(no_threads.find("effective_threads = 1"), std::string("effective_threads = 1").size());
  std::string unknown_parameter = good_profile;
  unknown_parameter.insert(unknown_parameter.find("[profile.provenance]"), "\"parallel.maximum\" = 3\n");
  const std::vector<Case> cases{
      {"not TOML", "[[profile\n", {"bad.cache is malformed", "not valid TOML"}},
      {"another format", "format = \"something-else\"\nformat_version = 1\n", {"bad.cache is malformed", "'format'"}},
      {"a newer version", "format = \"onnx-light-kernel-tuning\"\nformat_version = 99\n", {"bad.cache is malformed"}},
      {"a value out of range after a good profile", header + good_profile + "\n" + out_of_range,
       {"bad.cache", "profile 1", "parallel.minimum_elements"}},
      {"an unreadable profile", header + no_threads, {"bad.cache", "profile 0", "host.effective_threads"}},
      {"an unknown parameter", header + unknown_parameter, {"bad.cache", "profile 0", "parallel.maximum"}},
      {"the same key and host twice", header + good_profile + "\n" + good_profile,
       {"bad.cache", "profile 1", "same key and host as profile 0"}},
  };
  for (const auto& c : cases) {
    CAPTURE(c.name);
    write_text(f.dir / "bad.cache", c.text);
    const Snapshot with_bad = snapshot(f, f.cache);
    ImportOptions importing;
    importing.files = {good.string(), (f.dir / "bad.cache").string()};  // the good file first
    importing.path = f.cache.string();
    importing.on_conflict = ConflictPolicy::replace;
    try {
      import_kernel_tuning_cache(importing, f.context());
      FAIL("the import did not throw");
    } catch (const InvalidValueError& e) {
      const std::string message = e.what();
      CHECK(message.find("nothing was written") != std::string::npos);
      for (const auto& part : c.message) CHECK_MESSAGE(message.find(part) != std::string::npos, message);
    }
    CHECK(snapshot(f, f.cache) == with_bad);
    CHECK(read_text(f.cache) == before.text);
    MergeOptions merging;
    merging.files = importing.files;
    merging.output = (f.dir / "merged.cache").string();
    CHECK_THROWS_AS(merge_kernel_tuning_caches(merging, f.context()), InvalidValueError);
    CHECK(!fs::exists(merging.output));
  }
  // Every problem of every file is named, not only the first.
  write_text(f.dir / "bad.cache", header + no_threads + "\n" + out_of_range);
  ImportOptions importing;
  importing.files = {(f.dir / "bad.cache").string()};
  importing.path = f.cache.string();
  CHECK_THROWS_WITH_AS(import_kernel_tuning_cache(importing, f.context()), doctest::Contains("2 problems"),
                       InvalidValueError);
  // A missing file: NotFoundError, nothing written.
  importing.files = {good.string(), (f.dir / "absent.cache").string()};
  CHECK_THROWS_AS(import_kernel_tuning_cache(importing, f.context()), NotFoundError);
  CHECK(read_text(f.cache) == before.text);
  // A cache that is not well-formed is never overwritten.
  write_text(f.cache, "[[[ not toml\n");
  importing.files = {good.string()};
  const ImportReport report = import_kernel_tuning_cache(importing, f.context());
  CHECK(report.status == "malformed");
  CHECK(report.added.empty());
  CHECK(read_text(f.cache) == "[[[ not toml\n");
}

TEST_CASE("import_resolves_conflicts_between_its_files_in_order") {
  Fixture f;
  const fs::path first = write_cache(f.dir / "first.cache", {alpha_profile(f, 2, 1000, "2026-12-03T00:00:00Z")});
  const fs::path second = write_cache(f.dir / "second.cache", {alpha_profile(f, 2, 2000, "2026-12-01T00:00:00Z")});
  ImportOptions importing;
  importing.files = {first.string(), second.string()};
  importing.path = f.cache.string();
  importing.on_conflict = ConflictPolicy::replace;
  const ImportReport report = import_kernel_tuning_cache(importing, f.context());
  REQUIRE(report.conflicts.size() == 1);
  CHECK(report.conflicts[0].existing.source == first.string());
  CHECK(report.conflicts[0].incoming.source == second.string());
  REQUIRE(report.added.size() == 1);
  CHECK(report.added[0].source == second.string());
  CHECK(report.kept.size() == 1);
  CHECK(minimum_of(profiles_of(f.cache).at(0)) == 2000);
}

TEST_CASE("diff_lists_added_removed_and_changed_profiles_with_their_values") {
  Fixture f;
  const HostDescriptor foreign = other_machine(f, 3);
  CacheProfile restamped = alpha_profile(f, 1, 100);
  restamped.provenance.written = "2026-12-09T00:00:00Z";
  const fs::path a = write_cache(f.dir / "a.cache", {alpha_profile(f, 1, 100), alpha_profile(f, 2, 200), beta(f, 2, 16)});
  const fs::path b = write_cache(f.dir / "b.cache", {restamped, alpha_profile(f, 2, 250), on_host(beta(f, 2, 16), foreign)});
  const DiffReport report = diff_kernel_tuning_caches({a.string(), b.string()});
  CHECK(!report.identical());
  CHECK(report.a.profiles == 3);
  CHECK(report.unchanged == 1);  // provenance alone is no difference
  REQUIRE(report.added.size() == 1);
  CHECK(report.added[0].profile.host.stepping == 3);
  REQUIRE(report.removed.size() == 1);
  CHECK(report.removed[0].profile.key.kernel == "Beta");
  CHECK(report.removed[0].profile.host.stepping == f.machine.stepping);
  REQUIRE(report.changed.size() == 1);
  CHECK(report.changed[0].changed_values == std::vector<std::string>{"parallel.minimum_elements"});
  CHECK(minimum_of(report.changed[0].a.profile) == 200);
  CHECK(minimum_of(report.changed[0].b.profile) == 250);
  const nlohmann::json json = report.to_json();
  CHECK(json["changed"][0]["a"]["values"]["parallel.minimum_elements"] == 200);
  CHECK(json["changed"][0]["b"]["values"]["parallel.minimum_elements"] == 250);
  CHECK(json["identical"] == false);
  CHECK(diff_kernel_tuning_caches({a.string(), a.string()}).identical());
  CHECK_THROWS_AS(diff_kernel_tuning_caches({a.string(), (f.dir / "none.cache").string()}), NotFoundError);
}

TEST_CASE("merge_and_import_stay_linear_for_a_fleet_of_near_identical_hosts") {
  // 2 x 20,000 profiles of one key whose hosts differ only in stepping and threads, half of them
  // shared: a quadratic lookup takes minutes here (the ctest timeout), a linear one a second.
  Fixture f;
  constexpr int kCount = 20000;
  auto fleet = [&](int from) {
    std::vector<CacheProfile> profiles;
    for (int i = from; i < from + kCount; ++i) {
      profiles.push_back(on_host(alpha_profile(f, 1 + i % 4, 1000), other_machine(f, 1000 + i / 4)));
    }
    return profiles;
  };
  const fs::path a = write_cache(f.dir / "a.cache", fleet(0));
  const fs::path b = write_cache(f.dir / "b.cache", fleet(kCount / 2));
  MergeOptions merging;
  merging.files = {a.string(), b.string()};
  merging.output = (f.dir / "merged.cache").string();
  const MergeReport merged = merge_kernel_tuning_caches(merging, f.context());
  REQUIRE(merged.status == "merged");
  CHECK(merged.profile_count == kCount + kCount / 2);
  ImportOptions importing;
  importing.files = {b.string()};
  importing.path = a.string();
  const ImportReport imported = import_kernel_tuning_cache(importing, f.context());
  CHECK(imported.added.size() == kCount / 2);
  CHECK(imported.kept.size() == kCount / 2);
  CHECK(read_text(a) == read_text(merging.output));
}

TEST_CASE("the_streamed_json_reports_are_to_json_dump_2_byte_for_byte") {
  Fixture f;
  // Every value type, a string with quotes and a backslash, a hostname with a control character.
  CacheProfile rich = alpha_profile(f, 2, 3000);
  rich.values["split.ratio"] = 0.1;
  rich.values["vector.enabled"] = false;
  rich.values["mode"] = std::string("careful \"quoted\"");
  rich.provenance.hostname = "build\\07\t";
  const fs::path a = write_cache(f.dir / "a.cache", {alpha_profile(f, 1, 100), rich, beta(f, 2, 64)});
  CacheProfile changed = rich;
  changed.values["split.ratio"] = 0.75;
  const fs::path b = write_cache(f.dir / "b.cache", {changed, on_host(beta(f, 4, 16), other_machine(f, 9))});
  auto same = [](const auto& report) {
    std::ostringstream streamed;
    report.write_json(streamed);
    CHECK(streamed.str() == report.to_json().dump(2));
  };
  ExportOptions exporting;
  exporting.path = a.string();
  exporting.output = (f.dir / "out.cache").string();
  same(export_kernel_tuning_cache(exporting, f.context()));
  exporting.all_hosts = true;
  exporting.threads = 16;  // nothing: an empty list and a diagnostic
  same(export_kernel_tuning_cache(exporting, f.context()));
  ImportOptions importing;
  importing.files = {b.string(), a.string()};
  importing.path = (f.dir / "cache").string();
  write_cache(importing.path, {alpha_profile(f, 2, 5)});
  const ImportReport imported = import_kernel_tuning_cache(importing, f.context());
  CHECK(imported.conflicts.size() == 2);
  CHECK(!imported.added.empty());
  CHECK(!imported.kept.empty());
  same(imported);
  importing.on_conflict = ConflictPolicy::replace;
  same(import_kernel_tuning_cache(importing, f.context()));
  const DiffReport diff = diff_kernel_tuning_caches({a.string(), b.string()});
  CHECK(!diff.added.empty());
  CHECK(!diff.removed.empty());
  CHECK(!diff.changed.empty());
  same(diff);
  write_text(f.dir / "repeated.cache", read_text(a) + read_text(a).substr(read_text(a).find("[[profile]]")));
  same(diff_kernel_tuning_caches({(f.dir / "repeated.cache").string(), a.string()}));  // with diagnostics
}

TEST_CASE("conflict_policy_names_round_trip") {
  for (auto policy : {ConflictPolicy::fail, ConflictPolicy::keep, ConflictPolicy::replace, ConflictPolicy::newest}) {
    CHECK(parse_conflict_policy(conflict_policy_name(policy)) == policy);
  }
  CHECK_THROWS_WITH_AS(parse_conflict_policy("oldest"), doctest::Contains("fail, keep, replace or newest"),
                       InvalidValueError);
}
