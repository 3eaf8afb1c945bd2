// Exception classes of the Python package and the translation of the libraries' typed errors.
//
// Every library error becomes an instance of onnx_light.Error (a RuntimeError) or of one of its
// subclasses, each of which also derives from the builtin a Python caller expects:
//   NotFoundError      -> KeyError     (unknown kernel, parameter, element type, context value)
//   InvalidValueError  -> ValueError   (a value of the right type that breaks its rule)
//   TypeMismatchError  -> TypeError    (a value of the wrong type)
//   ModelError         -> ValueError   (a model or tensor that cannot be read or is inconsistent)
//   UnsupportedError   -> ValueError   (ops, types or attributes the runtime does not implement)
//   InputError         -> ValueError   (an input that does not fit the model)
//   IoError            -> OSError      (a file that cannot be read or written)
//   MemoryLimitError   -> MemoryError  (a value over the session's memory limit; nothing allocated)
//   CalibrationMismatch-> Error        (a parallel candidate whose output differs from serial)
// The exception's message is the library's message, unchanged (str(e) == e.args[0], also for the
// KeyError subclass, whose builtin str() would add quotes).
#include <exception>

#include <pybind11/eval.h>

#include "bindings.h"
#include "onnx_light/runtime/error.h"
#include "onnx_light/tune/calibration.h"

namespace onnx_light::python {

namespace {

// Created once at import, kept for the life of the process (never decref'd at exit).
struct ErrorClasses {
  PyObject* error = nullptr;
  PyObject* not_found = nullptr;
  PyObject* invalid_value = nullptr;
  PyObject* type_mismatch = nullptr;
  PyObject* model = nullptr;
  PyObject* unsupported = nullptr;
  PyObject* input = nullptr;
  PyObject* io = nullptr;
  PyObject* memory_limit = nullptr;
  PyObject* calibration_mismatch = nullptr;
};
ErrorClasses classes;

constexpr const char* kDefinitions = R"PY(
class Error(RuntimeError):
    """Base class of every error raised by the onnx_light libraries.

    The message is the library's: it names the file, kernel, parameter, node or input at fault
    and says what to do. Each subclass also derives from the builtin exception a Python caller
    expects (KeyError, ValueError, TypeError, OSError)."""

class NotFoundError(Error, KeyError):
    """An unknown kernel, parameter, element type, key or context value (also a KeyError)."""
    def __str__(self):
        return BaseException.__str__(self)

class InvalidValueError(Error, ValueError):
    """A value of the right type that breaks its validation rule (also a ValueError)."""

class TypeMismatchError(Error, TypeError):
    """A value of the wrong type (also a TypeError)."""

class ModelError(Error, ValueError):
    """A model or tensor that cannot be read, or whose graph is inconsistent (also a ValueError)."""

class UnsupportedError(Error, ValueError):
    """Ops, element types or attributes the runtime does not implement (also a ValueError)."""

class InputError(Error, ValueError):
    """An input tensor that does not fit the model: missing, wrong type, rank or dims (also a ValueError)."""

class IoError(Error, OSError):
    """A file that cannot be read or written (also an OSError)."""

class MemoryLimitError(Error, MemoryError):
    """A value over the session's memory limit (max_memory_bytes); the message names the node,
    output, shape and bytes, and nothing was allocated (also a MemoryError)."""

class CalibrationMismatch(Error):
    """A parallel candidate whose output differs from the serial reference during calibration."""

for _cls in (Error, NotFoundError, InvalidValueError, TypeMismatchError, ModelError,
             UnsupportedError, InputError, IoError, MemoryLimitError, CalibrationMismatch):
    _cls.__module__ = "onnx_light"
del _cls
)PY";

PyObject* take(py::dict& scope, py::module_& module, const char* name) {
  py::object cls = scope[name];
  module.attr(name) = cls;
  return cls.release().ptr();
}

}  // namespace

void register_errors(py::module_& module) {
  py::dict scope;
  scope["__builtins__"] = py::module_::import("builtins");
  scope["__name__"] = "onnx_light";
  py::exec(kDefinitions, scope);
  classes.error = take(scope, module, "Error");
  classes.not_found = take(scope, module, "NotFoundError");
  classes.invalid_value = take(scope, module, "InvalidValueError");
  classes.type_mismatch = take(scope, module, "TypeMismatchError");
  classes.model = take(scope, module, "ModelError");
  classes.unsupported = take(scope, module, "UnsupportedError");
  classes.input = take(scope, module, "InputError");
  classes.io = take(scope, module, "IoError");
  classes.memory_limit = take(scope, module, "MemoryLimitError");
  classes.calibration_mismatch = take(scope, module, "CalibrationMismatch");

  py::register_exception_translator([](std::exception_ptr pointer) {
    if (!pointer) return;
    try {
      std::rethrow_exception(pointer);
    } catch (const tune::CalibrationMismatch& e) {
      PyErr_SetString(classes.calibration_mismatch, e.what());
    } catch (const NotFoundError& e) {
      PyErr_SetString(classes.not_found, e.what());
    } catch (const InvalidValueError& e) {
      PyErr_SetString(classes.invalid_value, e.what());
    } catch (const TypeMismatchError& e) {
      PyErr_SetString(classes.type_mismatch, e.what());
    } catch (const ModelError& e) {
      PyErr_SetString(classes.model, e.what());
    } catch (const UnsupportedError& e) {
      PyErr_SetString(classes.unsupported, e.what());
    } catch (const InputError& e) {
      PyErr_SetString(classes.input, e.what());
    } catch (const IoError& e) {
      PyErr_SetString(classes.io, e.what());
    } catch (const MemoryLimitError& e) {
      PyErr_SetString(classes.memory_limit, e.what());
    } catch (const Error& e) {
      PyErr_SetString(classes.error, e.what());
    }
    // Anything else propagates to pybind11's own translators (std::invalid_argument ->
    // ValueError, std::bad_alloc -> MemoryError, other std::exception -> RuntimeError).
  });
}

}  // namespace onnx_light::python
