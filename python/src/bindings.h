#pragma once
// Shared declarations of the _onnxpykernels extension (one file per area: errors, JSON conversion,
// runtime, tuning operations, parser).
#include <nlohmann/json.hpp>
#include <pybind11/pybind11.h>

#include "onnx_light/runtime/model.h"
#include "onnx_light/runtime/tensor.h"

namespace onnx_light::python {

namespace py = pybind11;

// Creates the exception classes (Error and its typed subclasses, each also deriving from the
// matching builtin: KeyError, ValueError, TypeError, OSError) in `module` and installs the
// translator from the C++ exceptions of error.h.
void register_errors(py::module_& module);

// nlohmann::json -> dict / list / int / float / bool / str / None (object key order kept).
py::object json_to_python(const nlohmann::json& value);

// What the runtime module accepts as a model (ModelProto, bytes, text, path) and as a tensor
// (numpy array, TensorProto, Tensor), for the tuning module's model-driven calibration.
runtime::Model model_from_python(py::handle model);
runtime::Tensor tensor_from_python(const py::object& value);

void bind_runtime(py::module_& runtime);
void bind_tuning(py::module_& tuning);
void bind_parser(py::module_& parser);

}  // namespace onnx_light::python
