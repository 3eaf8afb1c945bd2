#pragma once
// Typed tuning values: int64, double, bool or string.
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <variant>

namespace onnx_light::runtime {

enum class ValueType { int64, float64, boolean, string };

using TuningValue = std::variant<int64_t, double, bool, std::string>;
// Parameter name -> value, sorted by name.
using TuningValues = std::map<std::string, TuningValue>;

std::string_view value_type_name(ValueType type);  // "int64", "double", "bool", "string"
ValueType value_type_of(const TuningValue& value);
std::string format_value(const TuningValue& value);
// Parses text as the given type ("16384", "0.5", "true", "avx2"); throws InvalidValueError naming `field`.
// Integers accept binary size suffixes (K, M, G) and underscores for readability.
TuningValue parse_value(std::string_view text, ValueType type, std::string_view field);

}  // namespace onnx_light::runtime
