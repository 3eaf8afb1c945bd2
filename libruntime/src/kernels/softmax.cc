// Softmax, LogSoftmax and Hardmax: row kernels. From opset 13 a row is the `axis` dim (default
// -1) with the other dims outer and inner; before 13 the input is coerced to 2-D at `axis`
// (default 1) and a row is everything from `axis` on. Each row is processed by one thread in a
// fixed order, so results never depend on the thread count. Contiguous rows (inner == 1, the
// common case) are processed one at a time; strided rows that share an outer index are
// processed in chunks of inner positions so that they still stream through memory.
//
// float Softmax and LogSoftmax also have "avx2" and "avx512" implementations (simd/softmax_f32_*.cc):
// a vectorised exp and lane-wise accumulation in a fixed order per row (see simd/softmax_f32.h).
#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "kernels/elementwise.h"
#include "kernels/isa_requirements.h"
#include "kernels/kernel_families.h"
#include "kernels/kernel_util.h"
#include "onnx_light/runtime/error.h"
#if defined(ONNX_LIGHT_X86_SIMD)
#include "kernels/simd/softmax_f32.h"
#endif

namespace onnx_light::runtime::kernels {

namespace {

enum class RowOp { softmax, log_softmax, hardmax };
enum class Impl { portable, avx2, avx512 };

constexpr int64_t kInnerChunk = 64;

// One contiguous row, in the same order as the chunked loop below (first maximum, sum in k order).
template <typename T, RowOp kOp>
void portable_row(const T* in, T* out, int64_t length) {
  using C = compute_t<T>;
  C max = load<T>(in[0]);
  int64_t arg = 0;
  for (int64_t k = 1; k < length; ++k) {
    const C v = load<T>(in[k]);
    if (v > max) {  // the first maximum wins (Hardmax); NaN never replaces a number
      max = v;
      arg = k;
    }
  }
  if constexpr (kOp == RowOp::hardmax) {
    for (int64_t k = 0; k < length; ++k) out[k] = store<T>(k == arg ? C(1) : C(0));
  } else {
    C sum = C(0);
    for (int64_t k = 0; k < length; ++k) {
      const C e = std::exp(load<T>(in[k]) - max);
      if constexpr (kOp == RowOp::softmax && std::is_same_v<T, C>) out[k] = e;
      sum += e;
    }
    if constexpr (kOp == RowOp::softmax) {
      const C inv = C(1) / sum;
      for (int64_t k = 0; k < length; ++k) {
        // 16-bit outputs hold e rounded; recompute it in full precision instead.
        const C e = std::is_same_v<T, C> ? load<T>(out[k]) : std::exp(load<T>(in[k]) - max);
        out[k] = store<T>(e * inv);
      }
    } else {
      const C shift = max + std::log(sum);
      for (int64_t k = 0; k < length; ++k) out[k] = store<T>(load<T>(in[k]) - shift);
    }
  }
}

#if defined(ONNX_LIGHT_X86_SIMD)
using SimdRowsFn = void (*)(const float*, float*, int64_t, int64_t);
using SimdStridedFn = void (*)(const float*, float*, int64_t, int64_t, int64_t);

template <RowOp kOp, Impl kImpl>
constexpr SimdRowsFn simd_rows() {
  if constexpr (kImpl == Impl::avx512)
    return kOp == RowOp::softmax ? simd::softmax_rows_f32_avx512 : simd::log_softmax_rows_f32_avx512;
  else
    return kOp == RowOp::softmax ? simd::softmax_rows_f32_avx2 : simd::log_softmax_rows_f32_avx2;
}
template <RowOp kOp, Impl kImpl>
constexpr SimdStridedFn simd_strided() {
  if constexpr (kImpl == Impl::avx512)
    return kOp == RowOp::softmax ? simd::softmax_strided_f32_avx512 : simd::log_softmax_strided_f32_avx512;
  else
    return kOp == RowOp::softmax ? simd::softmax_strided_f32_avx2 : simd::log_softmax_strided_f32_avx2;
}
#endif

template <typename T, RowOp kOp, Impl kImpl = Impl::portable>
class SoftmaxKernel final : public RowKernel {
  static_assert(kImpl == Impl::portable || (std::is_same_v<T, float> && kOp != RowOp::hardmax));

 public:
  explicit SoftmaxKernel(const KernelCreateInfo& info) : RowKernel(kDefaultMinimumRows) {
    check_attributes(info, {"axis"});
    coerce_2d_ = info.opset < 13;
    axis_ = info.int_attribute("axis", coerce_2d_ ? 1 : -1);
  }

  void run(KernelExecution& execution) override {
    const Tensor& x = execution.required_input(0);
    const auto rank = static_cast<int64_t>(x.rank());
    Tensor& y = execution.output_for_overwrite(0, ElementTraits<T>::type, x.shape());
    if (x.element_count() == 0) return;
    const auto axis = static_cast<std::size_t>(normalize_axis(axis_, std::max<int64_t>(rank, 1), execution.label()));
    int64_t outer = 1, length = 1, inner = 1;
    for (std::size_t d = 0; d < x.rank(); ++d) {
      if (d < axis) outer *= x.shape()[d];
      else if (d == axis || coerce_2d_) length *= x.shape()[d];
      else inner *= x.shape()[d];
    }
    const T* in = x.data<T>();
    T* out = y.data<T>();
    const int64_t rows = outer * inner;
    const int threads = admitted_rows(rows, execution);
#if defined(ONNX_LIGHT_X86_SIMD)
    if constexpr (kImpl != Impl::portable) {
      if (inner == 1) {
        execution.parallel_for(rows, 1, threads, [&](int64_t begin, int64_t end) {
          simd_rows<kOp, kImpl>()(in + begin * length, out + begin * length, end - begin, length);
        });
      } else {
        // Blocks on whole cache lines of inner positions, so that two threads never write one line.
        execution.parallel_for(rows, cache_line_grain<T>(), threads, [&](int64_t begin, int64_t end) {
          for (int64_t r = begin; r < end;) {
            const int64_t o = r / inner, j0 = r % inner;
            const int64_t count = std::min(inner - j0, end - r);
            const int64_t base = o * length * inner + j0;
            simd_strided<kOp, kImpl>()(in + base, out + base, length, inner, count);
            r += count;
          }
        });
      }
      return;
    }
#endif
    if (inner == 1) {
      execution.parallel_for(rows, 1, threads, [&](int64_t begin, int64_t end) {
        for (int64_t r = begin; r < end; ++r) portable_row<T, kOp>(in + r * length, out + r * length, length);
      });
      return;
    }
    // Rows are numbered outer-major; a block of rows is split into chunks within one outer index.
    execution.parallel_for(rows, 1, threads, [&](int64_t begin, int64_t end) {
      using C = compute_t<T>;
      C max[kInnerChunk];
      C sum[kInnerChunk];
      int64_t arg[kInnerChunk];
      int64_t r = begin;
      while (r < end) {
        const int64_t o = r / inner;
        const int64_t j0 = r % inner;
        const int64_t count = std::min({inner - j0, end - r, kInnerChunk});
        const int64_t base = o * length * inner + j0;
        for (int64_t j = 0; j < count; ++j) {
          max[j] = load<T>(in[base + j]);
          arg[j] = 0;
        }
        for (int64_t k = 1; k < length; ++k)
          for (int64_t j = 0; j < count; ++j) {
            const C v = load<T>(in[base + k * inner + j]);
            if (v > max[j]) {  // the first maximum wins (Hardmax); NaN never replaces a number
              max[j] = v;
              arg[j] = k;
            }
          }
        if constexpr (kOp == RowOp::hardmax) {
          for (int64_t k = 0; k < length; ++k)
            for (int64_t j = 0; j < count; ++j) out[base + k * inner + j] = store<T>(k == arg[j] ? C(1) : C(0));
        } else {
          for (int64_t j = 0; j < count; ++j) sum[j] = C(0);
          for (int64_t k = 0; k < length; ++k)
            for (int64_t j = 0; j < count; ++j) {
              const C e = std::exp(load<T>(in[base + k * inner + j]) - max[j]);
              if constexpr (kOp == RowOp::softmax) out[base + k * inner + j] = store<T>(e);
              sum[j] += e;
            }
          if constexpr (kOp == RowOp::softmax) {
            for (int64_t j = 0; j < count; ++j) sum[j] = C(1) / sum[j];
            for (int64_t k = 0; k < length; ++k)
              for (int64_t j = 0; j < count; ++j) {
                // 16-bit outputs hold e rounded; recompute it in full precision instead.
                const C e = std::is_same_v<T, C> ? load<T>(out[base + k * inner + j])
                                                 : std::exp(load<T>(in[base + k * inner + j]) - max[j]);
                out[base + k * inner + j] = store<T>(e * sum[j]);
              }
          } else {
            for (int64_t j = 0; j < count; ++j) sum[j] = max[j] + std::log(sum[j]);
            for (int64_t k = 0; k < length; ++k)
              for (int64_t j = 0; j < count; ++j)
                out[base + k * inner + j] = store<T>(load<T>(in[base + k * inner + j]) - sum[j]);
          }
        }
        r += count;
      }
    });
  }

 private:
  bool coerce_2d_ = false;
  int64_t axis_ = -1;
};

constexpr const char* impl_name(Impl impl) {
  return impl == Impl::avx512 ? "avx512" : impl == Impl::avx2 ? "avx2" : "portable";
}

template <typename T, RowOp kOp, Impl kImpl = Impl::portable>
void add_row_op(KernelTable& table, const std::string& op_type, OpsetRange opsets) {
  constexpr ElementType type = ElementTraits<T>::type;
  KernelDef def = make_def(op_type, opsets, type,
                           row_threshold_schema(elementwise_key(op_type, type, 1, impl_name(kImpl)), kDefaultMinimumRows));
  def.implementation = impl_name(kImpl);
  if constexpr (kImpl == Impl::avx2) def.unavailable_reason = needs_avx2_fma;
  if constexpr (kImpl == Impl::avx512) def.unavailable_reason = needs_avx512;
  def.create = [](const KernelCreateInfo& info) -> std::unique_ptr<Kernel> {
    return std::make_unique<SoftmaxKernel<T, kOp, kImpl>>(info);
  };
  // Calibration: [rows, 64] over the last axis; the threshold counts rows.
  def.calibration_workload = [op_type](int64_t rows, int, uint32_t seed) {
    constexpr ElementType element = ElementTraits<T>::type;  // not captured: clang 14 and GCC disagree on constexpr captures
    const Shape shape{std::max<int64_t>(1, rows), 64};
    return one_node_workload(op_type, 13, "axis = -1", {{"x", random_tensor(element, shape, seed)}},
                             {{"y", element, shape}}, shape[0]);
  };
  table.add(std::move(def));
}

}  // namespace

void register_softmax_kernels(KernelTable& table) {
  for_each_type<float, double, Float16, BFloat16>([&](auto t) {
    using T = decltype(t);
#if defined(ONNX_LIGHT_X86_SIMD)
    // Preference order: the widest unit first, the portable reference last.
    if constexpr (std::is_same_v<T, float>) {
      add_row_op<T, RowOp::softmax, Impl::avx512>(table, "Softmax", {1});
      add_row_op<T, RowOp::softmax, Impl::avx2>(table, "Softmax", {1});
      add_row_op<T, RowOp::log_softmax, Impl::avx512>(table, "LogSoftmax", {1});
      add_row_op<T, RowOp::log_softmax, Impl::avx2>(table, "LogSoftmax", {1});
    }
#endif
    add_row_op<T, RowOp::softmax>(table, "Softmax", {1});
    add_row_op<T, RowOp::log_softmax>(table, "LogSoftmax", {1});
    add_row_op<T, RowOp::hardmax>(table, "Hardmax", {1});
  });
}

}  // namespace onnx_light::runtime::kernels
