#include "kernels/kernel_util.h"

#include <algorithm>
#include <new>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "checked_math.h"
#include "kernels/element_traits.h"
#include "onnx_light/runtime/error.h"

namespace onnx_light::runtime::kernels {

void check_attributes(const KernelCreateInfo& info, std::initializer_list<std::string_view> known) {
  for (const auto& a : info.node.attribute())
    if (std::find(known.begin(), known.end(), a.name()) == known.end())
      throw UnsupportedError(fmt::format("{}: attribute '{}' is not supported by {} at opset {}", info.node_label(),
                                         a.name(), info.node.op_type(), info.opset));
}

int64_t normalize_axis(int64_t axis, int64_t rank, const std::string& label, std::string_view what, int64_t extra) {
  if (axis < -rank || axis >= rank + extra)
    throw InputError(fmt::format("{}: {} {} is out of range for rank {}", label, what, axis, rank));
  return axis < 0 ? axis + rank : axis;
}

int64_t normalize_axis_attribute(int64_t axis, int64_t rank, const KernelCreateInfo& info, std::string_view name) {
  if (axis < -rank || axis >= rank)
    throw ModelError(fmt::format("{}: attribute '{}' = {} is out of range for rank {}", info.node_label(), name, axis, rank));
  return axis < 0 ? axis + rank : axis;
}

std::vector<int64_t> read_int64_values(const Tensor& t, const std::string& label, std::string_view what) {
  std::vector<int64_t> values(static_cast<std::size_t>(t.element_count()));
  if (t.element_type() == ElementType::int64) {
    std::copy_n(t.data<int64_t>(), values.size(), values.begin());
  } else if (t.element_type() == ElementType::int32) {
    std::copy_n(t.data<int32_t>(), values.size(), values.begin());
  } else {
    throw InputError(fmt::format("{}: {} must be int32 or int64, not {}", label, what, element_type_name(t.element_type())));
  }
  return values;
}

double read_as_double(const Tensor& t, int64_t i) {
  switch (t.element_type()) {
    case ElementType::float32: return t.data<float>()[i];
    case ElementType::float64: return t.data<double>()[i];
    case ElementType::float16: return half_to_float(t.data<uint16_t>()[i]);
    case ElementType::bfloat16: return bfloat16_to_float(t.data<uint16_t>()[i]);
    case ElementType::int8: return t.data<int8_t>()[i];
    case ElementType::int16: return t.data<int16_t>()[i];
    case ElementType::int32: return t.data<int32_t>()[i];
    case ElementType::int64: return static_cast<double>(t.data<int64_t>()[i]);
    case ElementType::uint8: return t.data<uint8_t>()[i];
    case ElementType::uint16: return t.data<uint16_t>()[i];
    case ElementType::uint32: return t.data<uint32_t>()[i];
    case ElementType::uint64: return static_cast<double>(t.data<uint64_t>()[i]);
    case ElementType::boolean: return t.data<bool>()[i] ? 1.0 : 0.0;
    default: throw InputError(fmt::format("cannot read a {} value as a number", element_type_name(t.element_type())));
  }
}

std::vector<int64_t> row_major_strides(const Shape& shape) {
  // Nothing is addressed in an empty tensor, whose other dims may be too large to multiply.
  if (std::find(shape.begin(), shape.end(), 0) != shape.end()) return std::vector<int64_t>(shape.size(), 0);
  std::vector<int64_t> strides(shape.size(), 1);
  for (std::size_t d = shape.size(); d-- > 1;) strides[d - 1] = checked_mul(strides[d], shape[d], "a row-major stride");
  return strides;
}

Tensor& checked_output(KernelExecution& execution, std::size_t index, ElementType type, const Shape& shape, bool zero) {
  int64_t bytes = 0;
  try {
    bytes = checked_byte_count(checked_element_count(shape, "shape"), element_size(type), "a tensor");
  } catch (const InputError& e) {
    throw InputError(fmt::format("{}: output {} ({}): {}", execution.label(), index, element_type_name(type), e.what()));
  }
  try {
    return zero ? execution.output(index, type, shape) : execution.output_for_overwrite(index, type, shape);
  } catch (const std::bad_alloc&) {
    throw InputError(fmt::format("{}: output {} {}{} of {} bytes cannot be allocated", execution.label(), index,
                                 element_type_name(type), shape_to_string(shape), bytes));
  }
}

BroadcastPlan strided_plan(const Shape& output, const std::vector<int64_t>& strides) {
  BroadcastPlan plan;
  plan.strides.resize(1);
  for (std::size_t d = 0; d < output.size(); ++d) {
    if (output[d] == 1) continue;
    if (!plan.output.empty() && plan.strides[0].back() == strides[d] * output[d]) {
      plan.output.back() *= output[d];
      plan.strides[0].back() = strides[d];
    } else {
      plan.output.push_back(output[d]);
      plan.strides[0].push_back(strides[d]);
    }
  }
  if (plan.output.empty()) {
    plan.output.push_back(1);
    plan.strides[0].push_back(0);
  }
  return plan;
}

namespace {

std::string declare(ElementType type, const Shape& shape, const std::string& name) {
  // A rank-0 value is declared without brackets, which the text syntax reads as a scalar.
  if (shape.empty()) return fmt::format("{} {}", element_type_name(type), name);
  return fmt::format("{}[{}] {}", element_type_name(type), fmt::join(shape, ","), name);
}

}  // namespace

CalibrationWorkload one_node_workload(const std::string& op_type, int opset, const std::string& attributes,
                                      std::vector<std::pair<std::string, Tensor>> inputs,
                                      const std::vector<WorkloadOutput>& outputs, int64_t work_size) {
  std::vector<std::string> in_decl, in_names, out_decl, out_names, described;
  for (const auto& [name, t] : inputs) {
    in_decl.push_back(declare(t.element_type(), t.shape(), name));
    in_names.push_back(name);
    described.push_back(t.describe());
  }
  for (const auto& o : outputs) {
    out_decl.push_back(declare(o.type, o.shape, o.name));
    out_names.push_back(o.name);
  }
  CalibrationWorkload w;
  w.model_text = fmt::format("<ir_version: 8, opset_import: [\"\" : {}]>\ncalibration ({}) => ({}) {{ {} = {}{}({}) }}",
                             opset, fmt::join(in_decl, ", "), fmt::join(out_decl, ", "), fmt::join(out_names, ", "),
                             op_type, attributes.empty() ? std::string() : fmt::format(" <{}> ", attributes),
                             fmt::join(in_names, ", "));
  w.description = fmt::format("{}({})", op_type, fmt::join(described, ", "));
  w.inputs = std::move(inputs);
  w.work_size = work_size;
  return w;
}

Tensor int64_tensor(const std::vector<int64_t>& values) {
  Tensor t(ElementType::int64, {static_cast<int64_t>(values.size())});
  std::copy(values.begin(), values.end(), t.data<int64_t>());
  return t;
}

TuningSchema row_threshold_schema(TuningKey key, int64_t default_minimum_rows) {
  return TuningSchema{std::move(key),
                      {threshold_parameter("parallel.minimum_rows", default_minimum_rows, int64_t{1} << 40,
                                           "Smallest number of rows run in parallel; each row is processed by one thread.")}};
}

TuningSchema tiled_schema(TuningKey key, TileDefaults tiles, int64_t default_minimum_macs) {
  ParameterSpec macs = threshold_parameter(
      "parallel.minimum_macs", default_minimum_macs, int64_t{1} << 50,
      "Smallest multiply-accumulate count run in parallel; smaller problems run on one thread.");
  TuningSchema schema{std::move(key), {}};
  schema.parameters.push_back(tile_parameter("gemm.tile_m", tiles.m, {8, 16, 32, 64, 128, 256},
                                             "Output rows per task (one task is one tile of the output)."));
  schema.parameters.push_back(tile_parameter("gemm.tile_n", tiles.n, {16, 32, 64, 128, 256, 512, 1024},
                                             "Output columns per task; also the width of the packed B panel."));
  schema.parameters.push_back(tile_parameter("gemm.tile_k", tiles.k, {16, 32, 64, 128, 256, 512},
                                             "Depth of one packed B panel (the reduction is blocked by this)."));
  schema.parameters.push_back(std::move(macs));
  return schema;
}

void read_tuning(const TuningValues& values, const char* name, int64_t& target) {
  if (auto it = values.find(name); it != values.end())
    if (const auto* v = std::get_if<int64_t>(&it->second)) target = *v;
}

void RowKernel::apply_tuning(const TuningValues& values) { read_tuning(values, "parallel.minimum_rows", minimum_rows_); }

void TiledKernel::apply_tuning(const TuningValues& values) {
  read_tuning(values, "gemm.tile_m", tile_m_);
  read_tuning(values, "gemm.tile_n", tile_n_);
  read_tuning(values, "gemm.tile_k", tile_k_);
  read_tuning(values, "parallel.minimum_macs", minimum_macs_);
}

KernelDef make_def(const std::string& op_type, OpsetRange opsets, ElementType type, TuningSchema schema) {
  KernelDef def;
  def.op_type = op_type;
  def.since_version = opsets.since;
  def.end_version = opsets.end;
  def.element_type = type;
  def.schema = std::move(schema);
  return def;
}

namespace {

// Whether t's integer values equal `values` (false for other element types).
bool same_int_values(const Tensor& t, const std::vector<int64_t>& values) {
  if (t.element_count() != static_cast<int64_t>(values.size())) return false;
  if (t.element_type() == ElementType::int64) return std::equal(values.begin(), values.end(), t.data<int64_t>());
  if (t.element_type() == ElementType::int32) return std::equal(values.begin(), values.end(), t.data<int32_t>());
  return false;
}

}  // namespace

bool InputSignature::unchanged(const KernelExecution& execution, uint32_t value_inputs) {
  const std::size_t count = execution.input_count();
  bool same = valid_ && shapes_.size() == count;
  for (std::size_t i = 0; same && i < count; ++i) {
    const Tensor* t = execution.input(i);
    same = (t != nullptr) == (present_[i] != 0);
    if (same && t != nullptr) {
      same = t->shape() == shapes_[i];
      if (same && i < 32 && ((value_inputs >> i) & 1u) != 0) same = same_int_values(*t, values_[i]);
    }
  }
  if (same) return true;
  shapes_.resize(count);
  values_.resize(count);
  present_.assign(count, 0);
  for (std::size_t i = 0; i < count; ++i) {
    const Tensor* t = execution.input(i);
    values_[i].clear();
    if (t == nullptr) continue;
    present_[i] = 1;
    shapes_[i] = t->shape();
    const bool integers = t->element_type() == ElementType::int64 || t->element_type() == ElementType::int32;
    if (i < 32 && ((value_inputs >> i) & 1u) != 0 && integers) {
      values_[i].resize(static_cast<std::size_t>(t->element_count()));
      for (std::size_t k = 0; k < values_[i].size(); ++k)
        values_[i][k] = t->element_type() == ElementType::int64 ? t->data<int64_t>()[k] : t->data<int32_t>()[k];
    }
  }
  valid_ = true;
  return false;
}

}  // namespace onnx_light::runtime::kernels
