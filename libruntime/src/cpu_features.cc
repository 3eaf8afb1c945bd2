#include "onnx_light/runtime/cpu_features.h"

#include <cpuinfo.h>

#include <algorithm>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

namespace onnx_light::runtime {

std::vector<std::string> CpuFeatures::names() const {
  std::vector<std::string> result;
  const auto add = [&](bool present, const char* name) {
    if (present) result.emplace_back(name);
  };
  add(sse4_2, "sse4.2");
  add(avx, "avx");
  add(avx2, "avx2");
  add(fma3, "fma");
  add(f16c, "f16c");
  add(avx512f, "avx512f");
  add(avx512bw, "avx512bw");
  add(avx512vl, "avx512vl");
  add(neon, "neon");
  add(avx512vnni, "avx512vnni");
  // avxvnni is left out on purpose (cpu_features.h): it is not part of a host's identity.
  // Sorted so that feature sets compare equal as lists (they are part of a host's identity).
  std::sort(result.begin(), result.end());
  return result;
}

namespace {

// AVX-VNNI: CPUID.(EAX=7, ECX=1):EAX bit 4. Usable only where the OS saves the YMM state, which
// cpuinfo's avx2 already checks (XGETBV), so the caller requires avx2 too.
bool cpuid_avx_vnni() {
#if defined(__x86_64__) || defined(__i386__)
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (__get_cpuid_count(7, 1, &eax, &ebx, &ecx, &edx) == 0) return false;
  return (eax & (1u << 4)) != 0;
#else
  return false;
#endif
}

}  // namespace

const CpuFeatures& host_cpu_features() {
  static const CpuFeatures features = [] {
    CpuFeatures f;
    if (!cpuinfo_initialize()) return f;
    f.sse4_2 = cpuinfo_has_x86_sse4_2();
    f.avx = cpuinfo_has_x86_avx();
    f.avx2 = cpuinfo_has_x86_avx2();
    f.fma3 = cpuinfo_has_x86_fma3();
    f.f16c = cpuinfo_has_x86_f16c();
    f.avx512f = cpuinfo_has_x86_avx512f();
    f.avx512bw = cpuinfo_has_x86_avx512bw();
    f.avx512vl = cpuinfo_has_x86_avx512vl();
    f.avx512vnni = cpuinfo_has_x86_avx512vnni();
    f.avxvnni = f.avx2 && cpuid_avx_vnni();
    f.neon = cpuinfo_has_arm_neon();
    return f;
  }();
  return features;
}

}  // namespace onnx_light::runtime
