#include "onnx_light/runtime/element_type.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>

namespace onnx_light::runtime {
namespace {

struct TypeInfo {
  ElementType type;
  std::string_view name;  // ONNX name, what element_type_name returns
  std::size_t size;
};

// Indexed by the DataType number.
constexpr std::array<TypeInfo, 17> kTypes{{
    {ElementType::undefined, "undefined", 0},
    {ElementType::float32, "float", 4},
    {ElementType::uint8, "uint8", 1},
    {ElementType::int8, "int8", 1},
    {ElementType::uint16, "uint16", 2},
    {ElementType::int16, "int16", 2},
    {ElementType::int32, "int32", 4},
    {ElementType::int64, "int64", 8},
    {ElementType::string, "string", 0},
    {ElementType::boolean, "bool", 1},
    {ElementType::float16, "float16", 2},
    {ElementType::float64, "double", 8},
    {ElementType::uint32, "uint32", 4},
    {ElementType::uint64, "uint64", 8},
    {ElementType::complex64, "complex64", 8},
    {ElementType::complex128, "complex128", 16},
    {ElementType::bfloat16, "bfloat16", 2},
}};

struct Alias {
  std::string_view text;
  ElementType type;
};

// numpy dtype names and kind/size codes; "float" and "double" are the ONNX names above.
constexpr std::array<Alias, 20> kAliases{{
    {"float32", ElementType::float32}, {"f4", ElementType::float32},
    {"single", ElementType::float32},  {"float64", ElementType::float64},
    {"f8", ElementType::float64},      {"half", ElementType::float16},
    {"f2", ElementType::float16},      {"i1", ElementType::int8},
    {"i2", ElementType::int16},        {"i4", ElementType::int32},
    {"i8", ElementType::int64},        {"u1", ElementType::uint8},
    {"u2", ElementType::uint16},       {"u4", ElementType::uint32},
    {"u8", ElementType::uint64},       {"b1", ElementType::boolean},
    {"bool_", ElementType::boolean},   {"boolean", ElementType::boolean},
    {"c8", ElementType::complex64},    {"c16", ElementType::complex128},
}};

}  // namespace

std::string_view element_type_name(ElementType type) {
  const auto number = static_cast<int32_t>(type);
  if (number < 0 || number >= static_cast<int32_t>(kTypes.size())) return "unknown";
  return kTypes[static_cast<std::size_t>(number)].name;
}

std::optional<ElementType> parse_element_type(std::string_view text) {
  if (text.empty()) return std::nullopt;
  if (std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    int32_t number = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), number);
    if (ec != std::errc{} || end != text.data() + text.size() || !is_valid_element_type(number)) {
      return std::nullopt;
    }
    return static_cast<ElementType>(number);
  }
  // Names are matched case-insensitively so "FLOAT" (the TensorProto enum spelling) works too.
  std::string lower(text);
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  for (const auto& info : kTypes) {
    if (info.type != ElementType::undefined && info.name == lower) return info.type;
  }
  for (const auto& alias : kAliases) {
    if (alias.text == lower) return alias.type;
  }
  return std::nullopt;
}

std::size_t element_size(ElementType type) {
  const auto number = static_cast<int32_t>(type);
  if (number < 0 || number >= static_cast<int32_t>(kTypes.size())) return 0;
  return kTypes[static_cast<std::size_t>(number)].size;
}

bool is_fixed_size(ElementType type) { return element_size(type) != 0; }

bool is_valid_element_type(int32_t number) {
  return number > 0 && number < static_cast<int32_t>(kTypes.size());
}

const std::vector<ElementType>& supported_element_types() {
  static const std::vector<ElementType> types{
      ElementType::float32, ElementType::uint8,   ElementType::int8,    ElementType::uint16,
      ElementType::int16,   ElementType::int32,   ElementType::int64,   ElementType::boolean,
      ElementType::float16, ElementType::float64, ElementType::uint32,  ElementType::uint64,
      ElementType::bfloat16,
  };
  return types;
}

}  // namespace onnx_light::runtime
