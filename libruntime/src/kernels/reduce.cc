// Reductions over axes (ReduceSum, ReduceMean, ReduceMax, ...), ArgMax/ArgMin, and the global
// pools, which are reductions over the spatial axes. Every output element is reduced by one
// thread, visiting the reduced elements in row-major order, so results never depend on the
// thread count; parallelism is across output elements.
//
// float ReduceSum, ReduceMean, ReduceSumSquare, ReduceL1, ReduceL2, ReduceMax, ReduceMin and the
// global pools also have an "avx2" implementation (simd/reduce_f32_avx2.cc) for two layouts:
// the reduced axes form one contiguous innermost block (each output reduces a contiguous row
// over 8-lane accumulators in a fixed order: the last bits may differ from the portable
// sequential sum, never between thread counts), and the innermost kept axis is contiguous
// (column reductions: vertical steps in the portable order, the portable result bit for bit
// except SumSquare/L2, whose x * x + acc is fused).
#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "checked_math.h"
#include "kernels/elementwise.h"
#include "kernels/integer_math.h"
#include "kernels/isa_requirements.h"
#include "kernels/kernel_families.h"
#include "kernels/kernel_util.h"
#include "onnx_light/runtime/error.h"
#if defined(ONNX_LIGHT_X86_SIMD)
#include "kernels/simd/reduce_f32.h"
#endif

namespace onnx_light::runtime::kernels {

namespace {

// Input dims split into kept dims (outer, then an innermost contiguous block of `inner`
// elements when the last dim is kept) and reduced dims; adjacent dims of the same kind merged.
struct ReduceLayout {
  Shape output_shape;
  std::vector<int64_t> kept_sizes, kept_strides;
  int64_t inner = 1;
  std::vector<int64_t> reduced_sizes, reduced_strides;  // never empty: {1}, {0} when nothing is reduced
  int64_t reduce_count = 1;
};

ReduceLayout make_layout(const Shape& input, const std::vector<bool>& reduced, bool keepdims) {
  ReduceLayout layout;
  const std::vector<int64_t> strides = row_major_strides(input);
  struct Dim {
    int64_t size, stride;
    bool reduced;
  };
  std::vector<Dim> dims;
  for (std::size_t d = 0; d < input.size(); ++d) {
    if (reduced[d]) {
      layout.reduce_count = checked_mul(layout.reduce_count, input[d], "the reduced element count");
      if (keepdims) layout.output_shape.push_back(1);
    } else {
      layout.output_shape.push_back(input[d]);
    }
    if (input[d] == 1) continue;  // moves no index
    if (!dims.empty() && dims.back().reduced == reduced[d] && dims.back().size != 0 && input[d] != 0) {
      dims.back().size = checked_mul(dims.back().size, input[d], "a merged dimension");
      dims.back().stride = strides[d];
    } else {
      dims.push_back({input[d], strides[d], static_cast<bool>(reduced[d])});
    }
  }
  if (!dims.empty() && !dims.back().reduced && dims.back().stride == 1) {
    layout.inner = dims.back().size;
    dims.pop_back();
  }
  for (const Dim& d : dims) {
    (d.reduced ? layout.reduced_sizes : layout.kept_sizes).push_back(d.size);
    (d.reduced ? layout.reduced_strides : layout.kept_strides).push_back(d.stride);
  }
  if (layout.reduced_sizes.empty()) {
    layout.reduced_sizes.push_back(1);
    layout.reduced_strides.push_back(0);
  }
  return layout;
}

// Output elements are processed in chunks of at most this many contiguous inner elements, so
// that accumulators stay in L1 while the reduced rows stream past.
constexpr int64_t kChunk = 256;

// Calls visit(offset_of_chunk_start, count, output_index) for every chunk of [begin, end), and
// step(p, t) inside for each reduced position (p points at the element for chunk lane 0, t is
// the ordinal of the reduced position).
template <typename Chunk>
void for_each_chunk(const ReduceLayout& layout, int64_t begin, int64_t end, Chunk&& chunk) {
  int64_t o = begin;
  while (o < end) {
    const int64_t outer = o / layout.inner;
    const int64_t j0 = o % layout.inner;
    const int64_t count = std::min({layout.inner - j0, end - o, kChunk});
    int64_t base = j0;
    int64_t rest = outer;
    for (std::size_t d = layout.kept_sizes.size(); d-- > 0;) {
      base += (rest % layout.kept_sizes[d]) * layout.kept_strides[d];
      rest /= layout.kept_sizes[d];
    }
    chunk(base, count, o);
    o += count;
  }
}

// Visits every reduced position in row-major order: f(offset, ordinal).
template <typename F>
void for_each_reduced(const ReduceLayout& layout, F&& f) {
  const std::size_t r = layout.reduced_sizes.size();
  const int64_t last_size = layout.reduced_sizes[r - 1];
  const int64_t last_stride = layout.reduced_strides[r - 1];
  int64_t outer_count = 1;
  for (std::size_t d = 0; d + 1 < r; ++d) outer_count *= layout.reduced_sizes[d];
  std::vector<int64_t> index(r, 0);
  int64_t offset = 0;
  int64_t ordinal = 0;
  for (int64_t q = 0; q < outer_count; ++q) {
    for (int64_t t = 0; t < last_size; ++t) f(offset + t * last_stride, ordinal++);
    for (std::size_t d = r - 1; d-- > 0;) {  // odometer over the outer reduced dims
      offset += layout.reduced_strides[d];
      if (++index[d] < layout.reduced_sizes[d]) break;
      offset -= index[d] * layout.reduced_strides[d];
      index[d] = 0;
    }
  }
}

// Accumulator type: float for the 16-bit floats, the type itself otherwise.
template <typename T>
using acc_t = compute_t<T>;

// Reducers: init, step(acc, x, shift), finish(acc, count, shift). `shift` is the per-output
// maximum for two-pass reducers (kNeedsMax), 0 otherwise.
struct SumReducer {
  static constexpr bool kNeedsMax = false;
  template <typename A> static A init() { return A(0); }
  template <typename A> static void step(A& a, A x, A) { a = wrap_add(a, x); }
  template <typename A> static A finish(A a, int64_t, A) { return a; }
};
struct MeanReducer : SumReducer {
  template <typename A> static A finish(A a, int64_t count, A) {
    if constexpr (std::is_integral_v<A>) return count == 0 ? A(0) : static_cast<A>(a / static_cast<A>(count));
    else return a / static_cast<A>(count);
  }
};
struct SumSquareReducer : SumReducer {
  template <typename A> static void step(A& a, A x, A) { a = wrap_add(a, wrap_mul(x, x)); }
};
struct L1Reducer : SumReducer {
  template <typename A> static void step(A& a, A x, A) {
    if constexpr (std::is_signed_v<A> || std::is_floating_point_v<A>) a = wrap_add(a, x < A(0) ? wrap_sub(A(0), x) : x);
    else a = wrap_add(a, x);
  }
};
struct L2Reducer : SumSquareReducer {
  template <typename A> static A finish(A a, int64_t, A) {
    return saturate_cast<A>(std::sqrt(static_cast<double>(a)));
  }
};
struct LogSumReducer : SumReducer {
  template <typename A> static A finish(A a, int64_t, A) {
    if constexpr (std::is_floating_point_v<A>) return std::log(a);
    else return saturate_cast<A>(std::log(static_cast<double>(a)));
  }
};
struct LogSumExpReducer : SumReducer {
  static constexpr bool kNeedsMax = true;
  template <typename A> static void step(A& a, A x, A shift) {
    if constexpr (std::is_floating_point_v<A>) a += std::exp(x - shift);
    else a = saturate_cast<A>(static_cast<double>(a) + std::exp(static_cast<double>(x) - static_cast<double>(shift)));
  }
  template <typename A> static A finish(A a, int64_t, A shift) {
    if constexpr (std::is_floating_point_v<A>) return shift + std::log(a);
    else return saturate_cast<A>(static_cast<double>(shift) + std::log(static_cast<double>(a)));
  }
};
struct ProdReducer : SumReducer {
  template <typename A> static A init() { return A(1); }
  template <typename A> static void step(A& a, A x, A) { a = wrap_mul(a, x); }
};
// NaN propagates as in numpy.max.
struct MaxReducer : SumReducer {
  template <typename A> static A init() {
    if constexpr (std::numeric_limits<A>::has_infinity) return -std::numeric_limits<A>::infinity();
    else return std::numeric_limits<A>::lowest();
  }
  template <typename A> static void step(A& a, A x, A) {
    if constexpr (std::is_floating_point_v<A>) {
      if (x > a || std::isnan(x)) a = std::isnan(a) ? a : x;
    } else if (x > a) {
      a = x;
    }
  }
};
struct MinReducer : SumReducer {
  template <typename A> static A init() {
    if constexpr (std::numeric_limits<A>::has_infinity) return std::numeric_limits<A>::infinity();
    else return std::numeric_limits<A>::max();
  }
  template <typename A> static void step(A& a, A x, A) {
    if constexpr (std::is_floating_point_v<A>) {
      if (x < a || std::isnan(x)) a = std::isnan(a) ? a : x;
    } else if (x < a) {
      a = x;
    }
  }
};

// Where the axes come from.
enum class AxesSource {
  attribute,  // `axes` attribute (ReduceSum before 13, the others before 18)
  input,      // optional input 1, read at run time, with noop_with_empty_axes
  spatial,    // every axis from 2 on (global pools)
};

// The simd::ReduceF32Op accumulated for a reducer, or -1 when it has no vectorised loop.
template <typename R>
constexpr int simd_reduce_op() {
  if constexpr (std::is_same_v<R, SumReducer> || std::is_same_v<R, MeanReducer>) return 0;        // kReduceF32Sum
  else if constexpr (std::is_same_v<R, SumSquareReducer> || std::is_same_v<R, L2Reducer>) return 1;  // SumSquare
  else if constexpr (std::is_same_v<R, L1Reducer>) return 2;                                        // AbsSum
  else if constexpr (std::is_same_v<R, MaxReducer>) return 3;                                       // Max
  else if constexpr (std::is_same_v<R, MinReducer>) return 4;                                       // Min
  else return -1;
}

#if defined(ONNX_LIGHT_X86_SIMD)
static_assert(simd::kReduceF32Sum == 0 && simd::kReduceF32SumSquare == 1 && simd::kReduceF32AbsSum == 2 &&
              simd::kReduceF32Max == 3 && simd::kReduceF32Min == 4);
#endif

enum class Impl { portable, avx2 };

template <typename T, typename R, Impl kImpl = Impl::portable>
class ReduceKernel final : public ThresholdKernel {
  static_assert(kImpl == Impl::portable || (std::is_same_v<T, float> && simd_reduce_op<R>() >= 0));

 public:
  ReduceKernel(const KernelCreateInfo& info, AxesSource source) : ThresholdKernel(kDefaultMinimumElements), source_(source) {
    if (source == AxesSource::attribute) {
      check_attributes(info, {"axes", "keepdims"});
      axes_ = info.ints_attribute("axes");
      keepdims_ = info.int_attribute("keepdims", 1) != 0;
    } else if (source == AxesSource::input) {
      check_attributes(info, {"keepdims", "noop_with_empty_axes"});
      keepdims_ = info.int_attribute("keepdims", 1) != 0;
      noop_with_empty_axes_ = info.int_attribute("noop_with_empty_axes", 0) != 0;
    } else {
      check_attributes(info, {});
    }
  }

  void run(KernelExecution& execution) override {
    const Tensor& x = execution.required_input(0);
    const int64_t rank = static_cast<int64_t>(x.rank());
    // Members rather than locals, and the layout rebuilt only when the shape or the axes change:
    // a steady-state run (GlobalAveragePool in a CNN) allocates nothing.
    std::vector<int64_t>& axes = run_axes_;
    axes.assign(axes_.begin(), axes_.end());
    bool noop = false;
    if (source_ == AxesSource::input) {
      if (const Tensor* a = execution.input(1)) axes = read_int64_values(*a, execution.label(), "axes");
      noop = axes.empty() && noop_with_empty_axes_;
    } else if (source_ == AxesSource::spatial) {
      if (rank < 2)
        throw InputError(fmt::format("{}: input must have rank 2 or more, not {}", execution.label(), rank));
      axes.clear();
      for (int64_t d = 2; d < rank; ++d) axes.push_back(d);
    }
    if (noop) {  // noop_with_empty_axes: the output is the input
      Tensor& y = execution.output(0, ElementTraits<T>::type, x.shape());
      std::copy_n(x.data<T>(), x.element_count(), y.data<T>());
      return;
    }
    std::vector<bool>& reduced = run_reduced_;
    reduced.assign(static_cast<std::size_t>(rank), axes.empty() && source_ != AxesSource::spatial);
    for (int64_t axis : axes) {
      auto d = static_cast<std::size_t>(normalize_axis(axis, rank, execution.label(), "axes"));
      if (reduced[d]) throw InputError(fmt::format("{}: axis {} is listed twice in {}", execution.label(), axis, axes));
      reduced[d] = true;
    }
    if (!layout_valid_ || layout_input_ != x.shape() || layout_reduced_ != reduced) {
      layout_ = make_layout(x.shape(), reduced, keepdims_);
      layout_input_ = x.shape();
      layout_reduced_ = reduced;
      layout_valid_ = true;
    }
    const ReduceLayout& layout = layout_;
    Tensor& y = execution.output(0, ElementTraits<T>::type, layout.output_shape);
    const T* in = x.data<T>();
    T* out = y.data<T>();
    using A = acc_t<T>;
    const int64_t n = y.element_count();
#if defined(ONNX_LIGHT_X86_SIMD)
    if constexpr (kImpl == Impl::avx2) {
      if (run_avx2(layout, in, out, n, x.element_count(), execution)) return;
    }
#endif
    execution.parallel_for(n, cache_line_grain<T>(), admitted(x.element_count(), execution), [&](int64_t begin, int64_t end) {
      A acc[kChunk];
      A shift[kChunk];
      for_each_chunk(layout, begin, end, [&](int64_t base, int64_t count, int64_t o) {
        const T* p = in + base;
        for (int64_t j = 0; j < count; ++j) shift[j] = A(0);
        if constexpr (R::kNeedsMax) {
          for (int64_t j = 0; j < count; ++j) shift[j] = MaxReducer::init<A>();
          for_each_reduced(layout, [&](int64_t off, int64_t) {
            for (int64_t j = 0; j < count; ++j) MaxReducer::step(shift[j], A(load<T>(p[off + j])), A(0));
          });
          // An infinite or NaN maximum cannot be subtracted; its result follows from the plain sum.
          for (int64_t j = 0; j < count; ++j)
            if (!std::isfinite(static_cast<double>(shift[j]))) shift[j] = A(0);
        }
        for (int64_t j = 0; j < count; ++j) acc[j] = R::template init<A>();
        for_each_reduced(layout, [&](int64_t off, int64_t) {
          for (int64_t j = 0; j < count; ++j) R::step(acc[j], A(load<T>(p[off + j])), shift[j]);
        });
        for (int64_t j = 0; j < count; ++j) out[o + j] = store<T>(R::finish(acc[j], layout.reduce_count, shift[j]));
      });
    });
  }

 private:
#if defined(ONNX_LIGHT_X86_SIMD)
  // The vectorised layouts; false leaves the output to the portable loop.
  bool run_avx2(const ReduceLayout& layout, const float* in, float* out, int64_t n, int64_t elements,
                KernelExecution& execution) const {
    constexpr int op = simd_reduce_op<R>();
    if (n == 0 || elements == 0) return false;
    const int threads = admitted(elements, execution);
    if (layout.inner == 1 && layout.reduced_sizes.size() == 1 && layout.reduced_strides[0] == 1) {
      // Output o reduces the contiguous row [o * length, (o + 1) * length).
      const int64_t length = layout.reduced_sizes[0];
      execution.parallel_for(n, cache_line_grain<float>(), threads, [&](int64_t begin, int64_t end) {
        simd::reduce_rows_f32_avx2(op, in + begin * length, out + begin, end - begin, length);
        for (int64_t o = begin; o < end; ++o) out[o] = R::finish(out[o], layout.reduce_count, 0.0f);
      });
      return true;
    }
    if (layout.inner >= 8) {
      execution.parallel_for(n, cache_line_grain<float>(), threads, [&](int64_t begin, int64_t end) {
        float acc[kChunk];
        for_each_chunk(layout, begin, end, [&](int64_t base, int64_t count, int64_t o) {
          const float* p = in + base;
          for (int64_t j = 0; j < count; ++j) acc[j] = R::template init<float>();
          for_each_reduced(layout, [&](int64_t off, int64_t) { simd::accumulate_f32_avx2(op, acc, p + off, count); });
          for (int64_t j = 0; j < count; ++j) out[o + j] = R::finish(acc[j], layout.reduce_count, 0.0f);
        });
      });
      return true;
    }
    return false;
  }
#endif

  AxesSource source_;
  std::vector<int64_t> axes_;
  std::vector<int64_t> run_axes_;
  std::vector<bool> run_reduced_, layout_reduced_;
  Shape layout_input_;
  ReduceLayout layout_;
  bool layout_valid_ = false;
  bool keepdims_ = true;
  bool noop_with_empty_axes_ = false;
};

// ArgMax/ArgMin along one axis; ties pick the first index unless select_last_index.
template <typename T, bool kMax>
class ArgKernel final : public ThresholdKernel {
 public:
  explicit ArgKernel(const KernelCreateInfo& info) : ThresholdKernel(kDefaultMinimumElements) {
    check_attributes(info, {"axis", "keepdims", "select_last_index"});
    axis_ = info.int_attribute("axis", 0);
    keepdims_ = info.int_attribute("keepdims", 1) != 0;
    last_ = info.int_attribute("select_last_index", 0) != 0;
  }

  void run(KernelExecution& execution) override {
    const Tensor& x = execution.required_input(0);
    const int64_t rank = static_cast<int64_t>(x.rank());
    const auto axis = static_cast<std::size_t>(normalize_axis(axis_, rank, execution.label()));
    if (x.shape()[axis] == 0)
      throw InputError(fmt::format("{}: cannot take the {} of an empty axis", execution.label(), kMax ? "ArgMax" : "ArgMin"));
    std::vector<bool> reduced(static_cast<std::size_t>(rank), false);
    reduced[axis] = true;
    const ReduceLayout layout = make_layout(x.shape(), reduced, keepdims_);
    Tensor& y = execution.output(0, ElementType::int64, layout.output_shape);
    const T* in = x.data<T>();
    int64_t* out = y.data<int64_t>();
    using A = compute_t<T>;
    execution.parallel_for(y.element_count(), 8, admitted(x.element_count(), execution), [&](int64_t begin, int64_t end) {
      A best[kChunk];
      int64_t index[kChunk];
      for_each_chunk(layout, begin, end, [&](int64_t base, int64_t count, int64_t o) {
        const T* p = in + base;
        for_each_reduced(layout, [&](int64_t off, int64_t t) {
          for (int64_t j = 0; j < count; ++j) {
            const A v = load<T>(p[off + j]);
            if (t == 0 || better(v, best[j])) {
              best[j] = v;
              index[j] = t;
            }
          }
        });
        for (int64_t j = 0; j < count; ++j) out[o + j] = index[j];
      });
    });
  }

 private:
  template <typename A>
  bool better(A v, A best) const {
    if constexpr (std::is_floating_point_v<A>) {
      if (std::isnan(best)) return false;  // the first NaN wins, as in numpy
      if (std::isnan(v)) return true;
    }
    if (last_) return kMax ? v >= best : v <= best;
    return kMax ? v > best : v < best;
  }
  int64_t axis_ = 0;
  bool keepdims_ = true;
  bool last_ = false;
};

// Calibration: [rows, 64] reduced over axis 1 (variant 0) or axis 0 (variant 1) with the
// attribute flavour; both flavours share one tuning key, so they share this workload.
CalibrationWorkloadFunction reduce_workload(const std::string& op_type, ElementType type, int attribute_opset) {
  return [op_type, type, attribute_opset](int64_t n, int variant, uint32_t seed) {
    const Shape shape = rows_of_64(n);
    Shape out = shape;
    out[variant == 0 ? 1 : 0] = 1;
    return one_node_workload(op_type, attribute_opset, fmt::format("axes = [{}]", variant == 0 ? 1 : 0),
                             {{"x", random_tensor(type, shape, seed)}}, {{"y", type, out}}, shape[0] * shape[1]);
  };
}

CalibrationWorkloadFunction global_pool_workload(const std::string& op_type, ElementType type) {
  return [op_type, type](int64_t n, int, uint32_t seed) {
    const int64_t channels = std::max<int64_t>(1, n / 64);
    return one_node_workload(op_type, 17, "", {{"x", random_tensor(type, {1, channels, 8, 8}, seed)}},
                             {{"y", type, {1, channels, 1, 1}}}, channels * 64);
  };
}

// CumSum along one axis (read from input 1 at run time), optionally exclusive and/or reversed.
// Each line along the axis is summed by one thread in order; lines sharing an outer index are
// processed in chunks of inner positions.
template <typename T>
class CumSumKernel final : public ThresholdKernel {
 public:
  explicit CumSumKernel(const KernelCreateInfo& info) : ThresholdKernel(kDefaultMinimumElements) {
    check_attributes(info, {"exclusive", "reverse"});
    exclusive_ = info.int_attribute("exclusive", 0) != 0;
    reverse_ = info.int_attribute("reverse", 0) != 0;
  }
  void run(KernelExecution& execution) override {
    const Tensor& x = execution.required_input(0);
    const std::vector<int64_t> axis_value = read_int64_values(execution.required_input(1), execution.label(), "axis");
    if (axis_value.size() != 1) throw InputError(fmt::format("{}: axis must be a scalar", execution.label()));
    const auto rank = static_cast<int64_t>(x.rank());
    const auto axis = static_cast<std::size_t>(normalize_axis(axis_value[0], std::max<int64_t>(rank, 1), execution.label()));
    Tensor& y = execution.output(0, ElementTraits<T>::type, x.shape());
    if (x.element_count() == 0) return;
    int64_t outer = 1, length = 1, inner = 1;
    for (std::size_t d = 0; d < x.rank(); ++d) (d < axis ? outer : d == axis ? length : inner) *= x.shape()[d];
    const T* in = x.data<T>();
    T* out = y.data<T>();
    using A = acc_t<T>;
    const int64_t lines = outer * inner;
    execution.parallel_for(lines, 1, admitted(x.element_count(), execution), [&](int64_t begin, int64_t end) {
      A acc[kChunk];
      int64_t r = begin;
      while (r < end) {
        const int64_t o = r / inner, j0 = r % inner;
        const int64_t count = std::min({inner - j0, end - r, kChunk});
        const int64_t base = o * length * inner + j0;
        for (int64_t j = 0; j < count; ++j) acc[j] = A(0);
        for (int64_t step = 0; step < length; ++step) {
          const int64_t k = reverse_ ? length - 1 - step : step;
          for (int64_t j = 0; j < count; ++j) {
            const int64_t at = base + k * inner + j;
            const A v = load<T>(in[at]);
            if (exclusive_) {
              out[at] = store<T>(acc[j]);
              acc[j] = wrap_add(acc[j], v);
            } else {
              acc[j] = wrap_add(acc[j], v);
              out[at] = store<T>(acc[j]);
            }
          }
        }
        r += count;
      }
    });
  }

 private:
  bool exclusive_ = false, reverse_ = false;
};

template <typename T, typename R, Impl kImpl = Impl::portable>
void add_reduce(KernelTable& table, const std::string& op_type, OpsetRange opsets, AxesSource source,
                CalibrationWorkloadFunction workload, int variants) {
  constexpr ElementType type = ElementTraits<T>::type;
  const std::string implementation = kImpl == Impl::avx2 ? "avx2" : "portable";
  KernelDef def = make_def(op_type, opsets, type,
                           parallel_threshold_schema(elementwise_key(op_type, type, 1, implementation), kDefaultMinimumElements));
  def.implementation = implementation;
  if constexpr (kImpl == Impl::avx2) def.unavailable_reason = needs_avx2_fma;
  def.create = [source](const KernelCreateInfo& info) -> std::unique_ptr<Kernel> {
    return std::make_unique<ReduceKernel<T, R, kImpl>>(info, source);
  };
  def.calibration_workload = std::move(workload);
  def.calibration_variants = variants;
  table.add(std::move(def));
}

// True when (T, R) has an "avx2" implementation, registered before the portable one.
template <typename T, typename R>
constexpr bool has_avx2_reduce() {
#if defined(ONNX_LIGHT_X86_SIMD)
  return std::is_same_v<T, float> && simd_reduce_op<R>() >= 0;
#else
  return false;
#endif
}

// The attribute flavour up to `last_attribute_opset`, the input flavour after it.
template <typename T, typename R>
void add_reduce_op(KernelTable& table, const std::string& op_type, int last_attribute_opset) {
  const auto workload = reduce_workload(op_type, ElementTraits<T>::type, last_attribute_opset);
  if constexpr (has_avx2_reduce<T, R>()) {
    add_reduce<T, R, Impl::avx2>(table, op_type, {1, last_attribute_opset}, AxesSource::attribute, workload, 2);
    add_reduce<T, R, Impl::avx2>(table, op_type, {last_attribute_opset + 1}, AxesSource::input, workload, 2);
  }
  add_reduce<T, R>(table, op_type, {1, last_attribute_opset}, AxesSource::attribute, workload, 2);
  add_reduce<T, R>(table, op_type, {last_attribute_opset + 1}, AxesSource::input, workload, 2);
}

template <typename T, bool kMax>
void add_arg(KernelTable& table, const std::string& op_type) {
  constexpr ElementType type = ElementTraits<T>::type;
  KernelDef def = make_def(op_type, {1}, type,
                           parallel_threshold_schema(elementwise_key(op_type, type, 1), kDefaultMinimumElements));
  def.create = [](const KernelCreateInfo& info) -> std::unique_ptr<Kernel> {
    return std::make_unique<ArgKernel<T, kMax>>(info);
  };
  def.output_types = [](const KernelCreateInfo&) { return std::vector<ElementType>{ElementType::int64}; };
  def.calibration_workload = [op_type](int64_t n, int, uint32_t seed) {
    const Shape shape = rows_of_64(n);
    return one_node_workload(op_type, 13, "axis = 1", {{"x", random_tensor(type, shape, seed)}},
                             {{"y", ElementType::int64, {shape[0], 1}}}, shape[0] * shape[1]);
  };
  table.add(std::move(def));
}

}  // namespace

void register_reduce_kernels(KernelTable& table) {
  for_each_type<float, double, Float16, BFloat16, int32_t, int64_t, uint32_t, uint64_t>([&](auto t) {
    using T = decltype(t);
    add_reduce_op<T, SumReducer>(table, "ReduceSum", 12);
    add_reduce_op<T, MeanReducer>(table, "ReduceMean", 17);
    add_reduce_op<T, ProdReducer>(table, "ReduceProd", 17);
    add_reduce_op<T, L1Reducer>(table, "ReduceL1", 17);
    add_reduce_op<T, L2Reducer>(table, "ReduceL2", 17);
    add_reduce_op<T, LogSumReducer>(table, "ReduceLogSum", 17);
    add_reduce_op<T, LogSumExpReducer>(table, "ReduceLogSumExp", 17);
    add_reduce_op<T, SumSquareReducer>(table, "ReduceSumSquare", 17);
  });
  for_each_type<float, double, Float16, BFloat16, int8_t, int32_t, int64_t, uint8_t, uint32_t, uint64_t>([&](auto t) {
    using T = decltype(t);
    add_reduce_op<T, MaxReducer>(table, "ReduceMax", 17);
    add_reduce_op<T, MinReducer>(table, "ReduceMin", 17);
  });
  for_each_type<float, double, Float16, BFloat16, int8_t, int16_t, int32_t, int64_t, uint8_t, uint16_t, uint32_t,
                uint64_t>([&](auto t) {
    using T = decltype(t);
    add_arg<T, true>(table, "ArgMax");
    add_arg<T, false>(table, "ArgMin");
  });
  for_each_type<float, double, Float16, BFloat16, int32_t, int64_t, uint32_t, uint64_t>([&](auto t) {
    using T = decltype(t);
    constexpr ElementType type = ElementTraits<T>::type;
    KernelDef def = make_def("CumSum", {11}, type,
                             parallel_threshold_schema(elementwise_key("CumSum", type, 1), kDefaultMinimumElements));
    def.create = [](const KernelCreateInfo& info) -> std::unique_ptr<Kernel> { return std::make_unique<CumSumKernel<T>>(info); };
    def.calibration_workload = [](int64_t n, int, uint32_t seed) {
      const Shape shape = rows_of_64(n);
      return one_node_workload("CumSum", 14, "", {{"x", random_tensor(type, shape, seed)}, {"axis", int64_tensor({1})}},
                               {{"y", type, shape}}, shape[0] * shape[1]);
    };
    table.add(std::move(def));
  });
  for_each_type<float, double, Float16>([&](auto t) {
    using T = decltype(t);
    constexpr ElementType type = ElementTraits<T>::type;
    if constexpr (has_avx2_reduce<T, MeanReducer>()) {
      add_reduce<T, MeanReducer, Impl::avx2>(table, "GlobalAveragePool", {1}, AxesSource::spatial,
                                             global_pool_workload("GlobalAveragePool", type), 1);
      add_reduce<T, MaxReducer, Impl::avx2>(table, "GlobalMaxPool", {1}, AxesSource::spatial,
                                            global_pool_workload("GlobalMaxPool", type), 1);
    }
    add_reduce<T, MeanReducer>(table, "GlobalAveragePool", {1}, AxesSource::spatial,
                               global_pool_workload("GlobalAveragePool", type), 1);
    add_reduce<T, MaxReducer>(table, "GlobalMaxPool", {1}, AxesSource::spatial, global_pool_workload("GlobalMaxPool", type), 1);
  });
}

}  // namespace onnx_light::runtime::kernels
