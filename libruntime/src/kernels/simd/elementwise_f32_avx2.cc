// Elementwise float32 loops for AVX2 (compiled with -mavx2 -mfma; see README.md for the rules).
// Four vectors per iteration keep two loads and a store in flight per cycle; the tail is a
// masked load/store, so no scalar loop (and no second rounding path) exists.
#include <immintrin.h>

#include <cstdint>

#include "kernels/simd/elementwise_f32.h"

namespace onnx_light::runtime::kernels::simd {

namespace {

constexpr int64_t kLanes = 8;

inline __m256i tail_mask(int64_t remaining) {
  const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(remaining)), lane);
}

struct AbsOp {
  __m256 operator()(__m256 x) const { return _mm256_and_ps(x, _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff))); }
};
struct NegOp {
  __m256 operator()(__m256 x) const { return _mm256_xor_ps(x, _mm256_castsi256_ps(_mm256_set1_epi32(INT32_MIN))); }
};
struct ReluOp {
  // Keep x where x > 0 or x is NaN (not-less-or-equal, unordered is true); else +0.
  __m256 operator()(__m256 x) const { return _mm256_and_ps(x, _mm256_cmp_ps(x, _mm256_setzero_ps(), _CMP_NLE_UQ)); }
};
struct AddOp {
  __m256 operator()(__m256 a, __m256 b) const { return _mm256_add_ps(a, b); }
};
struct SubOp {
  __m256 operator()(__m256 a, __m256 b) const { return _mm256_sub_ps(a, b); }
};
struct MulOp {
  __m256 operator()(__m256 a, __m256 b) const { return _mm256_mul_ps(a, b); }
};
struct DivOp {
  __m256 operator()(__m256 a, __m256 b) const { return _mm256_div_ps(a, b); }
};

// From this many elements a misaligned output is first brought to 32-byte alignment. Streaming
// stores need it; plain stores that straddle cache lines cost up to a quarter more: Abs over 1e5
// floats in L2 into an output 16 bytes off alignment took 8.7-9.6 us without the head, 7.7-7.9
// with it, 7.5-7.7 aligned (bench/session_bench BM_SessionRunPositional/100000/4 and /0).
// Shorter spans (a few vectors, mostly the tail) skip it; 64 is a choice, not a measured crossover.
constexpr int64_t kAlignOutputMinimum = 64;

// Calls body.full(i) over whole vectors of [0, n) and body.tail for what is left: a masked head
// up to the output's 32-byte alignment (see kAlignOutputMinimum), then full vectors, then one
// masked tail.
template <bool kStream, typename Body>
inline void for_each_vector(float* out, int64_t n, Body&& body) {
  int64_t i = 0;
  if (kStream || n >= kAlignOutputMinimum) {
    const auto misalignment = static_cast<int64_t>((reinterpret_cast<uintptr_t>(out) & 31u) / sizeof(float));
    if (misalignment != 0) {
      const int64_t head = kLanes - misalignment < n ? kLanes - misalignment : n;
      body.tail(0, head);
      i = head;
    }
  }
  // The bound computed once keeps the loop's control to one compare (measured 3% at 1e5 in L2).
  for (const int64_t unrolled_end = i + (n - i) / (4 * kLanes) * (4 * kLanes); i < unrolled_end; i += 4 * kLanes) {
    body.template full<kStream>(i);
    body.template full<kStream>(i + kLanes);
    body.template full<kStream>(i + 2 * kLanes);
    body.template full<kStream>(i + 3 * kLanes);
  }
  for (; i + kLanes <= n; i += kLanes) body.template full<kStream>(i);
  if (i < n) body.tail(i, n - i);
  if constexpr (kStream) _mm_sfence();  // order the streaming stores before the region ends
}

template <bool kStream>
inline void store(float* p, __m256 v) {
  if constexpr (kStream) _mm256_stream_ps(p, v);
  else _mm256_storeu_ps(p, v);
}

template <typename Op>
struct UnaryBody {
  const float* in;
  float* out;
  Op op;
  template <bool kStream>
  void full(int64_t i) const {
    store<kStream>(out + i, op(_mm256_loadu_ps(in + i)));
  }
  void tail(int64_t i, int64_t count) const {
    const __m256i m = tail_mask(count);
    _mm256_maskstore_ps(out + i, m, op(_mm256_maskload_ps(in + i, m)));
  }
};

template <typename Op>
void unary(const float* in, float* out, int64_t n, bool streaming) {
  if (n <= 0) return;
  const UnaryBody<Op> body{in, out, Op{}};
  if (streaming) for_each_vector<true>(out, n, body);
  else for_each_vector<false>(out, n, body);
}

// kShape: 0 both spans, 1 b is one value, 2 a is one value.
template <typename Op, int kShape>
struct BinaryBody {
  const float* a;
  const float* b;
  float* out;
  __m256 scalar;
  Op op;
  __m256 left(int64_t i) const { return kShape == 2 ? scalar : _mm256_loadu_ps(a + i); }
  __m256 right(int64_t i) const { return kShape == 1 ? scalar : _mm256_loadu_ps(b + i); }
  template <bool kStream>
  void full(int64_t i) const {
    store<kStream>(out + i, op(left(i), right(i)));
  }
  void tail(int64_t i, int64_t count) const {
    const __m256i m = tail_mask(count);
    // Masked-off lanes read nothing; their (zero) inputs are computed and never stored.
    const __m256 l = kShape == 2 ? scalar : _mm256_maskload_ps(a + i, m);
    const __m256 r = kShape == 1 ? scalar : _mm256_maskload_ps(b + i, m);
    _mm256_maskstore_ps(out + i, m, op(l, r));
  }
};

template <typename Op, int kShape>
void binary_shape(const float* a, const float* b, float* out, int64_t n, bool streaming) {
  __m256 scalar = _mm256_setzero_ps();
  if (kShape == 1) scalar = _mm256_set1_ps(b[0]);
  if (kShape == 2) scalar = _mm256_set1_ps(a[0]);
  const BinaryBody<Op, kShape> body{a, b, out, scalar, Op{}};
  if (streaming) for_each_vector<true>(out, n, body);
  else for_each_vector<false>(out, n, body);
}

template <typename Op>
void binary(const float* a, const float* b, float* out, int64_t n, BinarySpanShape shape, bool streaming) {
  if (n <= 0) return;
  switch (shape) {
    case BinarySpanShape::same: binary_shape<Op, 0>(a, b, out, n, streaming); break;
    case BinarySpanShape::scalar_b: binary_shape<Op, 1>(a, b, out, n, streaming); break;
    case BinarySpanShape::scalar_a: binary_shape<Op, 2>(a, b, out, n, streaming); break;
  }
}

}  // namespace

void abs_f32_avx2(const float* in, float* out, int64_t n, bool streaming) { unary<AbsOp>(in, out, n, streaming); }
void neg_f32_avx2(const float* in, float* out, int64_t n, bool streaming) { unary<NegOp>(in, out, n, streaming); }
void relu_f32_avx2(const float* in, float* out, int64_t n, bool streaming) { unary<ReluOp>(in, out, n, streaming); }

void add_f32_avx2(const float* a, const float* b, float* out, int64_t n, BinarySpanShape shape, bool streaming) {
  binary<AddOp>(a, b, out, n, shape, streaming);
}
void sub_f32_avx2(const float* a, const float* b, float* out, int64_t n, BinarySpanShape shape, bool streaming) {
  binary<SubOp>(a, b, out, n, shape, streaming);
}
void mul_f32_avx2(const float* a, const float* b, float* out, int64_t n, BinarySpanShape shape, bool streaming) {
  binary<MulOp>(a, b, out, n, shape, streaming);
}
void div_f32_avx2(const float* a, const float* b, float* out, int64_t n, BinarySpanShape shape, bool streaming) {
  binary<DivOp>(a, b, out, n, shape, streaming);
}

}  // namespace onnx_light::runtime::kernels::simd
