#pragma once
// Typed errors of libruntime and libtune. Libraries throw these; the CLI and the Python
// boundary map them to exit codes and exception types. Nothing in the libraries aborts or exits.
#include <stdexcept>
#include <string>

namespace onnx_light {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A file, kernel, parameter or key that does not exist (Python: KeyError).
class NotFoundError : public Error {
 public:
  using Error::Error;
};

// A value that has the right type but fails validation (Python: ValueError).
class InvalidValueError : public Error {
 public:
  using Error::Error;
};

// A value of the wrong type (Python: TypeError).
class TypeMismatchError : public Error {
 public:
  using Error::Error;
};

// A model that cannot be read or parsed, or whose graph is inconsistent.
class ModelError : public Error {
 public:
  using Error::Error;
};

// Ops, element types or attributes the runtime does not implement (listed per node).
class UnsupportedError : public Error {
 public:
  using Error::Error;
};

// An input tensor that does not fit the model (missing, wrong type, wrong rank, bad broadcast).
class InputError : public Error {
 public:
  using Error::Error;
};

// A model asked for more tensor memory than the session's limit allows (Python: MemoryError).
// The message names the node, the output, its shape and the bytes; nothing was allocated.
class MemoryLimitError : public Error {
 public:
  using Error::Error;
};

// Reading or writing a file failed.
class IoError : public Error {
 public:
  using Error::Error;
};

}  // namespace onnx_light
