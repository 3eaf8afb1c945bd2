#include <sys/stat.h>

#include <doctest/doctest.h>

#include "onnx_light/runtime/error.h"
#include "onnx_light/runtime/runtime_parameters.h"
#include "onnx_light/tune/cache_update.h"
#include "onnx_light/tune/operations.h"
#include "tune_fixture.h"

using namespace onnx_light;
using namespace onnx_light::tune;
using runtime::TuningValues;
using tune_test::Fixture;
using tune_test::read_text;
using tune_test::write_text;

namespace {

SetOptions set_alpha(const Fixture& f, TuningValues values, int64_t threads = 2) {
  SetOptions options;
  options.kernel = "Alpha";
  options.element_type = 1;
  options.values = std::move(values);
  options.path = f.cache.string();
  options.num_threads = threads;
  return options;
}

const ValueChange& change_of(const SetReport& report, const std::string& name) {
  for (const auto& change : report.changes) {
    if (change.name == name) return change;
  }
  FAIL("no change for " << name);
  throw std::logic_error("unreachable");
}

void write_system_profile(const Fixture& f, const TuningValues& values, int64_t threads) {
  CacheProfile p = f.profile(tune_test::alpha_schema(1, "portable"), threads);
  for (const auto& [name, value] : values) p.values[name] = value;
  UpdateOptions options;
  options.kernels = f.table.get();
  REQUIRE(write_profiles(f.system_cache, {p}, options).ok());
}

}  // namespace

TEST_CASE("set_fills_omitted_values_from_defaults") {
  Fixture f;
  const SetReport report =
      set_kernel_tuning_parameters(set_alpha(f, {{"parallel.minimum_elements", int64_t{1000}}}), f.context());
  REQUIRE(report.status == UpdateStatus::updated);
  CHECK(report.values.at("parallel.minimum_elements") == runtime::TuningValue(int64_t{1000}));
  CHECK(report.values.at("split.ratio") == runtime::TuningValue(0.5));
  CHECK(report.values.at("mode") == runtime::TuningValue(std::string("auto")));
  CHECK(change_of(report, "split.ratio").old_origin == ValueOrigin::default_value);
  CHECK_FALSE(change_of(report, "split.ratio").given);
  CHECK(change_of(report, "parallel.minimum_elements").given);
  CHECK(report.key.implementation == "portable");  // dispatched: no avx2 in the fixture's features
  const CacheFile file = read_cache_file(f.cache);
  REQUIRE(file.profiles.size() == 1);
  CHECK(file.profiles[0].values == report.values);
  CHECK(file.profiles[0].host == f.machine.with_threads(2));
  CHECK(file.profiles[0].provenance.source == "set");
  CHECK(file.profiles[0].provenance.tool_version == "9.9.9");
}

TEST_CASE("set_fills_omitted_values_from_the_cached_profile_of_this_host_and_threads") {
  Fixture f;
  REQUIRE(set_kernel_tuning_parameters(set_alpha(f, {{"split.ratio", 0.25}}), f.context()).status ==
          UpdateStatus::updated);
  const SetReport second = set_kernel_tuning_parameters(set_alpha(f, {{"mode", std::string("fast")}}), f.context());
  REQUIRE(second.status == UpdateStatus::updated);
  CHECK(second.values.at("split.ratio") == runtime::TuningValue(0.25));
  CHECK(change_of(second, "split.ratio").old_origin == ValueOrigin::user_cache);
  CHECK(change_of(second, "mode").old_value == runtime::TuningValue(std::string("auto")));
  // Another thread count is another profile: filled from the defaults.
  const SetReport other = set_kernel_tuning_parameters(set_alpha(f, {{"mode", std::string("fast")}}, 4), f.context());
  CHECK(other.values.at("split.ratio") == runtime::TuningValue(0.5));
  CHECK(read_cache_file(f.cache).profiles.size() == 2);
}

TEST_CASE("set_fills_from_the_system_layer_when_the_user_cache_has_no_profile") {
  Fixture f;
  write_system_profile(f, {{"split.ratio", 0.75}}, 2);
  const SetReport report = set_kernel_tuning_parameters(set_alpha(f, {{"mode", std::string("fast")}}), f.context());
  REQUIRE(report.status == UpdateStatus::updated);
  CHECK(report.values.at("split.ratio") == runtime::TuningValue(0.75));
  CHECK(change_of(report, "split.ratio").old_origin == ValueOrigin::system_cache);
  CHECK(read_cache_file(f.system_cache).profiles.size() == 1);  // the system layer is never written
}

TEST_CASE("set_replaces_an_invalid_cached_value_by_the_default_with_a_diagnostic") {
  Fixture f;
  CacheProfile p = f.profile(tune_test::alpha_schema(1, "portable"), 2);
  p.values["split.ratio"] = 9.0;
  UpdateOptions options;
  options.kernels = f.table.get();
  REQUIRE(write_profiles(f.cache, {p}, options).ok());
  const SetReport report = set_kernel_tuning_parameters(set_alpha(f, {{"mode", std::string("fast")}}), f.context());
  REQUIRE(report.status == UpdateStatus::updated);
  CHECK(report.values.at("split.ratio") == runtime::TuningValue(0.5));
  REQUIRE_FALSE(report.diagnostics.empty());
  CHECK(report.diagnostics.back().message.find("split.ratio = 9") != std::string::npos);
}

TEST_CASE("set_accepts_an_integer_for_a_double_parameter") {
  Fixture f;
  const SetReport report = set_kernel_tuning_parameters(set_alpha(f, {{"split.ratio", int64_t{1}}}), f.context());
  REQUIRE(report.status == UpdateStatus::updated);
  CHECK(std::get<double>(report.values.at("split.ratio")) == 1.0);
}

TEST_CASE("set_refuses_bad_input_before_writing_anything") {
  Fixture f;
  REQUIRE(set_kernel_tuning_parameters(set_alpha(f, {{"split.ratio", 0.25}}), f.context()).status ==
          UpdateStatus::updated);
  const std::string bytes = read_text(f.cache);
  const auto generation = f.registry.published_generation();

  SetOptions unknown_kernel = set_alpha(f, {});
  unknown_kernel.kernel = "Gamma";
  CHECK_THROWS_AS(set_kernel_tuning_parameters(unknown_kernel, f.context()), NotFoundError);
  SetOptions lower_case = set_alpha(f, {});
  lower_case.kernel = "alpha";
  CHECK_THROWS_WITH_AS(set_kernel_tuning_parameters(lower_case, f.context()), doctest::Contains("did you mean Alpha"),
                       NotFoundError);
  SetOptions no_such_type = set_alpha(f, {});
  no_such_type.element_type = 7;
  CHECK_THROWS_AS(set_kernel_tuning_parameters(no_such_type, f.context()), NotFoundError);
  CHECK_THROWS_WITH_AS(set_kernel_tuning_parameters(set_alpha(f, {{"no.such", int64_t{1}}}), f.context()),
                       doctest::Contains("unknown parameter 'no.such'"), NotFoundError);
  CHECK_THROWS_AS(set_kernel_tuning_parameters(set_alpha(f, {{"parallel.minimum_elements", 2.5}}), f.context()),
                  TypeMismatchError);
  CHECK_THROWS_AS(set_kernel_tuning_parameters(set_alpha(f, {{"vector.enabled", int64_t{1}}}), f.context()),
                  TypeMismatchError);
  CHECK_THROWS_AS(set_kernel_tuning_parameters(set_alpha(f, {{"parallel.minimum_elements", int64_t{0}}}), f.context()),
                  InvalidValueError);
  CHECK_THROWS_AS(set_kernel_tuning_parameters(set_alpha(f, {{"mode", std::string("reckless")}}), f.context()),
                  InvalidValueError);
  // One bad value among good ones refuses the whole set.
  CHECK_THROWS_AS(set_kernel_tuning_parameters(
                      set_alpha(f, {{"split.ratio", 0.3}, {"parallel.minimum_elements", int64_t{-5}}}), f.context()),
                  InvalidValueError);
  SetOptions negative_threads = set_alpha(f, {});
  negative_threads.num_threads = -2;
  CHECK_THROWS_AS(set_kernel_tuning_parameters(negative_threads, f.context()), InvalidValueError);
  CHECK(read_text(f.cache) == bytes);
  CHECK(f.registry.published_generation() == generation);
}

TEST_CASE("set_validation_failure_creates_no_file_or_directory") {
  Fixture f;
  SetOptions options = set_alpha(f, {{"parallel.minimum_elements", int64_t{0}}});
  options.path = (f.dir / "sub" / "k.cache").string();
  CHECK_THROWS_AS(set_kernel_tuning_parameters(options, f.context()), InvalidValueError);
  CHECK(f.dir.entries().empty());
}

TEST_CASE("set_default_implementation_is_the_dispatched_one") {
  Fixture f;
  f.features.avx2 = true;
  const SetReport fast = set_kernel_tuning_parameters(set_alpha(f, {{"split.ratio", 0.1}}), f.context());
  CHECK(fast.key.implementation == "fast");
  SetOptions portable = set_alpha(f, {{"split.ratio", 0.2}});
  portable.implementation = "portable";
  CHECK(set_kernel_tuning_parameters(portable, f.context()).key.implementation == "portable");
  CHECK(read_cache_file(f.cache).profiles.size() == 2);
}

TEST_CASE("set_loads_by_default_and_publishes_with_effective_threads") {
  Fixture f;
  const auto before = f.registry.published_generation();
  const SetReport report =
      set_kernel_tuning_parameters(set_alpha(f, {{"parallel.minimum_elements", int64_t{777}}}, 2), f.context());
  REQUIRE(report.load.has_value());
  CHECK(report.load->status == FileStatus::loaded);
  CHECK(report.load->published_generation > before);
  REQUIRE(report.load->loaded.size() == 1);
  CHECK(report.load->loaded[0] == report.key);
  CHECK(report.load->missing.empty());
  const auto snapshot = f.registry.snapshot();
  const TuningValues* published = snapshot->find(report.key, 2, true);
  REQUIRE(published != nullptr);
  CHECK(published->at("parallel.minimum_elements") == runtime::TuningValue(int64_t{777}));
  CHECK(snapshot->find(report.key, 3, true) == nullptr);
}

TEST_CASE("set_without_load_leaves_the_registry_alone") {
  Fixture f;
  SetOptions options = set_alpha(f, {{"split.ratio", 0.3}});
  options.load = false;
  const auto before = f.registry.published_generation();
  const SetReport report = set_kernel_tuning_parameters(options, f.context());
  CHECK(report.status == UpdateStatus::updated);
  CHECK_FALSE(report.load.has_value());
  CHECK(report.to_json()["load"].is_null());
  CHECK(f.registry.published_generation() == before);
}

TEST_CASE("set_on_a_malformed_cache_changes_nothing") {
  Fixture f;
  write_text(f.cache, "not = [toml");
  const SetReport report = set_kernel_tuning_parameters(set_alpha(f, {{"split.ratio", 0.3}}), f.context());
  CHECK(report.status == UpdateStatus::malformed);
  CHECK_FALSE(report.load.has_value());
  CHECK(read_text(f.cache) == "not = [toml");
}

TEST_CASE("set_prune_stale_drops_old_abis") {
  Fixture f;
  CacheProfile stale = f.profile(tune_test::alpha_schema(1, "portable"), 2);
  stale.key.tuning_abi = 1;
  UpdateOptions options;
  options.kernels = f.table.get();
  REQUIRE(write_profiles(f.cache, {stale}, options).ok());
  SetOptions set = set_alpha(f, {{"split.ratio", 0.3}});
  set.prune_stale = true;
  const SetReport report = set_kernel_tuning_parameters(set, f.context());
  REQUIRE(report.pruned.size() == 1);
  CHECK(report.pruned[0].tuning_abi == 1);
  CHECK(read_cache_file(f.cache).profiles.size() == 1);
}

TEST_CASE("parameters_report_cached_and_active_values") {
  Fixture f;
  ParametersOptions options;
  options.selection.kernels = {"Alpha"};
  options.selection.element_types = {1};
  options.path = f.cache.string();
  options.num_threads = 2;
  KernelParametersReport before = kernel_tuning_parameters(options, f.context());
  CHECK(before.cache_status == FileStatus::not_found);
  REQUIRE(before.kernels.size() == 1);
  CHECK_FALSE(before.kernels[0].cached_values.has_value());
  CHECK(before.kernels[0].active_source == runtime::TuningSource::portable_default);
  CHECK(before.kernels[0].active_values == before.kernels[0].defaults);
  CHECK(before.kernels[0].calibratable);

  set_kernel_tuning_parameters(set_alpha(f, {{"parallel.minimum_elements", int64_t{2048}}}, 2), f.context());
  KernelParametersReport after = kernel_tuning_parameters(options, f.context());
  CHECK(after.cache_status == FileStatus::loaded);
  REQUIRE(after.kernels[0].cached_values.has_value());
  CHECK(after.kernels[0].cached_values->at("parallel.minimum_elements") == runtime::TuningValue(int64_t{2048}));
  CHECK(after.kernels[0].cached_layer == std::optional<CacheLayer>(CacheLayer::user));
  CHECK(after.kernels[0].active_source == runtime::TuningSource::published_profile);

  options.num_threads = 3;  // no profile for 3 threads
  KernelParametersReport three = kernel_tuning_parameters(options, f.context());
  CHECK_FALSE(three.kernels[0].cached_values.has_value());
  CHECK(three.kernels[0].active_source == runtime::TuningSource::portable_default);
}

TEST_CASE("parameters_cached_values_come_from_the_system_layer_under_the_user_layer") {
  Fixture f;
  write_system_profile(f, {{"split.ratio", 0.75}}, 2);
  ParametersOptions options;
  options.selection.kernels = {"Alpha"};
  options.selection.element_types = {1};
  options.path = f.cache.string();
  options.num_threads = 2;
  KernelParametersReport report = kernel_tuning_parameters(options, f.context());
  REQUIRE(report.kernels[0].cached_values.has_value());
  CHECK(report.kernels[0].cached_layer == std::optional<CacheLayer>(CacheLayer::system));
  set_kernel_tuning_parameters(set_alpha(f, {{"split.ratio", 0.125}}), f.context());
  report = kernel_tuning_parameters(options, f.context());
  CHECK(report.kernels[0].cached_layer == std::optional<CacheLayer>(CacheLayer::user));
  CHECK(report.kernels[0].cached_values->at("split.ratio") == runtime::TuningValue(0.125));
}

TEST_CASE("parameters_selection_every_key_dispatched_or_all_implementations") {
  Fixture f;
  ParametersOptions options;
  options.path = f.cache.string();
  CHECK(kernel_tuning_parameters(options, f.context()).kernels.size() == 3);  // Alpha float, Alpha double, Beta
  options.selection.implementation = std::string(kAllImplementations);
  CHECK(kernel_tuning_parameters(options, f.context()).kernels.size() == 4);
  options.selection.implementation = "fast";
  options.selection.kernels = {"Beta"};
  CHECK_THROWS_AS(kernel_tuning_parameters(options, f.context()), NotFoundError);
}

TEST_CASE("propose_partitions_covered_missing_calibratable_unsupported") {
  Fixture f;
  set_kernel_tuning_parameters(set_alpha(f, {{"split.ratio", 0.3}}, 2), f.context());
  ProposeOptions options;
  options.path = f.cache.string();
  options.num_threads = 2;
  const ProposalReport report = propose_kernel_tuning_updates(options, f.context());
  CHECK(report.selected.size() == 3);
  REQUIRE(report.covered.size() == 1);
  CHECK(report.covered[0].key.element_type == 1);
  CHECK(report.missing.size() == 2);
  REQUIRE(report.calibratable.size() == 1);
  CHECK(report.calibratable[0].key.element_type == 11);
  REQUIRE(report.unsupported.size() == 1);
  CHECK(report.unsupported[0].key.kernel == "Beta");
  const auto before = read_text(f.cache);
  CHECK(read_text(f.cache) == before);
}

TEST_CASE("inspect_changes_neither_file_nor_registry") {
  Fixture f;
  set_kernel_tuning_parameters(set_alpha(f, {{"split.ratio", 0.3}}, 2), f.context());
  const std::string bytes = read_text(f.cache);
  struct stat before {};
  ::stat(f.cache.c_str(), &before);
  const auto generation = f.registry.published_generation();
  const auto entries = f.dir.entries();
  InspectOptions options;
  options.path = f.cache.string();
  options.threads = 2;
  const InspectReport report = inspect_kernel_tuning_cache(options, f.context());
  CHECK(report.status == FileStatus::loaded);
  REQUIRE(report.profiles.size() == 1);
  CHECK(report.profiles[0].local);
  CHECK(report.profiles[0].classification == ProfileClass::loaded);
  struct stat after {};
  ::stat(f.cache.c_str(), &after);
  CHECK(read_text(f.cache) == bytes);
  CHECK(after.st_mtim.tv_nsec == before.st_mtim.tv_nsec);
  CHECK(f.registry.published_generation() == generation);
  CHECK(f.dir.entries() == entries);
}

TEST_CASE("inspect_local_means_this_machine_and_these_threads") {
  Fixture f;
  CacheProfile other_host = f.profile(tune_test::alpha_schema(1, "portable"), 2);
  other_host.host.model = 1;
  UpdateOptions update;
  update.kernels = f.table.get();
  REQUIRE(write_profiles(f.cache,
                         {f.profile(tune_test::alpha_schema(1, "portable"), 1),
                          f.profile(tune_test::alpha_schema(1, "portable"), 2), other_host},
                         update)
              .ok());
  InspectOptions options;
  options.path = f.cache.string();
  options.threads = 2;
  InspectReport report = inspect_kernel_tuning_cache(options, f.context());
  REQUIRE(report.profiles.size() == 2);  // the thread filter keeps the two 2-thread profiles
  int local = 0;
  for (const auto& p : report.profiles) {
    if (p.local) {
      ++local;
      CHECK(p.profile.host.model == f.machine.model);
    } else {
      CHECK(p.classification == ProfileClass::incompatible);
    }
  }
  CHECK(local == 1);
  options.threads.reset();
  report = inspect_kernel_tuning_cache(options, f.context());
  CHECK(report.profiles.size() == 3);
}

TEST_CASE("inspect_lists_system_layer_profiles_and_marks_shadowed_ones") {
  Fixture f;
  write_system_profile(f, {{"split.ratio", 0.75}}, 2);
  write_system_profile(f, {{"split.ratio", 0.75}}, 4);
  set_kernel_tuning_parameters(set_alpha(f, {{"split.ratio", 0.1}}, 2), f.context());
  InspectOptions options;
  options.path = f.cache.string();
  const InspectReport report = inspect_kernel_tuning_cache(options, f.context());
  REQUIRE(report.profiles.size() == 3);
  CHECK(report.profiles[0].layer == CacheLayer::user);
  CHECK(report.profiles[1].layer == CacheLayer::system);
  CHECK(report.profiles[1].shadowed);  // 2 threads: the user profile wins
  CHECK_FALSE(report.profiles[2].shadowed);
  CHECK(report.system_status == FileStatus::loaded);
}

TEST_CASE("inspect_malformed_cache_reports_it_with_a_diagnostic") {
  Fixture f;
  write_text(f.cache, "format = \"other\"\n");
  InspectOptions options;
  options.path = f.cache.string();
  const InspectReport report = inspect_kernel_tuning_cache(options, f.context());
  CHECK(report.status == FileStatus::malformed);
  REQUIRE_FALSE(report.diagnostics.empty());
  CHECK(report.diagnostics[0].message.find("malformed") != std::string::npos);
}

TEST_CASE("load_publishes_every_loaded_profile_with_its_threads_and_classifies_the_rest") {
  Fixture f;
  const auto schema = tune_test::alpha_schema(1, "portable");
  CacheProfile one = f.profile(schema, 1);
  one.values["parallel.minimum_elements"] = int64_t{11};
  CacheProfile two = f.profile(schema, 2);
  two.values["parallel.minimum_elements"] = int64_t{22};
  CacheProfile stale = f.profile(schema, 2);
  stale.key.tuning_abi = 2;
  CacheProfile foreign = f.profile(schema, 2);
  foreign.host.vendor = "intel";
  CacheProfile invalid = f.profile(tune_test::alpha_schema(11, "portable"), 2);
  invalid.values["split.ratio"] = 5.0;
  UpdateOptions update;
  update.kernels = f.table.get();
  REQUIRE(write_profiles(f.cache, {one, two, stale, foreign, invalid}, update).ok());

  LoadOptions options;
  options.path = f.cache.string();
  const auto before = f.registry.published_generation();
  const LoadReport report = load_kernel_tuning_cache(options, f.context());
  CHECK(report.status == FileStatus::loaded);
  CHECK(report.published_generation == before + 1);
  CHECK(report.published_profiles == 2);
  CHECK(report.loaded == std::vector<runtime::TuningKey>{schema.key});
  CHECK(report.stale == std::vector<runtime::TuningKey>{stale.key});
  CHECK(report.incompatible == std::vector<runtime::TuningKey>{schema.key});
  CHECK(report.invalid == std::vector<runtime::TuningKey>{invalid.key});
  CHECK(report.missing.empty());  // nothing selected
  CHECK(report.diagnostics.size() == 3);
  const auto snapshot = f.registry.snapshot();
  REQUIRE(snapshot->find(schema.key, 1, true) != nullptr);
  CHECK(snapshot->find(schema.key, 1, true)->at("parallel.minimum_elements") == runtime::TuningValue(int64_t{11}));
  CHECK(snapshot->find(schema.key, 2, true)->at("parallel.minimum_elements") == runtime::TuningValue(int64_t{22}));
}

TEST_CASE("load_selection_filters_profiles_and_lists_missing_keys") {
  Fixture f;
  set_kernel_tuning_parameters(set_alpha(f, {{"split.ratio", 0.3}}, 2), f.context());
  LoadOptions options;
  options.path = f.cache.string();
  options.selection.kernels = {"Alpha", "Beta"};
  options.num_threads = 2;
  LoadReport report = load_kernel_tuning_cache(options, f.context());
  CHECK(report.loaded.size() == 1);
  REQUIRE(report.missing.size() == 2);  // Alpha double, Beta float
  options.num_threads = 4;
  report = load_kernel_tuning_cache(options, f.context());
  CHECK(report.loaded.empty());  // only 4-thread profiles are considered
  CHECK(report.missing.size() == 3);
  options.selection.kernels = {"Nope"};
  CHECK_THROWS_AS(load_kernel_tuning_cache(options, f.context()), NotFoundError);
}

TEST_CASE("load_user_profile_wins_over_system_profile") {
  Fixture f;
  write_system_profile(f, {{"split.ratio", 0.75}}, 2);
  write_system_profile(f, {{"split.ratio", 0.75}}, 4);
  set_kernel_tuning_parameters(set_alpha(f, {{"split.ratio", 0.1}}, 2), f.context());
  LoadOptions options;
  options.path = f.cache.string();
  const LoadReport report = load_kernel_tuning_cache(options, f.context());
  CHECK(report.published_profiles == 2);
  const auto snapshot = f.registry.snapshot();
  const auto key = tune_test::alpha_schema(1, "portable").key;
  CHECK(snapshot->find(key, 2, true)->at("split.ratio") == runtime::TuningValue(0.1));
  CHECK(snapshot->find(key, 4, true)->at("split.ratio") == runtime::TuningValue(0.75));
}

TEST_CASE("load_of_a_malformed_cache_publishes_nothing") {
  Fixture f;
  write_text(f.cache, "][");
  LoadOptions options;
  options.path = f.cache.string();
  const auto before = f.registry.published_generation();
  const LoadReport report = load_kernel_tuning_cache(options, f.context());
  CHECK(report.status == FileStatus::malformed);
  CHECK_FALSE(report.published);
  CHECK(report.published_generation == before);
  CHECK(f.registry.published_generation() == before);
}

TEST_CASE("remove_whole_cache_then_not_found") {
  Fixture f;
  set_kernel_tuning_parameters(set_alpha(f, {{"split.ratio", 0.3}}), f.context());
  RemoveOptions options;
  options.path = f.cache.string();
  RemoveReport report = remove_kernel_tuning_cache(options, f.context());
  CHECK(report.status == "removed");
  CHECK(report.removed_files.size() == 2);
  CHECK(f.dir.entries().empty());
  report = remove_kernel_tuning_cache(options, f.context());
  CHECK(report.status == "not_found");
}

TEST_CASE("remove_with_filters_keeps_the_other_profiles") {
  Fixture f;
  set_kernel_tuning_parameters(set_alpha(f, {{"split.ratio", 0.3}}, 1), f.context());
  set_kernel_tuning_parameters(set_alpha(f, {{"split.ratio", 0.3}}, 2), f.context());
  SetOptions beta;
  beta.kernel = "Beta";
  beta.values = {{"tile.size", int64_t{64}}};
  beta.path = f.cache.string();
  beta.num_threads = 2;
  set_kernel_tuning_parameters(beta, f.context());
  RemoveOptions options;
  options.path = f.cache.string();
  options.filter.kernels = {"Alpha"};
  options.threads = 2;
  RemoveReport report = remove_kernel_tuning_cache(options, f.context());
  CHECK(report.status == "removed");
  CHECK(report.removed.size() == 1);
  CHECK(report.preserved.size() == 2);  // Alpha at 1 thread, Beta
  CHECK(read_cache_file(f.cache).profiles.size() == 2);
  report = remove_kernel_tuning_cache(options, f.context());
  CHECK(report.status == "unchanged");
}

TEST_CASE("remove_counts_profiles_of_every_host_and_lists_each") {
  Fixture f;
  set_kernel_tuning_parameters(set_alpha(f, {{"split.ratio", 0.3}}, 2), f.context());
  // The same key written by another machine for the same thread count.
  Fixture other;
  other.machine.model = 99;
  SetOptions foreign = set_alpha(other, {{"split.ratio", 0.7}}, 2);
  foreign.path = f.cache.string();
  set_kernel_tuning_parameters(foreign, other.context());
  REQUIRE(read_cache_file(f.cache).profiles.size() == 2);

  RemoveOptions options;
  options.path = f.cache.string();
  options.filter.kernels = {"Alpha"};
  options.threads = 2;
  options.dry_run = true;
  const std::string before = tune_test::read_text(f.cache);
  RemoveReport planned = remove_kernel_tuning_cache(options, f.context());
  CHECK(planned.status == "would_remove");
  CHECK(planned.removed_profiles.size() == 2);  // two profiles, one key
  CHECK(planned.removed.size() == 1);
  CHECK(tune_test::read_text(f.cache) == before);

  options.dry_run = false;
  options.foreign = true;  // only the other machine's
  RemoveReport report = remove_kernel_tuning_cache(options, f.context());
  REQUIRE(report.removed_profiles.size() == 1);
  CHECK(report.removed_profiles[0].profile.host.model == 99);
  CHECK(report.removed_profiles[0].classification == ProfileClass::incompatible);
  CHECK(report.preserved_profiles == 1);
  const CacheFile left = read_cache_file(f.cache);
  REQUIRE(left.profiles.size() == 1);
  CHECK(left.profiles[0].host.model == f.machine.model);
}

TEST_CASE("remove_by_classification_and_hostname") {
  Fixture f;
  set_kernel_tuning_parameters(set_alpha(f, {{"split.ratio", 0.3}}, 2), f.context());
  CacheProfile stale = f.profile(tune_test::alpha_schema(1, "portable"), 4);
  stale.key.tuning_abi = 1;  // Alpha is registered under abi 3
  stale.provenance.hostname = "old-box";
  REQUIRE(write_profiles(f.cache, {stale}).ok());
  RemoveOptions options;
  options.path = f.cache.string();
  options.classes = {ProfileClass::invalid};
  CHECK(remove_kernel_tuning_cache(options, f.context()).status == "unchanged");
  options.classes = {ProfileClass::stale, ProfileClass::invalid};
  options.dry_run = true;
  RemoveReport report = remove_kernel_tuning_cache(options, f.context());
  REQUIRE(report.removed_profiles.size() == 1);
  CHECK(report.removed_profiles[0].classification == ProfileClass::stale);
  options = RemoveOptions{};
  options.path = f.cache.string();
  options.hostname = "old-box";
  report = remove_kernel_tuning_cache(options, f.context());
  CHECK(report.status == "removed");
  REQUIRE(report.removed_profiles.size() == 1);
  CHECK(report.removed_profiles[0].profile.key.tuning_abi == 1);
  CHECK(read_cache_file(f.cache).profiles.size() == 1);
}

TEST_CASE("remove_and_inspect_reject_a_kernel_neither_registered_nor_cached") {
  Fixture f;
  set_kernel_tuning_parameters(set_alpha(f, {{"split.ratio", 0.3}}, 2), f.context());
  const std::string before = tune_test::read_text(f.cache);
  RemoveOptions options;
  options.path = f.cache.string();
  options.filter.kernels = {"Alpah"};
  try {
    remove_kernel_tuning_cache(options, f.context());
    FAIL("an unknown kernel was accepted");
  } catch (const NotFoundError& e) {
    CHECK(std::string(e.what()).find("did you mean Alpha?") != std::string::npos);
  }
  CHECK(tune_test::read_text(f.cache) == before);
  InspectOptions inspect;
  inspect.path = f.cache.string();
  inspect.filter.kernels = {"Alpah"};
  CHECK_THROWS_AS(inspect_kernel_tuning_cache(inspect, f.context()), NotFoundError);
  // A kernel this build does not register but the cache names can still be removed.
  CacheProfile retired = f.profile(tune_test::alpha_schema(1, "portable"), 2);
  retired.key.kernel = "Retired";
  REQUIRE(write_profiles(f.cache, {retired}).ok());
  options.filter.kernels = {"Retired"};
  options.filter.implementation = "all";
  CHECK(remove_kernel_tuning_cache(options, f.context()).removed_profiles.size() == 1);
}

TEST_CASE("inspect_reports_the_system_layer_and_leaves_it_out_on_request") {
  Fixture f;
  CacheProfile base = f.profile(tune_test::alpha_schema(1, "portable"), 2);
  REQUIRE(write_profiles(f.system_cache, {base}).ok());
  InspectOptions inspect;
  inspect.path = f.cache.string();
  InspectReport report = inspect_kernel_tuning_cache(inspect, f.context());
  CHECK(report.system_path == f.system_cache.string());
  CHECK(report.system_status == FileStatus::loaded);
  CHECK(report.system_profiles == 1);
  CHECK(report.to_json()["system_cache"] ==
        nlohmann::json{{"path", f.system_cache.string()}, {"status", "loaded"}, {"profiles", 1}});
  inspect.user_only = true;
  report = inspect_kernel_tuning_cache(inspect, f.context());
  CHECK(report.system_path.empty());
  CHECK(report.profiles.empty());
  CHECK(report.to_json()["system_cache"].is_null());
}
