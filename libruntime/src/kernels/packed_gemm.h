#pragma once
// The float32 packed GEMM driver behind the "avx2" and "avx512" MatMul/Gemm implementations:
// cache blocking (block_m x block_n tasks, block_k deep), B packed once per matrix into NR-column
// panels over the whole depth (at kernel creation when B is a constant), A packed per task into
// MR-row panels, and the ISA's register-tile micro-kernel (simd/gemm_f32.h).
//
// Determinism: tasks split M and N only. Every output element starts from 0, accumulates
// fma(a(i, k), b(k, j)) for k ascending (a later k-block resumes from the partial sum it stored
// in C, which is exact) and gets the epilogue once, so results are bit-identical whatever the
// block sizes and the number of threads.
#include <algorithm>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "kernels/simd/gemm_f32.h"
#include "onnx_light/runtime/kernel.h"
#include "onnx_light/runtime/tuning_schema.h"
#include "onnx_light/runtime/tuning_value.h"

namespace onnx_light::runtime::kernels {

// One instruction set's micro-kernel and packing routines.
struct PackedGemmIsa {
  const char* name;
  int mr;
  int nr;
  void (*kernel)(int64_t kc, const float* pa, const float* pb, float* c, int64_t ldc, int m, int n, int accumulate,
                 const simd::GemmF32Epilogue* last);
  // Optional: the micro-kernel reading a row-major A in place (then A is not packed).
  void (*kernel_direct_a)(int64_t kc, const float* a, int64_t lda, const float* pb, float* c, int64_t ldc, int m,
                          int n, int accumulate, const simd::GemmF32Epilogue* last);
  // Optional: the direct-A micro-kernel reading B through row pointers (PackedGemmOperands::b_rows).
  void (*kernel_direct_a_indirect_b)(int64_t kc, const float* a, int64_t lda, const float* const* b_rows, int64_t col,
                                     float* c, int64_t ldc, int m, int n, int accumulate,
                                     const simd::GemmF32Epilogue* last);
  void (*pack_a)(const float* a, int64_t row_stride, int64_t col_stride, int64_t i0, int64_t mc, int64_t k0,
                 int64_t kc, float* dst);
  void (*pack_b)(const float* b, int64_t row_stride, int64_t col_stride, int64_t k_total, int64_t n, int64_t q0,
                 int64_t q1, float* dst);
  // Optional: a panel's narrow tail with the rows as lanes (simd/gemm_f32.h), for operands that
  // give A transposed (PackedGemmOperands::a_transposed).
  void (*kernel_narrow)(int64_t kc, const float* at, int64_t ldat, const float* pb, float* c, int64_t ldc, int m, int n,
                        int accumulate, const simd::GemmF32Epilogue* last) = nullptr;
  // Optional: kernel_direct_a over a row tile's full panels without an epilogue, in one call
  // (simd/gemm_f32.h), for tiles run along C's rows.
  void (*kernel_direct_a_panels)(int64_t kc, const float* a, int64_t lda, const float* pb, int64_t panel_stride,
                                 float* c, int64_t ldc, int m, int panels, int accumulate) = nullptr;
  // Optional: the micro-kernel reading A transposed (simd/gemm_f32.h), for the tiles of operands
  // that give A^T (PackedGemmOperands::a_transposed).
  void (*kernel_transposed_a)(int64_t kc, const float* at, int64_t ldat, const float* pb, float* c, int64_t ldc, int m,
                              int n, int accumulate, const simd::GemmF32Epilogue* last) = nullptr;
};

// nullptr when this build has no such variant (non-x86 targets). Call the functions only after
// the kernel table found the host able to run them.
const PackedGemmIsa* packed_gemm_avx2();
const PackedGemmIsa* packed_gemm_avx512();

// The packed kernels' default parallel.minimum_macs (calibration tunes it per host): twice the
// generic default. On this project's 2-vCPU KVM guest a product of 2^18 MACs (attention scores
// [4,4,32,16] x [4,4,16,32]: 3.6 us on one thread) took 3.7 us at best and 9 us typically on two
// threads, while 2^20 gains (11 -> 8 us).
inline constexpr int64_t kPackedGemmMinimumMacs = int64_t{1} << 19;

struct GemmBlocking {
  int64_t m = 96;
  int64_t k = 256;
  int64_t n = 256;
  // B floats of one task's k-block up to which the direct-A loop runs along C's rows (every
  // column panel of a row tile, then the next row tile) instead of down its columns: 32 KiB, the
  // B panels then stay in L1 while each row of C is written in one run. Tuned as
  // gemm.row_order_b_floats (0: always down the columns); either order gives the same bits.
  int64_t row_order_b_floats = int64_t{1} << 13;
};

// `blocking` with block_n widened for a shallow product (depth k) until a task's B panels fill
// row_order_b_floats: attention scores with K = 16 ([512,16] x [16,512]) then write whole
// 512-float rows of C per task (T=2: 56 -> 52 us, bench/RESULTS.md). Deeper products keep block_n.
inline GemmBlocking widened_for_depth(const GemmBlocking& blocking, int nr, int64_t k) {
  GemmBlocking widened = blocking;
  const int64_t depth = std::max<int64_t>(1, std::min(k, blocking.k));
  widened.n = std::max(blocking.n, blocking.row_order_b_floats / depth / nr * nr);
  return widened;
}

// Schema of a kernel on this driver (MatMul, Gemm, Conv float32): parallel.minimum_macs, then
// gemm.block_m / gemm.block_k / gemm.block_n with `defaults`. Defined in matmul_gemm.cc.
TuningSchema packed_gemm_schema(TuningKey key, const GemmBlocking& defaults);
// Reads that schema's values (those present) into a kernel's threshold and blocks.
void read_packed_gemm_tuning(const TuningValues& values, int64_t& minimum_macs, GemmBlocking& blocking);

// Floats for packed operands, from the tensor block allocator: buffers of 2 MiB and more sit on
// huge pages, so where packed weights land in the caches does not change from one process to the
// next (the MLP at T=1 ran at 499 or 544 us by process on small pages).
class PackedBuffer {
 public:
  float* data() const { return data_.get(); }
  // At least `floats` floats; grows only, and a grown buffer's contents are not kept.
  void grow(std::size_t floats);

 private:
  struct Free {
    void operator()(float* block) const noexcept;
  };
  std::unique_ptr<float, Free> data_;
  std::size_t size_ = 0;
};

// A strided matrix: element (r, c) at data[r * row_stride + c * col_stride].
struct MatrixView {
  const float* data = nullptr;
  int64_t row_stride = 0;
  int64_t col_stride = 0;
};

// Floats of one packed k x n B matrix.
inline int64_t packed_b_floats(const PackedGemmIsa& isa, int64_t k, int64_t n) {
  return (n + isa.nr - 1) / isa.nr * k * isa.nr;
}

// Packs `matrices` B matrices (view_of(index) -> MatrixView, each k x n) into dst, matrix i at
// dst + i * packed_b_floats(isa, k, n); parallel over (matrix, panel) with up to `admitted` threads.
template <typename ViewOf>
void pack_b_matrices(KernelExecution* execution, int admitted, const PackedGemmIsa& isa, int64_t matrices, int64_t k,
                     int64_t n, ViewOf&& view_of, float* dst) {
  const int64_t panels = (n + isa.nr - 1) / isa.nr;
  const int64_t per = packed_b_floats(isa, k, n);
  auto body = [&](int64_t begin, int64_t end) {
    for (int64_t u = begin; u < end;) {
      const int64_t matrix = u / panels, q0 = u % panels;
      const int64_t q1 = std::min(panels, q0 + (end - u));
      const MatrixView v = view_of(matrix);
      isa.pack_b(v.data, v.row_stride, v.col_stride, k, n, q0, q1, dst + matrix * per);
      u += q1 - q0;
    }
  };
  if (execution == nullptr || admitted <= 1 || matrices * panels <= 1) body(0, matrices * panels);
  else execution->parallel_for(matrices * panels, 1, admitted, body);
}

// What one batch multiplies: A (m x k view), its packed B, and C (m x n, row stride ldc).
struct PackedGemmOperands {
  MatrixView a;
  const float* packed_b = nullptr;
  float* c = nullptr;
  int64_t ldc = 0;
  // Set (with packed_b pointing at the same buffer) when B is packed by the tasks themselves:
  // each task packs its own column panels of b_source just before it uses them. Needs a plan
  // with one row block (every panel belongs to exactly one task).
  float* pack_b_in_task = nullptr;
  MatrixView b_source{};
  // Set (packed_b and pack_b_in_task unused) when each task gathers its own B panels into a
  // buffer of its worker thread: gather_b(gather_context, q0, q1, dst) writes the whole depth of
  // panels [q0, q1), panel q at dst + (q - q0) * k * NR (lanes past n zero). A Conv's im2col:
  // gathered a few panels at a time it stays in L2 instead of going to memory and back (a 3x3
  // Conv 96 -> 24 maps on 80x80 has an im2col of 22 MB). A task reuses the panels its thread's
  // previous task gathered when they are the same (the next row block of a column block). A
  // pointwise Conv packs its activation's panels this way too (pack_b_panels): the thread's
  // buffer is shared by every GEMM it runs, where a buffer per node was faulted in on a model's
  // first run.
  void (*gather_b)(const void* context, int64_t q0, int64_t q1, float* dst) = nullptr;
  const void* gather_context = nullptr;
  // Set (packed_b unused) when B is read in place through row pointers, b(k, j) = b_rows[k][j]
  // with NR floats readable past every column: a stride-1 Conv's implicit im2col, nothing
  // gathered. Needs an ISA with kernel_direct_a_indirect_b and a row-major A.
  const float* const* b_rows = nullptr;
  // Optional, with a row-major A read in place: A transposed, a(i, k) = a_transposed[k *
  // a_transposed_ld + i]. A panel of at most kGemmF32NarrowCols columns (a 1x1 Conv's 100 pixels:
  // 3 x 32 + 4) then runs isa.kernel_narrow, the rows as lanes, instead of a vector per row for
  // its few columns (the same bits); the other tiles then read A^T too (isa.kernel_transposed_a).
  // Needs an ISA with both.
  const float* a_transposed = nullptr;
  int64_t a_transposed_ld = 0;
};

// A B (k x n) whose panels the GEMM tasks pack themselves: PackedGemmOperands::gather_context
// for gather_b = pack_b_panels.
struct BPanelsToPack {
  const PackedGemmIsa* isa = nullptr;
  MatrixView b;
  int64_t k = 0, n = 0;
};
// gather_b for BPanelsToPack: panels [q0, q1) of b, packed by the ISA's B packer, into dst.
void pack_b_panels(const void* context, int64_t q0, int64_t q1, float* dst);

// The task grid of one run.
struct PackedGemmPlan {
  int64_t batches = 1, m = 0, n = 0, k = 0;
  int64_t row_panels = 0, col_panels = 0;  // MR-row and NR-column micro-panels
  int64_t row_blocks = 1, col_blocks = 1;
  int64_t block_k = 1;
  int64_t row_order_b_floats = 0;  // GemmBlocking::row_order_b_floats
  int64_t tasks() const { return batches * row_blocks * col_blocks; }
};
// single_row_block: split N only (for B packed in the tasks).
PackedGemmPlan plan_packed_gemm(const PackedGemmIsa& isa, const GemmBlocking& blocking, int64_t batches, int64_t m,
                                int64_t n, int64_t k, int admitted, bool single_row_block = false);

// Whether a B that is not a constant is best packed inside the GEMM tasks (one parallel region
// instead of two, and each thread's B panels stay in its own cache) rather than in a region of its
// own: when one k-block of all of A stays cache-resident while every task sweeps it. matmul_256 at
// 2 threads: 111 -> 93 us (bench/RESULTS.md). Larger products keep row blocks so that A blocks are
// reused from L2.
inline bool pack_b_in_tasks(const GemmBlocking& blocking, int64_t m, int64_t k) {
  constexpr int64_t kMaxAFloats = int64_t{1} << 17;  // 512 KiB: half of this machine's 1 MiB L2
  return m * std::min(k, blocking.k) <= kMaxAFloats;
}

// Called on each finished register tile right after the micro-kernel stored it (last k-block,
// bias and Relu applied), while it is still in L1: a FusedConv's residual and non-Relu activation
// (issue 15 §3) instead of a second pass over C. Rows [i, i + rows) x columns [j, j + cols) of
// batch `batch`'s C, the tile at c (row stride ldc). Must touch only that tile.
struct PackedGemmTileHook {
  void (*fn)(const void* context, int64_t batch, int64_t i, int64_t j, int rows, int cols, float* c, int64_t ldc);
  const void* context;
};

// Runs tasks [begin, end) of `plan`; operands_of(batch) -> PackedGemmOperands. `epilogue` (nullptr
// for a plain product) has its bias relative to C's element (0, 0).
void run_packed_gemm_tasks(const PackedGemmIsa& isa, const PackedGemmPlan& plan, int64_t begin, int64_t end,
                           const PackedGemmOperands* (*operands_of)(const void*, int64_t), const void* context,
                           const simd::GemmF32Epilogue* epilogue);
// The same with a tile hook (nullptr: none).
void run_packed_gemm_tasks(const PackedGemmIsa& isa, const PackedGemmPlan& plan, int64_t begin, int64_t end,
                           const PackedGemmOperands* (*operands_of)(const void*, int64_t), const void* context,
                           const simd::GemmF32Epilogue* epilogue, const PackedGemmTileHook* hook);

// The whole product with a tile hook (packed_gemm below without one).
template <typename OperandsOf>
void packed_gemm_hooked(KernelExecution& execution, int admitted, const PackedGemmIsa& isa, const GemmBlocking& blocking,
                        int64_t batches, int64_t m, int64_t n, int64_t k, const simd::GemmF32Epilogue* epilogue,
                        const PackedGemmTileHook* hook, OperandsOf&& operands_of, bool single_row_block = false) {
  const PackedGemmPlan plan = plan_packed_gemm(isa, blocking, batches, m, n, k, admitted, single_row_block);
  struct Context {
    OperandsOf* f;
    PackedGemmOperands last;
  };
  auto thunk = [](const void* ctx, int64_t batch) -> const PackedGemmOperands* {
    auto* c = const_cast<Context*>(static_cast<const Context*>(ctx));
    c->last = (*c->f)(batch);
    return &c->last;
  };
  execution.parallel_for(plan.tasks(), 1, admitted, [&](int64_t begin, int64_t end) {
    Context context{&operands_of, {}};
    run_packed_gemm_tasks(isa, plan, begin, end, thunk, &context, epilogue, hook);
  });
}

// The whole product: plans, then runs the tasks in parallel with up to `admitted` threads.
template <typename OperandsOf>
void packed_gemm(KernelExecution& execution, int admitted, const PackedGemmIsa& isa, const GemmBlocking& blocking,
                 int64_t batches, int64_t m, int64_t n, int64_t k, const simd::GemmF32Epilogue* epilogue,
                 OperandsOf&& operands_of, bool single_row_block = false) {
  packed_gemm_hooked(execution, admitted, isa, blocking, batches, m, n, k, epilogue, nullptr,
                     std::forward<OperandsOf>(operands_of), single_row_block);
}

}  // namespace onnx_light::runtime::kernels
