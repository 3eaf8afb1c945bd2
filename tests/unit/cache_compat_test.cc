// Format compatibility (issue 23): tests/data/cache_format_v1.cache was written by the version of
// 2026-12-03 and is frozen (tests/data/README.md). Every later version must read it to exactly
// these profiles, classify them the same way, and keep them when it rewrites the file.
//
// Classification depends on the kernels a build registers and on the machine, so it is checked
// against the schemas registered when the file was written (mirrored below) and against fixed
// machine descriptors (the file's own "local-ish" host and its foreign ones), never against the
// machine the test runs on.
#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include <doctest/doctest.h>
#include <fmt/format.h>

#include "onnx_light/runtime/kernel_table.h"
#include "onnx_light/tune/cache_file.h"
#include "onnx_light/tune/cache_update.h"
#include "onnx_light/tune/classification.h"
#include "onnx_light/tune/kernel_selection.h"
#include "onnx_light/tune/operations.h"
#include "tune_fixture.h"

using namespace onnx_light;
using namespace onnx_light::tune;
namespace rt = onnx_light::runtime;

namespace {

const std::filesystem::path kV1Cache = std::filesystem::path(ONNX_LIGHT_SOURCE_DIR) / "tests/data/cache_format_v1.cache";

const std::vector<std::string> kLocalFeatures = {
    "avx",        "avx2",        "avx512bf16", "avx512bw",  "avx512cd", "avx512dq",        "avx512f",
    "avx512ifma", "avx512vbmi",  "avx512vbmi2", "avx512vl", "avx512vnni", "avx512vpopcntdq", "bmi2",
    "f16c",       "fma",         "popcnt",     "sse3",      "sse4_1",   "sse4_2",          "ssse3"};

// The machine that wrote the file's local profiles (as detected that day).
HostDescriptor local_ish_host(int64_t threads) {
  HostDescriptor host;
  host.architecture = "x86_64";
  host.vendor = "amd";
  host.family = 26;
  host.model = 2;
  host.stepping = 1;
  host.microarchitecture = "";
  host.features = kLocalFeatures;
  host.l1d_cache_bytes = 0;
  host.l2_cache_bytes = 0;
  host.l3_cache_bytes = 0;
  host.physical_cores = 1;
  host.logical_cores = 2;
  host.effective_threads = threads;
  return host;
}

HostDescriptor neoverse_host() {
  HostDescriptor host;
  host.architecture = "aarch64";
  host.vendor = "arm";
  host.family = 65;
  host.model = 3340;
  host.stepping = 17;
  host.microarchitecture = "neoverse-n1";
  host.features = {"asimd", "asimddp", "fp16"};
  host.l1d_cache_bytes = 65536;
  host.l2_cache_bytes = 1048576;
  host.l3_cache_bytes = 33554432;
  host.physical_cores = 64;
  host.logical_cores = 64;
  host.effective_threads = 4;
  return host;
}

HostDescriptor sapphire_rapids_host() {
  HostDescriptor host;
  host.architecture = "x86_64";
  host.vendor = "intel";
  host.family = 6;
  host.model = 143;
  host.stepping = 8;
  host.microarchitecture = "sapphire rapids";
  host.features = {"avx", "avx2", "avx512bw", "avx512dq", "avx512f", "avx512vl", "fma", "sse4_2"};
  host.l1d_cache_bytes = 49152;
  host.l2_cache_bytes = 2097152;
  host.l3_cache_bytes = 110100480;
  host.physical_cores = 56;
  host.logical_cores = 112;
  host.effective_threads = 8;
  return host;
}

rt::TuningKey key(const std::string& kernel, const std::string& implementation, int32_t element_type, int32_t abi) {
  rt::TuningKey k;
  k.kernel = kernel;
  k.implementation = implementation;
  k.element_type = element_type;
  k.tuning_abi = abi;
  return k;
}

// The schemas of the file's keys as registered on 2026-12-03 (Abs/Relu elementwise, the packed Gemm).
std::unique_ptr<rt::KernelTable> v1_kernel_table() {
  auto table = std::make_unique<rt::KernelTable>();
  auto add = [&](const std::string& op, rt::ElementType type, rt::TuningSchema schema) {
    table->add(tune_test::make_def(op, type, std::move(schema), true));
  };
  rt::TuningSchema abs_avx2 = rt::parallel_threshold_schema(key("Abs", "avx2", 1, 2), 32768);
  rt::ParameterSpec streaming;
  streaming.name = "store.streaming_minimum_elements";
  streaming.type = rt::ValueType::int64;
  streaming.default_value = int64_t{4194304};
  streaming.minimum = 1;
  streaming.maximum = static_cast<double>(int64_t{1} << 40);
  abs_avx2.parameters.push_back(streaming);
  add("Abs", rt::ElementType::float32, abs_avx2);
  add("Abs", rt::ElementType::float32, rt::parallel_threshold_schema(key("Abs", "portable", 1, 2), 32768));
  add("Relu", rt::ElementType::float64, rt::parallel_threshold_schema(key("Relu", "portable", 11, 1), 32768));
  for (const char* implementation : {"avx512", "avx2"}) {
    rt::TuningSchema gemm{key("Gemm", implementation, 1, 1), {}};
    gemm.parameters.push_back(rt::threshold_parameter("parallel.minimum_macs", 262144, int64_t{1} << 50, ""));
    gemm.parameters.push_back(rt::tile_parameter("gemm.block_m", 96, {24, 48, 96, 192, 384, 768}, ""));
    gemm.parameters.push_back(rt::tile_parameter("gemm.block_k", 256, {64, 128, 192, 256, 384, 512, 1024}, ""));
    gemm.parameters.push_back(rt::tile_parameter("gemm.block_n", 256, {32, 64, 128, 256, 512, 1024, 2048}, ""));
    add("Gemm", rt::ElementType::float32, gemm);
  }
  return table;
}

struct Expected {
  rt::TuningKey key;
  HostDescriptor host;
  rt::TuningValues values;
  Provenance provenance;
};

// Profiles 0-8 exactly as the file holds them (profile 9 is unreadable and checked on its own).
std::vector<Expected> expected_readable_profiles() {
  return {
      {key("Abs", "avx2", 1, 2), local_ish_host(1),
       {{"parallel.minimum_elements", int64_t{65536}}, {"store.streaming_minimum_elements", int64_t{8388608}}},
       {"calibrate", "2026-12-03T16:20:02Z", "0.1.0"}},
      {key("Abs", "avx2", 1, 2), local_ish_host(2),
       {{"parallel.minimum_elements", int64_t{8192}}, {"store.streaming_minimum_elements", int64_t{4194304}}},
       {"set", "2026-12-03T16:20:01Z", "0.1.0"}},
      {key("Abs", "portable", 1, 1), local_ish_host(2), {{"parallel.minimum_elements", int64_t{16384}}},
       {"set", "2026-12-01T09:00:00Z", "0.0.9"}},
      {key("Abs", "portable", 1, 2), neoverse_host(), {{"parallel.minimum_elements", int64_t{131072}}},
       {"import", "2026-11-30T23:59:59Z", "0.1.0"}},
      {key("FutureOp", "portable", 1, 1), sapphire_rapids_host(),
       {{"x.count", int64_t{-3}}, {"x.enabled", true}, {"x.mode", std::string("fast \"quoted\" \\ \xc3\xa9")},
        {"x.ratio", 0.25}},
       {"import", "2026-11-29T12:00:01Z", "0.1.0"}},
      {key("Gemm", "avx2", 1, 1), local_ish_host(2),
       {{"gemm.block_k", int64_t{256}}, {"gemm.block_m", int64_t{100}}, {"gemm.block_n", int64_t{256}},
        {"parallel.minimum_macs", int64_t{262144}}},
       {"import", "2026-12-03T16:20:05Z", "0.1.0"}},
      {key("Gemm", "avx512", 1, 1), local_ish_host(2),
       {{"gemm.block_k", int64_t{256}}, {"gemm.block_m", int64_t{48}}, {"gemm.block_n", int64_t{512}},
        {"parallel.minimum_macs", int64_t{131072}}},
       {"calibrate", "2026-12-03T16:20:03Z", "0.1.0"}},
      {key("Gemm", "avx512", 1, 1), sapphire_rapids_host(),
       {{"gemm.block_k", int64_t{384}}, {"gemm.block_m", int64_t{192}}, {"gemm.block_n", int64_t{1024}},
        {"parallel.minimum_macs", int64_t{65536}}},
       {"calibrate", "2026-11-29T12:00:00Z", "0.1.0"}},
      {key("Relu", "portable", 11, 1), local_ish_host(2), {{"parallel.minimum_elements", int64_t{65536}}},
       {"set", "2026-12-03T16:20:04Z", "0.1.0"}},
  };
}

void check_host(const HostDescriptor& got, const HostDescriptor& want) {
  CHECK(got.architecture == want.architecture);
  CHECK(got.vendor == want.vendor);
  CHECK(got.family == want.family);
  CHECK(got.model == want.model);
  CHECK(got.stepping == want.stepping);
  CHECK(got.microarchitecture == want.microarchitecture);
  CHECK(got.features == want.features);
  CHECK(got.l1d_cache_bytes == want.l1d_cache_bytes);
  CHECK(got.l2_cache_bytes == want.l2_cache_bytes);
  CHECK(got.l3_cache_bytes == want.l3_cache_bytes);
  CHECK(got.physical_cores == want.physical_cores);
  CHECK(got.logical_cores == want.logical_cores);
  CHECK(got.effective_threads == want.effective_threads);
}

void check_values(const rt::TuningValues& got, const rt::TuningValues& want) {
  REQUIRE(got.size() == want.size());
  for (const auto& entry : want) {  // not a structured binding: clang 14 cannot capture those
    const std::string& name = entry.first;
    const rt::TuningValue& value = entry.second;
    CAPTURE(name);
    REQUIRE(got.contains(name));
    // Same alternative (int64 stays int64, never read back as double) and same value.
    CHECK(got.at(name).index() == value.index());
    CHECK(rt::format_value(got.at(name)) == rt::format_value(value));
    CHECK(got.at(name) == value);
  }
}

void check_profiles(const CacheFile& file) {
  REQUIRE(file.status == FileStatus::loaded);
  CHECK(file.error.empty());
  REQUIRE(file.profiles.size() == 10);
  const std::vector<Expected> expected = expected_readable_profiles();
  for (std::size_t i = 0; i < expected.size(); ++i) {
    CAPTURE(i);
    const CacheProfile& got = file.profiles[i];
    const Expected& want = expected[i];
    CHECK(got.readable());
    CHECK(got.key.library == "onnx_light");
    CHECK(got.key.kernel == want.key.kernel);
    CHECK(got.key.implementation == want.key.implementation);
    CHECK(got.key.element_type == want.key.element_type);
    CHECK(got.key.device == -1);
    CHECK(got.key.tuning_abi == want.key.tuning_abi);
    check_host(got.host, want.host);
    CHECK(got.host.idle_spin);  // written before the spin class existed: the default spin
    check_values(got.values, want.values);
    CHECK(got.provenance.source == want.provenance.source);
    CHECK(got.provenance.written == want.provenance.written);
    CHECK(got.provenance.tool_version == want.provenance.tool_version);
  }
  // Profile 9: a mistyped host field. It stays in the file, unreadable, naming the field; what
  // could be read is kept for diagnostics.
  const CacheProfile& broken = file.profiles[9];
  CHECK_FALSE(broken.readable());
  REQUIRE(broken.problems.size() == 1);
  CHECK(broken.problems[0].field == "host.effective_threads");
  CHECK(broken.key.kernel == "Relu");
  CHECK(broken.key.implementation == "portable");
  CHECK(broken.host.vendor == "intel");
  CHECK(broken.raw_toml.find("\"eight\"") != std::string::npos);
}

}  // namespace

TEST_CASE("cache_format_v1_file_reads_field_by_field") {
  const CacheFile file = read_cache_file(kV1Cache);
  CHECK(file.path == kV1Cache);
  check_profiles(file);
  // The fast sectioned reader and the whole-document reference agree on it.
  const std::string text = tune_test::read_text(kV1Cache);
  check_profiles(parse_cache_text(text, kV1Cache));
  check_profiles(parse_cache_text_reference(text, kV1Cache));
}

TEST_CASE("cache_format_v1_classifications_on_the_machine_that_wrote_it") {
  const auto table = v1_kernel_table();
  const SchemaIndex schemas(*table);
  const CacheFile file = read_cache_file(kV1Cache);
  REQUIRE(file.profiles.size() == 10);
  // Threads do not take part in loading: any effective_threads of the machine gives the same.
  for (int64_t threads : {1, 2, 7}) {
    CAPTURE(threads);
    const std::vector<Classification> classes = classify_profiles(file, CacheLayer::user, schemas, local_ish_host(threads));
    REQUIRE(classes.size() == 10);
    struct Want {
      ProfileClass value;
      std::string field;  // of the first diagnostic; "" when none or a whole-key diagnostic
    };
    const std::vector<Want> want = {
        {ProfileClass::loaded, ""},
        {ProfileClass::loaded, ""},
        {ProfileClass::stale, "tuning_abi"},
        {ProfileClass::incompatible, "host.architecture"},
        {ProfileClass::incompatible, ""},  // FutureOp: no such key
        {ProfileClass::invalid, "values.gemm.block_m"},
        {ProfileClass::loaded, ""},
        {ProfileClass::incompatible, "host.vendor"},
        {ProfileClass::loaded, ""},
        {ProfileClass::invalid, "host.effective_threads"},
    };
    for (std::size_t i = 0; i < want.size(); ++i) {
      CAPTURE(i);
      CHECK(profile_class_name(classes[i].value) == profile_class_name(want[i].value));
      if (want[i].value == ProfileClass::loaded) {
        CHECK(classes[i].diagnostics.empty());
      } else {
        REQUIRE_FALSE(classes[i].diagnostics.empty());
        CHECK(classes[i].diagnostics.front().field == want[i].field);
        CHECK(classes[i].diagnostics.front().profile == i);
      }
    }
  }
}

TEST_CASE("cache_format_v1_foreign_profiles_load_on_their_own_machines") {
  const auto table = v1_kernel_table();
  const SchemaIndex schemas(*table);
  const CacheFile file = read_cache_file(kV1Cache);
  REQUIRE(file.profiles.size() == 10);
  // On the Neoverse machine only its own profile loads; the local-ish ones are foreign there.
  const auto on_arm = classify_profiles(file, CacheLayer::user, schemas, neoverse_host());
  CHECK(on_arm[3].value == ProfileClass::loaded);
  for (std::size_t i : {0, 1, 6, 7, 8}) {
    CAPTURE(i);
    CHECK(on_arm[i].value == ProfileClass::incompatible);
  }
  CHECK(on_arm[2].value == ProfileClass::stale);  // stale on any host
  // On the Sapphire Rapids machine its Gemm loads; FutureOp stays unknown.
  const auto on_intel = classify_profiles(file, CacheLayer::user, schemas, sapphire_rapids_host());
  CHECK(on_intel[7].value == ProfileClass::loaded);
  CHECK(on_intel[6].value == ProfileClass::incompatible);
  CHECK(on_intel[4].value == ProfileClass::incompatible);
  CHECK(on_intel[3].value == ProfileClass::incompatible);
}

TEST_CASE("cache_format_v1_inspect_reports_local_profiles") {
  tune_test::Fixture f;
  f.table = v1_kernel_table();
  f.machine = local_ish_host(0);
  InspectOptions options;
  options.path = kV1Cache.string();
  options.threads = 2;
  const InspectReport report = inspect_kernel_tuning_cache(options, f.context());
  CHECK(report.status == FileStatus::loaded);
  // Only the profiles written for 2 threads (and the unreadable one, whose threads are unknown).
  std::vector<std::size_t> indices;
  std::vector<std::string> summary;
  for (const auto& p : report.profiles) {
    indices.push_back(p.index);
    summary.push_back(fmt::format("{} {} {}", p.index, profile_class_name(p.classification), p.local ? "local" : "-"));
  }
  CHECK(summary == std::vector<std::string>{"1 loaded local", "2 stale -", "5 invalid -", "6 loaded local",
                                            "8 loaded local"});
}

TEST_CASE("cache_format_v1_survives_an_update_by_this_version") {
  tune_test::ScratchDir dir;
  const auto copy = dir / "kernel_tuning.cache";
  std::filesystem::copy_file(kV1Cache, copy);
  CacheProfile added;
  added.key = key("Relu", "portable", 11, 1);
  added.host = local_ish_host(1);
  added.values = {{"parallel.minimum_elements", int64_t{4096}}};
  added.provenance = {"set", "2026-12-04T00:00:00Z", "0.1.0"};
  const UpdateResult result = write_profiles(copy, {added});
  REQUIRE(result.status == UpdateStatus::updated);
  CHECK(result.preserved.size() == 10);
  const CacheFile after = read_cache_file(copy);
  REQUIRE(after.status == FileStatus::loaded);
  REQUIRE(after.profiles.size() == 11);
  // The old profiles, foreign, stale, invalid and unreadable ones included, come back unchanged.
  const CacheFile before = read_cache_file(kV1Cache);
  for (std::size_t i = 0; i < before.profiles.size(); ++i) {
    CAPTURE(i);
    const CacheProfile& old = before.profiles[i];
    const bool kept = std::any_of(after.profiles.begin(), after.profiles.end(), [&](const CacheProfile& p) {
      return old.readable() ? p.readable() && p.key == old.key && p.host == old.host && p.values == old.values &&
                                  p.provenance == old.provenance
                            : !p.readable() && p.raw_toml == old.raw_toml;
    });
    CHECK(kept);
  }
}
