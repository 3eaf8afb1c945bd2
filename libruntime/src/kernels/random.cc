// Random generators: RandomUniform, RandomNormal, RandomUniformLike, RandomNormalLike, Bernoulli and
// Multinomial. Each node owns a 64-bit Mersenne Twister seeded from its `seed` attribute (the
// float's bit pattern, so seeds 1.0 and 1.5 differ) or, without one, from the system's entropy; the
// sequence continues from run to run, so two sessions of the same seeded model draw the same values
// and a session's second run draws new ones (as ONNX Runtime does). Values are drawn serially in
// element order, so they never depend on the thread count. The conversions from raw bits are ours
// (53-bit uniform doubles, Box-Muller normals), not the standard library's implementation-defined
// distributions, so a seed means the same values with every compiler.
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <numbers>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "kernels/element_traits.h"
#include "kernels/elementwise.h"
#include "kernels/dropout.h"
#include "kernels/kernel_families.h"
#include "kernels/kernel_util.h"
#include "onnx_light/runtime/error.h"

namespace onnx_light::runtime::kernels {

namespace {

class Generator {
 public:
  explicit Generator(const KernelCreateInfo& info)
      : Generator(info.has_attribute("seed")
                      ? std::optional<uint64_t>(std::bit_cast<uint32_t>(info.float_attribute("seed", 0.0f)))
                      : std::nullopt) {}
  // Dropout's seed is an integer attribute.
  explicit Generator(std::optional<uint64_t> seed) {
    if (seed) {
      engine_.seed(*seed);
    } else {
      std::random_device device;
      engine_.seed((static_cast<uint64_t>(device()) << 32) | device());
    }
  }
  // Uniform in [0, 1) with 53 random bits.
  double uniform() { return static_cast<double>(engine_() >> 11) * 0x1.0p-53; }
  // Standard normal (Box-Muller; the second value of a pair is kept for the next call).
  double normal() {
    if (spare_) {
      const double v = *spare_;
      spare_.reset();
      return v;
    }
    double u1 = uniform();
    while (u1 <= 0.0) u1 = uniform();
    const double u2 = uniform();
    const double r = std::sqrt(-2.0 * std::log(u1));
    spare_ = r * std::sin(2.0 * std::numbers::pi * u2);
    return r * std::cos(2.0 * std::numbers::pi * u2);
  }

 private:
  std::mt19937_64 engine_;
  std::optional<double> spare_;
};

constexpr ElementType kFloatTypes[] = {ElementType::float32, ElementType::float64, ElementType::float16, ElementType::bfloat16};

ElementType float_dtype(const KernelCreateInfo& info, ElementType fallback) {
  if (!info.has_attribute("dtype")) return fallback;
  const int64_t dtype = info.int_attribute("dtype", 0);
  for (ElementType t : kFloatTypes)
    if (static_cast<int64_t>(t) == dtype) return t;
  throw UnsupportedError(fmt::format("{}: dtype {} is not supported (float types only)", info.node_label(), dtype));
}

// Writes value(i) into every element of `y` (a float tensor), converting once per element.
template <typename F>
void fill_floats(Tensor& y, F&& value) {
  for_each_type<float, double, Float16, BFloat16>([&](auto v) {
    using T = decltype(v);
    if (y.element_type() != ElementTraits<T>::type) return;
    T* out = y.data<T>();
    for (int64_t i = 0; i < y.element_count(); ++i) out[i] = store<T>(static_cast<compute_t<T>>(value(i)));
  });
}

enum class Distribution { uniform, normal };

// RandomUniform / RandomNormal (shape attribute) and their *Like forms (the input's shape, and its
// type unless dtype says otherwise).
class RandomKernel final : public Kernel {
 public:
  RandomKernel(const KernelCreateInfo& info, Distribution distribution, bool like)
      : distribution_(distribution), like_(like), generator_(info) {
    const bool uniform = distribution == Distribution::uniform;
    if (like) check_attributes(info, {"dtype", "seed", uniform ? "low" : "mean", uniform ? "high" : "scale"});
    else check_attributes(info, {"dtype", "seed", "shape", uniform ? "low" : "mean", uniform ? "high" : "scale"});
    a_ = info.float_attribute(uniform ? "low" : "mean", 0.0f);
    b_ = info.float_attribute(uniform ? "high" : "scale", 1.0f);
    if (uniform && !(a_ <= b_))
      throw InputError(fmt::format("{}: low {} is above high {}", info.node_label(), a_, b_));
    if (like) {
      const ElementType input = info.input_types.empty() ? ElementType::float32 : info.input_types[0];
      type_ = float_dtype(info, std::find(std::begin(kFloatTypes), std::end(kFloatTypes), input) != std::end(kFloatTypes)
                                    ? input
                                    : ElementType::float32);
      if (!info.has_attribute("dtype") && type_ != input)
        throw InputError(fmt::format("{}: the input is {}, not a float type: give dtype", info.node_label(),
                                     element_type_name(input)));
    } else {
      type_ = float_dtype(info, ElementType::float32);
      if (!info.has_attribute("shape"))
        throw InputError(fmt::format("{}: attribute 'shape' is required", info.node_label()));
      for (int64_t d : info.ints_attribute("shape")) {
        if (d < 0) throw InputError(fmt::format("{}: shape has a negative dimension {}", info.node_label(), d));
        shape_.push_back(d);
      }
    }
  }

  void run(KernelExecution& execution) override {
    const Shape shape = like_ ? execution.required_input(0).shape() : shape_;
    Tensor& y = checked_output(execution, 0, type_, shape, false);
    if (distribution_ == Distribution::uniform)
      fill_floats(y, [&](int64_t) { return a_ + (b_ - a_) * generator_.uniform(); });
    else
      fill_floats(y, [&](int64_t) { return a_ + b_ * generator_.normal(); });
  }
  ElementType type() const { return type_; }

 private:
  Distribution distribution_;
  bool like_;
  Generator generator_;
  double a_ = 0, b_ = 1;
  ElementType type_ = ElementType::float32;
  Shape shape_;
};

ElementType any_numeric_dtype(const KernelCreateInfo& info, ElementType fallback) {
  if (!info.has_attribute("dtype")) return fallback;
  const int64_t dtype = info.int_attribute("dtype", 0);
  for (ElementType t : {ElementType::float32, ElementType::float64, ElementType::float16, ElementType::bfloat16,
                        ElementType::int8, ElementType::int16, ElementType::int32, ElementType::int64, ElementType::uint8,
                        ElementType::uint16, ElementType::uint32, ElementType::uint64, ElementType::boolean})
    if (static_cast<int64_t>(t) == dtype) return t;
  throw UnsupportedError(fmt::format("{}: dtype {} is not supported", info.node_label(), dtype));
}

// y = 1 with probability x (a float in [0, 1]), else 0, in dtype (default: x's type).
class BernoulliKernel final : public Kernel {
 public:
  explicit BernoulliKernel(const KernelCreateInfo& info)
      : generator_(info), type_(any_numeric_dtype(info, info.input_types.empty() ? ElementType::float32 : info.input_types[0])) {
    check_attributes(info, {"dtype", "seed"});
  }
  void run(KernelExecution& execution) override {
    const Tensor& x = execution.required_input(0);
    Tensor& y = checked_output(execution, 0, type_, x.shape(), false);
    std::vector<double> p(static_cast<std::size_t>(x.element_count()));
    for (int64_t i = 0; i < x.element_count(); ++i) {
      p[static_cast<std::size_t>(i)] = read_as_double(x, i);
      if (!(p[static_cast<std::size_t>(i)] >= 0.0 && p[static_cast<std::size_t>(i)] <= 1.0))
        throw InputError(fmt::format("{}: probability {} at element {} is outside [0, 1]", execution.label(),
                                     p[static_cast<std::size_t>(i)], i));
    }
    for_each_type<float, double, Float16, BFloat16, int8_t, int16_t, int32_t, int64_t, uint8_t, uint16_t, uint32_t,
                  uint64_t, bool>([&](auto v) {
      using T = decltype(v);
      if (type_ != ElementTraits<T>::type) return;
      T* out = y.data<T>();
      for (std::size_t i = 0; i < p.size(); ++i) out[i] = store<T>(static_cast<compute_t<T>>(generator_.uniform() < p[i]));
    });
  }

 private:
  Generator generator_;
  ElementType type_;
};

// Per batch row of unnormalized log-probabilities [batch, classes], sample_size class indices.
class MultinomialKernel final : public Kernel {
 public:
  explicit MultinomialKernel(const KernelCreateInfo& info) : generator_(info) {
    check_attributes(info, {"dtype", "sample_size", "seed"});
    samples_ = info.int_attribute("sample_size", 1);
    if (samples_ < 0) throw InputError(fmt::format("{}: sample_size {} is negative", info.node_label(), samples_));
    const int64_t dtype = info.int_attribute("dtype", static_cast<int64_t>(ElementType::int32));
    if (dtype != static_cast<int64_t>(ElementType::int32) && dtype != static_cast<int64_t>(ElementType::int64))
      throw UnsupportedError(fmt::format("{}: dtype {} is not supported (int32 or int64)", info.node_label(), dtype));
    type_ = static_cast<ElementType>(dtype);
  }
  void run(KernelExecution& execution) override {
    const Tensor& x = execution.required_input(0);
    if (x.rank() != 2)
      throw InputError(fmt::format("{}: input must be [batch, classes], not {}", execution.label(), shape_to_string(x.shape())));
    const int64_t batch = x.shape()[0], classes = x.shape()[1];
    if (classes == 0 && samples_ > 0 && batch > 0)
      throw InputError(fmt::format("{}: no classes to sample from", execution.label()));
    Tensor& y = checked_output(execution, 0, type_, {batch, samples_}, false);
    std::vector<double> cumulative(static_cast<std::size_t>(classes));
    for (int64_t b = 0; b < batch; ++b) {
      double largest = -INFINITY;
      for (int64_t c = 0; c < classes; ++c) largest = std::max(largest, read_as_double(x, b * classes + c));
      double total = 0;
      for (int64_t c = 0; c < classes; ++c) {
        total += std::exp(read_as_double(x, b * classes + c) - largest);
        cumulative[static_cast<std::size_t>(c)] = total;
      }
      if (!(total > 0.0) || !std::isfinite(total))
        throw InputError(fmt::format("{}: row {} has no finite probabilities", execution.label(), b));
      for (int64_t s = 0; s < samples_; ++s) {
        const double u = generator_.uniform() * total;
        const auto it = std::upper_bound(cumulative.begin(), cumulative.end(), u);
        const int64_t index = std::min<int64_t>(it - cumulative.begin(), classes - 1);
        if (type_ == ElementType::int32) y.data<int32_t>()[b * samples_ + s] = static_cast<int32_t>(index);
        else y.data<int64_t>()[b * samples_ + s] = index;
      }
    }
  }

 private:
  Generator generator_;
  int64_t samples_ = 1;
  ElementType type_ = ElementType::int32;
};

TuningSchema random_schema(const std::string& op, ElementType type) {
  return parallel_threshold_schema(elementwise_key(op, type, 1), kDefaultMinimumElements);
}

// Dropout. Inference (no training_mode input, a false one, or ratio 0): y = x and an all-true
// mask. Training (training_mode true at run time, opset 12+): each element is kept with
// probability 1 - ratio, drawn serially in element order from the node's generator (the integer
// `seed` attribute, else entropy), and y = x / (1 - ratio) where kept, 0 elsewhere.
template <typename T>
class DropoutKernel final : public ThresholdKernel {
 public:
  explicit DropoutKernel(const KernelCreateInfo& info)
      : ThresholdKernel(kDefaultMinimumElements),
        generator_(info.opset >= 12 && info.has_attribute("seed")
                       ? std::optional<uint64_t>(static_cast<uint64_t>(info.int_attribute("seed", 0)))
                       : std::nullopt) {
    if (info.opset >= 12) check_attributes(info, {"seed"});
    else check_attributes(info, {"ratio"});
  }

  void run(KernelExecution& execution) override {
    const Tensor& x = execution.required_input(0);
    const std::string& label = execution.label();
    const Tensor* ratio_input = execution.input_count() > 1 ? execution.input(1) : nullptr;
    const Tensor* mode = execution.input_count() > 2 ? execution.input(2) : nullptr;
    bool training = false;
    if (mode != nullptr) {
      if (mode->element_type() != ElementType::boolean || mode->element_count() != 1)
        throw InputError(fmt::format("{}: training_mode {} must be one bool", label, mode->describe()));
      training = *mode->data<bool>();
    }
    double ratio = 0.5;
    if (ratio_input != nullptr) {
      if (ratio_input->element_count() != 1)
        throw InputError(fmt::format("{}: ratio {} must be a scalar", label, ratio_input->describe()));
      ratio = read_as_double(*ratio_input, 0);
    }
    Tensor& y = execution.output_for_overwrite(0, x.element_type(), x.shape());
    bool* mask = execution.output_count() > 1 ? execution.output(1, ElementType::boolean, x.shape()).data<bool>() : nullptr;
    const T* in = x.data<T>();
    T* out = y.data<T>();
    const int64_t n = x.element_count();
    if (!training || ratio == 0.0) {
      execution.parallel_for(n, cache_line_grain<T>(), admitted(n, execution), [&](int64_t begin, int64_t end) {
        if (end > begin) std::copy(in + begin, in + end, out + begin);
      });
      if (mask != nullptr) std::fill(mask, mask + n, true);
      return;
    }
    if (!(ratio > 0.0 && ratio < 1.0))
      throw InputError(fmt::format("{}: ratio {} must be in [0, 1) in training mode", label, ratio));
    using C = compute_t<T>;
    const C scale = static_cast<C>(1.0 / (1.0 - ratio));
    for (int64_t i = 0; i < n; ++i) {  // serial: the draws must not depend on the thread count
      const bool keep = generator_.uniform() >= ratio;
      out[i] = keep ? store<T>(load<T>(in[i]) * scale) : store<T>(C(0));
      if (mask != nullptr) mask[i] = keep;
    }
  }

 private:
  Generator generator_;
};

}  // namespace

std::unique_ptr<Kernel> create_dropout_kernel(const KernelCreateInfo& info, ElementType type) {
  std::unique_ptr<Kernel> kernel;
  for_each_type<float, double, Float16, BFloat16>([&](auto t) {
    using T = decltype(t);
    if (type == ElementTraits<T>::type) kernel = std::make_unique<DropoutKernel<T>>(info);
  });
  if (kernel == nullptr)
    throw UnsupportedError(fmt::format("{}: Dropout of {} is not supported", info.node_label(), element_type_name(type)));
  return kernel;
}

void register_random_kernels(KernelTable& table) {
  // The generators without inputs are selected by no input: one definition, output type from dtype.
  for (const auto& [op, distribution] : {std::pair{"RandomUniform", Distribution::uniform}, std::pair{"RandomNormal", Distribution::normal}}) {
    KernelDef def = make_def(op, {1}, ElementType::float32, random_schema(op, ElementType::float32));
    const Distribution d = distribution;
    def.create = [d](const KernelCreateInfo& info) -> std::unique_ptr<Kernel> { return std::make_unique<RandomKernel>(info, d, false); };
    def.output_types = [](const KernelCreateInfo& info) { return std::vector<ElementType>{float_dtype(info, ElementType::float32)}; };
    table.add(std::move(def));
  }
  const std::vector<ElementType> any = {ElementType::float32, ElementType::float64, ElementType::float16, ElementType::bfloat16,
                                        ElementType::int8,    ElementType::int16,   ElementType::int32,   ElementType::int64,
                                        ElementType::uint8,   ElementType::uint16,  ElementType::uint32,  ElementType::uint64,
                                        ElementType::boolean};
  for (const auto& [op, distribution] : {std::pair{"RandomUniformLike", Distribution::uniform}, std::pair{"RandomNormalLike", Distribution::normal}}) {
    for (ElementType type : any) {
      KernelDef def = make_def(op, {1}, type, random_schema(op, type));
      const Distribution d = distribution;
      def.create = [d](const KernelCreateInfo& info) -> std::unique_ptr<Kernel> { return std::make_unique<RandomKernel>(info, d, true); };
      def.output_types = [](const KernelCreateInfo& info) {
        const ElementType input = info.input_types.empty() ? ElementType::float32 : info.input_types[0];
        const bool is_float = std::find(std::begin(kFloatTypes), std::end(kFloatTypes), input) != std::end(kFloatTypes);
        return std::vector<ElementType>{float_dtype(info, is_float ? input : ElementType::float32)};
      };
      table.add(std::move(def));
    }
  }
  for (ElementType type : {ElementType::float32, ElementType::float64, ElementType::float16, ElementType::bfloat16}) {
    KernelDef bernoulli = make_def("Bernoulli", {15}, type, random_schema("Bernoulli", type));
    bernoulli.create = [](const KernelCreateInfo& info) -> std::unique_ptr<Kernel> { return std::make_unique<BernoulliKernel>(info); };
    bernoulli.output_types = [](const KernelCreateInfo& info) {
      return std::vector<ElementType>{any_numeric_dtype(info, info.input_types.empty() ? ElementType::float32 : info.input_types[0])};
    };
    table.add(std::move(bernoulli));
    KernelDef multinomial = make_def("Multinomial", {7}, type, random_schema("Multinomial", type));
    multinomial.create = [](const KernelCreateInfo& info) -> std::unique_ptr<Kernel> { return std::make_unique<MultinomialKernel>(info); };
    multinomial.output_types = [](const KernelCreateInfo& info) {
      return std::vector<ElementType>{static_cast<ElementType>(info.int_attribute("dtype", static_cast<int64_t>(ElementType::int32)))};
    };
    table.add(std::move(multinomial));
  }
}

}  // namespace onnx_light::runtime::kernels
