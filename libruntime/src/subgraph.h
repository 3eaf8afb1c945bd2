#pragma once
// Control-flow nodes (If, Loop, Scan) carry graphs that read values of the enclosing scopes by
// name. Those names are the node's implicit inputs: the session orders the node after their
// producers and keeps them alive until it has run, and the optimizer never renames or drops them.
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

namespace onnx_light::runtime {

// Names `graph` (and the graphs nested in its nodes) reads but does not define itself, in order
// of first use.
std::vector<std::string> free_variables(const onnx::GraphProto& graph);
// The free variables of every graph attribute of `node`; empty for a node without one.
std::vector<std::string> implicit_inputs(const onnx::NodeProto& node);
bool has_subgraphs(const onnx::NodeProto& node);

}  // namespace onnx_light::runtime
