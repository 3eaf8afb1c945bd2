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

  // The first `count` (1 to 7) bytes at p as a little-endian integer, no byte past them read: two
  // overlapping words (their common bytes are the same memory, so OR-ing them changes nothing) or
  // single bytes; no call to memcpy in a hot tail.
  static inline uint64_t tail_bytes(const uint8_t* p, int64_t count) {
    if (count >= 4) {
      uint32_t lo, hi;
      __builtin_memcpy(&lo, p, 4);
      __builtin_memcpy(&hi, p + count - 4, 4);
      return uint64_t{lo} | (uint64_t{hi} << (8 * (count - 4)));
    }
    uint64_t v = p[0];
    if (count > 1) v |= uint64_t{p[1]} << 8;
    if (count > 2) v |= uint64_t{p[2]} << 16;
    return v;
  }
  // Stores the low `count` (1 to 7) bytes of v at p, the same way round.
  static inline void store_tail_bytes(uint8_t* p, uint64_t v, int64_t count) {
    if (count >= 4) {
      const auto lo = static_cast<uint32_t>(v), hi = static_cast<uint32_t>(v >> (8 * (count - 4)));
      __builtin_memcpy(p, &lo, 4);
      __builtin_memcpy(p + count - 4, &hi, 4);
      return;
    }
    p[0] = static_cast<uint8_t>(v);
    if (count > 1) p[1] = static_cast<uint8_t>(v >> 8);
    if (count > 2) p[2] = static_cast<uint8_t>(v >> 16);
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
    if (count >= 8) bytes = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p));
    else if (count > 0) bytes = _mm_cvtsi64_si128(static_cast<long long>(tail_bytes(p, count)));
    else bytes = _mm_setzero_si128();
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
    if (count >= 8) _mm_storel_epi64(reinterpret_cast<__m128i*>(y), bytes);
    else if (count > 0) store_tail_bytes(y, static_cast<uint64_t>(_mm_cvtsi128_si64(bytes)), count);
  }

  static inline __m256i shifted_bytes32_n(const uint8_t* p, int64_t count, __m256i vflip, uint8_t) {
    if (count >= 32) return _mm256_xor_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)), vflip);
    if (count <= 0) return _mm256_setzero_si256();
    // Whole dwords by mask, the last 1-3 bytes into their dword; then shifted, and 0 past count.
    const int64_t words = count / 4, rest = count % 4;
    __m256i v = _mm256_maskload_epi32(reinterpret_cast<const int*>(p), lanes(words));
    if (rest != 0) {
      const auto last = static_cast<int32_t>(tail_bytes(p + 4 * words, rest));
      const __m256i at = _mm256_cmpeq_epi32(_mm256_set1_epi32(static_cast<int32_t>(words)),
                                            _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
      v = _mm256_or_si256(v, _mm256_and_si256(_mm256_set1_epi32(last), at));
    }
    // Bytes [0, count) keep (byte ^ flip); the rest were 0 and must stay 0.
    const __m256i index = _mm256_setr_epi8(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21,
                                           22, 23, 24, 25, 26, 27, 28, 29, 30, 31);
    const __m256i inside = _mm256_cmpgt_epi8(_mm256_set1_epi8(static_cast<char>(count)), index);
    return _mm256_xor_si256(v, _mm256_and_si256(vflip, inside));
  }
  // `count`: a multiple of 4 (whole words of packed B).
  static inline void store_bytes32_n(uint8_t* p, __m256i v, int64_t count) {
    if (count >= 32) _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), v);
    else if (count > 0) _mm256_maskstore_epi32(reinterpret_cast<int*>(p), lanes(count / 4), v);
  }
  static inline __m256i dpbusd8(__m256i acc, __m256i a, __m256i b) { return _mm256_dpbusd_avx_epi32(acc, a, b); }
  static inline __m256i load8_n(const int32_t* p, int64_t count) { return load_n(p, count); }
  static inline void store8_n(int32_t* p, __m256i v, int64_t count) { store_n(p, v, count); }
};

}  // namespace
}  // namespace onnx_light::runtime::kernels::simd
