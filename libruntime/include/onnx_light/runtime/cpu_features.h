#pragma once
// The ISA features kernels dispatch on, read once from cpuinfo.
#include <string>
#include <vector>

namespace onnx_light::runtime {

struct CpuFeatures {
  bool sse4_2 = false;
  bool avx = false;
  bool avx2 = false;
  bool fma3 = false;
  bool f16c = false;
  bool avx512f = false;
  bool avx512bw = false;
  bool avx512vl = false;
  bool neon = false;
  // AVX-512 VNNI: vpdpbusd, the int8 dot products of the "avx512vnni" integer GEMM.
  bool avx512vnni = false;
  // AVX-VNNI: the same dot products VEX-encoded on 256-bit registers (Alder Lake and later, Zen 5),
  // for the "avxvnni" integer kernels. Read from CPUID (leaf 7, subleaf 1, EAX bit 4): Debian 12's
  // cpuinfo does not know it. Deliberately NOT among names(): names() spells the host descriptor's
  // ISA list (libtune detect_features), which is part of a cached profile's host identity, and
  // listing a new feature there would turn every exact profile cached on an AVX-VNNI machine into
  // another host's. As a consequence an --as-host descriptor never selects "avxvnni".
  bool avxvnni = false;
  // Lower-case names of the features present, sorted (byte order). One name per field:
  // sse4_2 -> "sse4.2", avx -> "avx", avx2 -> "avx2", fma3 -> "fma", f16c -> "f16c",
  // avx512f -> "avx512f", avx512bw -> "avx512bw", avx512vl -> "avx512vl", neon -> "neon",
  // avx512vnni -> "avx512vnni" (the spellings of the host descriptor's feature list).
  // These strings are stored in cache files as part of a host: never rename one.
  std::vector<std::string> names() const;
};

// This machine's features (cpuinfo; all false when cpuinfo cannot initialise).
const CpuFeatures& host_cpu_features();

}  // namespace onnx_light::runtime
