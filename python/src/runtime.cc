// onnx_light.onnx_py._onnxpykernels.runtime: tensors, contexts, sessions and parallel-region
// profiling over libruntime.
//
// Protobuf messages (onnx.TensorProto, onnx.ModelProto) cross the boundary as serialized bytes
// (SerializeToString / ParseFromString), never as shared C++ objects. Numpy arrays are copied in
// both directions, so no Python object ever aliases a tensor a session may write to.
#include <cstring>
#include <ctime>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <fmt/chrono.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <pybind11/numpy.h>
#include <pybind11/stl.h>
#include <pybind11/stl/filesystem.h>

#include "bindings.h"
#include "onnx_light/runtime/element_type.h"
#include "onnx_light/runtime/error.h"
#include "onnx_light/runtime/model.h"
#include "onnx_light/runtime/parallel_region_collector.h"
#include "onnx_light/runtime/runtime_parameters.h"
#include "onnx_light/runtime/session.h"
#include "onnx_light/runtime/shared_thread_pools.h"
#include "onnx_light/runtime/session_profile.h"
#include "onnx_light/runtime/tensor.h"
#include "onnx_light/runtime/tensor_format.h"
#include "onnx_light/runtime/tensor_proto.h"
#include "onnx_light/tune/reports.h"

namespace onnx_light::python {

namespace rt = onnx_light::runtime;

namespace {

constexpr int64_t kMaximumThreads = int64_t{1} << 16;

std::string python_type_name(py::handle object) { return py::str(py::type::handle_of(object).attr("__qualname__")); }
std::string dtype_text(const py::dtype& dtype) { return py::str(py::handle(dtype)).cast<std::string>(); }

// ---- element types and numpy dtypes ------------------------------------------------------------

// The numpy dtype a tensor of `type` is returned as. numpy has no bfloat16: its bit patterns
// come back as uint16.
py::dtype dtype_for(rt::ElementType type) {
  switch (type) {
    case rt::ElementType::float32: return py::dtype("float32");
    case rt::ElementType::uint8: return py::dtype("uint8");
    case rt::ElementType::int8: return py::dtype("int8");
    case rt::ElementType::uint16: return py::dtype("uint16");
    case rt::ElementType::int16: return py::dtype("int16");
    case rt::ElementType::int32: return py::dtype("int32");
    case rt::ElementType::int64: return py::dtype("int64");
    case rt::ElementType::boolean: return py::dtype("bool");
    case rt::ElementType::float16: return py::dtype("float16");
    case rt::ElementType::float64: return py::dtype("float64");
    case rt::ElementType::uint32: return py::dtype("uint32");
    case rt::ElementType::uint64: return py::dtype("uint64");
    case rt::ElementType::complex64: return py::dtype("complex64");
    case rt::ElementType::complex128: return py::dtype("complex128");
    case rt::ElementType::bfloat16: return py::dtype("uint16");
    case rt::ElementType::string:
    case rt::ElementType::undefined: break;
  }
  throw UnsupportedError(fmt::format("element type {} has no numpy equivalent", rt::element_type_name(type)));
}

// The element type of a numpy dtype (native or not; the caller converts the byte order).
rt::ElementType element_type_for(const py::dtype& dtype) {
  const char kind = dtype.kind();
  const auto size = dtype.itemsize();
  switch (kind) {
    case 'b': return rt::ElementType::boolean;
    case 'f':
      if (size == 2) return rt::ElementType::float16;
      if (size == 4) return rt::ElementType::float32;
      if (size == 8) return rt::ElementType::float64;
      break;
    case 'i':
      if (size == 1) return rt::ElementType::int8;
      if (size == 2) return rt::ElementType::int16;
      if (size == 4) return rt::ElementType::int32;
      if (size == 8) return rt::ElementType::int64;
      break;
    case 'u':
      if (size == 1) return rt::ElementType::uint8;
      if (size == 2) return rt::ElementType::uint16;
      if (size == 4) return rt::ElementType::uint32;
      if (size == 8) return rt::ElementType::uint64;
      break;
    case 'c':
      if (size == 8) return rt::ElementType::complex64;
      if (size == 16) return rt::ElementType::complex128;
      break;
    default: break;
  }
  throw TypeMismatchError(fmt::format(
      "numpy dtype {} has no tensor element type (use bool, float16/32/64, int8..int64, uint8..uint64 or "
      "complex64/128)",
      dtype_text(dtype)));
}

rt::ElementType checked_element_type(int64_t number) {
  if (number < 0 || number > INT32_MAX || !rt::is_valid_element_type(static_cast<int32_t>(number)) ||
      number == static_cast<int64_t>(rt::ElementType::undefined)) {
    throw NotFoundError(fmt::format("unknown element type {} (use a TensorProto.DataType number such as 1 for float)",
                                    number));
  }
  const auto type = static_cast<rt::ElementType>(number);
  if (!rt::is_fixed_size(type)) {
    throw UnsupportedError(fmt::format("element type {} is not supported by tensors", rt::element_type_name(type)));
  }
  return type;
}

// ---- tensors --------------------------------------------------------------------------------------

py::array tensor_to_numpy(const rt::Tensor& tensor) {
  if (tensor.empty()) throw InvalidValueError("the tensor is empty (no element type); nothing to convert");
  const py::dtype dtype = dtype_for(tensor.element_type());
  std::vector<py::ssize_t> shape(tensor.shape().begin(), tensor.shape().end());
  py::array array(dtype, shape);
  if (tensor.byte_size() > 0) std::memcpy(array.mutable_data(), tensor.raw_data(), tensor.byte_size());
  return array;
}

rt::Tensor tensor_from_numpy(const py::object& object, std::optional<int64_t> element_type) {
  const py::module_ numpy = py::module_::import("numpy");
  py::array array = numpy.attr("asarray")(object, py::arg("order") = "C");
  py::dtype dtype = array.dtype();
  const std::string kind(1, dtype.kind());
  if (kind == "O" || kind == "U" || kind == "S" || kind == "V" || kind == "M" || kind == "m") {
    throw TypeMismatchError(fmt::format("cannot make a tensor from a numpy array of dtype {} (from a {})",
                                        dtype_text(dtype), python_type_name(object)));
  }
  if (py::str(dtype.attr("byteorder")).cast<std::string>() == ">") {
    array = array.attr("astype")(dtype.attr("newbyteorder")("="));
    dtype = array.dtype();
  }
  if (!(array.flags() & py::array::c_style)) array = numpy.attr("ascontiguousarray")(array);
  rt::ElementType type = element_type_for(dtype);
  if (element_type) {
    const rt::ElementType requested = checked_element_type(*element_type);
    if (rt::element_size(requested) != static_cast<std::size_t>(dtype.itemsize())) {
      throw InvalidValueError(fmt::format("element_type {} ({}, {} bytes) does not match the array's dtype {} ({} bytes)",
                                          *element_type, rt::element_type_name(requested),
                                          rt::element_size(requested), dtype_text(dtype),
                                          dtype.itemsize()));
    }
    type = requested;
  }
  rt::Shape shape(array.shape(), array.shape() + array.ndim());
  const auto* data = static_cast<const std::byte*>(array.data());
  return rt::Tensor::from_bytes(type, std::move(shape), std::span<const std::byte>(data, array.nbytes()));
}

// Serialized bytes of a protobuf message object or a bytes-like object.
std::string message_bytes(py::handle object, const char* what, const char* argument) {
  if (py::isinstance<py::bytes>(object)) return object.cast<std::string>();
  if (py::isinstance<py::bytearray>(object) || py::isinstance<py::memoryview>(object)) {
    return py::module_::import("builtins").attr("bytes")(object).cast<std::string>();
  }
  if (py::hasattr(object, "SerializeToString")) return object.attr("SerializeToString")().cast<std::string>();
  throw TypeMismatchError(fmt::format("{} must be an onnx.{} or its serialized bytes, not {}", argument, what,
                                      python_type_name(object)));
}

rt::Tensor tensor_from_proto(const py::object& proto) {
  const std::string bytes = message_bytes(proto, "TensorProto", "proto");
  onnx::TensorProto message;
  if (!message.ParseFromString(bytes)) throw ModelError("proto: the bytes are not a serialized onnx.TensorProto");
  return rt::tensor_from_proto(message);
}

py::object tensor_to_proto(const rt::Tensor& tensor, const std::string& name) {
  if (tensor.empty()) throw InvalidValueError("the tensor is empty (no element type); nothing to convert");
  const onnx::TensorProto message = rt::tensor_to_proto(tensor, name);
  std::string bytes;
  if (!message.SerializeToString(&bytes)) throw ModelError("cannot serialize the tensor (larger than 2 GiB?)");
  py::object proto = py::module_::import("onnx").attr("TensorProto")();
  proto.attr("ParseFromString")(py::bytes(bytes));
  return proto;
}

std::string tensor_repr(const rt::Tensor& tensor) {
  if (tensor.empty()) return "Tensor(empty)";
  return fmt::format("Tensor({}: {})", tensor.describe(), rt::format_preview(tensor));
}

// A tensor from a Tensor (copied handle, same storage) or anything numpy turns into an array.
rt::Tensor tensor_from_value(const py::object& value) {
  if (py::isinstance<rt::Tensor>(value)) return value.cast<rt::Tensor>();
  if (py::isinstance<py::str>(value) || py::isinstance<py::bytes>(value) || value.is_none()) {
    throw TypeMismatchError(
        fmt::format("a context value must be a Tensor or a numpy array, not {}", python_type_name(value)));
  }
  return tensor_from_numpy(value, std::nullopt);
}

// ---- positional runs over numpy arrays ----------------------------------------------------------

// True when `array` can be lent to the runtime as it is: C-ordered, aligned, native byte order.
bool lendable(const py::array& array) {
  const auto itemsize = static_cast<std::uintptr_t>(array.dtype().itemsize());
  const auto address = reinterpret_cast<std::uintptr_t>(array.data());
  return (array.flags() & py::array::c_style) && itemsize > 0 && address % itemsize == 0 &&
         py::str(array.dtype().attr("byteorder")).cast<std::string>() != ">";
}

// Input k of run_arrays: a lendable numpy array as a zero-copy view (kept alive in `keep` for the
// run; kernels never write inputs), anything else as tensor_from_value takes it (a Tensor as it is).
rt::Tensor run_input(const py::object& value, std::vector<py::object>& keep) {
  if (py::isinstance<py::array>(value)) {
    py::array array = py::reinterpret_borrow<py::array>(value);
    const char kind = array.dtype().kind();
    if (lendable(array) && kind != 'O' && kind != 'U' && kind != 'S' && kind != 'V' && kind != 'M' && kind != 'm') {
      keep.push_back(array);
      rt::Shape shape(array.shape(), array.shape() + array.ndim());
      return rt::Tensor::borrow(element_type_for(array.dtype()), std::move(shape), const_cast<void*>(array.data()));
    }
  }
  return tensor_from_value(value);
}

// Output k of run_arrays given by the caller: a writeable, lendable numpy array the kernels write into.
rt::Tensor run_output(const py::object& value, std::size_t k, const rt::ValueInfo& info) {
  if (!py::isinstance<py::array>(value))
    throw TypeMismatchError(fmt::format("outputs[{}] ('{}') must be a numpy array, not {}", k, info.name,
                                        python_type_name(value)));
  py::array array = py::reinterpret_borrow<py::array>(value);
  if (!array.writeable() || !lendable(array))
    throw InvalidValueError(fmt::format("outputs[{}] ('{}') must be a writeable, C-contiguous, aligned array in native "
                                        "byte order",
                                        k, info.name));
  rt::Shape shape(array.shape(), array.shape() + array.ndim());
  return rt::Tensor::borrow(element_type_for(array.dtype()), std::move(shape), array.mutable_data());
}

// A numpy array over the tensor's own storage (no copy); the array keeps the storage alive and,
// when it goes, the block returns to the session's buffer pool.
py::array lend_to_numpy(rt::Tensor tensor) {
  const py::dtype dtype = dtype_for(tensor.element_type());
  std::vector<py::ssize_t> shape(tensor.shape().begin(), tensor.shape().end());
  auto* owner = new rt::Tensor(std::move(tensor));
  py::capsule base(owner, [](void* p) { delete static_cast<rt::Tensor*>(p); });
  return py::array(dtype, shape, {}, owner->raw_data(), base);
}

// ---- models -----------------------------------------------------------------------------------

rt::Model model_from_object(py::handle model) {
  if (py::isinstance<py::str>(model)) {
    // A str naming a file is that file (as ONNX Runtime reads one); text syntax is recognised by its
    // graph body, so a mistyped file name gets "no such file", not a syntax error.
    const std::string text = model.cast<std::string>();
    std::error_code ignored;
    if (text.find('\n') == std::string::npos && std::filesystem::is_regular_file(text, ignored))
      return rt::load_model_file(text);
    if (text.find('{') != std::string::npos) return rt::parse_model_text(text, "<text>");
    throw IoError(fmt::format("model: no such file '{}' (a str is a model file's path; ONNX text syntax needs its "
                              "graph body '{{ ... }}', or parse it with onnx_light.parse_model)",
                              text));
  }
  if (py::isinstance<py::bytes>(model) || py::isinstance<py::bytearray>(model) ||
      py::isinstance<py::memoryview>(model)) {
    const std::string bytes = message_bytes(model, "ModelProto", "model");
    const auto* data = reinterpret_cast<const std::byte*>(bytes.data());
    return rt::load_model_bytes(std::span<const std::byte>(data, bytes.size()), "<bytes>");
  }
  if (py::hasattr(model, "__fspath__")) {
    const std::string path = py::str(py::module_::import("os").attr("fspath")(model));
    return rt::load_model_file(path);
  }
  if (py::hasattr(model, "SerializeToString")) {
    const std::string bytes = message_bytes(model, "ModelProto", "model");
    onnx::ModelProto proto;
    if (!proto.ParseFromString(bytes)) throw ModelError("model: the message is not a valid onnx.ModelProto");
    std::string origin = proto.graph().name().empty() ? std::string("<ModelProto>")
                                                      : fmt::format("<ModelProto graph '{}'>", proto.graph().name());
    return rt::model_from_proto(std::move(proto), origin);
  }
  throw TypeMismatchError(fmt::format(
      "model must be an onnx.ModelProto, its serialized bytes, ONNX text (str) or a path (os.PathLike), not {}",
      python_type_name(model)));
}

// ---- sessions -------------------------------------------------------------------------------------

// The Python-side session: one run at a time (concurrent calls from several Python threads queue).
struct Session {
  std::unique_ptr<rt::RuntimeSession> session;
  std::shared_ptr<rt::ParallelRegionCollector> collector;
  mutable std::mutex mutex;
};

nlohmann::json profile_to_json(const rt::SessionProfile& profile) {
  return nlohmann::json::parse(rt::profile_json(profile));  // the library's, shared with the CLI
}

std::string value_info_text(const rt::ValueInfo& info) {
  std::string text = fmt::format("{}: {}", info.name, rt::element_type_name(info.element_type));
  if (!info.has_shape) return text;
  std::vector<std::string> dims;
  for (std::size_t i = 0; i < info.shape.size(); ++i) {
    if (info.shape[i] >= 0) {
      dims.push_back(std::to_string(info.shape[i]));
    } else {
      dims.push_back(i < info.symbols.size() && !info.symbols[i].empty() ? info.symbols[i] : "?");
    }
  }
  return fmt::format("{}[{}]", text, fmt::join(dims, ", "));
}

std::string value_infos_text(const std::vector<rt::ValueInfo>& infos) {
  std::vector<std::string> parts;
  for (const auto& info : infos) parts.push_back(value_info_text(info));
  return fmt::format("[{}]", fmt::join(parts, ", "));
}

std::string python_repr(const std::string& text) { return py::repr(py::str(text)); }

std::string event_repr_py(const rt::ParallelRegionEvent& event) {
  return fmt::format(
      "ParallelRegionEvent(label={}, requested_threads={}, admitted_threads={}, iterations={}, grain={}, "
      "wall_time_ns={})",
      python_repr(event.label), event.requested_threads, event.admitted_threads, event.iterations, event.grain,
      event.wall_time_ns);
}

std::string report_repr(const rt::ParallelRegionReport& report) {
  constexpr std::size_t kShown = 8;
  std::string text = fmt::format("ParallelRegionReport(dropped_events={}, events=[", report.dropped_events);
  for (std::size_t i = 0; i < report.events.size() && i < kShown; ++i) {
    text += fmt::format("\n  {},", event_repr_py(report.events[i]));
  }
  if (report.events.size() > kShown) text += fmt::format("\n  ... {} more,", report.events.size() - kShown);
  text += report.events.empty() ? "])" : "\n])";
  return text;
}

int checked_threads(int64_t num_threads) {
  if (num_threads < 0 || num_threads > kMaximumThreads) {
    throw InvalidValueError(fmt::format("num_threads = {} is out of range (0 means one per physical core, at most {})",
                                        num_threads, kMaximumThreads));
  }
  return static_cast<int>(num_threads);
}

// A spin policy name ("none", "short", "long", "200us") or a number of microseconds.
int64_t spin_of(const py::object& spin) {
  if (py::isinstance<py::bool_>(spin)) throw TypeMismatchError("spin must be a policy name or microseconds, not a bool");
  if (py::isinstance<py::int_>(spin)) {
    const auto us = spin.cast<int64_t>();
    if (us < 0 || us > rt::kSpinMaximumMicroseconds)
      throw InvalidValueError(
          fmt::format("spin must be from 0 to {} microseconds, got {}", rt::kSpinMaximumMicroseconds, us));
    return us;
  }
  if (py::isinstance<py::str>(spin)) return rt::parse_spin_policy(spin.cast<std::string>());
  throw TypeMismatchError("spin must be 'none', 'short', 'long' or a number of microseconds");
}

// "0-3,8" or an iterable of CPU numbers, sorted and deduplicated.
std::vector<int> cpus_of(const py::object& cpus) {
  if (py::isinstance<py::str>(cpus)) return rt::parse_cpu_list(cpus.cast<std::string>());
  std::vector<std::string> items;
  for (const auto& item : cpus) {
    if (!py::isinstance<py::int_>(item) || py::isinstance<py::bool_>(item))
      throw TypeMismatchError("cpus must be a CPU list string such as '0-3,8' or a list of CPU numbers");
    items.push_back(std::to_string(item.cast<int64_t>()));
  }
  if (items.empty()) throw InvalidValueError("cpus must name at least one CPU");
  std::string text;
  for (const auto& item : items) text += (text.empty() ? "" : ",") + item;
  return rt::parse_cpu_list(text);
}

}  // namespace

rt::Model model_from_python(py::handle model) { return model_from_object(model); }
rt::Tensor tensor_from_python(const py::object& value) { return tensor_from_value(value); }

// The default of RuntimeSession.run's second argument: tells run(context) from run(names, feed).
// Never destroyed: a py::object must not be released after the interpreter has finalised.
static const py::object& kNoFeed() {
  static const py::object* sentinel = new py::object(py::module_::import("builtins").attr("object")());
  return *sentinel;
}

void bind_runtime(py::module_& m) {
  m.doc() =
      "The onnx_light runtime: tensors, runtime contexts, sessions and parallel-region profiling.\n\n"
      "A session resolves every kernel's tuning values once, when it initialises (its first run), from the\n"
      "values published in this process (kernel_tuning.load_kernel_tuning_cache, set_..., calibrate_...).\n"
      "Tensors are copied to and from numpy; protobuf messages cross as serialized bytes.";

  // ---- Tensor ----
  py::class_<rt::Tensor>(m, "Tensor",
                         "A dense tensor held by the runtime (element type, shape, bytes).\n\n"
                         "Make one with tensor_from_proto or tensor_from_numpy; read it with tensor_to_numpy.")
      .def_property_readonly(
          "element_type", [](const rt::Tensor& t) { return static_cast<int>(t.element_type()); },
          "The ONNX TensorProto.DataType number (1 = float).")
      .def_property_readonly(
          "element_type_name", [](const rt::Tensor& t) { return std::string(rt::element_type_name(t.element_type())); },
          "The ONNX name of the element type ('float', 'int64', ...).")
      .def_property_readonly(
          "shape", [](const rt::Tensor& t) { return py::tuple(py::cast(t.shape())); }, "The dimensions, as a tuple.")
      .def_property_readonly("ndim", &rt::Tensor::rank, "The number of dimensions.")
      .def_property_readonly("element_count", &rt::Tensor::element_count, "The number of elements.")
      .def_property_readonly("byte_size", &rt::Tensor::byte_size, "The size of the data in bytes.")
      .def("numpy", &tensor_to_numpy, "A numpy copy of the tensor (same as tensor_to_numpy(tensor)).")
      .def(
          "__array__",
          [](const rt::Tensor& t, py::object dtype, py::object) {
            py::array array = tensor_to_numpy(t);
            if (!dtype.is_none()) return py::array(array.attr("astype")(dtype));
            return array;
          },
          py::arg("dtype") = py::none(), py::arg("copy") = py::none(), "numpy.asarray(tensor) support (a copy).")
      .def(
          "tobytes", [](const rt::Tensor& t) { return py::bytes(reinterpret_cast<const char*>(t.raw_data()), t.byte_size()); },
          "The raw little-endian bytes, in C order.")
      .def("describe", &rt::Tensor::describe, "'float[2, 3]'.")
      .def("__repr__", &tensor_repr);

  m.def("tensor_from_proto", &tensor_from_proto, py::arg("proto"),
        "Reads an onnx.TensorProto (or its serialized bytes) into a runtime tensor: raw_data or the typed\n"
        "fields (float_data, int32_data, ...). Raises ModelError (a ValueError) naming the tensor when data\n"
        "is missing, short, external or of a type tensors do not hold (string), TypeError for other objects.");
  m.def("tensor_to_proto", &tensor_to_proto, py::arg("tensor"), py::arg("name") = "",
        "Returns an onnx.TensorProto with dims, data_type, name and little-endian raw_data.");
  m.def("tensor_to_numpy", &tensor_to_numpy, py::arg("tensor"),
        "Returns a copy of the tensor as a C-ordered numpy array of the matching dtype (bool, float16/32/64,\n"
        "int8..int64, uint8..uint64, complex64/128). bfloat16 tensors come back as their uint16 bit patterns\n"
        "(numpy has no bfloat16). The copy is independent: later runs never change it.");
  m.def("tensor_from_numpy", &tensor_from_numpy, py::arg("array"), py::arg("element_type") = py::none(),
        "Returns a tensor holding a copy of `array` (anything numpy.asarray accepts). The element type follows the\n"
        "dtype; pass element_type (a TensorProto.DataType number of the same item size) to reinterpret the\n"
        "bytes, e.g. uint16 bit patterns as bfloat16 (16).");

  // ---- ParallelRegionCollector and its report ----
  py::class_<rt::ParallelRegionEvent>(m, "ParallelRegionEvent",
                                      "What one parallel region (one kernel call on one node) did.")
      .def_readonly("label", &rt::ParallelRegionEvent::label, "'<kernel> <node name>'.")
      .def_readonly("requested_threads", &rt::ParallelRegionEvent::requested_threads,
                    "Threads of the session's pool (what the region could use).")
      .def_readonly("admitted_threads", &rt::ParallelRegionEvent::admitted_threads,
                    "Threads that took part (1: the region ran serially).")
      .def_readonly("iterations", &rt::ParallelRegionEvent::iterations, "Work items of the region (elements).")
      .def_readonly("grain", &rt::ParallelRegionEvent::grain, "Minimum items per participating thread.")
      .def_readonly("wall_time_ns", &rt::ParallelRegionEvent::wall_time_ns, "Wall time of the region in ns.")
      .def("__repr__", &event_repr_py);

  py::class_<rt::ParallelRegionReport>(m, "ParallelRegionReport",
                                       "The events a collector recorded, in claim order, and how many were dropped.")
      .def_readonly("events", &rt::ParallelRegionReport::events, "A list of ParallelRegionEvent.")
      .def_readonly("dropped_events", &rt::ParallelRegionReport::dropped_events,
                    "Events not recorded because the collector was full.")
      .def("__len__", [](const rt::ParallelRegionReport& r) { return r.events.size(); })
      .def("__repr__", &report_repr);

  py::class_<rt::ParallelRegionCollector, std::shared_ptr<rt::ParallelRegionCollector>>(
      m, "ParallelRegionCollector",
      "ParallelRegionCollector(capacity)\n\n"
      "Records every parallel region of the sessions it is given to (RuntimeSessionOptions), into\n"
      "`capacity` preallocated slots; events past capacity are counted in dropped_events.")
      .def(py::init([](int64_t capacity) {
             if (capacity < 0 || capacity > (int64_t{1} << 24)) {
               throw InvalidValueError(
                   fmt::format("capacity = {} is out of range (0 to {} events)", capacity, int64_t{1} << 24));
             }
             return std::make_shared<rt::ParallelRegionCollector>(static_cast<std::size_t>(capacity));
           }),
           py::arg("capacity"))
      .def_property_readonly("capacity", &rt::ParallelRegionCollector::capacity, "The number of event slots.")
      .def("report", &rt::ParallelRegionCollector::report,
           "Returns a ParallelRegionReport: the events recorded so far and the dropped count.")
      .def("clear", &rt::ParallelRegionCollector::clear,
           "Forgets every event and the dropped count. Call it only while no session using this\n"
           "collector is running.")
      .def("__repr__", [](const rt::ParallelRegionCollector& c) {
        const rt::ParallelRegionReport report = c.report();
        return fmt::format("ParallelRegionCollector(capacity={}, events={}, dropped_events={})", c.capacity(),
                           report.events.size(), report.dropped_events);
      });

  // ---- parameters and options ----
  py::class_<rt::RuntimeParameters>(
      m, "RuntimeParameters",
      "RuntimeParameters(num_threads=0, *, spin='short', affinity='none', cpus=None)\n\n"
      "Execution parameters of a session. num_threads = 0 means one thread per physical core (per CPU of\n"
      "`cpus` when given). spin: how long an idle pool thread spins before it sleeps: 'none', 'short'\n"
      "(50 us), 'long' (1000 us) or a number of microseconds. affinity: 'none' or 'physical_cores'\n"
      "(one worker pinned per physical core). cpus: a CPU list ('0-3,8' or [0, 1, 2, 3, 8]) the workers\n"
      "are pinned to, each allowed for this process. The calling thread is never pinned.\n"
      "Invalid values raise ValueError naming them.")
      .def(py::init([](int64_t num_threads, const py::object& spin, const std::string& affinity, const py::object& cpus) {
             rt::RuntimeParameters p(checked_threads(num_threads));
             p.spin_microseconds = spin_of(spin);
             p.affinity = rt::parse_affinity_policy(affinity);
             if (!cpus.is_none()) {
               if (p.affinity != rt::AffinityPolicy::none)
                 throw InvalidValueError("RuntimeParameters: give affinity or cpus, not both");
               p.affinity = rt::AffinityPolicy::cpu_list;
               p.cpus = cpus_of(cpus);
             }
             rt::validate_runtime_parameters(p);
             return p;
           }),
           py::arg("num_threads") = 0, py::kw_only(), py::arg("spin") = "short", py::arg("affinity") = "none",
           py::arg("cpus") = py::none())
      .def_property(
          "num_threads", [](const rt::RuntimeParameters& p) { return p.num_threads; },
          [](rt::RuntimeParameters& p, int64_t n) { p.num_threads = checked_threads(n); },
          "Threads of the session (0: one per physical core, or per CPU of `cpus`).")
      .def_property(
          "spin", [](const rt::RuntimeParameters& p) { return rt::spin_policy_name(p.spin_microseconds); },
          [](rt::RuntimeParameters& p, const py::object& spin) { p.spin_microseconds = spin_of(spin); },
          "The spin policy: 'none', 'short', 'long', or '<n>us' (set a name or a number of microseconds).")
      .def_property_readonly(
          "spin_us", [](const rt::RuntimeParameters& p) { return p.spin_microseconds; },
          "The spin budget in microseconds.")
      .def_property_readonly(
          "affinity", [](const rt::RuntimeParameters& p) { return std::string(rt::affinity_policy_name(p.affinity)); },
          "'none', 'physical_cores' or 'cpu_list'.")
      .def_property_readonly(
          "cpus", [](const rt::RuntimeParameters& p) { return rt::placement_cpus(p); },
          "The CPUs the workers are pinned to, in order (worker i gets cpus[i % len]; entry 0 is the "
          "calling thread's, never pinned); [] when affinity is 'none'.")
      .def_property_readonly(
          "effective_threads", [](const rt::RuntimeParameters& p) { return rt::effective_threads(p); },
          "The threads a session with these parameters runs on (0 resolved to the core count).")
      .def("__repr__", [](const rt::RuntimeParameters& p) {
        // Only what differs from the defaults, so the common case reads as before.
        std::string text = fmt::format("RuntimeParameters(num_threads={}", p.num_threads);
        if (p.spin_microseconds != rt::kSpinShortMicroseconds)
          text += fmt::format(", spin='{}'", rt::spin_policy_name(p.spin_microseconds));
        if (p.affinity == rt::AffinityPolicy::cpu_list) text += fmt::format(", cpus='{}'", rt::format_cpu_list(p.cpus));
        else if (p.affinity != rt::AffinityPolicy::none)
          text += fmt::format(", affinity='{}'", rt::affinity_policy_name(p.affinity));
        return text + ")";
      });

  py::class_<rt::RuntimeSessionOptions>(
      m, "RuntimeSessionOptions",
      "RuntimeSessionOptions(parameters=None, parallel_region_collector=None, fuse_activations=True,\n"
      "                      flush_denormals=True, profile=False, max_memory_bytes=0, *, num_threads=None)\n\n"
      "num_threads=N is a shorthand for parameters=RuntimeParameters(N).\n"
      "Options of a RuntimeSession: its RuntimeParameters, an optional ParallelRegionCollector,\n"
      "whether a Relu after a packed MatMul/Gemm runs inside that kernel (bit-identical results), and\n"
      "whether denormal floats are flushed to zero while its kernels run (fast; results differ from\n"
      "IEEE 754 only where a value is denormal, below ~1.2e-38 for float32), and whether the session\n"
      "profiles its runs (RuntimeSession.profile(), end_profiling(); off costs nothing).")
      .def(py::init([](std::optional<rt::RuntimeParameters> parameters,
                       std::shared_ptr<rt::ParallelRegionCollector> collector, bool fuse_activations,
                       bool flush_denormals, bool profile, int64_t max_memory_bytes, std::optional<int64_t> num_threads,
                       bool profile_counters) {
             rt::RuntimeSessionOptions options;
             options.max_memory_bytes = max_memory_bytes;
             if (parameters && num_threads)
               throw InvalidValueError("RuntimeSessionOptions: give parameters or num_threads, not both");
             if (parameters) options.parameters = *parameters;
             if (num_threads) options.parameters = rt::RuntimeParameters(checked_threads(*num_threads));
             options.parallel_region_collector = std::move(collector);
             options.fuse_activations = fuse_activations;
             options.flush_denormals = flush_denormals;
             options.profile = profile;
             if (profile_counters && !profile)
               throw InvalidValueError("RuntimeSessionOptions: profile_counters=True needs profile=True");
             options.profile_counters = profile_counters;
             return options;
           }),
           py::arg("parameters") = py::none(), py::arg("parallel_region_collector") = py::none(),
           py::arg("fuse_activations") = true, py::arg("flush_denormals") = true, py::arg("profile") = false,
           py::arg("max_memory_bytes") = 0, py::kw_only(), py::arg("num_threads") = py::none(),
           py::arg("profile_counters") = false)
      .def_readwrite("max_memory_bytes", &rt::RuntimeSessionOptions::max_memory_bytes,
                     "Most bytes of tensor memory the session holds at once (weights, values, outputs); a node "
                     "whose output would pass it raises MemoryLimitError naming the node, output, shape and "
                     "bytes. 0 (default): three quarters of physical memory.")
      .def_readwrite("flush_denormals", &rt::RuntimeSessionOptions::flush_denormals,
                     "Whether denormal floats are flushed to zero (FTZ/DAZ) while the session's kernels run.")
      .def_readwrite("fuse_activations", &rt::RuntimeSessionOptions::fuse_activations,
                     "Whether a Relu whose only input is a packed MatMul/Gemm output runs inside that kernel.")
      .def_property(
          "optimization", [](const rt::RuntimeSessionOptions& o) { return std::string(rt::optimization_level_name(o.optimization)); },
          [](rt::RuntimeSessionOptions& o, const std::string& level) { o.optimization = rt::parse_optimization_level(level); },
          "Graph optimization at session creation: 'none' (the graph as written), 'basic' or 'all' (default).")
      .def_readwrite("allow_newer_opset", &rt::RuntimeSessionOptions::allow_newer_opset,
                     "Run a model importing an ai.onnx opset newer than the newest implemented (18) as that "
                     "one; refused (ModelError) when False")
      .def_readwrite("profile", &rt::RuntimeSessionOptions::profile,
                     "Whether the session records per-node times and a Chrome trace of its runs.")
      .def_readwrite("profile_counters", &rt::RuntimeSessionOptions::profile_counters,
                     "With profile: per-node counters through perf_event_open (cycles, instructions, LLC misses "
                     "where a PMU exists; task clock, context switches, CPU migrations, page faults from the "
                     "kernel). The profile's 'counters' lists each one, and why an unavailable one is.")
      .def_readwrite("parameters", &rt::RuntimeSessionOptions::parameters, "The RuntimeParameters.")
      .def_readwrite("share_thread_pool", &rt::RuntimeSessionOptions::share_thread_pool,
                     "True (default): the session runs on the process's pool for its threads, spin and placement, "
                     "shared with every such session (their parallel regions queue for it); False: a pool of its own.")
      .def_readwrite("parallel_region_collector", &rt::RuntimeSessionOptions::parallel_region_collector,
                     "The ParallelRegionCollector, or None.")
      .def("__repr__", [](const rt::RuntimeSessionOptions& o) {
        return fmt::format("RuntimeSessionOptions(parameters=RuntimeParameters(num_threads={}), "
                           "parallel_region_collector={}, fuse_activations={}, flush_denormals={}, profile={})",
                           o.parameters.num_threads,
                           o.parallel_region_collector
                               ? fmt::format("ParallelRegionCollector(capacity={})", o.parallel_region_collector->capacity())
                               : std::string("None"),
                           o.fuse_activations ? "True" : "False", o.flush_denormals ? "True" : "False",
                           o.profile ? "True" : "False");
      });

  m.def(
      "live_thread_pools", [] { return rt::process_thread_pools().live_pools(); },
      "Thread pools the process's sessions share that are still alive (a pool ends with its last session).");

  // ---- contexts ----
  m.def(
      "default_opset",
      [](int64_t version) {
        if (version < 1) throw InvalidValueError(fmt::format("opset version {} must be at least 1", version));
        return rt::default_opset(version);
      },
      py::arg("version"),
      "Returns the opset imports with the default ONNX domain at `version`: {'': version}.");

  py::class_<rt::KernelContext>(m, "KernelContext",
                                "KernelContext(opsets=None)\n\n"
                                "Opset imports by domain ('' is ai.onnx), e.g. KernelContext(default_opset(18)).")
      .def(py::init([](std::optional<rt::OpsetImports> opsets) {
             return opsets ? rt::KernelContext(std::move(*opsets)) : rt::KernelContext();
           }),
           py::arg("opsets") = py::none())
      .def_readwrite("opsets", &rt::KernelContext::opsets, "A dict: domain -> opset version.")
      .def("__repr__", [](const rt::KernelContext& c) {
        return fmt::format("KernelContext({})", std::string(py::repr(py::cast(c.opsets))));
      });

  py::class_<rt::RuntimeContext>(m, "RuntimeContext",
                                 "RuntimeContext(kernel_context=None)\n\n"
                                 "Named tensors: a session's inputs before a run, inputs and outputs after it.\n"
                                 "Do not change a context from another thread while a session runs on it.")
      .def(py::init([](std::optional<rt::KernelContext> kernel_context) {
             return kernel_context ? rt::RuntimeContext(std::move(*kernel_context)) : rt::RuntimeContext();
           }),
           py::arg("kernel_context") = py::none())
      .def(
          "set", [](rt::RuntimeContext& c, const std::string& name, const py::object& value) { c.set(name, tensor_from_value(value)); },
          py::arg("name"), py::arg("value"),
          "Binds a Tensor (or a numpy array, copied) to `name`, replacing any previous value.")
      .def(
          "get", [](const rt::RuntimeContext& c, const std::string& name) { return c.get(name); },
          py::arg("name"),
          "Returns the Tensor bound to `name`. Raises NotFoundError (a KeyError) when there is\n"
          "none. The Tensor shares the context's storage; while you hold it, runs never write into it (they\n"
          "reuse an output buffer only when nobody else holds it), and tensor_to_numpy copies it out.")
      .def("contains", &rt::RuntimeContext::contains, py::arg("name"), "True when a value is bound to `name`.")
      .def(
          "erase",
          [](rt::RuntimeContext& c, const std::string& name) {
            if (!c.contains(name)) c.get(name);  // throws the library's NotFoundError
            c.erase(name);
          },
          py::arg("name"), "Removes the value bound to `name` (KeyError when there is none).")
      .def("names", &rt::RuntimeContext::names, "The bound names, sorted.")
      .def_property_readonly(
          "kernel_context", [](const rt::RuntimeContext& c) { return c.kernel_context(); }, "The KernelContext.")
      .def("__contains__", &rt::RuntimeContext::contains)
      .def("__len__", [](rt::RuntimeContext& c) { return c.values().size(); })
      .def("__iter__", [](const rt::RuntimeContext& c) { return py::iter(py::cast(c.names())); })
      .def("__getitem__", [](const rt::RuntimeContext& c, const std::string& name) { return c.get(name); })
      .def("__setitem__",
           [](rt::RuntimeContext& c, const std::string& name, const py::object& value) { c.set(name, tensor_from_value(value)); })
      .def("__delitem__",
           [](rt::RuntimeContext& c, const std::string& name) {
             if (!c.contains(name)) c.get(name);
             c.erase(name);
           })
      .def("__repr__", [](rt::RuntimeContext& c) {
        std::vector<std::string> parts;
        for (const auto& [name, tensor] : c.values()) parts.push_back(fmt::format("{}: {}", name, tensor.describe()));
        return fmt::format("RuntimeContext(opsets={}, values={{{}}})",
                           std::string(py::repr(py::cast(c.kernel_context().opsets))), fmt::join(parts, ", "));
      });

  // ---- sessions ----
  py::class_<rt::ValueInfo>(m, "ValueInfo", "A graph input or output: name, element type and shape.")
      .def_readonly("name", &rt::ValueInfo::name)
      .def_property_readonly(
          "element_type", [](const rt::ValueInfo& v) { return static_cast<int>(v.element_type); },
          "TensorProto.DataType number.")
      .def_readonly("shape", &rt::ValueInfo::shape, "Dimensions; -1 for a symbolic or unknown one.")
      .def_readonly("symbols", &rt::ValueInfo::symbols, "Per dimension its symbol ('N'), '' when fixed or unnamed.")
      .def_readonly("has_shape", &rt::ValueInfo::has_shape)
      .def_property_readonly(
          "type", [](const rt::ValueInfo& v) { return fmt::format("tensor({})", rt::element_type_name(v.element_type)); },
          "ONNX Runtime's spelling of the type: 'tensor(float)', 'tensor(int64)'...")
      .def_property_readonly(
          "element_type_name", [](const rt::ValueInfo& v) { return std::string(rt::element_type_name(v.element_type)); },
          "The element type's ONNX name: 'float', 'int64'...")
      .def_property_readonly(
          "dims",
          [](const rt::ValueInfo& v) -> py::object {
            if (!v.has_shape) return py::none();
            py::list dims;
            for (std::size_t i = 0; i < v.shape.size(); ++i) {
              const std::string symbol = i < v.symbols.size() ? v.symbols[i] : std::string();
              if (v.shape[i] >= 0) dims.append(v.shape[i]);
              else if (!symbol.empty()) dims.append(symbol);
              else dims.append(py::none());
            }
            return dims;
          },
          "Dimensions as ONNX Runtime shows them: an int when fixed, the symbol ('N') when symbolic, None\n"
          "when unknown; None when the rank is unknown.")
      .def("__repr__", [](const rt::ValueInfo& v) { return fmt::format("ValueInfo({})", value_info_text(v)); });

  py::class_<Session>(m, "RuntimeSession",
                      "RuntimeSession(model, options=None)\n\n"
                      "Runs one model. `model` is an onnx.ModelProto (e.g. from onnx_light.onnx_lib.parser.parse_model),\n"
                      "its serialized bytes, ONNX text syntax (str) or a path (pathlib.Path) to a .onnx or text file.\n"
                      "Construction checks the whole graph and raises UnsupportedError (a ValueError) listing every\n"
                      "node the runtime cannot run. The first run (or initialize()) resolves every kernel's tuning\n"
                      "values from this process's registry, once; later runs never read it again.")
      .def(py::init([](const py::object& model, std::optional<rt::RuntimeSessionOptions> options) {
             rt::Model loaded = model_from_object(model);
             auto session = std::make_unique<Session>();
             rt::RuntimeSessionOptions chosen = options ? *options : rt::RuntimeSessionOptions{};
             session->collector = chosen.parallel_region_collector;
             {
               py::gil_scoped_release release;
               session->session = std::make_unique<rt::RuntimeSession>(std::move(loaded), std::move(chosen));
             }
             return session;
           }),
           py::arg("model"), py::arg("options") = py::none())
      .def(
          "run",
          [](const py::object& self, const py::object& first, const py::object& input_feed) -> py::object {
            // One entry point for both calls, so that a wrong argument gets a message naming types,
            // not pybind's overload list with the arrays printed in full.
            if (py::isinstance<rt::RuntimeContext>(first) && input_feed.is(kNoFeed())) {
              Session& s = self.cast<Session&>();
              rt::RuntimeContext& context = first.cast<rt::RuntimeContext&>();
              py::gil_scoped_release release;
              std::lock_guard lock(s.mutex);
              s.session->run(context);
              return py::none();
            }
            if (input_feed.is(kNoFeed()))
              throw TypeMismatchError(fmt::format(
                  "run() takes a RuntimeContext, or ONNX Runtime's (output_names or None, {{input name: array}}); "
                  "got one {} (for arrays in input order use run_arrays)",
                  python_type_name(first)));
            // ONNX Runtime's call; the checks that name inputs and suggest names live in Python.
            return py::module_::import("onnx_light.inference").attr("run_feeds")(self, first, input_feed);
          },
          py::arg("context_or_output_names"), py::arg_v("input_feed", kNoFeed(), "<none: run(context)>"),
          "run(context): reads the graph inputs from a RuntimeContext and writes the outputs into it. The GIL\n"
          "is released while the session runs. Raises InputError (a ValueError) naming a missing or ill-fitting\n"
          "input. A failed run leaves the context exactly as it was; a Tensor taken from the context keeps\n"
          "its values however often the session runs again.\n\n"
          "run(output_names, input_feed): ONNX Runtime's call: the requested outputs (all when None) as a list\n"
          "of numpy arrays. Unknown names get a suggestion; a wrong dtype or shape names the input, what the\n"
          "model declares and what was given.")
      .def(
          "run_arrays",
          [](Session& s, const py::sequence& inputs, const std::optional<py::sequence>& outputs) {
            const auto& output_infos = s.session->outputs();
            std::vector<py::object> keep;
            std::vector<rt::Tensor> in;
            for (const auto& value : inputs) in.push_back(run_input(py::reinterpret_borrow<py::object>(value), keep));
            std::vector<rt::Tensor> out(output_infos.size());
            if (outputs) {
              if (py::len(*outputs) != output_infos.size())
                throw InputError(fmt::format("outputs: the model has {} output(s), {} array(s) given",
                                             output_infos.size(), py::len(*outputs)));
              for (std::size_t k = 0; k < out.size(); ++k)
                out[k] = run_output((*outputs)[k], k, output_infos[k]);
            }
            std::vector<const void*> lent(out.size());
            for (std::size_t k = 0; k < out.size(); ++k) lent[k] = out[k].raw_data();
            {
              py::gil_scoped_release release;
              std::lock_guard lock(s.mutex);
              s.session->run(in, out);
            }
            py::list results;
            for (std::size_t k = 0; k < out.size(); ++k) {
              if (!outputs) {
                results.append(lend_to_numpy(std::move(out[k])));
                continue;
              }
              if (out[k].raw_data() != lent[k])
                throw InputError(fmt::format("outputs[{}] ('{}'): the result is {}, which does not fit the array given",
                                             k, output_infos[k].name, out[k].describe()));
              results.append((*outputs)[k]);
            }
            return results;
          },
          py::arg("inputs"), py::arg("outputs") = py::none(),
          "The fast path: inputs in graph-input order (numpy arrays are lent without a copy when they are\n"
          "C-contiguous, aligned and in native byte order; Tensors and other values are accepted too), and\n"
          "optionally `outputs`, numpy arrays in graph-output order that the kernels write into. Returns the\n"
          "outputs as a list of numpy arrays: the given ones, or arrays over the runtime's own buffers (no\n"
          "copy; a buffer is reused by a later run once its array is gone). Nothing is looked up by name.\n"
          "Raises InputError when an output array does not fit the result.\n\n"
          "Aliasing: an output array that shares memory with an input (run_arrays([x], [x]), or a slice of\n"
          "the same buffer) is computed in a private buffer and copied into the array after the last node,\n"
          "so the result is exact, as numpy's out= is. Two output arrays that share memory are refused with\n"
          "InputError naming both. Inputs are never written. When a run fails, output arrays may hold\n"
          "part of the new results; arrays returned by earlier runs are never changed by later ones.")
      .def(
          "initialize",
          [](Session& s) {
            py::gil_scoped_release release;
            std::lock_guard lock(s.mutex);
            s.session->initialize();
          },
          "Resolves the tuning values and configures the kernels now (the first run does it otherwise).")
      .def_property_readonly(
          "initialized",
          [](const Session& s) {
            std::lock_guard lock(s.mutex);
            return s.session->initialized();
          },
          "True once the tuning values were resolved.")
      .def_property_readonly(
          "inputs", [](const Session& s) { return s.session->inputs(); }, "The graph inputs (ValueInfo).")
      .def_property_readonly(
          "outputs", [](const Session& s) { return s.session->outputs(); }, "The graph outputs (ValueInfo).")
      .def_property_readonly(
          "threads", [](const Session& s) { return s.session->threads(); }, "The threads the session runs on.")
      .def_property_readonly(
          "thread_pool_id",
          [](const Session& s) {
            std::lock_guard lock(s.mutex);
            return s.session->thread_pool_id();
          },
          "The id of the thread pool the session runs on: equal for sessions that share one (same threads, "
          "spin and placement, share_thread_pool=True).")
      .def(
          "optimization_report",
          [](const Session& s) {
            const rt::OptimizationReport& r = s.session->optimization_report();
            nlohmann::json transforms = nlohmann::json::array();
            for (const auto& t : r.transforms)
              transforms.push_back({{"name", t.name}, {"applied", t.applied}, {"nodes_before", t.nodes_before}, {"nodes_after", t.nodes_after}});
            return json_to_python({{"level", std::string(rt::optimization_level_name(r.level))}, {"nodes_before", r.nodes_before},
                                   {"nodes_after", r.nodes_after}, {"transforms", transforms}});
          },
          "Returns a dict: the optimization level, node counts before/after and, per transform that ran,\n"
          "its name, times applied and node counts before/after.")
      .def(
          "resolved_tuning",
          [](const Session& s) {
            std::vector<rt::ResolvedTuning> resolved;
            {
              std::lock_guard lock(s.mutex);
              resolved = s.session->resolved_tuning();
            }
            py::list list;
            for (const auto& r : resolved) {
              nlohmann::json entry = tune::key_to_json(r.key);
              entry["node"] = r.node;
              entry["values"] = tune::values_to_json(r.values);
              entry["source"] = std::string(rt::tuning_source_name(r.source));
              entry["generation"] = r.generation;
              list.append(json_to_python(entry));
            }
            return list;
          },
          "Returns a list of dicts, one per node: its key, the values its kernel runs with, their\n"
          "source ('published_profile' or 'portable_default') and the registry generation. Empty before\n"
          "initialisation.")
      .def(
          "parallel_region_report",
          [](const Session& s) { return s.session->parallel_region_report(); },
          "Returns a ParallelRegionReport with the events of the session's collector (every\n"
          "session sharing that collector), empty when the options had none.")
      .def(
          "profile",
          [](const Session& s) {
            rt::SessionProfile profile;
            {
              std::lock_guard lock(s.mutex);
              profile = s.session->profile();
            }
            return json_to_python(profile_to_json(profile));
          },
          "Returns what profiling recorded since the session was created or reset_profile(), as the\n"
          "'profile' object of `onnx-light-tune run --profile --json`: {'nodes': [...], 'op_types': [...],\n"
          "'runs', 'total_us', 'nodes_us'}. Each node: node, label, op_type, domain, implementation (what\n"
          "actually ran), input_shapes (of its last call; None for an omitted input), calls, total_us,\n"
          "mean_us, share (of the time in nodes), parallel_regions and parallel_threads (admitted, summed),\n"
          "threshold_work (the work its last call compared with its parallel threshold, -1: none), parent (for\n"
          "a node of an If branch or Loop body: that graph's name, listed after the session's own nodes;\n"
          "else None), and with profile_counters a dict 'counters' {name: count};\n"
          "longest first. With profile_counters, 'counters' lists every counter: name, available,\n"
          "user_space_only, reason (why not). Empty lists and 0 runs when RuntimeSessionOptions.profile is off.")
      .def(
          "reset_profile",
          [](Session& s) {
            std::lock_guard lock(s.mutex);
            s.session->reset_profile();
          },
          "Forgets what profiling recorded so far (e.g. after warm-up runs).")
      .def(
          "write_trace",
          [](const Session& s, const std::filesystem::path& path) {
            rt::SessionProfile profile;
            {
              std::lock_guard lock(s.mutex);
              profile = s.session->profile();
            }
            py::gil_scoped_release release;
            rt::write_chrome_trace(profile, path);
            return path.string();
          },
          py::arg("path"),
          "Writes the recorded runs as Chrome trace-event JSON ({'traceEvents': [...]}, times in\n"
          "microseconds), which Perfetto (ui.perfetto.dev) and chrome://tracing open: one event per node per\n"
          "run (name: the node, cat: its op type, args: implementation and input shapes), its parallel\n"
          "regions, and their blocks on the threads that ran them. Returns the path. Raises IoError.")
      .def(
          "end_profiling",
          [](const Session& s, std::optional<std::filesystem::path> path) {
            if (!path) path = fmt::format("onnx_light_profile_{:%Y-%m-%d_%H-%M-%S}.json", fmt::localtime(std::time(nullptr)));
            rt::SessionProfile profile;
            {
              std::lock_guard lock(s.mutex);
              profile = s.session->profile();
            }
            py::gil_scoped_release release;
            rt::write_chrome_trace(profile, *path);
            return path->string();
          },
          py::arg("path") = py::none(),
          "As ONNX Runtime's InferenceSession.end_profiling(): writes the Chrome trace (to `path`, by\n"
          "default onnx_light_profile_<date>_<time>.json in the working directory) and returns the file\n"
          "name. Recording goes on; reset_profile() starts over.")
      .def("__repr__", [](const Session& s) {
        return fmt::format("RuntimeSession(model={}, inputs={}, outputs={}, threads={}, initialized={}{})",
                           python_repr(s.session->model().origin()), value_infos_text(s.session->inputs()),
                           value_infos_text(s.session->outputs()), s.session->threads(),
                           s.session->initialized() ? "True" : "False",
                           s.collector ? fmt::format(", collector_capacity={}", s.collector->capacity()) : "");
      });

  m.def(
      "effective_threads", [](const rt::RuntimeParameters& p) { return rt::effective_threads(p); },
      py::arg("parameters"), "Returns the threads a session with these parameters runs on.");
  m.def("physical_core_count", &rt::physical_core_count, "Returns this machine's physical core count (cpuinfo).");
}

}  // namespace onnx_light::python
