#include "onnx_light/runtime/tuning_schema.h"

#include <algorithm>
#include <cctype>
#include <cmath>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace onnx_light::runtime {

namespace {

bool is_identifier(std::string_view segment) {
  if (segment.empty()) return false;
  if (!(std::isalpha(static_cast<unsigned char>(segment[0])) || segment[0] == '_')) return false;
  return std::all_of(segment.begin(), segment.end(),
                     [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
}

std::optional<double> numeric(const TuningValue& value) {
  if (const auto* i = std::get_if<int64_t>(&value)) return static_cast<double>(*i);
  if (const auto* d = std::get_if<double>(&value)) return *d;
  return std::nullopt;
}

}  // namespace

bool is_valid_parameter_name(std::string_view name) {
  std::size_t start = 0;
  while (true) {
    std::size_t dot = name.find('.', start);
    std::string_view segment = name.substr(start, dot == std::string_view::npos ? name.npos : dot - start);
    if (!is_identifier(segment)) return false;
    if (dot == std::string_view::npos) return true;
    start = dot + 1;
  }
}

std::string ParameterSpec::validate(const TuningValue& value) const {
  if (value_type_of(value) != type)
    return fmt::format("{}: expected {}, got {} '{}'", name, value_type_name(type),
                       value_type_name(value_type_of(value)), format_value(value));
  if (const auto* d = std::get_if<double>(&value); d && !std::isfinite(*d))
    return fmt::format("{}: {} is not finite", name, *d);
  if (auto number = numeric(value)) {
    if (minimum && *number < *minimum) return fmt::format("{}: {} is below the minimum {}", name, format_value(value), *minimum);
    if (maximum && *number > *maximum) return fmt::format("{}: {} is above the maximum {}", name, format_value(value), *maximum);
  }
  if (!allowed.empty() && std::find(allowed.begin(), allowed.end(), value) == allowed.end()) {
    std::string options;
    for (const auto& a : allowed) options += (options.empty() ? "" : ", ") + format_value(a);
    return fmt::format("{}: {} is not one of [{}]", name, format_value(value), options);
  }
  return {};
}

const ParameterSpec* TuningSchema::find(std::string_view name) const {
  for (const auto& p : parameters)
    if (p.name == name) return &p;
  return nullptr;
}

TuningValues TuningSchema::defaults() const {
  TuningValues values;
  for (const auto& p : parameters) values.emplace(p.name, p.default_value);
  return values;
}

std::vector<std::string> TuningSchema::parameter_names() const {
  std::vector<std::string> names;
  for (const auto& p : parameters) names.push_back(p.name);
  std::sort(names.begin(), names.end());
  return names;
}

bool TuningSchema::has_threshold() const {
  return std::any_of(parameters.begin(), parameters.end(),
                     [](const ParameterSpec& p) { return p.role == ParameterRole::threshold; });
}

std::vector<std::string> TuningSchema::validate(const TuningValues& values) const {
  std::vector<std::string> problems;
  for (const auto& [name, value] : values) {
    const ParameterSpec* spec = find(name);
    if (spec == nullptr) {
      problems.push_back(fmt::format("{}: unknown parameter for {} (known: {})", name, key.to_string(),
                                     fmt::format("{}", fmt::join(parameter_names(), ", "))));
      continue;
    }
    if (auto message = spec->validate(value); !message.empty()) problems.push_back(std::move(message));
  }
  for (const auto& p : parameters)
    if (!values.contains(p.name)) problems.push_back(fmt::format("{}: missing", p.name));
  return problems;
}

ParameterSpec threshold_parameter(std::string name, int64_t default_value, int64_t maximum, std::string description) {
  ParameterSpec spec;
  spec.name = std::move(name);
  spec.type = ValueType::int64;
  spec.default_value = default_value;
  spec.role = ParameterRole::threshold;
  spec.minimum = 1;
  spec.maximum = static_cast<double>(maximum);
  spec.description = std::move(description);
  return spec;
}

ParameterSpec tile_parameter(std::string name, int64_t default_value, std::vector<int64_t> allowed,
                             std::string description) {
  ParameterSpec spec;
  spec.name = std::move(name);
  spec.type = ValueType::int64;
  spec.default_value = default_value;
  spec.role = ParameterRole::tile;
  for (int64_t a : allowed) spec.allowed.emplace_back(a);
  spec.description = std::move(description);
  return spec;
}

TuningSchema parallel_threshold_schema(TuningKey key, int64_t default_minimum_elements) {
  return TuningSchema{std::move(key),
                      {threshold_parameter("parallel.minimum_elements", default_minimum_elements, int64_t{1} << 40,
                                           "Smallest element count run in parallel; smaller inputs run on one thread.")}};
}

}  // namespace onnx_light::runtime
