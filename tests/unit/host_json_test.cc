// The JSON host descriptor reader behind `--as-host FILE` (host_from_json, read_host_file) and the
// dispatch features derived from a descriptor.
#include <fstream>
#include <string>

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include "onnx_light/runtime/error.h"
#include "onnx_light/tune/host.h"
#include "tune_fixture.h"

using namespace onnx_light;
using namespace onnx_light::tune;

namespace {

nlohmann::json descriptor_json(const HostDescriptor& host) {
  nlohmann::json object = nlohmann::json::object();
  host.to_json(object);
  return object;
}

// The message of the exception `read` throws, checked to be of type E.
template <typename E, typename Read>
std::string error_of(Read read) {
  try {
    read();
  } catch (const E& e) {
    return e.what();
  } catch (const std::exception& e) {
    FAIL("wrong exception type: " << e.what());
    return {};
  }
  FAIL("no exception");
  return {};
}

bool host_error_mentions(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace

TEST_CASE("host_json_round_trips_every_field") {
  HostDescriptor host = tune_test::test_machine().with_threads(6);
  host.stepping = 2;
  CHECK(host_from_json(descriptor_json(host), "h.json") == host);
  // This machine too, with the informational hostname `host --json` adds.
  nlohmann::json here = descriptor_json(detect_host(1));
  here["hostname"] = "build-07";
  CHECK(host_from_json(here, "h.json") == detect_host(1));
  // Parking sessions round-trip; a descriptor written before idle_spin existed means spinning ones.
  const HostDescriptor parks = tune_test::test_machine().with_conditions(2, false);
  CHECK(host_from_json(descriptor_json(parks), "h.json") == parks);
  nlohmann::json older = descriptor_json(parks);
  older.erase("idle_spin");
  CHECK(host_from_json(older, "h.json").idle_spin);
}

TEST_CASE("host_json_sorts_and_deduplicates_features") {
  nlohmann::json object = descriptor_json(tune_test::test_machine().with_threads(1));
  object["features"] = {"fma", "avx2", "avx", "fma"};
  CHECK(host_from_json(object, "h.json").features == std::vector<std::string>{"avx", "avx2", "fma"});
}

TEST_CASE("host_json_errors_name_the_source_and_the_field") {
  const nlohmann::json good = descriptor_json(tune_test::test_machine().with_threads(2));
  auto with = [&](const char* field, nlohmann::json value) {
    nlohmann::json object = good;
    object[field] = std::move(value);
    return object;
  };
  auto read = [](nlohmann::json object) { return [object] { (void)host_from_json(object, "fleet/a.json"); }; };

  nlohmann::json missing = good;
  missing.erase("stepping");
  std::string message = error_of<InvalidValueError>(read(missing));
  CHECK(host_error_mentions(message, "fleet/a.json: field 'stepping' is missing"));

  message = error_of<InvalidValueError>(read(with("steping", 1)));
  CHECK(host_error_mentions(message, "fleet/a.json: unknown field 'steping'"));

  message = error_of<TypeMismatchError>(read(with("stepping", "1")));
  CHECK(host_error_mentions(message, "fleet/a.json: field 'stepping' must be an integer, got a string"));
  message = error_of<TypeMismatchError>(read(with("family", 6.5)));
  CHECK(host_error_mentions(message, "field 'family' must be an integer, got a number with a fraction"));
  message = error_of<TypeMismatchError>(read(with("physical_cores", true)));
  CHECK(host_error_mentions(message, "field 'physical_cores' must be an integer, got a boolean"));
  message = error_of<TypeMismatchError>(read(with("vendor", nullptr)));
  CHECK(host_error_mentions(message, "field 'vendor' must be a string, got null"));
  message = error_of<TypeMismatchError>(read(with("features", "avx2")));
  CHECK(host_error_mentions(message, "field 'features' must be an array of strings, got a string"));
  message = error_of<TypeMismatchError>(read(with("features", {"avx", 2})));
  CHECK(host_error_mentions(message, "field 'features' must be an array of strings; element 1 is an integer"));
  message = error_of<TypeMismatchError>(read(with("idle_spin", "no")));
  CHECK(host_error_mentions(message, "field 'idle_spin' must be true or false, got a string"));
  message = error_of<TypeMismatchError>(read(with("idle_spin", 0)));
  CHECK(host_error_mentions(message, "field 'idle_spin' must be true or false, got an integer"));
  message = error_of<TypeMismatchError>(read(with("hostname", 7)));
  CHECK(host_error_mentions(message, "field 'hostname' must be a string"));

  message = error_of<InvalidValueError>(read(with("model", -1)));
  CHECK(host_error_mentions(message, "field 'model' = -1 is out of range"));
  message = error_of<InvalidValueError>(read(with("effective_threads", 0)));
  CHECK(host_error_mentions(message, "field 'effective_threads' = 0 is out of range [1, 1048576]"));
  message = error_of<InvalidValueError>(read(with("l3_cache_bytes", nlohmann::json(uint64_t{1} << 63))));
  CHECK(host_error_mentions(message, "field 'l3_cache_bytes' = 9223372036854775808 is out of range"));

  message = error_of<TypeMismatchError>(read(nlohmann::json::array({1, 2})));
  CHECK(host_error_mentions(message, "fleet/a.json: a host descriptor must be a JSON object"));
}

TEST_CASE("host_file_errors_name_the_file") {
  tune_test::ScratchDir dir;
  const auto missing = dir / "absent.json";
  CHECK(host_error_mentions(error_of<NotFoundError>([&] { (void)read_host_file(missing); }),
                 missing.string() + ": no such host descriptor file"));
  CHECK(host_error_mentions(error_of<IoError>([&] { (void)read_host_file(dir.path()); }), "is a directory"));

  const auto broken = dir / "broken.json";
  std::ofstream(broken) << "{\"architecture\": ";
  const std::string message = error_of<InvalidValueError>([&] { (void)read_host_file(broken); });
  CHECK(host_error_mentions(message, broken.string() + ": not a JSON host descriptor (parse error at line 1"));

  const auto good = dir / "good.json";
  const HostDescriptor host = tune_test::test_machine().with_threads(4);
  std::ofstream(good) << descriptor_json(host).dump(2);
  CHECK(read_host_file(good) == host);
}

TEST_CASE("host_dispatch_features_follow_the_descriptor_names") {
  HostDescriptor host = tune_test::test_machine();
  host.features = {"avx", "avx2", "avx512f", "f16c", "fma", "sse4_2"};
  const runtime::CpuFeatures features = dispatch_features(host);
  CHECK(features.avx2);
  CHECK(features.fma3);
  CHECK(features.sse4_2);
  CHECK(features.avx512f);
  CHECK_FALSE(features.avx512bw);
  CHECK_FALSE(features.neon);
  // This machine's descriptor gives the features the runtime dispatches on here.
  CHECK(dispatch_features(this_machine()).names() == runtime::host_cpu_features().names());
}
