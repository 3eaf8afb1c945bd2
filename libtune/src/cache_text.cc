#include "cache_text.h"

#include <cmath>
#include <cstdint>
#include <optional>
#include <utility>
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

namespace {

// The fields of an RFC 3339 date-time as format_date_time writes them, range-checked; fraction and
// offset optional.
struct DateTimeFields {
  int year = 0, month = 0, day = 0, hour = 0, minute = 0, second = 0;
  int32_t nanoseconds = 0;
  bool trailing_zero = false;  // the fraction ends in 0 (not canonical)
  bool has_offset = false;     // Z or +HH:MM / -HH:MM
  int offset_minutes = 0;      // east of UTC
  bool zero_numeric_offset = false;  // +00:00 (canonical is Z)
};

std::optional<DateTimeFields> read_date_time(std::string_view text) {
  DateTimeFields f;
  if (!digits(text, 0, 4, f.year) || text.size() < 19 || text[4] != '-' || !digits(text, 5, 2, f.month) ||
      text[7] != '-' || !digits(text, 8, 2, f.day) || text[10] != 'T' || !digits(text, 11, 2, f.hour) ||
      text[13] != ':' || !digits(text, 14, 2, f.minute) || text[16] != ':' || !digits(text, 17, 2, f.second)) {
    return std::nullopt;
  }
  if (f.month < 1 || f.month > 12 || f.day < 1 || f.day > days_in_month(f.year, f.month) || f.hour > 23 ||
      f.minute > 59 || f.second > 59) {
    return std::nullopt;
  }
  std::size_t at = 19;
  if (at < text.size() && text[at] == '.') {
    const std::size_t start = ++at;
    while (at < text.size() && text[at] >= '0' && text[at] <= '9') ++at;
    const std::size_t count = at - start;
    if (count == 0 || count > 9) return std::nullopt;
    f.trailing_zero = text[at - 1] == '0';
    for (std::size_t i = start; i < start + 9; ++i) f.nanoseconds = f.nanoseconds * 10 + (i < at ? text[i] - '0' : 0);
  }
  if (at == text.size()) return f;  // local date-time
  f.has_offset = true;
  if (text[at] == 'Z') return at + 1 == text.size() ? std::optional(f) : std::nullopt;
  int offset_hours = 0, offset_minutes = 0;
  if ((text[at] != '+' && text[at] != '-') || text.size() != at + 6 || !digits(text, at + 1, 2, offset_hours) ||
      text[at + 3] != ':' || !digits(text, at + 4, 2, offset_minutes) || offset_hours > 23 || offset_minutes > 59) {
    return std::nullopt;
  }
  f.offset_minutes = (text[at] == '-' ? -1 : 1) * (offset_hours * 60 + offset_minutes);
  f.zero_numeric_offset = f.offset_minutes == 0;
  return f;
}

// Days from 1970-01-01 to a proleptic Gregorian date (Howard Hinnant's days_from_civil).
int64_t days_from_civil(int64_t year, int64_t month, int64_t day) {
  year -= month <= 2 ? 1 : 0;
  const int64_t era = (year >= 0 ? year : year - 399) / 400;
  const int64_t year_of_era = year - era * 400;
  const int64_t day_of_year = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1;
  const int64_t day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
  return era * 146097 + day_of_era - 719468;
}

}  // namespace

bool is_canonical_date_time(std::string_view text) {
  const auto fields = read_date_time(text);
  return fields && !fields->trailing_zero && !fields->zero_numeric_offset;
}

std::optional<std::pair<int64_t, int32_t>> date_time_instant(std::string_view text) {
  const auto f = read_date_time(text);
  if (!f) return std::nullopt;
  const int64_t seconds = days_from_civil(f->year, f->month, f->day) * 86400 + f->hour * 3600 + f->minute * 60 +
                          f->second - int64_t{f->offset_minutes} * 60;
  return std::make_pair(seconds, f->nanoseconds);
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
