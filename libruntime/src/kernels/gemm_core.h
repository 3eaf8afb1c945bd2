#pragma once
// The portable GEMM core shared by MatMul, Gemm and Conv: one task computes one tile_m x tile_n
// tile of the output, blocking the reduction by tile_k. For each k block the B operand is packed
// into a contiguous panel (converted to the accumulation type), then the tile is updated in
// i-k-j order so that the innermost loop streams one panel row into one accumulator row.
//
// Every output element accumulates a(i, k) * b(k, j) for k ascending, whatever the tile sizes
// and whichever thread runs the task, so results are bit-identical across thread counts and
// tilings. (issue 7 adds an AVX2 variant and a packed-A micro-kernel behind the same contract.)
#include <algorithm>
#include <cstdint>
#include <vector>

#include "kernels/element_traits.h"
#include "kernels/integer_math.h"

namespace onnx_light::runtime::kernels {

// Accumulation type: float for the 16-bit floats, the type itself otherwise (integers wrap).
template <typename T>
using gemm_acc_t = compute_t<T>;

template <typename A>
inline A multiply_add(A acc, A a, A b) {
  if constexpr (std::is_integral_v<A>) return wrap_add(acc, wrap_mul(a, b));
  else return acc + a * b;
}

// Scratch buffers of one worker, reused by all tasks of its block.
template <typename A>
struct GemmScratch {
  std::vector<A> acc;
  std::vector<A> panel;
  GemmScratch(int64_t tile_m, int64_t tile_n, int64_t tile_k)
      : acc(static_cast<std::size_t>(tile_m * tile_n)), panel(static_cast<std::size_t>(tile_k * tile_n)) {}
};

// Computes the tile rows [i0, i0 + mc) x columns [j0, j0 + nc) of a product with depth k_total.
//   load_a(i, k) -> A               element of the left operand
//   pack_b(k0, kc, j0, nc, A* dst)  writes b(k0 + kk, j0 + j) to dst[kk * nc + j]
//   finish(i, j0, nc, const A* acc) consumes one finished accumulator row
template <typename A, typename LoadA, typename PackB, typename Finish>
void gemm_tile(int64_t i0, int64_t mc, int64_t j0, int64_t nc, int64_t k_total, int64_t tile_k,
               GemmScratch<A>& scratch, LoadA&& load_a, PackB&& pack_b, Finish&& finish) {
  A* acc = scratch.acc.data();
  A* panel = scratch.panel.data();
  std::fill(acc, acc + mc * nc, A(0));
  for (int64_t k0 = 0; k0 < k_total; k0 += tile_k) {
    const int64_t kc = std::min(tile_k, k_total - k0);
    pack_b(k0, kc, j0, nc, panel);
    for (int64_t i = 0; i < mc; ++i) {
      A* row = acc + i * nc;
      for (int64_t kk = 0; kk < kc; ++kk) {
        const A a = load_a(i0 + i, k0 + kk);
        const A* b = panel + kk * nc;
        for (int64_t j = 0; j < nc; ++j) row[j] = multiply_add(row[j], a, b[j]);
      }
    }
  }
  for (int64_t i = 0; i < mc; ++i) finish(i0 + i, j0, nc, acc + i * nc);
}

// Task geometry: tasks are (batch, row tile, column tile), numbered batch-major.
struct GemmTiling {
  int64_t m, n, tile_m, tile_n, row_tiles, col_tiles;
  GemmTiling(int64_t m_, int64_t n_, int64_t tm, int64_t tn)
      : m(m_), n(n_), tile_m(std::max<int64_t>(1, tm)), tile_n(std::max<int64_t>(1, tn)),
        row_tiles((m_ + tile_m - 1) / tile_m), col_tiles((n_ + tile_n - 1) / tile_n) {}
  int64_t tasks_per_batch() const { return row_tiles * col_tiles; }
  struct Task {
    int64_t batch, i0, mc, j0, nc;
  };
  Task task(int64_t t) const {
    const int64_t per = tasks_per_batch();
    const int64_t b = t / per, r = (t % per) / col_tiles, c = t % col_tiles;
    const int64_t i0 = r * tile_m, j0 = c * tile_n;
    return {b, i0, std::min(tile_m, m - i0), j0, std::min(tile_n, n - j0)};
  }
};

}  // namespace onnx_light::runtime::kernels
