#include "optimizer/graph_edit.h"

#include <limits>

#include <onnx/shape_inference/implementation.h>

#include <fmt/format.h>

#include "onnx_light/runtime/error.h"
#include "onnx_light/runtime/tensor_proto.h"
#include "subgraph.h"

namespace onnx_light::runtime::optimizer {

bool ValueShape::is_static() const {
  if (!has_shape) return false;
  for (int64_t d : dims)
    if (d < 0) return false;
  return true;
}

bool same_shape(const ValueShape& a, const ValueShape& b) {
  if (!a.has_shape || !b.has_shape || a.dims.size() != b.dims.size()) return false;
  for (std::size_t d = 0; d < a.dims.size(); ++d) {
    if (a.dims[d] != b.dims[d]) return false;
    if (a.dims[d] < 0 && (a.symbols[d].empty() || a.symbols[d] != b.symbols[d])) return false;
  }
  return true;
}

bool is_op(const onnx::NodeProto& node, std::string_view op_type) {
  return node.op_type() == op_type && (node.domain().empty() || node.domain() == "ai.onnx");
}

const onnx::AttributeProto* find_attribute(const onnx::NodeProto& node, std::string_view name) {
  for (const auto& a : node.attribute())
    if (a.name() == name) return &a;
  return nullptr;
}

int64_t int_attribute(const onnx::NodeProto& node, std::string_view name, int64_t fallback) {
  const auto* a = find_attribute(node, name);
  return a != nullptr ? a->i() : fallback;
}

float float_attribute(const onnx::NodeProto& node, std::string_view name, float fallback) {
  const auto* a = find_attribute(node, name);
  return a != nullptr ? a->f() : fallback;
}

std::string other_input(const onnx::NodeProto& node, const std::string& value) {
  if (node.input_size() != 2) return {};
  if (node.input(0) == value && node.input(1) != value) return node.input(1);
  if (node.input(1) == value && node.input(0) != value) return node.input(0);
  return {};
}

GraphEdit::GraphEdit(onnx::ModelProto& model, const KernelTable& table, const ExternalDataDirectory* external)
    : model_(model), table_(table), external_(external) {
  index();
}

int64_t GraphEdit::opset(std::string_view domain) const {
  for (const auto& o : model_.opset_import()) {
    const bool onnx_domain = domain.empty() || domain == "ai.onnx";
    if (o.domain() == domain || (onnx_domain && (o.domain().empty() || o.domain() == "ai.onnx"))) return o.version();
  }
  return 0;
}

void GraphEdit::import_domain(const std::string& domain) {
  if (opset(domain) != 0) return;
  auto* o = model_.add_opset_import();
  o->set_domain(domain);
  o->set_version(1);
}

void GraphEdit::index() {
  removed_.resize(static_cast<std::size_t>(graph().node_size()), false);
  producer_.clear();
  readers_.clear();
  outputs_.clear();
  inputs_.clear();
  initializers_.clear();
  for (const auto& o : graph().output()) outputs_.insert(o.name());
  // Values a control-flow node's graphs read by name count as outputs: no pass may rename, fuse
  // away or drop them, since the reads inside those graphs are not rewritten.
  for (const auto& n : graph().node())
    if (has_subgraphs(n))
      for (const auto& name : implicit_inputs(n)) outputs_.insert(name);
  for (const auto& i : graph().input()) inputs_.insert(i.name());
  for (int i = 0; i < graph().initializer_size(); ++i) {
    initializers_[graph().initializer(i).name()] = i;
    names_.insert(graph().initializer(i).name());
  }
  for (int i = 0; i < graph().node_size(); ++i) {
    const auto& n = graph().node(i);
    if (!n.name().empty()) names_.insert(n.name());
    if (removed_[static_cast<std::size_t>(i)]) continue;
    for (const auto& out : n.output())
      if (!out.empty()) {
        producer_[out] = i;
        names_.insert(out);
      }
    for (int k = 0; k < n.input_size(); ++k) {
      const std::string& in = n.input(k);
      if (in.empty()) continue;
      auto& list = readers_[in];
      if (list.empty() || list.back() != i) list.push_back(i);
    }
  }
}

void GraphEdit::compact() {
  auto* nodes = graph().mutable_node();
  int kept = 0;
  for (int i = 0; i < nodes->size(); ++i) {
    if (removed_[static_cast<std::size_t>(i)]) continue;
    if (kept != i) nodes->SwapElements(kept, i);
    ++kept;
  }
  while (nodes->size() > kept) nodes->RemoveLast();
  removed_.assign(static_cast<std::size_t>(kept), false);
  index();
}

int GraphEdit::producer(const std::string& value) const {
  auto it = producer_.find(value);
  return it == producer_.end() ? -1 : it->second;
}

const std::vector<int>& GraphEdit::readers(const std::string& value) const {
  static const std::vector<int> none;
  auto it = readers_.find(value);
  return it == readers_.end() ? none : it->second;
}

bool GraphEdit::sole_reader(const std::string& value, int node) const {
  const auto& r = readers(value);
  return r.size() == 1 && r[0] == node && !is_graph_output(value);
}

int GraphEdit::only_reader(const std::string& value) const {
  const auto& r = readers(value);
  return r.size() == 1 && !is_graph_output(value) ? r[0] : -1;
}

bool is_float32(const GraphEdit& g, const std::string& value) {
  const ValueShape* s = g.shape(value);
  return s != nullptr && s->element_type == static_cast<int32_t>(ElementType::float32);
}

std::optional<float> shape_keeping_scalar(GraphEdit& g, const std::string& operand, const std::string& value) {
  auto c = g.constant(operand);
  if (!c || c->element_type() != ElementType::float32 || c->element_count() != 1) return std::nullopt;
  if (c->rank() > 0) {
    const ValueShape* s = g.shape(value);
    if (s == nullptr || !s->has_shape || s->dims.size() < c->rank()) return std::nullopt;
  }
  return c->data<float>()[0];
}

std::optional<std::pair<float, float>> clip_bounds(GraphEdit& g, const onnx::NodeProto& clip) {
  float lo = -std::numeric_limits<float>::infinity(), hi = std::numeric_limits<float>::infinity();
  if (g.opset() < 11) return std::pair{float_attribute(clip, "min", lo), float_attribute(clip, "max", hi)};
  if (clip.input_size() > 1 && !clip.input(1).empty()) {
    auto v = g.scalar(clip.input(1));
    if (!v) return std::nullopt;
    lo = *v;
  }
  if (clip.input_size() > 2 && !clip.input(2).empty()) {
    auto v = g.scalar(clip.input(2));
    if (!v) return std::nullopt;
    hi = *v;
  }
  return std::pair{lo, hi};
}

std::optional<Tensor> GraphEdit::constant(const std::string& value) {
  if (value.empty() || is_graph_input(value)) return std::nullopt;
  if (auto it = constants_.find(value); it != constants_.end()) return it->second;
  Tensor t;
  if (auto it = initializers_.find(value); it != initializers_.end()) {
    try {
      t = tensor_from_proto(graph().initializer(it->second), external_);
    } catch (const Error&) {
      return std::nullopt;  // the session reports it
    }
  } else {
    const int p = producer(value);
    if (p < 0 || !is_op(graph().node(p), "Constant")) return std::nullopt;
    const auto* a = find_attribute(graph().node(p), "value");
    if (a == nullptr || graph().node(p).attribute_size() != 1) return std::nullopt;  // the rarer forms stay nodes
    try {
      t = tensor_from_proto(a->t(), external_);
    } catch (const Error&) {
      return std::nullopt;
    }
  }
  constants_[value] = t;
  return t;
}

bool GraphEdit::is_constant(const std::string& value) { return constant(value).has_value(); }

std::optional<float> GraphEdit::scalar(const std::string& value) {
  auto t = constant(value);
  if (!t || t->element_count() != 1) return std::nullopt;
  if (t->element_type() == ElementType::float32) return *t->data<float>();
  if (t->element_type() == ElementType::float64) return static_cast<float>(*t->data<double>());
  return std::nullopt;
}

void GraphEdit::add_initializer(const Tensor& tensor, const std::string& name) {
  *graph().add_initializer() = tensor_to_proto(tensor, name);
  initializers_[name] = graph().initializer_size() - 1;
  constants_[name] = tensor;
  names_.insert(name);
  ValueShape s;
  s.element_type = static_cast<int32_t>(tensor.element_type());
  s.has_shape = true;
  s.dims.assign(tensor.shape().begin(), tensor.shape().end());
  s.symbols.assign(s.dims.size(), std::string());
  shapes_[name] = std::move(s);
}

std::string GraphEdit::fresh_name(const std::string& base) {
  for (;;) {
    std::string name = fmt::format("{}_opt{}", base, next_name_++);
    if (!names_.contains(name)) {
      names_.insert(name);
      return name;
    }
  }
}

int64_t GraphEdit::drop_unused_initializers() {
  auto* inits = graph().mutable_initializer();
  int kept = 0;
  int64_t dropped = 0;
  for (int i = 0; i < inits->size(); ++i) {
    const std::string& name = inits->Get(i).name();
    if (readers(name).empty() && !is_graph_output(name) && !is_graph_input(name)) {
      constants_.erase(name);
      ++dropped;
      continue;
    }
    if (kept != i) inits->SwapElements(kept, i);
    ++kept;
  }
  while (inits->size() > kept) inits->RemoveLast();
  index();
  return dropped;
}

void GraphEdit::replace_reads(const std::string& from, const std::string& to) {
  for (int i : std::vector<int>(readers(from))) {
    auto* n = graph().mutable_node(i);
    for (int k = 0; k < n->input_size(); ++k)
      if (n->input(k) == from) n->set_input(k, to);
  }
  index();
}

void GraphEdit::infer_shapes() {
  onnx::ModelProto copy = model_;
  // Shape inference reads initializer data only for shape-like inputs: big float data is dead weight.
  for (auto& init : *copy.mutable_graph()->mutable_initializer()) {
    int64_t count = 1;
    for (int64_t d : init.dims()) count *= d;
    if (count > 64 && init.data_type() != onnx::TensorProto::INT64) {
      init.clear_raw_data();
      init.clear_float_data();
      init.clear_double_data();
      init.clear_int32_data();
    }
  }
  try {
    onnx::shape_inference::InferShapes(copy);
  } catch (const std::exception&) {
    // Unknown shapes only disable the transforms that need them.
  }
  auto record = [&](const onnx::ValueInfoProto& v) {
    if (!v.type().has_tensor_type()) return;
    const auto& tt = v.type().tensor_type();
    ValueShape s;
    s.element_type = tt.elem_type();
    if (tt.has_shape()) {
      s.has_shape = true;
      for (const auto& d : tt.shape().dim()) {
        s.dims.push_back(d.has_dim_value() ? d.dim_value() : -1);
        s.symbols.push_back(d.has_dim_param() ? d.dim_param() : std::string());
      }
    }
    shapes_[v.name()] = std::move(s);
  };
  for (const auto& v : copy.graph().input()) record(v);
  for (const auto& v : copy.graph().value_info()) record(v);
  for (const auto& v : copy.graph().output()) record(v);
  for (const auto& init : copy.graph().initializer()) {
    ValueShape s;
    s.element_type = init.data_type();
    s.has_shape = true;
    s.dims.assign(init.dims().begin(), init.dims().end());
    s.symbols.assign(s.dims.size(), std::string());
    shapes_[init.name()] = std::move(s);
  }
}

const ValueShape* GraphEdit::shape(const std::string& value) const {
  auto it = shapes_.find(value);
  return it == shapes_.end() ? nullptr : &it->second;
}

}  // namespace onnx_light::runtime::optimizer
