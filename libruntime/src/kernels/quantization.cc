// Linear quantization (the QDQ and QOperator formats quantization tools write): QuantizeLinear,
// DequantizeLinear, DynamicQuantizeLinear, MatMulInteger and QLinearMatMul, portable reference
// kernels; MatMulInteger and QLinearMatMul also as "avx512vnni" and "avxvnni" (int8 dot products on
// 512-bit or 256-bit registers). Rounding is to nearest with ties to even (std::nearbyint in the default rounding mode)
// and results saturate to the output type's range. Integer products accumulate in int32 exactly,
// so any faster implementation must match these bit for bit.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include <fmt/format.h>

#include "kernels/element_traits.h"
#include "kernels/isa_requirements.h"
#include "kernels/elementwise.h"
#include "kernels/kernel_families.h"
#include "kernels/kernel_util.h"
#include "kernels/quantized_operands.h"
#include "onnx_light/runtime/error.h"

#if defined(ONNX_LIGHT_X86_SIMD)
#include "kernels/simd/gemm_s8.h"
#include "kernels/simd/quantize_f32.h"
#endif

namespace onnx_light::runtime::kernels {

namespace {

// Per-tensor (one value) or per-axis (one per index of `axis`) quantization parameters: the index
// of element e's parameter.
struct AxisParameters {
  int64_t count = 1;   // 1: per tensor
  int64_t inner = 1;   // elements per step of the axis
  int64_t index(int64_t e) const { return count == 1 ? 0 : (e / inner) % count; }
};

AxisParameters axis_parameters(const Tensor& x, const Tensor& scale, const Tensor* zero_point, int64_t axis_attribute,
                               const std::string& label) {
  AxisParameters p;
  if (scale.element_count() == 1 && scale.rank() <= 1) {
    if (zero_point != nullptr && zero_point->element_count() != 1)
      throw InputError(fmt::format("{}: a per-tensor scale needs a per-tensor zero point, not {}", label,
                                   shape_to_string(zero_point->shape())));
    return p;
  }
  if (scale.rank() != 1)
    throw InputError(fmt::format("{}: scale must be a scalar or 1-D, not {}", label, shape_to_string(scale.shape())));
  const auto axis = static_cast<std::size_t>(normalize_axis(axis_attribute, static_cast<int64_t>(x.rank()), label));
  if (scale.element_count() != x.shape()[axis])
    throw InputError(fmt::format("{}: scale has {} values for axis {} of size {}", label, scale.element_count(), axis,
                                 x.shape()[axis]));
  if (zero_point != nullptr && zero_point->shape() != scale.shape())
    throw InputError(fmt::format("{}: zero point {} must have the scale's shape {}", label,
                                 shape_to_string(zero_point->shape()), shape_to_string(scale.shape())));
  p.count = scale.element_count();
  for (std::size_t d = axis + 1; d < x.rank(); ++d) p.inner *= x.shape()[d];
  return p;
}

void check_scales(const Tensor& scale, const std::string& label) {
  if (scale.element_type() != ElementType::float32)
    throw InputError(fmt::format("{}: scale must be float, not {}", label, element_type_name(scale.element_type())));
}

// QuantizeLinear (kQuantize: float x -> Q y = saturate(round(x / scale) + zero_point), Q the zero
// point's type, uint8 without one) and DequantizeLinear (Q x -> float y = (x - zero_point) * scale):
// one scale and zero point per tensor or per index of `axis`. kSimd ("avx512"): per-tensor uint8
// and int8 spans run the AVX-512 loops of simd/quantize_f32.h (the same expressions, bit for bit);
// a per-axis node runs the portable loop and reports "portable".
template <typename Q, bool kQuantize, bool kSimd = false>
class LinearQuantizationKernel final : public ThresholdKernel {
 public:
  explicit LinearQuantizationKernel(const KernelCreateInfo& info) : ThresholdKernel(kDefaultMinimumElements) {
    check_attributes(info, {"axis"});
    axis_ = info.int_attribute("axis", 1);
  }
  std::string_view variant() const override { return variant_; }
  void run(KernelExecution& execution) override {
    const Tensor& x = execution.required_input(0);
    const Tensor& scale = execution.required_input(1);
    const Tensor* zero_point = execution.input(2);
    const std::string& label = execution.label();
    check_scales(scale, label);
    if (zero_point != nullptr) check_input_type(execution, 2, *zero_point, ElementTraits<Q>::type);
    const AxisParameters p = axis_parameters(x, scale, zero_point, axis_, label);
    using In = std::conditional_t<kQuantize, float, Q>;
    using Out = std::conditional_t<kQuantize, Q, float>;
    Tensor& y = checked_output(execution, 0, ElementTraits<Out>::type, x.shape(), false);
    const In* in = x.data<In>();
    const float* s = scale.data<float>();
    const Q* z = zero_point != nullptr ? zero_point->data<Q>() : nullptr;
    Out* out = y.data<Out>();
    const int threads = admitted(x.element_count(), execution);
#if defined(ONNX_LIGHT_X86_SIMD)
    if constexpr (kSimd && (std::is_same_v<Q, uint8_t> || std::is_same_v<Q, int8_t>)) {
      if (p.count == 1) {
        const float scale0 = s[0];
        const Q zero0 = z != nullptr ? z[0] : Q{0};
        execution.parallel_for(x.element_count(), 1024, threads, [&](int64_t begin, int64_t end) {
          if constexpr (kQuantize && std::is_same_v<Q, uint8_t>)
            simd::quantize_f32_u8_avx512(in + begin, end - begin, scale0, static_cast<float>(zero0), out + begin);
          else if constexpr (kQuantize)
            simd::quantize_f32_s8_avx512(in + begin, end - begin, scale0, static_cast<float>(zero0), out + begin);
          else if constexpr (std::is_same_v<Q, uint8_t>)
            simd::dequantize_u8_f32_avx512(in + begin, end - begin, zero0, scale0, out + begin);
          else
            simd::dequantize_s8_f32_avx512(in + begin, end - begin, zero0, scale0, out + begin);
        });
        variant_ = "avx512";
        return;
      }
    }
#endif
    variant_ = "portable";
    execution.parallel_for(x.element_count(), 1024, threads, [&](int64_t begin, int64_t end) {
      for (int64_t e = begin; e < end; ++e) {
        const int64_t k = p.index(e);
        if constexpr (kQuantize) {
          out[e] = saturate_round<Q>(std::nearbyint(in[e] / s[k]) + static_cast<float>(z != nullptr ? z[k] : Q{0}));
        } else {
          const int64_t q = static_cast<int64_t>(in[e]) - (z != nullptr ? static_cast<int64_t>(z[k]) : 0);
          out[e] = static_cast<float>(q) * s[k];
        }
      }
    });
  }

 private:
  int64_t axis_ = 1;
  std::string_view variant_ = kSimd ? "avx512" : "portable";
};

// DynamicQuantizeLinear: uint8 quantization over the range of x widened to include 0.
class DynamicQuantizeLinearKernel final : public ThresholdKernel {
 public:
  explicit DynamicQuantizeLinearKernel(const KernelCreateInfo& info) : ThresholdKernel(kDefaultMinimumElements) {
    check_attributes(info, {});
  }
  void run(KernelExecution& execution) override {
    const Tensor& x = execution.required_input(0);
    const float* in = x.data<float>();
    float lo = 0.0f, hi = 0.0f;
    for (int64_t e = 0; e < x.element_count(); ++e) {
      if (std::isnan(in[e]))
        throw InputError(fmt::format("{}: x holds NaN at element {}: it has no range to quantize", execution.label(), e));
      lo = std::min(lo, in[e]);
      hi = std::max(hi, in[e]);
    }
    const float scale = (hi - lo) / 255.0f;
    const uint8_t zero = scale == 0.0f ? uint8_t{0} : saturate_round<uint8_t>(0.0f - lo / scale);
    Tensor& y = checked_output(execution, 0, ElementType::uint8, x.shape(), false);
    uint8_t* out = y.data<uint8_t>();
    for (int64_t e = 0; e < x.element_count(); ++e)
      out[e] = scale == 0.0f ? zero : saturate_round<uint8_t>(std::nearbyint(in[e] / scale) + static_cast<float>(zero));
    *checked_output(execution, 1, ElementType::float32, {}, false).data<float>() = scale;
    *checked_output(execution, 2, ElementType::uint8, {}, false).data<uint8_t>() = zero;
  }
};

// The operands of an integer MatMul, [..., M, K] x [K, N] or [..., K, N] with the same batch dims.
struct IntegerMatmulShape {
  int64_t m = 0, k = 0, n = 0, batches = 1;
  bool b_batched = false;
  Shape out;
};

IntegerMatmulShape integer_matmul_shape(const Tensor& a, const Tensor& b, const std::string& label) {
  if (a.rank() < 2 || b.rank() < 2)
    throw UnsupportedError(fmt::format("{}: operands of rank {} and {} (1-D operands are not supported)", label,
                                       a.rank(), b.rank()));
  IntegerMatmulShape s;
  s.m = a.shape()[a.rank() - 2];
  s.k = a.shape()[a.rank() - 1];
  const int64_t kb = b.shape()[b.rank() - 2];
  s.n = b.shape()[b.rank() - 1];
  if (s.k != kb)
    throw InputError(fmt::format("{}: inner dims differ: {} x {}", label, shape_to_string(a.shape()), shape_to_string(b.shape())));
  const Shape batch(a.shape().begin(), a.shape().end() - 2);
  s.b_batched = b.rank() > 2;
  if (s.b_batched && Shape(b.shape().begin(), b.shape().end() - 2) != batch)
    throw UnsupportedError(fmt::format("{}: batch dims of {} and {} differ (broadcasting batches is not supported)", label,
                                       shape_to_string(a.shape()), shape_to_string(b.shape())));
  for (int64_t d : batch) s.batches *= d;
  s.out = batch;
  s.out.push_back(s.m);
  s.out.push_back(s.n);
  return s;
}

// Zero points per row of A ([M] or one) and per column of B ([N] or one), read once per run.
struct IntegerZeroPoints {
  std::vector<int32_t> a;  // empty: 0
  std::vector<int32_t> b;  // one per column
};

IntegerZeroPoints integer_zero_points(const Tensor* a_zero, const Tensor* b_zero, const IntegerMatmulShape& s,
                                      const std::string& label) {
  IntegerZeroPoints z;
  z.a = zero_points(a_zero, s.m, label, "A's zero point");
  const std::vector<int32_t> given = zero_points(b_zero, s.n, label, "B's zero point");
  z.b.resize(static_cast<std::size_t>(s.n));
  for (int64_t j = 0; j < s.n; ++j) z.b[static_cast<std::size_t>(j)] = zero_point_at(given, j);
  return z;
}

// The reference: out = (a - a_zero) x (b - b_zero) accumulated in int32, loop by loop.
template <typename A, typename B>
void reference_integer_product(const Tensor& a, const Tensor& b, const IntegerMatmulShape& s, const IntegerZeroPoints& z,
                               int32_t* out) {
  const int64_t m = s.m, k = s.k, n = s.n;
  std::fill(out, out + s.batches * m * n, 0);
  const A* pa = a.data<A>();
  const B* pb = b.data<B>();
  for (int64_t t = 0; t < s.batches; ++t) {
    const A* am = pa + t * m * k;
    const B* bm = pb + (s.b_batched ? t * k * n : 0);
    int32_t* c = out + t * m * n;
    for (int64_t i = 0; i < m; ++i) {
      const int32_t a0 = zero_point_at(z.a, i);
      for (int64_t p = 0; p < k; ++p) {
        const int32_t av = static_cast<int32_t>(am[i * k + p]) - a0;
        for (int64_t j = 0; j < n; ++j)
          c[i * n + j] += av * (static_cast<int32_t>(bm[p * n + j]) - z.b[static_cast<std::size_t>(j)]);
      }
    }
  }
}

// In preference order: the table takes the first one the host runs.
enum class IntegerImpl { avx512vnni, avxvnni, portable };

constexpr const char* impl_name(IntegerImpl impl) {
  return impl == IntegerImpl::avx512vnni ? "avx512vnni" : impl == IntegerImpl::avxvnni ? "avxvnni" : "portable";
}

#if defined(ONNX_LIGHT_X86_SIMD)
// The GEMM functions of a VNNI implementation; nullptr for the portable one.
constexpr const simd::GemmS8Functions* gemm_s8_functions(IntegerImpl impl) {
  return impl == IntegerImpl::avx512vnni ? &simd::kGemmS8Avx512Vnni
         : impl == IntegerImpl::avxvnni  ? &simd::kGemmS8AvxVnni
                                         : nullptr;
}

// The same product on AVX-512 VNNI or AVX-VNNI (simd/gemm_s8.h), bit for bit: vpdpbusd sums a'(i, k) b'(k, j)
// of the shifted operands, and the shifts and zero points come off afterwards,
//   sum_k (a' + alpha_i)(b' + beta_j) = raw + beta_j * rowsum(A')_i + alpha_i * colsum(B')_j + K alpha_i beta_j
// with alpha_i = shift(A) - a_zero_i, beta_j = shift(B) - b_zero_j, in int32 with wraparound like
// the reference's accumulation. B is packed once at creation when it is a constant 2-D weight.
class VnniIntegerProduct {
 public:
  // b_input: B's index among the node's inputs (MatMulInteger 1, QLinearMatMul 3); `isa`: the
  // implementation's functions (nullptr: the portable kernel, which never runs this).
  VnniIntegerProduct(const KernelCreateInfo& info, std::size_t b_input, const simd::GemmS8Functions* isa) : isa_(isa) {
    if (isa_ == nullptr) return;
    const Tensor* b = info.constant_inputs.size() > b_input ? info.constant_inputs[b_input] : nullptr;
    if (b == nullptr || b->rank() != 2 || b->element_count() == 0) return;
    if (b->element_type() != ElementType::uint8 && b->element_type() != ElementType::int8) return;
    pack(*b, 0, b->shape()[0], b->shape()[1], constant_packed_, constant_col_sums_);
    constant_shape_ = b->shape();
    constant_type_ = b->element_type();
    has_constant_ = true;
  }

  void run(KernelExecution& execution, const Tensor& a, const Tensor& b, const IntegerMatmulShape& s,
           const IntegerZeroPoints& z, int threads, int32_t* out) {
    const int64_t m = s.m, k = s.k, n = s.n;
    if (m == 0 || n == 0) return;
    if (k == 0) {  // an empty sum, whatever the zero points (and nothing to pack)
      std::fill(out, out + s.batches * m * n, 0);
      return;
    }
    const bool a_signed = a.element_type() == ElementType::int8;
    const int32_t a_shift = a_signed ? -128 : 0;  // a = a' - 128
    const int32_t b_shift = b.element_type() == ElementType::uint8 ? 128 : 0;  // b = b' + 128
    beta_.resize(static_cast<std::size_t>(n));
    for (int64_t j = 0; j < n; ++j) beta_[static_cast<std::size_t>(j)] = b_shift - z.b[static_cast<std::size_t>(j)];
    const bool constant = has_constant_ && !s.b_batched && b.shape() == constant_shape_ && b.element_type() == constant_type_;
    const auto* pa = static_cast<const uint8_t*>(a.raw_data());
    const int64_t row_blocks = (m + simd::kGemmS8Mr - 1) / simd::kGemmS8Mr;
    const int64_t a_panel_bytes = simd::gemm_s8_packed_a_bytes(simd::kGemmS8Mr, k);
    packed_a_.resize(static_cast<std::size_t>(simd::gemm_s8_packed_a_bytes(m, k)));
    row_sums_.resize(static_cast<std::size_t>(m));
    row_terms_.resize(static_cast<std::size_t>(m));
    row_alphas_.resize(static_cast<std::size_t>(m));
    for (int64_t t = 0; t < s.batches; ++t) {
      if (!constant && (t == 0 || s.b_batched)) pack(b, s.b_batched ? t * k * n : 0, k, n, run_packed_, run_col_sums_);
      const int8_t* packed = constant ? constant_packed_.data() : run_packed_.data();
      const int32_t* col_sums = constant ? constant_col_sums_.data() : run_col_sums_.data();
      const uint8_t* at = pa + t * m * k;
      int32_t* ct = out + t * m * n;
      execution.parallel_for(row_blocks, 1, threads, [&](int64_t begin, int64_t end) {
        const int64_t i0 = begin * simd::kGemmS8Mr;
        const int64_t i1 = std::min(m, end * simd::kGemmS8Mr);
        uint8_t* block_a = packed_a_.data() + begin * a_panel_bytes;
        isa_->pack_a(at + i0 * k, k, a_signed ? 1 : 0, i1 - i0, k, block_a, row_sums_.data() + i0);
        // beta_j * rowsum_i + alpha_i * colsum_j + k * alpha_i * beta_j, with the terms of row i
        // gathered (wraparound in uint32 is the reference's int32 wraparound): added as each tile
        // is stored (a separate pass over C was 9% of 1024^3).
        for (int64_t i = i0; i < i1; ++i) {
          const auto alpha = static_cast<uint32_t>(a_shift - zero_point_at(z.a, i));
          const auto row_sum = static_cast<uint32_t>(row_sums_[static_cast<std::size_t>(i)]);
          row_terms_[static_cast<std::size_t>(i)] = static_cast<int32_t>(row_sum + static_cast<uint32_t>(k) * alpha);
          row_alphas_[static_cast<std::size_t>(i)] = static_cast<int32_t>(alpha);
        }
        const simd::GemmS8Correction correction{row_terms_.data() + i0, row_alphas_.data() + i0, beta_.data(), col_sums};
        isa_->gemm(block_a, i1 - i0, k, packed, n, ct + i0 * n, n, &correction);
      });
    }
  }

 private:
  void pack(const Tensor& b, int64_t offset, int64_t k, int64_t n, std::vector<int8_t>& packed,
            std::vector<int32_t>& col_sums) const {
    packed.resize(static_cast<std::size_t>(simd::gemm_s8_packed_b_bytes(k, n)));
    col_sums.resize(static_cast<std::size_t>(n));
    isa_->pack_b(static_cast<const uint8_t*>(b.raw_data()) + offset, n, b.element_type() == ElementType::uint8 ? 1 : 0, k,
                 n, packed.data(), col_sums.data());
  }

  const simd::GemmS8Functions* isa_;
  std::vector<int8_t> constant_packed_;
  std::vector<int32_t> constant_col_sums_;
  Shape constant_shape_;
  ElementType constant_type_ = ElementType::undefined;
  bool has_constant_ = false;
  std::vector<int8_t> run_packed_;
  std::vector<int32_t> run_col_sums_;
  std::vector<int32_t> beta_;
  std::vector<uint8_t> packed_a_;  // this run's A, 6-row panels
  std::vector<int32_t> row_sums_;
  std::vector<int32_t> row_terms_, row_alphas_;  // per row of A: rowsum + k * alpha, and alpha
};
#endif

// (a - a_zero) x (b - b_zero) into out, by the implementation the kernel was registered as.
template <IntegerImpl kImpl>
class IntegerProduct {
 public:
  IntegerProduct(const KernelCreateInfo& info, std::size_t b_input)
#if defined(ONNX_LIGHT_X86_SIMD)
      : vnni_(info, b_input, gemm_s8_functions(kImpl))
#endif
  {
    (void)info;
    (void)b_input;
  }
  void run(KernelExecution& execution, const Tensor& a, const Tensor& b, const IntegerMatmulShape& s,
           const IntegerZeroPoints& z, int threads, int32_t* out) {
#if defined(ONNX_LIGHT_X86_SIMD)
    if constexpr (kImpl != IntegerImpl::portable) {
      vnni_.run(execution, a, b, s, z, threads, out);
      return;
    }
#endif
    (void)execution;
    (void)threads;
    dispatch_int8_pair(a.element_type(), b.element_type(), execution.label(), [&](auto av, auto bv) {
      reference_integer_product<decltype(av), decltype(bv)>(a, b, s, z, out);
    });
  }

 private:
#if defined(ONNX_LIGHT_X86_SIMD)
  VnniIntegerProduct vnni_;
#endif
};

template <IntegerImpl kImpl>
class MatMulIntegerKernel final : public ThresholdKernel {
 public:
  explicit MatMulIntegerKernel(const KernelCreateInfo& info) : ThresholdKernel(kDefaultMinimumElements), product_(info, 1) {
    check_attributes(info, {});
  }
  void run(KernelExecution& execution) override {
    const Tensor& a = execution.required_input(0);
    const Tensor& b = execution.required_input(1);
    check_second_int8_operand(b.element_type(), execution.label());
    const IntegerMatmulShape s = integer_matmul_shape(a, b, execution.label());
    const IntegerZeroPoints z = integer_zero_points(execution.input(2), execution.input(3), s, execution.label());
    Tensor& y = checked_output(execution, 0, ElementType::int32, s.out, false);
    product_.run(execution, a, b, s, z, admitted(s.m * s.n, execution), y.data<int32_t>());
  }

 private:
  IntegerProduct<kImpl> product_;
};

// QLinearMatMul: the integer product requantized to y's scale and zero point (per tensor).
template <typename Q, IntegerImpl kImpl>
class QLinearMatMulKernel final : public ThresholdKernel {
 public:
  explicit QLinearMatMulKernel(const KernelCreateInfo& info) : ThresholdKernel(kDefaultMinimumElements), product_(info, 3) {
    check_attributes(info, {});
  }
  void run(KernelExecution& execution) override {
    const std::string& label = execution.label();
    const Tensor& a = execution.required_input(0);
    const Tensor& a_scale = execution.required_input(1);
    const Tensor& b = execution.required_input(3);
    const Tensor& b_scale = execution.required_input(4);
    const Tensor& y_scale = execution.required_input(6);
    const Tensor& y_zero = execution.required_input(7);
    for (const Tensor* s : {&a_scale, &b_scale, &y_scale}) {
      check_scales(*s, label);
      if (s->element_count() != 1)
        throw UnsupportedError(fmt::format("{}: per-axis scales ({}) are not supported", label, shape_to_string(s->shape())));
    }
    if (y_zero.element_count() != 1)
      throw UnsupportedError(fmt::format("{}: a per-axis output zero point is not supported", label));
    check_second_int8_operand(b.element_type(), label);
    const IntegerMatmulShape s = integer_matmul_shape(a, b, label);
    const IntegerZeroPoints z = integer_zero_points(&execution.required_input(2), &execution.required_input(5), s, label);
    product_scratch_.resize(static_cast<std::size_t>(s.batches * s.m * s.n));
    const int threads = admitted(s.m * s.n, execution);
    product_.run(execution, a, b, s, z, threads, product_scratch_.data());
    const float multiplier = *a_scale.data<float>() * *b_scale.data<float>() / *y_scale.data<float>();
    const auto zero = static_cast<float>(*y_zero.data<Q>());
    Tensor& y = checked_output(execution, 0, ElementTraits<Q>::type, s.out, false);
    Q* out = y.data<Q>();
    const int32_t* product = product_scratch_.data();
    execution.parallel_for(static_cast<int64_t>(product_scratch_.size()), 4096, threads, [&](int64_t begin, int64_t end) {
#if defined(ONNX_LIGHT_X86_SIMD)
      if constexpr (kImpl != IntegerImpl::portable) {
        if constexpr (std::is_same_v<Q, uint8_t>)
          gemm_s8_functions(kImpl)->requantize_u8(product + begin, end - begin, multiplier, zero, out + begin);
        else
          gemm_s8_functions(kImpl)->requantize_s8(product + begin, end - begin, multiplier, zero, out + begin);
        return;
      }
#endif
      for (int64_t e = begin; e < end; ++e)
        out[e] = saturate_round<Q>(std::nearbyint(static_cast<float>(product[e]) * multiplier) + zero);
    });
  }

 private:
  IntegerProduct<kImpl> product_;
  std::vector<int32_t> product_scratch_;  // kept across runs
};

TuningSchema schema_of(const std::string& op_type, ElementType type) {
  return parallel_threshold_schema(elementwise_key(op_type, type, 1), kDefaultMinimumElements);
}

// QuantizeLinear (float) as "avx512" (kSimd, preferred) or the portable reference.
template <bool kSimd>
void add_quantize(KernelTable& table) {
  const char* impl = kSimd ? "avx512" : "portable";
  KernelDef quantize = make_def("QuantizeLinear", {10}, ElementType::float32,
                                parallel_threshold_schema(elementwise_key("QuantizeLinear", ElementType::float32, 1, impl),
                                                          kDefaultMinimumElements));
  quantize.implementation = impl;
  if constexpr (kSimd) quantize.unavailable_reason = needs_avx512;
  quantize.create = [](const KernelCreateInfo& info) -> std::unique_ptr<Kernel> {
    if (quantized_type(info, 2) == ElementType::int8)
      return std::make_unique<LinearQuantizationKernel<int8_t, true, kSimd>>(info);
    return std::make_unique<LinearQuantizationKernel<uint8_t, true, kSimd>>(info);
  };
  quantize.output_types = [](const KernelCreateInfo& info) { return std::vector<ElementType>{quantized_type(info, 2)}; };
  table.add(std::move(quantize));
}

template <typename Q, bool kSimd>
void add_dequantize(KernelTable& table) {
  constexpr ElementType type = ElementTraits<Q>::type;
  const char* impl = kSimd ? "avx512" : "portable";
  KernelDef dequantize = make_def("DequantizeLinear", {10}, type,
                                  parallel_threshold_schema(elementwise_key("DequantizeLinear", type, 1, impl),
                                                            kDefaultMinimumElements));
  dequantize.implementation = impl;
  if constexpr (kSimd) dequantize.unavailable_reason = needs_avx512;
  dequantize.create = [](const KernelCreateInfo& info) -> std::unique_ptr<Kernel> {
    return std::make_unique<LinearQuantizationKernel<Q, false, kSimd>>(info);
  };
  dequantize.output_types = [](const KernelCreateInfo&) { return std::vector<ElementType>{ElementType::float32}; };
  table.add(std::move(dequantize));
}

// MatMulInteger and QLinearMatMul of one implementation, A of `type`; registration order is the
// preference order, so the VNNI pairs go first (AVX-512 VNNI, then AVX-VNNI) and the portable
// reference last.
template <IntegerImpl kImpl>
void add_integer_matmuls(KernelTable& table, ElementType type) {
  auto with_impl = [](KernelDef def) {
    def.implementation = impl_name(kImpl);
    if constexpr (kImpl == IntegerImpl::avx512vnni) def.unavailable_reason = needs_avx512_vnni;
    if constexpr (kImpl == IntegerImpl::avxvnni) def.unavailable_reason = needs_avx_vnni;
    return def;
  };
  KernelDef integer = with_impl(make_def("MatMulInteger", {10}, type,
                                         parallel_threshold_schema(elementwise_key("MatMulInteger", type, 1, impl_name(kImpl)),
                                                                   kDefaultMinimumElements)));
  integer.create = [](const KernelCreateInfo& info) -> std::unique_ptr<Kernel> {
    return std::make_unique<MatMulIntegerKernel<kImpl>>(info);
  };
  integer.output_types = [](const KernelCreateInfo&) { return std::vector<ElementType>{ElementType::int32}; };
  table.add(std::move(integer));
  KernelDef qlinear = with_impl(make_def("QLinearMatMul", {10}, type,
                                         parallel_threshold_schema(elementwise_key("QLinearMatMul", type, 1, impl_name(kImpl)),
                                                                   kDefaultMinimumElements)));
  qlinear.create = [](const KernelCreateInfo& info) -> std::unique_ptr<Kernel> {
    if (quantized_type(info, 7) == ElementType::int8) return std::make_unique<QLinearMatMulKernel<int8_t, kImpl>>(info);
    return std::make_unique<QLinearMatMulKernel<uint8_t, kImpl>>(info);
  };
  qlinear.output_types = [](const KernelCreateInfo& info) { return std::vector<ElementType>{quantized_type(info, 7)}; };
  table.add(std::move(qlinear));
}

}  // namespace

void register_quantization_kernels(KernelTable& table) {
#if defined(ONNX_LIGHT_X86_SIMD)
  add_quantize<true>(table);
#endif
  add_quantize<false>(table);

  for_each_type<uint8_t, int8_t, int32_t>([&](auto v) {
    using Q = decltype(v);
#if defined(ONNX_LIGHT_X86_SIMD)
    if constexpr (!std::is_same_v<Q, int32_t>) add_dequantize<Q, true>(table);
#endif
    add_dequantize<Q, false>(table);
  });

  KernelDef dynamic = make_def("DynamicQuantizeLinear", {11}, ElementType::float32,
                               schema_of("DynamicQuantizeLinear", ElementType::float32));
  dynamic.create = [](const KernelCreateInfo& info) -> std::unique_ptr<Kernel> {
    return std::make_unique<DynamicQuantizeLinearKernel>(info);
  };
  dynamic.output_types = [](const KernelCreateInfo&) {
    return std::vector<ElementType>{ElementType::uint8, ElementType::float32, ElementType::uint8};
  };
  table.add(std::move(dynamic));

  for (ElementType type : {ElementType::uint8, ElementType::int8}) {
#if defined(ONNX_LIGHT_X86_SIMD)
    add_integer_matmuls<IntegerImpl::avx512vnni>(table, type);
    add_integer_matmuls<IntegerImpl::avxvnni>(table, type);
#endif
    add_integer_matmuls<IntegerImpl::portable>(table, type);
  }
}

}  // namespace onnx_light::runtime::kernels
