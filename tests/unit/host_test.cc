#include <cpuinfo.h>
#include <sys/utsname.h>

#include <algorithm>

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include "onnx_light/runtime/error.h"
#include "onnx_light/runtime/runtime_parameters.h"
#include "onnx_light/tune/host.h"

using namespace onnx_light;
using namespace onnx_light::tune;

TEST_CASE("host_detect_fills_machine_fields_and_threads") {
  const HostDescriptor host = detect_host(3);
  struct utsname names {};
  REQUIRE(uname(&names) == 0);
  CHECK(host.architecture == names.machine);
  CHECK(host.effective_threads == 3);
  CHECK(host.physical_cores >= 1);
  CHECK(host.logical_cores >= host.physical_cores);
  CHECK(std::is_sorted(host.features.begin(), host.features.end()));
  CHECK(std::adjacent_find(host.features.begin(), host.features.end()) == host.features.end());
  CHECK(this_machine().effective_threads == 0);
}

TEST_CASE("host_same_machine_ignores_threads_equality_does_not") {
  HostDescriptor a = this_machine().with_threads(1);
  HostDescriptor b = a.with_threads(2);
  CHECK(a.same_machine(b));
  CHECK(a != b);
  b.features.push_back("zzz_new_extension");
  CHECK_FALSE(a.same_machine(b));
  HostDescriptor c = a;
  c.l2_cache_bytes += 1;
  CHECK_FALSE(a.same_machine(c));
}

TEST_CASE("host_microarchitecture_and_vendor_names") {
  CHECK(microarchitecture_name(cpuinfo_uarch_zen3) == "zen3");
  CHECK(microarchitecture_name(cpuinfo_uarch_sky_lake) == "skylake");
  CHECK(microarchitecture_name(cpuinfo_uarch_neoverse_n1) == "neoverse-n1");
  CHECK(microarchitecture_name(cpuinfo_uarch_unknown).empty());
  CHECK(microarchitecture_name(0xDEADBEEF).empty());
  CHECK(vendor_name(cpuinfo_vendor_amd) == "amd");
  CHECK(vendor_name(cpuinfo_vendor_intel) == "intel");
  CHECK(vendor_name(cpuinfo_vendor_unknown).empty());
}

TEST_CASE("host_to_json_has_every_field") {
  nlohmann::json object;
  this_machine().with_threads(2).to_json(object);
  for (const char* name : {"architecture", "vendor", "family", "model", "stepping", "microarchitecture", "features",
                           "l1d_cache_bytes", "l2_cache_bytes", "l3_cache_bytes", "physical_cores", "logical_cores",
                           "effective_threads", "idle_spin"}) {
    CHECK_MESSAGE(object.contains(name), name);
  }
  CHECK(object.size() == 14);
  CHECK(object["effective_threads"] == 2);
  CHECK(object["idle_spin"] == true);
  nlohmann::json parks;
  this_machine().with_conditions(2, false).to_json(parks);
  CHECK(parks["idle_spin"] == false);
}

TEST_CASE("host_resolve_threads_zero_is_physical_cores_negative_throws") {
  CHECK(resolve_threads(0) == runtime::physical_core_count());
  CHECK(resolve_threads(5) == 5);
  CHECK_THROWS_AS(resolve_threads(-1), InvalidValueError);
}
