#pragma once
// Helpers shared by the kernel families beyond plain elementwise ops: attribute checks,
// axis normalisation, reading shape-like inputs at run time, the tuning schemas of row,
// tile and reduction kernels, and a size-only element type for ops that just move bytes.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "kernels/broadcast.h"
#include "kernels/elementwise.h"
#include "onnx_light/runtime/calibration_workload.h"
#include "onnx_light/runtime/error.h"
#include "onnx_light/runtime/kernel.h"
#include "onnx_light/runtime/kernel_table.h"

namespace onnx_light::runtime::kernels {

// Throws UnsupportedError naming the node and the first attribute not in `known`.
void check_attributes(const KernelCreateInfo& info, std::initializer_list<std::string_view> known);

// A MakeOp for an operator without attributes: any attribute is rejected at creation.
template <typename Op>
auto no_attributes(Op op) {
  return [op](const KernelCreateInfo& info) {
    check_attributes(info, {});
    return op;
  };
}

// `axis` in [-rank, rank + extra) mapped to [0, rank + extra); negative values count from rank
// (Flatten's axis takes extra = 1: [-rank, rank]).
// Throws InputError naming `label` and `what` when out of range.
int64_t normalize_axis(int64_t axis, int64_t rank, const std::string& label, std::string_view what = "axis",
                       int64_t extra = 0);
// The creation-time flavour: ModelError instead of InputError.
int64_t normalize_axis_attribute(int64_t axis, int64_t rank, const KernelCreateInfo& info, std::string_view name);

// The values of an int32 or int64 tensor (shape, axes, starts, ...). Throws InputError naming
// `label` and `what` for other element types.
std::vector<int64_t> read_int64_values(const Tensor& t, const std::string& label, std::string_view what);
// Element i of a numeric or bool tensor as double (scalars of Clip, Range, ...).
double read_as_double(const Tensor& t, int64_t i);

// The strides of a dense row-major shape; all 0 for an empty shape (nothing is addressed
// through them, and its other dims may be too large to multiply). Throws InputError when a
// stride overflows int64.
std::vector<int64_t> row_major_strides(const Shape& shape);

// Output `index` of a shape computed from input values or attributes (Tile's repeats, Range's
// count, Expand's shape, Pad's pads, ...). Its element count and byte size are checked before
// anything is allocated, and an allocation the machine refuses is reported too: each as an
// InputError naming the node, the output and its shape. `zero` = false: output_for_overwrite.
Tensor& checked_output(KernelExecution& execution, std::size_t index, ElementType type, const Shape& shape,
                       bool zero = true);

// An element of `size` bytes moved as one unsigned integer; ops that only move data dispatch
// on the element size instead of the type.
template <typename F>
void dispatch_element_size(std::size_t size, F&& f) {
  switch (size) {
    case 1: f(uint8_t{}); break;
    case 2: f(uint16_t{}); break;
    case 4: f(uint32_t{}); break;
    default: f(uint64_t{}); break;
  }
}

// A double converted to T without undefined behaviour: floating types round, integers truncate
// toward zero and saturate at their range, NaN becomes 0.
template <typename T>
T saturate_cast(double v) {
  if constexpr (std::is_floating_point_v<T>) {
    return static_cast<T>(v);
  } else if constexpr (std::is_same_v<T, bool>) {
    return v != 0.0;
  } else {
    if (std::isnan(v)) return T(0);
    // Compare against the first value past the range, which is a power of two and exact in double.
    constexpr double upper = static_cast<double>(std::numeric_limits<T>::max()) + 1.0;
    constexpr double lower = static_cast<double>(std::numeric_limits<T>::lowest());
    if (v >= upper) return std::numeric_limits<T>::max();
    if (v <= lower) return std::numeric_limits<T>::lowest();
    return static_cast<T>(v);
  }
}

// A walk plan over `output` (row-major) reading one input with arbitrary element strides
// (negative for reversed slices, 0 for repeated dims): size-1 dims dropped, contiguous dims merged.
BroadcastPlan strided_plan(const Shape& output, const std::vector<int64_t>& strides);

// What a kernel's plan depends on, remembered from the previous run: every input's shape and
// the values of its small integer operands (Reshape's shape, Slice's starts/ends/axes/steps). A
// kernel recomputes its output shape and copy plan only when they change, so a steady state with
// repeating shapes allocates nothing.
class InputSignature {
 public:
  // True when the inputs match the remembered ones; otherwise remembers them and returns false.
  // `value_inputs`: bit i set when input i's int32/int64 values matter too.
  bool unchanged(const KernelExecution& execution, uint32_t value_inputs = 0);
  // Drops what was remembered (a plan computed from it threw, so there is none).
  void forget() { valid_ = false; }
  // Runs `plan()` when the inputs changed (see unchanged); if it throws, forgets them, so the
  // next run with the same inputs plans (and throws) again instead of using a stale plan.
  template <typename Plan>
  void replan_if_changed(const KernelExecution& execution, uint32_t value_inputs, Plan&& plan) {
    if (unchanged(execution, value_inputs)) return;
    try {
      plan();
    } catch (...) {
      forget();
      throw;
    }
  }

 private:
  std::vector<Shape> shapes_;
  std::vector<std::vector<int64_t>> values_;
  std::vector<char> present_;
  bool valid_ = false;
};

// Copies `n` output elements in parallel: dst[o] = src[offset of o under plan].
template <typename U>
void copy_with_plan(KernelExecution& execution, const BroadcastPlan& plan, const U* src, U* dst, int64_t n,
                    int threads) {
  execution.parallel_for(n, cache_line_grain<U>(), threads, [&](int64_t begin, int64_t end) {
    walk_broadcast<1>(plan, begin, end, [&](int64_t o, const int64_t* off, int64_t count, const int64_t* step) {
      const U* s = src + off[0];
      if (step[0] == 1) {
        std::copy_n(s, count, dst + o);
      } else {
        for (int64_t i = 0; i < count; ++i) dst[o + i] = s[i * step[0]];
      }
    });
  });
}

// A one-node calibration model over the given inputs (name -> seeded tensor) and outputs
// (name -> type and shape); `attributes` is the text-syntax list without brackets ("axis = 1").
struct WorkloadOutput {
  std::string name;
  ElementType type;
  Shape shape;
};
CalibrationWorkload one_node_workload(const std::string& op_type, int opset, const std::string& attributes,
                                      std::vector<std::pair<std::string, Tensor>> inputs,
                                      const std::vector<WorkloadOutput>& outputs, int64_t work_size);
// An int64 tensor holding `values` (shapes, axes, ...).
Tensor int64_tensor(const std::vector<int64_t>& values);
// [rows, 64] with rows * 64 ~ work (at least one row): the usual shape of row and reduction workloads.
inline Shape rows_of_64(int64_t work) { return {std::max<int64_t>(1, work / 64), 64}; }

// Tuning schemas. Every threshold is role `threshold` (searched by doubling), every tile role
// `tile` with an allowed set.
inline constexpr int64_t kDefaultMinimumRows = 64;
inline constexpr int64_t kDefaultMinimumMacs = int64_t{1} << 18;
TuningSchema row_threshold_schema(TuningKey key, int64_t default_minimum_rows);
struct TileDefaults {
  int64_t m = 64;
  int64_t n = 128;
  int64_t k = 128;
};
// gemm.tile_m / gemm.tile_n / gemm.tile_k and parallel.minimum_macs.
TuningSchema tiled_schema(TuningKey key, TileDefaults tiles = {}, int64_t default_minimum_macs = kDefaultMinimumMacs);

// Copies the int64 value `name` of `values` into `target`; leaves it as it is when absent (a
// session always passes complete, validated values; tests may pass a subset).
void read_tuning(const TuningValues& values, const char* name, int64_t& target);

// Base of row kernels (Softmax, LayerNormalization): parallel when the row count reaches the threshold.
class RowKernel : public Kernel {
 public:
  explicit RowKernel(int64_t minimum_rows) : minimum_rows_(minimum_rows) {}
  void apply_tuning(const TuningValues& values) override;

 protected:
  int admitted_rows(int64_t rows, const KernelExecution& execution) const {
    return execution.admitted_threads(rows, minimum_rows_);
  }
  int64_t minimum_rows_;
};

// Base of tiled kernels (MatMul, Gemm, Conv): tile sizes and a multiply-accumulate threshold.
class TiledKernel : public Kernel {
 public:
  explicit TiledKernel(TileDefaults tiles, int64_t minimum_macs = kDefaultMinimumMacs)
      : tile_m_(tiles.m), tile_n_(tiles.n), tile_k_(tiles.k), minimum_macs_(minimum_macs) {}
  void apply_tuning(const TuningValues& values) override;

 protected:
  int admitted_macs(int64_t macs, const KernelExecution& execution) const {
    return execution.admitted_threads(macs, minimum_macs_);
  }
  int64_t tile_m_, tile_n_, tile_k_, minimum_macs_;
};

// A KernelDef with the usual fields filled in; the caller sets create/output_types/schema extras.
KernelDef make_def(const std::string& op_type, OpsetRange opsets, ElementType type, TuningSchema schema);

// Registers one definition per element type in `types`, all sharing `build`:
// build(KernelDef&, ElementType) fills create/schema/output_types for that type.
template <typename Build>
void add_for_types(KernelTable& table, const std::vector<ElementType>& types, Build&& build) {
  for (ElementType type : types) {
    KernelDef def;
    def.element_type = type;
    build(def, type);
    table.add(std::move(def));
  }
}

// The enumerator a string attribute names among `choices` (fallback when absent); a ModelError
// naming the node, the attribute and the allowed values otherwise.
template <typename E>
E parse_choice(const KernelCreateInfo& info, std::string_view name, const std::string& fallback,
               std::initializer_list<std::pair<const char*, E>> choices) {
  const std::string v = info.string_attribute(name, fallback);
  std::string names;
  for (const auto& [n, e] : choices) {
    if (v == n) return e;
    names += (names.empty() ? "" : ", ") + std::string(n);
  }
  throw ModelError(fmt::format("{}: attribute '{}' = \"{}\" is not one of {}", info.node_label(), name, v, names));
}

}  // namespace onnx_light::runtime::kernels
