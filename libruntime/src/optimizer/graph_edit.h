#pragma once
// What every optimizer pass shares: the model being rewritten, who produces and who reads each
// value, constant values, inferred shapes, and the edits (fresh names, new initializers, nodes
// marked for removal and compacted after the pass).
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <onnx/onnx_pb.h>

#include "onnx_light/runtime/external_data.h"
#include "onnx_light/runtime/kernel_table.h"
#include "onnx_light/runtime/tensor.h"

namespace onnx_light::runtime::optimizer {

// A value's inferred type and shape (onnx shape inference); dims are -1 when not a number.
struct ValueShape {
  int32_t element_type = 0;
  bool has_shape = false;
  std::vector<int64_t> dims;
  std::vector<std::string> symbols;  // dim_param where dims[d] == -1 ("" when unnamed)
  bool is_static() const;
};

// True when both shapes are known and every dim is the same number or the same named symbol.
bool same_shape(const ValueShape& a, const ValueShape& b);

class GraphEdit {
 public:
  // `external`: where the model's external initializers are read from (nullptr: none).
  GraphEdit(onnx::ModelProto& model, const KernelTable& table, const ExternalDataDirectory* external = nullptr);

  onnx::ModelProto& model() { return model_; }
  onnx::GraphProto& graph() { return *model_.mutable_graph(); }
  const KernelTable& table() const { return table_; }
  int64_t opset(std::string_view domain = "") const;
  // Adds an opset import for `domain` (version 1) unless the model has one.
  void import_domain(const std::string& domain);

  // Rebuilds producers and readers from the nodes not marked removed.
  void index();
  // Drops the nodes marked removed (keeping the others' order).
  void compact();
  void remove(int node) { removed_[static_cast<std::size_t>(node)] = true; }
  bool removed(int node) const { return removed_[static_cast<std::size_t>(node)]; }
  int node_count() const { return graph().node_size(); }
  onnx::NodeProto& node(int i) { return *graph().mutable_node(i); }

  // The node producing `value`, or -1 (graph input, initializer, unknown).
  int producer(const std::string& value) const;
  // Reading nodes, one entry per node (a node reading twice appears once).
  const std::vector<int>& readers(const std::string& value) const;
  bool is_graph_output(const std::string& value) const { return outputs_.contains(value); }
  bool is_graph_input(const std::string& value) const { return inputs_.contains(value); }
  // True when `node` is the only reader of `value` and `value` is not a graph output.
  bool sole_reader(const std::string& value, int node) const;
  // The reader of `value` when it has exactly one and is no graph output; -1 otherwise.
  int only_reader(const std::string& value) const;

  // An initializer that is not a graph input, or a Constant node's output; nullopt otherwise.
  std::optional<Tensor> constant(const std::string& value);
  bool is_constant(const std::string& value);
  // A float scalar (any rank, one element) constant; nullopt otherwise.
  std::optional<float> scalar(const std::string& value);
  // Adds an initializer named `name` (use fresh_name for new values).
  void add_initializer(const Tensor& tensor, const std::string& name);
  std::string fresh_name(const std::string& base);
  // Drops initializers no node reads and that are not graph outputs or inputs.
  int64_t drop_unused_initializers();
  // Every read of `from` (node inputs) now reads `to`.
  void replace_reads(const std::string& from, const std::string& to);

  // Runs onnx shape inference on a copy (large initializers' data stripped) and records shapes.
  void infer_shapes();
  const ValueShape* shape(const std::string& value) const;
  void set_shape(const std::string& value, ValueShape s) { shapes_[value] = std::move(s); }

 private:
  const onnx::GraphProto& graph() const { return model_.graph(); }

  onnx::ModelProto& model_;
  const KernelTable& table_;
  const ExternalDataDirectory* external_ = nullptr;
  std::vector<bool> removed_;
  std::unordered_map<std::string, int> producer_;
  std::unordered_map<std::string, std::vector<int>> readers_;
  std::set<std::string> outputs_, inputs_;
  std::unordered_map<std::string, int> initializers_;  // name -> index in graph().initializer
  std::unordered_map<std::string, Tensor> constants_;   // decoded on first use
  std::unordered_map<std::string, ValueShape> shapes_;
  std::set<std::string> names_;
  int64_t next_name_ = 0;
};

// Node helpers.
bool is_op(const onnx::NodeProto& node, std::string_view op_type);  // ai.onnx domain
const onnx::AttributeProto* find_attribute(const onnx::NodeProto& node, std::string_view name);
int64_t int_attribute(const onnx::NodeProto& node, std::string_view name, int64_t fallback);
float float_attribute(const onnx::NodeProto& node, std::string_view name, float fallback);
// The input of a two-input node that is not `value` ("" when both or neither are).
std::string other_input(const onnx::NodeProto& node, const std::string& value);
// True when `value`'s inferred element type is float32.
bool is_float32(const GraphEdit& g, const std::string& value);
// `operand`'s value when it is a float32 constant of one element whose rank does not exceed
// `value`'s, so an elementwise op of the two keeps value's shape; nullopt otherwise.
std::optional<float> shape_keeping_scalar(GraphEdit& g, const std::string& operand, const std::string& value);
// Clip's {min, max} when constant (attributes before opset 11, inputs since); nullopt otherwise.
std::optional<std::pair<float, float>> clip_bounds(GraphEdit& g, const onnx::NodeProto& clip);

}  // namespace onnx_light::runtime::optimizer
