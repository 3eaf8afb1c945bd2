// BatchNormalization (inference), LayerNormalization, MeanVarianceNormalization and LRN. BatchNormalization is elementwise with
// per-channel constants (parallel.minimum_elements); LayerNormalization is a row kernel (each
// row's mean and variance computed by one thread in a fixed order; parallel.minimum_rows).
#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "checked_math.h"
#include "kernels/broadcast.h"
#include "kernels/isa_requirements.h"
#include "kernels/elementwise.h"
#include "kernels/kernel_families.h"
#include "kernels/kernel_util.h"
#include "onnx_light/runtime/error.h"
#if defined(ONNX_LIGHT_X86_SIMD)
#include "kernels/simd/layernorm_f32.h"
#endif

namespace onnx_light::runtime::kernels {

namespace {

// Mean and sum of squared deviations of one row in compute precision: two passes (the mean
// first), so a row's statistics never depend on how rows are split over threads.
template <typename T>
std::pair<compute_t<T>, compute_t<T>> row_moments(const T* row, int64_t length) {
  using C = compute_t<T>;
  C sum = C(0);
  for (int64_t i = 0; i < length; ++i) sum += load<T>(row[i]);
  const C mean = sum / static_cast<C>(length);
  C squares = C(0);
  for (int64_t i = 0; i < length; ++i) {
    const C d = load<T>(row[i]) - mean;
    squares += d * d;
  }
  return {mean, squares};
}

// y = (x - mean[c]) / sqrt(var[c] + epsilon) * scale[c] + bias[c], c the channel (dim 1).
// Inference reads mean and var from the inputs. Training mode (opset 14+, training_mode = 1)
// normalizes with the batch's own statistics (mean and biased variance over every dim but the
// channel, accumulated in double) and writes the optional running_mean and running_var:
// input * momentum + batch statistic * (1 - momentum), in the type of input_mean and input_var.
template <typename T>
class BatchNormKernel final : public ThresholdKernel {
 public:
  explicit BatchNormKernel(const KernelCreateInfo& info) : ThresholdKernel(kDefaultMinimumElements) {
    if (info.opset >= 14) check_attributes(info, {"epsilon", "momentum", "training_mode"});
    else if (info.opset >= 9) check_attributes(info, {"epsilon", "momentum"});
    else check_attributes(info, {"epsilon", "momentum", "spatial"});
    epsilon_ = info.float_attribute("epsilon", 1e-5f);
    momentum_ = info.float_attribute("momentum", 0.9f);
    training_ = info.opset >= 14 && info.int_attribute("training_mode", 0) != 0;
    if (info.int_attribute("spatial", 1) != 1)
      throw UnsupportedError(fmt::format("{}: attribute 'spatial' = 0 is not supported", info.node_label()));
    if (!training_ && info.node.output_size() > 1)
      throw UnsupportedError(fmt::format("{}: outputs beyond Y are training statistics, written only with "
                                         "training_mode = 1 (opset 14 and later)",
                                         info.node_label()));
    if (training_ && info.node.output_size() > 3)
      throw UnsupportedError(fmt::format("{}: training mode has three outputs (Y, running_mean, running_var), "
                                         "not {}",
                                         info.node_label(), info.node.output_size()));
  }

  void run(KernelExecution& execution) override {
    const Tensor& x = execution.required_input(0);
    const std::string& label = execution.label();
    if (x.rank() < 2) throw InputError(fmt::format("{}: X {} must have rank 2 or more", label, shape_to_string(x.shape())));
    const int64_t channels = x.shape()[1];
    using C = compute_t<T>;
    // Members, resized: their capacity carries over, so a repeated run allocates nothing.
    std::vector<C>& shift = shift_;
    std::vector<C>& factor = factor_;
    std::vector<C>& offset = offset_;
    shift.resize(static_cast<std::size_t>(channels));
    factor.resize(static_cast<std::size_t>(channels));
    offset.resize(static_cast<std::size_t>(channels));
    const Tensor* params[4];
    static constexpr const char* names[] = {"scale", "B", "input_mean", "input_var"};
    for (std::size_t i = 0; i < 4; ++i) {
      params[i] = &execution.required_input(i + 1);
      if (params[i]->element_count() != channels)
        throw InputError(fmt::format("{}: {} {} must have {} elements (the channels of X {})", label, names[i],
                                     params[i]->describe(), channels, shape_to_string(x.shape())));
    }
    int64_t spatial = 1;
    for (std::size_t d = 2; d < x.rank(); ++d) spatial *= x.shape()[d];
    const T* in = x.data<T>();
    if (training_) batch_statistics(execution, in, x.shape()[0], channels, spatial);
    for (int64_t c = 0; c < channels; ++c) {
      const auto i = static_cast<std::size_t>(c);
      const double mean = training_ ? batch_mean_[i] : read_as_double(*params[2], c);
      const double variance = training_ ? batch_variance_[i] : read_as_double(*params[3], c);
      shift[i] = static_cast<C>(mean);
      factor[i] = static_cast<C>(read_as_double(*params[0], c)) / std::sqrt(static_cast<C>(variance) + static_cast<C>(epsilon_));
      offset[i] = static_cast<C>(read_as_double(*params[1], c));
    }
    Tensor& y = execution.output(0, ElementTraits<T>::type, x.shape());
    if (training_) write_running_statistics(execution, *params[2], *params[3], channels);
    if (x.element_count() == 0) return;  // and its dims' products may overflow beside the zero
    T* out = y.data<T>();
    const int64_t n = x.element_count();
    execution.parallel_for(n, cache_line_grain<T>(), admitted(n, execution), [&](int64_t begin, int64_t end) {
      int64_t e = begin;
      while (e < end) {
        const auto c = static_cast<std::size_t>((e / spatial) % channels);
        const int64_t stop = std::min(end, (e / spatial + 1) * spatial);
        for (; e < stop; ++e) out[e] = store<T>((load<T>(in[e]) - shift[c]) * factor[c] + offset[c]);
      }
    });
  }

 private:
  // Mean and biased variance of each channel over the batch and spatial dims, two passes in
  // double (the variance of the centred values: no cancellation when the mean is large). An
  // empty batch gives NaN statistics, as the mean of nothing is.
  void batch_statistics(KernelExecution& execution, const T* in, int64_t batch, int64_t channels, int64_t spatial) {
    batch_mean_.assign(static_cast<std::size_t>(channels), 0.0);
    batch_variance_.assign(static_cast<std::size_t>(channels), 0.0);
    const double count = static_cast<double>(batch) * static_cast<double>(spatial);
    const int64_t per_channel = batch * spatial;
    execution.parallel_for(channels, 1, admitted(per_channel * channels, execution), [&](int64_t begin, int64_t end) {
      for (int64_t c = begin; c < end; ++c) {
        double sum = 0;
        for (int64_t b = 0; b < batch; ++b) {
          const T* plane = in + (b * channels + c) * spatial;
          for (int64_t s = 0; s < spatial; ++s) sum += static_cast<double>(load<T>(plane[s]));
        }
        const double mean = sum / count;
        double squares = 0;
        for (int64_t b = 0; b < batch; ++b) {
          const T* plane = in + (b * channels + c) * spatial;
          for (int64_t s = 0; s < spatial; ++s) {
            const double d = static_cast<double>(load<T>(plane[s])) - mean;
            squares += d * d;
          }
        }
        batch_mean_[static_cast<std::size_t>(c)] = mean;
        batch_variance_[static_cast<std::size_t>(c)] = squares / count;
      }
    });
  }

  void write_running_statistics(KernelExecution& execution, const Tensor& input_mean, const Tensor& input_var,
                                int64_t channels) {
    const double momentum = momentum_;
    auto write = [&](std::size_t index, const Tensor& input, const std::vector<double>& batch) {
      if (execution.output_count() <= index) return;
      Tensor& out = execution.output(index, input.element_type(), {channels});
      for (int64_t c = 0; c < channels; ++c) {
        const double v = read_as_double(input, c) * momentum + batch[static_cast<std::size_t>(c)] * (1.0 - momentum);
        switch (out.element_type()) {
          case ElementType::float32: out.data<float>()[c] = static_cast<float>(v); break;
          case ElementType::float64: out.data<double>()[c] = v; break;
          case ElementType::float16: out.data<Float16>()[c] = store<Float16>(static_cast<float>(v)); break;
          case ElementType::bfloat16: out.data<BFloat16>()[c] = store<BFloat16>(static_cast<float>(v)); break;
          default:
            throw InputError(fmt::format("{}: input_mean and input_var must be floating point, not {}",
                                         execution.label(), element_type_name(out.element_type())));
        }
      }
    };
    write(1, input_mean, batch_mean_);
    write(2, input_var, batch_variance_);
  }

  float epsilon_ = 1e-5f;
  float momentum_ = 0.9f;
  bool training_ = false;
  std::vector<compute_t<T>> shift_, factor_, offset_;
  std::vector<double> batch_mean_, batch_variance_;
};

// A vectorised float32 row loop (simd/layernorm_f32.h), or nullptr for the portable loop.
using LayerNormRows = void (*)(const float* x, float* y, int64_t rows, int64_t length, const float* scale,
                               const float* bias, float epsilon, float* mean_out, float* inv_out);

// Per-row normalisation over the dims from `axis` on; Scale and B broadcast to those dims.
// With `rows_fn` (float32, avx2/avx512), rows whose Scale and B are already laid out as the
// normalized dims run the vector loop; a broadcast Scale or B runs the portable loop, and the
// node then reports the variant "portable_loop".
template <typename T>
class LayerNormKernel final : public RowKernel {
 public:
  explicit LayerNormKernel(const KernelCreateInfo& info, LayerNormRows rows_fn = nullptr)
      : RowKernel(kDefaultMinimumRows), rows_fn_(rows_fn) {
    check_attributes(info, {"axis", "epsilon", "stash_type"});
    axis_ = info.int_attribute("axis", -1);
    epsilon_ = info.float_attribute("epsilon", 1e-5f);
    if (const int64_t stash = info.int_attribute("stash_type", 1); stash != 1)
      throw UnsupportedError(fmt::format("{}: attribute 'stash_type' = {} is not supported (only 1, float)",
                                         info.node_label(), stash));
  }

  std::string_view variant() const override { return last_variant_; }

  void run(KernelExecution& execution) override {
    const Tensor& x = execution.required_input(0);
    const Tensor& scale = execution.required_input(1);
    const Tensor* bias = execution.input(2);
    const std::string& label = execution.label();
    check_input_type(execution, 1, scale, ElementTraits<T>::type);
    if (bias != nullptr) check_input_type(execution, 2, *bias, ElementTraits<T>::type);
    const auto axis = static_cast<std::size_t>(normalize_axis(axis_, static_cast<int64_t>(x.rank()), label));
    // The broadcast of Scale and B, and the statistics' shape, kept until an input shape changes.
    signature_.replan_if_changed(execution, 0, [&] {
      const Shape normalized(x.shape().begin() + static_cast<std::ptrdiff_t>(axis), x.shape().end());
      length_ = checked_element_count(normalized, "the normalized dims");
      scale_index_ = broadcast_index(scale, normalized, label, "Scale");
      bias_index_ = bias != nullptr ? broadcast_index(*bias, normalized, label, "B") : std::vector<int64_t>{};
      stat_shape_.assign(x.shape().begin(), x.shape().begin() + static_cast<std::ptrdiff_t>(axis));
      stat_shape_.resize(x.rank(), 1);
    });
    const int64_t length = length_;
    const int64_t rows = length == 0 ? 0 : x.element_count() / length;
    const std::vector<int64_t>& scale_index = scale_index_;
    const std::vector<int64_t>& bias_index = bias_index_;
    Tensor& y = execution.output(0, ElementTraits<T>::type, x.shape());
    const Shape& stat_shape = stat_shape_;
    float* mean_out = execution.output_count() > 1 ? execution.output(1, ElementType::float32, stat_shape).data<float>() : nullptr;
    float* inv_out = execution.output_count() > 2 ? execution.output(2, ElementType::float32, stat_shape).data<float>() : nullptr;
    const T* in = x.data<T>();
    const T* ps = scale.data<T>();
    const T* pb = bias != nullptr ? bias->data<T>() : nullptr;
    T* out = y.data<T>();
    if constexpr (std::is_same_v<T, float>) {
      if (rows_fn_ != nullptr && scale_index.empty() && bias_index.empty()) {
        last_variant_ = {};
        const float epsilon = epsilon_;
        const LayerNormRows fn = rows_fn_;
        execution.parallel_for(rows, 1, admitted_rows(rows, execution), [&](int64_t begin, int64_t end) {
          fn(in + begin * length, out + begin * length, end - begin, length, ps, pb, epsilon,
             mean_out != nullptr ? mean_out + begin : nullptr, inv_out != nullptr ? inv_out + begin : nullptr);
        });
        return;
      }
    }
    last_variant_ = rows_fn_ != nullptr ? "portable_loop" : "";
    // Statistics in float (stash_type 1), or in double for double inputs.
    using C = compute_t<T>;
    execution.parallel_for(rows, 1, admitted_rows(rows, execution), [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) {
        const T* row = in + r * length;
        const auto [mean, squares] = row_moments<T>(row, length);
        const C inv = C(1) / std::sqrt(squares / static_cast<C>(length) + static_cast<C>(epsilon_));
        T* o = out + r * length;
        for (int64_t i = 0; i < length; ++i) {
          const auto k = static_cast<std::size_t>(i);
          C v = (load<T>(row[i]) - mean) * inv * load<T>(ps[scale_index.empty() ? i : scale_index[k]]);
          if (pb != nullptr) v += load<T>(pb[bias_index.empty() ? i : bias_index[k]]);
          o[i] = store<T>(v);
        }
        if (mean_out != nullptr) mean_out[r] = static_cast<float>(mean);
        if (inv_out != nullptr) inv_out[r] = static_cast<float>(inv);
      }
    });
  }

 private:
  // Element index of `t` for each position of `shape` (empty when t already has that layout).
  static std::vector<int64_t> broadcast_index(const Tensor& t, const Shape& shape, const std::string& label,
                                              std::string_view name) {
    const int64_t length = checked_element_count(shape, "the normalized dims");
    if (t.element_count() == length && t.rank() <= shape.size()) return {};
    if (t.rank() > shape.size() || broadcast_shapes(t.shape(), shape, label) != shape)
      throw InputError(fmt::format("{}: {} {} does not broadcast to the normalized dims {}", label, name,
                                   shape_to_string(t.shape()), shape_to_string(shape)));
    const std::vector<int64_t> strides = broadcast_strides(t.shape(), shape);
    std::vector<int64_t> index(static_cast<std::size_t>(length));
    for (std::size_t e = 0; e < index.size(); ++e) {
      int64_t rest = static_cast<int64_t>(e), offset = 0;
      for (std::size_t d = shape.size(); d-- > 0;) {
        offset += (rest % shape[d]) * strides[d];
        rest /= shape[d];
      }
      index[e] = offset;
    }
    return index;
  }

  LayerNormRows rows_fn_ = nullptr;
  std::string_view last_variant_;
  int64_t axis_ = -1;
  float epsilon_ = 1e-5f;
  InputSignature signature_;
  int64_t length_ = 0;
  std::vector<int64_t> scale_index_, bias_index_;
  Shape stat_shape_;
};

// InstanceNormalization: each (n, c) plane normalised by its own mean and variance, then
// scale[c] and B[c]; a plane is a row.
template <typename T>
class InstanceNormKernel final : public RowKernel {
 public:
  explicit InstanceNormKernel(const KernelCreateInfo& info) : RowKernel(kDefaultMinimumRows) {
    check_attributes(info, {"epsilon"});
    epsilon_ = info.float_attribute("epsilon", 1e-5f);
  }
  void run(KernelExecution& execution) override {
    const Tensor& x = execution.required_input(0);
    const Tensor& scale = execution.required_input(1);
    const Tensor& bias = execution.required_input(2);
    const std::string& label = execution.label();
    check_input_type(execution, 1, scale, ElementTraits<T>::type);
    check_input_type(execution, 2, bias, ElementTraits<T>::type);
    if (x.rank() < 3) throw InputError(fmt::format("{}: X {} must have rank 3 or more", label, shape_to_string(x.shape())));
    const int64_t channels = x.shape()[1];
    if (scale.element_count() != channels || bias.element_count() != channels)
      throw InputError(fmt::format("{}: scale {} and B {} must have {} elements", label, scale.describe(), bias.describe(), channels));
    Tensor& y = execution.output(0, ElementTraits<T>::type, x.shape());
    if (x.element_count() == 0) return;  // and its dims' products may overflow beside the zero
    int64_t length = 1;
    for (std::size_t d = 2; d < x.rank(); ++d) length *= x.shape()[d];
    const int64_t rows = x.shape()[0] * channels;
    const T* in = x.data<T>();
    T* out = y.data<T>();
    using C = compute_t<T>;
    execution.parallel_for(rows, 1, admitted_rows(rows, execution), [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) {
        const T* row = in + r * length;
        const auto [mean, squares] = row_moments<T>(row, length);
        const C factor = load<T>(scale.data<T>()[r % channels]) /
                         std::sqrt(squares / static_cast<C>(length) + static_cast<C>(epsilon_));
        const C shift = load<T>(bias.data<T>()[r % channels]);
        for (int64_t i = 0; i < length; ++i) out[r * length + i] = store<T>((load<T>(row[i]) - mean) * factor + shift);
      }
    });
  }

 private:
  float epsilon_ = 1e-5f;
};

// MeanVarianceNormalization: y = (x - mean) / (sqrt(mean(x^2) - mean^2) + 1e-9) over `axes`
// (default 0, 2, 3), as ONNX's function body computes it; statistics in double.
template <typename T>
class MeanVarianceNormKernel final : public ThresholdKernel {
 public:
  explicit MeanVarianceNormKernel(const KernelCreateInfo& info) : ThresholdKernel(kDefaultMinimumElements) {
    check_attributes(info, {"axes"});
    axes_ = info.has_attribute("axes") ? info.ints_attribute("axes") : std::vector<int64_t>{0, 2, 3};
  }
  void run(KernelExecution& execution) override {
    const Tensor& x = execution.required_input(0);
    const std::string& label = execution.label();
    std::vector<bool> reduced(x.rank(), false);
    for (int64_t a : axes_) reduced[static_cast<std::size_t>(normalize_axis(a, static_cast<int64_t>(x.rank()), label))] = true;
    // Group of element e: its index over the kept dims.
    const std::vector<int64_t> strides = row_major_strides(x.shape());
    int64_t groups = 1;
    for (std::size_t d = 0; d < x.rank(); ++d)
      if (!reduced[d]) groups *= x.shape()[d];
    auto group_of = [&](int64_t e) {
      int64_t g = 0;
      for (std::size_t d = 0; d < x.rank(); ++d)
        if (!reduced[d]) g = g * x.shape()[d] + (e / strides[d]) % x.shape()[d];
      return g;
    };
    std::vector<double> sum(static_cast<std::size_t>(groups)), squares(static_cast<std::size_t>(groups));
    const T* in = x.data<T>();
    for (int64_t e = 0; e < x.element_count(); ++e) {
      const auto g = static_cast<std::size_t>(group_of(e));
      const auto v = static_cast<double>(load<T>(in[e]));
      sum[g] += v;
      squares[g] += v * v;
    }
    const double count = groups == 0 ? 1.0 : static_cast<double>(x.element_count()) / static_cast<double>(groups);
    Tensor& y = checked_output(execution, 0, x.element_type(), x.shape(), false);
    T* out = y.data<T>();
    for (int64_t e = 0; e < x.element_count(); ++e) {
      const auto g = static_cast<std::size_t>(group_of(e));
      const double mean = sum[g] / count;
      const double deviation = std::sqrt(std::max(0.0, squares[g] / count - mean * mean));
      out[e] = store<T>(static_cast<compute_t<T>>((static_cast<double>(load<T>(in[e])) - mean) / (deviation + 1e-9)));
    }
  }

 private:
  std::vector<int64_t> axes_;
};

// LRN over channels (dim 1): y = x / (bias + alpha / size * sum of x^2 over the channel window)^beta.
template <typename T>
class LrnKernel final : public ThresholdKernel {
 public:
  explicit LrnKernel(const KernelCreateInfo& info) : ThresholdKernel(kDefaultMinimumElements) {
    check_attributes(info, {"alpha", "beta", "bias", "size"});
    alpha_ = info.float_attribute("alpha", 1e-4f);
    beta_ = info.float_attribute("beta", 0.75f);
    bias_ = info.float_attribute("bias", 1.0f);
    size_ = info.int_attribute("size", 0);
    if (size_ < 1) throw ModelError(fmt::format("{}: attribute 'size' must be a positive count", info.node_label()));
  }
  void run(KernelExecution& execution) override {
    const Tensor& x = execution.required_input(0);
    if (x.rank() < 3)
      throw InputError(fmt::format("{}: input must be [N, C, ...], not {}", execution.label(), shape_to_string(x.shape())));
    const int64_t n = x.shape()[0], c = x.shape()[1], plane = x.element_count() / std::max<int64_t>(1, n * c);
    const int64_t before = (size_ - 1) / 2, after = size_ - 1 - before;
    Tensor& y = checked_output(execution, 0, x.element_type(), x.shape(), false);
    const T* in = x.data<T>();
    T* out = y.data<T>();
    for (int64_t b = 0; b < n; ++b)
      for (int64_t ch = 0; ch < c; ++ch)
        for (int64_t p = 0; p < plane; ++p) {
          double squares = 0;
          for (int64_t k = std::max<int64_t>(0, ch - before); k <= std::min(c - 1, ch + after); ++k) {
            const auto v = static_cast<double>(load<T>(in[(b * c + k) * plane + p]));
            squares += v * v;
          }
          const int64_t at = (b * c + ch) * plane + p;
          const double scale = std::pow(static_cast<double>(bias_) + static_cast<double>(alpha_) / static_cast<double>(size_) * squares,
                                        static_cast<double>(beta_));
          out[at] = store<T>(static_cast<compute_t<T>>(static_cast<double>(load<T>(in[at])) / scale));
        }
  }

 private:
  float alpha_ = 1e-4f, beta_ = 0.75f, bias_ = 1.0f;
  int64_t size_ = 0;
};

// LayerNormalization of element type T with one implementation ("portable": rows_fn nullptr).
template <typename T>
void add_layer_norm(KernelTable& table, const char* implementation, LayerNormRows rows_fn,
                    std::string (*unavailable)(const CpuFeatures&)) {
  constexpr ElementType type = ElementTraits<T>::type;
  KernelDef layer = make_def("LayerNormalization", {17}, type,
                             row_threshold_schema(elementwise_key("LayerNormalization", type, 1, implementation),
                                                  kDefaultMinimumRows));
  layer.implementation = implementation;
  if (unavailable != nullptr) layer.unavailable_reason = unavailable;
  layer.create = [rows_fn](const KernelCreateInfo& info) -> std::unique_ptr<Kernel> {
    return std::make_unique<LayerNormKernel<T>>(info, rows_fn);
  };
  layer.calibration_workload = [](int64_t rows, int, uint32_t seed) {
    constexpr ElementType element = ElementTraits<T>::type;  // not captured: clang 14 and GCC disagree on constexpr captures
    const Shape shape{std::max<int64_t>(1, rows), 64};
    return one_node_workload("LayerNormalization", 17, "",
                             {{"x", random_tensor(element, shape, seed)},
                              {"scale", random_tensor(element, {64}, seed + 1)},
                              {"b", random_tensor(element, {64}, seed + 2)}},
                             {{"y", element, shape}}, shape[0]);
  };
  layer.output_types = [](const KernelCreateInfo&) {
    return std::vector<ElementType>{ElementTraits<T>::type, ElementType::float32, ElementType::float32};
  };
  table.add(std::move(layer));
}

}  // namespace

void register_normalization_kernels(KernelTable& table) {
  for_each_type<float, double, Float16, BFloat16>([&](auto t) {
    using T = decltype(t);
    constexpr ElementType type = ElementTraits<T>::type;
    KernelDef batch = make_def("BatchNormalization", {7}, type,
                               parallel_threshold_schema(elementwise_key("BatchNormalization", type, 1), kDefaultMinimumElements));
    batch.create = [](const KernelCreateInfo& info) -> std::unique_ptr<Kernel> {
      return std::make_unique<BatchNormKernel<T>>(info);
    };
    batch.calibration_workload = [](int64_t n, int, uint32_t seed) {
      constexpr ElementType element = ElementTraits<T>::type;  // not captured: clang 14 and GCC disagree on constexpr captures
      const int64_t channels = std::max<int64_t>(1, n / 64);
      Tensor variance(element, {channels});
      for (int64_t c = 0; c < channels; ++c) variance.data<T>()[c] = store<T>(compute_t<T>(1));
      return one_node_workload("BatchNormalization", 15, "",
                               {{"x", random_tensor(element, {1, channels, 8, 8}, seed)},
                                {"scale", random_tensor(element, {channels}, seed + 1)},
                                {"b", random_tensor(element, {channels}, seed + 2)},
                                {"mean", random_tensor(element, {channels}, seed + 3)},
                                {"var", std::move(variance)}},
                               {{"y", element, {1, channels, 8, 8}}}, channels * 64);
    };
    table.add(std::move(batch));
#if defined(ONNX_LIGHT_X86_SIMD)
    // Preference order: the widest unit first, the portable reference last.
    if constexpr (std::is_same_v<T, float>) {
      add_layer_norm<T>(table, "avx512", simd::layer_norm_rows_f32_avx512, needs_avx512);
      add_layer_norm<T>(table, "avx2", simd::layer_norm_rows_f32_avx2, needs_avx2_fma);
    }
#endif
    add_layer_norm<T>(table, "portable", nullptr, nullptr);
    KernelDef mvn = make_def("MeanVarianceNormalization", {9}, type,
                             parallel_threshold_schema(elementwise_key("MeanVarianceNormalization", type, 1),
                                                       kDefaultMinimumElements));
    mvn.create = [](const KernelCreateInfo& info) -> std::unique_ptr<Kernel> {
      return std::make_unique<MeanVarianceNormKernel<T>>(info);
    };
    table.add(std::move(mvn));
    KernelDef lrn = make_def("LRN", {1}, type,
                             parallel_threshold_schema(elementwise_key("LRN", type, 1), kDefaultMinimumElements));
    lrn.create = [](const KernelCreateInfo& info) -> std::unique_ptr<Kernel> { return std::make_unique<LrnKernel<T>>(info); };
    table.add(std::move(lrn));
    KernelDef instance = make_def("InstanceNormalization", {6}, type,
                                  row_threshold_schema(elementwise_key("InstanceNormalization", type, 1), kDefaultMinimumRows));
    instance.create = [](const KernelCreateInfo& info) -> std::unique_ptr<Kernel> {
      return std::make_unique<InstanceNormKernel<T>>(info);
    };
    instance.calibration_workload = [](int64_t rows, int, uint32_t seed) {
      const int64_t planes = std::max<int64_t>(1, rows);
      return one_node_workload("InstanceNormalization", 6, "",
                               {{"x", random_tensor(type, {1, planes, 8, 8}, seed)},
                                {"scale", random_tensor(type, {planes}, seed + 1)},
                                {"b", random_tensor(type, {planes}, seed + 2)}},
                               {{"y", type, {1, planes, 8, 8}}}, planes);
    };
    table.add(std::move(instance));
  }
  );
}

}  // namespace onnx_light::runtime::kernels
