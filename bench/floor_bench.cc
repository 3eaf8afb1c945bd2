// What an out-of-place elementwise loop can reach on this machine, whatever its code: Abs over n
// floats written every way we know (plain AVX2 / AVX-512 stores, non-temporal stores, software
// prefetch of the input and of the output lines, several interleaved streams) next to memcpy of
// the same bytes. Compare with session_bench BM_SessionRun/abs_serial and BM_ReadFloor /
// BM_WriteFloor at the same n. bench/RESULTS.md ("Where a target is missed") quotes these.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <cstring>
#include <string>

#if defined(__x86_64__) || defined(_M_X64)
#include <immintrin.h>
#endif

#include "onnx_light/runtime/calibration_workload.h"
#include "onnx_light/runtime/tensor.h"
#include "onnx_light/runtime/thread_pool.h"

namespace {

using namespace onnx_light::runtime;

#if defined(__x86_64__) || defined(_M_X64)

// kPrefetch: bytes ahead of the input (0: none); kPrefetchOut also asks for the output lines
// (prefetchw) that far ahead. kStreams: the span cut into that many parts walked side by side.
template <bool kStream, int kPrefetch, bool kPrefetchOut, int kStreams>
__attribute__((target("avx2,prfchw"))) void abs_avx2(const float* in, float* out, int64_t n) {
  const __m256 mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
  const int64_t part = n / kStreams / 32 * 32;
  for (int64_t i = 0; i < part; i += 32)
    for (int s = 0; s < kStreams; ++s) {
      const float* x = in + s * part + i;
      float* y = out + s * part + i;
      if constexpr (kPrefetch > 0) {
        _mm_prefetch(reinterpret_cast<const char*>(x) + kPrefetch, _MM_HINT_T0);
        _mm_prefetch(reinterpret_cast<const char*>(x) + kPrefetch + 64, _MM_HINT_T0);
        if constexpr (kPrefetchOut) {
          _m_prefetchw(reinterpret_cast<char*>(y) + kPrefetch);
          _m_prefetchw(reinterpret_cast<char*>(y) + kPrefetch + 64);
        }
      }
      for (int j = 0; j < 4; ++j) {
        const __m256 v = _mm256_and_ps(mask, _mm256_loadu_ps(x + 8 * j));
        if constexpr (kStream) _mm256_stream_ps(y + 8 * j, v);
        else _mm256_storeu_ps(y + 8 * j, v);
      }
    }
  for (int64_t i = part * kStreams; i < n; ++i) out[i] = in[i] < 0 ? -in[i] : in[i];
  if constexpr (kStream) _mm_sfence();
}

__attribute__((target("avx512f,avx512dq"))) void abs_avx512(const float* in, float* out, int64_t n) {
  const __m512 mask = _mm512_castsi512_ps(_mm512_set1_epi32(0x7fffffff));
  int64_t i = 0;
  for (; i + 64 <= n; i += 64)
    for (int j = 0; j < 4; ++j) _mm512_storeu_ps(out + i + 16 * j, _mm512_and_ps(mask, _mm512_loadu_ps(in + i + 16 * j)));
  for (; i < n; ++i) out[i] = in[i] < 0 ? -in[i] : in[i];
}

#endif

using Loop = void (*)(const float*, float*, int64_t);

void copy(const float* in, float* out, int64_t n) { std::memcpy(out, in, static_cast<std::size_t>(n) * sizeof(float)); }

bool host_has(const char* feature) {
  if (feature == nullptr) return true;
#if defined(__x86_64__) || defined(_M_X64)
  __builtin_cpu_init();
  if (std::strcmp(feature, "avx2") == 0) return __builtin_cpu_supports("avx2");
  if (std::strcmp(feature, "avx512") == 0) return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq");
#endif
  return false;
}

// Buffers as the session allocates them (Tensor: 64-byte aligned, huge pages from 2 MiB).
void BM_Loop(benchmark::State& state, Loop loop, const char* feature) {
  if (!host_has(feature)) {
    state.SkipWithError((std::string("host has no ") + feature).c_str());
    return;
  }
  const int64_t n = state.range(0);
  const Tensor source = random_tensor(ElementType::float32, {n}, 1);
  Tensor destination(ElementType::float32, {n});
  for (auto _ : state) {
    loop(source.data<float>(), destination.data<float>(), n);
    benchmark::DoNotOptimize(destination.raw_data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * n * 8);
}

#define FLOOR(name, loop, feature) \
  BENCHMARK_CAPTURE(BM_Loop, name, loop, feature)->Arg(100000)->Arg(1000000)->Arg(10000000)

FLOOR(memcpy, copy, nullptr);
#if defined(__x86_64__) || defined(_M_X64)
FLOOR(avx2, (abs_avx2<false, 0, false, 1>), "avx2");
FLOOR(avx512, abs_avx512, "avx512");
FLOOR(avx2_nontemporal, (abs_avx2<true, 0, false, 1>), "avx2");
FLOOR(avx2_prefetch_512B, (abs_avx2<false, 512, false, 1>), "avx2");
FLOOR(avx2_prefetch_2KiB, (abs_avx2<false, 2048, false, 1>), "avx2");
FLOOR(avx2_prefetch_2KiB_and_out, (abs_avx2<false, 2048, true, 1>), "avx2");
FLOOR(avx2_2_streams, (abs_avx2<false, 0, false, 2>), "avx2");
FLOOR(avx2_4_streams, (abs_avx2<false, 0, false, 4>), "avx2");
#endif

// The copy floor at a thread count: n floats copied between two session-allocated tensors by the
// runtime's own pool, split as the span kernels split their work. bench/compare_with_ort.py runs
// it in every repetition (n = 1e6 for Abs and Relu at 1e6; 1.5e6 for Add, which moves as many
// cache lines: 8 MB in and 4 MB out against 6 MB in and 6 MB out).
void BM_PoolCopy(benchmark::State& state) {
  const int64_t n = state.range(0);
  const int threads = static_cast<int>(state.range(1));
  const Tensor source = random_tensor(ElementType::float32, {n}, 1);
  Tensor destination(ElementType::float32, {n});
  ThreadPool pool(threads);
  const float* in = source.data<float>();
  float* out = destination.data<float>();
  for (auto _ : state) {
    pool.parallel_for(n, 16, threads, [&](int64_t begin, int64_t end) { copy(in + begin, out + begin, end - begin); });
    benchmark::DoNotOptimize(destination.raw_data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * n * 8);
}
BENCHMARK(BM_PoolCopy)->ArgNames({"n", "threads"})->ArgsProduct({{1000000, 1500000}, {1, 2}})->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
