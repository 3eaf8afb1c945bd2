#include "onnx_light/runtime/tuning_value.h"

#include <cctype>
#include <charconv>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "onnx_light/runtime/error.h"

namespace onnx_light::runtime {

std::string_view value_type_name(ValueType type) {
  switch (type) {
    case ValueType::int64: return "int64";
    case ValueType::float64: return "double";
    case ValueType::boolean: return "bool";
    case ValueType::string: return "string";
  }
  return "unknown";
}

ValueType value_type_of(const TuningValue& value) {
  switch (value.index()) {
    case 0: return ValueType::int64;
    case 1: return ValueType::float64;
    case 2: return ValueType::boolean;
    default: return ValueType::string;
  }
}

std::string format_value(const TuningValue& value) {
  return std::visit(
      [](const auto& v) -> std::string {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, bool>) return v ? "true" : "false";
        else if constexpr (std::is_same_v<T, std::string>) return v;
        else if constexpr (std::is_same_v<T, double>) return fmt::format("{}", v);
        else return fmt::format("{}", v);
      },
      value);
}

namespace {

std::string strip_underscores(std::string_view text) {
  std::string out;
  for (char c : text)
    if (c != '_') out.push_back(c);
  return out;
}

}  // namespace

TuningValue parse_value(std::string_view text, ValueType type, std::string_view field) {
  switch (type) {
    case ValueType::int64: {
      std::string digits = strip_underscores(text);
      int64_t multiplier = 1;
      if (!digits.empty()) {
        char suffix = static_cast<char>(std::toupper(static_cast<unsigned char>(digits.back())));
        if (suffix == 'K') multiplier = int64_t{1} << 10;
        else if (suffix == 'M') multiplier = int64_t{1} << 20;
        else if (suffix == 'G') multiplier = int64_t{1} << 30;
        if (multiplier != 1) digits.pop_back();
      }
      int64_t value = 0;
      auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
      if (digits.empty() || ec != std::errc{} || end != digits.data() + digits.size())
        throw InvalidValueError(fmt::format("{}: '{}' is not an integer", field, text));
      if (value > std::numeric_limits<int64_t>::max() / multiplier ||
          value < std::numeric_limits<int64_t>::min() / multiplier)
        throw InvalidValueError(fmt::format("{}: '{}' is out of the int64 range", field, text));
      return value * multiplier;
    }
    case ValueType::float64: {
      std::string digits = strip_underscores(text);
      double value = 0;
      auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
      if (digits.empty() || ec != std::errc{} || end != digits.data() + digits.size())
        throw InvalidValueError(fmt::format("{}: '{}' is not a number", field, text));
      return value;
    }
    case ValueType::boolean: {
      if (text == "true" || text == "1" || text == "yes" || text == "on") return true;
      if (text == "false" || text == "0" || text == "no" || text == "off") return false;
      throw InvalidValueError(fmt::format("{}: '{}' is not a boolean (true/false)", field, text));
    }
    case ValueType::string: return std::string(text);
  }
  throw InvalidValueError(fmt::format("{}: unknown value type", field));
}

}  // namespace onnx_light::runtime
