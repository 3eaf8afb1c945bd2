#include <doctest/doctest.h>

#include <algorithm>
#include <set>
#include <string>
#include <thread>

#include "onnx_light/runtime/cpu_features.h"
#include "onnx_light/runtime/error.h"
#include "onnx_light/runtime/runtime_parameters.h"

using onnx_light::InvalidValueError;
using onnx_light::runtime::CpuFeatures;
using onnx_light::runtime::effective_threads;
using onnx_light::runtime::host_cpu_features;
using onnx_light::runtime::physical_core_count;
using onnx_light::runtime::RuntimeParameters;

TEST_CASE("runtime parameters: num_threads 0 means one thread per physical core") {
  CHECK(RuntimeParameters().num_threads == 0);
  CHECK(effective_threads(RuntimeParameters()) == physical_core_count());
  CHECK(effective_threads(RuntimeParameters(0)) == physical_core_count());
}

TEST_CASE("runtime parameters: explicit thread counts are kept, including more than the cores") {
  CHECK(effective_threads(RuntimeParameters(1)) == 1);
  CHECK(effective_threads(RuntimeParameters(3)) == 3);
  const int many = 8 * physical_core_count() + 1;
  CHECK(effective_threads(RuntimeParameters(many)) == many);
}

TEST_CASE("runtime parameters: a negative num_threads throws InvalidValueError naming num_threads") {
  CHECK_THROWS_AS(effective_threads(RuntimeParameters(-1)), InvalidValueError);
  try {
    effective_threads(RuntimeParameters(-4));
    FAIL("expected InvalidValueError");
  } catch (const InvalidValueError& e) {
    const std::string message = e.what();
    CHECK(message.find("num_threads") != std::string::npos);
    CHECK(message.find("-4") != std::string::npos);
  }
}

TEST_CASE("runtime parameters: physical_core_count is at least 1, stable, and no more than the logical CPUs") {
  const int cores = physical_core_count();
  CHECK(cores >= 1);
  CHECK(physical_core_count() == cores);
  const unsigned logical = std::thread::hardware_concurrency();
  if (logical > 0) CHECK(cores <= static_cast<int>(logical));
}

TEST_CASE("cpu features: names() maps each flag to its documented name, sorted") {
  CpuFeatures none;
  CHECK(none.names().empty());
  CpuFeatures all;
  all.sse4_2 = all.avx = all.avx2 = all.fma3 = all.f16c = true;
  all.avx512f = all.avx512bw = all.avx512vl = all.neon = all.avx512vnni = all.avxvnni = true;
  CHECK(all.names() == std::vector<std::string>{"avx", "avx2", "avx512bw", "avx512f", "avx512vl", "avx512vnni", "f16c",
                                                "fma", "neon", "sse4.2"});
  CpuFeatures some;
  some.fma3 = true;
  some.sse4_2 = true;
  CHECK(some.names() == std::vector<std::string>{"fma", "sse4.2"});
}

TEST_CASE("cpu features: the host's names agree with its flags and follow the ISA's implications") {
  const CpuFeatures& host = host_cpu_features();
  CHECK(&host == &host_cpu_features());
  const auto names = host.names();
  CHECK(std::is_sorted(names.begin(), names.end()));
  CHECK(std::set<std::string>(names.begin(), names.end()).size() == names.size());
  const auto has = [&](const char* name) { return std::find(names.begin(), names.end(), name) != names.end(); };
  CHECK(has("avx2") == host.avx2);
  CHECK(has("sse4.2") == host.sse4_2);
  CHECK(has("fma") == host.fma3);
  CHECK(has("avx512f") == host.avx512f);
  CHECK(has("avx512vnni") == host.avx512vnni);
#if defined(__x86_64__) || defined(__i386__)
  CHECK_FALSE(host.neon);
  // Each AVX level requires the one below it; cpuinfo must not report a gap.
  if (host.avx2) CHECK(host.avx);
  if (host.avx512f) CHECK(host.avx2);
  if (host.avx512vnni) CHECK(host.avx512f);
  // AVX-VNNI is dispatched on but not part of a host's identity: never among names().
  if (host.avxvnni) CHECK(host.avx2);
  CHECK_FALSE(has("avxvnni"));
  if (host.avx) CHECK(host.sse4_2);
#endif
#if defined(__AVX2__)
  // This binary was compiled for AVX2 and is running, so the host must have it.
  CHECK(host.avx2);
#endif
#if defined(__SSE4_2__)
  CHECK(host.sse4_2);
#endif
}
