// The JSON of every report against the dictionary shapes of the Python seed
// (../shared/seed/kernel_tuning_gallery.txt): same keys, same value kinds.
#include <unistd.h>

#include <limits>
#include <set>
#include <sstream>

#include <doctest/doctest.h>

#include "onnx_light/tune/cache_update.h"
#include "onnx_light/tune/operations.h"
#include "tune_fixture.h"

using namespace onnx_light;
using namespace onnx_light::tune;
using tune_test::Fixture;

namespace {

std::set<std::string> keys_of(const nlohmann::json& object) {
  std::set<std::string> keys;
  for (const auto& item : object.items()) keys.insert(item.key());
  return keys;
}

const std::set<std::string> kKeyFields = {"device", "device_name", "element_type", "implementation",
                                          "kernel", "library", "tuning_abi"};

std::set<std::string> with_key_fields(std::set<std::string> extra) {
  extra.insert(kKeyFields.begin(), kKeyFields.end());
  return extra;
}

void check_key_entry(const nlohmann::json& entry) {
  CHECK(keys_of(entry) == kKeyFields);
  CHECK(entry["device"] == -1);
  CHECK(entry["device_name"] == "CPU");
  CHECK(entry["library"] == "onnx_light");
  CHECK(entry["element_type"].is_number_integer());
  CHECK(entry["tuning_abi"].is_number_integer());
}

}  // namespace

TEST_CASE("report_json_parameters_entry_matches_the_seed") {
  Fixture f;
  ParametersOptions options;
  options.selection.kernels = {"Alpha"};
  options.selection.element_types = {1};
  options.path = f.cache.string();
  const nlohmann::json report = kernel_tuning_parameters(options, f.context()).to_json();
  CHECK(keys_of(report) == std::set<std::string>{"cache_path", "cache_status", "diagnostics", "kernels"});
  REQUIRE(report["kernels"].size() == 1);
  const nlohmann::json& entry = report["kernels"][0];
  CHECK(keys_of(entry) == with_key_fields({"active_source", "active_values", "cached_values", "calibratable",
                                           "defaults", "matched_by", "parameter_names", "shadows"}));
  CHECK(entry["matched_by"].is_null());
  CHECK(entry["shadows"] == nlohmann::json::array());
  CHECK(entry["active_source"] == "portable_default");
  CHECK(entry["cached_values"].is_null());
  CHECK(entry["calibratable"] == true);
  CHECK(entry["defaults"]["parallel.minimum_elements"] == 4096);
  CHECK(entry["defaults"]["split.ratio"].is_number_float());
  CHECK(entry["defaults"]["vector.enabled"].is_boolean());
  CHECK(entry["defaults"]["mode"].is_string());
  CHECK(entry["parameter_names"] ==
        nlohmann::json{"mode", "parallel.minimum_elements", "split.ratio", "vector.enabled"});
  CHECK(entry["implementation"] == "portable");
  CHECK(report["cache_status"] == "not_found");
  CHECK(report["cache_path"] == f.cache.string());
}

TEST_CASE("report_json_proposal_matches_design") {
  Fixture f;
  ProposeOptions options;
  options.selection.kernels = {"Alpha"};
  options.selection.element_types = {1};
  options.path = f.cache.string();
  const nlohmann::json report = propose_kernel_tuning_updates(options, f.context()).to_json();
  CHECK(keys_of(report) == std::set<std::string>{"cache_path", "cache_status", "selected", "covered", "missing",
                                                  "calibratable", "unsupported", "diagnostics"});
  REQUIRE(report["calibratable"].size() == 1);
  CHECK(report["calibratable"][0] == report["selected"][0]);
  CHECK(report["calibratable"][0].contains("active_values"));
}

TEST_CASE("report_json_set_and_its_load_match_the_seed") {
  Fixture f;
  SetOptions options;
  options.kernel = "Alpha";
  options.values = {{"parallel.minimum_elements", int64_t{2048}}};
  options.path = f.cache.string();
  const nlohmann::json report = set_kernel_tuning_parameters(options, f.context()).to_json();
  CHECK(keys_of(report) == std::set<std::string>{"diagnostics", "load", "path", "preserved", "pruned", "status",
                                                  "updated", "values"});
  CHECK(report["status"] == "updated");
  CHECK(report["diagnostics"] == nlohmann::json::array());
  CHECK(report["preserved"] == nlohmann::json::array());
  CHECK(report["pruned"] == nlohmann::json::array());
  CHECK(report["path"] == f.cache.string());
  CHECK(report["values"]["parallel.minimum_elements"] == 2048);
  REQUIRE(report["updated"].size() == 1);
  check_key_entry(report["updated"][0]);
  const nlohmann::json& load = report["load"];
  CHECK(keys_of(load) == std::set<std::string>{"diagnostics", "incompatible", "invalid", "loaded", "missing", "path",
                                                "published_generation", "stale", "status"});
  CHECK(load["status"] == "loaded");
  CHECK(load["published_generation"].is_number_unsigned());
  REQUIRE(load["loaded"].size() == 1);
  check_key_entry(load["loaded"][0]);
  CHECK(load["loaded"][0] == report["updated"][0]);
  for (const char* empty : {"diagnostics", "incompatible", "invalid", "missing", "stale"}) {
    CHECK_MESSAGE(load[empty] == nlohmann::json::array(), empty);
  }
}

TEST_CASE("report_json_inspect_profile_has_the_seed_keys_and_more") {
  Fixture f;
  SetOptions options;
  options.kernel = "Alpha";
  options.values = {{"parallel.minimum_elements", int64_t{2048}}};
  options.path = f.cache.string();
  set_kernel_tuning_parameters(options, f.context());
  InspectOptions inspect;
  inspect.path = f.cache.string();
  const nlohmann::json report = inspect_kernel_tuning_cache(inspect, f.context()).to_json();
  CHECK(keys_of(report) == std::set<std::string>{"diagnostics", "path", "profiles", "status", "system_cache"});
  CHECK(report["status"] == "loaded");
  REQUIRE(report["profiles"].size() == 1);
  const nlohmann::json& profile = report["profiles"][0];
  const std::set<std::string> seed = with_key_fields(
      {"architecture", "effective_threads", "local", "microarchitecture", "values", "vendor"});
  const std::set<std::string> ours = keys_of(profile);
  for (const auto& key : seed) CHECK_MESSAGE(ours.contains(key), key);
  for (const char* extra : {"family", "model", "stepping", "features", "l1d_cache_bytes", "l2_cache_bytes",
                            "l3_cache_bytes", "physical_cores", "logical_cores", "classification", "layer",
                            "provenance", "index", "shadowed", "match", "matched_by", "in_force", "shadowed_by", "shadows"}) {
    CHECK_MESSAGE(ours.contains(extra), extra);
  }
  CHECK(profile["local"] == true);
  CHECK(profile["classification"] == "loaded");
  CHECK(profile["match"] == "exact");
  CHECK(profile["matched_by"] == "exact");
  CHECK(profile["in_force"] == true);
  CHECK(profile["shadowed_by"].is_null());
  CHECK(profile["vendor"] == "amd");
  CHECK(profile["microarchitecture"] == "zen3");
  CHECK(profile["values"] == nlohmann::json{{"mode", "auto"},
                                            {"parallel.minimum_elements", 2048},
                                            {"split.ratio", 0.5},
                                            {"vector.enabled", true}});
  CHECK(keys_of(profile["provenance"]) == std::set<std::string>{"hostname", "source", "tool_version", "written"});
  char hostname[256] = {};
  REQUIRE(::gethostname(hostname, sizeof(hostname) - 1) == 0);
  CHECK(profile["provenance"]["hostname"] == std::string(hostname));
}

TEST_CASE("report_json_remove_shape") {
  Fixture f;
  RemoveOptions options;
  options.path = f.cache.string();
  const nlohmann::json report = remove_kernel_tuning_cache(options, f.context()).to_json();
  CHECK(keys_of(report) == std::set<std::string>{"diagnostics", "dry_run", "path", "preserved", "preserved_count",
                                                 "removed", "removed_count", "removed_files", "removed_profiles",
                                                 "status"});
  CHECK(report["status"] == "not_found");
}

TEST_CASE("report_json_values_keep_their_types") {
  const runtime::TuningValues values{{"a", int64_t{-3}}, {"b", 1.0}, {"c", false}, {"d", std::string("x")}};
  const nlohmann::json j = values_to_json(values);
  CHECK(j["a"].is_number_integer());
  CHECK(j["b"].is_number_float());
  CHECK(j["b"].dump() == "1.0");
  CHECK(j["c"].is_boolean());
  CHECK(j["d"].is_string());
}

TEST_CASE("report_inspect_write_json_equals_to_json_dump") {
  Fixture f;
  // A system layer, an invalid and an unreadable profile, and values of every type and of
  // awkward text, so that every branch of the writer shows up.
  CacheProfile system_profile = f.profile(tune_test::alpha_schema(1, "portable"), 2);
  UpdateOptions update;
  update.kernels = f.table.get();
  REQUIRE(write_profiles(f.system_cache, {system_profile}, update).ok());
  CacheProfile odd = f.profile(tune_test::alpha_schema(11, "portable"), 3);
  odd.values = {{"a", int64_t{-9223372036854775807 - 1}},
                {"b", 1.0},
                {"c", 1e300},
                {"d", 5e-324},
                {"e", std::numeric_limits<double>::infinity()},
                {"f", std::string("quote \" backslash \\ ctrl \x01\x1f del \x7f tab \t caf\xc3\xa9")},
                {"g", false},
                {"h", 0.1}};
  odd.host.features.clear();
  odd.provenance = {};
  CacheProfile user = f.profile(tune_test::alpha_schema(1, "portable"), 2);
  CacheProfile model_class = user;  // shadowed by `user`: shadowed_by and matched_by written
  model_class.host = user.host.generalised(HostMatch::model);
  REQUIRE(write_profiles(f.cache, {user, odd, model_class}, update).ok());
  tune_test::write_text(f.cache, tune_test::read_text(f.cache) + "\n[[profile]]\nkernel = 1\n");
  InspectOptions options;
  options.path = f.cache.string();
  const InspectReport report = inspect_kernel_tuning_cache(options, f.context());
  REQUIRE(report.profiles.size() == 5);
  CHECK(std::count_if(report.profiles.begin(), report.profiles.end(),
                      [](const InspectedProfile& p) { return p.shadowed_by.has_value(); }) == 2);
  CHECK(std::count_if(report.profiles.begin(), report.profiles.end(),
                      [](const InspectedProfile& p) { return p.shadows.size() == 2; }) == 1);
  REQUIRE_FALSE(report.diagnostics.empty());
  std::string written;
  report.write_json(written);
  CHECK(written == report.to_json().dump(2));
  std::ostringstream streamed;
  report.write_json(streamed);
  CHECK(streamed.str() == written);

  InspectReport empty;
  empty.path = "p";
  std::string nothing;
  empty.write_json(nothing);
  CHECK(nothing == empty.to_json().dump(2));
}
