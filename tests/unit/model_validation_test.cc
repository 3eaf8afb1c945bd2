// Model validation at load: opset range and ONNX operator schemas, every problem named.
#include <string>

#include <doctest/doctest.h>
#include <fmt/format.h>
#include <onnx/onnx_pb.h>

#include "onnx_light/runtime/error.h"
#include "onnx_light/runtime/model.h"
#include "onnx_light/runtime/model_validation.h"
#include "onnx_light/runtime/session.h"

using namespace onnx_light;
using namespace onnx_light::runtime;

namespace {

Model text_model(int64_t opset, const std::string& body, const std::string& signature = "(float[4] x) => (float[4] y)") {
  return parse_model_text(fmt::format("<ir_version: 8, opset_import: [\"\" : {}]>\ng {} {{\n{}\n}}", opset, signature, body),
                          "<hostile>");
}

std::string validation_error(const Model& model, bool allow_newer = false) {
  try {
    validate_model(model, allow_newer);
  } catch (const ModelError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("validation_refuses_more_inputs_than_the_operator_allows") {
  const std::string m = validation_error(text_model(13, "y = Abs(x, x, x)"));
  CAPTURE(m);
  CHECK(m.find("Abs node #0 (opset 13)") != std::string::npos);
  CHECK(m.find("input size 3 not in range [min=1, max=1]") != std::string::npos);
  // The session refuses it before building anything.
  CHECK_THROWS_AS(RuntimeSession(text_model(13, "y = Abs(x, x, x)")), ModelError);
}

TEST_CASE("validation_names_missing_required_and_mistyped_attributes_of_every_node") {
  const std::string m = validation_error(text_model(13,
                                                    "a = Cast(x)\n"
                                                    "y = Gemm <transB = 1.5> (a, a)",
                                                    "(float[4, 4] x) => (float[4, 4] y)"));
  CAPTURE(m);
  CHECK(m.find("2 nodes break the operator schema") != std::string::npos);
  CHECK(m.find("Cast node #0") != std::string::npos);
  CHECK(m.find("Required attribute 'to' is missing") != std::string::npos);
  CHECK(m.find("Gemm node #1") != std::string::npos);
  CHECK(m.find("transB") != std::string::npos);
}

TEST_CASE("validation_accepts_well_formed_models_and_empty_list_attributes") {
  CHECK(validation_error(text_model(13, "y = Abs(x)")).empty());
  CHECK(validation_error(text_model(17, "y = Relu(x)")).empty());
  // An empty list attribute reads as absent (ONNX's Verify alone would insist on the field).
  onnx::ModelProto proto = text_model(13, "y = Transpose(x)").proto();
  auto* perm = proto.mutable_graph()->mutable_node(0)->add_attribute();
  perm->set_name("perm");
  perm->set_type(onnx::AttributeProto::INTS);
  CHECK(validation_error(model_from_proto(proto, "<empty perm>")).empty());
  // ... but an attribute the operator does not have is still refused.
  perm->set_name("permutation");
  perm->add_ints(0);
  CHECK(validation_error(model_from_proto(proto, "<bad name>")).find("Unrecognized attribute: permutation") !=
        std::string::npos);
}

TEST_CASE("validation_checks_opset_18_nodes_except_operators_changed_in_18") {
  CHECK(validation_error(text_model(18, "y = Abs(x, x)")).find("input size 2") != std::string::npos);
  // ReduceMean-18 takes axes as an input; the opset-13 schema would reject it.
  CHECK(validation_error(text_model(18, "a = Constant <value = int64[1] {0}> ()\ny = ReduceMean(x, a)",
                                    "(float[4] x) => (float[1] y)"))
            .empty());
}

TEST_CASE("validation_refuses_an_opset_newer_than_implemented_unless_allowed") {
  const Model future = text_model(1000000, "y = Abs(x)");
  const std::string m = validation_error(future);
  CHECK(m.find("opset 1000000") != std::string::npos);
  CHECK(m.find(fmt::format("({})", kNewestImplementedOpset)) != std::string::npos);
  CHECK(validation_error(future, /*allow_newer=*/true).empty());
  RuntimeSessionOptions options;
  CHECK_THROWS_AS(RuntimeSession(future, options), ModelError);
  options.allow_newer_opset = true;
  CHECK_NOTHROW(RuntimeSession(future, options));
  CHECK(kNewestImplementedOpset >= newest_schema_opset());
}
