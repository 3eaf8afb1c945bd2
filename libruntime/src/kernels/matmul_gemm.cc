// MatMul (numpy matmul: 1-D promotion, broadcast batch dims) and Gemm (alpha * A' B' + beta * C
// with optional transposes and a unidirectionally broadcast C), both on the tiled GEMM core.
// Tuning: gemm.tile_m/n/k (role tile) and parallel.minimum_macs (role threshold).
//
// float32 also has "avx512" and "avx2" implementations (registered first, so preferred) on the
// packed GEMM driver (packed_gemm.h): B packed once at creation when it is a constant (weights
// as initializers), else once per run; Gemm's alpha, beta and C applied when the tile is stored.
// Their schemas: parallel.minimum_macs, then gemm.block_m / gemm.block_k / gemm.block_n.
#include <algorithm>
#include <cmath>
#include <optional>

#include <fmt/format.h>

#include "checked_math.h"
#include "kernels/broadcast.h"
#include "kernels/elementwise.h"
#include "kernels/gemm_core.h"
#include "kernels/isa_requirements.h"
#include "kernels/packed_gemm.h"
#include "kernels/kernel_families.h"
#include "kernels/kernel_util.h"
#include "onnx_light/runtime/error.h"

namespace onnx_light::runtime::kernels {

namespace {

struct GemmDims {
  int64_t m, k, n;
};

// Gemm's m, k, n from A, B and the transpose flags; InputError naming both shapes when they do
// not multiply.
GemmDims gemm_dims(const Tensor& a, const Tensor& b, bool trans_a, bool trans_b, const std::string& label) {
  if (a.rank() != 2 || b.rank() != 2)
    throw InputError(fmt::format("{}: A {} and B {} must be matrices", label, shape_to_string(a.shape()),
                                 shape_to_string(b.shape())));
  const int64_t m = trans_a ? a.shape()[1] : a.shape()[0];
  const int64_t k = trans_a ? a.shape()[0] : a.shape()[1];
  const int64_t k2 = trans_b ? b.shape()[1] : b.shape()[0];
  const int64_t n = trans_b ? b.shape()[0] : b.shape()[1];
  if (k != k2)
    throw InputError(fmt::format("{}: A {} and B {} (transA={}, transB={}) cannot be multiplied", label,
                                 shape_to_string(a.shape()), shape_to_string(b.shape()), trans_a, trans_b));
  return {m, k, n};
}

// Packs rows [k0, k0 + kc) x columns [j0, j0 + nc) of a strided matrix into dst.
template <typename T, typename A>
void pack_strided(const T* b, int64_t row_stride, int64_t col_stride, int64_t k0, int64_t kc, int64_t j0, int64_t nc,
                  A* dst) {
  for (int64_t kk = 0; kk < kc; ++kk) {
    const T* src = b + (k0 + kk) * row_stride + j0 * col_stride;
    A* out = dst + kk * nc;
    if (col_stride == 1) {
      for (int64_t j = 0; j < nc; ++j) out[j] = static_cast<A>(load<T>(src[j]));
    } else {
      for (int64_t j = 0; j < nc; ++j) out[j] = static_cast<A>(load<T>(src[j * col_stride]));
    }
  }
}

template <typename T>
class MatMulKernel final : public TiledKernel {
 public:
  explicit MatMulKernel(const KernelCreateInfo& info) : TiledKernel(TileDefaults{}) { check_attributes(info, {}); }

  void run(KernelExecution& execution) override {
    const Tensor& a = execution.required_input(0);
    const Tensor& b = execution.required_input(1);
    check_input_type(execution, 1, b, ElementTraits<T>::type);
    const std::string& label = execution.label();
    if (a.rank() == 0 || b.rank() == 0) throw InputError(fmt::format("{}: MatMul inputs must not be scalars", label));
    // 1-D operands are promoted to matrices ([K] -> [1, K] on the left, [K, 1] on the right).
    const Shape sa = a.rank() == 1 ? Shape{1, a.shape()[0]} : a.shape();
    const Shape sb = b.rank() == 1 ? Shape{b.shape()[0], 1} : b.shape();
    const int64_t m = sa[sa.size() - 2], k = sa[sa.size() - 1];
    const int64_t k2 = sb[sb.size() - 2], n = sb[sb.size() - 1];
    if (k != k2)
      throw InputError(fmt::format("{}: shapes {} and {} cannot be multiplied ({} != {})", label,
                                   shape_to_string(a.shape()), shape_to_string(b.shape()), k, k2));
    const Shape batch_a(sa.begin(), sa.end() - 2), batch_b(sb.begin(), sb.end() - 2);
    const Shape batch = broadcast_shapes(batch_a, batch_b, label);
    Shape out_shape = batch;
    if (a.rank() > 1) out_shape.push_back(m);
    if (b.rank() > 1) out_shape.push_back(n);
    // [m, n] of empty operands ([m, 0] x [0, n]) may hold more elements than int64 counts.
    Tensor& y = checked_output(execution, 0, ElementTraits<T>::type, out_shape);
    const int64_t batches = checked_element_count(batch, "the broadcast batch");
    if (y.element_count() == 0) return;
    // Batch index -> matrix offsets of A and B (broadcast batch dims step by 0).
    const std::vector<int64_t> stride_a = broadcast_strides(batch_a, batch);
    const std::vector<int64_t> stride_b = broadcast_strides(batch_b, batch);
    auto matrix_offset = [&](int64_t index, const std::vector<int64_t>& strides, int64_t matrix) {
      int64_t offset = 0;
      for (std::size_t d = batch.size(); d-- > 0;) {
        offset += (index % batch[d]) * strides[d];
        index /= batch[d];
      }
      return offset * matrix;
    };
    const T* pa = a.data<T>();
    const T* pb = b.data<T>();
    T* out = y.data<T>();
    using A = gemm_acc_t<T>;
    const GemmTiling tiling(m, n, tile_m_, tile_n_);
    const int64_t tasks = batches * tiling.tasks_per_batch();
    const int threads = admitted_macs(batches * m * n * k, execution);
    execution.parallel_for(tasks, 1, threads, [&](int64_t begin, int64_t end) {
      GemmScratch<A> scratch(tiling.tile_m, tiling.tile_n, tile_k_);
      for (int64_t t = begin; t < end; ++t) {
        const auto task = tiling.task(t);
        const T* ma = pa + matrix_offset(task.batch, stride_a, m * k);
        const T* mb = pb + matrix_offset(task.batch, stride_b, k * n);
        T* mo = out + task.batch * m * n;
        gemm_tile<A>(
            task.i0, task.mc, task.j0, task.nc, k, tile_k_, scratch,
            [&](int64_t i, int64_t kk) { return static_cast<A>(load<T>(ma[i * k + kk])); },
            [&](int64_t k0, int64_t kc, int64_t j0, int64_t nc, A* dst) { pack_strided(mb, n, 1, k0, kc, j0, nc, dst); },
            [&](int64_t i, int64_t j0, int64_t nc, const A* acc) {
              for (int64_t j = 0; j < nc; ++j) mo[i * n + j0 + j] = store<T>(acc[j]);
            });
      }
    });
  }
};

template <typename T>
class GemmKernel final : public TiledKernel {
 public:
  explicit GemmKernel(const KernelCreateInfo& info) : TiledKernel(TileDefaults{}) {
    check_attributes(info, {"alpha", "beta", "transA", "transB"});
    alpha_ = info.float_attribute("alpha", 1.0f);
    beta_ = info.float_attribute("beta", 1.0f);
    trans_a_ = info.int_attribute("transA", 0) != 0;
    trans_b_ = info.int_attribute("transB", 0) != 0;
  }

  void run(KernelExecution& execution) override {
    const Tensor& a = execution.required_input(0);
    const Tensor& b = execution.required_input(1);
    const Tensor* c = execution.input(2);
    const std::string& label = execution.label();
    check_input_type(execution, 1, b, ElementTraits<T>::type);
    if (c != nullptr) check_input_type(execution, 2, *c, ElementTraits<T>::type);
    const GemmDims dims = gemm_dims(a, b, trans_a_, trans_b_, label);
    const int64_t m = dims.m, k = dims.k, n = dims.n;  // plain locals: lambdas below capture them
    const Shape out_shape{m, n};
    std::vector<int64_t> c_strides{0, 0};
    const bool use_c = c != nullptr && beta_ != 0.0f;
    if (use_c) {
      if (c->rank() > 2 || broadcast_shapes(c->shape(), out_shape, label) != out_shape)
        throw InputError(fmt::format("{}: C {} does not broadcast to {}", label, shape_to_string(c->shape()),
                                     shape_to_string(out_shape)));
      c_strides = broadcast_strides(c->shape(), out_shape);
    }
    Tensor& y = checked_output(execution, 0, ElementTraits<T>::type, out_shape);
    if (y.element_count() == 0) return;
    const T* pa = a.data<T>();
    const T* pb = b.data<T>();
    const T* pc = use_c ? c->data<T>() : nullptr;
    T* out = y.data<T>();
    const int64_t a_row = trans_a_ ? 1 : k, a_col = trans_a_ ? m : 1;
    const int64_t b_row = trans_b_ ? 1 : n, b_col = trans_b_ ? k : 1;
    using A = gemm_acc_t<T>;
    // Integer Gemm with unit alpha/beta stays exact; anything else scales in double.
    const bool unit = alpha_ == 1.0f && beta_ == 1.0f;
    const GemmTiling tiling(m, n, tile_m_, tile_n_);
    execution.parallel_for(tiling.tasks_per_batch(), 1, admitted_macs(m * n * k, execution), [&](int64_t begin, int64_t end) {
      GemmScratch<A> scratch(tiling.tile_m, tiling.tile_n, tile_k_);
      for (int64_t t = begin; t < end; ++t) {
        const auto task = tiling.task(t);
        gemm_tile<A>(
            task.i0, task.mc, task.j0, task.nc, k, tile_k_, scratch,
            [&](int64_t i, int64_t kk) { return static_cast<A>(load<T>(pa[i * a_row + kk * a_col])); },
            [&](int64_t k0, int64_t kc, int64_t j0, int64_t nc, A* dst) { pack_strided(pb, b_row, b_col, k0, kc, j0, nc, dst); },
            [&](int64_t i, int64_t j0, int64_t nc, const A* acc) {
              for (int64_t j = 0; j < nc; ++j) {
                const A bias = pc != nullptr ? static_cast<A>(load<T>(pc[i * c_strides[0] + (j0 + j) * c_strides[1]])) : A(0);
                A v;
                if constexpr (std::is_integral_v<A>) {
                  v = unit ? wrap_add(acc[j], bias)
                           : saturate_cast<A>(static_cast<double>(alpha_) * static_cast<double>(acc[j]) +
                                              static_cast<double>(beta_) * static_cast<double>(bias));
                } else {
                  v = static_cast<A>(alpha_) * acc[j] + (pc != nullptr ? static_cast<A>(beta_) * bias : A(0));
                }
                out[i * n + j0 + j] = store<T>(v);
              }
            });
      }
    });
  }

 private:
  float alpha_ = 1.0f, beta_ = 1.0f;
  bool trans_a_ = false, trans_b_ = false;
};

// Calibration: square s x s operands with s^3 ~ the multiply-accumulate count searched.
int64_t square_side(int64_t macs) {
  return std::max<int64_t>(1, static_cast<int64_t>(std::llround(std::cbrt(static_cast<double>(macs)))));
}
int64_t square_elements(int64_t macs) { return square_side(macs) * square_side(macs); }

CalibrationWorkloadFunction square_workload(const std::string& op_type, ElementType type) {
  return [op_type, type](int64_t macs, int, uint32_t seed) {
    const int64_t s = square_side(macs);
    std::vector<std::pair<std::string, Tensor>> inputs{{"a", random_tensor(type, {s, s}, seed)},
                                                       {"b", random_tensor(type, {s, s}, seed + 1)}};
    if (op_type == "Gemm") inputs.emplace_back("c", random_tensor(type, {s}, seed + 2));
    return one_node_workload(op_type, 13, "", std::move(inputs), {{"y", type, {s, s}}}, s * s * s);
  };
}

// ---- float32 on the packed GEMM driver ----

class PackedGemmKernelBase : public Kernel {
 public:
  explicit PackedGemmKernelBase(const PackedGemmIsa& isa) : isa_(isa) {}
  void apply_tuning(const TuningValues& values) override { read_packed_gemm_tuning(values, minimum_macs_, blocking_); }
  bool fuse_relu() override {
    relu_ = true;
    return true;
  }

 protected:
  int admitted_macs(int64_t macs, const KernelExecution& execution) const {
    return execution.admitted_threads(macs, minimum_macs_);
  }
  // Packs the constant B tensor's `matrices` k x n matrices (strides inside one matrix given).
  void pack_constant_b(const Tensor& b, int64_t matrices, int64_t k, int64_t n, int64_t row_stride, int64_t col_stride) {
    const float* data = b.data<float>();
    constant_b_.grow(static_cast<std::size_t>(matrices * packed_b_floats(isa_, k, n)));
    pack_b_matrices(nullptr, 1, isa_, matrices, k, n,
                    [&](int64_t i) { return MatrixView{data + i * k * n, row_stride, col_stride}; },
                    constant_b_.data());
    constant_b_shape_ = b.shape();
    has_constant_b_ = true;
  }
  // Packs this run's B matrices into run_b_ (reused across runs; grows only).
  template <typename ViewOf>
  const float* pack_run_b(KernelExecution& execution, int admitted, int64_t matrices, int64_t k, int64_t n,
                          ViewOf&& view_of) {
    const auto floats = static_cast<std::size_t>(matrices * packed_b_floats(isa_, k, n));
    run_b_.grow(floats);
    pack_b_matrices(&execution, admitted, isa_, matrices, k, n, view_of, run_b_.data());
    return run_b_.data();
  }
  bool constant_b_matches(const Tensor& b) const { return has_constant_b_ && b.shape() == constant_b_shape_; }
  // The tuned blocks for a product of depth k (block_n widened when it is shallow).
  GemmBlocking blocking_for(int64_t k) const { return widened_for_depth(blocking_, isa_.nr, k); }
  // One product with one B (b_view, k x n): the constant pack when it matches; else, with several
  // threads and a small A (pack_b_in_tasks), B packed by the tasks that use it; else B packed
  // first (serially or in a parallel region of its own).
  void run_one_b(KernelExecution& execution, int admitted, const Tensor& b, const MatrixView& b_view,
                 const MatrixView& a_view, int64_t m, int64_t n, int64_t k, float* out,
                 const simd::GemmF32Epilogue* epilogue) {
    if (constant_b_matches(b)) {
      packed_gemm(execution, admitted, isa_, blocking_for(k), 1, m, n, k, epilogue,
                  [&](int64_t) { return PackedGemmOperands{a_view, constant_b_.data(), out, n}; });
      return;
    }
    if (admitted > 1 && pack_b_in_tasks(blocking_, m, k)) {
      const auto floats = static_cast<std::size_t>(packed_b_floats(isa_, k, n));
      run_b_.grow(floats);
      float* buffer = run_b_.data();
      packed_gemm(
          execution, admitted, isa_, blocking_for(k), 1, m, n, k, epilogue,
          [&](int64_t) { return PackedGemmOperands{a_view, buffer, out, n, buffer, b_view}; },
          /*single_row_block=*/true);
      return;
    }
    const float* packed = pack_run_b(execution, admitted, 1, k, n, [&](int64_t) { return b_view; });
    packed_gemm(execution, admitted, isa_, blocking_for(k), 1, m, n, k, epilogue,
                [&](int64_t) { return PackedGemmOperands{a_view, packed, out, n}; });
  }

  const PackedGemmIsa& isa_;
  GemmBlocking blocking_;
  int64_t minimum_macs_ = kPackedGemmMinimumMacs;
  PackedBuffer constant_b_;
  Shape constant_b_shape_;
  bool has_constant_b_ = false;
  PackedBuffer run_b_;
  bool relu_ = false;  // a following Relu node runs in the epilogue (fuse_relu)
  // The epilogue of a plain product with a fused Relu.
  static constexpr simd::GemmF32Epilogue kReluOnly{1.0f, 0.0f, nullptr, 0, 0, true};
};

// Widest B (columns) a batched MatMul reads in place instead of packing, tuned as
// matmul.in_place_b_max_columns (av [1,4,64,64] x [1,4,64,64]: 0.89 -> 0.84x ORT at T=1, av
// [4,4,32,32] x [4,4,32,16] 0.83 -> 0.66, av [1,2,512,512] x [1,2,512,16] 1.03 -> 1.01; wide B
// such as qk [512,16] x [16,512] ran slower in place, 87 -> 98 us at T=1: its B rows are long
// strides apart). Both ways give the same bits.
constexpr int64_t kInPlaceBMaxColumns = 64;

class PackedMatMulKernel final : public PackedGemmKernelBase {
 public:
  PackedMatMulKernel(const KernelCreateInfo& info, const PackedGemmIsa& isa)
      : PackedGemmKernelBase(isa), in_place_variant_(std::string("in_place_b_gemm_") + isa.name) {
    check_attributes(info, {});
    const Tensor* b = info.constant_inputs.size() > 1 ? info.constant_inputs[1] : nullptr;
    if (b != nullptr && b->element_type() == ElementType::float32 && b->rank() >= 1 && b->element_count() > 0) {
      const Shape sb = b->rank() == 1 ? Shape{b->shape()[0], 1} : b->shape();
      const int64_t k = sb[sb.size() - 2], n = sb[sb.size() - 1];
      pack_constant_b(*b, b->element_count() / (k * n), k, n, n, 1);
    }
  }

  void apply_tuning(const TuningValues& values) override {
    PackedGemmKernelBase::apply_tuning(values);
    read_tuning(values, "matmul.in_place_b_max_columns", in_place_b_max_columns_);
  }

  // The batched narrow-B path names itself; every other path is the implementation's packed GEMM.
  std::string_view variant() const override { return last_variant_; }

  void run(KernelExecution& execution) override {
    last_variant_ = {};
    const Tensor& a = execution.required_input(0);
    const Tensor& b = execution.required_input(1);
    check_input_type(execution, 1, b, ElementType::float32);
    const ShapePlan& p = shape_plan(a, b, execution.label());
    const int64_t m = p.m, k = p.k, n = p.n;
    // The first k-block stores every element (accumulate = 0): no zero fill needed.
    Tensor& y = checked_output(execution, 0, ElementType::float32, p.out_shape, /*zero=*/false);
    if (y.element_count() == 0) return;
    const int admitted = admitted_macs(p.batches * m * n * k, execution);
    const float* pa = a.data<float>();
    const float* pb = b.data<float>();
    float* out = y.data<float>();
    const simd::GemmF32Epilogue* epilogue = relu_ ? &kReluOnly : nullptr;
    if (p.b_matrices == 1 && p.a_matrices == p.batches) {
      // One B for every batch and A not broadcast: the batches are one (batches * m) x k matrix.
      run_one_b(execution, admitted, b, MatrixView{pb, n, 1}, MatrixView{pa, k, 1}, p.batches * m, n, k, out, epilogue);
      return;
    }
    if (!constant_b_matches(b) && isa_.kernel_direct_a_indirect_b != nullptr && n % 16 == 0 &&
        n <= in_place_b_max_columns_) {
      // Narrow B (attention's values [S, D], D <= 64) read in place through row pointers: no
      // packing region and no zero-padded panels. Columns a multiple of 16 keep every load inside
      // B's rows (the micro-kernel reads 16 or 32 floats from a panel's first column).
      // The pointers depend only on B's address and shape: rebuilt when either moves.
      if (b_rows_from_ != pb || b_rows_n_ != n || b_rows_.size() != static_cast<std::size_t>(p.b_matrices * k)) {
        b_rows_.resize(static_cast<std::size_t>(p.b_matrices * k));
        for (int64_t i = 0; i < p.b_matrices * k; ++i) b_rows_[static_cast<std::size_t>(i)] = pb + i * n;
        b_rows_from_ = pb;
        b_rows_n_ = n;
      }
      const float* const* rows = b_rows_.data();
      last_variant_ = in_place_variant_;
      packed_gemm(execution, admitted, isa_, blocking_for(k), p.batches, m, n, k, epilogue,
                  [&](int64_t t) {
                    PackedGemmOperands operands{MatrixView{pa + p.matrix_index(t, p.stride_a) * m * k, k, 1}, nullptr,
                                                out + t * m * n, n};
                    operands.b_rows = rows + p.matrix_index(t, p.stride_b) * k;
                    return operands;
                  });
      return;
    }
    const int64_t per_b = packed_b_floats(isa_, k, n);
    if (!constant_b_matches(b) && p.a_matrices == p.batches && p.b_matrices == p.batches && admitted > 1 &&
        k >= 64 && pack_b_in_tasks(blocking_, m, k)) {
      // Every batch has its own B: each task packs the B panels it multiplies, inside the one
      // parallel region (attention's [B,H,S,S] x [B,H,S,D]: no second region, and a thread's
      // panels stay in its cache). Tasks of different batches write different parts of run_b_.
      // Not for shallow products (K < 64: scores [S,16] x [16,S]), whose B packs in no time and
      // which measured faster with row blocks (bench/RESULTS.md): they take the next branch.
      run_b_.grow(static_cast<std::size_t>(p.batches * per_b));
      float* buffer = run_b_.data();
      packed_gemm(
          execution, admitted, isa_, blocking_for(k), p.batches, m, n, k, epilogue,
          [&](int64_t t) {
            float* own = buffer + t * per_b;
            return PackedGemmOperands{MatrixView{pa + t * m * k, k, 1}, own, out + t * m * n, n, own,
                                      MatrixView{pb + t * k * n, n, 1}};
          },
          /*single_row_block=*/true);
      return;
    }
    if (!constant_b_matches(b) && p.b_matrices == p.batches && admitted > 1 && k < 64) {
      // Shallow products (scores [S,16] x [16,S]) keep their row blocks, and each thread packs
      // a batch's B once, into its own buffer, for its run of that batch's tasks (reused by
      // the next task): no pack region before the GEMM's. [1,2,512,16] x [1,2,16,512] at T=2,
      // three runs of 9 repetitions: 1.06 / 1.10 / 1.01 -> 0.98 / 1.07 / 0.97x ORT.
      b_panels_.resize(static_cast<std::size_t>(p.batches));
      for (int64_t t = 0; t < p.batches; ++t)
        b_panels_[static_cast<std::size_t>(t)] =
            BPanelsToPack{&isa_, MatrixView{pb + p.matrix_index(t, p.stride_b) * k * n, n, 1}, k, n};
      packed_gemm(execution, admitted, isa_, blocking_for(k), p.batches, m, n, k, epilogue, [&](int64_t t) {
        PackedGemmOperands operands{MatrixView{pa + p.matrix_index(t, p.stride_a) * m * k, k, 1}, nullptr,
                                    out + t * m * n, n};
        operands.gather_b = pack_b_panels;
        operands.gather_context = &b_panels_[static_cast<std::size_t>(t)];
        return operands;
      });
      return;
    }
    const float* packed = constant_b_matches(b)
                              ? constant_b_.data()
                              : pack_run_b(execution, admitted, p.b_matrices, k, n, [&](int64_t i) {
                                  return MatrixView{pb + i * k * n, n, 1};
                                });
    packed_gemm(execution, admitted, isa_, blocking_for(k), p.batches, m, n, k, epilogue, [&](int64_t t) {
      return PackedGemmOperands{MatrixView{pa + p.matrix_index(t, p.stride_a) * m * k, k, 1},
                                packed + p.matrix_index(t, p.stride_b) * per_b, out + t * m * n, n};
    });
  }

 private:
  // What the input shapes decide; rebuilt only when they change, so repeated runs allocate nothing.
  struct ShapePlan {
    Shape a_shape, b_shape;  // the inputs it was made for
    int64_t m = 0, k = 0, n = 0, batches = 0, a_matrices = 0, b_matrices = 0;
    Shape batch, out_shape;
    std::vector<int64_t> stride_a, stride_b;
    // The matrix of an operand with batch `strides` that batch `index` multiplies.
    int64_t matrix_index(int64_t index, const std::vector<int64_t>& strides) const {
      int64_t offset = 0;
      for (std::size_t d = batch.size(); d-- > 0;) {
        offset += (index % batch[d]) * strides[d];
        index /= batch[d];
      }
      return offset;
    }
  };

  const ShapePlan& shape_plan(const Tensor& a, const Tensor& b, const std::string& label) {
    if (has_plan_ && a.shape() == plan_.a_shape && b.shape() == plan_.b_shape) return plan_;
    if (a.rank() == 0 || b.rank() == 0) throw InputError(fmt::format("{}: MatMul inputs must not be scalars", label));
    ShapePlan p;
    const Shape sa = a.rank() == 1 ? Shape{1, a.shape()[0]} : a.shape();
    const Shape sb = b.rank() == 1 ? Shape{b.shape()[0], 1} : b.shape();
    p.m = sa[sa.size() - 2];
    p.k = sa[sa.size() - 1];
    const int64_t k2 = sb[sb.size() - 2];
    p.n = sb[sb.size() - 1];
    if (p.k != k2)
      throw InputError(fmt::format("{}: shapes {} and {} cannot be multiplied ({} != {})", label,
                                   shape_to_string(a.shape()), shape_to_string(b.shape()), p.k, k2));
    const Shape batch_a(sa.begin(), sa.end() - 2), batch_b(sb.begin(), sb.end() - 2);
    p.batch = broadcast_shapes(batch_a, batch_b, label);
    p.out_shape = p.batch;
    if (a.rank() > 1) p.out_shape.push_back(p.m);
    if (b.rank() > 1) p.out_shape.push_back(p.n);
    p.batches = checked_element_count(p.batch, "the broadcast batch");
    p.a_matrices = checked_element_count(batch_a, "A's batch");
    p.b_matrices = checked_element_count(batch_b, "B's batch");
    p.stride_a = broadcast_strides(batch_a, p.batch);
    p.stride_b = broadcast_strides(batch_b, p.batch);
    p.a_shape = a.shape();
    p.b_shape = b.shape();
    plan_ = std::move(p);
    has_plan_ = true;
    return plan_;
  }

  ShapePlan plan_;
  bool has_plan_ = false;
  std::vector<const float*> b_rows_;  // the narrow-B path's row pointers into B at b_rows_from_
  std::vector<BPanelsToPack> b_panels_;  // the shallow path's B per batch, packed by the tasks
  const float* b_rows_from_ = nullptr;
  int64_t b_rows_n_ = 0;
  int64_t in_place_b_max_columns_ = kInPlaceBMaxColumns;
  std::string in_place_variant_;
  std::string_view last_variant_;
};

class PackedGemmKernel final : public PackedGemmKernelBase {
 public:
  PackedGemmKernel(const KernelCreateInfo& info, const PackedGemmIsa& isa) : PackedGemmKernelBase(isa) {
    check_attributes(info, {"alpha", "beta", "transA", "transB"});
    alpha_ = info.float_attribute("alpha", 1.0f);
    beta_ = info.float_attribute("beta", 1.0f);
    trans_a_ = info.int_attribute("transA", 0) != 0;
    trans_b_ = info.int_attribute("transB", 0) != 0;
    const Tensor* b = info.constant_inputs.size() > 1 ? info.constant_inputs[1] : nullptr;
    if (b != nullptr && b->element_type() == ElementType::float32 && b->rank() == 2 && b->element_count() > 0) {
      const int64_t k = trans_b_ ? b->shape()[1] : b->shape()[0];
      const int64_t n = trans_b_ ? b->shape()[0] : b->shape()[1];
      pack_constant_b(*b, 1, k, n, trans_b_ ? 1 : n, trans_b_ ? k : 1);
    }
  }

  void run(KernelExecution& execution) override {
    const Tensor& a = execution.required_input(0);
    const Tensor& b = execution.required_input(1);
    const Tensor* c = execution.input(2);
    const std::string& label = execution.label();
    check_input_type(execution, 1, b, ElementType::float32);
    if (c != nullptr) check_input_type(execution, 2, *c, ElementType::float32);
    const GemmDims dims = gemm_dims(a, b, trans_a_, trans_b_, label);
    const int64_t m = dims.m, k = dims.k, n = dims.n;  // plain locals: lambdas below capture them
    // Members rather than locals, and C checked again only when a shape changes: repeated runs
    // allocate nothing.
    const bool same_out = out_shape_.size() == 2 && out_shape_[0] == m && out_shape_[1] == n;
    if (!same_out) {
      out_shape_.assign({m, n});
      checked_c_shape_.reset();
    }
    const bool use_c = c != nullptr && beta_ != 0.0f;
    if (use_c && !(checked_c_shape_ && *checked_c_shape_ == c->shape())) {
      if (c->rank() > 2 || broadcast_shapes(c->shape(), out_shape_, label) != out_shape_)
        throw InputError(fmt::format("{}: C {} does not broadcast to {}", label, shape_to_string(c->shape()),
                                     shape_to_string(out_shape_)));
      const std::vector<int64_t> strides = broadcast_strides(c->shape(), out_shape_);
      c_row_ = strides[0];
      c_col_ = strides[1];
      checked_c_shape_ = c->shape();
    }
    const int64_t c_row = use_c ? c_row_ : 0, c_col = use_c ? c_col_ : 0;
    // The first k-block stores every element (accumulate = 0): no zero fill needed.
    Tensor& y = checked_output(execution, 0, ElementType::float32, out_shape_, /*zero=*/false);
    if (y.element_count() == 0) return;
    const float* pa = a.data<float>();
    const float* pb = b.data<float>();
    float* out = y.data<float>();
    const int admitted = admitted_macs(m * n * k, execution);
    const simd::GemmF32Epilogue epilogue{alpha_, beta_, use_c ? c->data<float>() : nullptr, c_row, c_col, relu_};
    const bool plain = alpha_ == 1.0f && !use_c && !relu_;
    run_one_b(execution, admitted, b, MatrixView{pb, trans_b_ ? 1 : n, trans_b_ ? k : 1},
              MatrixView{pa, trans_a_ ? 1 : k, trans_a_ ? m : 1}, m, n, k, out, plain ? nullptr : &epilogue);
  }

 private:
  float alpha_ = 1.0f, beta_ = 1.0f;
  bool trans_a_ = false, trans_b_ = false;
  Shape out_shape_;
  std::optional<Shape> checked_c_shape_;  // the C shape c_row_/c_col_ were derived for
  int64_t c_row_ = 0, c_col_ = 0;
};

// Registers MatMul and Gemm float32 on one ISA's packed driver.
void add_packed(KernelTable& table, const PackedGemmIsa* isa, std::function<std::string(const CpuFeatures&)> needs,
                const GemmBlocking& defaults) {
  if (isa == nullptr) return;
  constexpr ElementType type = ElementType::float32;
  for (const std::string op_type : {"MatMul", "Gemm"}) {
    // Tuning ABI 2: gemm.row_order_b_floats (and MatMul's matmul.in_place_b_max_columns) were
    // constants in ABI 1.
    TuningSchema schema = packed_gemm_schema(elementwise_key(op_type, type, 2, isa->name), defaults);
    if (op_type == "MatMul")
      schema.parameters.push_back(tile_parameter("matmul.in_place_b_max_columns", kInPlaceBMaxColumns,
                                                 {0, 16, 32, 64, 128, 256},
                                                 "Widest B (columns, a multiple of 16) a batched product reads in "
                                                 "place through row pointers instead of packing it; 0: always pack "
                                                 "(same results, other speed)."));
    KernelDef def = make_def(op_type, op_type == "MatMul" ? OpsetRange{1} : OpsetRange{7}, type, std::move(schema));
    def.implementation = isa->name;
    def.unavailable_reason = needs;
    if (op_type == "MatMul")
      def.create = [isa](const KernelCreateInfo& info) -> std::unique_ptr<Kernel> {
        return std::make_unique<PackedMatMulKernel>(info, *isa);
      };
    else
      def.create = [isa](const KernelCreateInfo& info) -> std::unique_ptr<Kernel> {
        return std::make_unique<PackedGemmKernel>(info, *isa);
      };
    def.calibration_workload = square_workload(op_type, type);
    def.calibration_elements = square_elements;
    table.add(std::move(def));
  }
}

template <template <typename> class K, typename T>
void add_tiled(KernelTable& table, const std::string& op_type, OpsetRange opsets) {
  constexpr ElementType type = ElementTraits<T>::type;
  KernelDef def = make_def(op_type, opsets, type, tiled_schema(elementwise_key(op_type, type, 1)));
  def.create = [](const KernelCreateInfo& info) -> std::unique_ptr<Kernel> { return std::make_unique<K<T>>(info); };
  def.calibration_workload = square_workload(op_type, type);
  def.calibration_elements = square_elements;
  table.add(std::move(def));
}

}  // namespace

// Schema of the packed implementations: the threshold first, then the cache blocks.
TuningSchema packed_gemm_schema(TuningKey key, const GemmBlocking& defaults) {
  TuningSchema schema{std::move(key), {}};
  schema.parameters.push_back(threshold_parameter(
      "parallel.minimum_macs", kPackedGemmMinimumMacs, int64_t{1} << 50,
      "Smallest multiply-accumulate count run in parallel; smaller problems run on one thread."));
  schema.parameters.push_back(tile_parameter("gemm.block_m", defaults.m, {24, 48, 96, 192, 384, 768},
                                             "Output rows per task (rounded up to the micro-kernel's rows); the packed A "
                                             "block is block_m x block_k."));
  schema.parameters.push_back(tile_parameter("gemm.block_k", defaults.k, {64, 128, 192, 256, 384, 512, 1024},
                                             "Depth of one k-block: the micro-kernel streams block_k x NR of packed B."));
  schema.parameters.push_back(tile_parameter("gemm.block_n", defaults.n, {32, 64, 128, 256, 512, 1024, 2048},
                                             "Output columns per task (rounded up to the micro-kernel's columns); "
                                             "MatMul and Gemm widen it for shallow products (K = 16: 512) so that "
                                             "rows of C go out in long runs."));
  schema.parameters.push_back(tile_parameter("gemm.row_order_b_floats", defaults.row_order_b_floats,
                                             {0, 2048, 4096, 8192, 16384, 32768},
                                             "Packed B floats of one task's k-block up to which tiles run along C's "
                                             "rows (whole rows stored in one run) instead of down its columns; 0: "
                                             "always down the columns (same results, other speed)."));
  return schema;
}

void read_packed_gemm_tuning(const TuningValues& values, int64_t& minimum_macs, GemmBlocking& blocking) {
  read_tuning(values, "parallel.minimum_macs", minimum_macs);
  read_tuning(values, "gemm.block_m", blocking.m);
  read_tuning(values, "gemm.block_k", blocking.k);
  read_tuning(values, "gemm.block_n", blocking.n);
  read_tuning(values, "gemm.row_order_b_floats", blocking.row_order_b_floats);
}

void register_matmul_gemm_kernels(KernelTable& table) {
  // Preference order for float32: avx512, avx2, portable.
  // AVX-512: depths up to 512 in one k-block (no store and reload of C between two): [64,512] x
  // [512,512] at T=1 1.01 -> 0.98x ORT and the MLP 64x512x1024x256 1.00 -> 0.96 on one vCPU,
  // matmul_1024 unchanged (bench/RESULTS.md). AVX2 keeps 256 (not measured on an AVX2 host).
  add_packed(table, packed_gemm_avx512(), needs_avx512, GemmBlocking{96, 512, 256});
  add_packed(table, packed_gemm_avx2(), needs_avx2_fma, GemmBlocking{96, 256, 256});
  for_each_type<float, double, Float16, BFloat16, int32_t, int64_t, uint32_t, uint64_t>([&](auto t) {
    using T = decltype(t);
    add_tiled<MatMulKernel, T>(table, "MatMul", {1});
    add_tiled<GemmKernel, T>(table, "Gemm", {7});
  });
}

}  // namespace onnx_light::runtime::kernels
