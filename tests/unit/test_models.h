#pragma once
// Small models shared by the unit tests, written in the ONNX text syntax.
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "onnx_light/runtime/model.h"
#include "onnx_light/runtime/session.h"

namespace onnx_light::test {

// The seed's model: y = Abs(x) over float[N].
inline const char* kSeedAbsModel =
    "<ir_version: 10, opset_import: [\"\" : 18]>\n"
    "agraph (float[N] x) => (float[N] y) { y = Abs(x) }";

inline runtime::Model parse(const std::string& text) { return runtime::parse_model_text(text, "<test model>"); }

using NamedTensors = std::vector<std::pair<std::string, runtime::Tensor>>;

// Runs `graph` (a graph's text: "g (float[2] x) => (...) { ... }") once under the default domain
// at `opset` on `threads`, and returns every value of the run.
inline std::map<std::string, runtime::Tensor> run_graph(const std::string& graph, const NamedTensors& inputs,
                                                        int opset = 17, int threads = 1) {
  runtime::RuntimeSessionOptions options;
  options.parameters = runtime::RuntimeParameters(threads);
  runtime::RuntimeSession session(
      parse("<ir_version: 8, opset_import: [\"\" : " + std::to_string(opset) + "]>\n" + graph), options);
  runtime::RuntimeContext context;
  for (const auto& [name, t] : inputs) context.set(name, t);
  session.run(context);
  return context.values();
}

}  // namespace onnx_light::test
