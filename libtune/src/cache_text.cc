#include "cache_text.h"

#include <cmath>
#include <cstdint>
#include <sstream>

#include <fmt/format.h>

namespace onnx_light::tune {

std::string toml_quote(std::string_view text) {
  std::string out;
  out.reserve(text.size() + 2);
  out += '"';
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\b': out += "\\b"; break;
      case '\t': out += "\\t"; break;
      case '\n': out += "\\n"; break;
      case '\f': out += "\\f"; break;
      case '\r': out += "\\r"; break;
      default:
        if (byte < 0x20 || byte == 0x7F) {
          out += fmt::format("\\u{:04X}", byte);
        } else {
          out += c;
        }
    }
  }
  out += '"';
  return out;
}

std::string toml_value_literal(const runtime::TuningValue& value) {
  if (const auto* integer = std::get_if<int64_t>(&value)) return fmt::format("{}", *integer);
  if (const auto* boolean = std::get_if<bool>(&value)) return *boolean ? "true" : "false";
  if (const auto* text = std::get_if<std::string>(&value)) return toml_quote(*text);
  const double number = std::get<double>(value);
  if (std::isnan(number)) return "nan";
  if (std::isinf(number)) return number < 0 ? "-inf" : "inf";
  std::string out = fmt::format("{}", number);  // shortest text that round-trips
  if (out.find_first_of(".e") == std::string::npos) out += ".0";  // keep it a float in TOML
  return out;
}

namespace {

bool digits(std::string_view text, std::size_t at, std::size_t count, int& value) {
  if (at + count > text.size()) return false;
  value = 0;
  for (std::size_t i = at; i < at + count; ++i) {
    if (text[i] < '0' || text[i] > '9') return false;
    value = value * 10 + (text[i] - '0');
  }
  return true;
}

int days_in_month(int year, int month) {
  static constexpr int kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  const bool leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
  return month == 2 && leap ? 29 : kDays[month - 1];
}

}  // namespace

bool is_canonical_date_time(std::string_view text) {
  int year = 0, month = 0, day = 0, hour = 0, minute = 0, second = 0;
  if (!digits(text, 0, 4, year) || text.size() < 19 || text[4] != '-' || !digits(text, 5, 2, month) ||
      text[7] != '-' || !digits(text, 8, 2, day) || text[10] != 'T' || !digits(text, 11, 2, hour) ||
      text[13] != ':' || !digits(text, 14, 2, minute) || text[16] != ':' || !digits(text, 17, 2, second)) {
    return false;
  }
  if (month < 1 || month > 12 || day < 1 || day > days_in_month(year, month) || hour > 23 || minute > 59 ||
      second > 59) {
    return false;
  }
  std::size_t at = 19;
  if (at < text.size() && text[at] == '.') {
    const std::size_t start = ++at;
    while (at < text.size() && text[at] >= '0' && text[at] <= '9') ++at;
    const std::size_t count = at - start;
    if (count == 0 || count > 9 || text[at - 1] == '0') return false;  // canonical: no trailing zeros
  }
  if (at == text.size()) return true;  // local date-time
  if (text[at] == 'Z') return at + 1 == text.size();
  int offset_hours = 0, offset_minutes = 0;
  if ((text[at] != '+' && text[at] != '-') || text.size() != at + 6 || !digits(text, at + 1, 2, offset_hours) ||
      text[at + 3] != ':' || !digits(text, at + 4, 2, offset_minutes)) {
    return false;
  }
  return offset_hours <= 23 && offset_minutes <= 59 && (offset_hours != 0 || offset_minutes != 0);
}

bool is_valid_utf8(std::string_view text) {
  std::size_t i = 0;
  while (i < text.size()) {
    const auto c = static_cast<unsigned char>(text[i]);
    std::size_t length = 0;
    uint32_t code = 0;
    if (c < 0x80) {
      ++i;
      continue;
    } else if ((c & 0xE0) == 0xC0) {
      length = 2, code = c & 0x1F;
    } else if ((c & 0xF0) == 0xE0) {
      length = 3, code = c & 0x0F;
    } else if ((c & 0xF8) == 0xF0) {
      length = 4, code = c & 0x07;
    } else {
      return false;
    }
    if (i + length > text.size()) return false;
    for (std::size_t k = 1; k < length; ++k) {
      const auto next = static_cast<unsigned char>(text[i + k]);
      if ((next & 0xC0) != 0x80) return false;
      code = (code << 6) | (next & 0x3F);
    }
    static constexpr uint32_t kMinimum[] = {0, 0, 0x80, 0x800, 0x10000};
    if (code < kMinimum[length] || code > 0x10FFFF || (code >= 0xD800 && code <= 0xDFFF)) return false;
    i += length;
  }
  return true;
}

std::string toml_value_text(const toml::node& node) {
  std::ostringstream out;
  node.visit([&](const auto& value) { out << value; });
  std::string text = out.str();
  if (text.size() > 60) text = text.substr(0, 57) + "...";
  return text;
}

}  // namespace onnx_light::tune
