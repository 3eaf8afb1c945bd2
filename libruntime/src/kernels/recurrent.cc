// The recurrent operators LSTM, GRU and RNN (ai.onnx 7 and 14: directions, activations with
// activation_alpha/beta, clip, input_forget, linear_before_reset, sequence_lens, initial states,
// peepholes, layout 0 and 1, any of Y / Y_h / Y_c omitted). Portable, float32 and float64.
//
// Per direction: the input projection X_t W^T + Wb (+ Rb) of every step is computed up front
// (rows seq*batch, one dot product per gate unit), then each step adds H_{t-1} R^T and applies the
// gate math. Every dot product is computed by one thread in a fixed order, and the gate math is
// serial, so results are bit-identical whatever the thread count. Scratch lives in the kernel and
// is resized only when the shapes grow.
//
// float32 on AVX2 / AVX-512 hosts ("avx2" / "avx512" implementations): both products run on the
// packed GEMM driver (packed_gemm.h) instead of one dot product per gate unit, W^T and R^T packed
// once when they are constants: the input projection as one GEMM over every step, each step's
// recurrent product as an M = batch GEMM (GRU without linear_before_reset keeps the dot products
// for its two-part recurrent product). Bit-identical across thread counts as the driver is.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>
#include <functional>
#include <new>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include <fmt/format.h>

#include "checked_math.h"
#include "kernels/element_traits.h"
#include "kernels/elementwise.h"
#include "kernels/kernel_families.h"
#include "kernels/isa_requirements.h"
#include "kernels/kernel_util.h"
#include "kernels/packed_gemm.h"
#include "kernels/simd/softmax_f32.h"
#include "onnx_light/runtime/error.h"

namespace onnx_light::runtime::kernels {

namespace {

enum class Cell { lstm, gru, rnn };

const char* cell_name(Cell cell) {
  switch (cell) {
    case Cell::lstm: return "LSTM";
    case Cell::gru: return "GRU";
    default: return "RNN";
  }
}
// Gates per hidden unit (rows of W per direction = gates * hidden_size) and activations per direction.
int64_t gate_count(Cell cell) { return cell == Cell::lstm ? 4 : cell == Cell::gru ? 3 : 1; }
std::size_t activation_count(Cell cell) { return cell == Cell::lstm ? 3 : cell == Cell::gru ? 2 : 1; }

enum class ActivationKind { relu, tanh, sigmoid, affine, leaky_relu, thresholded_relu, scaled_tanh, hard_sigmoid, elu,
                            softsign, softplus };

struct Activation {
  ActivationKind kind = ActivationKind::sigmoid;
  double alpha = 0, beta = 0;

  template <typename C>
  C operator()(C x) const {
    const C a = static_cast<C>(alpha), b = static_cast<C>(beta);
    switch (kind) {
      case ActivationKind::relu: return x > C(0) ? x : C(0);
      case ActivationKind::tanh: return std::tanh(x);
      case ActivationKind::sigmoid: return C(1) / (C(1) + std::exp(-x));
      case ActivationKind::affine: return a * x + b;
      case ActivationKind::leaky_relu: return x < C(0) ? a * x : x;
      case ActivationKind::thresholded_relu: return x > a ? x : C(0);
      case ActivationKind::scaled_tanh: return a * std::tanh(b * x);
      case ActivationKind::hard_sigmoid: return std::max(C(0), std::min(C(1), a * x + b));
      case ActivationKind::elu: return x < C(0) ? a * (std::exp(x) - C(1)) : x;
      case ActivationKind::softsign: return x / (C(1) + std::abs(x));
      default: return std::log1p(std::exp(x));  // softplus
    }
  }
};

// An activation by its ONNX name (any case), with how many of activation_alpha / activation_beta
// it takes and their defaults (the values ONNX Runtime uses when the lists run short).
struct ActivationSpec {
  const char* name;
  ActivationKind kind;
  int parameters;  // 0: none, 1: alpha, 2: alpha and beta
  double alpha, beta;
};
constexpr ActivationSpec kActivations[] = {
    {"relu", ActivationKind::relu, 0, 0, 0},
    {"tanh", ActivationKind::tanh, 0, 0, 0},
    {"sigmoid", ActivationKind::sigmoid, 0, 0, 0},
    {"affine", ActivationKind::affine, 2, 1.0, 0.0},
    {"leakyrelu", ActivationKind::leaky_relu, 1, 0.01, 0},
    {"thresholdedrelu", ActivationKind::thresholded_relu, 1, 1.0, 0},
    {"scaledtanh", ActivationKind::scaled_tanh, 2, 1.0, 1.0},
    {"hardsigmoid", ActivationKind::hard_sigmoid, 2, 0.2, 0.5},
    {"elu", ActivationKind::elu, 1, 1.0, 0},
    {"softsign", ActivationKind::softsign, 0, 0, 0},
    {"softplus", ActivationKind::softplus, 0, 0, 0},
};

std::vector<float> floats_attribute(const KernelCreateInfo& info, std::string_view name) {
  const onnx::AttributeProto* a = info.attribute(name);
  if (a == nullptr) return {};
  return {a->floats().begin(), a->floats().end()};
}

// Attributes, validated once at creation.
struct RecurrentAttributes {
  Cell cell = Cell::lstm;
  int64_t directions = 1;
  bool reverse = false;  // with directions 1
  int64_t hidden_size = -1;  // -1: taken from R
  std::vector<Activation> activations;  // activation_count(cell) per direction
  std::optional<double> clip;
  bool input_forget = false;
  bool linear_before_reset = false;
  int64_t layout = 0;
  bool want_y = true, want_h = true, want_c = true;

  RecurrentAttributes(const KernelCreateInfo& info, Cell c) : cell(c) {
    const std::string label = info.node_label();
    std::vector<std::string_view> known{"activation_alpha", "activation_beta", "activations", "clip", "direction",
                                        "hidden_size"};
    if (cell == Cell::lstm) known.push_back("input_forget");
    if (cell == Cell::gru) known.push_back("linear_before_reset");
    if (info.opset >= 14) known.push_back("layout");
    for (const auto& a : info.node.attribute())
      if (std::find(known.begin(), known.end(), a.name()) == known.end())
        throw UnsupportedError(fmt::format("{}: attribute '{}' is not supported", label, a.name()));

    const std::string direction = info.string_attribute("direction", "forward");
    if (direction == "forward") directions = 1;
    else if (direction == "reverse") directions = 1, reverse = true;
    else if (direction == "bidirectional") directions = 2;
    else throw ModelError(fmt::format("{}: attribute 'direction' = \"{}\" is not forward, reverse or bidirectional",
                                      label, direction));
    if (info.has_attribute("hidden_size")) {
      hidden_size = info.int_attribute("hidden_size", 0);
      if (hidden_size < 1)
        throw ModelError(fmt::format("{}: attribute 'hidden_size' = {} must be positive", label, hidden_size));
    }
    if (info.has_attribute("clip")) {
      clip = info.float_attribute("clip", 0.0f);
      if (!(*clip > 0.0)) throw ModelError(fmt::format("{}: attribute 'clip' = {} must be positive", label, *clip));
    }
    const int64_t forget = info.int_attribute("input_forget", 0);
    const int64_t lbr = info.int_attribute("linear_before_reset", 0);
    layout = info.int_attribute("layout", 0);
    if (forget != 0 && forget != 1)
      throw ModelError(fmt::format("{}: attribute 'input_forget' = {} is not 0 or 1", label, forget));
    if (lbr != 0 && lbr != 1)
      throw ModelError(fmt::format("{}: attribute 'linear_before_reset' = {} is not 0 or 1", label, lbr));
    if (layout != 0 && layout != 1) throw ModelError(fmt::format("{}: attribute 'layout' = {} is not 0 or 1", label, layout));
    input_forget = forget == 1;
    linear_before_reset = lbr == 1;

    // Activations: per direction, f g h (LSTM), f g (GRU), f (RNN). One set for both directions
    // is accepted as that set twice.
    const std::size_t per = activation_count(cell);
    std::vector<std::string> names = [&] {
      std::vector<std::string> out;
      if (const onnx::AttributeProto* a = info.attribute("activations"))
        for (const auto& s : a->strings()) out.push_back(s);
      return out;
    }();
    if (names.empty()) {
      if (cell == Cell::lstm) names = {"Sigmoid", "Tanh", "Tanh"};
      else if (cell == Cell::gru) names = {"Sigmoid", "Tanh"};
      else names = {"Tanh"};
    }
    if (names.size() == per && directions == 2) {
      const std::vector<std::string> one = names;  // inserting a range of itself would be undefined
      names.insert(names.end(), one.begin(), one.end());
    }
    if (names.size() != per * static_cast<std::size_t>(directions))
      throw ModelError(fmt::format("{}: attribute 'activations' has {} names; {} {} direction(s) need {}", label,
                                   names.size(), cell_name(cell), directions, per * static_cast<std::size_t>(directions)));
    const std::vector<float> alphas = floats_attribute(info, "activation_alpha");
    const std::vector<float> betas = floats_attribute(info, "activation_beta");
    // alpha and beta are consumed in the order of the activations that take them.
    std::size_t next_alpha = 0, next_beta = 0;
    for (const std::string& name : names) {
      std::string lower(name);
      std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char ch) { return std::tolower(ch); });
      const ActivationSpec* spec = nullptr;
      for (const ActivationSpec& s : kActivations)
        if (lower == s.name) spec = &s;
      if (spec == nullptr)
        throw UnsupportedError(fmt::format("{}: activation \"{}\" is not supported (Relu, Tanh, Sigmoid, Affine, "
                                           "LeakyRelu, ThresholdedRelu, ScaledTanh, HardSigmoid, Elu, Softsign, Softplus)",
                                           label, name));
      Activation act{spec->kind, spec->alpha, spec->beta};
      if (spec->parameters >= 1 && next_alpha < alphas.size()) act.alpha = alphas[next_alpha++];
      if (spec->parameters >= 2 && next_beta < betas.size()) act.beta = betas[next_beta++];
      activations.push_back(act);
    }
    auto wanted = [&](int i) { return info.node.output_size() > i && !info.node.output(i).empty(); };
    want_y = wanted(0);
    want_h = wanted(1);
    want_c = cell == Cell::lstm && wanted(2);
    if (cell != Cell::lstm && info.node.output_size() > 2)
      throw ModelError(fmt::format("{}: {} has at most 2 outputs (Y, Y_h), not {}", label, cell_name(cell),
                                   info.node.output_size()));
  }
};

// sum_k a[k] * b[k] with eight partial sums in a fixed order (the same on every thread).
template <typename T>
T dot(const T* a, const T* b, int64_t n) {
  T s[8] = {};
  int64_t k = 0;
  for (; k + 8 <= n; k += 8)
    for (int j = 0; j < 8; ++j) s[j] += a[k + j] * b[k + j];
  for (int j = 0; k < n; ++k, ++j) s[j] += a[k] * b[k];
  return ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]));
}

TuningSchema recurrent_schema(TuningKey key) {
  return TuningSchema{std::move(key),
                      {threshold_parameter("parallel.minimum_macs", kDefaultMinimumMacs, int64_t{1} << 50,
                                           "Smallest multiply-accumulate count of one product (the input projection, "
                                           "or one step's recurrent product) run in parallel; smaller ones run on one "
                                           "thread.")}};
}

template <typename T>
class RecurrentKernel final : public Kernel {
 public:
  // `isa` (float32 only): the packed GEMM driver for both products; nullptr: the portable dot products.
  RecurrentKernel(const KernelCreateInfo& info, Cell cell, const PackedGemmIsa* isa = nullptr) : a_(info, cell), isa_(isa) {
    if constexpr (std::is_same_v<T, float>) {
      if (isa_ == nullptr) return;
      sigmoid_ = std::string_view(isa_->name) == "avx512" ? simd::sigmoid_f32_avx512 : simd::sigmoid_f32_avx2;
      auto constant = [&](std::size_t i) { return info.constant_inputs.size() > i ? info.constant_inputs[i] : nullptr; };
      // Constant weights are packed once here; others on every run.
      if (const Tensor* w = constant(1); w != nullptr && w->rank() == 3 && w->element_type() == ElementType::float32) {
        pack(*w, packed_w_, packed_w_shape_);
        w_constant_ = true;
      }
      if (const Tensor* r = constant(2); r != nullptr && r->rank() == 3 && r->element_type() == ElementType::float32) {
        pack(*r, packed_r_, packed_r_shape_);
        r_constant_ = true;
      }
    }
  }

  void apply_tuning(const TuningValues& values) override {
    read_tuning(values, "parallel.minimum_macs", minimum_macs_);
  }

  void run(KernelExecution& execution) override {
    const std::string& label = execution.label();
    constexpr ElementType type = ElementTraits<T>::type;
    const Tensor& x = execution.required_input(0);
    const Tensor& w = execution.required_input(1);
    const Tensor& r = execution.required_input(2);
    const Tensor* bias = execution.input(3);
    const Tensor* lens = execution.input(4);
    const Tensor* init_h = execution.input(5);
    const Tensor* init_c = a_.cell == Cell::lstm ? execution.input(6) : nullptr;
    const Tensor* peep = a_.cell == Cell::lstm ? execution.input(7) : nullptr;
    for (std::size_t i = 1; i < execution.input_count(); ++i)
      if (i != 4 && execution.input(i) != nullptr) check_input_type(execution, i, *execution.input(i), type);

    const int64_t dirs = a_.directions, gates = gate_count(a_.cell);
    if (x.rank() != 3) throw InputError(fmt::format("{}: X {} must have rank 3", label, x.describe()));
    const int64_t steps = a_.layout == 0 ? x.shape()[0] : x.shape()[1];
    const int64_t batch = a_.layout == 0 ? x.shape()[1] : x.shape()[0];
    const int64_t in_size = x.shape()[2];
    if (r.rank() != 3) throw InputError(fmt::format("{}: R {} must have rank 3", label, r.describe()));
    const int64_t hidden = a_.hidden_size > 0 ? a_.hidden_size : r.shape()[2];
    const int64_t rows = checked_mul(gates, hidden, "the gate rows (gates x hidden_size)");
    // Dims compared in place (a Shape built here would allocate on every run).
    auto expect = [&](const Tensor& t, const char* name, std::initializer_list<int64_t> dims) {
      if (t.rank() != dims.size() || !std::equal(dims.begin(), dims.end(), t.shape().begin()))
        throw InputError(fmt::format("{}: {} {} must have shape {} (direction {}, hidden_size {}, {} gates)", label,
                                     name, t.describe(), shape_to_string(Shape(dims)), dirs, hidden, gates));
    };
    expect(w, "W", {dirs, rows, in_size});
    expect(r, "R", {dirs, rows, hidden});
    if (bias != nullptr) expect(*bias, "B", {dirs, checked_mul(2, rows, "the bias length")});
    const int64_t s0 = a_.layout == 0 ? dirs : batch, s1 = a_.layout == 0 ? batch : dirs;
    if (init_h != nullptr) expect(*init_h, "initial_h", {s0, s1, hidden});
    if (init_c != nullptr) expect(*init_c, "initial_c", {s0, s1, hidden});
    if (peep != nullptr) expect(*peep, "P", {dirs, checked_mul(3, hidden, "the peephole length")});
    lengths_.assign(static_cast<std::size_t>(batch), steps);
    if (lens != nullptr) {
      if (lens->rank() != 1 || lens->shape()[0] != batch)
        throw InputError(fmt::format("{}: sequence_lens {} must have shape [{}] (the batch)", label, lens->describe(), batch));
      if (lens->element_type() != ElementType::int32 && lens->element_type() != ElementType::int64)
        throw InputError(fmt::format("{}: sequence_lens {} must be int32 (or int64)", label, lens->describe()));
      for (int64_t b = 0; b < batch; ++b) {  // read in place: no allocation per run
        const int64_t v = lens->element_type() == ElementType::int32 ? lens->data<int32_t>()[b] : lens->data<int64_t>()[b];
        if (v < 0 || v > steps)
          throw InputError(fmt::format("{}: sequence_lens[{}] = {} is outside [0, {}] (the sequence length of X {})",
                                       label, b, v, steps, x.describe()));
        lengths_[static_cast<std::size_t>(b)] = v;
      }
    }

    // Outputs: Y [seq, dirs, batch, hidden] (layout 1: [batch, seq, dirs, hidden]); states as initial_h.
    // Kept in the kernel: assigning the same dims again does not allocate.
    if (a_.layout == 0) y_shape_.assign({steps, dirs, batch, hidden});
    else y_shape_.assign({batch, steps, dirs, hidden});
    state_shape_.assign({s0, s1, hidden});
    const Shape& y_shape = y_shape_;
    const Shape& state_shape = state_shape_;
    checked_element_count(y_shape, "Y");
    const int64_t xw_count = checked_mul(checked_mul(steps, batch, "the input projection"), rows, "the input projection");
    const int64_t state_count = checked_mul(batch, hidden, "the hidden state");
    // One step's recurrent product, bounded here once so that the per-step count cannot overflow.
    checked_mul(state_count, rows, "the recurrent product of one step");
    T* y = a_.want_y ? zeroed(checked_output(execution, 0, type, y_shape, false)) : nullptr;
    T* y_h = a_.want_h ? zeroed(checked_output(execution, 1, type, state_shape, false)) : nullptr;
    T* y_c = a_.want_c ? zeroed(checked_output(execution, 2, type, state_shape, false)) : nullptr;
    try {
      grow(xw_, xw_count);
      grow(h_, state_count);
      grow(c_, a_.cell == Cell::lstm ? state_count : 0);
      grow(gates_, checked_mul(batch, rows, "the gate buffer"));
      grow(rh_, a_.cell == Cell::gru ? state_count : 0);
    } catch (const std::exception&) {  // bad_alloc, or length_error past the vector's max_size
      throw InputError(fmt::format("{}: cannot allocate the scratch of X {} with hidden_size {}", label, x.describe(), hidden));
    }
    // No early return for an empty sequence: Y is empty and Y_h / Y_c are the initial states, as
    // for a batch entry whose sequence_lens is 0.

    const T* px = x.data<T>();
    const int64_t per_act = static_cast<int64_t>(activation_count(a_.cell));
    for (int64_t d = 0; d < dirs; ++d) {
      const bool reverse = a_.reverse || d == 1;
      const T* wd = w.data<T>() + d * rows * in_size;
      const T* rd = r.data<T>() + d * rows * hidden;
      const T* wb = bias != nullptr ? bias->data<T>() + d * 2 * rows : nullptr;
      const T* rb = wb != nullptr ? wb + rows : nullptr;
      const T* pd = peep != nullptr ? peep->data<T>() + d * 3 * hidden : nullptr;
      const Activation* act = a_.activations.data() + d * per_act;
      direction_ = d;

      // Input projection of every (step, batch) row: xw[(t * batch + b) * rows + g].
      // Rb is folded in too, except GRU's hidden-gate Rb under linear_before_reset (it sits inside r * (...)).
      if (packed_products(in_size, hidden)) {
        if constexpr (std::is_same_v<T, float>) {
          if (d == 0 && (!w_constant_ || packed_w_shape_ != w.shape())) pack(w, packed_w_, packed_w_shape_);
          const int64_t macs = checked_mul(steps * batch * rows, in_size, "the input projection");
          // Layout 1 holds X as [batch, seq, input]: one GEMM per batch entry, its rows t written
          // batch rows apart so that xw keeps the (t * batch + b) order.
          const bool per_entry = a_.layout != 0 && batch > 1;
          const float* pw = packed_w_.data() + d * packed_b_floats(*isa_, in_size, rows);
          float* xw = xw_.data();
          packed_gemm(execution, execution.admitted_threads(macs, minimum_macs_), *isa_, blocking_, per_entry ? batch : 1,
                      per_entry ? steps : steps * batch, rows, in_size, nullptr, [&](int64_t b) {
                        PackedGemmOperands o;
                        o.a = MatrixView{px + (per_entry ? b * steps * in_size : 0), in_size, 1};
                        o.packed_b = pw;
                        o.c = xw + (per_entry ? b * rows : 0);
                        o.ldc = per_entry ? batch * rows : rows;
                        return o;
                      });
          if (wb != nullptr) {
            const bool gru_lbr = a_.cell == Cell::gru && a_.linear_before_reset;
            for (int64_t tb = 0; tb < steps * batch; ++tb) {
              float* row = xw + tb * rows;
              for (int64_t g = 0; g < rows; ++g) row[g] += wb[g];
              for (int64_t g = 0; g < (gru_lbr ? 2 * hidden : rows); ++g) row[g] += rb[g];
            }
          }
        }
      } else {
        const int64_t units = steps * batch * rows;
        const int64_t macs = checked_mul(units, std::max<int64_t>(in_size, 1), "the input projection");
        const int64_t grain = std::max<int64_t>(1, 4096 / std::max<int64_t>(in_size, 1));
        T* xw = xw_.data();
        execution.parallel_for(units, grain, execution.admitted_threads(macs, minimum_macs_),
                               [&](int64_t begin, int64_t end) {
                                 for (int64_t u = begin; u < end; ++u) {
                                   const int64_t g = u % rows, tb = u / rows;
                                   const int64_t t = tb / batch, b = tb % batch;
                                   const T* xrow = px + (a_.layout == 0 ? (t * batch + b) : (b * steps + t)) * in_size;
                                   T v = dot(xrow, wd + g * in_size, in_size);
                                   if (wb != nullptr) {
                                     v += wb[g];
                                     if (!(a_.cell == Cell::gru && a_.linear_before_reset && g >= 2 * hidden)) v += rb[g];
                                   }
                                   xw[u] = v;
                                 }
                               });
      }
      if (d == 0 && packed_products(in_size, hidden) && (!r_constant_ || packed_r_shape_ != r.shape())) {
        if constexpr (std::is_same_v<T, float>) pack(r, packed_r_, packed_r_shape_);
      }

      // Initial states.
      for (int64_t b = 0; b < batch; ++b)
        for (int64_t j = 0; j < hidden; ++j) {
          const int64_t s = a_.layout == 0 ? (d * batch + b) * hidden + j : (b * dirs + d) * hidden + j;
          h_[static_cast<std::size_t>(b * hidden + j)] = init_h != nullptr ? init_h->data<T>()[s] : T(0);
          if (a_.cell == Cell::lstm) c_[static_cast<std::size_t>(b * hidden + j)] = init_c != nullptr ? init_c->data<T>()[s] : T(0);
        }

      for (int64_t step = 0; step < steps; ++step) {
        run_step(execution, step, reverse, batch, hidden, rows, steps, rd, rb, pd, act, y, d, dirs);
      }

      for (int64_t b = 0; b < batch; ++b)
        for (int64_t j = 0; j < hidden; ++j) {
          const int64_t s = a_.layout == 0 ? (d * batch + b) * hidden + j : (b * dirs + d) * hidden + j;
          if (y_h != nullptr) y_h[s] = h_[static_cast<std::size_t>(b * hidden + j)];
          if (y_c != nullptr) y_c[s] = c_[static_cast<std::size_t>(b * hidden + j)];
        }
    }
  }

 private:
  static T* zeroed(Tensor& t) {
    T* p = t.data<T>();
    std::fill(p, p + t.element_count(), T(0));
    return p;
  }
  static void grow(std::vector<T>& v, int64_t n) {
    if (static_cast<int64_t>(v.size()) < n) v.resize(static_cast<std::size_t>(n));
  }

  T clipped(T v) const {
    if (!a_.clip) return v;
    const T c = static_cast<T>(*a_.clip);
    return std::min(c, std::max(-c, v));
  }

  // gates_[b * rows + g] = sum_k src[b * hidden + k] * R[g][k] for g in [g0, g1) and the batches
  // active at `step`; one thread per gate row.
  void recurrent_product(KernelExecution& execution, const T* src, const T* rd, int64_t step, int64_t batch,
                         int64_t hidden, int64_t rows, int64_t g0, int64_t g1) {
    if constexpr (std::is_same_v<T, float>) {
      // The whole R^T at once (every batch entry, inactive ones computed and unused).
      if (isa_ != nullptr && g0 == 0 && g1 == rows && hidden > 0) {
        const float* pr = packed_r_.data() + direction_ * packed_b_floats(*isa_, hidden, rows);
        packed_gemm(execution, execution.admitted_threads(batch * rows * hidden, minimum_macs_), *isa_, blocking_, 1,
                    batch, rows, hidden, nullptr, [&](int64_t) {
                      PackedGemmOperands o;
                      o.a = MatrixView{src, hidden, 1};
                      o.packed_b = pr;
                      o.c = gates_.data();
                      o.ldc = rows;
                      return o;
                    });
        return;
      }
    }
    const int64_t units = g1 - g0;
    int64_t active = 0;
    for (int64_t b = 0; b < batch; ++b) active += step < lengths_[static_cast<std::size_t>(b)] ? 1 : 0;
    const int64_t macs = units * active * hidden;  // bounded by the input projection's checked size
    T* out = gates_.data();
    execution.parallel_for(units, std::max<int64_t>(1, 2048 / std::max<int64_t>(1, hidden * active)),
                           execution.admitted_threads(macs, minimum_macs_),
                           [&](int64_t begin, int64_t end) {
                             for (int64_t g = g0 + begin; g < g0 + end; ++g)
                               for (int64_t b = 0; b < batch; ++b)
                                 if (step < lengths_[static_cast<std::size_t>(b)])
                                   out[b * rows + g] = dot(src + b * hidden, rd + g * hidden, hidden);
                           });
  }

  void run_step(KernelExecution& execution, int64_t step, bool reverse, int64_t batch, int64_t hidden, int64_t rows,
                int64_t steps, const T* rd, const T* rb, const T* pd, const Activation* act, T* y, int64_t d,
                int64_t dirs) {
    T* h = h_.data();
    T* c = c_.data();
    T* gate = gates_.data();
    const Cell cell = a_.cell;
    if (cell == Cell::gru && !a_.linear_before_reset) {
      // z and r first; the hidden gate multiplies (r . H_{t-1}) by Rh.
      recurrent_product(execution, h, rd, step, batch, hidden, rows, 0, 2 * hidden);
      for (int64_t b = 0; b < batch; ++b) {
        const int64_t len = lengths_[static_cast<std::size_t>(b)];
        if (step >= len) continue;
        const int64_t t = reverse ? len - 1 - step : step;
        const T* xw = xw_.data() + (t * batch + b) * rows;
        for (int64_t j = 0; j < hidden; ++j) {
          const T rg = act[0](clipped(xw[hidden + j] + gate[b * rows + hidden + j]));
          rh_[static_cast<std::size_t>(b * hidden + j)] = rg * h[b * hidden + j];
        }
      }
      recurrent_product(execution, rh_.data(), rd, step, batch, hidden, rows, 2 * hidden, 3 * hidden);
    } else {
      recurrent_product(execution, h, rd, step, batch, hidden, rows, 0, rows);
    }
    for (int64_t b = 0; b < batch; ++b) {
      const int64_t len = lengths_[static_cast<std::size_t>(b)];
      if (step >= len) continue;  // past this sequence's end: state kept, Y stays zero
      const int64_t t = reverse ? len - 1 - step : step;
      const T* xw = xw_.data() + (t * batch + b) * rows;
      const T* hr = gate + b * rows;
      T* hb = h + b * hidden;
      if constexpr (std::is_same_v<T, float>) {
        // The cell first: `act` holds only that cell's activations (RNN 1, GRU 2, LSTM 3).
        if (cell == Cell::lstm && vector_lstm_gates(act, pd)) {
          lstm_gates_vector(xw, gate + b * rows, c + b * hidden, hb, hidden);
          if (y != nullptr) {
            T* dst = y + (a_.layout == 0 ? ((t * dirs + d) * batch + b) * hidden : ((b * steps + t) * dirs + d) * hidden);
            std::copy_n(hb, hidden, dst);
          }
          continue;
        }
        if (cell == Cell::gru && a_.linear_before_reset && vector_gru_gates(act)) {
          gru_gates_vector(xw, gate + b * rows, rb != nullptr ? rb + 2 * hidden : nullptr, hb, hidden);
          if (y != nullptr) {
            T* dst = y + (a_.layout == 0 ? ((t * dirs + d) * batch + b) * hidden : ((b * steps + t) * dirs + d) * hidden);
            std::copy_n(hb, hidden, dst);
          }
          continue;
        }
      }
      for (int64_t j = 0; j < hidden; ++j) {
        if (cell == Cell::lstm) {
          // Gate order i, o, f, c; peepholes P in order i, o, f.
          T* cb = c + b * hidden;
          const T c_prev = cb[j];
          T pi = xw[j] + hr[j], po = xw[hidden + j] + hr[hidden + j];
          T pf = xw[2 * hidden + j] + hr[2 * hidden + j];
          const T pc = xw[3 * hidden + j] + hr[3 * hidden + j];
          if (pd != nullptr) pi += pd[j] * c_prev, pf += pd[2 * hidden + j] * c_prev;
          const T i = act[0](clipped(pi));
          const T f = a_.input_forget ? T(1) - i : act[0](clipped(pf));
          const T cand = act[1](clipped(pc));
          const T c_new = f * c_prev + i * cand;
          if (pd != nullptr) po += pd[hidden + j] * c_new;
          const T o = act[0](clipped(po));
          cb[j] = c_new;
          hb[j] = o * act[2](c_new);
        } else if (cell == Cell::gru) {
          // Gate order z, r, h.
          const T z = act[0](clipped(xw[j] + hr[j]));
          T ph;
          if (a_.linear_before_reset) {
            const T r = act[0](clipped(xw[hidden + j] + hr[hidden + j]));
            ph = xw[2 * hidden + j] + r * (hr[2 * hidden + j] + (rb != nullptr ? rb[2 * hidden + j] : T(0)));
          } else {
            ph = xw[2 * hidden + j] + hr[2 * hidden + j];
          }
          const T cand = act[1](clipped(ph));
          hb[j] = (T(1) - z) * cand + z * hb[j];
        } else {
          hb[j] = act[0](clipped(xw[j] + hr[j]));
        }
      }
      if (y != nullptr) {
        T* dst = y + (a_.layout == 0 ? ((t * dirs + d) * batch + b) * hidden : ((b * steps + t) * dirs + d) * hidden);
        std::copy_n(hb, hidden, dst);
      }
    }
  }

  // The LSTM gate math as vector passes over the step's gate rows (float32 on the packed path with
  // the default activations Sigmoid, Tanh, Tanh and no peepholes or input_forget): sigmoid from
  // simd/softmax_f32.h, tanh(x) = 2 sigmoid(2x) - 1. Serial, so thread counts never change it.
  bool vector_lstm_gates(const Activation* act, const T* peepholes) const {
    return std::is_same_v<T, float> && isa_ != nullptr && peepholes == nullptr && !a_.input_forget &&
           act[0].kind == ActivationKind::sigmoid && act[1].kind == ActivationKind::tanh &&
           act[2].kind == ActivationKind::tanh;
  }
  void lstm_gates_vector(const float* xw, float* gate, float* c, float* h, int64_t hidden) {
    const int64_t rows = 4 * hidden;
    for (int64_t g = 0; g < rows; ++g) gate[g] = xw[g] + gate[g];
    if (a_.clip) {
      const float bound = static_cast<float>(*a_.clip);
      for (int64_t g = 0; g < rows; ++g) gate[g] = std::min(bound, std::max(-bound, gate[g]));
    }
    float* cand = gate + 3 * hidden;
    for (int64_t j = 0; j < hidden; ++j) cand[j] *= 2.0f;
    sigmoid_(gate, gate, rows, false);  // i, o, f; and sigmoid(2 pc) for the candidate
    const float* i = gate;
    const float* o = gate + hidden;
    const float* f = gate + 2 * hidden;
    float* tanh_c = tanh_scratch(hidden);
    for (int64_t j = 0; j < hidden; ++j) {
      const float candidate = 2.0f * cand[j] - 1.0f;
      c[j] = f[j] * c[j] + i[j] * candidate;
      tanh_c[j] = 2.0f * c[j];
    }
    sigmoid_(tanh_c, tanh_c, hidden, false);
    for (int64_t j = 0; j < hidden; ++j) h[j] = o[j] * (2.0f * tanh_c[j] - 1.0f);
  }
  // GRU with linear_before_reset and the default Sigmoid, Tanh, as above.
  bool vector_gru_gates(const Activation* act) const {
    return std::is_same_v<T, float> && isa_ != nullptr && act[0].kind == ActivationKind::sigmoid &&
           act[1].kind == ActivationKind::tanh;
  }
  void gru_gates_vector(const float* xw, float* gate, const float* rb_h, float* h, int64_t hidden) {
    const float bound = a_.clip ? static_cast<float>(*a_.clip) : 0.0f;
    auto clip = [&](float v) { return a_.clip ? std::min(bound, std::max(-bound, v)) : v; };
    for (int64_t g = 0; g < 2 * hidden; ++g) gate[g] = clip(xw[g] + gate[g]);
    sigmoid_(gate, gate, 2 * hidden, false);  // z, r
    const float* z = gate;
    const float* r = gate + hidden;
    float* ph = tanh_scratch(hidden);
    const float* hr = gate + 2 * hidden;
    for (int64_t j = 0; j < hidden; ++j)
      ph[j] = 2.0f * clip(xw[2 * hidden + j] + r[j] * (hr[j] + (rb_h != nullptr ? rb_h[j] : 0.0f)));
    sigmoid_(ph, ph, hidden, false);
    for (int64_t j = 0; j < hidden; ++j) {
      const float candidate = 2.0f * ph[j] - 1.0f;
      h[j] = (1.0f - z[j]) * candidate + z[j] * h[j];
    }
  }
  float* tanh_scratch(int64_t n) {
    if (static_cast<int64_t>(tanh_scratch_.size()) < n) tanh_scratch_.resize(static_cast<std::size_t>(n));
    return tanh_scratch_.data();
  }

  bool packed_products(int64_t in_size, int64_t hidden) const {
    return std::is_same_v<T, float> && isa_ != nullptr && in_size > 0 && hidden > 0;
  }
  // Packs every direction's [rows, depth] matrix of `m` ([dirs, rows, depth]) as a depth x rows B.
  void pack(const Tensor& m, PackedBuffer& dst, Shape& packed_shape) {
    if constexpr (std::is_same_v<T, float>) {
      const int64_t dirs = m.shape()[0], rows = m.shape()[1], depth = m.shape()[2];
      if (m.element_count() == 0) return;
      const int64_t per = packed_b_floats(*isa_, depth, rows);
      dst.grow(static_cast<std::size_t>(dirs * per));
      const float* data = m.data<float>();
      pack_b_matrices(nullptr, 1, *isa_, dirs, depth, rows,
                      [&](int64_t d) { return MatrixView{data + d * rows * depth, 1, depth}; }, dst.data());
      packed_shape = m.shape();
    }
  }

  RecurrentAttributes a_;
  const PackedGemmIsa* isa_ = nullptr;
  // The vector gates' sigmoid for isa_, resolved once rather than per step.
  void (*sigmoid_)(const float*, float*, int64_t, bool) = nullptr;
  GemmBlocking blocking_{96, 256, 256};
  PackedBuffer packed_w_, packed_r_;
  Shape packed_w_shape_, packed_r_shape_;  // the shapes packed (empty: nothing yet)
  bool w_constant_ = false, r_constant_ = false;  // packed once, at creation
  std::vector<float> tanh_scratch_;
  int64_t direction_ = 0;                   // of the step being run: its packed R
  int64_t minimum_macs_ = kDefaultMinimumMacs;
  std::vector<int64_t> lengths_;
  Shape y_shape_, state_shape_;
  std::vector<T> xw_, h_, c_, gates_, rh_;
};

// Calibration: one forward layer over 4 steps, batch 1, input and hidden size n, with about
// `macs` multiply-accumulates (4 steps x rows x 2n).
CalibrationWorkloadFunction recurrent_workload(Cell cell, ElementType type) {
  return [cell, type](int64_t macs, int, uint32_t seed) {
    const int64_t gates = gate_count(cell);
    const int64_t n = std::max<int64_t>(
        1, static_cast<int64_t>(std::llround(std::sqrt(static_cast<double>(macs) / static_cast<double>(8 * gates)))));
    return one_node_workload(cell_name(cell), 14, fmt::format("hidden_size = {}", n),
                             {{"x", random_tensor(type, {4, 1, n}, seed)},
                              {"w", random_tensor(type, {1, gates * n, n}, seed + 1)},
                              {"r", random_tensor(type, {1, gates * n, n}, seed + 2)}},
                             {{"y", type, {4, 1, 1, n}}}, 8 * gates * n * n);
  };
}

// The largest tensor of that workload: W or R (gates n^2).
std::function<int64_t(int64_t)> recurrent_elements(Cell cell) {
  return [cell](int64_t macs) {
    const int64_t gates = gate_count(cell);
    const auto n = static_cast<int64_t>(std::llround(std::sqrt(static_cast<double>(macs) / static_cast<double>(8 * gates))));
    return std::max<int64_t>(1, gates * n * n);
  };
}

}  // namespace

void register_recurrent_kernels(KernelTable& table) {
  // float32 on the packed GEMM driver first (avx512, then avx2), then the portable loops.
  for (const auto& [isa, needs] : {std::pair{packed_gemm_avx512(), &needs_avx512}, std::pair{packed_gemm_avx2(), &needs_avx2_fma}}) {
    if (isa == nullptr) continue;
    for (Cell cell : {Cell::lstm, Cell::gru, Cell::rnn}) {
      constexpr ElementType type = ElementType::float32;
      KernelDef def = make_def(cell_name(cell), {7}, type, recurrent_schema(elementwise_key(cell_name(cell), type, 1, isa->name)));
      def.implementation = isa->name;
      def.unavailable_reason = needs;
      const PackedGemmIsa* chosen = isa;
      def.create = [cell, chosen](const KernelCreateInfo& info) -> std::unique_ptr<Kernel> {
        return std::make_unique<RecurrentKernel<float>>(info, cell, chosen);
      };
      def.calibration_workload = recurrent_workload(cell, type);
      def.calibration_elements = recurrent_elements(cell);
      table.add(std::move(def));
    }
  }
  for_each_type<float, double>([&](auto t) {
    using T = decltype(t);
    constexpr ElementType type = ElementTraits<T>::type;
    for (Cell cell : {Cell::lstm, Cell::gru, Cell::rnn}) {
      KernelDef def = make_def(cell_name(cell), {7}, type, recurrent_schema(elementwise_key(cell_name(cell), type, 1)));
      def.create = [cell](const KernelCreateInfo& info) -> std::unique_ptr<Kernel> {
        return std::make_unique<RecurrentKernel<T>>(info, cell);
      };
      def.calibration_workload = recurrent_workload(cell, type);
      def.calibration_elements = recurrent_elements(cell);
      table.add(std::move(def));
    }
  });
}

}  // namespace onnx_light::runtime::kernels
