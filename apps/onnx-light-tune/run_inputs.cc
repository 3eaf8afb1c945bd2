#include "run_inputs.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>
#include <map>

#include <fmt/format.h>

#include "onnx_light/runtime/error.h"
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

template <typename T>
void fill_ints(Tensor& t, uint32_t& state, int64_t low, int64_t span) {
  T* p = t.data<T>();
  for (int64_t i = 0; i < t.element_count(); ++i) {
    state ^= state << 13;
    state ^= state >> 17;
    state ^= state << 5;
    p[i] = static_cast<T>(low + static_cast<int64_t>(state % static_cast<uint32_t>(span)));
  }
}

}  // namespace

Tensor random_tensor(ElementType type, const Shape& shape, uint32_t seed) {
  Tensor t(type, shape);
  uint32_t s = seed == 0 ? 0x9e3779b9u : seed;
  auto next_unit = [&s] {
    s ^= s << 13;
    s ^= s >> 17;
    s ^= s << 5;
    return static_cast<float>(s / 4294967296.0 * 2 - 1);
  };
  const int64_t n = t.element_count();
  switch (type) {
    case ElementType::float32:
      for (int64_t i = 0; i < n; ++i) t.data<float>()[i] = next_unit();
      break;
    case ElementType::float64:
      for (int64_t i = 0; i < n; ++i) t.data<double>()[i] = next_unit();
      break;
    case ElementType::float16:
    case ElementType::bfloat16: {
      // Values in [-1, 1) with few mantissa bits are exact in both formats.
      Tensor f(ElementType::float32, shape);
      for (int64_t i = 0; i < n; ++i) {
        float v = std::round(next_unit() * 256.0f) / 256.0f;
        uint32_t bits;
        std::memcpy(&bits, &v, 4);
        uint16_t out;
        if (type == ElementType::bfloat16) {
          out = static_cast<uint16_t>(bits >> 16);
        } else {
          // Exact conversion: |v| <= 1 with 8 fractional bits fits half precisely.
          uint32_t sign = (bits >> 16) & 0x8000u;
          uint32_t exponent = (bits >> 23) & 0xffu;
          uint32_t mantissa = bits & 0x7fffffu;
          if (exponent == 0) out = static_cast<uint16_t>(sign);
          else out = static_cast<uint16_t>(sign | ((exponent - 112) << 10) | (mantissa >> 13));
        }
        t.data<uint16_t>()[i] = out;
      }
      break;
    }
    case ElementType::int8: fill_ints<int8_t>(t, s, -10, 21); break;
    case ElementType::int16: fill_ints<int16_t>(t, s, -100, 201); break;
    case ElementType::int32: fill_ints<int32_t>(t, s, -100, 201); break;
    case ElementType::int64: fill_ints<int64_t>(t, s, -100, 201); break;
    case ElementType::uint8: fill_ints<uint8_t>(t, s, 0, 21); break;
    case ElementType::uint16: fill_ints<uint16_t>(t, s, 0, 201); break;
    case ElementType::uint32: fill_ints<uint32_t>(t, s, 0, 201); break;
    case ElementType::uint64: fill_ints<uint64_t>(t, s, 0, 201); break;
    case ElementType::boolean: fill_ints<bool>(t, s, 0, 2); break;
    default: throw UnsupportedError(fmt::format("cannot make random data of type {}", element_type_name(type)));
  }
  return t;
}

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
  for (const auto& [name, _] : sources)
    if (std::none_of(session.inputs().begin(), session.inputs().end(), [&](const ValueInfo& i) { return i.name == name; })) {
      std::string known;
      for (const auto& i : session.inputs()) known += (known.empty() ? "" : ", ") + i.name;
      throw InputError(fmt::format("--input '{}': the model has no such input (inputs: {})", name, known));
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
      Shape shape;
      for (std::size_t d = 0; d < info.shape.size(); ++d) {
        if (info.shape[d] >= 0) {
          shape.push_back(info.shape[d]);
          continue;
        }
        auto sym = symbols.find(info.symbols[d]);
        if (info.symbols[d].empty() || sym == symbols.end())
          throw InputError(fmt::format("--input {}: dimension {} is symbolic ('{}'); bind it with --dim {}=SIZE", info.name, d,
                                       info.symbols[d], info.symbols[d].empty() ? "SYMBOL" : info.symbols[d]));
        shape.push_back(sym->second);
      }
      context.set(info.name, random_tensor(info.element_type, shape, seed));
    } else {
      context.set(info.name, read_npy(source));
    }
  }
}

}  // namespace onnx_light::cli
