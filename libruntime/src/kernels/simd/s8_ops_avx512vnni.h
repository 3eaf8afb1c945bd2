#pragma once
// The vector operations of the AVX-512 VNNI integer kernels, for the algorithms written once in
// gemm_s8_tile.h and conv_s8_loops.h: 16 int32 lanes per zmm register, tails by masks. Included
// only by the *_avx512vnni.cc files; internal linkage (anonymous namespace, see README.md).
#include <immintrin.h>

#include <cstddef>
#include <cstdint>

namespace onnx_light::runtime::kernels::simd {
namespace {

struct S8Avx512Vnni {
  using V = __m512i;  // int32 lanes
  using F = __m512;   // float lanes
  static constexpr int kLanes = 16;

  // The low `count` of 16 lanes (0 to 16).
  static inline __mmask16 lanes(int64_t count) {
    if (count >= 16) return static_cast<__mmask16>(0xFFFF);
    if (count <= 0) return 0;
    return static_cast<__mmask16>((1u << count) - 1u);
  }
  static inline __mmask32 byte_lanes(int64_t count) {
    if (count >= 32) return static_cast<__mmask32>(0xFFFFFFFFu);
    if (count <= 0) return 0;
    return static_cast<__mmask32>((1u << count) - 1u);
  }
  static inline __mmask8 lanes8(int64_t count) {
    if (count >= 8) return static_cast<__mmask8>(0xFF);
    if (count <= 0) return 0;
    return static_cast<__mmask8>((1u << count) - 1u);
  }

  static inline V zero() { return _mm512_setzero_si512(); }
  static inline V set1(int32_t v) { return _mm512_set1_epi32(v); }
  static inline F set1f(float v) { return _mm512_set1_ps(v); }
  static inline V add(V a, V b) { return _mm512_add_epi32(a, b); }
  static inline V mullo(V a, V b) { return _mm512_mullo_epi32(a, b); }
  // kLanes words of packed B.
  static inline V load(const int8_t* p) { return _mm512_loadu_si512(p); }
  // Four bytes of A broadcast to every lane, straight from memory.
  static inline V broadcast_word(const uint8_t* p) {
    int word;
    __builtin_memcpy(&word, p, 4);
    return _mm512_set1_epi32(word);
  }
  // acc += dot4(a, b) per lane. Written as asm because GCC 12 copies every accumulator through a
  // spare register around _mm512_dpbusd_epi32 (two extra moves per product: half the throughput).
  static __attribute__((always_inline)) inline void dpbusd(V& acc, V a, V b) {
    asm("vpdpbusd %2, %1, %0" : "+v"(acc) : "v"(a), "v"(b));
  }
  static inline V dpwssd(V acc, V x, V tap) { return _mm512_dpwssd_epi32(acc, x, tap); }
  // `count` int32 lanes (all when count >= kLanes), 0 in the others; memory past them is not read.
  static inline V load_n(const int32_t* p, int64_t count) { return _mm512_maskz_loadu_epi32(lanes(count), p); }
  static inline void store_n(int32_t* p, V v, int64_t count) { _mm512_mask_storeu_epi32(p, lanes(count), v); }
  // `count` bytes widened to int32 lanes (sign-extended when kSigned).
  template <bool kSigned>
  static inline V load_bytes_n(const uint8_t* p, int64_t count) {
    const __m128i bytes = _mm_maskz_loadu_epi8(lanes(count), p);
    return kSigned ? _mm512_cvtepi8_epi32(bytes) : _mm512_cvtepu8_epi32(bytes);
  }
  // y = saturate(nearbyint(float(sum) * m) + z) into `count` bytes (int8 when kSigned, else uint8):
  // the portable kernels' expression, bit for bit.
  template <bool kSigned>
  static inline void requantize_store_n(V sum, F m, F z, uint8_t* y, int64_t count) {
    const F lo = _mm512_set1_ps(kSigned ? -128.0f : 0.0f), hi = _mm512_set1_ps(kSigned ? 127.0f : 255.0f);
    const F product = _mm512_mul_ps(_mm512_cvtepi32_ps(sum), m);
    const F r = _mm512_add_ps(_mm512_roundscale_ps(product, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC), z);
    // MAXPS returns its second operand for a NaN first one: NaN saturates low, as in the portable code.
    _mm512_mask_cvtepi32_storeu_epi8(y, lanes(count), _mm512_cvtps_epi32(_mm512_min_ps(_mm512_max_ps(r, lo), hi)));
  }

  // 32-byte rows (the B packing, whose interleaving runs on ymm registers on both ISAs).
  // (p[j] ^ flip) for j < count, 0 past it; memory past count is not read.
  static inline __m256i shifted_bytes32_n(const uint8_t* p, int64_t count, __m256i vflip, uint8_t) {
    const __mmask32 valid = byte_lanes(count);
    return _mm256_maskz_mov_epi8(valid, _mm256_xor_si256(_mm256_maskz_loadu_epi8(valid, p), vflip));
  }
  // `count`: a multiple of 4 (whole words of packed B; the AVX-VNNI ops rely on it).
  static inline void store_bytes32_n(uint8_t* p, __m256i v, int64_t count) {
    _mm256_mask_storeu_epi8(p, byte_lanes(count), v);
  }
  static inline __m256i dpbusd8(__m256i acc, __m256i a, __m256i b) { return _mm256_dpbusd_epi32(acc, a, b); }
  static inline __m256i load8_n(const int32_t* p, int64_t count) { return _mm256_maskz_loadu_epi32(lanes8(count), p); }
  static inline void store8_n(int32_t* p, __m256i v, int64_t count) { _mm256_mask_storeu_epi32(p, lanes8(count), v); }
};

}  // namespace
}  // namespace onnx_light::runtime::kernels::simd
