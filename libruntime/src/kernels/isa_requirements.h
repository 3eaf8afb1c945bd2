#pragma once
// The host features each SIMD implementation needs, as KernelDef::unavailable_reason functions.
// An implementation whose loops were not compiled (non-x86 builds) is never registered.
#include <string>

#include "onnx_light/runtime/cpu_features.h"

namespace onnx_light::runtime::kernels {

// "avx2" kernels use AVX2 and FMA3 (every AVX2 CPU since Haswell / Zen has both).
inline std::string needs_avx2_fma(const CpuFeatures& f) {
  if (f.avx2 && f.fma3) return {};
  return f.avx2 ? "needs fma" : "needs avx2";
}

// "avx512" kernels use AVX-512 F, VL, BW (Skylake-SP and later, Zen 4) plus AVX2 and FMA3 for tails.
inline std::string needs_avx512(const CpuFeatures& f) {
  if (f.avx512f && f.avx512vl && f.avx512bw && f.avx2 && f.fma3) return {};
  return "needs avx512f, avx512vl and avx512bw";
}

// "avx512vnni" integer kernels use vpdpbusd (AVX-512 VNNI) on top of the "avx512" set.
inline std::string needs_avx512_vnni(const CpuFeatures& f) {
  if (!needs_avx512(f).empty()) return needs_avx512(f);
  return f.avx512vnni ? std::string() : "needs avx512vnni";
}

// "avxvnni" integer kernels use the VEX-encoded 256-bit vpdpbusd/vpdpwssd (AVX-VNNI, Alder Lake and
// later, Zen 5) with AVX2 and FMA3, and no AVX-512 instruction; the table prefers "avx512vnni".
inline std::string needs_avx_vnni(const CpuFeatures& f) {
  if (!needs_avx2_fma(f).empty()) return needs_avx2_fma(f);
  return f.avxvnni ? std::string() : "needs avxvnni";
}

}  // namespace onnx_light::runtime::kernels
