#pragma once
// Element types are ONNX TensorProto.DataType numbers so that they round-trip through
// protobuf, the cache file and Python unchanged.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace onnx_light::runtime {

enum class ElementType : int32_t {
  undefined = 0,
  float32 = 1,
  uint8 = 2,
  int8 = 3,
  uint16 = 4,
  int16 = 5,
  int32 = 6,
  int64 = 7,
  string = 8,
  boolean = 9,
  float16 = 10,
  float64 = 11,
  uint32 = 12,
  uint64 = 13,
  complex64 = 14,
  complex128 = 15,
  bfloat16 = 16,
};

// ONNX-style name: "float", "double", "float16", "bfloat16", "int8".."uint64", "bool", "string".
std::string_view element_type_name(ElementType type);
// Accepts the names above, numpy-style aliases ("float32", "float64", "f4"...) and numbers ("1").
std::optional<ElementType> parse_element_type(std::string_view text);
// Size in bytes of one element; 0 for string and undefined.
std::size_t element_size(ElementType type);
// True for every type the runtime stores as plain bytes (all but string and undefined).
bool is_fixed_size(ElementType type);
bool is_valid_element_type(int32_t number);
// The types the runtime can hold in tensors (numeric and bool), in DataType order.
const std::vector<ElementType>& supported_element_types();

}  // namespace onnx_light::runtime
