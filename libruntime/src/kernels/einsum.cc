// Einsum: the equation is parsed once at session creation (labels, ellipsis, implicit output);
// each run binds label sizes to the inputs' shapes and sums products over the contracted labels.
// A label repeated within one input reads its diagonal (the strides of its dimensions added); an
// ellipsis covers the dimensions no letter names, broadcast across inputs like numpy, right-aligned.
// Each output element is one sum in a fixed order (contracted labels row-major), independent of
// the thread count. Floats accumulate in double, integers in their unsigned type (wrapping, as
// the integer MatMul does, without signed overflow).
//
// float32 on AVX2 / AVX-512 hosts ("avx2" / "avx512" implementations): a two-operand equation
// whose every label is a batch (both operands and the output), row (first operand and output),
// column (second operand and output) or contracted (both operands only) label, with no diagonal
// and no broadcast, runs as a batched GEMM on the packed driver: the operands gathered into
// [batch, rows, depth] and [batch, depth, columns], the product scattered to the output's order
// (attention's "bhqd,bhkd->bhqk"). Anything else runs the sum above; variant() names the path.
#include <algorithm>
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include <fmt/format.h>

#include "kernels/element_traits.h"
#include "kernels/elementwise.h"
#include "kernels/kernel_families.h"
#include "kernels/isa_requirements.h"
#include "kernels/kernel_util.h"
#include "kernels/packed_gemm.h"
#include "kernels/scratch_slots.h"
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

// (size, stride) pairs, outermost first: a strided walk over some labels of one tensor.
using StridedGroup = std::vector<std::pair<int64_t, int64_t>>;

// Visits the multi-indices over `walk` in row-major order, calling visit(i, offset) with the
// running index and the strided offset. `index` is scratch of walk.size() entries.
template <typename Visit>
void strided_walk(const StridedGroup& walk, int64_t* index, Visit&& visit) {
  int64_t total = 1;
  for (const auto& [size, stride] : walk) total *= size;
  std::fill(index, index + walk.size(), 0);
  int64_t offset = 0;
  for (int64_t i = 0; i < total; ++i) {
    visit(i, offset);
    for (std::size_t k = walk.size(); k-- > 0;) {
      offset += walk[k].second;
      if (++index[k] < walk[k].first) break;
      offset -= walk[k].second * walk[k].first;
      index[k] = 0;
    }
  }
}

StridedGroup concatenated(std::initializer_list<const StridedGroup*> groups) {
  StridedGroup all;
  for (const StridedGroup* g : groups) all.insert(all.end(), g->begin(), g->end());
  return all;
}

template <typename T>
class EinsumKernel final : public ThresholdKernel {
 public:
  explicit EinsumKernel(const KernelCreateInfo& info, const PackedGemmIsa* isa = nullptr)
      : ThresholdKernel(kDefaultMinimumElements), isa_(isa) {
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
    const std::size_t n_inputs = equation_.inputs.size();
    inputs_.resize(n_inputs);
    bool same_shapes = plan_.shapes.size() == n_inputs;
    for (std::size_t i = 0; i < n_inputs; ++i) {
      inputs_[i] = &execution.required_input(i);
      same_shapes = same_shapes && plan_.shapes[i] == inputs_[i]->shape();
    }
    // Binding labels to sizes and strides depends on the shapes only: done again when they change.
    if (!same_shapes) make_plan(execution.label());
    const Plan& p = plan_;
    Tensor& y = checked_output(execution, 0, inputs_[0]->element_type(), p.out_shape, false);
    T* out = y.data<T>();
    if (p.out_count == 0) return;
    if constexpr (std::is_same_v<T, float>) {
      if (p.batched) {
        run_batched(execution, out);
        variant_ = batched_variant_;
        return;
      }
    }
    variant_ = "generic";

    data_.resize(n_inputs);
    for (std::size_t i = 0; i < n_inputs; ++i) data_[i] = inputs_[i]->data<T>();
    const T* const* data = data_.data();
    const int64_t sum_count = p.sum_count;
    const int threads = admitted(p.out_count * std::max<int64_t>(1, sum_count), execution);
    // Per-participant odometers kept across runs (sized here, outside the region).
    walks_.ensure(static_cast<std::size_t>(std::max(1, execution.threads())) + 1);
    for (std::size_t i = 0; i < walks_.size(); ++i) walks_[i].resize(p.out_sizes.size(), p.sum_sizes.size(), n_inputs);
    execution.parallel_for(p.out_count, 1, threads, [&](int64_t begin, int64_t end) {
      const auto& out_sizes = p.out_sizes;
      const auto& sum_sizes = p.sum_sizes;
      typename ScratchSlots<Walk>::Lease walk(walks_);
      auto& [out_index, sum_index, base, offset] = *walk;
      // The first output's multi-index, then an odometer.
      int64_t rest = begin;
      for (std::size_t k = out_sizes.size(); k-- > 0;) {
        out_index[k] = rest % out_sizes[k];
        rest /= out_sizes[k];
      }
      for (int64_t o = begin; o < end; ++o) {
        for (std::size_t i = 0; i < n_inputs; ++i) {
          base[i] = 0;
          for (std::size_t k = 0; k < out_sizes.size(); ++k) base[i] += out_index[k] * p.out_stride[i][k];
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
              for (std::size_t i = 0; i < n_inputs; ++i) offset[i] += p.sum_stride[i][k];
              if (++sum_index[k] < sum_sizes[k]) break;
              for (std::size_t i = 0; i < n_inputs; ++i) offset[i] -= p.sum_stride[i][k] * sum_sizes[k];
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

  std::string_view variant() const override { return variant_; }

 private:
  // How the batched-GEMM path reads and writes its operands for one set of input shapes.
  struct BatchedPlan {
    int64_t batches = 1, m = 1, n = 1, k = 1;
    StridedGroup a_batch, b_batch, c_batch;  // the batch labels' (size, stride) in A, B and the output
    // Each operand is read in place when its row (or column) and depth labels each collapse to one
    // stride (the usual case: "bhqd,bhkd->bhqk" reads B transposed); else gathered first. The
    // output is written in place when its rows collapse and its columns are contiguous.
    int64_t a_row_stride = 0, a_depth_stride = 0, b_depth_stride = 0, b_col_stride = 0, c_row_stride = 0;
    bool a_direct = false, b_direct = false, c_direct = false;
    StridedGroup a_walk, b_walk, c_walk;  // batch, rows/depth, depth/columns: the gather and scatter orders
  };
  // Everything a run needs that depends on the input shapes only.
  struct Plan {
    std::vector<Shape> shapes;  // the input shapes it was made for (empty: none yet)
    Shape out_shape;
    int64_t out_count = 0, sum_count = 1;
    std::vector<int64_t> out_sizes, sum_sizes;
    std::vector<std::vector<int64_t>> out_stride, sum_stride;  // per operand, per output / contracted label
    bool batched = false;
    BatchedPlan mm;
  };

  // Binds every label's size and per-operand stride to inputs_'s shapes; throws InputError naming
  // the node when they disagree with the equation (the plan is left empty then).
  void make_plan(const std::string& label) {
    plan_ = Plan{};
    const std::size_t n_inputs = equation_.inputs.size();
    const std::vector<const Tensor*>& x = inputs_;
    // The ellipsis's rank: the most dimensions any operand leaves to it.
    int64_t ellipsis_rank = 0;
    for (std::size_t i = 0; i < n_inputs; ++i) {
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
    Plan p;
    p.out_count = 1;
    for (int l : out_labels) {
      p.out_shape.push_back(size[static_cast<std::size_t>(l)]);
      p.out_sizes.push_back(size[static_cast<std::size_t>(l)]);
      p.out_count *= size[static_cast<std::size_t>(l)];
    }
    for (int l : sum_labels) {
      p.sum_sizes.push_back(size[static_cast<std::size_t>(l)]);
      p.sum_count *= size[static_cast<std::size_t>(l)];
    }
    // Per operand: strides over the output labels and over the contracted ones.
    p.out_stride.resize(n_inputs);
    p.sum_stride.resize(n_inputs);
    for (std::size_t i = 0; i < n_inputs; ++i) {
      for (int l : out_labels) p.out_stride[i].push_back(stride[i][static_cast<std::size_t>(l)]);
      for (int l : sum_labels) p.sum_stride[i].push_back(stride[i][static_cast<std::size_t>(l)]);
    }
    if constexpr (std::is_same_v<T, float>) {
      p.batched = isa_ != nullptr && n_inputs == 2 && plan_batched(size, stride, out_labels, sum_labels, labels, p.mm);
    }
    for (const Tensor* t : x) p.shapes.push_back(t->shape());
    plan_ = std::move(p);
  }

  // Whether the batched-GEMM path fits the equation at these sizes (see the header); fills `mm` when it does.
  bool plan_batched(const std::vector<int64_t>& size, const std::vector<std::vector<int64_t>>& stride,
                    const std::vector<int>& out_labels, const std::vector<int>& sum_labels, int labels, BatchedPlan& mm) const {
    const std::vector<const Tensor*>& x = inputs_;
    // Every dimension of each operand must be its own label at full size (no diagonal, no broadcast).
    for (std::size_t i = 0; i < 2; ++i) {
      const Term& t = equation_.inputs[i];
      const auto named = static_cast<int64_t>(t.before.size() + t.after.size());
      std::vector<int> seen;
      for (const auto* part : {&t.before, &t.after})
        for (int l : *part) seen.push_back(l);
      std::sort(seen.begin(), seen.end());
      if (std::adjacent_find(seen.begin(), seen.end()) != seen.end()) return false;
      if (const auto rank = static_cast<int64_t>(x[i]->rank()); t.ellipsis && rank != named) {
        // Ellipsis dimensions: each must have the label's full size in this operand.
        const int64_t own = rank - named;
        const int64_t ellipsis_rank = labels - kEllipsisLabel;
        for (int64_t e = 0; e < own; ++e)
          if (x[i]->shape()[static_cast<std::size_t>(static_cast<int64_t>(t.before.size()) + e)] !=
              size[static_cast<std::size_t>(kEllipsisLabel + ellipsis_rank - own + e)])
            return false;
      }
    }
    std::vector<int> batch, rows, cols, depth;
    for (int l : out_labels) {
      const bool a = bound(0, l), b = bound(1, l);
      if (a && b) batch.push_back(l);
      else if (a) rows.push_back(l);
      else if (b) cols.push_back(l);
      else return false;
    }
    for (int l : sum_labels) {
      if (!(bound(0, l) && bound(1, l))) return false;  // summed within one operand: the generic sum
      depth.push_back(l);
    }
    for (int l : batch) mm.batches *= size[static_cast<std::size_t>(l)];
    for (int l : rows) mm.m *= size[static_cast<std::size_t>(l)];
    for (int l : cols) mm.n *= size[static_cast<std::size_t>(l)];
    for (int l : depth) mm.k *= size[static_cast<std::size_t>(l)];
    auto group = [&](std::size_t i, const std::vector<int>& ls) {
      StridedGroup g;
      for (int l : ls) g.emplace_back(size[static_cast<std::size_t>(l)], stride[i][static_cast<std::size_t>(l)]);
      return g;
    };
    // Output strides of the output labels (row-major over out_labels).
    std::vector<int64_t> out_stride(static_cast<std::size_t>(labels), 0);
    int64_t step = 1;
    for (std::size_t i = out_labels.size(); i-- > 0;) {
      out_stride[static_cast<std::size_t>(out_labels[i])] = step;
      step *= size[static_cast<std::size_t>(out_labels[i])];
    }
    auto out_group = [&](const std::vector<int>& ls) {
      StridedGroup g;
      for (int l : ls) g.emplace_back(size[static_cast<std::size_t>(l)], out_stride[static_cast<std::size_t>(l)]);
      return g;
    };
    const StridedGroup a_rows = group(0, rows), a_depth = group(0, depth), b_depth = group(1, depth),
                       b_cols = group(1, cols), c_rows = out_group(rows), c_cols = out_group(cols);
    mm.a_batch = group(0, batch);
    mm.b_batch = group(1, batch);
    mm.c_batch = out_group(batch);
    const auto ar = collapse(a_rows), ad = collapse(a_depth), bd = collapse(b_depth), bc = collapse(b_cols),
               cr = collapse(c_rows), cc = collapse(c_cols);
    mm.a_direct = ar && ad;
    mm.b_direct = bd && bc;
    mm.c_direct = cr && cc && cc->second == 1;
    if (mm.a_direct) {
      mm.a_row_stride = ar->second;
      mm.a_depth_stride = ad->second;
    } else {
      mm.a_walk = concatenated({&mm.a_batch, &a_rows, &a_depth});
    }
    if (mm.b_direct) {
      mm.b_depth_stride = bd->second;
      mm.b_col_stride = bc->second;
    } else {
      mm.b_walk = concatenated({&mm.b_batch, &b_depth, &b_cols});
    }
    if (mm.c_direct) mm.c_row_stride = cr->second;
    else mm.c_walk = concatenated({&mm.c_batch, &c_rows, &c_cols});
    return true;
  }

  // The batched-GEMM path on plan_.mm.
  void run_batched(KernelExecution& execution, float* out) {
    const BatchedPlan& mm = plan_.mm;
    const int64_t bt = mm.batches, m = mm.m, n = mm.n, k = mm.k;
    batched_variant_ = isa_->name == std::string_view("avx512") ? "batched_matmul_avx512" : "batched_matmul_avx2";
    if (k == 0) {
      std::fill(out, out + bt * m * n, 0.0f);
      return;
    }
    walk_index_.resize(std::max({mm.a_walk.size(), mm.b_walk.size(), mm.c_walk.size()}));
    const float* a_base = inputs_[0]->data<float>();
    const float* b_base = inputs_[1]->data<float>();
    if (!mm.a_direct) {
      a_.resize(static_cast<std::size_t>(bt * m * k));
      strided_walk(mm.a_walk, walk_index_.data(), [&](int64_t i, int64_t offset) { a_[static_cast<std::size_t>(i)] = a_base[offset]; });
    }
    if (!mm.b_direct) {
      b_.resize(static_cast<std::size_t>(bt * k * n));
      strided_walk(mm.b_walk, walk_index_.data(), [&](int64_t i, int64_t offset) { b_[static_cast<std::size_t>(i)] = b_base[offset]; });
    }
    if (!mm.c_direct) c_.resize(static_cast<std::size_t>(bt * m * n));
    const int admitted = execution.admitted_threads(bt * m * n * k, kDefaultMinimumMacs);
    const auto per = packed_b_floats(*isa_, k, n);
    packed_.grow(static_cast<std::size_t>(bt * per));
    const float* bp = b_.data();
    pack_b_matrices(&execution, admitted, *isa_, bt, k, n, [&](int64_t i) {
      return mm.b_direct ? MatrixView{b_base + batch_offset(mm.b_batch, i), mm.b_depth_stride, mm.b_col_stride}
                         : MatrixView{bp + i * k * n, n, 1};
    }, packed_.data());
    const float* ap = a_.data();
    float* cp = c_.data();
    const float* packed = packed_.data();
    packed_gemm(execution, admitted, *isa_, GemmBlocking{}, bt, m, n, k, nullptr, [&](int64_t i) {
      PackedGemmOperands o;
      o.a = mm.a_direct ? MatrixView{a_base + batch_offset(mm.a_batch, i), mm.a_row_stride, mm.a_depth_stride}
                        : MatrixView{ap + i * m * k, k, 1};
      o.packed_b = packed + i * per;
      o.c = mm.c_direct ? out + batch_offset(mm.c_batch, i) : cp + i * m * n;
      o.ldc = mm.c_direct ? mm.c_row_stride : n;
      return o;
    });
    if (!mm.c_direct)
      strided_walk(mm.c_walk, walk_index_.data(), [&](int64_t i, int64_t offset) { out[offset] = c_[static_cast<std::size_t>(i)]; });
  }
  // (size, stride) pairs that address one strided run: (total size, innermost stride); nullopt
  // when they do not. No pairs: one element (stride 1, never stepped).
  static std::optional<std::pair<int64_t, int64_t>> collapse(const StridedGroup& g) {
    int64_t total = 1, inner = 1;
    bool any = false;
    for (std::size_t i = g.size(); i-- > 0;) {
      const auto [size, stride] = g[i];
      if (size == 1) continue;
      if (!any) {
        inner = stride;
        any = true;
      } else if (stride != inner * total) {
        return std::nullopt;
      }
      total *= size;
    }
    return std::pair<int64_t, int64_t>{total, inner};
  }
  // The offset of batch `index` (row-major over the batch labels' sizes) under their strides.
  static int64_t batch_offset(const StridedGroup& g, int64_t index) {
    int64_t offset = 0;
    for (std::size_t i = g.size(); i-- > 0;) {
      offset += (index % g[i].first) * g[i].second;
      index /= g[i].first;
    }
    return offset;
  }
  bool bound(std::size_t operand, int l) const { return bound_in(equation_.inputs[operand], l) || ellipsis_in(operand, l); }
  bool ellipsis_in(std::size_t operand, int l) const { return l >= kEllipsisLabel && equation_.inputs[operand].ellipsis; }

  static bool bound_in(const Term& t, int l) {
    return std::count(t.before.begin(), t.before.end(), l) > 0 || std::count(t.after.begin(), t.after.end(), l) > 0;
  }
  static std::string describe(int l) {
    if (l >= kEllipsisLabel) return fmt::format("dimension {} of '...'", l - kEllipsisLabel);
    return fmt::format("subscript '{}'", static_cast<char>(l < 26 ? 'a' + l : 'A' + (l - 26)));
  }

  std::string equation_text_;
  Equation equation_;
  const PackedGemmIsa* isa_ = nullptr;
  Plan plan_;
  std::vector<const Tensor*> inputs_;  // this run's, kept to reuse their storage
  std::vector<const T*> data_;
  std::vector<int64_t> walk_index_;
  // The generic path's multi-indices and operand offsets, one set per participant.
  struct Walk {
    std::vector<int64_t> out_index, sum_index, base, offset;
    void resize(std::size_t out_labels, std::size_t sum_labels, std::size_t operands) {
      out_index.resize(out_labels);
      sum_index.resize(sum_labels);
      base.resize(operands);
      offset.resize(operands);
    }
  };
  ScratchSlots<Walk> walks_;
  std::vector<float> a_, b_, c_;
  PackedBuffer packed_;
  std::string_view variant_ = "generic", batched_variant_;
};

}  // namespace

void register_einsum_kernels(KernelTable& table) {
  // float32: the packed-GEMM path first (avx512, then avx2), then the portable sum.
  for (const auto& [isa, needs] : {std::pair{packed_gemm_avx512(), &needs_avx512}, std::pair{packed_gemm_avx2(), &needs_avx2_fma}}) {
    if (isa == nullptr) continue;
    KernelDef def = make_def("Einsum", {12}, ElementType::float32,
                             parallel_threshold_schema(elementwise_key("Einsum", ElementType::float32, 1, isa->name),
                                                       kDefaultMinimumElements));
    def.implementation = isa->name;
    def.unavailable_reason = needs;
    const PackedGemmIsa* chosen = isa;
    def.create = [chosen](const KernelCreateInfo& info) -> std::unique_ptr<Kernel> {
      return std::make_unique<EinsumKernel<float>>(info, chosen);
    };
    table.add(std::move(def));
  }
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
