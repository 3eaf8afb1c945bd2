// What is out of scope (string tensors, ai.onnx.preview.training) is said so at session creation,
// naming the node or input, and listed by out_of_scope_summary (onnx-light-tune --version).
#include <doctest/doctest.h>

#include <string>

#include "onnx_light/runtime/error.h"
#include "onnx_light/runtime/runtime_scope.h"
#include "onnx_light/runtime/session.h"
#include "test_models.h"

using namespace onnx_light;
using namespace onnx_light::runtime;

namespace {

// The message session creation fails with (empty when it does not fail).
std::string scope_creation_error(const std::string& text) {
  try {
    RuntimeSession session(test::parse(text), RuntimeSessionOptions{});
  } catch (const Error& e) {
    return e.what();
  }
  return {};
}

}  // namespace

TEST_CASE("out_of_scope_reason_names_string_operators_and_the_training_domain_only") {
  CHECK(out_of_scope_reason("", "StringNormalizer") == string_tensors_out_of_scope());
  CHECK(out_of_scope_reason("ai.onnx", "TfIdfVectorizer") == string_tensors_out_of_scope());
  CHECK(out_of_scope_reason("ai.onnx.preview.training", "Adam").find("training operators") != std::string_view::npos);
  CHECK(out_of_scope_reason("", "Abs").empty());
  CHECK(out_of_scope_reason("com.example", "StringNormalizer").empty());  // another domain's op of that name
  CHECK(out_of_scope_reason("", "NoSuchOperator").empty());
  const std::string summary = out_of_scope_summary();
  for (const char* name : {"string tensors", "StringNormalizer", "TfIdfVectorizer", "Adagrad", "Adam", "Momentum"})
    CHECK(summary.find(name) != std::string::npos);
}

TEST_CASE("string_operator_and_string_input_are_refused_as_out_of_scope_naming_them") {
  const std::string message = scope_creation_error(
      "<ir_version: 8, opset_import: [\"\" : 17]>\n"
      "g (string[2] x) => (string[2] y) { y = StringNormalizer <case_change_action = \"LOWER\"> (x) }");
  CAPTURE(message);
  CHECK(message.find("graph input 'x' has element type string") != std::string::npos);
  CHECK(message.find("StringNormalizer node") != std::string::npos);
  CHECK(message.find("string tensors are out of scope") != std::string::npos);
}

TEST_CASE("training_operator_is_refused_as_out_of_scope_naming_the_node") {
  const std::string message = scope_creation_error(
      "<ir_version: 8, opset_import: [\"\" : 17, \"ai.onnx.preview.training\" : 1]>\n"
      "g (float[2] r, int64 t, float[2] x, float[2] g, float[2] h) => (float[2] x2, float[2] h2) {\n"
      " x2, h2 = ai.onnx.preview.training.Adagrad (r, t, x, g, h) }");
  CAPTURE(message);
  CHECK(message.find("Adagrad node") != std::string::npos);
  CHECK(message.find("training operators (ai.onnx.preview.training) are out of scope") != std::string::npos);
}

TEST_CASE("cast_to_string_is_refused_as_out_of_scope") {
  const std::string message = scope_creation_error(
      "<ir_version: 8, opset_import: [\"\" : 17]>\n"
      "g (float[2] x) => (string[2] y) { y = Cast <to = 8> (x) }");
  CAPTURE(message);
  CHECK(message.find("casting to element type string is not supported") != std::string::npos);
  CHECK(message.find("string tensors are out of scope") != std::string::npos);
}

TEST_CASE("an_operator_merely_missing_is_not_called_out_of_scope") {
  const std::string message = scope_creation_error(
      "<ir_version: 8, opset_import: [\"\" : 17, \"com.example\" : 1]>\n"
      "g (float[2] x) => (float[2] y) { y = com.example.Frobnicate (x) }");
  CAPTURE(message);
  CHECK(message.find("is not implemented") != std::string::npos);
  CHECK(message.find("out of scope") == std::string::npos);
}
