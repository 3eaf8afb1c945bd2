// MatMul (numpy matmul: 1-D promotion, broadcast batch dims) and Gemm (alpha * A' B' + beta * C
// with optional transposes and a unidirectionally broadcast C), both on the tiled GEMM core.
// Tuning: gemm.tile_m/n/k (role tile) and parallel.minimum_macs (role threshold).
#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "kernels/broadcast.h"
#include "kernels/elementwise.h"
#include "kernels/gemm_core.h"
#include "kernels/kernel_families.h"
#include "kernels/kernel_util.h"
#include "onnx_light/runtime/error.h"

namespace onnx_light::runtime::kernels {

namespace {

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
    Tensor& y = execution.output(0, ElementTraits<T>::type, out_shape);
    const int64_t batches = shape_element_count(batch);
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
    if (a.rank() != 2 || b.rank() != 2)
      throw InputError(fmt::format("{}: A {} and B {} must be matrices", label, shape_to_string(a.shape()),
                                   shape_to_string(b.shape())));
    const int64_t m = trans_a_ ? a.shape()[1] : a.shape()[0];
    const int64_t k = trans_a_ ? a.shape()[0] : a.shape()[1];
    const int64_t k2 = trans_b_ ? b.shape()[1] : b.shape()[0];
    const int64_t n = trans_b_ ? b.shape()[0] : b.shape()[1];
    if (k != k2)
      throw InputError(fmt::format("{}: A {} and B {} (transA={}, transB={}) cannot be multiplied", label,
                                   shape_to_string(a.shape()), shape_to_string(b.shape()), trans_a_, trans_b_));
    const Shape out_shape{m, n};
    std::vector<int64_t> c_strides{0, 0};
    const bool use_c = c != nullptr && beta_ != 0.0f;
    if (use_c) {
      if (c->rank() > 2 || broadcast_shapes(c->shape(), out_shape, label) != out_shape)
        throw InputError(fmt::format("{}: C {} does not broadcast to {}", label, shape_to_string(c->shape()),
                                     shape_to_string(out_shape)));
      c_strides = broadcast_strides(c->shape(), out_shape);
    }
    Tensor& y = execution.output(0, ElementTraits<T>::type, out_shape);
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

template <template <typename> class K, typename T>
void add_tiled(KernelTable& table, const std::string& op_type, OpsetRange opsets) {
  constexpr ElementType type = ElementTraits<T>::type;
  KernelDef def = make_def(op_type, opsets, type, tiled_schema(elementwise_key(op_type, type, 1)));
  def.create = [](const KernelCreateInfo& info) -> std::unique_ptr<Kernel> { return std::make_unique<K<T>>(info); };
  // Calibration: square s x s operands with s^3 ~ the multiply-accumulate count searched.
  def.calibration_workload = [op_type](int64_t macs, int, uint32_t seed) {
    const auto s = std::max<int64_t>(1, static_cast<int64_t>(std::llround(std::cbrt(static_cast<double>(macs)))));
    std::vector<std::pair<std::string, Tensor>> inputs{{"a", random_tensor(type, {s, s}, seed)},
                                                       {"b", random_tensor(type, {s, s}, seed + 1)}};
    if (op_type == "Gemm") inputs.emplace_back("c", random_tensor(type, {s}, seed + 2));
    return one_node_workload(op_type, 13, "", std::move(inputs), {{"y", type, {s, s}}}, s * s * s);
  };
  table.add(std::move(def));
}

}  // namespace

void register_matmul_gemm_kernels(KernelTable& table) {
  for_each_type<float, double, Float16, BFloat16, int32_t, int64_t, uint32_t, uint64_t>([&](auto t) {
    using T = decltype(t);
    add_tiled<MatMulKernel, T>(table, "MatMul", {1});
    add_tiled<GemmKernel, T>(table, "Gemm", {7});
  });
}

}  // namespace onnx_light::runtime::kernels
