// Einsum: the equation is parsed once at session creation (labels, ellipsis, implicit output);
// each run binds label sizes to the inputs' shapes and sums products over the contracted labels.
// A label repeated within one input reads its diagonal (the strides of its dimensions added); an
// ellipsis covers the dimensions no letter names, broadcast across inputs like numpy, right-aligned.
// Each output element is one sum in a fixed order (contracted labels row-major), independent of
// the thread count. Floats accumulate in double, integers in their unsigned type (wrapping, as
// the integer MatMul does, without signed overflow).
#include <algorithm>
#include <array>
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include <fmt/format.h>

#include "kernels/element_traits.h"
#include "kernels/elementwise.h"
#include "kernels/kernel_families.h"
#include "kernels/kernel_util.h"
#include "onnx_light/runtime/error.h"

namespace onnx_light::runtime::kernels {

namespace {

// Letters are labels 0..51; the ellipsis's dimensions get labels from kEllipsisLabel on.
constexpr int kLetters = 52;
constexpr int kEllipsisLabel = kLetters;

int letter_label(char c) { return c >= 'a' && c <= 'z' ? c - 'a' : c >= 'A' && c <= 'Z' ? 26 + (c - 'A') : -1; }

// One operand's subscripts: letters before and after its ellipsis (if any).
struct Term {
  std::vector<int> before, after;
  bool ellipsis = false;
};

struct Equation {
  std::vector<Term> inputs;
  Term output;
  bool explicit_output = false;
};

Term parse_term(const std::string& text, const std::string& label, const std::string& equation) {
  Term t;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '.') {
      if (t.ellipsis || text.compare(i, 3, "...") != 0)
        throw InputError(fmt::format("{}: equation '{}': '.' only as one '...' per operand", label, equation));
      t.ellipsis = true;
      i += 2;
      continue;
    }
    const int l = letter_label(c);
    if (l < 0)
      throw InputError(fmt::format("{}: equation '{}': '{}' is not a subscript (letters a-z, A-Z and '...')", label,
                                   equation, c));
    (t.ellipsis ? t.after : t.before).push_back(l);
  }
  return t;
}

Equation parse_equation(std::string equation, const std::string& label) {
  const std::string original = equation;
  equation.erase(std::remove_if(equation.begin(), equation.end(), [](char c) { return c == ' ' || c == '\t'; }),
                 equation.end());
  Equation e;
  const std::size_t arrow = equation.find("->");
  const std::string lhs = equation.substr(0, arrow);
  std::size_t start = 0;
  while (true) {
    const std::size_t comma = lhs.find(',', start);
    e.inputs.push_back(parse_term(lhs.substr(start, comma - start), label, original));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (arrow != std::string::npos) {
    e.explicit_output = true;
    const std::string rhs = equation.substr(arrow + 2);
    if (rhs.find("->") != std::string::npos)
      throw InputError(fmt::format("{}: equation '{}' has more than one '->'", label, original));
    e.output = parse_term(rhs, label, original);
    std::array<int, kLetters> seen{};
    for (const auto* part : {&e.output.before, &e.output.after})
      for (int l : *part)
        if (seen[static_cast<std::size_t>(l)]++ > 0)
          throw InputError(fmt::format("{}: equation '{}' repeats an output subscript", label, original));
    for (const auto* part : {&e.output.before, &e.output.after})
      for (int l : *part) {
        bool found = false;
        for (const Term& t : e.inputs)
          found = found || std::count(t.before.begin(), t.before.end(), l) > 0 ||
                  std::count(t.after.begin(), t.after.end(), l) > 0;
        if (!found)
          throw InputError(fmt::format("{}: equation '{}': output subscript '{}' is in no input", label, original,
                                       static_cast<char>(l < 26 ? 'a' + l : 'A' + (l - 26))));
      }
    if (e.output.ellipsis && std::none_of(e.inputs.begin(), e.inputs.end(), [](const Term& t) { return t.ellipsis; }))
      throw InputError(fmt::format("{}: equation '{}' has '...' in the output but in no input", label, original));
  } else {
    // Implicit output: the ellipsis's dimensions, then the letters that occur once, alphabetically.
    std::array<int, kLetters> count{};
    for (const Term& t : e.inputs)
      for (const auto* part : {&t.before, &t.after})
        for (int l : *part) ++count[static_cast<std::size_t>(l)];
    e.output.ellipsis = std::any_of(e.inputs.begin(), e.inputs.end(), [](const Term& t) { return t.ellipsis; });
    for (int l = 0; l < kLetters; ++l)
      if (count[static_cast<std::size_t>(l)] == 1) e.output.after.push_back(l);
  }
  return e;
}

// Unsigned accumulation for integers (wraps without undefined behaviour), double for floats.
template <typename T, bool = std::is_integral_v<T>>
struct AccumulatorOf {
  using type = double;
};
template <typename T>
struct AccumulatorOf<T, true> {
  using type = std::make_unsigned_t<T>;
};
template <typename T>
using Accumulator = typename AccumulatorOf<T>::type;

template <typename T>
class EinsumKernel final : public ThresholdKernel {
 public:
  explicit EinsumKernel(const KernelCreateInfo& info) : ThresholdKernel(kDefaultMinimumElements) {
    check_attributes(info, {"equation"});
    if (!info.has_attribute("equation"))
      throw InputError(fmt::format("{}: attribute 'equation' is required", info.node_label()));
    equation_text_ = info.string_attribute("equation", "");
    equation_ = parse_equation(equation_text_, info.node_label());
    if (info.input_types.size() != equation_.inputs.size())
      throw InputError(fmt::format("{}: equation '{}' has {} operand{} but the node has {} input{}", info.node_label(),
                                   equation_text_, equation_.inputs.size(), equation_.inputs.size() == 1 ? "" : "s",
                                   info.input_types.size(), info.input_types.size() == 1 ? "" : "s"));
  }

  void run(KernelExecution& execution) override {
    const std::string& label = execution.label();
    const std::size_t n_inputs = equation_.inputs.size();
    std::vector<const Tensor*> x(n_inputs);
    // The ellipsis's rank: the most dimensions any operand leaves to it.
    int64_t ellipsis_rank = 0;
    for (std::size_t i = 0; i < n_inputs; ++i) {
      x[i] = &execution.required_input(i);
      const Term& t = equation_.inputs[i];
      const auto named = static_cast<int64_t>(t.before.size() + t.after.size());
      const int64_t rank = x[i]->rank();
      if (t.ellipsis ? rank < named : rank != named)
        throw InputError(fmt::format("{}: equation '{}': operand {} has {} subscript{}{} but input {} has rank {} {}",
                                     label, equation_text_, i, named, named == 1 ? "" : "s",
                                     t.ellipsis ? " and '...'" : "", i, rank, shape_to_string(x[i]->shape())));
      if (t.ellipsis) ellipsis_rank = std::max(ellipsis_rank, rank - named);
    }
    const int labels = kEllipsisLabel + static_cast<int>(ellipsis_rank);
    // Label sizes (-1 unbound) and, per operand, each label's stride (repeats add: the diagonal).
    std::vector<int64_t> size(static_cast<std::size_t>(labels), -1);
    std::vector<std::vector<int64_t>> stride(n_inputs, std::vector<int64_t>(static_cast<std::size_t>(labels), 0));
    for (std::size_t i = 0; i < n_inputs; ++i) {
      const Term& t = equation_.inputs[i];
      const Shape& shape = x[i]->shape();
      const int64_t rank = x[i]->rank();
      const int64_t own_ellipsis = t.ellipsis ? rank - static_cast<int64_t>(t.before.size() + t.after.size()) : 0;
      std::vector<int64_t> dim_stride(static_cast<std::size_t>(rank), 1);
      for (int64_t d = rank - 2; d >= 0; --d)
        dim_stride[static_cast<std::size_t>(d)] = dim_stride[static_cast<std::size_t>(d + 1)] * shape[static_cast<std::size_t>(d + 1)];
      auto bind = [&](int l, int64_t d, bool broadcasts) {
        const int64_t extent = shape[static_cast<std::size_t>(d)];
        int64_t& s = size[static_cast<std::size_t>(l)];
        if (broadcasts && extent == 1) {  // a broadcast dimension reads its one element
          if (s < 0) s = 1;
          return;
        }
        if (s < 0 || (broadcasts && s == 1)) s = extent;
        else if (s != extent)
          throw InputError(fmt::format("{}: equation '{}': {} has size {} in input {} {} but {} elsewhere", label,
                                       equation_text_, describe(l), extent, i, shape_to_string(shape), s));
        stride[i][static_cast<std::size_t>(l)] += dim_stride[static_cast<std::size_t>(d)];
      };
      int64_t d = 0;
      for (int l : t.before) bind(l, d++, false);
      for (int64_t e = 0; e < own_ellipsis; ++e, ++d)
        bind(kEllipsisLabel + static_cast<int>(ellipsis_rank - own_ellipsis + e), d, true);
      for (int l : t.after) bind(l, d++, false);
    }
    for (int l = 0; l < labels; ++l)
      if (size[static_cast<std::size_t>(l)] < 0) size[static_cast<std::size_t>(l)] = 1;

    // Output labels, then the contracted ones (every other bound label) in label order.
    std::vector<int> out_labels;
    for (int l : equation_.output.before) out_labels.push_back(l);
    if (equation_.output.ellipsis)
      for (int e = 0; e < ellipsis_rank; ++e) out_labels.push_back(kEllipsisLabel + e);
    for (int l : equation_.output.after) out_labels.push_back(l);
    std::vector<bool> is_output(static_cast<std::size_t>(labels), false);
    for (int l : out_labels) is_output[static_cast<std::size_t>(l)] = true;
    std::vector<int> sum_labels;
    for (int l = 0; l < labels; ++l) {
      if (is_output[static_cast<std::size_t>(l)]) continue;
      bool used = false;
      for (std::size_t i = 0; i < n_inputs; ++i) used = used || bound_in(equation_.inputs[i], l);
      if (used || l >= kEllipsisLabel) sum_labels.push_back(l);
    }
    Shape out_shape;
    for (int l : out_labels) out_shape.push_back(size[static_cast<std::size_t>(l)]);
    Tensor& y = checked_output(execution, 0, x[0]->element_type(), out_shape, false);
    const int64_t out_count = y.element_count();
    int64_t sum_count = 1;
    for (int l : sum_labels) sum_count *= size[static_cast<std::size_t>(l)];
    T* out = y.data<T>();
    if (out_count == 0) return;

    // Per operand: strides over the output labels and over the contracted ones.
    std::vector<std::vector<int64_t>> out_stride(n_inputs), sum_stride(n_inputs);
    for (std::size_t i = 0; i < n_inputs; ++i) {
      for (int l : out_labels) out_stride[i].push_back(stride[i][static_cast<std::size_t>(l)]);
      for (int l : sum_labels) sum_stride[i].push_back(stride[i][static_cast<std::size_t>(l)]);
    }
    std::vector<int64_t> out_sizes, sum_sizes;
    for (int l : out_labels) out_sizes.push_back(size[static_cast<std::size_t>(l)]);
    for (int l : sum_labels) sum_sizes.push_back(size[static_cast<std::size_t>(l)]);
    std::vector<const T*> data(n_inputs);
    for (std::size_t i = 0; i < n_inputs; ++i) data[i] = x[i]->data<T>();

    const int threads = admitted(out_count * std::max<int64_t>(1, sum_count), execution);
    execution.parallel_for(out_count, 1, threads, [&](int64_t begin, int64_t end) {
      std::vector<int64_t> out_index(out_sizes.size()), sum_index(sum_sizes.size()), base(n_inputs), offset(n_inputs);
      // The first output's multi-index, then an odometer.
      int64_t rest = begin;
      for (std::size_t k = out_sizes.size(); k-- > 0;) {
        out_index[k] = rest % out_sizes[k];
        rest /= out_sizes[k];
      }
      for (int64_t o = begin; o < end; ++o) {
        for (std::size_t i = 0; i < n_inputs; ++i) {
          base[i] = 0;
          for (std::size_t k = 0; k < out_sizes.size(); ++k) base[i] += out_index[k] * out_stride[i][k];
        }
        Accumulator<T> acc{};
        if (sum_count > 0) {
          std::fill(sum_index.begin(), sum_index.end(), 0);
          offset = base;
          for (int64_t s = 0; s < sum_count; ++s) {
            Accumulator<T> product = static_cast<Accumulator<T>>(load<T>(data[0][offset[0]]));
            for (std::size_t i = 1; i < n_inputs; ++i)
              product = static_cast<Accumulator<T>>(product * static_cast<Accumulator<T>>(load<T>(data[i][offset[i]])));
            acc = static_cast<Accumulator<T>>(acc + product);
            for (std::size_t k = sum_sizes.size(); k-- > 0;) {
              for (std::size_t i = 0; i < n_inputs; ++i) offset[i] += sum_stride[i][k];
              if (++sum_index[k] < sum_sizes[k]) break;
              for (std::size_t i = 0; i < n_inputs; ++i) offset[i] -= sum_stride[i][k] * sum_sizes[k];
              sum_index[k] = 0;
            }
          }
        }
        out[o] = store<T>(static_cast<compute_t<T>>(acc));
        for (std::size_t k = out_sizes.size(); k-- > 0;) {
          if (++out_index[k] < out_sizes[k]) break;
          out_index[k] = 0;
        }
      }
    });
  }

 private:
  static bool bound_in(const Term& t, int l) {
    return std::count(t.before.begin(), t.before.end(), l) > 0 || std::count(t.after.begin(), t.after.end(), l) > 0;
  }
  static std::string describe(int l) {
    if (l >= kEllipsisLabel) return fmt::format("dimension {} of '...'", l - kEllipsisLabel);
    return fmt::format("subscript '{}'", static_cast<char>(l < 26 ? 'a' + l : 'A' + (l - 26)));
  }

  std::string equation_text_;
  Equation equation_;
};

}  // namespace

void register_einsum_kernels(KernelTable& table) {
  for_each_type<float, double, Float16, int32_t, int64_t, uint32_t, uint64_t>([&](auto v) {
    using T = decltype(v);
    constexpr ElementType type = ElementTraits<T>::type;
    KernelDef def =
        make_def("Einsum", {12}, type, parallel_threshold_schema(elementwise_key("Einsum", type, 1), kDefaultMinimumElements));
    def.create = [](const KernelCreateInfo& info) -> std::unique_ptr<Kernel> { return std::make_unique<EinsumKernel<T>>(info); };
    table.add(std::move(def));
  });
}

}  // namespace onnx_light::runtime::kernels
