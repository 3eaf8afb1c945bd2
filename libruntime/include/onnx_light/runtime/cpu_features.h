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
