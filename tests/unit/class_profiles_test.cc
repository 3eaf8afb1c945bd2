// Class profiles (cache format version 2, issue 21): a profile that matches a CPU model, a
// microarchitecture or a set of ISA features instead of one machine, and which profile is in force
// when several match.
#include <doctest/doctest.h>

#include "onnx_light/runtime/error.h"
#include "onnx_light/tune/cache_transfer.h"
#include "onnx_light/tune/cache_update.h"
#include "onnx_light/tune/classification.h"
#include "onnx_light/tune/operations.h"
#include "tune_fixture.h"

using namespace onnx_light;
using namespace onnx_light::tune;
using runtime::TuningValues;
using tune_test::Fixture;
using tune_test::read_text;

namespace {

// An Alpha float/portable profile of `host` (threads 2, spin) with parallel.minimum_elements = minimum.
CacheProfile class_alpha(const Fixture& f, const HostDescriptor& host, int64_t minimum) {
  CacheProfile p = f.profile(tune_test::alpha_schema(1, "portable"), 2);
  p.host = host;
  p.host.effective_threads = 2;
  p.values["parallel.minimum_elements"] = minimum;
  return p;
}

void write_class_cache(const Fixture& f, const std::filesystem::path& path, std::vector<CacheProfile> profiles) {
  UpdateOptions options;
  options.kernels = f.table.get();
  REQUIRE(write_profiles(path, std::move(profiles), options).ok());
}

int64_t published_minimum(const Fixture& f) {
  const auto snapshot = f.registry.snapshot();
  REQUIRE(snapshot);
  const TuningValues* values = snapshot->find(tune_test::alpha_schema(1, "portable").key, 2, true);
  REQUIRE(values != nullptr);
  return std::get<int64_t>(values->at("parallel.minimum_elements"));
}

LoadOptions load_class_cache(const Fixture& f) {
  LoadOptions options;
  options.path = f.cache.string();
  return options;
}

InspectReport inspect_class_cache(const Fixture& f) {
  InspectOptions options;
  options.path = f.cache.string();
  options.threads = 2;
  return inspect_kernel_tuning_cache(options, f.context());
}

const InspectedProfile& inspected_with_match(const InspectReport& report, CacheLayer layer, HostMatch match) {
  for (const auto& p : report.profiles) {
    if (p.layer == layer && p.profile.host.match == match) return p;
  }
  FAIL("no " << host_match_name(match) << " profile in layer " << cache_layer_name(layer));
  throw std::logic_error("unreachable");
}

}  // namespace

TEST_CASE("class_match_reads_only_the_fields_of_its_class") {
  const HostDescriptor machine = tune_test::test_machine();
  HostDescriptor sibling = machine;  // same model, another stepping, other caches and cores
  sibling.stepping = 2;
  sibling.l3_cache_bytes /= 2;
  sibling.physical_cores = 4;
  sibling.logical_cores = 4;
  HostDescriptor other_model = machine;
  other_model.model = 97;

  const HostDescriptor model = machine.generalised(HostMatch::model);
  CHECK(model.matches(machine));
  CHECK(model.matches(sibling));
  CHECK_FALSE(model.matches(other_model));
  CHECK_FALSE(machine.matches(sibling));  // exact: every field

  const HostDescriptor uarch = machine.generalised(HostMatch::microarchitecture);
  CHECK(uarch.matches(other_model));  // zen3 on another model number
  other_model.microarchitecture = "zen4";
  CHECK_FALSE(uarch.matches(other_model));
  HostDescriptor intel = machine;
  intel.vendor = "intel";
  CHECK_FALSE(uarch.matches(intel));

  HostDescriptor isa = machine.generalised(HostMatch::isa);
  isa.features = {"avx2", "fma"};
  CHECK(isa.matches(machine));  // a subset of the machine's features
  CHECK(isa.matches(intel));
  isa.features = {"avx2", "avx512f"};
  CHECK_FALSE(isa.matches(machine));
  isa.features = {};
  CHECK(isa.matches(machine));  // no requirement: every machine of the architecture
  HostDescriptor arm = machine;
  arm.architecture = "aarch64";
  CHECK_FALSE(isa.matches(arm));
}

TEST_CASE("generalised_clears_the_fields_outside_the_class_and_never_specialises") {
  HostDescriptor machine = tune_test::test_machine().with_conditions(4, false);
  const HostDescriptor model = machine.generalised(HostMatch::model);
  CHECK(model.match == HostMatch::model);
  CHECK(model.family == 25);
  CHECK(model.model == 33);
  CHECK(model.stepping == 0);
  CHECK(model.microarchitecture.empty());
  CHECK(model.features.empty());
  CHECK(model.l2_cache_bytes == 0);
  CHECK(model.physical_cores == 0);
  CHECK(model.effective_threads == 4);
  CHECK_FALSE(model.idle_spin);
  const HostDescriptor isa = machine.generalised(HostMatch::isa);
  CHECK(isa.vendor.empty());
  CHECK(isa.features == machine.features);
  // A class profile cannot become a more specific one.
  CHECK(isa.generalised(HostMatch::model) == isa);
  CHECK(model.generalised(HostMatch::exact) == model);
  CHECK(machine.generalised(HostMatch::exact) == machine);
  machine.microarchitecture.clear();
  CHECK_THROWS_AS(machine.generalised(HostMatch::microarchitecture), InvalidValueError);
  CHECK(parse_host_match("isa") == HostMatch::isa);
  CHECK_THROWS_AS(parse_host_match("cpu"), InvalidValueError);
}

TEST_CASE("class_profiles_round_trip_as_format_version_2_with_only_their_fields") {
  Fixture f;
  std::vector<CacheProfile> profiles;
  profiles.push_back(class_alpha(f, f.machine, 100));
  profiles.push_back(class_alpha(f, f.machine.generalised(HostMatch::model), 200));
  profiles.push_back(class_alpha(f, f.machine.generalised(HostMatch::microarchitecture), 300));
  profiles.push_back(class_alpha(f, f.machine.generalised(HostMatch::isa), 400));
  const std::string text = serialize_cache(profiles);
  CHECK(text.find("format_version = 2\n") != std::string::npos);
  CHECK(text.find("match = \"model\"\narchitecture = \"x86_64\"\nvendor = \"amd\"\nfamily = 25\nmodel = 33\n"
                  "effective_threads = 2\n") != std::string::npos);
  CHECK(text.find("match = \"isa\"\narchitecture = \"x86_64\"\nfeatures = [\"avx\", \"avx2\", \"fma\"]\n") !=
        std::string::npos);
  const CacheFile fast = parse_cache_text(text, "c");
  const CacheFile reference = parse_cache_text_reference(text, "c");
  REQUIRE(fast.status == FileStatus::loaded);
  REQUIRE(fast.profiles.size() == 4);
  REQUIRE(reference.profiles.size() == 4);
  for (std::size_t i = 0; i < 4; ++i) {
    CAPTURE(i);
    CHECK(fast.profiles[i].readable());
    CHECK(fast.profiles[i].host == reference.profiles[i].host);
    CHECK(fast.profiles[i].values == reference.profiles[i].values);
  }
  // The file order is (key, host) and every class is its own identity.
  CHECK(serialize_cache(fast.profiles) == text);
  // Without class profiles the file stays version 1, readable by the tools before version 2.
  CHECK(serialize_cache({profiles[0]}).find("format_version = 1\n") != std::string::npos);
}

TEST_CASE("class_profile_with_a_field_outside_its_class_is_invalid_and_named") {
  const std::string header = "format = \"onnx-light-kernel-tuning\"\nformat_version = 2\n";
  const std::string key =
      "[[profile]]\nlibrary = \"onnx_light\"\nkernel = \"Alpha\"\nimplementation = \"portable\"\n"
      "element_type = 1\ndevice = -1\ntuning_abi = 3\n";
  const std::string values = "[profile.values]\n\"parallel.minimum_elements\" = 64\n";
  auto problem_fields = [&](const std::string& host) {
    const CacheFile file = parse_cache_text(header + key + "[profile.host]\n" + host + values, "c");
    REQUIRE(file.status == FileStatus::loaded);
    REQUIRE(file.profiles.size() == 1);
    std::vector<std::string> fields;
    for (const auto& problem : file.profiles[0].problems) fields.push_back(problem.field);
    return fields;
  };
  CHECK(problem_fields("match = \"model\"\narchitecture = \"x86_64\"\nvendor = \"amd\"\nfamily = 25\nmodel = 33\n"
                       "effective_threads = 2\n")
            .empty());
  CHECK(problem_fields("match = \"model\"\narchitecture = \"x86_64\"\nvendor = \"amd\"\nfamily = 25\nmodel = 33\n"
                       "stepping = 1\neffective_threads = 2\n") == std::vector<std::string>{"host.stepping"});
  CHECK(problem_fields("match = \"model\"\narchitecture = \"x86_64\"\nvendor = \"amd\"\nfamily = 25\n"
                       "effective_threads = 2\n") == std::vector<std::string>{"host.model"});
  CHECK(problem_fields("match = \"cpu\"\narchitecture = \"x86_64\"\neffective_threads = 2\n") ==
        std::vector<std::string>{"host.match"});
  CHECK(problem_fields("match = \"isa\"\narchitecture = \"x86_64\"\neffective_threads = 2\n") ==
        std::vector<std::string>{"host.features"});
  CHECK(problem_fields("match = \"microarchitecture\"\narchitecture = \"x86_64\"\nvendor = \"amd\"\n"
                       "microarchitecture = \"\"\neffective_threads = 2\n") ==
        std::vector<std::string>{"host.microarchitecture"});
  // A version this build does not know is refused whole, and says so.
  const CacheFile newer = parse_cache_text("format = \"onnx-light-kernel-tuning\"\nformat_version = 3\n", "c");
  CHECK(newer.status == FileStatus::malformed);
  CHECK(newer.error.find("format_version 3 is newer") != std::string::npos);
}

TEST_CASE("most_specific_match_is_in_force_then_the_user_layer") {
  Fixture f;
  HostDescriptor two_features = f.machine.generalised(HostMatch::isa);
  two_features.features = {"avx", "avx2"};
  HostDescriptor one_feature = two_features;
  one_feature.features = {"avx"};

  SUBCASE("a system model profile beats a user isa profile") {
    write_class_cache(f, f.cache, {class_alpha(f, two_features, 111)});
    write_class_cache(f, f.system_cache, {class_alpha(f, f.machine.generalised(HostMatch::model), 222)});
    REQUIRE(load_kernel_tuning_cache(load_class_cache(f), f.context()).published);
    CHECK(published_minimum(f) == 222);
    const InspectReport report = inspect_class_cache(f);
    const auto& isa = inspected_with_match(report, CacheLayer::user, HostMatch::isa);
    const auto& model = inspected_with_match(report, CacheLayer::system, HostMatch::model);
    CHECK(model.in_force);
    CHECK(model.matched_by == HostMatch::model);
    REQUIRE(model.shadows.size() == 1);
    CHECK(model.shadows[0].layer == CacheLayer::user);
    CHECK(model.shadows[0].matched_by == HostMatch::isa);
    CHECK(model.to_json()["shadows"][0]["matched_by"] == "isa");
    CHECK(isa.shadows.empty());
    CHECK_FALSE(model.shadowed);
    CHECK_FALSE(isa.in_force);
    CHECK(isa.shadowed);
    REQUIRE(isa.shadowed_by);
    CHECK(isa.shadowed_by->layer == CacheLayer::system);
    CHECK(isa.shadowed_by->matched_by == HostMatch::model);
    CHECK(isa.to_json()["shadowed_by"]["matched_by"] == "model");
    CHECK(isa.to_json()["matched_by"] == "isa");
  }
  SUBCASE("at equal specificity the user layer wins") {
    write_class_cache(f, f.cache, {class_alpha(f, f.machine.generalised(HostMatch::microarchitecture), 333)});
    write_class_cache(f, f.system_cache, {class_alpha(f, f.machine.generalised(HostMatch::microarchitecture), 444)});
    REQUIRE(load_kernel_tuning_cache(load_class_cache(f), f.context()).published);
    CHECK(published_minimum(f) == 333);
    const InspectReport report = inspect_class_cache(f);
    CHECK(inspected_with_match(report, CacheLayer::user, HostMatch::microarchitecture).in_force);
    CHECK(inspected_with_match(report, CacheLayer::system, HostMatch::microarchitecture).shadowed);
  }
  SUBCASE("an exact profile beats every class, and the isa profile needing more features beats another") {
    write_class_cache(f, f.cache, {class_alpha(f, one_feature, 555), class_alpha(f, two_features, 666)});
    REQUIRE(load_kernel_tuning_cache(load_class_cache(f), f.context()).published);
    CHECK(published_minimum(f) == 666);
    write_class_cache(f, f.system_cache, {class_alpha(f, f.machine, 777)});
    REQUIRE(load_kernel_tuning_cache(load_class_cache(f), f.context()).published);
    CHECK(published_minimum(f) == 777);
    // list says which profile is in force, why, and what it shadows.
    ParametersOptions list;
    list.selection.kernels = {"Alpha"};
    list.selection.element_types = {1};
    list.path = f.cache.string();
    list.num_threads = 2;
    const KernelParametersReport listed = kernel_tuning_parameters(list, f.context());
    REQUIRE(listed.kernels.size() == 1);
    const KernelTuningEntry& entry = listed.kernels[0];
    CHECK(entry.matched_by == HostMatch::exact);
    CHECK(entry.cached_layer == CacheLayer::system);
    REQUIRE(entry.shadows.size() == 2);
    CHECK(entry.shadows[0].matched_by == HostMatch::isa);
    CHECK(entry.to_json()["matched_by"] == "exact");
    CHECK(entry.to_json()["shadows"].size() == 2);
  }
}

TEST_CASE("class_profile_of_another_class_is_incompatible_with_the_field_named") {
  Fixture f;
  HostDescriptor wide = f.machine.generalised(HostMatch::isa);
  wide.features = {"avx2", "avx512f"};
  HostDescriptor other = f.machine;
  other.model = 97;
  write_class_cache(f, f.cache, {class_alpha(f, wide, 1), class_alpha(f, other.generalised(HostMatch::model), 2)});
  const InspectReport report = inspect_class_cache(f);
  REQUIRE(report.profiles.size() == 2);
  for (const auto& p : report.profiles) {
    CHECK(p.classification == ProfileClass::incompatible);
    CHECK_FALSE(p.matched_by);
    CHECK_FALSE(p.in_force);
  }
  std::string messages;
  for (const auto& d : report.diagnostics) messages += d.message + "\n";
  CHECK(messages.find("this one lacks avx512f") != std::string::npos);
  CHECK(messages.find("a model profile of another class of machines (host.model is 97, here 33)") !=
        std::string::npos);
  // And nothing is published for them.
  REQUIRE(load_kernel_tuning_cache(load_class_cache(f), f.context()).published);
  CHECK(f.registry.snapshot()->find(tune_test::alpha_schema(1, "portable").key, 2, true) == nullptr);
}

TEST_CASE("set_with_a_class_match_writes_and_fills_from_the_class_profile") {
  Fixture f;
  SetOptions options;
  options.kernel = "Alpha";
  options.path = f.cache.string();
  options.num_threads = 2;
  options.match = HostMatch::model;
  options.values = {{"split.ratio", 0.25}};
  REQUIRE(set_kernel_tuning_parameters(options, f.context()).status == UpdateStatus::updated);
  options.values = {{"mode", std::string("fast")}};
  const SetReport second = set_kernel_tuning_parameters(options, f.context());
  REQUIRE(second.status == UpdateStatus::updated);
  CHECK(second.values.at("split.ratio") == runtime::TuningValue(0.25));  // from the model profile
  const CacheFile file = read_cache_file(f.cache);
  REQUIRE(file.profiles.size() == 1);
  CHECK(file.profiles[0].host == f.machine.with_threads(2).generalised(HostMatch::model));
  CHECK(read_text(f.cache).find("format_version = 2") != std::string::npos);
  // An exact set of the same key is a profile of its own, in force over the class one.
  options.match = HostMatch::exact;
  options.values = {{"split.ratio", 0.75}};
  REQUIRE(set_kernel_tuning_parameters(options, f.context()).status == UpdateStatus::updated);
  CHECK(read_cache_file(f.cache).profiles.size() == 2);
  const InspectReport report = inspect_class_cache(f);
  CHECK(inspected_with_match(report, CacheLayer::user, HostMatch::exact).in_force);
  CHECK(inspected_with_match(report, CacheLayer::user, HostMatch::model).shadowed_by->matched_by == HostMatch::exact);
  // remove --foreign keeps both: they apply here.
  RemoveOptions remove;
  remove.path = f.cache.string();
  remove.foreign = true;
  remove.dry_run = true;
  CHECK(remove_kernel_tuning_cache(remove, f.context()).removed_profiles.empty());
}

TEST_CASE("export_host_class_merges_agreeing_profiles_and_refuses_disagreeing_ones") {
  Fixture f;
  HostDescriptor stepping_two = f.machine;
  stepping_two.stepping = 2;
  ExportOptions exporting;
  exporting.path = f.cache.string();
  exporting.all_hosts = true;
  exporting.host_class = HostMatch::model;
  exporting.output = (f.dir / "model.cache").string();

  SUBCASE("agreeing: one model profile") {
    CacheProfile older = class_alpha(f, f.machine, 512);
    CacheProfile newer = class_alpha(f, stepping_two, 512);
    newer.provenance.written = "2026-12-05T10:00:00Z";
    write_class_cache(f, f.cache, {older, newer});
    const ExportReport report = export_kernel_tuning_cache(exporting, f.context());
    REQUIRE(report.status == "exported");
    REQUIRE(report.profiles.size() == 1);
    CHECK(report.profiles[0].host.match == HostMatch::model);
    CHECK(report.profiles[0].provenance.written == "2026-12-05T10:00:00Z");
    CHECK(report.to_json()["host_class"] == "model");
    const CacheFile written = read_cache_file(exporting.output);
    REQUIRE(written.profiles.size() == 1);
    CHECK(written.profiles[0].host == f.machine.with_threads(2).generalised(HostMatch::model));
    // The class profile applies on both steppings.
    CHECK(written.profiles[0].host.matches(stepping_two));
  }
  SUBCASE("disagreeing: nothing written, both named") {
    write_class_cache(f, f.cache, {class_alpha(f, f.machine, 512), class_alpha(f, stepping_two, 1024)});
    try {
      (void)export_kernel_tuning_cache(exporting, f.context());
      FAIL("export did not refuse");
    } catch (const InvalidValueError& error) {
      const std::string message = error.what();
      CHECK(message.find("stepping 0") != std::string::npos);
      CHECK(message.find("stepping 2") != std::string::npos);
      CHECK(message.find("parallel.minimum_elements=512") != std::string::npos);
      CHECK(message.find("parallel.minimum_elements=1024") != std::string::npos);
    }
    CHECK_FALSE(std::filesystem::exists(exporting.output));
  }
}

TEST_CASE("fleet_of_three_hosts_in_two_classes_loads_its_own_or_its_class_profiles") {
  // Hosts a1 and a2 share a CPU model (another stepping); b is another model. a1 and b each write
  // their own profiles, export them (a1 generalised to its model), the exports are merged into one
  // system cache, and every host classifies that cache as --as-host would.
  Fixture f;
  HostDescriptor a1 = f.machine;
  HostDescriptor a2 = f.machine;
  a2.stepping = 2;
  a2.physical_cores = 4;
  HostDescriptor b = f.machine;
  b.family = 26;
  b.model = 2;
  b.microarchitecture = "zen5";
  b.features = {"avx", "avx2", "avx512f", "fma"};  // sorted, as a descriptor is
  HostDescriptor c = b;  // no profile of its own or of its class
  c.model = 68;
  auto on = [&](const HostDescriptor& host) {
    OperationContext context = f.context();
    context.machine = host;
    return context;
  };
  auto set_on = [&](const HostDescriptor& host, const std::filesystem::path& cache, int64_t minimum) {
    SetOptions options;
    options.kernel = "Alpha";
    options.path = cache.string();
    options.num_threads = 2;
    options.load = false;
    options.values = {{"parallel.minimum_elements", minimum}};
    REQUIRE(set_kernel_tuning_parameters(options, on(host)).status == UpdateStatus::updated);
  };
  const auto a1_cache = f.dir / "a1.cache", a2_cache = f.dir / "a2.cache", b_cache = f.dir / "b.cache";
  set_on(a1, a1_cache, 1000);
  set_on(b, b_cache, 3000);
  set_on(a2, a2_cache, 2000);  // a2's own profile stays in its user cache

  ExportOptions exporting;
  exporting.path = a1_cache.string();
  exporting.host_class = HostMatch::model;
  exporting.output = (f.dir / "a.export").string();
  REQUIRE(export_kernel_tuning_cache(exporting, on(a1)).status == "exported");
  exporting.path = b_cache.string();
  exporting.host_class = HostMatch::exact;
  exporting.output = (f.dir / "b.export").string();
  REQUIRE(export_kernel_tuning_cache(exporting, on(b)).status == "exported");
  MergeOptions merging;
  merging.files = {(f.dir / "b.export").string(), (f.dir / "a.export").string()};
  merging.output = f.system_cache.string();
  REQUIRE(merge_kernel_tuning_caches(merging, f.context()).status == "merged");

  struct Expectation {
    const HostDescriptor* host;
    std::filesystem::path user_cache;
    std::optional<int64_t> minimum;
    std::optional<HostMatch> matched_by;
    CacheLayer layer;
  };
  const std::vector<Expectation> expectations = {
      {&a1, f.dir / "none.cache", 1000, HostMatch::model, CacheLayer::system},
      {&a2, a2_cache, 2000, HostMatch::exact, CacheLayer::user},
      {&a2, f.dir / "none.cache", 1000, HostMatch::model, CacheLayer::system},
      {&b, f.dir / "none.cache", 3000, HostMatch::exact, CacheLayer::system},
      {&c, f.dir / "none.cache", std::nullopt, std::nullopt, CacheLayer::system},
  };
  for (std::size_t i = 0; i < expectations.size(); ++i) {
    CAPTURE(i);
    const Expectation& e = expectations[i];
    runtime::TuningRegistry registry;
    OperationContext context = on(*e.host);
    context.registry = &registry;
    LoadOptions load;
    load.path = e.user_cache.string();
    REQUIRE(load_kernel_tuning_cache(load, context).published);
    const TuningValues* published = registry.snapshot()->find(tune_test::alpha_schema(1, "portable").key, 2, true);
    if (!e.minimum) {
      CHECK(published == nullptr);
    } else {
      REQUIRE(published != nullptr);
      CHECK(std::get<int64_t>(published->at("parallel.minimum_elements")) == *e.minimum);
    }
    ParametersOptions list;
    list.selection.kernels = {"Alpha"};
    list.selection.element_types = {1};
    list.path = e.user_cache.string();
    list.num_threads = 2;
    const KernelParametersReport listed = kernel_tuning_parameters(list, context);
    REQUIRE(listed.kernels.size() == 1);
    CHECK(listed.kernels[0].matched_by == e.matched_by);
    if (e.matched_by) CHECK(listed.kernels[0].cached_layer == e.layer);
    // inspect explains each profile of the system cache for this host.
    InspectOptions inspect;
    inspect.path = e.user_cache.string();
    inspect.threads = 2;
    const InspectReport report = inspect_kernel_tuning_cache(inspect, context);
    std::size_t in_force = 0;
    for (const auto& p : report.profiles) {
      if (p.in_force) {
        ++in_force;
        CHECK(p.matched_by == e.matched_by);
      }
      CHECK(p.matched_by.has_value() == (p.classification == ProfileClass::loaded));
    }
    CHECK(in_force == (e.minimum ? 1u : 0u));
  }
}

TEST_CASE("class_profile_with_fields_outside_its_class_is_refused_before_writing") {
  Fixture f;
  CacheProfile model = class_alpha(f, f.machine.generalised(HostMatch::model), 64);
  model.host.stepping = 1;  // would be lost: the file records a model profile's class fields only
  UpdateOptions options;
  options.kernels = f.table.get();
  CHECK_THROWS_WITH_AS(write_profiles(f.cache, {model}, options), doctest::Contains("only the fields of its class"),
                       InvalidValueError);
  CacheProfile uarch = class_alpha(f, f.machine.generalised(HostMatch::microarchitecture), 64);
  uarch.host.microarchitecture.clear();
  CHECK_THROWS_AS(write_profiles(f.cache, {uarch}, options), InvalidValueError);
  CHECK_FALSE(std::filesystem::exists(f.cache));
  CHECK(profile_write_problem(class_alpha(f, f.machine.generalised(HostMatch::isa), 64)) == std::nullopt);
}
