// The spectral operators of opset 17: DFT (forward and inverse, any axis, padded or truncated to
// dft_length, one-sided), STFT (frames of a batch of signals, optional window) and MelWeightMatrix.
// Transforms run in double: radix-2 for powers of two, Bluestein's chirp-z (through a power-of-two
// transform) for other lengths above a few dozen, the direct sum below. Complex values are the last
// dimension, [..., 2] (real, imaginary); a real input has [..., 1].
#include <algorithm>
#include <cmath>
#include <complex>
#include <cstdint>
#include <numbers>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "kernels/element_traits.h"
#include "kernels/elementwise.h"
#include "kernels/kernel_families.h"
#include "kernels/kernel_util.h"
#include "onnx_light/runtime/error.h"

namespace onnx_light::runtime::kernels {

namespace {

using Complex = std::complex<double>;

bool power_of_two(int64_t n) { return n > 0 && (n & (n - 1)) == 0; }

// Below this length a non-power-of-two transform is the direct sum (n^2 with a twiddle table).
constexpr int64_t kDirectBelow = 64;

// out[k] = sum_j in[j] e^(sign 2 pi i j k / n), sign -1 forward, +1 inverse (no 1/n scaling).
// Built once per length and direction; `transform` is const and reentrant (scratch passed in).
class Fourier {
 public:
  Fourier(int64_t n, bool inverse) : n_(n), sign_(inverse ? 1.0 : -1.0) {
    if (n_ <= 0) return;
    if (power_of_two(n_)) {
      twiddles_ = unit_roots(n_, sign_);
    } else if (n_ < kDirectBelow) {
      twiddles_ = unit_roots(n_, sign_);
    } else {
      // Bluestein: jk = (j^2 + k^2 - (k - j)^2) / 2, so the transform is a convolution with a chirp.
      m_ = 1;
      while (m_ < 2 * n_ - 1) m_ *= 2;
      chirp_.resize(static_cast<std::size_t>(n_));
      for (int64_t j = 0; j < n_; ++j) {
        const int64_t square = (j * j) % (2 * n_);  // exact angle for large j
        chirp_[static_cast<std::size_t>(j)] =
            std::polar(1.0, sign_ * std::numbers::pi * static_cast<double>(square) / static_cast<double>(n_));
      }
      inner_forward_ = unit_roots(m_, -1.0);
      inner_inverse_ = unit_roots(m_, 1.0);
      kernel_.assign(static_cast<std::size_t>(m_), Complex{});
      kernel_[0] = std::conj(chirp_[0]);
      for (int64_t j = 1; j < n_; ++j)
        kernel_[static_cast<std::size_t>(j)] = kernel_[static_cast<std::size_t>(m_ - j)] = std::conj(chirp_[static_cast<std::size_t>(j)]);
      radix2(kernel_.data(), m_, inner_forward_);
    }
  }
  int64_t length() const { return n_; }
  // Scratch of scratch_size() complex values per concurrent caller.
  std::size_t scratch_size() const { return static_cast<std::size_t>(m_ > 0 ? m_ : n_); }

  void transform(const Complex* in, Complex* out, Complex* scratch) const {
    if (n_ <= 0) return;
    if (power_of_two(n_)) {
      std::copy(in, in + n_, out);
      radix2(out, n_, twiddles_);
    } else if (m_ == 0) {
      for (int64_t k = 0; k < n_; ++k) {
        Complex s{};
        int64_t index = 0;  // j * k mod n, kept by addition
        for (int64_t j = 0; j < n_; ++j) {
          s += in[j] * twiddles_[static_cast<std::size_t>(index)];
          index += k;
          if (index >= n_) index -= n_;
        }
        out[k] = s;
      }
    } else {
      std::fill(scratch, scratch + m_, Complex{});
      for (int64_t j = 0; j < n_; ++j) scratch[j] = in[j] * chirp_[static_cast<std::size_t>(j)];
      radix2(scratch, m_, inner_forward_);
      for (int64_t j = 0; j < m_; ++j) scratch[j] *= kernel_[static_cast<std::size_t>(j)];
      radix2(scratch, m_, inner_inverse_);
      const double scale = 1.0 / static_cast<double>(m_);
      for (int64_t k = 0; k < n_; ++k) out[k] = scratch[k] * scale * chirp_[static_cast<std::size_t>(k)];
    }
  }

 private:
  static std::vector<Complex> unit_roots(int64_t n, double sign) {
    std::vector<Complex> w(static_cast<std::size_t>(n));
    for (int64_t k = 0; k < n; ++k)
      w[static_cast<std::size_t>(k)] = std::polar(1.0, sign * 2.0 * std::numbers::pi * static_cast<double>(k) / static_cast<double>(n));
    return w;
  }
  // In-place iterative radix-2 over n (a power of two) with roots w[k] = e^(sign 2 pi i k / n).
  static void radix2(Complex* a, int64_t n, const std::vector<Complex>& w) {
    for (int64_t i = 1, j = 0; i < n; ++i) {
      int64_t bit = n >> 1;
      for (; j & bit; bit >>= 1) j ^= bit;
      j ^= bit;
      if (i < j) std::swap(a[i], a[j]);
    }
    for (int64_t len = 2; len <= n; len <<= 1) {
      const int64_t step = n / len;
      for (int64_t i = 0; i < n; i += len)
        for (int64_t k = 0; k < len / 2; ++k) {
          const Complex t = a[i + k + len / 2] * w[static_cast<std::size_t>(k * step)];
          a[i + k + len / 2] = a[i + k] - t;
          a[i + k] += t;
        }
    }
  }

  int64_t n_ = 0, m_ = 0;
  double sign_;
  std::vector<Complex> twiddles_, chirp_, inner_forward_, inner_inverse_, kernel_;
};

int64_t scalar_int(const KernelExecution& execution, std::size_t index, const char* name) {
  const Tensor& t = execution.required_input(index);
  if (t.element_count() != 1)
    throw InputError(fmt::format("{}: input '{}' must hold one value, not {}", execution.label(), name, shape_to_string(t.shape())));
  const double v = read_as_double(t, 0);
  return static_cast<int64_t>(v);
}

// The complex line of `count` values from `src` (stride `stride` elements, `channels` 1 or 2 values
// each), zero-padded to `n`.
template <typename T>
void gather_line(const T* src, int64_t count, int64_t stride, int64_t channels, int64_t n, Complex* line) {
  const int64_t taken = std::min(count, n);
  for (int64_t j = 0; j < taken; ++j) {
    const T* p = src + j * stride;
    line[j] = Complex(static_cast<double>(load<T>(p[0])), channels == 2 ? static_cast<double>(load<T>(p[1])) : 0.0);
  }
  std::fill(line + taken, line + n, Complex{});
}

template <typename T>
class DftKernel final : public ThresholdKernel {
 public:
  explicit DftKernel(const KernelCreateInfo& info) : ThresholdKernel(kDefaultMinimumElements) {
    check_attributes(info, {"axis", "inverse", "onesided"});
    axis_ = info.int_attribute("axis", 1);
    inverse_ = info.int_attribute("inverse", 0) != 0;
    onesided_ = info.int_attribute("onesided", 0) != 0;
    if (inverse_ && onesided_)
      throw UnsupportedError(fmt::format("{}: inverse = 1 with onesided = 1 is not supported", info.node_label()));
  }

  void run(KernelExecution& execution) override {
    const std::string& label = execution.label();
    const Tensor& x = execution.required_input(0);
    const int64_t rank = x.rank();
    if (rank < 3 || (x.shape().back() != 1 && x.shape().back() != 2))
      throw InputError(fmt::format("{}: input must be [batch, signal dims..., 1 or 2], not {}", label, shape_to_string(x.shape())));
    // Negative axes count from the last signal dimension (rank - 2).
    const int64_t axis = axis_ < 0 ? axis_ + rank - 1 : axis_;
    if (axis < 1 || axis > rank - 2)
      throw InputError(fmt::format("{}: axis {} is not a signal dimension of {} (1..{})", label, axis_,
                                   shape_to_string(x.shape()), rank - 2));
    const int64_t count = x.shape()[static_cast<std::size_t>(axis)];
    int64_t n = count;
    if (const Tensor* length = execution.input(1); length != nullptr && length->element_count() > 0) {
      n = scalar_int(execution, 1, "dft_length");
      if (n < 1) throw InputError(fmt::format("{}: dft_length {} must be positive", label, n));
    }
    const int64_t channels = x.shape().back();
    const int64_t kept = onesided_ ? n / 2 + 1 : n;
    Shape out_shape = x.shape();
    out_shape[static_cast<std::size_t>(axis)] = kept;
    out_shape.back() = 2;
    Tensor& y = checked_output(execution, 0, x.element_type(), out_shape, false);
    if (y.element_count() == 0) return;
    int64_t outer = 1, inner = 1;
    for (int64_t d = 0; d < axis; ++d) outer *= x.shape()[static_cast<std::size_t>(d)];
    for (int64_t d = axis + 1; d < rank - 1; ++d) inner *= x.shape()[static_cast<std::size_t>(d)];
    if (!fourier_ || fourier_->length() != n) fourier_ = std::make_unique<Fourier>(n, inverse_);
    const Fourier& f = *fourier_;
    const T* in = x.data<T>();
    T* out = y.data<T>();
    const double scale = inverse_ ? 1.0 / static_cast<double>(n) : 1.0;
    const int threads = admitted(outer * inner * n, execution);
    execution.parallel_for(outer * inner, 1, threads, [&](int64_t begin, int64_t end) {
      std::vector<Complex> line(static_cast<std::size_t>(n)), spectrum(static_cast<std::size_t>(n)), scratch(f.scratch_size());
      for (int64_t l = begin; l < end; ++l) {
        const int64_t o = l / inner, i = l % inner;
        gather_line(in + (o * count * inner + i) * channels, count, inner * channels, channels, n, line.data());
        f.transform(line.data(), spectrum.data(), scratch.data());
        T* dst = out + (o * kept * inner + i) * 2;
        for (int64_t k = 0; k < kept; ++k) {
          dst[k * inner * 2] = store<T>(static_cast<compute_t<T>>(spectrum[static_cast<std::size_t>(k)].real() * scale));
          dst[k * inner * 2 + 1] = store<T>(static_cast<compute_t<T>>(spectrum[static_cast<std::size_t>(k)].imag() * scale));
        }
      }
    });
  }

 private:
  int64_t axis_ = 1;
  bool inverse_ = false, onesided_ = false;
  std::unique_ptr<Fourier> fourier_;
};

template <typename T>
class StftKernel final : public ThresholdKernel {
 public:
  explicit StftKernel(const KernelCreateInfo& info) : ThresholdKernel(kDefaultMinimumElements) {
    check_attributes(info, {"onesided"});
    onesided_ = info.int_attribute("onesided", 1) != 0;
  }

  void run(KernelExecution& execution) override {
    const std::string& label = execution.label();
    const Tensor& signal = execution.required_input(0);
    if (signal.rank() != 3 || (signal.shape()[2] != 1 && signal.shape()[2] != 2))
      throw InputError(fmt::format("{}: signal must be [batch, length, 1 or 2], not {}", label, shape_to_string(signal.shape())));
    const int64_t step = scalar_int(execution, 1, "frame_step");
    if (step < 1) throw InputError(fmt::format("{}: frame_step {} must be positive", label, step));
    const Tensor* window = execution.input(2);
    const Tensor* length_input = execution.input(3);
    int64_t frame_length = -1;
    if (length_input != nullptr && length_input->element_count() > 0) frame_length = scalar_int(execution, 3, "frame_length");
    if (window != nullptr) {
      if (window->rank() != 1)
        throw InputError(fmt::format("{}: window must be 1-D, not {}", label, shape_to_string(window->shape())));
      if (window->element_type() != signal.element_type())
        throw InputError(fmt::format("{}: window has element type {} but the signal {}", label,
                                     element_type_name(window->element_type()), element_type_name(signal.element_type())));
      if (frame_length >= 0 && frame_length != window->shape()[0])
        throw InputError(fmt::format("{}: frame_length {} disagrees with the window's {} samples", label, frame_length,
                                     window->shape()[0]));
      frame_length = window->shape()[0];
    }
    if (frame_length < 0) throw InputError(fmt::format("{}: give a window or a frame_length", label));
    if (frame_length < 1) throw InputError(fmt::format("{}: frame_length {} must be positive", label, frame_length));
    const int64_t batch = signal.shape()[0], samples = signal.shape()[1], channels = signal.shape()[2];
    if (frame_length > samples)
      throw InputError(fmt::format("{}: frame_length {} is longer than the signal's {} samples", label, frame_length, samples));
    const int64_t frames = (samples - frame_length) / step + 1;
    const int64_t bins = onesided_ ? frame_length / 2 + 1 : frame_length;
    Tensor& y = checked_output(execution, 0, signal.element_type(), {batch, frames, bins, 2}, false);
    if (y.element_count() == 0) return;
    if (!fourier_ || fourier_->length() != frame_length) fourier_ = std::make_unique<Fourier>(frame_length, false);
    const Fourier& f = *fourier_;
    const T* in = signal.data<T>();
    const T* w = window != nullptr ? window->data<T>() : nullptr;
    T* out = y.data<T>();
    const int threads = admitted(batch * frames * frame_length, execution);
    execution.parallel_for(batch * frames, 1, threads, [&](int64_t begin, int64_t end) {
      std::vector<Complex> line(static_cast<std::size_t>(frame_length)), spectrum(line.size()), scratch(f.scratch_size());
      for (int64_t task = begin; task < end; ++task) {
        const int64_t b = task / frames, frame = task % frames;
        gather_line(in + (b * samples + frame * step) * channels, frame_length, channels, channels, frame_length, line.data());
        if (w != nullptr)
          for (int64_t j = 0; j < frame_length; ++j) line[static_cast<std::size_t>(j)] *= static_cast<double>(load<T>(w[j]));
        f.transform(line.data(), spectrum.data(), scratch.data());
        T* dst = out + task * bins * 2;
        for (int64_t k = 0; k < bins; ++k) {
          dst[2 * k] = store<T>(static_cast<compute_t<T>>(spectrum[static_cast<std::size_t>(k)].real()));
          dst[2 * k + 1] = store<T>(static_cast<compute_t<T>>(spectrum[static_cast<std::size_t>(k)].imag()));
        }
      }
    });
  }

 private:
  bool onesided_ = true;
  std::unique_ptr<Fourier> fourier_;
};

ElementType mel_output_type(const KernelCreateInfo& info) {
  const int64_t dtype = info.int_attribute("output_datatype", static_cast<int64_t>(ElementType::float32));
  for (ElementType t : {ElementType::float32, ElementType::float64, ElementType::float16, ElementType::bfloat16})
    if (static_cast<int64_t>(t) == dtype) return t;
  throw UnsupportedError(fmt::format("{}: output_datatype {} is not supported (float types only)", info.node_label(), dtype));
}

// The triangular filters of ONNX's reference: num_mel_bins + 2 points equally spaced in mel
// (2595 log10(1 + f / 700)) from lower to upper edge, mapped to DFT bins floor((dft_length + 1) f /
// sample_rate), each filter rising from its left point to its centre and falling to its right.
class MelWeightMatrixKernel final : public Kernel {
 public:
  explicit MelWeightMatrixKernel(const KernelCreateInfo& info) : type_(mel_output_type(info)) {
    check_attributes(info, {"output_datatype"});
  }

  void run(KernelExecution& execution) override {
    const std::string& label = execution.label();
    const int64_t mel_bins = scalar_int(execution, 0, "num_mel_bins");
    const int64_t dft_length = scalar_int(execution, 1, "dft_length");
    const int64_t sample_rate = scalar_int(execution, 2, "sample_rate");
    auto scalar_float = [&](std::size_t index, const char* name) {
      const Tensor& t = execution.required_input(index);
      if (t.element_count() != 1)
        throw InputError(fmt::format("{}: input '{}' must hold one value, not {}", label, name, shape_to_string(t.shape())));
      return read_as_double(t, 0);
    };
    const double lower = scalar_float(3, "lower_edge_hertz"), upper = scalar_float(4, "upper_edge_hertz");
    if (mel_bins < 1 || dft_length < 1 || sample_rate < 1)
      throw InputError(fmt::format("{}: num_mel_bins {}, dft_length {} and sample_rate {} must be positive", label, mel_bins,
                                   dft_length, sample_rate));
    if (!(lower >= 0.0) || !(upper > lower) || upper > static_cast<double>(sample_rate) / 2.0)
      throw InputError(fmt::format("{}: edges {} .. {} Hz must satisfy 0 <= lower < upper <= sample_rate / 2 = {}", label,
                                   lower, upper, static_cast<double>(sample_rate) / 2.0));
    const int64_t spectrogram_bins = dft_length / 2 + 1;
    auto mel = [](double hz) { return 2595.0 * std::log10(1.0 + hz / 700.0); };
    const double low_mel = mel(lower), step = (mel(upper) - low_mel) / static_cast<double>(mel_bins + 2);
    std::vector<int64_t> points(static_cast<std::size_t>(mel_bins + 2));
    for (int64_t i = 0; i < mel_bins + 2; ++i) {
      const double hz = 700.0 * (std::pow(10.0, (static_cast<double>(i) * step + low_mel) / 2595.0) - 1.0);
      points[static_cast<std::size_t>(i)] =
          static_cast<int64_t>(std::floor(static_cast<double>(dft_length + 1) * hz / static_cast<double>(sample_rate)));
    }
    std::vector<double> w(static_cast<std::size_t>(spectrogram_bins * mel_bins), 0.0);
    // An odd dft_length maps the upper edge one bin past the spectrum: that tap weighs nothing.
    double beyond = 0.0;
    auto at = [&](int64_t bin, int64_t m) -> double& {
      return bin < spectrogram_bins ? w[static_cast<std::size_t>(bin * mel_bins + m)] : beyond;
    };
    for (int64_t m = 0; m < mel_bins; ++m) {
      const int64_t left = points[static_cast<std::size_t>(m)], centre = points[static_cast<std::size_t>(m + 1)],
                    right = points[static_cast<std::size_t>(m + 2)];
      if (centre == left) {
        at(centre, m) = 1.0;
      } else {
        for (int64_t j = left; j <= centre; ++j) at(j, m) = static_cast<double>(j - left) / static_cast<double>(centre - left);
      }
      for (int64_t j = centre; j < right; ++j) at(j, m) = static_cast<double>(right - j) / static_cast<double>(right - centre);
    }
    Tensor& y = checked_output(execution, 0, type_, {spectrogram_bins, mel_bins}, false);
    for_each_type<float, double, Float16, BFloat16>([&](auto v) {
      using T = decltype(v);
      if (type_ != ElementTraits<T>::type) return;
      T* out = y.data<T>();
      for (std::size_t i = 0; i < w.size(); ++i) out[i] = store<T>(static_cast<compute_t<T>>(w[i]));
    });
  }

 private:
  ElementType type_;
};

}  // namespace

void register_spectral_kernels(KernelTable& table) {
  for_each_type<float, double>([&](auto v) {
    using T = decltype(v);
    constexpr ElementType type = ElementTraits<T>::type;
    KernelDef dft = make_def("DFT", {17}, type, parallel_threshold_schema(elementwise_key("DFT", type, 1), kDefaultMinimumElements));
    dft.create = [](const KernelCreateInfo& info) -> std::unique_ptr<Kernel> { return std::make_unique<DftKernel<T>>(info); };
    table.add(std::move(dft));
    KernelDef stft = make_def("STFT", {17}, type, parallel_threshold_schema(elementwise_key("STFT", type, 1), kDefaultMinimumElements));
    stft.create = [](const KernelCreateInfo& info) -> std::unique_ptr<Kernel> { return std::make_unique<StftKernel<T>>(info); };
    table.add(std::move(stft));
  });
  for (ElementType type : {ElementType::int32, ElementType::int64}) {
    KernelDef def = make_def("MelWeightMatrix", {17}, type,
                             parallel_threshold_schema(elementwise_key("MelWeightMatrix", type, 1), kDefaultMinimumElements));
    def.create = [](const KernelCreateInfo& info) -> std::unique_ptr<Kernel> {
      return std::make_unique<MelWeightMatrixKernel>(info);
    };
    def.output_types = [](const KernelCreateInfo& info) { return std::vector<ElementType>{mel_output_type(info)}; };
    table.add(std::move(def));
  }
}

}  // namespace onnx_light::runtime::kernels
