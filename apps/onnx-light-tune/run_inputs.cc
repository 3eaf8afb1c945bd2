#include "run_inputs.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>
#include <map>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "onnx_light/runtime/error.h"
#include "onnx_light/runtime/calibration_workload.h"
#include "onnx_light/runtime/memory_limit.h"
#include "onnx_light/runtime/npy.h"

namespace onnx_light::cli {

using namespace runtime;

namespace {

std::pair<std::string, std::string> split_assignment(const std::string& text, std::string_view what) {
  auto eq = text.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == text.size())
    throw InvalidValueError(fmt::format("{} '{}' must look like NAME=VALUE", what, text));
  return {text.substr(0, eq), text.substr(eq + 1)};
}

}  // namespace

void bind_cli_inputs(const RuntimeSession& session, const std::vector<std::string>& specs,
                     const std::vector<std::string>& dims, RuntimeContext& context) {
  std::map<std::string, int64_t> symbols;
  for (const auto& d : dims) {
    auto [name, value] = split_assignment(d, "--dim");
    int64_t size = 0;
    auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), size);
    if (ec != std::errc{} || end != value.data() + value.size() || size < 0)
      throw InvalidValueError(fmt::format("--dim {}: '{}' is not a non-negative integer", name, value));
    symbols[name] = size;
  }
  std::map<std::string, std::string> sources;
  for (const auto& spec : specs) {
    auto [name, source] = split_assignment(spec, "--input");
    if (!sources.emplace(name, source).second) throw InvalidValueError(fmt::format("--input '{}' is given twice", name));
  }
  for (const auto& entry : sources) {
    const std::string& name = entry.first;
    if (std::none_of(session.inputs().begin(), session.inputs().end(), [&](const ValueInfo& i) { return i.name == name; })) {
      std::string known;
      for (const auto& i : session.inputs()) known += (known.empty() ? "" : ", ") + i.name;
      throw InputError(fmt::format("--input '{}': the model has no such input (inputs: {})", name, known));
    }
  }
  for (const auto& info : session.inputs()) {
    auto it = sources.find(info.name);
    if (it == sources.end()) continue;  // the session reports missing inputs with their types
    const std::string& source = it->second;
    if (source.rfind("random", 0) == 0) {
      uint32_t seed = 12345;
      if (source.size() > 6) {
        if (source[6] != ':') throw InvalidValueError(fmt::format("--input {}: write random or random:SEED", info.name));
        auto [end, ec] = std::from_chars(source.data() + 7, source.data() + source.size(), seed);
        if (ec != std::errc{} || end != source.data() + source.size())
          throw InvalidValueError(fmt::format("--input {}: '{}' is not a seed (0..4294967295)", info.name, source.substr(7)));
      }
      if (!info.has_shape) throw InputError(fmt::format("--input {}: the model declares no shape; give a .npy file", info.name));
      std::vector<UnboundDimension> open;
      const Shape shape = bind_dimensions(info, symbols, open);
      if (!open.empty()) {
        std::vector<std::string> hints;
        for (const auto& u : open)
          if (const std::string hint = fmt::format("--dim {}=SIZE", u.symbol);
              !u.symbol.empty() && std::find(hints.begin(), hints.end(), hint) == hints.end())
            hints.push_back(hint);
        throw InputError(hints.empty() ? fmt::format("--input {}: {}; give a .npy file", info.name, describe_unbound(open))
                                       : fmt::format("--input {}: {}; bind {} with {}", info.name, describe_unbound(open),
                                                     hints.size() == 1 ? "it" : "them", fmt::join(hints, " ")));
      }
      // Made here, not by the session, but asked for by the model: the same limit applies.
      const auto bytes = static_cast<int64_t>(Tensor::storage_bytes(info.element_type, shape));
      const int64_t limit = session.memory_report().memory_limit_bytes;
      if (bytes > limit)
        throw MemoryLimitError(fmt::format("--input {}=random: a {} tensor of shape {} needs {} ({} bytes), over the "
                                           "session's memory limit of {} (--max-memory)",
                                           info.name, element_type_name(info.element_type), shape_to_string(shape),
                                           format_bytes(bytes), bytes, format_bytes(limit)));
      context.set(info.name, random_tensor(info.element_type, shape, seed));
    } else {
      context.set(info.name, read_npy(source));
    }
  }
}

}  // namespace onnx_light::cli
