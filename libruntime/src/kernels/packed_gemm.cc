// The float32 packed GEMM driver (contract in packed_gemm.h).
#include "kernels/packed_gemm.h"

#include <cstdint>
#include <vector>

#include "tensor_memory.h"

namespace onnx_light::runtime::kernels {

namespace {

#if defined(ONNX_LIGHT_X86_SIMD)
const PackedGemmIsa kAvx2{"avx2", simd::kGemmF32Avx2Mr, simd::kGemmF32Avx2Nr, &simd::gemm_f32_kernel_avx2, nullptr,
                          nullptr, &simd::gemm_f32_pack_a_avx2, &simd::gemm_f32_pack_b_avx2};
const PackedGemmIsa kAvx512{"avx512", simd::kGemmF32Avx512Mr, simd::kGemmF32Avx512Nr, &simd::gemm_f32_kernel_avx512,
                            &simd::gemm_f32_kernel_direct_a_avx512, &simd::gemm_f32_kernel_direct_a_indirect_b_avx512,
                            &simd::gemm_f32_pack_a_avx512, &simd::gemm_f32_pack_b_avx512,
                            &simd::gemm_f32_kernel_narrow_avx512, &simd::gemm_f32_kernel_direct_a_panels_avx512,
                            &simd::gemm_f32_kernel_transposed_a_avx512};
#endif

// A packs rows [i0, i0 + mc) over the whole depth when it fits in this many floats (then tasks of
// the same row block on one worker reuse it); otherwise it packs one k-block at a time.
constexpr int64_t kWholeDepthAFloats = int64_t{1} << 18;

// One buffer per worker thread and use (A panels, gathered B panels), grown to the largest size
// seen, never freed while the thread lives.
enum class WorkerBuffer { a, b };
float* worker_buffer(int64_t floats, WorkerBuffer which = WorkerBuffer::a) {
  thread_local std::vector<float> buffers[2];
  std::vector<float>& buffer = buffers[static_cast<int>(which)];
  const auto needed = static_cast<std::size_t>(floats + 16);
  if (buffer.size() < needed) buffer.resize(needed);
  auto address = reinterpret_cast<std::uintptr_t>(buffer.data());
  address = (address + 63) & ~std::uintptr_t{63};
  return reinterpret_cast<float*>(address);
}

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// The epilogue of the tile at (i, j) (its bias moved there) in `scratch`, or null for a k-block
// that is not the last.
const simd::GemmF32Epilogue* tile_epilogue_at(const simd::GemmF32Epilogue* last, int64_t i, int64_t j,
                                              simd::GemmF32Epilogue& scratch) {
  if (last == nullptr) return nullptr;
  scratch = *last;
  if (scratch.bias != nullptr) scratch.bias += i * scratch.bias_row_stride + j * scratch.bias_col_stride;
  return &scratch;
}

}  // namespace

void PackedBuffer::grow(std::size_t floats) {
  if (floats <= size_) return;
  data_.reset();
  size_ = 0;
  data_.reset(reinterpret_cast<float*>(allocate_tensor_block(floats * sizeof(float))));
  size_ = floats;
}

void PackedBuffer::Free::operator()(float* block) const noexcept { free_tensor_block(reinterpret_cast<std::byte*>(block)); }

void pack_b_panels(const void* context, int64_t q0, int64_t q1, float* dst) {
  const auto& c = *static_cast<const BPanelsToPack*>(context);
  const int64_t first = q0 * c.isa->nr;
  c.isa->pack_b(c.b.data + first * c.b.col_stride, c.b.row_stride, c.b.col_stride, c.k, c.n - first, 0, q1 - q0, dst);
}

const PackedGemmIsa* packed_gemm_avx2() {
#if defined(ONNX_LIGHT_X86_SIMD)
  return &kAvx2;
#else
  return nullptr;
#endif
}

const PackedGemmIsa* packed_gemm_avx512() {
#if defined(ONNX_LIGHT_X86_SIMD)
  return &kAvx512;
#else
  return nullptr;
#endif
}

PackedGemmPlan plan_packed_gemm(const PackedGemmIsa& isa, const GemmBlocking& blocking, int64_t batches, int64_t m,
                                int64_t n, int64_t k, int admitted, bool single_row_block) {
  PackedGemmPlan plan;
  plan.batches = batches;
  plan.m = m;
  plan.n = n;
  plan.k = k;
  plan.row_panels = ceil_div(m, isa.mr);
  plan.col_panels = ceil_div(n, isa.nr);
  const int64_t panels_per_row_block = std::max<int64_t>(1, ceil_div(blocking.m, isa.mr));
  const int64_t panels_per_col_block = std::max<int64_t>(1, ceil_div(blocking.n, isa.nr));
  plan.row_blocks = single_row_block ? 1 : std::max<int64_t>(1, ceil_div(plan.row_panels, panels_per_row_block));
  plan.col_blocks = std::max<int64_t>(1, ceil_div(plan.col_panels, panels_per_col_block));
  plan.block_k = std::max<int64_t>(1, blocking.k);
  plan.row_order_b_floats = blocking.row_order_b_floats;
  // With several threads, split further until every thread gets the same number of tasks (tasks
  // are balanced to within one micro-panel). Splitting never changes results.
  if (admitted > 1) {
    for (int guard = 0; guard < 4096; ++guard) {
      const int64_t tasks = plan.tasks();
      if (tasks >= 16 * int64_t{admitted} || tasks % admitted == 0) break;
      const bool can_cols = plan.col_blocks < plan.col_panels;
      const bool can_rows = !single_row_block && plan.row_blocks < plan.row_panels;
      if (can_cols && (!can_rows || plan.col_panels * plan.row_blocks >= plan.row_panels * plan.col_blocks))
        ++plan.col_blocks;
      else if (can_rows)
        ++plan.row_blocks;
      else
        break;
    }
  }
  return plan;
}

void run_packed_gemm_tasks(const PackedGemmIsa& isa, const PackedGemmPlan& plan, int64_t begin, int64_t end,
                           const PackedGemmOperands* (*operands_of)(const void*, int64_t), const void* context,
                           const simd::GemmF32Epilogue* epilogue) {
  run_packed_gemm_tasks(isa, plan, begin, end, operands_of, context, epilogue, nullptr);
}

void run_packed_gemm_tasks(const PackedGemmIsa& isa, const PackedGemmPlan& plan, int64_t begin, int64_t end,
                           const PackedGemmOperands* (*operands_of)(const void*, int64_t), const void* context,
                           const simd::GemmF32Epilogue* epilogue, const PackedGemmTileHook* hook) {
  const int64_t mr = isa.mr, nr = isa.nr, k = plan.k;
  const int64_t max_rows = ceil_div(plan.row_panels, plan.row_blocks) * mr;
  const bool whole_depth = max_rows * k <= kWholeDepthAFloats;
  const int64_t depth = whole_depth ? k : std::min(k, plan.block_k);
  float* a_buffer = nullptr;  // taken on the first task that packs A (direct-A tasks never do)
  int64_t packed_batch = -1, packed_row_block = -1;
  const PackedGemmOperands* ops = nullptr;
  int64_t ops_batch = -1;
  int64_t gathered_batch = -1, gathered_q0 = -1, gathered_q1 = -1;
  const float* gathered_into = nullptr;  // what this call last gathered, and where
  simd::GemmF32Epilogue tile_epilogue{};
  for (int64_t t = begin; t < end; ++t) {
    const int64_t per_batch = plan.row_blocks * plan.col_blocks;
    const int64_t batch = t / per_batch;
    if (batch != ops_batch) {
      ops = operands_of(context, batch);
      ops_batch = batch;
    }
    // With A read in place, a batch's tasks go down each column block's row blocks before the next
    // column block: consecutive tasks (one thread's run of them) share their B panels instead of
    // each sweeping all of B. [128,256] x constant [256,1024] at T=2: 1.21 -> 0.94x ORT, each
    // thread reading half of the 1 MB packed B rather than all of it (bench/RESULTS.md). A packed
    // by the tasks keeps row blocks outer: it is packed once per row block.
    const bool a_in_place = isa.kernel_direct_a != nullptr && ops->a.col_stride == 1;
    const int64_t within = t % per_batch;
    const int64_t rb = a_in_place ? within % plan.row_blocks : within / plan.col_blocks;
    const int64_t cb = a_in_place ? within / plan.row_blocks : within % plan.col_blocks;
    // Row blocks of whole micro-panels when A is packed; with A read in place, of whole rows (the
    // tiles inside are evened anyway): [128,256] x [256,256] at T=2 split 60 / 68 rows by panels,
    // the second thread 13% more work (1.01 -> 0.97x ORT split 64 / 64, bench/RESULTS.md).
    const int64_t i0 = a_in_place ? rb * plan.m / plan.row_blocks : rb * plan.row_panels / plan.row_blocks * mr;
    const int64_t i1 = a_in_place ? (rb + 1) * plan.m / plan.row_blocks
                                  : std::min(plan.m, (rb + 1) * plan.row_panels / plan.row_blocks * mr);
    const int64_t mc = i1 - i0;
    const int64_t q0 = cb * plan.col_panels / plan.col_blocks, q1 = (cb + 1) * plan.col_panels / plan.col_blocks;
    if (mc <= 0 || q1 <= q0) continue;
    if (ops->pack_b_in_task != nullptr) {
      const MatrixView& b = ops->b_source;
      isa.pack_b(b.data, b.row_stride, b.col_stride, k, plan.n, q0, q1, ops->pack_b_in_task);
    }
    // Panel q's packed B at b_panels + (q - q_first) * k * nr.
    const float* b_panels = ops->packed_b;
    int64_t q_first = 0;
    if (ops->gather_b != nullptr) {
      float* local = worker_buffer((q1 - q0) * k * nr, WorkerBuffer::b);
      // The previous task's panels when it gathered the same ones (the next row block of a column).
      if (batch != gathered_batch || q0 != gathered_q0 || q1 != gathered_q1 || local != gathered_into) {
        ops->gather_b(ops->gather_context, q0, q1, local);
        gathered_batch = batch;
        gathered_q0 = q0;
        gathered_q1 = q1;
        gathered_into = local;
      }
      b_panels = local;
      q_first = q0;
    }
    const MatrixView& a = ops->a;
    if (isa.kernel_direct_a != nullptr && a.col_stride == 1) {
      // Row-major A read in place by the micro-kernel: no packing. With A^T given as well, every
      // tile reads A^T instead (the narrow panel must): one copy of the weights in L2, not two
      // (1x1 Conv 384 -> 384 maps on 10x10: 1.4% faster, bench/RESULTS.md).
      const int64_t row_tiles = ceil_div(mc, mr);
      const bool transposed_a = ops->a_transposed != nullptr && isa.kernel_transposed_a != nullptr;
      // Row i's A at a_rows + i * a_row_step + k * a_k_step (the kernels take the other stride).
      const auto kernel_a = transposed_a ? isa.kernel_transposed_a : isa.kernel_direct_a;
      const float* a_rows = transposed_a ? ops->a_transposed : a.data;
      const int64_t a_ld = transposed_a ? ops->a_transposed_ld : a.row_stride;
      const int64_t a_row_step = transposed_a ? 1 : a.row_stride, a_k_step = transposed_a ? a_ld : 1;
      for (int64_t k0 = 0;; k0 += plan.block_k) {
        const int64_t kc = std::min(plan.block_k, k - k0);
        const bool last = k0 + kc >= k;
        const simd::GemmF32Epilogue* tile_last = last ? epilogue : nullptr;
        auto panel_b = [&](int64_t q) {
          return b_panels != nullptr ? b_panels + (q - q_first) * k * nr + k0 * nr : nullptr;
        };
        auto narrow_panel = [&](int64_t q) {
          return ops->a_transposed != nullptr && isa.kernel_narrow != nullptr && ops->b_rows == nullptr &&
                 std::min(nr, plan.n - q * nr) <= simd::kGemmF32NarrowCols;
        };
        // Row tiles as even as the micro-kernel allows (64 rows: 11,11,11,11,10,10 rather than
        // 12,12,12,12,12,4): a short last tile wastes most of its FMA slots on load latency.
        auto tile_first_row = [&](int64_t tile) { return i0 + tile * mc / row_tiles; };
        auto regular_tile = [&](int64_t q, int64_t tile) {
          const int64_t j = q * nr;
          const int cols = static_cast<int>(std::min(nr, plan.n - j));
          const int64_t i = tile_first_row(tile);
          const int rows = static_cast<int>(tile_first_row(tile + 1) - i);
          const simd::GemmF32Epilogue* e = tile_epilogue_at(tile_last, i, j, tile_epilogue);
          if (ops->b_rows != nullptr)
            isa.kernel_direct_a_indirect_b(kc, a.data + i * a.row_stride + k0, a.row_stride, ops->b_rows + k0, j,
                                           ops->c + i * ops->ldc + j, ops->ldc, rows, cols, k0 > 0 ? 1 : 0, e);
          else
            kernel_a(kc, a_rows + i * a_row_step + k0 * a_k_step, a_ld, panel_b(q), ops->c + i * ops->ldc + j, ops->ldc,
                     rows, cols, k0 > 0 ? 1 : 0, e);
          if (last && hook != nullptr) hook->fn(hook->context, batch, i, j, rows, cols, ops->c + i * ops->ldc + j, ops->ldc);
        };
        for (int64_t q = q0; q < q1; ++q) {
          if (!narrow_panel(q)) continue;
          // The narrow tail: row chunks of at most kGemmF32NarrowRows, as even as possible.
          const int64_t j = q * nr;
          const int cols = static_cast<int>(std::min(nr, plan.n - j));
          const int64_t chunks = ceil_div(mc, simd::kGemmF32NarrowRows);
          for (int64_t chunk = 0; chunk < chunks; ++chunk) {
            const int64_t i = i0 + chunk * mc / chunks;
            const int rows = static_cast<int>(i0 + (chunk + 1) * mc / chunks - i);
            isa.kernel_narrow(kc, ops->a_transposed + k0 * ops->a_transposed_ld + i, ops->a_transposed_ld, panel_b(q),
                              ops->c + i * ops->ldc + j, ops->ldc, rows, cols, k0 > 0 ? 1 : 0,
                              tile_epilogue_at(tile_last, i, j, tile_epilogue));
            if (last && hook != nullptr) hook->fn(hook->context, batch, i, j, rows, cols, ops->c + i * ops->ldc + j, ops->ldc);
          }
        }
        // Shallow k-blocks whose B panels all stay in L1: along the rows, so that each row of C
        // goes out as one run of (q1 - q0) * NR floats rather than NR at a time down the
        // columns (qk [512,16] x [16,512] at T=2: 64 -> 56 us; stores striding down a 2 KB
        // row pitch 128 bytes at a time drained slower, bench/RESULTS.md).
        if (kc * nr * (q1 - q0) <= plan.row_order_b_floats) {
          // The full panels of a row tile in one call when no epilogue or hook runs on them.
          const bool whole_row_calls = isa.kernel_direct_a_panels != nullptr && tile_last == nullptr &&
                                       !(last && hook != nullptr) && ops->b_rows == nullptr && !transposed_a;
          const int64_t q_full = whole_row_calls ? std::max(q0, std::min(q1, plan.n / nr)) : q0;
          for (int64_t tile = 0; tile < row_tiles; ++tile) {
            if (q_full > q0) {
              const int64_t i = tile_first_row(tile);
              isa.kernel_direct_a_panels(kc, a.data + i * a.row_stride + k0, a.row_stride, panel_b(q0), k * nr,
                                         ops->c + i * ops->ldc + q0 * nr, ops->ldc,
                                         static_cast<int>(tile_first_row(tile + 1) - i), static_cast<int>(q_full - q0),
                                         k0 > 0 ? 1 : 0);
            }
            for (int64_t q = q_full; q < q1; ++q)
              if (!narrow_panel(q)) regular_tile(q, tile);
          }
        } else {
          for (int64_t q = q0; q < q1; ++q)
            if (!narrow_panel(q))
              for (int64_t tile = 0; tile < row_tiles; ++tile) regular_tile(q, tile);
        }
        if (last) break;
      }
      continue;
    }
    if (a_buffer == nullptr) a_buffer = worker_buffer(max_rows * std::max<int64_t>(depth, 1));
    if (whole_depth && (batch != packed_batch || rb != packed_row_block)) {
      isa.pack_a(a.data, a.row_stride, a.col_stride, i0, mc, 0, k, a_buffer);
      packed_batch = batch;
      packed_row_block = rb;
    }
    for (int64_t k0 = 0;; k0 += plan.block_k) {
      const int64_t kc = std::min(plan.block_k, k - k0);
      const bool last = k0 + kc >= k;
      int64_t panel_stride = k * mr, a_offset = k0 * mr;
      if (!whole_depth) {
        isa.pack_a(a.data, a.row_stride, a.col_stride, i0, mc, k0, kc, a_buffer);
        panel_stride = kc * mr;
        a_offset = 0;
      }
      const simd::GemmF32Epilogue* tile_last = last ? epilogue : nullptr;
      for (int64_t q = q0; q < q1; ++q) {
        const int64_t j = q * nr;
        const int cols = static_cast<int>(std::min(nr, plan.n - j));
        const float* pb = b_panels + (q - q_first) * k * nr + k0 * nr;
        for (int64_t p = 0; p * mr < mc; ++p) {
          const int64_t i = i0 + p * mr;
          const int rows = static_cast<int>(std::min(mr, mc - p * mr));
          isa.kernel(kc, a_buffer + p * panel_stride + a_offset, pb, ops->c + i * ops->ldc + j, ops->ldc, rows, cols,
                     k0 > 0 ? 1 : 0, tile_epilogue_at(tile_last, i, j, tile_epilogue));
          if (last && hook != nullptr) hook->fn(hook->context, batch, i, j, rows, cols, ops->c + i * ops->ldc + j, ops->ldc);
        }
      }
      if (last) break;
    }
  }
}

}  // namespace onnx_light::runtime::kernels
