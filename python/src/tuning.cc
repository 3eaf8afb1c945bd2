// _onnxpykernels._tuning: the libtune operations, called by onnx_light.kernel_tuning (which
// normalises the arguments and documents them). Every function returns the report's to_json()
// converted to Python, i.e. exactly what the CLI prints with --json. The GIL is released while an
// operation runs (cache locks may block; calibration measures for up to its duration budget).
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <pybind11/stl.h>

#include "bindings.h"
#include "onnx_light/runtime/element_type.h"
#include "onnx_light/runtime/error.h"
#include "onnx_light/runtime/tuning_key.h"
#include "onnx_light/runtime/tuning_value.h"
#include "onnx_light/tune/cache_path.h"
#include "onnx_light/tune/cache_transfer.h"
#include "onnx_light/tune/calibration.h"
#include "onnx_light/tune/model_calibration.h"
#include "onnx_light/tune/operations.h"

namespace onnx_light::python {

namespace rt = onnx_light::runtime;

namespace {

constexpr int64_t kMaximumThreads = int64_t{1} << 16;

std::string type_name(py::handle object) { return py::str(py::type::handle_of(object).attr("__qualname__")); }

tune::KeySelection make_selection(std::vector<std::string> kernels, std::vector<int32_t> element_types,
                                  std::string implementation, std::string library, std::optional<int32_t> device) {
  tune::KeySelection selection;
  selection.kernels = std::move(kernels);
  selection.element_types = std::move(element_types);
  selection.implementation = std::move(implementation);
  selection.library = std::move(library);
  selection.device = device;
  return selection;
}

std::optional<int64_t> checked_threads(std::optional<int64_t> threads, const char* name) {
  if (threads && (*threads < 0 || *threads > kMaximumThreads)) {
    throw InvalidValueError(fmt::format("{} = {} is out of range (0 means one per physical core, at most {})", name,
                                        *threads, kMaximumThreads));
  }
  return threads;
}

// Runs an operation without the GIL (cache locks may block, calibration measures) and returns its
// report as Python objects.
template <typename Operation>
py::object report_without_gil(Operation&& operation) {
  nlohmann::json json;
  {
    py::gil_scoped_release release;
    json = operation().to_json();
  }
  return json_to_python(json);
}

bool is_numpy(py::handle object, const char* type) {
  const py::module_ numpy = py::module_::import("numpy");
  return py::isinstance(object, numpy.attr(type));
}

// A Python value as a typed tuning value: bool (also numpy.bool_), int (anything with __index__),
// float (also numpy floating types), str. The schema then checks the type per parameter.
rt::TuningValue tuning_value(py::handle value, const std::string& name) {
  if (py::isinstance<py::bool_>(value) || is_numpy(value, "bool_")) return value.cast<bool>();
  if (py::isinstance<py::str>(value)) return value.cast<std::string>();
  if (py::isinstance<py::float_>(value) || is_numpy(value, "floating")) {
    return py::float_(py::reinterpret_borrow<py::object>(value)).cast<double>();
  }
  if (py::hasattr(value, "__index__")) {
    py::object index = py::reinterpret_steal<py::object>(PyNumber_Index(value.ptr()));
    if (!index) throw py::error_already_set();
    int overflow = 0;
    const long long number = PyLong_AsLongLongAndOverflow(index.ptr(), &overflow);
    if (overflow != 0) {
      throw InvalidValueError(
          fmt::format("values['{}'] = {} does not fit a 64-bit integer", name, std::string(py::str(index))));
    }
    return static_cast<int64_t>(number);
  }
  throw TypeMismatchError(fmt::format("values['{}'] must be an int, float, bool or str, not {}", name, type_name(value)));
}

rt::TuningValues tuning_values(const py::dict& values) {
  rt::TuningValues result;
  for (const auto& [key, value] : values) {
    if (!py::isinstance<py::str>(key)) {
      throw TypeMismatchError(fmt::format("values keys must be parameter names (str), not {}", type_name(key)));
    }
    const std::string name = key.cast<std::string>();
    result[name] = tuning_value(value, name);
  }
  return result;
}

// export and merge write a file; the CLI's "-o -" (standard output) has no Python form.
void check_output(const std::string& output) {
  if (output.empty() || output == "-") {
    throw InvalidValueError("output must name the file to write (the CLI's '-o -' has no Python form)");
  }
}

}  // namespace

void bind_tuning(py::module_& m) {
  m.doc() = "Internal: the libtune operations behind onnx_light.kernel_tuning (use that module).";
  m.attr("DEFAULT_CALIBRATION_DURATION_MS") = tune::kDefaultCalibrationDurationMs;
  m.attr("DEFAULT_CALIBRATION_MEMORY_BYTES") = tune::kDefaultCalibrationMemoryBytes;

  m.def(
      "default_cache_path", [] { return tune::default_kernel_tuning_cache_path().string(); },
      "The default user cache: $ONNX_LIGHT_TUNING_CACHE, else $XDG_CACHE_HOME/onnx-light/kernel_tuning.cache, else\n"
      "$HOME/.cache/onnx-light/kernel_tuning.cache. NotFoundError when none of them is set.");
  m.def(
      "system_cache_path",
      []() -> std::optional<std::string> {
        const auto path = tune::system_kernel_tuning_cache_path();
        return path ? std::optional<std::string>(path->string()) : std::nullopt;
      },
      "The read-only system cache ($ONNX_LIGHT_SYSTEM_TUNING_CACHE, else /etc/onnx-light/kernel_tuning.cache), or\n"
      "None when the variable is set to an empty string.");
  m.def(
      "tool_version", [] { return std::string(tune::tool_version()); }, "The version written into provenance.");
  m.def(
      "element_type_number",
      [](const std::string& text) {
        const auto type = rt::parse_element_type(text);
        if (!type || *type == rt::ElementType::undefined) {
          throw NotFoundError(fmt::format("unknown element type '{}' (use a name such as float, double, int64, or a "
                                          "TensorProto.DataType number such as 1)",
                                          text));
        }
        return static_cast<int32_t>(*type);
      },
      py::arg("text"), "The TensorProto.DataType number of an element type name ('float', 'float32', 'int64', '1').");

  m.def(
      "kernel_tuning_parameters",
      [](std::vector<std::string> kernels, std::vector<int32_t> element_types, std::string implementation,
         std::string library, std::optional<int32_t> device, std::string path, std::optional<int64_t> num_threads,
         bool idle_spin) {
        tune::ParametersOptions options;
        options.selection = make_selection(std::move(kernels), std::move(element_types), std::move(implementation),
                                           std::move(library), device);
        options.path = std::move(path);
        options.num_threads = checked_threads(num_threads, "num_threads");
        options.idle_spin = idle_spin;
        return report_without_gil([&] { return tune::kernel_tuning_parameters(options); });
      },
      py::kw_only(), py::arg("kernels"), py::arg("element_types"), py::arg("implementation"), py::arg("library"),
      py::arg("device"), py::arg("path"), py::arg("num_threads"), py::arg("idle_spin"), "See onnx_light.kernel_tuning.");

  m.def(
      "propose_kernel_tuning_updates",
      [](std::vector<std::string> kernels, std::vector<int32_t> element_types, std::string implementation,
         std::string library, std::optional<int32_t> device, std::string path, std::optional<int64_t> num_threads,
         bool idle_spin) {
        tune::ProposeOptions options;
        options.selection = make_selection(std::move(kernels), std::move(element_types), std::move(implementation),
                                           std::move(library), device);
        options.path = std::move(path);
        options.num_threads = checked_threads(num_threads, "num_threads");
        options.idle_spin = idle_spin;
        return report_without_gil([&] { return tune::propose_kernel_tuning_updates(options); });
      },
      py::kw_only(), py::arg("kernels"), py::arg("element_types"), py::arg("implementation"), py::arg("library"),
      py::arg("device"), py::arg("path"), py::arg("num_threads"), py::arg("idle_spin"), "See onnx_light.kernel_tuning.");

  m.def(
      "set_kernel_tuning_parameters",
      [](std::string kernel, int32_t element_type, const py::dict& values, std::string path,
         std::optional<int64_t> num_threads, bool idle_spin, bool load, std::string implementation, std::string library,
         std::optional<int32_t> device, bool prune_stale, const std::string& match, std::string as_host) {
        tune::SetOptions options;
        options.match = tune::parse_host_match(match);
        options.kernel = std::move(kernel);
        options.element_type = element_type;
        options.values = tuning_values(values);
        options.path = std::move(path);
        options.num_threads = checked_threads(num_threads, "num_threads");
        options.idle_spin = idle_spin;
        options.load = load;
        options.implementation = std::move(implementation);
        if (!library.empty()) options.library = std::move(library);
        if (device) options.device = *device;
        options.prune_stale = prune_stale;
        tune::OperationContext context;
        rt::CpuFeatures features;
        // As the CLI's set --as-host FILE: the profile is written for that host.
        if (!as_host.empty()) tune::work_as_host(context, tune::read_host_file(as_host), features);
        return report_without_gil([&] { return tune::set_kernel_tuning_parameters(options, context); });
      },
      py::kw_only(), py::arg("kernel"), py::arg("element_type"), py::arg("values"), py::arg("path"),
      py::arg("num_threads"), py::arg("idle_spin"), py::arg("load"), py::arg("implementation"), py::arg("library"),
      py::arg("device"), py::arg("prune_stale"), py::arg("match") = "exact", py::arg("as_host") = "",
      "See onnx_light.kernel_tuning.");

  m.def(
      "inspect_kernel_tuning_cache",
      [](std::string path, std::vector<std::string> kernels, std::vector<int32_t> element_types,
         std::string implementation, std::string library, std::optional<int32_t> device,
         std::optional<int64_t> num_threads, bool user_only) {
        tune::InspectOptions options;
        options.path = std::move(path);
        options.filter = make_selection(std::move(kernels), std::move(element_types), std::move(implementation),
                                        std::move(library), device);
        options.threads = checked_threads(num_threads, "num_threads");
        options.user_only = user_only;
        return report_without_gil([&] { return tune::inspect_kernel_tuning_cache(options); });
      },
      py::kw_only(), py::arg("path"), py::arg("kernels"), py::arg("element_types"), py::arg("implementation"),
      py::arg("library"), py::arg("device"), py::arg("num_threads"), py::arg("user_only"),
      "See onnx_light.kernel_tuning.");

  m.def(
      "load_kernel_tuning_cache",
      [](std::string path, std::vector<std::string> kernels, std::vector<int32_t> element_types,
         std::string implementation, std::string library, std::optional<int32_t> device,
         std::optional<int64_t> num_threads) {
        tune::LoadOptions options;
        options.path = std::move(path);
        options.selection = make_selection(std::move(kernels), std::move(element_types), std::move(implementation),
                                           std::move(library), device);
        options.num_threads = checked_threads(num_threads, "num_threads");
        return report_without_gil([&] { return tune::load_kernel_tuning_cache(options); });
      },
      py::kw_only(), py::arg("path"), py::arg("kernels"), py::arg("element_types"), py::arg("implementation"),
      py::arg("library"), py::arg("device"), py::arg("num_threads"), "See onnx_light.kernel_tuning.");

  m.def(
      "remove_kernel_tuning_cache",
      [](std::string path, std::vector<std::string> kernels, std::vector<int32_t> element_types,
         std::string implementation, std::string library, std::optional<int32_t> device,
         std::optional<int64_t> num_threads, std::vector<std::string> classifications, bool foreign,
         std::string hostname, bool dry_run) {
        tune::RemoveOptions options;
        options.path = std::move(path);
        options.filter = make_selection(std::move(kernels), std::move(element_types), std::move(implementation),
                                        std::move(library), device);
        options.threads = checked_threads(num_threads, "num_threads");
        for (const auto& name : classifications) {
          bool known = false;
          for (auto value : {tune::ProfileClass::loaded, tune::ProfileClass::stale, tune::ProfileClass::incompatible,
                             tune::ProfileClass::invalid}) {
            if (tune::profile_class_name(value) == name) {
              options.classes.push_back(value);
              known = true;
            }
          }
          if (!known) {
            throw InvalidValueError(fmt::format(
                "unknown classification '{}' (use loaded, stale, incompatible or invalid)", name));
          }
        }
        options.foreign = foreign;
        options.hostname = std::move(hostname);
        options.dry_run = dry_run;
        return report_without_gil([&] { return tune::remove_kernel_tuning_cache(options); });
      },
      py::kw_only(), py::arg("path"), py::arg("kernels"), py::arg("element_types"), py::arg("implementation"),
      py::arg("library"), py::arg("device"), py::arg("num_threads"), py::arg("classifications"), py::arg("foreign"),
      py::arg("hostname"), py::arg("dry_run"), "See onnx_light.kernel_tuning.");

  m.def(
      "export_kernel_tuning_cache",
      [](std::string output, std::string path, std::vector<std::string> kernels, std::vector<int32_t> element_types,
         std::string implementation, std::string library, std::optional<int32_t> device,
         std::optional<int64_t> num_threads, bool all_hosts, std::string as_host, const std::string& host_class) {
        check_output(output);
        tune::ExportOptions options;
        options.host_class = tune::parse_host_match(host_class);
        options.output = std::move(output);
        options.path = std::move(path);
        options.filter = make_selection(std::move(kernels), std::move(element_types), std::move(implementation),
                                        std::move(library), device);
        options.threads = checked_threads(num_threads, "num_threads");
        options.all_hosts = all_hosts;
        tune::OperationContext context;
        rt::CpuFeatures features;
        if (!as_host.empty()) {  // as the CLI's --as-host FILE: that host's profiles
          if (all_hosts) throw InvalidValueError("give as_host or all_hosts=True, not both");
          tune::work_as_host(context, tune::read_host_file(as_host), features);
        }
        return report_without_gil([&] { return tune::export_kernel_tuning_cache(options, context); });
      },
      py::kw_only(), py::arg("output"), py::arg("path"), py::arg("kernels"), py::arg("element_types"),
      py::arg("implementation"), py::arg("library"), py::arg("device"), py::arg("num_threads"), py::arg("all_hosts"),
      py::arg("as_host"), py::arg("host_class") = "exact", "See onnx_light.kernel_tuning.");

  m.def(
      "import_kernel_tuning_cache",
      [](std::vector<std::string> files, std::string path, const std::string& on_conflict) {
        tune::ImportOptions options;
        options.files = std::move(files);
        options.path = std::move(path);
        options.on_conflict = tune::parse_conflict_policy(on_conflict);
        return report_without_gil([&] { return tune::import_kernel_tuning_cache(options); });
      },
      py::kw_only(), py::arg("files"), py::arg("path"), py::arg("on_conflict"), "See onnx_light.kernel_tuning.");

  m.def(
      "merge_kernel_tuning_caches",
      [](std::vector<std::string> files, std::string output, const std::string& on_conflict) {
        check_output(output);
        tune::MergeOptions options;
        options.files = std::move(files);
        options.output = std::move(output);
        options.on_conflict = tune::parse_conflict_policy(on_conflict);
        return report_without_gil([&] { return tune::merge_kernel_tuning_caches(options); });
      },
      py::kw_only(), py::arg("files"), py::arg("output"), py::arg("on_conflict"), "See onnx_light.kernel_tuning.");

  m.def(
      "diff_kernel_tuning_caches",
      [](std::string a, std::string b) {
        tune::DiffOptions options{std::move(a), std::move(b)};
        return report_without_gil([&] { return tune::diff_kernel_tuning_caches(options); });
      },
      py::kw_only(), py::arg("a"), py::arg("b"), "See onnx_light.kernel_tuning.");

  m.def(
      "calibrate_kernel_tuning",
      [](std::vector<std::string> kernels, std::vector<int32_t> element_types, bool all, std::string implementation,
         std::string library, std::optional<int32_t> device, int64_t maximum_duration_ms,
         int64_t maximum_memory_bytes, bool save, std::string path, bool only_missing,
         std::optional<int64_t> num_threads, std::map<std::string, std::vector<std::string>> parameters, int64_t repeat,
         std::optional<uint32_t> seed, bool prune_stale, bool force_save, bool allow_load,
         std::optional<runtime::RuntimeParameters> policy, const std::string& match) {
        const tune::HostMatch save_match = tune::parse_host_match(match);
        if (maximum_duration_ms < 1 || maximum_duration_ms > int64_t{24} * 3600 * 1000) {
          throw InvalidValueError(fmt::format(
              "maximum_duration_ms = {} is out of range (1 ms to 24 hours)", maximum_duration_ms));
        }
        if (maximum_memory_bytes < 1) {
          throw InvalidValueError(
              fmt::format("maximum_memory_bytes = {} must be positive", maximum_memory_bytes));
        }
        if (repeat < 1 || repeat > 1000) {
          throw InvalidValueError(fmt::format("repeat = {} is out of range (1 to 1000)", repeat));
        }
        for (const auto& [name, candidates] : parameters) {
          if (candidates.empty()) {
            throw InvalidValueError(fmt::format("parameters['{}'] lists no values to compare", name));
          }
        }
        tune::CalibrationOptions options;
        options.selection = make_selection(std::move(kernels), std::move(element_types), std::move(implementation),
                                           std::move(library), device);
        options.all = all;
        options.maximum_duration_ms = maximum_duration_ms;
        options.maximum_memory_bytes = maximum_memory_bytes;
        options.save = save;
        options.save_match = save_match;
        options.path = std::move(path);
        options.only_missing = only_missing;
        options.num_threads = checked_threads(num_threads, "num_threads");
        options.parameters = std::move(parameters);
        options.repeat = static_cast<int>(repeat);
        if (seed) options.seed = *seed;
        options.prune_stale = prune_stale;
        options.force_save = force_save;
        options.allow_load = allow_load;
        if (policy) options.policy = *policy;
        return report_without_gil([&] { return tune::calibrate_kernel_tuning(options); });
      },
      py::kw_only(), py::arg("kernels"), py::arg("element_types"), py::arg("all"), py::arg("implementation"),
      py::arg("library"), py::arg("device"), py::arg("maximum_duration_ms"), py::arg("maximum_memory_bytes"),
      py::arg("save"), py::arg("path"), py::arg("only_missing"), py::arg("num_threads"), py::arg("parameters"),
      py::arg("repeat"), py::arg("seed"), py::arg("prune_stale"), py::arg("force_save") = false,
      py::arg("allow_load") = false, py::arg("policy") = py::none(), py::arg("match") = "exact",
      "See onnx_light.kernel_tuning.");

  m.attr("DEFAULT_MODEL_CALIBRATION_DURATION_MS") = tune::kDefaultModelCalibrationDurationMs;
  m.def(
      "calibrate_model",
      [](py::object model, py::dict inputs, std::map<std::string, int64_t> dims, int64_t maximum_duration_ms, bool save,
         std::string path, std::optional<int64_t> num_threads, bool tune_blocks, std::optional<uint32_t> seed,
         bool prune_stale, std::optional<runtime::RuntimeParameters> policy, const std::string& match) {
        const tune::HostMatch save_match = tune::parse_host_match(match);
        if (maximum_duration_ms < 1 || maximum_duration_ms > int64_t{24} * 3600 * 1000) {
          throw InvalidValueError(fmt::format(
              "maximum_duration_ms = {} is out of range (1 ms to 24 hours)", maximum_duration_ms));
        }
        for (const auto& [symbol, size] : dims)
          if (size < 0) throw InvalidValueError(fmt::format("dims['{}'] = {} must not be negative", symbol, size));
        runtime::Model loaded = model_from_python(model);
        tune::ModelCalibrationOptions options;
        for (const auto& item : inputs) {
          if (!py::isinstance<py::str>(item.first))
            throw TypeMismatchError("inputs: keys must be input names (str)");
          options.inputs.emplace_back(item.first.cast<std::string>(),
                                      tensor_from_python(py::reinterpret_borrow<py::object>(item.second)));
        }
        options.dims = std::move(dims);
        options.maximum_duration_ms = maximum_duration_ms;
        options.save = save;
        options.save_match = save_match;
        options.path = std::move(path);
        options.num_threads = checked_threads(num_threads, "num_threads");
        options.tune_blocks = tune_blocks;
        if (seed) options.seed = *seed;
        options.prune_stale = prune_stale;
        if (policy) options.policy = *policy;
        return report_without_gil([&] { return tune::calibrate_model(loaded, options); });
      },
      py::kw_only(), py::arg("model"), py::arg("inputs"), py::arg("dims"), py::arg("maximum_duration_ms"),
      py::arg("save"), py::arg("path"), py::arg("num_threads"), py::arg("tune_blocks"), py::arg("seed"),
      py::arg("prune_stale"), py::arg("policy") = py::none(), py::arg("match") = "exact",
      "See onnx_light.kernel_tuning.calibrate_kernel_tuning(model=...).");
}

}  // namespace onnx_light::python
