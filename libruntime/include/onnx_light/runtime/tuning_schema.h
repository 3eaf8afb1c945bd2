#pragma once
// What a kernel variant can be tuned with: parameters, their types, portable defaults and rules.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "onnx_light/runtime/tuning_key.h"
#include "onnx_light/runtime/tuning_value.h"

namespace onnx_light::runtime {

// How the calibration engine may search a parameter.
enum class ParameterRole {
  plain,      // no automatic search; explicit comparison only
  threshold,  // a work size from which parallel execution pays off (doubling search)
  tile,       // a blocking size (explicit comparison among allowed values)
};

struct ParameterSpec {
  std::string name;  // dot-separated identifier segments, e.g. "parallel.minimum_elements"
  ValueType type = ValueType::int64;
  TuningValue default_value = int64_t{0};
  ParameterRole role = ParameterRole::plain;
  // Rules: inclusive range for numbers, allowed set for strings/ints, finiteness for doubles.
  std::optional<double> minimum;
  std::optional<double> maximum;
  std::vector<TuningValue> allowed;
  std::string description;

  // Empty when valid, else a message naming the parameter and the rule broken.
  std::string validate(const TuningValue& value) const;
};

struct TuningSchema {
  TuningKey key;
  std::vector<ParameterSpec> parameters;

  const ParameterSpec* find(std::string_view name) const;
  TuningValues defaults() const;
  std::vector<std::string> parameter_names() const;
  bool has_threshold() const;
  // Checks every name exists, every type matches and every rule holds, and that no
  // parameter is missing. Returns one message per problem (empty when valid).
  std::vector<std::string> validate(const TuningValues& values) const;
};

// True when a parameter name is dot-separated identifier segments.
bool is_valid_parameter_name(std::string_view name);

// An int64 work-size threshold in [1, maximum] that the calibration engine can search.
ParameterSpec threshold_parameter(std::string name, int64_t default_value, int64_t maximum, std::string description);

// An int64 tile size chosen from `allowed` (the values comparison mode can try).
ParameterSpec tile_parameter(std::string name, int64_t default_value, std::vector<int64_t> allowed,
                             std::string description);

// The schema shared by every elementwise-style kernel: one parallel threshold.
TuningSchema parallel_threshold_schema(TuningKey key, int64_t default_minimum_elements);

}  // namespace onnx_light::runtime
