// The extension module onnx_light.onnx_py._onnxpykernels.
//   runtime   public: tensors, contexts, sessions, parallel-region profiling (import it as the seed does:
//             `from onnx_light.onnx_py import _onnxpykernels; runtime = _onnxpykernels.runtime`)
//   _tuning   internal: the libtune operations behind onnx_light.kernel_tuning
//   _parser   internal: the ONNX text parser behind onnx_light.onnx_lib.parser
// plus the exception classes (Error, NotFoundError, ...) re-exported by onnx_light.
#include "bindings.h"

#ifndef ONNX_LIGHT_VERSION
#define ONNX_LIGHT_VERSION "0.0.0"
#endif

namespace py = pybind11;

PYBIND11_MODULE(_onnxpykernels, m) {
  m.doc() = "C++ core of the onnx_light package (pybind11 over libruntime and libtune).";
  m.attr("__version__") = ONNX_LIGHT_VERSION;
  onnx_light::python::register_errors(m);

  py::module_ runtime = m.def_submodule("runtime");
  onnx_light::python::bind_runtime(runtime);
  py::module_ tuning = m.def_submodule("_tuning");
  onnx_light::python::bind_tuning(tuning);
  py::module_ parser = m.def_submodule("_parser");
  onnx_light::python::bind_parser(parser);

  // Make `import onnx_light.onnx_py._onnxpykernels.runtime` and `from ... .runtime import X` work too.
  py::dict modules = py::module_::import("sys").attr("modules");
  for (const py::module_& sub : {runtime, tuning, parser}) modules[sub.attr("__name__")] = sub;
}
