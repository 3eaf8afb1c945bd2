#include "onnx_light/runtime/runtime_scope.h"

#include <array>

#include <fmt/format.h>

namespace onnx_light::runtime {

namespace {

constexpr std::string_view kStrings = "string tensors are out of scope for onnx-light (it runs numeric and bool tensors only)";
constexpr std::string_view kTraining =
    "training operators (ai.onnx.preview.training) are out of scope for onnx-light (it runs inference only)";
constexpr std::string_view kTrainingDomain = "ai.onnx.preview.training";
// The default domain's operators that exist only for string tensors.
constexpr std::array<std::string_view, 2> kStringOperators{"StringNormalizer", "TfIdfVectorizer"};

}  // namespace

std::string_view out_of_scope_reason(std::string_view domain, std::string_view op_type) {
  if (domain == kTrainingDomain) return kTraining;
  if (domain.empty() || domain == "ai.onnx")
    for (std::string_view op : kStringOperators)
      if (op == op_type) return kStrings;
  return {};
}

std::string_view string_tensors_out_of_scope() { return kStrings; }

std::string out_of_scope_summary() {
  return fmt::format("string tensors ({}, Cast to or from string); training operators of {} (Adagrad, Adam, Momentum)",
                     fmt::join(kStringOperators, ", "), kTrainingDomain);
}

}  // namespace onnx_light::runtime
