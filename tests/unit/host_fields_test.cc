// Every field of the host descriptor takes part in matching: a profile written for this machine
// with one field changed, saved to a cache and loaded back, is `incompatible`, is not published,
// and its diagnostic names the field. effective_threads and idle_spin are the exceptions by design:
// the same machine at another thread count or spin class is loaded, for those sessions only.
#include <doctest/doctest.h>

#include <functional>
#include <string>
#include <vector>

#include "onnx_light/tune/cache_update.h"
#include "onnx_light/tune/host.h"
#include "tune_fixture.h"

using namespace onnx_light;
using namespace onnx_light::tune;

namespace {

constexpr int64_t kThreads = 2;

struct FieldChange {
  std::string field;  // as named in the cache file and the diagnostics
  std::function<void(HostDescriptor&)> change;
};

std::vector<FieldChange> host_field_changes() {
  return {
      {"architecture", [](HostDescriptor& h) { h.architecture += "-other"; }},
      {"vendor", [](HostDescriptor& h) { h.vendor += "-other"; }},
      {"family", [](HostDescriptor& h) { h.family += 1; }},
      {"model", [](HostDescriptor& h) { h.model += 1; }},
      {"stepping", [](HostDescriptor& h) { h.stepping += 1; }},
      {"microarchitecture", [](HostDescriptor& h) { h.microarchitecture += "-other"; }},
      // One feature more (kept sorted, as the reader sorts), or a different set altogether.
      {"features", [](HostDescriptor& h) { h.features.push_back("zzz-not-a-feature"); }},
      {"features", [](HostDescriptor& h) { h.features = {h.features == std::vector<std::string>{"aaa"} ? "bbb" : "aaa"}; }},
      {"l1d_cache_bytes", [](HostDescriptor& h) { h.l1d_cache_bytes += 4096; }},
      {"l2_cache_bytes", [](HostDescriptor& h) { h.l2_cache_bytes += 4096; }},
      {"l3_cache_bytes", [](HostDescriptor& h) { h.l3_cache_bytes += 4096; }},
      {"physical_cores", [](HostDescriptor& h) { h.physical_cores += 1; }},
      {"logical_cores", [](HostDescriptor& h) { h.logical_cores += 1; }},
  };
}

// The fixture's made-up kernels, but this machine as cpuinfo and uname describe it.
OperationContext this_machine_context(const tune_test::Fixture& f) {
  OperationContext context = f.context();
  context.machine.reset();
  return context;
}

CacheProfile profile_for(const tune_test::Fixture& f, const HostDescriptor& host) {
  CacheProfile profile = f.profile(tune_test::alpha_schema(1, "portable"), host.effective_threads);
  profile.host = host;
  return profile;
}

bool has_key(const std::vector<runtime::TuningKey>& keys, const runtime::TuningKey& key) {
  return std::find(keys.begin(), keys.end(), key) != keys.end();
}

const runtime::TuningValues* published(const tune_test::Fixture& f, const runtime::TuningKey& key, int64_t threads,
                                       bool idle_spin = true) {
  return f.registry.snapshot()->find(key, static_cast<int>(threads), idle_spin);
}

}  // namespace

TEST_CASE("host_fields_this_machine_profile_is_loaded_and_published") {
  // The control row: unchanged, the profile is this machine's and sessions of its threads use it.
  tune_test::Fixture f;
  const auto context = this_machine_context(f);
  const CacheProfile profile = profile_for(f, detect_host(kThreads));
  REQUIRE(write_profiles(f.cache, {profile}).status == UpdateStatus::updated);
  const LoadReport report = load_kernel_tuning_cache({f.cache.string(), {}, std::nullopt}, context);
  CHECK(has_key(report.loaded, profile.key));
  CHECK(report.incompatible.empty());
  CHECK(report.diagnostics.empty());
  CHECK(published(f, profile.key, kThreads) != nullptr);
}

TEST_CASE("host_fields_each_changed_field_makes_the_profile_incompatible_and_is_named") {
  const HostDescriptor here = detect_host(kThreads);
  for (const FieldChange& row : host_field_changes()) {
    CAPTURE(row.field);
    tune_test::Fixture f;
    const auto context = this_machine_context(f);
    HostDescriptor elsewhere = here;
    row.change(elsewhere);
    REQUIRE(elsewhere != here);
    const CacheProfile profile = profile_for(f, elsewhere);
    REQUIRE(write_profiles(f.cache, {profile}).status == UpdateStatus::updated);

    // Load: incompatible, nothing published, one diagnostic naming the field and both values.
    const LoadReport loaded = load_kernel_tuning_cache({f.cache.string(), {}, std::nullopt}, context);
    CHECK(loaded.status == FileStatus::loaded);
    CHECK(has_key(loaded.incompatible, profile.key));
    CHECK_FALSE(has_key(loaded.loaded, profile.key));
    CHECK(published(f, profile.key, kThreads) == nullptr);
    REQUIRE(loaded.diagnostics.size() == 1);
    const Diagnostic& diagnostic = loaded.diagnostics[0];
    CHECK(diagnostic.field == "host." + row.field);
    CHECK(diagnostic.profile == std::optional<std::size_t>(0));
    CHECK(diagnostic.message.find("written on another machine (host." + row.field + " is ") != std::string::npos);

    // Inspect agrees and does not call it local.
    const InspectReport inspected = inspect_kernel_tuning_cache({f.cache.string(), {}, kThreads}, context);
    REQUIRE(inspected.profiles.size() == 1);
    CHECK(inspected.profiles[0].classification == ProfileClass::incompatible);
    CHECK_FALSE(inspected.profiles[0].local);
  }
}

TEST_CASE("host_fields_effective_threads_selects_sessions_not_machines") {
  tune_test::Fixture f;
  const auto context = this_machine_context(f);
  const CacheProfile profile = profile_for(f, detect_host(kThreads + 1));
  REQUIRE(write_profiles(f.cache, {profile}).status == UpdateStatus::updated);
  const LoadReport loaded = load_kernel_tuning_cache({f.cache.string(), {}, std::nullopt}, context);
  CHECK(has_key(loaded.loaded, profile.key));
  CHECK(loaded.diagnostics.empty());
  CHECK(published(f, profile.key, kThreads + 1) != nullptr);
  CHECK(published(f, profile.key, kThreads) == nullptr);  // not for sessions of another thread count

  const InspectReport inspected = inspect_kernel_tuning_cache({f.cache.string(), {}, std::nullopt}, context);
  REQUIRE(inspected.profiles.size() == 1);
  CHECK(inspected.profiles[0].classification == ProfileClass::loaded);
  const InspectReport at_threads = inspect_kernel_tuning_cache({f.cache.string(), {}, kThreads + 1}, context);
  REQUIRE(at_threads.profiles.size() == 1);
  CHECK(at_threads.profiles[0].local);
}

TEST_CASE("host_fields_idle_spin_selects_sessions_not_machines") {
  // Profiles of both spin classes for one key and thread count: both load, each is published for
  // its own sessions, and local/missing/cached follow the class asked about.
  tune_test::Fixture f;
  const auto context = this_machine_context(f);
  CacheProfile spins = profile_for(f, detect_host(kThreads, true));
  CacheProfile parks = profile_for(f, detect_host(kThreads, false));
  spins.values["parallel.minimum_elements"] = int64_t{100};
  parks.values["parallel.minimum_elements"] = int64_t{900};
  REQUIRE(write_profiles(f.cache, {spins, parks}).status == UpdateStatus::updated);
  REQUIRE(read_cache_file(f.cache).profiles.size() == 2);  // two identities, not one replacing the other

  const LoadReport loaded = load_kernel_tuning_cache({f.cache.string(), {}, std::nullopt}, context);
  CHECK(has_key(loaded.loaded, spins.key));
  CHECK(loaded.diagnostics.empty());
  REQUIRE(published(f, spins.key, kThreads, true) != nullptr);
  REQUIRE(published(f, spins.key, kThreads, false) != nullptr);
  CHECK(published(f, spins.key, kThreads, true)->at("parallel.minimum_elements") == runtime::TuningValue{int64_t{100}});
  CHECK(published(f, spins.key, kThreads, false)->at("parallel.minimum_elements") == runtime::TuningValue{int64_t{900}});

  InspectOptions inspect{f.cache.string(), {}, kThreads};
  inspect.idle_spin = false;
  const InspectReport inspected = inspect_kernel_tuning_cache(inspect, context);
  REQUIRE(inspected.profiles.size() == 2);
  for (const auto& p : inspected.profiles) {
    CHECK(p.classification == ProfileClass::loaded);
    CHECK(p.local == !p.profile.host.idle_spin);
  }

  ParametersOptions parameters;
  parameters.path = f.cache.string();
  parameters.num_threads = kThreads;
  parameters.selection.kernels = {spins.key.kernel};
  parameters.selection.implementation = "portable";
  parameters.selection.element_types = {1};
  parameters.idle_spin = false;
  const KernelParametersReport parked = kernel_tuning_parameters(parameters, context);
  REQUIRE(parked.kernels.size() == 1);
  REQUIRE(parked.kernels[0].cached_values);
  CHECK(parked.kernels[0].cached_values->at("parallel.minimum_elements") == runtime::TuningValue{int64_t{900}});
}
