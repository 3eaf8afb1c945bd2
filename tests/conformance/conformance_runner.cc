// Runs ONNX's backend node tests through onnx_light's runtime.
//
//   onnx_light_conformance NODE_DIR [--exclusions EXCLUSIONS.md] [--expected expected_passes.tsv]
//                          [--write-expected] [--filter TEXT] [--verbose]
//
// A test runs when every operator of its graph is registered in the CPU kernel table (Constant
// is folded by the session). Outputs are compared as ONNX's runner does: same element type and
// shape; rtol 1e-3 / atol 1e-7 for floating types (NaN equals NaN); exact for integers and
// bools; sequence- and optional-typed values (SequenceProto / OptionalProto data files) are run
// through RuntimeSession::run with values and compared tensor by tensor, none matching none. Each
// test also runs on 3 threads with every parallel threshold at 1 and the smallest
// tiles, and must reproduce the 1-thread outputs bit for bit. An excluded test must be
// rejected at session creation with an UnsupportedError containing its listed fragment.
//
// Two conventions of onnx 1.12's generated data are undone, as its own runner never sees them
// (it passes numpy arrays to the backend and checks no declared shape): bfloat16 values are
// stored as uint16 TensorProtos (numpy has no bfloat16), and were produced by truncation where
// the operators round to nearest even, so bfloat16 results may differ by one bfloat16 unit in
// the last place; and a graph input whose declared shape disagrees with its data gets the
// declared shape cleared. Every test where this happens is counted in the summary.
//
// The passes per operator are held to a committed table (--expected, tab-separated op_type and
// passed count): a count that drops, or an operator that disappears (e.g. unregistered, so that
// its tests count as "unsupported"), fails the run. Counts that rise are printed so the table can
// be raised; --write-expected rewrites the table from this run.
// Exit status: 0 when no registered operator failed and no expected pass was lost, 1 otherwise,
// 2 on usage errors.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <onnx/onnx-data_pb.h>

#include "onnx_light/runtime/error.h"
#include "onnx_light/runtime/kernel_table.h"
#include "onnx_light/runtime/model.h"
#include "onnx_light/runtime/session.h"
#include "onnx_light/runtime/tensor_proto.h"
#include "onnx_light/runtime/tuning_registry.h"
#include "onnx_light/runtime/value.h"

namespace fs = std::filesystem;
using namespace onnx_light;
using namespace onnx_light::runtime;

namespace {

constexpr double kRtol = 1e-3;
constexpr double kAtol = 1e-7;
constexpr int kParallelThreads = 3;

struct Exclusion {
  std::string fragment;  // must appear in the UnsupportedError raised at session creation
  std::string reason;
  bool seen = false;
};

// Rows of the first Markdown table in EXCLUSIONS.md: | `test_name` | `fragment` | reason |
std::map<std::string, Exclusion> read_exclusions(const fs::path& path) {
  std::ifstream in(path);
  if (!in) throw IoError(fmt::format("{}: cannot read the exclusion list", path.string()));
  std::map<std::string, Exclusion> exclusions;
  const std::regex row(R"(^\|\s*`(test_[A-Za-z0-9_]+)`\s*\|\s*`([^`]+)`\s*\|\s*(.+?)\s*\|\s*$)");
  std::string line;
  while (std::getline(in, line)) {
    std::smatch m;
    if (std::regex_match(line, m, row)) exclusions[m[1]] = Exclusion{m[2], m[3]};
  }
  return exclusions;
}

onnx::TensorProto read_tensor_proto(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  onnx::TensorProto proto;
  if (!in || !proto.ParseFromIstream(&in)) throw IoError(fmt::format("{}: not a TensorProto", path.string()));
  return proto;
}

double element_as_double(const Tensor& t, int64_t i) {
  switch (t.element_type()) {
    case ElementType::float32: return t.data<float>()[i];
    case ElementType::float64: return t.data<double>()[i];
    case ElementType::float16: {
      uint16_t h = t.data<uint16_t>()[i];
      uint32_t sign = (h & 0x8000u) << 16, exponent = (h >> 10) & 0x1fu, mantissa = h & 0x3ffu;
      if (exponent == 0) return (sign ? -1.0 : 1.0) * std::ldexp(static_cast<double>(mantissa), -24);
      if (exponent == 31) return mantissa ? NAN : (sign ? -INFINITY : INFINITY);
      return (sign ? -1.0 : 1.0) * std::ldexp(static_cast<double>(mantissa | 0x400u), static_cast<int>(exponent) - 25);
    }
    case ElementType::bfloat16: {
      uint32_t bits = static_cast<uint32_t>(t.data<uint16_t>()[i]) << 16;
      float f;
      std::memcpy(&f, &bits, sizeof f);
      return f;
    }
    default: return NAN;
  }
}

bool is_floating(ElementType type) {
  return type == ElementType::float32 || type == ElementType::float64 || type == ElementType::float16 ||
         type == ElementType::bfloat16;
}

// Empty when `actual` matches `expected` as ONNX's runner compares them.
std::string compare(const Tensor& expected, const Tensor& actual) {
  if (expected.element_type() != actual.element_type())
    return fmt::format("element type {} expected, got {}", element_type_name(expected.element_type()),
                       element_type_name(actual.element_type()));
  if (expected.shape() != actual.shape())
    return fmt::format("shape {} expected, got {}", shape_to_string(expected.shape()), shape_to_string(actual.shape()));
  if (!is_floating(expected.element_type())) {
    if (bitwise_equal(expected, actual)) return {};
    const std::size_t size = element_size(expected.element_type());
    for (int64_t i = 0; i < expected.element_count(); ++i)
      if (std::memcmp(expected.bytes().data() + i * size, actual.bytes().data() + i * size, size) != 0)
        return fmt::format("element {} differs (exact comparison)", i);
    return {};
  }
  int64_t mismatches = 0, first = -1;
  double worst = 0;
  for (int64_t i = 0; i < expected.element_count(); ++i) {
    const double e = element_as_double(expected, i), a = element_as_double(actual, i);
    if (std::isnan(e) && std::isnan(a)) continue;
    if (std::isinf(e) || std::isinf(a)) {
      if (e == a) continue;
    } else if (std::fabs(a - e) <= kAtol + kRtol * std::fabs(e)) {
      continue;
    } else if (expected.element_type() == ElementType::bfloat16 &&
               std::fabs(a - e) <= std::ldexp(1.0, std::ilogb(e == 0 ? 1.0 : e) - 7)) {
      continue;  // one bfloat16 ulp: truncated expectations (see the header)
    }
    if (first < 0) first = i;
    ++mismatches;
    worst = std::max(worst, std::fabs(a - e));
  }
  if (mismatches == 0) return {};
  return fmt::format("{} of {} elements differ beyond rtol {} / atol {}; first at {} (expected {}, got {}), "
                     "largest difference {}",
                     mismatches, expected.element_count(), kRtol, kAtol, first, element_as_double(expected, first),
                     element_as_double(actual, first), worst);
}

// compare() for values: none matches none; sequences element by element.
std::string compare_values(const Value& expected, const Value& actual) {
  if (expected.is_none() || actual.is_none() || expected.is_sequence() != actual.is_sequence()) {
    if (expected.is_none() && actual.is_none()) return {};
    return fmt::format("{} expected, got {}", expected.describe(), actual.describe());
  }
  if (expected.is_tensor()) return compare(expected.tensor(), actual.tensor());
  const TensorSequence& e = expected.sequence();
  const TensorSequence& a = actual.sequence();
  if (e.size() != a.size() || (e.element_type() != ElementType::undefined && e.element_type() != a.element_type()))
    return fmt::format("{} expected, got {}", e.describe(), a.describe());
  for (std::size_t i = 0; i < e.size(); ++i)
    if (std::string problem = compare(e.at(i), a.at(i)); !problem.empty()) return fmt::format("tensor {}: {}", i, problem);
  return {};
}

bool values_bitwise_equal(const Value& a, const Value& b) {
  if (a.is_none() || b.is_none()) return a.is_none() && b.is_none();
  if (a.is_tensor() && b.is_tensor()) return bitwise_equal(a.tensor(), b.tensor());
  return a.is_sequence() && b.is_sequence() && bitwise_equal(a.sequence(), b.sequence());
}

// Every (domain, op) of a graph, including nested graphs (which we never implement).
void collect_ops(const onnx::GraphProto& graph, std::set<std::pair<std::string, std::string>>& ops) {
  for (const auto& node : graph.node()) {
    ops.emplace(node.domain() == "ai.onnx" ? "" : node.domain(), node.op_type());
    for (const auto& a : node.attribute()) {
      if (a.has_g()) collect_ops(a.g(), ops);
      for (const auto& g : a.graphs()) collect_ops(g, ops);
    }
  }
}

std::string squash(std::string_view text) {
  std::string out;
  for (char c : text)
    if (c != '_') out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// The operator a test belongs to: its only operator, or for function-expanded graphs the
// operator whose name starts the test name ("test_softmax_axis_0_expanded" -> Softmax).
std::string test_operator(const std::string& test, const std::set<std::pair<std::string, std::string>>& ops,
                          const std::set<std::string>& all_ops) {
  std::set<std::string> names;
  for (const auto& [domain, op] : ops)
    if (op != "Constant" || ops.size() == 1) names.insert(domain.empty() ? op : domain + "::" + op);
  if (names.size() == 1) return *names.begin();
  const std::string key = squash(std::string_view(test).substr(5));
  std::string best;
  for (const auto& op : all_ops)
    if (key.rfind(squash(op), 0) == 0 && op.size() > best.size()) best = op;
  return (best.empty() ? std::string("(composite)") : best) + " [expanded]";
}

// A TensorProto as the tensor the graph declares: uint16 data of a bfloat16 value is its bits.
Tensor load_tensor(const fs::path& file, int32_t declared_type, bool& converted) {
  const onnx::TensorProto proto = read_tensor_proto(file);
  Tensor t = tensor_from_proto(proto);
  if (declared_type == static_cast<int32_t>(ElementType::bfloat16) && t.element_type() == ElementType::uint16) {
    converted = true;
    return Tensor::from_bytes(ElementType::bfloat16, t.shape(), t.bytes());
  }
  return t;
}

int32_t declared_type(const onnx::ValueInfoProto& info) {
  return info.type().has_tensor_type() ? info.type().tensor_type().elem_type() : 0;
}

// Sequence- and optional-typed values (value.h): their data files are SequenceProto and OptionalProto
// messages, read as the graph declares the value, and run through RuntimeSession::run with values.
bool is_tensor_type(const onnx::TypeProto& type) { return type.has_tensor_type(); }

bool graph_uses_values(const onnx::GraphProto& graph) {
  for (const auto* list : {&graph.input(), &graph.output()})
    for (const auto& v : *list)
      if (!is_tensor_type(v.type())) return true;
  return false;
}

Tensor as_declared(Tensor t, int32_t declared, bool& converted) {
  if (declared == static_cast<int32_t>(ElementType::bfloat16) && t.element_type() == ElementType::uint16) {
    converted = true;
    return Tensor::from_bytes(ElementType::bfloat16, t.shape(), t.bytes());
  }
  return t;
}

// The tensor element type inside a sequence type (0 when not declared).
int32_t sequence_element_type(const onnx::TypeProto& type) {
  if (!type.has_sequence_type() || !type.sequence_type().elem_type().has_tensor_type()) return 0;
  return type.sequence_type().elem_type().tensor_type().elem_type();
}

Value sequence_value(const onnx::SequenceProto& proto, const onnx::TypeProto& type, const fs::path& file, bool& converted) {
  if (proto.elem_type() != onnx::SequenceProto::TENSOR && proto.elem_type() != onnx::SequenceProto::UNDEFINED)
    throw IoError(fmt::format("{}: a sequence of something other than tensors", file.string()));
  const int32_t declared = sequence_element_type(type);
  std::vector<Tensor> tensors;
  for (const auto& t : proto.tensor_values()) tensors.push_back(as_declared(tensor_from_proto(t), declared, converted));
  const ElementType element = !tensors.empty() ? tensors.front().element_type() : static_cast<ElementType>(declared);
  return TensorSequence(element, std::move(tensors));
}

// A data file as the value `type` declares: a tensor, a sequence, or an optional of either.
Value load_value(const fs::path& file, const onnx::TypeProto& type, bool& converted) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw IoError(fmt::format("{}: cannot read", file.string()));
  if (type.has_tensor_type()) {
    onnx::TensorProto proto;
    if (!proto.ParseFromIstream(&in)) throw IoError(fmt::format("{}: not a TensorProto", file.string()));
    return as_declared(tensor_from_proto(proto), type.tensor_type().elem_type(), converted);
  }
  if (type.has_sequence_type()) {
    onnx::SequenceProto proto;
    if (!proto.ParseFromIstream(&in)) throw IoError(fmt::format("{}: not a SequenceProto", file.string()));
    return sequence_value(proto, type, file, converted);
  }
  if (type.has_optional_type()) {
    onnx::OptionalProto proto;
    if (!proto.ParseFromIstream(&in)) throw IoError(fmt::format("{}: not an OptionalProto", file.string()));
    const onnx::TypeProto& inner = type.optional_type().elem_type();
    switch (proto.elem_type()) {
      case onnx::OptionalProto::UNDEFINED: return Value();
      case onnx::OptionalProto::TENSOR:
        return as_declared(tensor_from_proto(proto.tensor_value()),
                           inner.has_tensor_type() ? inner.tensor_type().elem_type() : 0, converted);
      case onnx::OptionalProto::SEQUENCE: return sequence_value(proto.sequence_value(), inner, file, converted);
      default: throw IoError(fmt::format("{}: an optional of something other than a tensor or a sequence", file.string()));
    }
  }
  throw IoError(fmt::format("{}: the graph declares a type the runner does not read", file.string()));
}

// The model with the declared shapes of inputs whose data (in the first data set) disagrees
// cleared; `adjusted` tells whether anything changed.
Model with_data_shapes(const Model& model, const fs::path& first_set, bool& adjusted) {
  onnx::ModelProto proto = model.proto();
  std::set<std::string> initializers;
  for (const auto& init : proto.graph().initializer()) initializers.insert(init.name());
  int index = 0;
  for (auto& input : *proto.mutable_graph()->mutable_input()) {
    if (initializers.contains(input.name())) continue;
    const fs::path file = first_set / fmt::format("input_{}.pb", index++);
    if (!fs::exists(file) || !input.type().has_tensor_type() || !input.type().tensor_type().has_shape()) continue;
    const onnx::TensorProto data = read_tensor_proto(file);
    const auto& dims = input.type().tensor_type().shape().dim();
    bool fits = dims.size() == data.dims_size();
    for (int d = 0; fits && d < dims.size(); ++d)
      fits = !dims[d].has_dim_value() || dims[d].dim_value() == data.dims(d);
    if (!fits) {
      input.mutable_type()->mutable_tensor_type()->clear_shape();
      adjusted = true;
    }
  }
  return adjusted ? model_from_proto(std::move(proto), model.origin()) : model;
}

// Operators whose outputs are drawn at random. ONNX's expected data for them is one draw of numpy's
// generator, which no other implementation reproduces (the ONNX test case says so itself), so their
// tests are checked by property instead of by value: element type and shape, every Bernoulli value
// 0 or 1, and, when every random node has a seed, the same values from the 1-thread and the
// 3-thread sessions (each seeded alike). Listed in the summary.
const std::set<std::string> kDrawnAtRandom = {"Bernoulli", "Multinomial", "RandomNormal", "RandomNormalLike",
                                              "RandomUniform", "RandomUniformLike"};

bool drawn_at_random(const std::string& test_operator) {
  return kDrawnAtRandom.contains(test_operator.substr(0, test_operator.find(' ')));
}

bool every_random_node_seeded(const onnx::GraphProto& graph) {
  for (const auto& node : graph.node()) {
    if (!kDrawnAtRandom.contains(node.op_type())) continue;
    if (std::none_of(node.attribute().begin(), node.attribute().end(), [](const auto& a) { return a.name() == "seed"; }))
      return false;
  }
  return true;
}

// Empty when `actual` has the type and shape of `expected` and, for a 0/1 draw, only 0s and 1s.
std::string compare_drawn(const Tensor& expected, const Tensor& actual, bool zero_or_one) {
  if (expected.element_type() != actual.element_type())
    return fmt::format("element type {} expected, got {}", element_type_name(expected.element_type()),
                       element_type_name(actual.element_type()));
  if (expected.shape() != actual.shape())
    return fmt::format("shape {} expected, got {}", shape_to_string(expected.shape()), shape_to_string(actual.shape()));
  if (zero_or_one)
    for (int64_t i = 0; i < actual.element_count(); ++i)
      if (const double v = element_as_double(actual, i); v != 0.0 && v != 1.0)
        return fmt::format("element {} is {}, not 0 or 1", i, v);
  return {};
}

// Training-mode Dropout (a true training_mode input, ratio above 0) keeps each element with a
// draw of the generator, as the drawn operators above: ONNX's data is numpy's draw. Its outputs are
// checked by property: type and shape, every y either 0 or x / (1 - ratio), the mask true exactly
// where y is kept, and about 1 - ratio of the elements kept. Returns the ratio when `graph` is one
// such Dropout node in this data set.
std::optional<double> training_dropout_ratio(const onnx::GraphProto& graph, const RuntimeContext& inputs) {
  if (graph.node_size() != 1 || graph.node(0).op_type() != "Dropout" || graph.node(0).input_size() < 3) return std::nullopt;
  const onnx::NodeProto& node = graph.node(0);
  if (!inputs.contains(node.input(2)) || !inputs.contains(node.input(1))) return std::nullopt;
  const Tensor& mode = inputs.get(node.input(2));
  if (mode.element_count() != 1 || element_as_double(mode, 0) == 0.0) return std::nullopt;
  const double ratio = element_as_double(inputs.get(node.input(1)), 0);
  return ratio > 0.0 ? std::optional<double>(ratio) : std::nullopt;
}

std::string compare_training_dropout(const Tensor& x, double ratio, const Tensor& expected_y, const Tensor& y,
                                     const Tensor* mask) {
  if (std::string problem = compare_drawn(expected_y, y, false); !problem.empty()) return problem;
  if (mask != nullptr && (mask->element_type() != ElementType::boolean || mask->shape() != y.shape()))
    return "the mask must be bool with y's shape";
  const double scale = 1.0 / (1.0 - ratio);
  int64_t kept = 0;
  for (int64_t i = 0; i < y.element_count(); ++i) {
    const double v = element_as_double(y, i), scaled = element_as_double(x, i) * scale;
    const bool is_kept = v != 0.0 || scaled == 0.0;
    if (v != 0.0 && std::abs(v - scaled) > 1e-5 * std::abs(scaled))
      return fmt::format("element {} is {}: neither 0 nor x / (1 - ratio) = {}", i, v, scaled);
    if (mask != nullptr && *(mask->data<bool>() + i) != is_kept && scaled != 0.0)
      return fmt::format("element {}: the mask says {} but y is {}", i, *(mask->data<bool>() + i), v);
    kept += is_kept;
  }
  const double fraction = y.element_count() == 0 ? 1.0 - ratio : static_cast<double>(kept) / y.element_count();
  if (std::abs(fraction - (1.0 - ratio)) > 0.25)
    return fmt::format("{:.2f} of the elements kept, expected about {:.2f}", fraction, 1.0 - ratio);
  return {};
}

struct Outcome {
  enum Kind { passed, failed, unsupported, excluded } kind = passed;
  std::string message;
};

struct Row {
  int passed = 0, failed = 0, unsupported = 0, excluded = 0;
};

// The committed table: "op_type<TAB>passed" lines; '#' starts a comment.
std::map<std::string, int> read_expected_passes(const fs::path& path) {
  std::ifstream in(path);
  if (!in) throw IoError(fmt::format("{}: cannot read the table of expected passes", path.string()));
  std::map<std::string, int> expected;
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    if (line.empty() || line[0] == '#') continue;
    const auto tab = line.rfind('\t');
    int count = -1;
    try {
      if (tab != std::string::npos && tab > 0) count = std::stoi(line.substr(tab + 1));
    } catch (const std::exception&) {
    }
    if (count < 0) throw IoError(fmt::format("{}:{}: expected 'op_type<TAB>passed count', got '{}'", path.string(), number, line));
    expected[line.substr(0, tab)] = count;
  }
  return expected;
}

void write_expected_passes(const fs::path& path, const std::map<std::string, Row>& rows) {
  std::ofstream out(path, std::ios::trunc);
  if (!out) throw IoError(fmt::format("{}: cannot write the table of expected passes", path.string()));
  out << "# ONNX backend node tests that pass, per operator (tests/conformance/conformance_runner.cc).\n"
         "# A lower count or a missing operator fails the conformance test. Regenerate after a deliberate\n"
         "# change: onnx_light_conformance NODE_DIR --exclusions EXCLUSIONS.md --expected THIS_FILE --write-expected\n"
         "# op_type\tpassed\n";
  for (const auto& [op, row] : rows)
    if (row.passed > 0) out << op << '\t' << row.passed << '\n';
}

// Failures for every operator whose passes dropped below the table (or vanished); the rises are
// printed, since the table should follow them.
std::vector<std::string> compare_with_expected(const std::map<std::string, int>& expected,
                                               const std::map<std::string, Row>& rows, const fs::path& path) {
  std::vector<std::string> lost;
  std::vector<std::string> gained;
  for (const auto& [op, count] : expected) {
    const auto it = rows.find(op);
    const int passed = it == rows.end() ? 0 : it->second.passed;
    if (it == rows.end() || passed == 0)
      lost.push_back(fmt::format("{}: {} node tests passed, {} expected ({}); the operator has no passing test any more "
                                 "(unregistered, or every test now fails or is unsupported)",
                                 op, passed, count, path.string()));
    else if (passed < count)
      lost.push_back(fmt::format("{}: {} node tests passed, {} expected ({})", op, passed, count, path.string()));
    else if (passed > count)
      gained.push_back(fmt::format("{}: {} passed, the table says {}", op, passed, count));
  }
  for (const auto& [op, row] : rows)
    if (row.passed > 0 && !expected.contains(op))
      gained.push_back(fmt::format("{}: {} passed, not in the table", op, row.passed));
  if (!gained.empty()) {
    std::printf("\nmore passes than %s records (raise the table: rerun with --write-expected):\n", path.string().c_str());
    for (const auto& g : gained) std::printf("  %s\n", g.c_str());
  }
  if (!lost.empty())
    std::printf("\nfewer passes than %s records (listed under the failures); if that is deliberate (an operator "
                "removed on purpose), rerun with --write-expected and commit the table\n", path.string().c_str());
  return lost;
}

// Runs every data set of one test; the message names the first problem.
Outcome run_test(const fs::path& dir, const Model& original, TuningRegistry& parallel_registry,
                 const std::map<std::string, Exclusion>::iterator exclusion, bool has_exclusion, bool& adjusted,
                 const std::string& test_operator, bool& by_property) {
  const bool drawn = drawn_at_random(test_operator);
  std::vector<fs::path> data_sets;
  for (const auto& entry : fs::directory_iterator(dir))
    if (entry.is_directory() && entry.path().filename().string().rfind("test_data_set_", 0) == 0)
      data_sets.push_back(entry.path());
  std::sort(data_sets.begin(), data_sets.end());
  if (data_sets.empty()) return {Outcome::failed, "no test_data_set_* directory"};
  std::optional<Model> adjusted_model;
  try {
    adjusted_model.emplace(with_data_shapes(original, data_sets.front(), adjusted));
  } catch (const Error& e) {
    return {Outcome::failed, e.what()};
  }
  const Model& model = *adjusted_model;
  RuntimeSessionOptions serial_options;
  serial_options.parameters = RuntimeParameters(1);
  std::optional<RuntimeSession> serial;
  try {
    serial.emplace(model, serial_options);
  } catch (const UnsupportedError& e) {
    if (has_exclusion) {
      exclusion->second.seen = true;
      if (std::string(e.what()).find(exclusion->second.fragment) != std::string::npos)
        return {Outcome::excluded, exclusion->second.reason};
      return {Outcome::failed, fmt::format("excluded for '{}', but session creation failed with: {}",
                                           exclusion->second.fragment, e.what())};
    }
    return {Outcome::failed, fmt::format("session creation: {}", e.what())};
  } catch (const Error& e) {
    return {Outcome::failed, fmt::format("session creation: {}", e.what())};
  }
  if (has_exclusion) {
    exclusion->second.seen = true;
    return {Outcome::failed, fmt::format("listed as excluded ('{}') but the session was created; remove the exclusion",
                                         exclusion->second.fragment)};
  }
  RuntimeSessionOptions parallel_options;
  parallel_options.parameters = RuntimeParameters(kParallelThreads);
  parallel_options.registry = &parallel_registry;
  std::optional<RuntimeSession> parallel;
  try {
    parallel.emplace(model, parallel_options);
  } catch (const Error& e) {
    return {Outcome::failed, fmt::format("parallel session creation: {}", e.what())};
  }

  std::vector<const onnx::ValueInfoProto*> inputs;
  std::set<std::string> initializers;
  for (const auto& init : model.graph().initializer()) initializers.insert(init.name());
  for (const auto& input : model.graph().input())
    if (!initializers.contains(input.name())) inputs.push_back(&input);

  const bool with_values = graph_uses_values(model.graph());
  for (const auto& set : data_sets) {
    const std::string set_name = set.filename().string();
    if (with_values) {
      try {
        std::map<std::string, Value> given;
        for (std::size_t i = 0; i < inputs.size(); ++i) {
          const fs::path file = set / fmt::format("input_{}.pb", i);
          if (fs::exists(file)) given[inputs[i]->name()] = load_value(file, inputs[i]->type(), adjusted);
        }
        std::vector<Value> in;
        for (const ValueInfo& info : serial->inputs()) {
          auto it = given.find(info.name);
          in.push_back(it == given.end() ? Value() : it->second);
        }
        std::vector<Value> serial_out(serial->outputs().size()), parallel_out(parallel->outputs().size());
        serial->run(std::span<const Value>(in), std::span<Value>(serial_out));
        parallel->run(std::span<const Value>(in), std::span<Value>(parallel_out));
        for (int o = 0; o < model.graph().output_size(); ++o) {
          const std::string& name = model.graph().output(o).name();
          const fs::path file = set / fmt::format("output_{}.pb", o);
          if (!fs::exists(file)) continue;
          const Value expected = load_value(file, model.graph().output(o).type(), adjusted);
          const auto k = static_cast<std::size_t>(o);
          if (std::string problem = compare_values(expected, serial_out[k]); !problem.empty())
            return {Outcome::failed, fmt::format("{} output '{}': {}", set_name, name, problem)};
          if (!values_bitwise_equal(serial_out[k], parallel_out[k]))
            return {Outcome::failed, fmt::format("{} output '{}': {} threads with minimal thresholds differ from 1 thread",
                                                 set_name, name, kParallelThreads)};
        }
      } catch (const Error& e) {
        return {Outcome::failed, fmt::format("{}: {}", set_name, e.what())};
      }
      continue;
    }
    try {
      RuntimeContext serial_context, parallel_context;
      for (std::size_t i = 0; i < inputs.size(); ++i) {
        const fs::path file = set / fmt::format("input_{}.pb", i);
        if (!fs::exists(file)) continue;  // an omitted optional input
        Tensor t = load_tensor(file, declared_type(*inputs[i]), adjusted);
        serial_context.set(inputs[i]->name(), t);
        parallel_context.set(inputs[i]->name(), t);
      }
      const std::optional<double> dropout_ratio = training_dropout_ratio(model.graph(), serial_context);
      std::optional<Tensor> dropout_x;
      if (dropout_ratio) dropout_x = serial_context.get(model.graph().node(0).input(0));
      serial->run(serial_context);
      parallel->run(parallel_context);
      if (dropout_ratio) {
        by_property = true;
        const std::string& y_name = model.graph().output(0).name();
        const Tensor expected = load_tensor(set / "output_0.pb", declared_type(model.graph().output(0)), adjusted);
        const Tensor* mask = model.graph().output_size() > 1 ? &serial_context.get(model.graph().output(1).name()) : nullptr;
        const auto& attributes = model.graph().node(0).attribute();
        const bool seeded =
            std::any_of(attributes.begin(), attributes.end(), [](const auto& a) { return a.name() == "seed"; });
        if (std::string problem =
                compare_training_dropout(*dropout_x, *dropout_ratio, expected, serial_context.get(y_name), mask);
            !problem.empty())
          return {Outcome::failed, fmt::format("{} output '{}': {}", set_name, y_name, problem)};
        for (int o = 0; o < model.graph().output_size(); ++o) {
          const std::string& name = model.graph().output(o).name();
          if (seeded && !bitwise_equal(serial_context.get(name), parallel_context.get(name)))
            return {Outcome::failed, fmt::format("{} output '{}': {} threads differ from 1 thread", set_name, name,
                                                 kParallelThreads)};
        }
        continue;
      }
      for (int o = 0; o < model.graph().output_size(); ++o) {
        const std::string& name = model.graph().output(o).name();
        const fs::path file = set / fmt::format("output_{}.pb", o);
        if (!fs::exists(file)) continue;
        const Tensor expected = load_tensor(file, declared_type(model.graph().output(o)), adjusted);
        const Tensor& actual = serial_context.get(name);
        const bool zero_or_one = test_operator.rfind("Bernoulli", 0) == 0;
        if (std::string problem = drawn ? compare_drawn(expected, actual, zero_or_one) : compare(expected, actual);
            !problem.empty())
          return {Outcome::failed, fmt::format("{} output '{}': {}", set_name, name, problem)};
        if ((!drawn || every_random_node_seeded(model.graph())) && !bitwise_equal(actual, parallel_context.get(name)))
          return {Outcome::failed, fmt::format("{} output '{}': {} threads with minimal thresholds differ from 1 thread",
                                               set_name, name, kParallelThreads)};
      }
    } catch (const Error& e) {
      return {Outcome::failed, fmt::format("{}: {}", set_name, e.what())};
    }
  }
  return {};
}

// Every parallel threshold at 1 and every tile at its smallest allowed value, for 3 threads.
void publish_parallel_profiles(TuningRegistry& registry, const KernelTable& table) {
  std::vector<PublishedProfile> profiles;
  for (const auto& def : table.definitions()) {
    PublishedProfile p;
    p.key = def.schema.key;
    p.effective_threads = kParallelThreads;
    p.values = def.schema.defaults();
    for (const auto& spec : def.schema.parameters) {
      if (spec.role == ParameterRole::threshold) {
        p.values[spec.name] = int64_t{1};
      } else if (spec.role == ParameterRole::tile && !spec.allowed.empty()) {
        p.values[spec.name] = *std::min_element(spec.allowed.begin(), spec.allowed.end(), [](const auto& a, const auto& b) {
          return std::get<int64_t>(a) < std::get<int64_t>(b);
        });
      }
    }
    profiles.push_back(std::move(p));
  }
  registry.publish(std::move(profiles));
}

}  // namespace

int main(int argc, char** argv) {
  fs::path root;
  fs::path exclusions_path;
  fs::path expected_path;
  bool write_expected = false;
  std::string filter;
  bool verbose = false;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--exclusions" && i + 1 < argc) exclusions_path = argv[++i];
    else if (arg == "--expected" && i + 1 < argc) expected_path = argv[++i];
    else if (arg == "--write-expected") write_expected = true;
    else if (arg == "--filter" && i + 1 < argc) filter = argv[++i];
    else if (arg == "--verbose") verbose = true;
    else if (!arg.empty() && arg[0] != '-' && root.empty()) root = arg;
    else {
      std::fprintf(stderr, "usage: %s NODE_DIR [--exclusions FILE] [--expected FILE [--write-expected]] "
                   "[--filter TEXT] [--verbose]\n", argv[0]);
      return 2;
    }
  }
  if (write_expected && (expected_path.empty() || !filter.empty())) {
    std::fprintf(stderr, "%s: --write-expected needs --expected FILE and a full run (no --filter)\n", argv[0]);
    return 2;
  }
  if (root.empty() || !fs::is_directory(root)) {
    std::fprintf(stderr, "%s: '%s' is not a directory of ONNX node tests (build target onnx_light_conformance_data "
                 "generates it with /usr/bin/python3 and python3-onnx)\n", argv[0], root.string().c_str());
    return 2;
  }
  try {
    std::map<std::string, Exclusion> exclusions;
    if (!exclusions_path.empty()) exclusions = read_exclusions(exclusions_path);
    const KernelTable& table = cpu_kernel_table();
    std::set<std::string> registered;
    for (const auto& op : table.op_types()) registered.insert(op);
    registered.insert("Constant");  // folded by the session
    TuningRegistry parallel_registry;
    publish_parallel_profiles(parallel_registry, table);

    std::vector<fs::path> tests;
    for (const auto& entry : fs::directory_iterator(root))
      if (entry.is_directory() && entry.path().filename().string().rfind("test_", 0) == 0) tests.push_back(entry.path());
    std::sort(tests.begin(), tests.end());
    // Load every model first: the operator names of the whole suite attribute expanded tests.
    std::vector<std::pair<fs::path, std::optional<Model>>> models;
    std::set<std::string> all_ops;
    for (const auto& dir : tests) {
      try {
        Model m = load_model_file(dir / "model.onnx");
        std::set<std::pair<std::string, std::string>> ops;
        collect_ops(m.graph(), ops);
        for (const auto& [domain, op] : ops)
          if (domain.empty()) all_ops.insert(op);
        models.emplace_back(dir, std::move(m));
      } catch (const Error&) {
        models.emplace_back(dir, std::nullopt);
      }
    }

    std::map<std::string, Row> rows;
    std::vector<std::string> failures;
    std::vector<std::string> adjusted_tests, drawn_tests;
    int run_count = 0;
    for (auto& [dir, model] : models) {
      const std::string name = dir.filename().string();
      if (!filter.empty() && name.find(filter) == std::string::npos) continue;
      if (!model) {
        failures.push_back(fmt::format("{}: model.onnx cannot be loaded", name));
        continue;
      }
      std::set<std::pair<std::string, std::string>> ops;
      collect_ops(model->graph(), ops);
      const std::string op = test_operator(name, ops, all_ops);
      bool supported = true;
      for (const auto& [domain, type] : ops)
        if (!domain.empty() || !registered.contains(type)) supported = false;
      Row& row = rows[op];
      if (!supported) {
        ++row.unsupported;
        if (exclusions.contains(name)) exclusions[name].seen = true;
        continue;
      }
      ++run_count;
      auto exclusion = exclusions.find(name);
      bool adjusted = false, by_property = false;
      Outcome outcome =
          run_test(dir, *model, parallel_registry, exclusion, exclusion != exclusions.end(), adjusted, op, by_property);
      if (adjusted) adjusted_tests.push_back(name);
      if (drawn_at_random(op) || by_property) drawn_tests.push_back(name);
      switch (outcome.kind) {
        case Outcome::passed: ++row.passed; break;
        case Outcome::excluded: ++row.excluded; break;
        case Outcome::unsupported: ++row.unsupported; break;
        case Outcome::failed:
          ++row.failed;
          failures.push_back(fmt::format("{} ({}): {}", name, op, outcome.message));
          break;
      }
      if (verbose) std::printf("%-60s %s\n", name.c_str(), outcome.kind == Outcome::failed ? "FAILED" : "ok");
    }
    if (filter.empty())
      for (const auto& [name, e] : exclusions)
        if (!e.seen) failures.push_back(fmt::format("{}: listed in the exclusions but no such test exists", name));

    Row total;
    std::printf("%-36s %7s %7s %9s %12s\n", "operator", "passed", "failed", "excluded", "unsupported");
    for (const auto& [op, row] : rows) {
      std::printf("%-36s %7d %7d %9d %12d\n", op.c_str(), row.passed, row.failed, row.excluded, row.unsupported);
      total.passed += row.passed;
      total.failed += row.failed;
      total.excluded += row.excluded;
      total.unsupported += row.unsupported;
    }
    std::printf("%-36s %7d %7d %9d %12d\n", "total", total.passed, total.failed, total.excluded, total.unsupported);
    std::printf("\n%zu operators registered; %d tests run (1 thread, and %d threads with minimal thresholds), "
                "%d not run because an operator is not registered\n",
                registered.size(), run_count, kParallelThreads, total.unsupported);
    if (!drawn_tests.empty()) {
      std::printf("checked by property, not by value (outputs drawn at random; ONNX's data is one draw of numpy's "
                  "generator) in %zu tests:", drawn_tests.size());
      for (const auto& t : drawn_tests) std::printf(" %s", t.c_str());
      std::printf("\n");
    }
    if (!adjusted_tests.empty()) {
      std::printf("data conventions of onnx 1.12 undone (bfloat16 stored as uint16, declared input shapes that "
                  "disagree with the data) in %zu tests:", adjusted_tests.size());
      for (const auto& t : adjusted_tests) std::printf(" %s", t.c_str());
      std::printf("\n");
    }
    if (write_expected) {
      write_expected_passes(expected_path, rows);
      const auto written = std::count_if(rows.begin(), rows.end(), [](const auto& r) { return r.second.passed > 0; });
      std::printf("\nwrote the passes of %td operators to %s\n", written, expected_path.string().c_str());
    } else if (!expected_path.empty() && filter.empty()) {
      for (auto& lost : compare_with_expected(read_expected_passes(expected_path), rows, expected_path))
        failures.push_back(std::move(lost));
    } else if (!expected_path.empty()) {
      std::printf("\n--filter: passes not compared with %s (a partial run)\n", expected_path.string().c_str());
    }
    if (!failures.empty()) {
      std::printf("\n%zu failure%s:\n", failures.size(), failures.size() == 1 ? "" : "s");
      for (const auto& f : failures) std::printf("  %s\n", f.c_str());
      return 1;
    }
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "onnx_light_conformance: %s\n", e.what());
    return 1;
  }
}
