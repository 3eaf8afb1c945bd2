#include "onnx_light/runtime/model_validation.h"

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <onnx/checker.h>
#include <onnx/defs/schema.h>

#include "onnx_light/runtime/error.h"

namespace onnx_light::runtime {

int64_t newest_schema_opset() {
  const auto& ranges = onnx::OpSchemaRegistry::DomainToVersionRange::Instance().Map();
  const auto it = ranges.find(onnx::ONNX_DOMAIN);
  return it == ranges.end() ? 0 : it->second.second;
}

namespace {

bool default_domain(const std::string& domain) { return domain.empty() || domain == "ai.onnx"; }

std::string node_name(const onnx::NodeProto& node, int index) {
  return node.name().empty() ? fmt::format("{} node #{}", node.op_type(), index)
                             : fmt::format("{} node '{}' (#{})", node.op_type(), node.name(), index);
}

// An empty list attribute (FLOATS with no floats) reads as absent; ONNX's Verify insists on the
// field, which an empty repeated field cannot show. Such attributes are dropped from the copy
// that is verified.
bool empty_list(const onnx::AttributeProto& a) {
  switch (a.type()) {
    case onnx::AttributeProto::FLOATS: return a.floats_size() == 0;
    case onnx::AttributeProto::INTS: return a.ints_size() == 0;
    case onnx::AttributeProto::STRINGS: return a.strings_size() == 0;
    case onnx::AttributeProto::TENSORS: return a.tensors_size() == 0;
    case onnx::AttributeProto::GRAPHS: return a.graphs_size() == 0;
    default: return false;
  }
}

// Operators of ai.onnx opset 18 (the one implemented opset past ONNX 1.12's schemas) whose inputs
// or attributes changed from their opset <= 17 definition.
bool changed_after_schemas(const std::string& op_type) {
  static const std::set<std::string> changed{
      "ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp", "ReduceMax", "ReduceMean", "ReduceMin",
      "ReduceProd", "ReduceSumSquare", "Pad", "Resize", "Split", "ScatterND", "ScatterElements", "LpPool",
      "OptionalHasElement", "OptionalGetElement"};
  return changed.contains(op_type);
}

}  // namespace

void validate_model(const Model& model, bool allow_newer_opset) {
  std::vector<std::string> problems;
  const int64_t opset = model.opset_version("");
  if (opset > kNewestImplementedOpset && !allow_newer_opset) {
    throw ModelError(fmt::format("{}: the model imports ai.onnx opset {}, newer than the newest this runtime "
                                 "implements ({}); operators may have changed meaning since. Export it for opset "
                                 "{}, or allow it (run --allow-newer-opset, "
                                 "RuntimeSessionOptions::allow_newer_opset) to run it as opset {}",
                                 model.origin(), opset, kNewestImplementedOpset, kNewestImplementedOpset,
                                 kNewestImplementedOpset));
  }
  const int64_t schemas = newest_schema_opset();
  // Past the schemas we have, up to the newest implemented opset, a node is verified against the
  // newest schema we have unless its operator changed after it.
  if (opset <= 0 || opset > kNewestImplementedOpset) return;
  const auto& graph = model.proto().graph();
  for (int i = 0; i < graph.node_size(); ++i) {
    const onnx::NodeProto& node = graph.node(i);
    if (!default_domain(node.domain())) continue;
    if (opset > schemas && changed_after_schemas(node.op_type())) continue;
    const onnx::OpSchema* schema =
        onnx::OpSchemaRegistry::Schema(node.op_type(), static_cast<int>(std::min(opset, schemas)));
    if (schema == nullptr) continue;  // an operator ONNX does not have: the kernel table reports it
    if (schema->Deprecated()) continue;  // the kernels say what they accept of a deprecated op
    try {
      if (std::any_of(node.attribute().begin(), node.attribute().end(), empty_list)) {
        onnx::NodeProto copy = node;
        copy.clear_attribute();
        for (const auto& a : node.attribute())
          if (!empty_list(a)) *copy.add_attribute() = a;
        schema->Verify(copy);
      } else {
        schema->Verify(node);
      }
    } catch (const std::exception& e) {  // onnx::ValidationError
      std::string message = e.what();
      // ONNX appends "==> Context: Bad node spec for node. Name: ... OpType: ..."; the label says it.
      if (const auto context = message.find("==> Context:"); context != std::string::npos) message.erase(context);
      while (!message.empty() && (message.back() == ' ' || message.back() == '\n')) message.pop_back();
      if (message.starts_with("Node (")) {  // "Node (name) has input size 3 ...": the label names it
        if (const auto close = message.find(") "); close != std::string::npos) message.erase(0, close + 2);
      }
      problems.push_back(fmt::format("{} (opset {}): {}", node_name(node, i), opset, message));
    }
  }
  if (!problems.empty()) {
    throw ModelError(fmt::format("{}: {} node{} break{} the operator schema:\n  {}", model.origin(), problems.size(),
                                 problems.size() == 1 ? "" : "s", problems.size() == 1 ? "s" : "",
                                 fmt::join(problems, "\n  ")));
  }
}

}  // namespace onnx_light::runtime
