#pragma once
// The execution descriptor ("host") a tuning profile was measured on. Profiles are only trusted
// on the machine that wrote them: the same CPU model, ISA features, caches and cores.
#include <compare>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "onnx_light/runtime/runtime_parameters.h"
#include "onnx_light/runtime/cpu_features.h"

namespace onnx_light::tune {

// What a profile's host matches (cache format version 2): one exact machine, or a class of them.
// Most specific first; a class profile records only the fields of its class (the others stay
// empty or 0), always with effective_threads and idle_spin.
//   exact              every field but effective_threads and idle_spin (same_machine)
//   model              architecture, vendor, family and model: one CPU model, any stepping or size
//   microarchitecture  architecture, vendor and microarchitecture (cpuinfo's name, never "")
//   isa                architecture and a set of ISA features the machine must all have
enum class HostMatch { exact, model, microarchitecture, isa };
std::string_view host_match_name(HostMatch match);
// "exact", "model", "microarchitecture" or "isa"; InvalidValueError naming them otherwise.
HostMatch parse_host_match(std::string_view text);
// exact 3, model 2, microarchitecture 1, isa 0: the higher wins when several profiles match.
int host_match_specificity(HostMatch match);

// Whether host field `field` ("stepping", "features", ...) is recorded by profiles of class
// `match`. effective_threads and idle_spin always are.
bool host_field_in_class(std::string_view field, HostMatch match);

struct HostDescriptor {
  std::string architecture;       // uname machine: "x86_64", "aarch64"
  std::string vendor;             // "intel", "amd", "arm", ...; "" when unknown
  int64_t family = 0;             // x86: CPUID family; Arm: implementer
  int64_t model = 0;              // x86: CPUID model; Arm: part number
  int64_t stepping = 0;           // x86: CPUID stepping; Arm: variant << 4 | revision
  std::string microarchitecture;  // "zen3", "skylake", ...; "" when cpuinfo does not know it
  std::vector<std::string> features;  // ISA features kernels care about, sorted ("avx2", "fma")
  int64_t l1d_cache_bytes = 0;
  int64_t l2_cache_bytes = 0;
  int64_t l3_cache_bytes = 0;
  int64_t physical_cores = 0;
  int64_t logical_cores = 0;
  int64_t effective_threads = 0;  // threads of the sessions the profile is for
  // Whether those sessions' idle workers spin before parking (runtime::idle_workers_spin: any spin
  // policy but none). Parking at once moves parallel thresholds, so it is matched like the threads.
  bool idle_spin = true;
  // Which of the fields above a profile matches by; a machine's own descriptor is exact.
  HostMatch match = HostMatch::exact;

  auto operator<=>(const HostDescriptor&) const = default;
  bool operator==(const HostDescriptor&) const = default;

  // Equal apart from effective_threads and idle_spin: the same machine. This is what `load` requires.
  bool same_machine(const HostDescriptor& other) const;
  // Whether a profile with this host applies on `machine` (an exact descriptor), threads and spin
  // aside: same_machine for exact profiles, the class's fields for the others (isa: every feature
  // of this profile is one of the machine's).
  bool matches(const HostDescriptor& machine) const;
  // This host as a profile of class `match`: the fields outside the class cleared. A class no more
  // specific than the current one only; asking for a more specific one returns the host unchanged
  // (a class profile cannot be made exact again). InvalidValueError for a microarchitecture class
  // of a host whose microarchitecture is unknown ("").
  HostDescriptor generalised(HostMatch match) const;
  HostDescriptor with_threads(int64_t threads) const;
  HostDescriptor with_conditions(int64_t threads, bool spin) const;
  // "x86_64 amd zen3 (family 25 model 33 stepping 0), 8 cores, 2 threads" (", workers park" when
  // idle_spin is false); a class profile's names its class: "model class x86_64 amd family 25
  // model 33, 2 threads", "isa class x86_64 [avx2 fma], 2 threads".
  std::string summary() const;
  // Every field, flat, with the names used in the cache file and in inspect reports.
  void to_json(nlohmann::json& object) const;
};

// This machine (cpuinfo + uname), detected once; effective_threads is 0. Never throws: fields
// cpuinfo cannot provide stay empty.
const HostDescriptor& this_machine();
// This machine's name (gethostname), "" when it has none. Informational (provenance, `host
// --json`): profiles are never matched by it.
std::string this_hostname();
// This machine running sessions on `effective_threads` threads whose idle workers spin or not.
HostDescriptor detect_host(int64_t effective_threads, bool idle_spin = true);

// Name of a cpuinfo_uarch value ("zen3", "skylake"), "" for unknown values.
std::string microarchitecture_name(uint32_t cpuinfo_uarch);
// Name of a cpuinfo_vendor value ("intel", "amd"), "" for unknown values.
std::string vendor_name(uint32_t cpuinfo_vendor);

// The host descriptor in `object`, the JSON `onnx-light-tune host --json` prints: every field of
// to_json() is required but idle_spin (true when absent: files written before it), "hostname" may be present (informational, never part of a match), any
// other key is refused. Features are sorted and de-duplicated as the cache reader does. `source`
// (a file name) starts every message, which names the field at fault: TypeMismatchError for a
// wrong JSON type, InvalidValueError for a missing or unknown field or a value out of range.
HostDescriptor host_from_json(const nlohmann::json& object, std::string_view source);
// Reads a host descriptor file (see host_from_json). NotFoundError when it does not exist, IoError
// when it cannot be read, InvalidValueError when it is not JSON; never touches anything else.
HostDescriptor read_host_file(const std::filesystem::path& path);

// The dispatch features of a host, from its ISA feature names: what the runtime would select
// implementations by on that machine (names it does not dispatch on are ignored).
runtime::CpuFeatures dispatch_features(const HostDescriptor& host);

// Threads a session with `num_threads` runs on (0 or unset: one per physical core), as the runtime
// resolves them. Throws InvalidValueError for negative counts.
int64_t resolve_threads(int64_t num_threads);
// The same under an execution policy: with a CPU list, 0 means one thread per listed CPU. The
// policy is validated (a CPU outside this process's allowed set is named); its num_threads is not read.
int64_t resolve_threads(int64_t num_threads, const runtime::RuntimeParameters& policy);

}  // namespace onnx_light::tune
