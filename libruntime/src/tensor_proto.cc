#include "onnx_light/runtime/tensor_proto.h"

#include <bit>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string_view>
#include <utility>

#include <fmt/format.h>

#include "onnx_light/runtime/error.h"

namespace onnx_light::runtime {
namespace {

// raw_data is little-endian by the ONNX spec; we copy it as is.
static_assert(std::endian::native == std::endian::little, "tensor_proto.cc assumes a little-endian host");

std::string tensor_label(const onnx::TensorProto& proto) {
  return proto.name().empty() ? std::string("unnamed tensor") : fmt::format("tensor '{}'", proto.name());
}

// The typed field the ONNX spec stores each data type in.
enum class Field { float_data, int32_data, int64_data, double_data, uint64_data, string_data };

std::string_view field_name(Field field) {
  switch (field) {
    case Field::float_data: return "float_data";
    case Field::int32_data: return "int32_data";
    case Field::int64_data: return "int64_data";
    case Field::double_data: return "double_data";
    case Field::uint64_data: return "uint64_data";
    case Field::string_data: return "string_data";
  }
  return "?";
}

Field field_for(ElementType type) {
  switch (type) {
    case ElementType::float32:
    case ElementType::complex64: return Field::float_data;
    case ElementType::float64:
    case ElementType::complex128: return Field::double_data;
    case ElementType::int64: return Field::int64_data;
    case ElementType::uint32:
    case ElementType::uint64: return Field::uint64_data;
    case ElementType::string: return Field::string_data;
    default: return Field::int32_data;  // int8/16/32, uint8/16, bool, float16, bfloat16
  }
}

int field_size(const onnx::TensorProto& proto, Field field) {
  switch (field) {
    case Field::float_data: return proto.float_data_size();
    case Field::int32_data: return proto.int32_data_size();
    case Field::int64_data: return proto.int64_data_size();
    case Field::double_data: return proto.double_data_size();
    case Field::uint64_data: return proto.uint64_data_size();
    case Field::string_data: return proto.string_data_size();
  }
  return 0;
}

constexpr Field kAllFields[] = {Field::float_data, Field::int32_data,  Field::int64_data,
                                Field::double_data, Field::uint64_data, Field::string_data};

// Copies values into T, refusing any that do not fit T (the narrower types travel in int32_data / uint64_data).
template <typename T, typename Source>
void copy_narrowed(const Source& values, T* out, const std::string& label, ElementType type, Field field) {
  for (int i = 0; i < values.size(); ++i) {
    const auto value = values.Get(i);
    if (!std::in_range<T>(value)) {
      throw ModelError(fmt::format("{}: {}[{}] = {} is out of range for element type {}", label, field_name(field), i,
                                   value, element_type_name(type)));
    }
    out[i] = static_cast<T>(value);
  }
}

// float16 and bfloat16 travel as their 16-bit patterns in the low bits of int32_data.
void copy_bit_patterns16(const google::protobuf::RepeatedField<int32_t>& values, uint16_t* out,
                         const std::string& label, ElementType type) {
  for (int i = 0; i < values.size(); ++i) {
    const int32_t value = values.Get(i);
    if (value < 0 || value > 0xFFFF) {
      throw ModelError(fmt::format("{}: int32_data[{}] = {} is not a 16-bit pattern for element type {}", label, i,
                                   value, element_type_name(type)));
    }
    out[i] = static_cast<uint16_t>(value);
  }
}

void fill_from_typed_field(const onnx::TensorProto& proto, Tensor& tensor, const std::string& label) {
  const ElementType type = tensor.element_type();
  switch (type) {
    case ElementType::float32:
    case ElementType::complex64:
      std::memcpy(tensor.raw_data(), proto.float_data().data(), tensor.byte_size());
      return;
    case ElementType::float64:
    case ElementType::complex128:
      std::memcpy(tensor.raw_data(), proto.double_data().data(), tensor.byte_size());
      return;
    case ElementType::int64:
      std::memcpy(tensor.raw_data(), proto.int64_data().data(), tensor.byte_size());
      return;
    case ElementType::int32:
      std::memcpy(tensor.raw_data(), proto.int32_data().data(), tensor.byte_size());
      return;
    case ElementType::uint64:
      std::memcpy(tensor.raw_data(), proto.uint64_data().data(), tensor.byte_size());
      return;
    case ElementType::uint32:
      copy_narrowed(proto.uint64_data(), tensor.data<uint32_t>(), label, type, Field::uint64_data);
      return;
    case ElementType::int8:
      copy_narrowed(proto.int32_data(), tensor.data<int8_t>(), label, type, Field::int32_data);
      return;
    case ElementType::uint8:
      copy_narrowed(proto.int32_data(), tensor.data<uint8_t>(), label, type, Field::int32_data);
      return;
    case ElementType::int16:
      copy_narrowed(proto.int32_data(), tensor.data<int16_t>(), label, type, Field::int32_data);
      return;
    case ElementType::uint16:
      copy_narrowed(proto.int32_data(), tensor.data<uint16_t>(), label, type, Field::int32_data);
      return;
    case ElementType::float16:
    case ElementType::bfloat16:
      copy_bit_patterns16(proto.int32_data(), tensor.data<uint16_t>(), label, type);
      return;
    case ElementType::boolean: {
      // Any non-zero value is true; storing it as 1 keeps every bool byte a valid bool.
      auto* out = tensor.data<uint8_t>();
      for (int i = 0; i < proto.int32_data_size(); ++i) out[i] = proto.int32_data(i) != 0 ? 1 : 0;
      return;
    }
    default:
      break;
  }
  throw ModelError(fmt::format("{}: element type {} cannot be read from typed fields", label, element_type_name(type)));
}

}  // namespace

Tensor tensor_from_proto(const onnx::TensorProto& proto, const ExternalDataDirectory* external) {
  const std::string label = tensor_label(proto);

  if (proto.has_segment()) {
    throw ModelError(fmt::format("{}: segmented tensors are not supported", label));
  }

  const int32_t number = proto.data_type();
  if (number == 0) {
    throw ModelError(fmt::format("{}: data_type is not set (UNDEFINED)", label));
  }
  if (!is_valid_element_type(number)) {
    throw ModelError(fmt::format("{}: unknown data_type {}", label, number));
  }
  const auto type = static_cast<ElementType>(number);
  if (type == ElementType::string) {
    throw ModelError(fmt::format("{}: string tensors are not supported", label));
  }

  Shape shape(proto.dims().begin(), proto.dims().end());
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] < 0) {
      throw ModelError(fmt::format("{}: dims[{}] is negative ({})", label, i, shape[i]));
    }
  }
  int64_t count = 0;
  try {
    count = shape_element_count(shape);
  } catch (const InvalidValueError& e) {
    throw ModelError(fmt::format("{}: {}", label, e.what()));
  }
  const std::string described = fmt::format("{}{}", element_type_name(type), shape_to_string(shape));
  // Complex values are stored as (real, imaginary) pairs in the typed fields.
  const uint64_t values_per_element = (type == ElementType::complex64 || type == ElementType::complex128) ? 2 : 1;
  const uint64_t size = element_size(type);
  if (static_cast<uint64_t>(count) > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) / size) {
    throw ModelError(fmt::format("{}: {} is too large ({} elements)", label, described, count));
  }
  const uint64_t expected_bytes = static_cast<uint64_t>(count) * size;

  if (uses_external_data(proto)) {
    for (const Field field : kAllFields)
      if (field_size(proto, field) > 0)
        throw ModelError(fmt::format("{}: has both external data and values in a typed field", label));
    if (external == nullptr) {
      std::string location;
      for (const auto& entry : proto.external_data())
        if (entry.key() == "location") location = entry.value();
      throw ModelError(fmt::format("{}: its data is in an external file ('{}'), but the model was not loaded from a "
                                   "file, so there is no directory to read it from: load the model by its path",
                                   label, location));
    }
    return external->read(proto, type, shape, expected_bytes);
  }

  Field present{};
  int present_count = 0;
  for (const Field field : kAllFields) {
    if (field_size(proto, field) > 0) {
      present = field;
      ++present_count;
    }
  }
  if (proto.has_raw_data() && present_count > 0) {
    throw ModelError(fmt::format("{}: has both raw_data and {}; a tensor stores its values in exactly one field",
                                 label, field_name(present)));
  }
  if (present_count > 1) {
    throw ModelError(fmt::format("{}: has values in more than one typed field; a {} tensor stores them only in {}",
                                 label, element_type_name(type), field_name(field_for(type))));
  }

  // Sizes are checked before allocating so that hostile dims cannot trigger a huge allocation.
  if (proto.has_raw_data()) {
    const uint64_t actual = proto.raw_data().size();
    if (actual != expected_bytes) {
      throw ModelError(fmt::format("{}: raw_data has {} bytes but {} needs {} bytes ({})", label, actual, described,
                                   expected_bytes, actual < expected_bytes ? "data is short" : "data is oversized"));
    }
    return Tensor::from_bytes(type, std::move(shape), std::as_bytes(std::span(proto.raw_data())));
  }

  if (present_count == 0) {
    if (count == 0) return Tensor(type, std::move(shape));
    throw ModelError(fmt::format("{}: has no data ({} needs {} values in raw_data or {})", label, described, count,
                                 field_name(field_for(type))));
  }
  const Field expected_field = field_for(type);
  if (present != expected_field) {
    throw ModelError(fmt::format("{}: a {} tensor stores its values in {}, but the data is in {}", label,
                                 element_type_name(type), field_name(expected_field), field_name(present)));
  }
  const uint64_t actual_values = static_cast<uint64_t>(field_size(proto, present));
  const uint64_t expected_values = static_cast<uint64_t>(count) * values_per_element;
  if (actual_values != expected_values) {
    throw ModelError(fmt::format("{}: {} has {} values but {} needs {} ({})", label, field_name(present),
                                 actual_values, described, expected_values,
                                 actual_values < expected_values ? "data is short" : "data is oversized"));
  }
  Tensor tensor(type, std::move(shape));
  fill_from_typed_field(proto, tensor, label);
  return tensor;
}

onnx::TensorProto tensor_to_proto(const Tensor& tensor, const std::string& name) {
  if (tensor.empty()) {
    throw InvalidValueError(fmt::format("cannot convert an empty (undefined) tensor{} to a TensorProto",
                                        name.empty() ? std::string() : fmt::format(" '{}'", name)));
  }
  onnx::TensorProto proto;
  if (!name.empty()) proto.set_name(name);
  proto.set_data_type(static_cast<int32_t>(tensor.element_type()));
  for (const int64_t dim : tensor.shape()) proto.add_dims(dim);
  const auto bytes = tensor.bytes();
  proto.set_raw_data(bytes.empty() ? std::string() : std::string(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
  return proto;
}

}  // namespace onnx_light::runtime
