// Issue 7: a steady-state run allocates nothing when shapes repeat: outputs, intermediate values,
// packed operands and the kernels' shape bookkeeping are reused, and parallel regions take their
// body as a FunctionRef (std::function allocated for lambdas with more than two captures). This
// executable replaces the global allocation functions with counting ones (hence its own binary,
// away from the unit tests and the sanitizer builds) and counts every allocation, on any thread,
// during repeated positional runs whose outputs are bound to caller memory.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>
#include <vector>

#include "onnx_light/runtime/calibration_workload.h"
#include "onnx_light/runtime/model.h"
#include "onnx_light/runtime/session.h"

namespace {

std::atomic<bool> g_counting{false};
std::atomic<long> g_allocations{0};
std::atomic<long> g_bytes{0};

void* counted(std::size_t bytes, std::size_t alignment) {
  if (g_counting.load(std::memory_order_relaxed)) {
    g_allocations.fetch_add(1, std::memory_order_relaxed);
    g_bytes.fetch_add(static_cast<long>(bytes), std::memory_order_relaxed);
  }
  void* p = nullptr;
  if (alignment <= alignof(std::max_align_t)) p = std::malloc(bytes == 0 ? 1 : bytes);
  else if (posix_memalign(&p, alignment, bytes == 0 ? alignment : bytes) != 0) p = nullptr;
  return p;
}

void* counted_or_throw(std::size_t bytes, std::size_t alignment) {
  if (void* p = counted(bytes, alignment)) return p;
  throw std::bad_alloc();
}

}  // namespace

void* operator new(std::size_t n) { return counted_or_throw(n, 0); }
void* operator new[](std::size_t n) { return counted_or_throw(n, 0); }
void* operator new(std::size_t n, std::align_val_t a) { return counted_or_throw(n, static_cast<std::size_t>(a)); }
void* operator new[](std::size_t n, std::align_val_t a) { return counted_or_throw(n, static_cast<std::size_t>(a)); }
void* operator new(std::size_t n, const std::nothrow_t&) noexcept { return counted(n, 0); }
void* operator new[](std::size_t n, const std::nothrow_t&) noexcept { return counted(n, 0); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }

namespace {

using namespace onnx_light::runtime;

// Allocations during `runs` positional runs after three warm-up runs, outputs in caller
// memory (the warm-up lets every thread grow its scratch once).
long allocations_in_steady_state(const Model& model, const std::vector<Tensor>& inputs, int threads, int runs = 20) {
  RuntimeSessionOptions options;
  options.parameters = RuntimeParameters(threads);
  RuntimeSession session(model, options);
  std::vector<Tensor> caller_memory, outputs;
  for (const auto& info : session.outputs()) {
    Shape shape;
    for (int64_t d : info.shape) shape.push_back(d);
    caller_memory.emplace_back(info.element_type, shape);
    outputs.push_back(Tensor::borrow(info.element_type, shape, caller_memory.back().raw_data()));
  }
  for (int i = 0; i < 3; ++i) session.run(inputs, outputs);
  g_allocations = 0;
  g_bytes = 0;
  g_counting = true;
  for (int i = 0; i < runs; ++i) session.run(inputs, outputs);
  g_counting = false;
  MESSAGE(threads << " thread(s): " << g_allocations.load() / runs << " allocations, " << g_bytes.load() / runs
                  << " bytes per run");
  return g_allocations.load();
}

Tensor random(const Shape& shape, uint32_t seed) { return random_tensor(ElementType::float32, shape, seed); }

}  // namespace

TEST_CASE("elementwise_steady_state_allocates_nothing") {
  const Model model = parse_model_text(
      "<ir_version: 8, opset_import: [\"\" : 17]>\ng (float[100000] a, float[100000] b) => (float[100000] y) "
      "{ s = Add(a, b)\n y = Relu(s) }");
  for (int threads : {1, 2}) {
    CAPTURE(threads);
    CHECK(allocations_in_steady_state(model, {random({100000}, 1), random({100000}, 2)}, threads) == 0);
  }
}

TEST_CASE("mlp_with_constant_weights_steady_state_allocates_nothing") {
  const Model model = with_initializers(parse_model_text(
      "<ir_version: 8, opset_import: [\"\" : 17]>\ng (float[64, 96] x, float[96, 128] w1, float[128] b1, "
      "float[128, 40] w2, float[40] b2) => (float[64, 40] y) "
      "{ h = Gemm(x, w1, b1)\n r = Relu(h)\n y = Gemm(r, w2, b2) }"),
      {{"w1", random({96, 128}, 2)}, {"b1", random({128}, 3)}, {"w2", random({128, 40}, 4)}, {"b2", random({40}, 5)}});
  for (int threads : {1, 2}) {
    CAPTURE(threads);
    CHECK(allocations_in_steady_state(model, {random({64, 96}, 1)}, threads) == 0);
  }
}

TEST_CASE("matmul_and_softmax_steady_state_allocates_nothing") {
  const Model model = parse_model_text(
      "<ir_version: 8, opset_import: [\"\" : 17]>\ng (float[200, 150] a, float[150, 120] b) => (float[200, 120] y) "
      "{ p = MatMul(a, b)\n y = Softmax(p) }");
  for (int threads : {1, 2}) {
    CAPTURE(threads);
    CHECK(allocations_in_steady_state(model, {random({200, 150}, 1), random({150, 120}, 2)}, threads) == 0);
  }
}

TEST_CASE("counter_sees_allocations") {
  // The harness itself: an allocation inside the counted window is seen.
  g_allocations = 0;
  g_counting = true;
  auto* p = new std::vector<int>(1000);
  g_counting = false;
  delete p;
  CHECK(g_allocations.load() >= 2);
  CHECK(g_bytes.load() >= 1000 * static_cast<long>(sizeof(int)));
}
