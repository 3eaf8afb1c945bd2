#include <algorithm>
#include <chrono>

#include <doctest/doctest.h>

#include "onnx_light/tune/classification.h"
#include "tune_fixture.h"

using namespace onnx_light;
using namespace onnx_light::tune;
using tune_test::Fixture;

namespace {

Classification classify(const Fixture& f, const CacheProfile& profile) {
  const SchemaIndex index(*f.table);
  return classify_profile(profile, 7, CacheLayer::user, "c.cache", index, f.machine);
}

bool has_field(const Classification& c, const std::string& field) {
  return std::any_of(c.diagnostics.begin(), c.diagnostics.end(), [&](const Diagnostic& d) { return d.field == field; });
}

}  // namespace

TEST_CASE("classify_loaded_for_this_machine_at_any_thread_count") {
  Fixture f;
  const auto schema = tune_test::alpha_schema(1, "portable");
  for (int64_t threads : {1, 2, 64}) {
    const Classification c = classify(f, f.profile(schema, threads));
    CHECK(c.value == ProfileClass::loaded);
    CHECK(c.diagnostics.empty());
  }
}

TEST_CASE("classify_stale_when_only_the_abi_differs") {
  Fixture f;
  CacheProfile p = f.profile(tune_test::alpha_schema(1, "portable"), 2);
  p.key.tuning_abi = 2;
  const Classification c = classify(f, p);
  CHECK(c.value == ProfileClass::stale);
  REQUIRE(c.diagnostics.size() == 1);
  CHECK(c.diagnostics[0].field == "tuning_abi");
  CHECK(c.diagnostics[0].message.find("tuning_abi 2 is outdated") != std::string::npos);
  // Stale regardless of the host: ABIs belong to the code, not the machine.
  p.host.vendor = "intel";
  CHECK(classify(f, p).value == ProfileClass::stale);
}

TEST_CASE("classify_incompatible_unknown_key_or_other_machine") {
  Fixture f;
  CacheProfile unknown = f.profile(tune_test::alpha_schema(1, "portable"), 2);
  unknown.key.kernel = "Gamma";
  CHECK(classify(f, unknown).value == ProfileClass::incompatible);
  CacheProfile other_type = f.profile(tune_test::alpha_schema(1, "portable"), 2);
  other_type.key.element_type = 7;
  CHECK(classify(f, other_type).value == ProfileClass::incompatible);

  CacheProfile elsewhere = f.profile(tune_test::alpha_schema(1, "portable"), 2);
  elsewhere.host.microarchitecture = "zen4";
  const Classification c = classify(f, elsewhere);
  CHECK(c.value == ProfileClass::incompatible);
  CHECK(has_field(c, "host.microarchitecture"));
  CHECK(c.diagnostics[0].message.find("zen4") != std::string::npos);
}

TEST_CASE("classify_invalid_values_name_profile_key_and_field") {
  Fixture f;
  const auto schema = tune_test::alpha_schema(1, "portable");
  CacheProfile p = f.profile(schema, 2);
  p.values["split.ratio"] = 2.0;                // rule: above the maximum 1
  p.values["mode"] = int64_t{5};                // type
  p.values["unknown.knob"] = true;              // unknown name
  p.values.erase("vector.enabled");             // missing
  const Classification c = classify(f, p);
  CHECK(c.value == ProfileClass::invalid);
  CHECK(has_field(c, "values.split.ratio"));
  CHECK(has_field(c, "values.mode"));
  CHECK(has_field(c, "values.unknown.knob"));
  CHECK(has_field(c, "values.vector.enabled"));
  for (const auto& d : c.diagnostics) {
    CHECK(d.profile == std::optional<std::size_t>(7));
    CHECK(d.key == std::optional<runtime::TuningKey>(schema.key));
    CHECK(d.message.find("profile 7 (onnx_light/Alpha/portable/float/CPU/abi3) in c.cache") != std::string::npos);
  }
}

TEST_CASE("classify_invalid_when_structure_unreadable") {
  Fixture f;
  CacheProfile p = f.profile(tune_test::alpha_schema(1, "portable"), 2);
  p.problems.push_back({"host.vendor", "'host.vendor' must be a string"});
  const Classification c = classify(f, p);
  CHECK(c.value == ProfileClass::invalid);
  REQUIRE(c.diagnostics.size() == 1);
  CHECK(c.diagnostics[0].field == "host.vendor");
}

TEST_CASE("classify_profiles_second_duplicate_of_key_and_host_is_invalid") {
  Fixture f;
  const auto schema = tune_test::alpha_schema(1, "portable");
  CacheFile file;
  file.path = "dup.cache";
  file.status = FileStatus::loaded;
  file.profiles = {f.profile(schema, 2), f.profile(schema, 4), f.profile(schema, 2)};
  const SchemaIndex index(*f.table);
  const auto classes = classify_profiles(file, CacheLayer::system, index, f.machine);
  REQUIRE(classes.size() == 3);
  CHECK(classes[0].value == ProfileClass::loaded);
  CHECK(classes[1].value == ProfileClass::loaded);
  CHECK(classes[2].value == ProfileClass::invalid);
  CHECK(classes[2].diagnostics.at(0).message.find("same key and host as profile 0") != std::string::npos);
  CHECK(classes[2].diagnostics.at(0).layer == std::optional<CacheLayer>(CacheLayer::system));
}

TEST_CASE("classify_diagnostic_json_carries_key_profile_layer_field") {
  Fixture f;
  CacheProfile p = f.profile(tune_test::alpha_schema(1, "portable"), 2);
  p.values["split.ratio"] = -1.0;
  const Classification c = classify(f, p);
  REQUIRE(c.diagnostics.size() == 1);
  const nlohmann::json j = c.diagnostics[0].to_json();
  CHECK(j["kernel"] == "Alpha");
  CHECK(j["device_name"] == "CPU");
  CHECK(j["profile"] == 7);
  CHECK(j["layer"] == "user");
  CHECK(j["field"] == "values.split.ratio");
  CHECK(j["message"].get<std::string>().find("below the minimum") != std::string::npos);
}

// A fleet's merged cache: profiles of one key whose hosts differ only in one field each time. The
// duplicate check must stay linear (it hashed hosts without their stepping, caches or cores, and
// 40,000 such profiles took seconds), and still find the one real duplicate among them.
TEST_CASE("classify_profiles_hosts_differing_in_one_field_stay_linear") {
  Fixture f;
  const auto schema = tune_test::alpha_schema(1, "portable");
  CacheFile file;
  file.path = "fleet.cache";
  file.status = FileStatus::loaded;
  const CacheProfile base = f.profile(schema, 1);
  constexpr int64_t kPerField = 8000;
  for (int64_t i = 0; i < kPerField; ++i) {
    for (int field = 0; field < 5; ++field) {
      CacheProfile p = base;
      int64_t& value = field == 0   ? p.host.stepping
                       : field == 1 ? p.host.l1d_cache_bytes
                       : field == 2 ? p.host.l2_cache_bytes
                       : field == 3 ? p.host.physical_cores
                                    : p.host.logical_cores;
      value = 100000 + i;
      file.profiles.push_back(std::move(p));
    }
  }
  file.profiles.push_back(file.profiles[12345]);  // the only duplicate
  const SchemaIndex index(*f.table);
  const auto start = std::chrono::steady_clock::now();
  const auto classes = classify_profiles(file, CacheLayer::user, index, f.machine);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  REQUIRE(classes.size() == file.profiles.size());
  const auto invalid = std::count_if(classes.begin(), classes.end(),
                                     [](const Classification& c) { return c.value == ProfileClass::invalid; });
  CHECK(invalid == 1);
  CHECK(classes.back().value == ProfileClass::invalid);
  // Linear: a fraction of a second here, also with sanitizers; the colliding hash took minutes.
  CHECK(seconds < 5.0);
}
