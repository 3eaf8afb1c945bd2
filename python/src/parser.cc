// _onnxpykernels._parser: the ONNX text syntax parsed by libruntime (onnx::OnnxParser underneath),
// returned as serialized ModelProto bytes for onnx_light.onnx_lib.parser to wrap in onnx.ModelProto.
#include <string>

#include "bindings.h"
#include "onnx_light/runtime/error.h"
#include "onnx_light/runtime/model.h"

namespace onnx_light::python {

void bind_parser(py::module_& m) {
  m.doc() = "Internal: the ONNX text parser behind onnx_light.onnx_lib.parser (use that module).";
  m.def(
      "parse_model_bytes",
      [](const std::string& text, const std::string& origin) {
        std::string bytes;
        {
          py::gil_scoped_release release;
          const runtime::Model model = runtime::parse_model_text(text, origin);
          if (!model.proto().SerializeToString(&bytes)) {
            throw ModelError(origin + ": the parsed model cannot be serialized (larger than 2 GiB?)");
          }
        }
        return py::bytes(bytes);
      },
      py::arg("text"), py::arg("origin") = "<text>",
      "Returns the serialized onnx.ModelProto of a model in ONNX text syntax.\n"
      "Raises ModelError (a ValueError) with the line and column of a syntax error.");
}

}  // namespace onnx_light::python
