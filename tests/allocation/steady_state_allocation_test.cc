// Issue 7: a steady-state run allocates nothing when shapes repeat: outputs, intermediate values,
// packed operands and the kernels' shape bookkeeping are reused, and parallel regions take their
// body as a FunctionRef (std::function allocated for lambdas with more than two captures). This
// executable replaces the heap's allocation functions with counting ones (hence its own binary,
// away from the unit tests and the sanitizer builds) and counts every allocation, on any thread,
// during repeated positional runs whose outputs are bound to caller memory.
//
// Issue 23: counting at operator new alone missed the tensor blocks and packed GEMM buffers, which
// come from posix_memalign (libruntime/src/tensor_memory.cc). So the counting happens one level
// down, at the C allocation functions (allocation_counter.cc, linked into this executable).
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include <fmt/format.h>

#include <malloc.h>

#include <atomic>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "onnx_light/runtime/calibration_workload.h"
#include "onnx_light/runtime/kernel_table.h"
#include "onnx_light/runtime/model.h"
#include "onnx_light/runtime/session.h"
#include "tensor_memory.h"
#include "allocation_counter.h"

namespace {

using namespace onnx_light::runtime;

// Allocations during `runs` positional runs after three warm-up runs (allocation_counter.h).
long allocations_in_steady_state(const Model& model, const std::vector<Tensor>& inputs, int threads, int runs = 20,
                                 const KernelTable* kernels = nullptr) {
  const onnx_light::test::SteadyStateAllocations counted =
      onnx_light::test::count_steady_state_allocations(model, inputs, threads, runs, kernels);
  MESSAGE(threads << " thread(s): " << counted.allocations / runs << " allocations, " << counted.bytes / runs
                  << " bytes per run");
  return counted.allocations;
}

// Hides a pointer from the optimizer: the counter is another translation unit, so a malloc/free
// or new/delete pair whose pointer goes nowhere may be elided (GCC does) and never counted.
template <typename T>
T* escape(T* p) {
  asm volatile("" : : "g"(p) : "memory");
  return p;
}

Tensor random(const Shape& shape, uint32_t seed) { return random_tensor(ElementType::float32, shape, seed); }

// An Abs whose every run takes and returns one posix_memalign block, as a kernel that forgot to
// keep its packed buffer would: the steady-state tests must see it.
class AbsWithScratchPerRun final : public Kernel {
 public:
  void run(KernelExecution& execution) override {
    const Tensor& x = execution.required_input(0);
    Tensor& y = execution.output_for_overwrite(0, ElementType::float32, x.shape());
    void* scratch = nullptr;
    if (posix_memalign(&scratch, 64, 4096) != 0) throw std::bad_alloc();
    const float* in = x.data<float>();
    float* out = y.data<float>();
    for (int64_t i = 0; i < x.element_count(); ++i) out[i] = std::fabs(in[i]);
    std::free(scratch);
  }
};

KernelTable table_with_scratch_per_run_abs() {
  KernelDef def;
  def.op_type = "Abs";
  def.element_type = ElementType::float32;
  def.schema.key.kernel = "Abs";
  def.schema.key.implementation = "portable";
  def.create = [](const KernelCreateInfo&) -> std::unique_ptr<Kernel> { return std::make_unique<AbsWithScratchPerRun>(); };
  KernelTable table;
  table.add(std::move(def));
  return table;
}

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

TEST_CASE("resize_steady_state_allocates_nothing") {
  // The tables are cached per shape and scales, the row caches and coordinates kept in the kernel:
  // nearest and bilinear on the 2-D path, linear over the channel axis on the N-D path.
  for (const char* resize : {"Resize <mode = \"nearest\", coordinate_transformation_mode = \"asymmetric\", "
                             "nearest_mode = \"floor\"> (x, , s)",
                             "Resize <mode = \"linear\"> (x, , s)", "Resize <mode = \"linear\"> (x, , c)"}) {
    const Model model = parse_model_text(fmt::format(
        "<ir_version: 8, opset_import: [\"\" : 13]>\ng (float[1, 8, 20, 24] x) => (float[1, {}, 40, 48] y) "
        "{{ s = Constant <value = float[4] {{1, 1, 2, 2}}> ()\n c = Constant <value = float[4] {{1, 2, 2, 2}}> ()\n"
        " y = {} }}",
        std::string(resize).find("(x, , c)") != std::string::npos ? 16 : 8, resize));
    const std::string node = resize;
    for (int threads : {1, 2}) {
      CAPTURE(node);
      CAPTURE(threads);
      CHECK(allocations_in_steady_state(model, {random({1, 8, 20, 24}, 1)}, threads) == 0);
    }
  }
}

TEST_CASE("values_of_many_sizes_released_at_last_use_allocate_nothing") {
  // Values of several sizes released mid-run and taken again (best fit) by later, differently
  // shaped values: the take/give sequence repeats each run, so the pool serves every request.
  const Model model = with_initializers(parse_model_text(
      "<ir_version: 8, opset_import: [\"\" : 17]>\ng (float[64, 96] x, float[96, 128] w1, float[128, 40] w2, "
      "float[40, 200] w3) => (float[64, 200] y) "
      "{ a = MatMul(x, w1)\n r = Relu(a)\n b = MatMul(r, w2)\n s = Sigmoid(b)\n m = Mul(b, s)\n"
      "  c = MatMul(m, w3)\n t = Tanh(c)\n y = Softmax(t) }"),
      {{"w1", random({96, 128}, 2)}, {"w2", random({128, 40}, 3)}, {"w3", random({40, 200}, 4)}});
  for (int threads : {1, 2}) {
    CAPTURE(threads);
    CHECK(allocations_in_steady_state(model, {random({64, 96}, 1)}, threads) == 0);
  }
}

TEST_CASE("conv_block_steady_state_allocates_nothing") {
  // Issue 15: a CNN block as the real models have it: a dense 3x3 Conv fused with HardSwish
  // (FusedConv), a stride-2 depthwise 3x3 with Relu, MaxPool, a 5x5 depthwise with a residual Add,
  // a pointwise Conv, AveragePool with pads and GlobalAveragePool. Their per-participant scratch,
  // window tables, shapes and variant labels are kept by the kernels across runs.
  const Model model = with_initializers(parse_model_text(
      "<ir_version: 8, opset_import: [\"\" : 17]>\ng (float[1, 8, 24, 48] x, float[16, 8, 3, 3] w1, float[16] b1, "
      "float[16, 1, 3, 3] wd, float[16] bd, float[16, 1, 5, 5] wd2, float[32, 16, 1, 1] w3) => (float[1, 32, 1, 1] y) "
      "{ c1 = Conv<pads = [1, 1, 1, 1]>(x, w1, b1)\n h = HardSwish(c1)\n"
      "  d = Conv<group = 16, strides = [2, 2], pads = [1, 1, 1, 1]>(h, wd, bd)\n r = Relu(d)\n"
      "  m = MaxPool<kernel_shape = [2, 2], strides = [2, 2]>(r)\n"
      "  d2 = Conv<group = 16, pads = [2, 2, 2, 2]>(m, wd2)\n a = Add(d2, m)\n p = Conv(a, w3)\n"
      "  ap = AveragePool<kernel_shape = [3, 3], pads = [1, 1, 1, 1]>(p)\n y = GlobalAveragePool(ap) }"),
      {{"w1", random({16, 8, 3, 3}, 2)}, {"b1", random({16}, 3)}, {"wd", random({16, 1, 3, 3}, 4)},
       {"bd", random({16}, 5)}, {"wd2", random({16, 1, 5, 5}, 6)}, {"w3", random({32, 16, 1, 1}, 7)}});
  for (int threads : {1, 2}) {
    CAPTURE(threads);
    CHECK(allocations_in_steady_state(model, {random({1, 8, 24, 48}, 1)}, threads) == 0);
  }
}

TEST_CASE("portable_conv_and_pools_steady_state_allocate_nothing") {
  // The portable kernels (the table without SIMD entries is not needed: a grouped Conv whose groups
  // are thinner than the register tile but not depthwise runs the portable loop), and MaxPool with
  // Indices through the generic window loop.
  const Model model = with_initializers(parse_model_text(
      "<ir_version: 8, opset_import: [\"\" : 17]>\ng (float[1, 8, 10, 14] x, float[8, 2, 3, 3] w) => "
      "(float[1, 8, 5, 7] y, int64[1, 8, 5, 7] i) "
      "{ c = Conv<group = 4, pads = [1, 1, 1, 1]>(x, w)\n y, i = MaxPool<kernel_shape = [2, 2], strides = [2, 2]>(c) }"),
      {{"w", random({8, 2, 3, 3}, 2)}});
  for (int threads : {1, 2}) {
    CAPTURE(threads);
    CHECK(allocations_in_steady_state(model, {random({1, 8, 10, 14}, 1)}, threads) == 0);
  }
}

TEST_CASE("counter_sees_a_per_run_posix_memalign_in_a_kernel") {
  // The harness on the path the library's tensor blocks and packed buffers take.
  const Model model = parse_model_text(
      "<ir_version: 8, opset_import: [\"\" : 17]>\ng (float[1000] x) => (float[1000] y) { y = Abs(x) }");
  const KernelTable kernels = table_with_scratch_per_run_abs();
  const int runs = 20;
  CHECK(allocations_in_steady_state(model, {random({1000}, 1)}, 1, runs, &kernels) == runs);
}

TEST_CASE("counter_sees_every_allocation_function") {
  // One counted allocation each, and no counting outside the window.
  auto counted = [](auto&& allocate_and_free) {
    onnx_light::test::start_counting();
    allocate_and_free();
    return onnx_light::test::stop_counting().allocations;
  };
  struct alignas(256) OverAligned {
    char byte;
  };
  void* p = nullptr;
  int result = -1;
  CHECK(counted([&] { result = posix_memalign(&p, 64, 1000); std::free(escape(p)); }) == 1);
  CHECK(result == 0);
  CHECK(counted([&] { std::free(escape(aligned_alloc(4096, 8192))); }) == 1);
  CHECK(counted([&] { std::free(escape(memalign(128, 100))); }) == 1);
  CHECK(counted([&] { std::free(escape(std::malloc(100))); }) == 1);
  CHECK(counted([&] { std::free(escape(std::calloc(10, 10))); }) == 1);
  CHECK(counted([&] { free_tensor_block(allocate_tensor_block(1000)); }) == 1);
  CHECK(counted([&] { free_tensor_block(allocate_tensor_block(kHugePageBytes)); }) == 1);
  CHECK(counted([&] { delete escape(new OverAligned{}); }) == 1);
  // The interposed functions still honour alignment and report bad arguments.
  CHECK(posix_memalign(&p, 24, 100) == EINVAL);
  REQUIRE(posix_memalign(&p, 4096, 100) == 0);
  CHECK(reinterpret_cast<std::uintptr_t>(p) % 4096 == 0);
  std::free(p);
  CHECK(onnx_light::test::counted_so_far().allocations == 1);  // nothing counted outside the window
}

TEST_CASE("counter_sees_allocations") {
  // The harness itself: an allocation inside the counted window is seen.
  onnx_light::test::start_counting();
  auto* p = escape(new std::vector<int>(1000));
  const onnx_light::test::AllocationCount count = onnx_light::test::stop_counting();
  delete p;
  CHECK(count.allocations >= 2);
  CHECK(count.bytes >= 1000 * static_cast<long>(sizeof(int)));
}

TEST_CASE("convtranspose_steady_state_allocates_nothing") {
  // Kernel 2 stride 2 (col2im writes each output once; one GEMM, then col2im) into kernel 4 stride 2
  // pads 1 (accumulates; its col is past 256 KiB: blocks of maps per thread), constant weights
  // (transposed at creation), then the same with W read from an input (transposed per run).
  const std::string text =
      "<ir_version: 8, opset_import: [\"\" : 17]>\ng (float[1, 16, 32, 20] x, float[16, 8, 2, 2] w1, float[8] b1, "
      "float[8, 6, 4, 4] w2) => (float[1, 6, 128, 80] y) "
      "{ u = ConvTranspose <strides = [2, 2]> (x, w1, b1)\n"
      "  y = ConvTranspose <strides = [2, 2], pads = [1, 1, 1, 1]> (u, w2) }";
  const Model constant = with_initializers(parse_model_text(text),
                                           {{"w1", random({16, 8, 2, 2}, 2)}, {"b1", random({8}, 3)},
                                            {"w2", random({8, 6, 4, 4}, 4)}});
  const Model inputs = parse_model_text(text);
  // The portable gather alone (its tap tables are built once per shape).
  KernelTable portable;
  for (const auto& def : cpu_kernel_table().definitions())
    if (def.op_type != "ConvTranspose" || def.implementation == "portable") portable.add(def);
  for (int threads : {1, 2}) {
    CAPTURE(threads);
    CHECK(allocations_in_steady_state(constant, {random({1, 16, 32, 20}, 1)}, threads) == 0);
    CHECK(allocations_in_steady_state(
              inputs, {random({1, 16, 32, 20}, 1), random({16, 8, 2, 2}, 2), random({8}, 3), random({8, 6, 4, 4}, 4)},
              threads) == 0);
    CHECK(allocations_in_steady_state(constant, {random({1, 16, 32, 20}, 1)}, threads, 20, &portable) == 0);
  }
}

TEST_CASE("recurrent_steady_state_allocates_nothing") {
  // LSTM bidirectional with sequence_lens and every output, GRU linear_before_reset, RNN layout 1:
  // scratch and state shapes are kept in the kernels.
  const std::string text =
      "<ir_version: 8, opset_import: [\"\" : 14]>\ng (float[5, 2, 6] x, float[2, 32, 6] w, float[2, 32, 8] r, "
      "int32[2] lens, float[1, 24, 6] gw, float[1, 24, 8] gr, float[2, 5, 6] xb, float[1, 8, 6] rw, float[1, 8, 8] rr) "
      "=> (float[5, 2, 2, 8] y, float[2, 2, 8] yh, float[2, 2, 8] yc, float[5, 1, 2, 8] gy, float[2, 5, 1, 8] ry) "
      "{ y, yh, yc = LSTM <hidden_size = 8, direction = \"bidirectional\"> (x, w, r, , lens)\n"
      "  gy, gh = GRU <hidden_size = 8, linear_before_reset = 1> (x, gw, gr)\n"
      "  ry = RNN <hidden_size = 8, layout = 1> (xb, rw, rr) }";
  Tensor lens(ElementType::int32, {2});
  lens.data<int32_t>()[0] = 3;
  lens.data<int32_t>()[1] = 5;
  const std::vector<Tensor> inputs{random({5, 2, 6}, 1), random({2, 32, 6}, 2), random({2, 32, 8}, 3), lens,
                                   random({1, 24, 6}, 4), random({1, 24, 8}, 5), random({2, 5, 6}, 6),
                                   random({1, 8, 6}, 7),  random({1, 8, 8}, 8)};
  for (int threads : {1, 2}) {
    CAPTURE(threads);
    CHECK(allocations_in_steady_state(parse_model_text(text), inputs, threads) == 0);
  }
}

TEST_CASE("shape_ops_broadcasts_and_norms_with_symbolic_dims_allocate_nothing") {
  // What the published models run between their Convs and MatMuls, with symbolic input dims (the
  // exporters' p2o.DynamicDimension.*): Shape/Gather/Concat/Reshape chains, Slice from inputs,
  // Transpose, Squeeze/Unsqueeze with axes inputs (opset 13), Flatten, broadcasting Mul and Where,
  // LayerNormalization and BatchNormalization. Their output shapes and copy plans are kept
  // (InputSignature, CachedBroadcast) and their scratch is in members.
  const std::string text =
      "<ir_version: 8, opset_import: [\"\" : 17]>\ng (float[N, C, H, W] x, float[1, C, 1, 1] s, float[W] g, "
      "float[C] bs, float[C] bb, float[C] bm, float[C] bv) => (float[] r, float[] t, float[] l, float[] w, float[] b, "
      "float[] f) {\n"
      "  shp = Shape(x)\n i0 = Constant <value = int64[1] {0}> ()\n n = Gather(shp, i0)\n"
      "  m1 = Constant <value = int64[1] {-1}> ()\n new_shape = Concat <axis = 0> (n, m1)\n"
      "  r = Reshape(x, new_shape)\n"
      "  st = Constant <value = int64[1] {1}> ()\n en = Constant <value = int64[1] {1000}> ()\n ax = Constant <value = int64[1] {3}> ()\n"
      "  sl = Slice(x, st, en, ax)\n t = Transpose <perm = [0, 2, 1, 3]> (sl)\n"
      "  u = Unsqueeze(t, i0)\n q = Squeeze(u, i0)\n"
      "  ms = Mul(sl, s)\n l = LayerNormalization <axis = -1> (x, g)\n"
      "  zero = Constant <value = float {0}> ()\n pos = Greater(x, zero)\n w = Where(pos, x, s)\n"
      "  b = BatchNormalization(ms, bs, bb, bm, bv)\n f = Flatten(q)\n}";
  const std::vector<Tensor> inputs{random({2, 3, 4, 5}, 1), random({1, 3, 1, 1}, 2), random({5}, 3),
                                   random({3}, 4),          random({3}, 5),          random({3}, 6),
                                   random({3}, 7)};
  std::vector<Tensor> positive = inputs;
  for (int64_t i = 0; i < positive[6].element_count(); ++i) positive[6].data<float>()[i] = 1.0f + i;  // variances
  for (int threads : {1, 2}) {
    CAPTURE(threads);
    CHECK(allocations_in_steady_state(parse_model_text(text), positive, threads) == 0);
  }
}
