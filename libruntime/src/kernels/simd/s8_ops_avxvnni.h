#pragma once
// The vector operations of the AVX-VNNI integer kernels (VEX-encoded vpdpbusd/vpdpwssd on ymm,
// with AVX2; no AVX-512 instruction), for the algorithms written once in gemm_s8_tile.h and
// conv_s8_loops.h: 8 int32 lanes per register, tails through AVX2's dword masks or small stack
// buffers. Included only by the *_avxvnni.cc files; internal linkage (see README.md).
#include <immintrin.h>

#include <cstddef>
#include <cstdint>

namespace onnx_light::runtime::kernels::simd {
namespace {

struct S8AvxVnni {
  using V = __m256i;  // int32 lanes
  using F = __m256;   // float lanes
  static constexpr int kLanes = 8;

  // All-ones in the low `count` of 8 dword lanes (AVX2 maskload/maskstore take the sign bits).
  static inline __m256i lanes(int64_t count) {
    const int32_t c = count >= 8 ? 8 : count <= 0 ? 0 : static_cast<int32_t>(count);
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(c), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  }

  static inline V zero() { return _mm256_setzero_si256(); }
  static inline V set1(int32_t v) { return _mm256_set1_epi32(v); }
  static inline F set1f(float v) { return _mm256_set1_ps(v); }
  static inline V add(V a, V b) { return _mm256_add_epi32(a, b); }
  static inline V mullo(V a, V b) { return _mm256_mullo_epi32(a, b); }
  static inline V load(const int8_t* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); }
  static inline V broadcast_word(const uint8_t* p) {
    int word;
    __builtin_memcpy(&word, p, 4);
    return _mm256_set1_epi32(word);
  }
  // acc += dot4(a, b) per lane, VEX-encoded ({vex}: the assembler would otherwise pick the EVEX
  // form, an AVX-512 instruction). asm for the reason given in s8_ops_avx512vnni.h; "x": ymm0-15.
  static __attribute__((always_inline)) inline void dpbusd(V& acc, V a, V b) {
    asm("%{vex%} vpdpbusd %2, %1, %0" : "+x"(acc) : "x"(a), "x"(b));
  }
  static inline V dpwssd(V acc, V x, V tap) { return _mm256_dpwssd_avx_epi32(acc, x, tap); }
  static inline V load_n(const int32_t* p, int64_t count) {
    if (count >= 8) return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
    if (count <= 0) return zero();
    return _mm256_maskload_epi32(reinterpret_cast<const int*>(p), lanes(count));
  }
  static inline void store_n(int32_t* p, V v, int64_t count) {
    if (count >= 8) _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), v);
    else if (count > 0) _mm256_maskstore_epi32(reinterpret_cast<int*>(p), lanes(count), v);
  }
  template <bool kSigned>
  static inline V load_bytes_n(const uint8_t* p, int64_t count) {
    __m128i bytes;
    if (count >= 8) {
      bytes = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p));
    } else {
      alignas(16) uint8_t buffer[16] = {};
      if (count > 0) __builtin_memcpy(buffer, p, static_cast<std::size_t>(count));
      bytes = _mm_load_si128(reinterpret_cast<const __m128i*>(buffer));
    }
    return kSigned ? _mm256_cvtepi8_epi32(bytes) : _mm256_cvtepu8_epi32(bytes);
  }
  template <bool kSigned>
  static inline void requantize_store_n(V sum, F m, F z, uint8_t* y, int64_t count) {
    const F lo = _mm256_set1_ps(kSigned ? -128.0f : 0.0f), hi = _mm256_set1_ps(kSigned ? 127.0f : 255.0f);
    const F product = _mm256_mul_ps(_mm256_cvtepi32_ps(sum), m);
    const F r = _mm256_add_ps(_mm256_round_ps(product, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC), z);
    // MAXPS returns its second operand for a NaN first one: NaN saturates low, as in the portable code.
    const __m256i q = _mm256_cvtps_epi32(_mm256_min_ps(_mm256_max_ps(r, lo), hi));
    // Already within the output's range: the saturating packs only narrow.
    const __m128i words = _mm_packs_epi32(_mm256_castsi256_si128(q), _mm256_extracti128_si256(q, 1));
    const __m128i bytes = kSigned ? _mm_packs_epi16(words, words) : _mm_packus_epi16(words, words);
    if (count >= 8) {
      _mm_storel_epi64(reinterpret_cast<__m128i*>(y), bytes);
    } else if (count > 0) {
      alignas(16) uint8_t buffer[16];
      _mm_store_si128(reinterpret_cast<__m128i*>(buffer), bytes);
      __builtin_memcpy(y, buffer, static_cast<std::size_t>(count));
    }
  }

  static inline __m256i shifted_bytes32_n(const uint8_t* p, int64_t count, __m256i vflip, uint8_t flip) {
    if (count >= 32) return _mm256_xor_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)), vflip);
    // Past count the buffer holds flip, which the XOR turns into 0.
    alignas(32) uint8_t buffer[32];
    __builtin_memset(buffer, flip, sizeof buffer);
    if (count > 0) __builtin_memcpy(buffer, p, static_cast<std::size_t>(count));
    return _mm256_xor_si256(_mm256_load_si256(reinterpret_cast<const __m256i*>(buffer)), vflip);
  }
  static inline void store_bytes32_n(uint8_t* p, __m256i v, int64_t count) {
    if (count >= 32) {
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), v);
    } else if (count > 0) {
      alignas(32) uint8_t buffer[32];
      _mm256_store_si256(reinterpret_cast<__m256i*>(buffer), v);
      __builtin_memcpy(p, buffer, static_cast<std::size_t>(count));
    }
  }
  static inline __m256i dpbusd8(__m256i acc, __m256i a, __m256i b) { return _mm256_dpbusd_avx_epi32(acc, a, b); }
  static inline __m256i load8_n(const int32_t* p, int64_t count) { return load_n(p, count); }
  static inline void store8_n(int32_t* p, __m256i v, int64_t count) { store_n(p, v, count); }
};

}  // namespace
}  // namespace onnx_light::runtime::kernels::simd
