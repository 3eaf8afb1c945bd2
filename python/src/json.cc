// nlohmann::json -> Python objects, so that Python returns exactly the dictionaries the CLI
// prints with --json.
#include <cstdint>

#include "bindings.h"

namespace onnx_light::python {

py::object json_to_python(const nlohmann::json& value) {
  using value_t = nlohmann::json::value_t;
  switch (value.type()) {
    case value_t::null:
    case value_t::discarded: return py::none();
    case value_t::boolean: return py::bool_(value.get<bool>());
    case value_t::number_integer: return py::int_(value.get<int64_t>());
    case value_t::number_unsigned: return py::int_(value.get<uint64_t>());
    case value_t::number_float: return py::float_(value.get<double>());
    case value_t::string: return py::str(value.get_ref<const std::string&>());
    case value_t::binary: {
      const auto& bytes = value.get_binary();
      return py::bytes(reinterpret_cast<const char*>(bytes.data()), bytes.size());
    }
    case value_t::array: {
      py::list list(value.size());
      std::size_t index = 0;
      for (const auto& item : value) list[index++] = json_to_python(item);
      return list;
    }
    case value_t::object: {
      py::dict dict;
      for (const auto& [key, item] : value.items()) dict[py::str(key)] = json_to_python(item);
      return dict;
    }
  }
  return py::none();
}

}  // namespace onnx_light::python
