#include "subgraph.h"

#include <set>

namespace onnx_light::runtime {

namespace {

void append_unique(std::vector<std::string>& list, std::set<std::string>& seen, const std::string& name) {
  if (!name.empty() && seen.insert(name).second) list.push_back(name);
}

}  // namespace

bool has_subgraphs(const onnx::NodeProto& node) {
  for (const auto& a : node.attribute())
    if (a.has_g() || a.graphs_size() > 0) return true;
  return false;
}

std::vector<std::string> implicit_inputs(const onnx::NodeProto& node) {
  std::vector<std::string> names;
  std::set<std::string> seen;
  for (const auto& a : node.attribute()) {
    if (a.has_g())
      for (const auto& n : free_variables(a.g())) append_unique(names, seen, n);
    for (const auto& g : a.graphs())
      for (const auto& n : free_variables(g)) append_unique(names, seen, n);
  }
  return names;
}

std::vector<std::string> free_variables(const onnx::GraphProto& graph) {
  std::set<std::string> defined;
  for (const auto& i : graph.input()) defined.insert(i.name());
  for (const auto& i : graph.initializer()) defined.insert(i.name());
  for (const auto& i : graph.sparse_initializer()) defined.insert(i.values().name());
  for (const auto& node : graph.node())
    for (const auto& o : node.output()) defined.insert(o);
  std::vector<std::string> names;
  std::set<std::string> seen;
  for (const auto& node : graph.node()) {
    for (const auto& in : node.input())
      if (!defined.contains(in)) append_unique(names, seen, in);
    for (const auto& in : implicit_inputs(node))
      if (!defined.contains(in)) append_unique(names, seen, in);
  }
  for (const auto& o : graph.output())  // an output may pass an outer value through
    if (!defined.contains(o.name())) append_unique(names, seen, o.name());
  return names;
}

}  // namespace onnx_light::runtime
