// The session's denormal mode (RuntimeSessionOptions::flush_denormals): flushed on every thread
// that runs a kernel when on, IEEE denormals when off, and the caller's own mode restored.
#include <doctest/doctest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <vector>

#include "onnx_light/runtime/error.h"
#include "onnx_light/runtime/parallel_region_collector.h"
#include "onnx_light/runtime/session.h"
#include "test_models.h"

#if defined(__x86_64__) || defined(__i386__)
#include <xmmintrin.h>

using namespace onnx_light;
using namespace onnx_light::runtime;

namespace {

constexpr unsigned kFlushBits = 0x8040;  // MXCSR FTZ | DAZ
const float kDenormal = std::numeric_limits<float>::denorm_min() * 1000.0f;

const char* kScaleModel =
    "<ir_version: 8, opset_import: [\"\" : 17]>\n"
    "g (float[N] x, float[N] s) => (float[N] y) { y = Mul(x, s) }";

struct Outcome {
  std::vector<float> y;
  int max_admitted = 0;
};

// y = x * 1 over n denormals, on `threads` threads, with the session's mode `flush`; `runs` runs,
// the outcome of the last unless an earlier one differed from the expected bits (then that one).
// Blocks are claimed dynamically, so a worker that is slow to wake may leave both blocks of one run
// to the caller: repeated runs make sure a worker's block is among those checked.
Outcome scale_denormals(int64_t n, int threads, bool flush, int runs = 1) {
  RuntimeSessionOptions options;
  options.parameters = RuntimeParameters(threads);
  options.flush_denormals = flush;
  options.parallel_region_collector = std::make_shared<ParallelRegionCollector>(64);
  RuntimeSession session(test::parse(kScaleModel), options);
  RuntimeContext context;
  Tensor x(ElementType::float32, {n});
  Tensor s(ElementType::float32, {n});
  for (int64_t i = 0; i < n; ++i) {
    x.data<float>()[i] = kDenormal;
    s.data<float>()[i] = 1.0f;
  }
  context.set("x", x);
  context.set("s", s);
  const uint32_t expected = flush ? 0u : std::bit_cast<uint32_t>(kDenormal);
  Outcome outcome;
  for (int run = 0; run < runs; ++run) {
    session.run(context);
    const Tensor& y = context.get("y");
    outcome.y.assign(y.data<float>(), y.data<float>() + n);
    if (std::any_of(outcome.y.begin(), outcome.y.end(), [&](float v) { return std::bit_cast<uint32_t>(v) != expected; }))
      break;
  }
  for (const auto& event : session.parallel_region_report().events)
    outcome.max_admitted = std::max(outcome.max_admitted, event.admitted_threads);
  return outcome;
}

}  // namespace

TEST_CASE("denormals_are_flushed_by_default_and_kept_when_asked") {
  REQUIRE(std::fpclassify(kDenormal) == FP_SUBNORMAL);
  CHECK(RuntimeSessionOptions().flush_denormals);
  const Outcome flushed = scale_denormals(16, 1, true);
  for (float v : flushed.y) CHECK(std::bit_cast<uint32_t>(v) == 0u);
  const Outcome kept = scale_denormals(16, 1, false);
  for (float v : kept.y) CHECK(std::bit_cast<uint32_t>(v) == std::bit_cast<uint32_t>(kDenormal));
}

TEST_CASE("denormal_mode_holds_on_the_workers_of_a_parallel_region") {
  constexpr int64_t n = 1 << 21;  // above every default parallel threshold
  for (bool flush : {true, false}) {
    CAPTURE(flush);
    const Outcome outcome = scale_denormals(n, 2, flush, /*runs=*/30);
    CHECK(outcome.max_admitted == 2);  // both threads computed a block
    const uint32_t expected = flush ? 0u : std::bit_cast<uint32_t>(kDenormal);
    int64_t wrong = 0;
    for (float v : outcome.y) wrong += std::bit_cast<uint32_t>(v) != expected;
    CHECK(wrong == 0);
  }
}

TEST_CASE("the_callers_floating_point_mode_is_restored_after_a_run") {
  const unsigned original = _mm_getcsr();
  for (unsigned callers_bits : {0u, kFlushBits}) {
    for (bool flush : {true, false}) {
      CAPTURE(callers_bits);
      CAPTURE(flush);
      _mm_setcsr((original & ~kFlushBits) | callers_bits);
      const unsigned before = _mm_getcsr();
      const Outcome outcome = scale_denormals(16, 1, flush);
      CHECK(_mm_getcsr() == before);
      // The session's mode wins over the caller's inside the run.
      CHECK((std::bit_cast<uint32_t>(outcome.y[0]) == 0u) == flush);
    }
  }
  _mm_setcsr(original);
}

TEST_CASE("denormal_mode_holds_on_the_calling_thread_outside_parallel_regions") {
  // Range computes its element count on the calling thread, before any region: with DAZ the
  // denormal step reads as zero (refused), with IEEE denormals the count is 10.
  const char* text =
      "<ir_version: 8, opset_import: [\"\" : 17]>\n"
      "g (float start, float limit, float delta) => (float[N] y) { y = Range(start, limit, delta) }";
  auto scalar = [](float v) {
    Tensor t(ElementType::float32, {});
    *t.data<float>() = v;
    return t;
  };
  for (bool flush : {false, true}) {
    CAPTURE(flush);
    RuntimeSessionOptions options;
    options.parameters = RuntimeParameters(1);
    options.flush_denormals = flush;
    RuntimeSession session(test::parse(text), options);
    std::vector<Tensor> inputs{scalar(0.0f), scalar(10 * kDenormal), scalar(kDenormal)};
    std::vector<Tensor> outputs(1);
    if (flush) {
      CHECK_THROWS_WITH_AS(session.run(inputs, outputs), doctest::Contains("delta must not be 0"), InputError);
    } else {
      session.run(inputs, outputs);
      CHECK(outputs[0].element_count() == 10);
    }
  }
}

#endif
