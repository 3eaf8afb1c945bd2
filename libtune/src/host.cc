#include "onnx_light/tune/host.h"

#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <mutex>
#include <tuple>

#include <cpuinfo.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "onnx_light/runtime/error.h"
#include "onnx_light/runtime/runtime_parameters.h"

namespace onnx_light::tune {

std::string_view host_match_name(HostMatch match) {
  switch (match) {
    case HostMatch::exact: return "exact";
    case HostMatch::model: return "model";
    case HostMatch::microarchitecture: return "microarchitecture";
    case HostMatch::isa: return "isa";
  }
  return "exact";
}

HostMatch parse_host_match(std::string_view text) {
  for (const HostMatch match : {HostMatch::exact, HostMatch::model, HostMatch::microarchitecture, HostMatch::isa}) {
    if (text == host_match_name(match)) return match;
  }
  throw InvalidValueError(
      fmt::format("unknown host match '{}' (use exact, model, microarchitecture or isa)", text));
}

int host_match_specificity(HostMatch match) {
  switch (match) {
    case HostMatch::exact: return 3;
    case HostMatch::model: return 2;
    case HostMatch::microarchitecture: return 1;
    case HostMatch::isa: return 0;
  }
  return 0;
}

bool host_field_in_class(std::string_view field, HostMatch match) {
  if (field == "effective_threads" || field == "idle_spin" || field == "architecture") return true;
  switch (match) {
    case HostMatch::exact: return true;
    case HostMatch::model: return field == "vendor" || field == "family" || field == "model";
    case HostMatch::microarchitecture: return field == "vendor" || field == "microarchitecture";
    case HostMatch::isa: return field == "features";
  }
  return false;
}

bool HostDescriptor::matches(const HostDescriptor& machine) const {
  switch (match) {
    case HostMatch::exact: return same_machine(machine);
    case HostMatch::model:
      return architecture == machine.architecture && vendor == machine.vendor && family == machine.family &&
             model == machine.model;
    case HostMatch::microarchitecture:
      return architecture == machine.architecture && vendor == machine.vendor &&
             microarchitecture == machine.microarchitecture;
    case HostMatch::isa:
      // Both lists are sorted and without repeats.
      return architecture == machine.architecture &&
             std::includes(machine.features.begin(), machine.features.end(), features.begin(), features.end());
  }
  return false;
}

HostDescriptor HostDescriptor::generalised(HostMatch target) const {
  if (host_match_specificity(target) >= host_match_specificity(match)) return *this;
  if (target == HostMatch::microarchitecture && microarchitecture.empty()) {
    throw InvalidValueError(fmt::format("a microarchitecture class needs a known microarchitecture, and cpuinfo "
                                        "does not name this one ({}); use --match model or isa",
                                        summary()));
  }
  HostDescriptor result;
  result.match = target;
  result.architecture = architecture;
  result.effective_threads = effective_threads;
  result.idle_spin = idle_spin;
  switch (target) {
    case HostMatch::exact: break;
    case HostMatch::model:
      result.vendor = vendor;
      result.family = family;
      result.model = model;
      break;
    case HostMatch::microarchitecture:
      result.vendor = vendor;
      result.microarchitecture = microarchitecture;
      break;
    case HostMatch::isa: result.features = features; break;
  }
  return result;
}

bool HostDescriptor::same_machine(const HostDescriptor& other) const {
  // Field by field rather than comparing copies: this runs once per cached profile.
  auto machine = [](const HostDescriptor& h) {
    return std::tie(h.architecture, h.vendor, h.family, h.model, h.stepping, h.microarchitecture, h.features,
                    h.l1d_cache_bytes, h.l2_cache_bytes, h.l3_cache_bytes, h.physical_cores, h.logical_cores);
  };
  return machine(*this) == machine(other);
}

HostDescriptor HostDescriptor::with_threads(int64_t threads) const { return with_conditions(threads, idle_spin); }

HostDescriptor HostDescriptor::with_conditions(int64_t threads, bool spin) const {
  HostDescriptor copy = *this;
  copy.effective_threads = threads;
  copy.idle_spin = spin;
  return copy;
}

std::string HostDescriptor::summary() const {
  const std::string conditions = fmt::format("{} thread{}{}", effective_threads, effective_threads == 1 ? "" : "s",
                                             idle_spin ? "" : ", workers park");
  const std::string arch = architecture.empty() ? "?" : architecture;
  switch (match) {
    case HostMatch::exact: break;
    case HostMatch::model:
      return fmt::format("model class {} {} family {} model {}, {}", arch, vendor.empty() ? "?" : vendor, family, model,
                         conditions);
    case HostMatch::microarchitecture:
      return fmt::format("microarchitecture class {} {} {}, {}", arch, vendor.empty() ? "?" : vendor,
                         microarchitecture, conditions);
    case HostMatch::isa: return fmt::format("isa class {} [{}], {}", arch, fmt::join(features, " "), conditions);
  }
  std::string cpu = fmt::format("{} {}", architecture.empty() ? "?" : architecture, vendor.empty() ? "?" : vendor);
  if (!microarchitecture.empty()) cpu += " " + microarchitecture;
  return fmt::format("{} (family {} model {} stepping {}), {} core{}, {} thread{}{}", cpu, family, model, stepping,
                     physical_cores, physical_cores == 1 ? "" : "s", effective_threads,
                     effective_threads == 1 ? "" : "s", idle_spin ? "" : ", workers park");
}

void HostDescriptor::to_json(nlohmann::json& object) const {
  object["architecture"] = architecture;
  object["vendor"] = vendor;
  object["family"] = family;
  object["model"] = model;
  object["stepping"] = stepping;
  object["microarchitecture"] = microarchitecture;
  object["features"] = features;
  object["l1d_cache_bytes"] = l1d_cache_bytes;
  object["l2_cache_bytes"] = l2_cache_bytes;
  object["l3_cache_bytes"] = l3_cache_bytes;
  object["physical_cores"] = physical_cores;
  object["logical_cores"] = logical_cores;
  object["effective_threads"] = effective_threads;
  object["idle_spin"] = idle_spin;
}

std::string microarchitecture_name(uint32_t value) {
  // Names follow GCC's -march spelling where one exists, so they read familiar to operators.
  switch (static_cast<cpuinfo_uarch>(value)) {
    case cpuinfo_uarch_p5: return "p5";
    case cpuinfo_uarch_quark: return "quark";
    case cpuinfo_uarch_p6: return "p6";
    case cpuinfo_uarch_dothan: return "dothan";
    case cpuinfo_uarch_yonah: return "yonah";
    case cpuinfo_uarch_conroe: return "conroe";
    case cpuinfo_uarch_penryn: return "penryn";
    case cpuinfo_uarch_nehalem: return "nehalem";
    case cpuinfo_uarch_sandy_bridge: return "sandybridge";
    case cpuinfo_uarch_ivy_bridge: return "ivybridge";
    case cpuinfo_uarch_haswell: return "haswell";
    case cpuinfo_uarch_broadwell: return "broadwell";
    case cpuinfo_uarch_sky_lake: return "skylake";  // also kaby_lake (same value)
    case cpuinfo_uarch_palm_cove: return "cannonlake";
    case cpuinfo_uarch_sunny_cove: return "icelake";
    case cpuinfo_uarch_willamette: return "willamette";
    case cpuinfo_uarch_prescott: return "prescott";
    case cpuinfo_uarch_bonnell: return "bonnell";
    case cpuinfo_uarch_saltwell: return "saltwell";
    case cpuinfo_uarch_silvermont: return "silvermont";
    case cpuinfo_uarch_airmont: return "airmont";
    case cpuinfo_uarch_goldmont: return "goldmont";
    case cpuinfo_uarch_goldmont_plus: return "goldmont-plus";
    case cpuinfo_uarch_knights_ferry: return "knights-ferry";
    case cpuinfo_uarch_knights_corner: return "knights-corner";
    case cpuinfo_uarch_knights_landing: return "knl";
    case cpuinfo_uarch_knights_hill: return "knights-hill";
    case cpuinfo_uarch_knights_mill: return "knm";
    case cpuinfo_uarch_xscale: return "xscale";
    case cpuinfo_uarch_k5: return "k5";
    case cpuinfo_uarch_k6: return "k6";
    case cpuinfo_uarch_k7: return "k7";
    case cpuinfo_uarch_k8: return "k8";
    case cpuinfo_uarch_k10: return "k10";
    case cpuinfo_uarch_bulldozer: return "bulldozer";
    case cpuinfo_uarch_piledriver: return "piledriver";
    case cpuinfo_uarch_steamroller: return "steamroller";
    case cpuinfo_uarch_excavator: return "excavator";
    case cpuinfo_uarch_zen: return "zen";
    case cpuinfo_uarch_zen2: return "zen2";
    case cpuinfo_uarch_zen3: return "zen3";
    case cpuinfo_uarch_geode: return "geode";
    case cpuinfo_uarch_bobcat: return "bobcat";
    case cpuinfo_uarch_jaguar: return "jaguar";
    case cpuinfo_uarch_puma: return "puma";
    case cpuinfo_uarch_arm7: return "arm7";
    case cpuinfo_uarch_arm9: return "arm9";
    case cpuinfo_uarch_arm11: return "arm11";
    case cpuinfo_uarch_cortex_a5: return "cortex-a5";
    case cpuinfo_uarch_cortex_a7: return "cortex-a7";
    case cpuinfo_uarch_cortex_a8: return "cortex-a8";
    case cpuinfo_uarch_cortex_a9: return "cortex-a9";
    case cpuinfo_uarch_cortex_a12: return "cortex-a12";
    case cpuinfo_uarch_cortex_a15: return "cortex-a15";
    case cpuinfo_uarch_cortex_a17: return "cortex-a17";
    case cpuinfo_uarch_cortex_a32: return "cortex-a32";
    case cpuinfo_uarch_cortex_a35: return "cortex-a35";
    case cpuinfo_uarch_cortex_a53: return "cortex-a53";
    case cpuinfo_uarch_cortex_a55r0: return "cortex-a55r0";
    case cpuinfo_uarch_cortex_a55: return "cortex-a55";
    case cpuinfo_uarch_cortex_a57: return "cortex-a57";
    case cpuinfo_uarch_cortex_a65: return "cortex-a65";
    case cpuinfo_uarch_cortex_a72: return "cortex-a72";
    case cpuinfo_uarch_cortex_a73: return "cortex-a73";
    case cpuinfo_uarch_cortex_a75: return "cortex-a75";
    case cpuinfo_uarch_cortex_a76: return "cortex-a76";
    case cpuinfo_uarch_cortex_a77: return "cortex-a77";
    case cpuinfo_uarch_cortex_a78: return "cortex-a78";
    case cpuinfo_uarch_neoverse_n1: return "neoverse-n1";
    case cpuinfo_uarch_neoverse_e1: return "neoverse-e1";
    case cpuinfo_uarch_neoverse_v1: return "neoverse-v1";
    case cpuinfo_uarch_neoverse_n2: return "neoverse-n2";
    case cpuinfo_uarch_cortex_x1: return "cortex-x1";
    case cpuinfo_uarch_scorpion: return "scorpion";
    case cpuinfo_uarch_krait: return "krait";
    case cpuinfo_uarch_kryo: return "kryo";
    case cpuinfo_uarch_falkor: return "falkor";
    case cpuinfo_uarch_saphira: return "saphira";
    case cpuinfo_uarch_denver: return "denver";
    case cpuinfo_uarch_denver2: return "denver2";
    case cpuinfo_uarch_carmel: return "carmel";
    case cpuinfo_uarch_exynos_m1: return "exynos-m1";
    case cpuinfo_uarch_exynos_m2: return "exynos-m2";
    case cpuinfo_uarch_exynos_m3: return "exynos-m3";
    case cpuinfo_uarch_exynos_m4: return "exynos-m4";
    case cpuinfo_uarch_exynos_m5: return "exynos-m5";
    case cpuinfo_uarch_swift: return "swift";
    case cpuinfo_uarch_cyclone: return "cyclone";
    case cpuinfo_uarch_typhoon: return "typhoon";
    case cpuinfo_uarch_twister: return "twister";
    case cpuinfo_uarch_hurricane: return "hurricane";
    case cpuinfo_uarch_monsoon: return "monsoon";
    case cpuinfo_uarch_mistral: return "mistral";
    case cpuinfo_uarch_vortex: return "vortex";
    case cpuinfo_uarch_tempest: return "tempest";
    case cpuinfo_uarch_lightning: return "lightning";
    case cpuinfo_uarch_thunder: return "thunder";
    case cpuinfo_uarch_firestorm: return "firestorm";
    case cpuinfo_uarch_icestorm: return "icestorm";
    case cpuinfo_uarch_thunderx: return "thunderx";
    case cpuinfo_uarch_thunderx2: return "thunderx2";
    case cpuinfo_uarch_pj4: return "pj4";
    case cpuinfo_uarch_brahma_b15: return "brahma-b15";
    case cpuinfo_uarch_brahma_b53: return "brahma-b53";
    case cpuinfo_uarch_xgene: return "xgene";
    case cpuinfo_uarch_dhyana: return "dhyana";
    case cpuinfo_uarch_taishan_v110: return "taishan-v110";
    case cpuinfo_uarch_unknown: break;
  }
  return "";
}

std::string vendor_name(uint32_t value) {
  switch (static_cast<cpuinfo_vendor>(value)) {
    case cpuinfo_vendor_intel: return "intel";
    case cpuinfo_vendor_amd: return "amd";
    case cpuinfo_vendor_arm: return "arm";
    case cpuinfo_vendor_qualcomm: return "qualcomm";
    case cpuinfo_vendor_apple: return "apple";
    case cpuinfo_vendor_samsung: return "samsung";
    case cpuinfo_vendor_nvidia: return "nvidia";
    case cpuinfo_vendor_mips: return "mips";
    case cpuinfo_vendor_ibm: return "ibm";
    case cpuinfo_vendor_ingenic: return "ingenic";
    case cpuinfo_vendor_via: return "via";
    case cpuinfo_vendor_cavium: return "cavium";
    case cpuinfo_vendor_broadcom: return "broadcom";
    case cpuinfo_vendor_apm: return "apm";
    case cpuinfo_vendor_huawei: return "huawei";
    case cpuinfo_vendor_hygon: return "hygon";
    case cpuinfo_vendor_texas_instruments: return "texas_instruments";
    case cpuinfo_vendor_marvell: return "marvell";
    case cpuinfo_vendor_rdc: return "rdc";
    case cpuinfo_vendor_dmp: return "dmp";
    case cpuinfo_vendor_motorola: return "motorola";
    case cpuinfo_vendor_transmeta: return "transmeta";
    case cpuinfo_vendor_cyrix: return "cyrix";
    case cpuinfo_vendor_rise: return "rise";
    case cpuinfo_vendor_nsc: return "nsc";
    case cpuinfo_vendor_sis: return "sis";
    case cpuinfo_vendor_nexgen: return "nexgen";
    case cpuinfo_vendor_umc: return "umc";
    case cpuinfo_vendor_dec: return "dec";
    case cpuinfo_vendor_unknown: break;
  }
  return "";
}

namespace {

// Only the ISA extensions that change which code kernels run or how fast; crypto and system
// features would split profiles between machines that tune identically.
std::vector<std::string> detect_features() {
  std::vector<std::pair<bool, const char*>> candidates;
#if CPUINFO_ARCH_X86 || CPUINFO_ARCH_X86_64
  candidates = {
      {cpuinfo_has_x86_sse3(), "sse3"},
      {cpuinfo_has_x86_ssse3(), "ssse3"},
      {cpuinfo_has_x86_sse4_1(), "sse4_1"},
      {cpuinfo_has_x86_sse4_2(), "sse4_2"},
      {cpuinfo_has_x86_avx(), "avx"},
      {cpuinfo_has_x86_avx2(), "avx2"},
      {cpuinfo_has_x86_fma3(), "fma"},
      {cpuinfo_has_x86_fma4(), "fma4"},
      {cpuinfo_has_x86_f16c(), "f16c"},
      {cpuinfo_has_x86_bmi2(), "bmi2"},
      {cpuinfo_has_x86_popcnt(), "popcnt"},
      {cpuinfo_has_x86_avx512f(), "avx512f"},
      {cpuinfo_has_x86_avx512cd(), "avx512cd"},
      {cpuinfo_has_x86_avx512dq(), "avx512dq"},
      {cpuinfo_has_x86_avx512bw(), "avx512bw"},
      {cpuinfo_has_x86_avx512vl(), "avx512vl"},
      {cpuinfo_has_x86_avx512ifma(), "avx512ifma"},
      {cpuinfo_has_x86_avx512vbmi(), "avx512vbmi"},
      {cpuinfo_has_x86_avx512vbmi2(), "avx512vbmi2"},
      {cpuinfo_has_x86_avx512vnni(), "avx512vnni"},
      {cpuinfo_has_x86_avx512bf16(), "avx512bf16"},
      {cpuinfo_has_x86_avx512vpopcntdq(), "avx512vpopcntdq"},
  };
#elif CPUINFO_ARCH_ARM || CPUINFO_ARCH_ARM64
  candidates = {
      {cpuinfo_has_arm_neon(), "neon"},
      {cpuinfo_has_arm_neon_fp16(), "fp16"},
      {cpuinfo_has_arm_fp16_arith(), "fp16arith"},
      {cpuinfo_has_arm_neon_fma(), "fma"},
      {cpuinfo_has_arm_neon_dot(), "dotprod"},
      {cpuinfo_has_arm_bf16(), "bf16"},
      {cpuinfo_has_arm_sve(), "sve"},
      {cpuinfo_has_arm_sve2(), "sve2"},
  };
#endif
  std::vector<std::string> names;
  for (const auto& [present, name] : candidates) {
    if (present) names.emplace_back(name);
  }
  std::sort(names.begin(), names.end());
  return names;
}

HostDescriptor detect_machine() {
  HostDescriptor host;
  struct utsname names {};
  if (uname(&names) == 0) host.architecture = names.machine;
  if (!cpuinfo_initialize()) return host;  // keep what uname gave; never abort
  if (const cpuinfo_core* core = cpuinfo_get_cores_count() > 0 ? cpuinfo_get_core(0) : nullptr) {
    host.vendor = vendor_name(core->vendor);
    host.microarchitecture = microarchitecture_name(core->uarch);
#if CPUINFO_ARCH_X86 || CPUINFO_ARCH_X86_64
    // CPUID leaf 1 EAX: the displayed family/model include the extended fields.
    const uint32_t eax = core->cpuid;
    int64_t family = (eax >> 8) & 0xF;
    int64_t model = (eax >> 4) & 0xF;
    if (family == 0xF) family += (eax >> 20) & 0xFF;
    if (family == 0x6 || family >= 0xF) model += ((eax >> 16) & 0xF) << 4;
    host.family = family;
    host.model = model;
    host.stepping = eax & 0xF;
#elif CPUINFO_ARCH_ARM || CPUINFO_ARCH_ARM64
    const uint32_t midr = core->midr;
    host.family = (midr >> 24) & 0xFF;
    host.model = (midr >> 4) & 0xFFF;
    host.stepping = (((midr >> 20) & 0xF) << 4) | (midr & 0xF);
#endif
  }
  host.features = detect_features();
  if (cpuinfo_get_l1d_caches_count() > 0) host.l1d_cache_bytes = cpuinfo_get_l1d_cache(0)->size;
  if (cpuinfo_get_l2_caches_count() > 0) host.l2_cache_bytes = cpuinfo_get_l2_cache(0)->size;
  if (cpuinfo_get_l3_caches_count() > 0) host.l3_cache_bytes = cpuinfo_get_l3_cache(0)->size;
  host.physical_cores = runtime::machine_physical_core_count();
  host.logical_cores = cpuinfo_get_processors_count();
  return host;
}

}  // namespace

const HostDescriptor& this_machine() {
  static const HostDescriptor machine = detect_machine();
  return machine;
}

std::string this_hostname() {
  char name[256] = {};
  if (::gethostname(name, sizeof(name) - 1) != 0) return {};
  return name;
}

HostDescriptor detect_host(int64_t effective_threads, bool idle_spin) {
  return this_machine().with_conditions(effective_threads, idle_spin);
}

int64_t resolve_threads(int64_t num_threads) {
  if (num_threads < 0) {
    throw InvalidValueError(
        fmt::format("num_threads must be 0 (one per physical core) or positive, got {}", num_threads));
  }
  if (num_threads > (1 << 16)) {
    throw InvalidValueError(fmt::format("num_threads {} is too large; use at most 65536", num_threads));
  }
  return runtime::effective_threads(runtime::RuntimeParameters(static_cast<int>(num_threads)));
}

int64_t resolve_threads(int64_t num_threads, const runtime::RuntimeParameters& policy) {
  resolve_threads(num_threads);  // the range checks
  runtime::RuntimeParameters parameters = policy;
  parameters.num_threads = static_cast<int>(num_threads);
  return runtime::effective_threads(parameters);
}

}  // namespace onnx_light::tune
