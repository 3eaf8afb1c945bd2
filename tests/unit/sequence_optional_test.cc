// Sequences and optionals (value.h): the sequence kernels at their edges (empty sequences, negative
// positions, insert at the end, positions out of range naming the node, SplitToSequence without a
// split and keepdims = 0 and with an uneven split, ConcatFromSequence with new_axis and a negative
// axis, an element type that does not match the sequence), optionals that are none, graphs with
// sequence-typed inputs and outputs run with values, and the tensor run forms refusing them.
#include <doctest/doctest.h>

#include <map>
#include <string>
#include <vector>

#include "onnx_light/runtime/error.h"
#include "onnx_light/runtime/session.h"
#include "onnx_light/runtime/value.h"
#include "tensor_values.h"
#include "test_models.h"

using namespace onnx_light;
using namespace onnx_light::runtime;
using namespace onnx_light::test;

namespace {

const std::string kSeqoptHeader = "<ir_version: 8, opset_import: [\"\" : 17]>\n";

// The graph's text with the named inputs/outputs retyped: "seq" (seq(tensor(float))), "opt"
// (optional(tensor(float))) or "optseq" (optional(seq(tensor(float)))), in nested graphs too. ONNX
// 1.12's text syntax has no sequence or optional types.
Model seqopt_model(const std::string& graph, const std::map<std::string, std::string>& retyped = {}) {
  onnx::ModelProto proto = test::parse(kSeqoptHeader + graph).proto();
  auto retype = [&](onnx::ValueInfoProto& v) {
    auto it = retyped.find(v.name());
    if (it == retyped.end()) return;
    const int32_t elem = v.type().tensor_type().elem_type();
    onnx::TypeProto t;
    onnx::TypeProto* inner = &t;
    if (it->second == "opt" || it->second == "optseq") inner = t.mutable_optional_type()->mutable_elem_type();
    if (it->second == "seq" || it->second == "optseq") inner = inner->mutable_sequence_type()->mutable_elem_type();
    inner->mutable_tensor_type()->set_elem_type(elem);
    *v.mutable_type() = t;
  };
  // The graph's own inputs and outputs and those of the graphs in its nodes (a Loop's body).
  auto retype_graph = [&](onnx::GraphProto& g, auto& self) -> void {
    for (auto& v : *g.mutable_input()) retype(v);
    for (auto& v : *g.mutable_output()) retype(v);
    for (auto& node : *g.mutable_node())
      for (auto& attribute : *node.mutable_attribute())
        if (attribute.has_g()) self(*attribute.mutable_g(), self);
  };
  retype_graph(*proto.mutable_graph(), retype_graph);
  return model_from_proto(std::move(proto), "<sequence test>");
}

// Runs a tensor-only graph and returns its values.
std::map<std::string, Tensor> seqopt_run(const std::string& graph, const NamedTensors& inputs = {}) {
  return run_graph(graph, inputs, 17);
}

// Runs `model` with values on 1 and on 3 threads; the outputs must agree bit for bit.
std::vector<Value> seqopt_run_values(const Model& model, const std::vector<Value>& inputs) {
  std::vector<Value> outputs;
  for (int threads : {1, 3}) {
    RuntimeSessionOptions options;
    options.parameters = RuntimeParameters(threads);
    RuntimeSession session(model, options);
    std::vector<Value> out(session.outputs().size());
    session.run(std::span<const Value>(inputs), std::span<Value>(out));
    if (threads == 1) {
      outputs = out;
      continue;
    }
    for (std::size_t k = 0; k < out.size(); ++k) {
      REQUIRE(out[k].is_sequence() == outputs[k].is_sequence());
      if (out[k].is_sequence()) CHECK(bitwise_equal(out[k].sequence(), outputs[k].sequence()));
      else if (out[k].is_tensor()) CHECK(bitwise_equal(out[k].tensor(), outputs[k].tensor()));
      else CHECK(outputs[k].is_none());
    }
  }
  return outputs;
}

std::string seqopt_run_error(const std::string& graph, const NamedTensors& inputs = {}) {
  try {
    seqopt_run(graph, inputs);
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

TensorSequence seqopt_floats_sequence(const std::vector<std::vector<float>>& parts) {
  std::vector<Tensor> tensors;
  for (const auto& p : parts) tensors.push_back(floats({static_cast<int64_t>(p.size())}, p));
  return TensorSequence(ElementType::float32, std::move(tensors));
}

}  // namespace

TEST_CASE("sequence_value_checks_element_types_and_positions") {
  TensorSequence s(ElementType::float32);
  CHECK(s.empty());
  CHECK(s.describe() == "seq(float)[0]");
  s.push_back(floats({1}, {1}));
  s.insert(0, floats({2}, {2, 3}));
  CHECK(s.size() == 2);
  CHECK(s.at(0).shape() == Shape{2});
  CHECK_THROWS_AS(s.insert(0, int64s({1}, {1})), InvalidValueError);
  CHECK_THROWS_AS(s.insert(3, floats({1}, {1})), InvalidValueError);
  CHECK_THROWS_AS(s.at(2), InvalidValueError);
  CHECK_THROWS_AS(s.insert(0, Tensor()), InvalidValueError);
  s.erase(1);
  CHECK(s.size() == 1);
  CHECK(Value().is_none());
  CHECK(Value(Tensor()).is_none());  // an empty tensor is none
  CHECK(Value(s).is_sequence());
  CHECK_THROWS_AS(Value(s).tensor(), InvalidValueError);
}

TEST_CASE("sequence_empty_has_length_zero_and_refuses_reads") {
  auto v = seqopt_run(R"(g (float[1] x) => (int64 n) {
    s = SequenceEmpty <dtype = 1> ()
    n = SequenceLength(s)
  })", {{"x", floats({1}, {0})}});
  CHECK(values<int64_t>(v.at("n")) == std::vector<int64_t>{0});
  // Concatenating, reading or erasing nothing: an input error naming the node.
  const std::string concat = seqopt_run_error(R"(g (float[1] x) => (float y) {
    s = SequenceEmpty <dtype = 1> ()
    y = ConcatFromSequence <axis = 0> (s)
  })", {{"x", floats({1}, {0})}});
  CHECK(concat.find("empty seq(float)[0]") != std::string::npos);
  CHECK(concat.find("ConcatFromSequence node") != std::string::npos);
  const std::string at = seqopt_run_error(R"(g (int64 p) => (float y) {
    s = SequenceEmpty <dtype = 1> ()
    y = SequenceAt(s, p)
  })", {{"p", int64s({}, {0})}});
  CHECK(at.find("position 0 is outside [0, -1]") != std::string::npos);
  const std::string erase = seqopt_run_error(R"(g (float[1] x) => (int64 n) {
    s = SequenceEmpty <dtype = 1> ()
    e = SequenceErase(s)
    n = SequenceLength(e)
  })", {{"x", floats({1}, {0})}});
  CHECK(erase.find("cannot erase from an empty") != std::string::npos);
}

TEST_CASE("sequence_positions_may_be_negative_and_insert_may_append") {
  const std::string g = R"(g (float[1] a, float[2] b, float[3] c, int64 p, int64 q) => (float y, int64 n) {
    s = SequenceConstruct(a, b)
    t = SequenceInsert(s, c, p)
    y = SequenceAt(t, q)
    n = SequenceLength(t)
  })";
  auto run = [&](int64_t p, int64_t q) {
    return seqopt_run(g, {{"a", floats({1}, {1})}, {"b", floats({2}, {2, 2})}, {"c", floats({3}, {3, 3, 3})},
                          {"p", int64s({}, {p})}, {"q", int64s({}, {q})}});
  };
  // Insert at the length appends; at -1 lands before the last.
  CHECK(run(2, 2).at("y").shape() == Shape{3});
  CHECK(run(2, -1).at("y").shape() == Shape{3});
  CHECK(run(-1, 1).at("y").shape() == Shape{3});
  CHECK(run(-1, -1).at("y").shape() == Shape{2});
  CHECK(run(-2, 0).at("y").shape() == Shape{3});
  CHECK(values<int64_t>(run(0, -3).at("n")) == std::vector<int64_t>{3});
  CHECK(run(0, -3).at("y").shape() == Shape{3});
  // Out of range, both ways, for insert ([-2, 2]) and for reading ([-3, 2]).
  // Plain variables, not a structured binding: CAPTURE's lambda cannot capture one in clang 14.
  for (const auto& positions : {std::pair<int64_t, int64_t>{3, 0}, {-3, 0}, {0, 3}, {0, -4}}) {
    const int64_t p = positions.first, q = positions.second;
    CAPTURE(p);
    CAPTURE(q);
    CHECK_THROWS_AS(run(p, q), InputError);
  }
  try {
    run(3, 0);
  } catch (const InputError& e) {
    CHECK(std::string(e.what()).find("SequenceInsert node") != std::string::npos);
    CHECK(std::string(e.what()).find("position 3 is outside [-2, 2]") != std::string::npos);
  }
  // A SequenceInsert without a position appends; SequenceErase at a negative position.
  auto v = seqopt_run(R"(g (float[1] a, float[2] b) => (float y, int64 n) {
    s = SequenceConstruct(a)
    t = SequenceInsert(s, b)
    u = SequenceErase(t, m2)
    m2 = Constant <value_int = -2> ()
    y = SequenceAt(u, zero)
    zero = Constant <value_int = 0> ()
    n = SequenceLength(u)
  })", {{"a", floats({1}, {1})}, {"b", floats({2}, {4, 5})}});
  CHECK(values<float>(v.at("y")) == std::vector<float>{4, 5});
  CHECK(values<int64_t>(v.at("n")) == std::vector<int64_t>{1});
}

TEST_CASE("sequence_insert_of_another_element_type_is_refused_naming_the_node") {
  const std::string message = seqopt_run_error(R"(g (float[1] a, int64[1] b) => (int64 n) {
    s = SequenceConstruct(a)
    t = SequenceInsert(s, b)
    n = SequenceLength(t)
  })", {{"a", floats({1}, {1})}, {"b", int64s({1}, {1})}});
  CHECK(message.find("SequenceInsert node") != std::string::npos);
  CHECK(message.find("tensor is int64 but the sequence holds float") != std::string::npos);
  // SequenceConstruct of two types, and a sequence given to an operator that takes tensors.
  CHECK(seqopt_run_error(R"(g (float[1] a, int64[1] b) => (int64 n) {
    s = SequenceConstruct(a, b)
    n = SequenceLength(s)
  })", {{"a", floats({1}, {1})}, {"b", int64s({1}, {1})}}).find("a sequence holds one element type") != std::string::npos);
  CHECK(seqopt_run_error(R"(g (float[1] a) => (float y) {
    s = SequenceConstruct(a)
    y = Abs(s)
  })", {{"a", floats({1}, {1})}}).find("input 's' is a sequence, which Abs does not take") != std::string::npos);
}

TEST_CASE("split_to_sequence_keepdims_and_uneven_splits") {
  const Tensor x = floats({5, 2}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9});
  // No split, keepdims = 0: one tensor per row, the axis dropped.
  auto v = seqopt_run(R"(g (float[5, 2] x) => (float y, int64 n) {
    s = SplitToSequence <axis = 0, keepdims = 0> (x)
    n = SequenceLength(s)
    y = SequenceAt(s, last)
    last = Constant <value_int = -1> ()
  })", {{"x", x}});
  CHECK(values<int64_t>(v.at("n")) == std::vector<int64_t>{5});
  CHECK(v.at("y").shape() == Shape{2});
  CHECK(values<float>(v.at("y")) == std::vector<float>{8, 9});
  // No split, keepdims = 1 (the default): [1, 2] each.
  v = seqopt_run(R"(g (float[5, 2] x) => (float y) {
    s = SplitToSequence (x)
    y = SequenceAt(s, one)
    one = Constant <value_int = 1> ()
  })", {{"x", x}});
  CHECK(v.at("y").shape() == Shape{1, 2});
  // A scalar split of 2 over 5 rows: 2, 2 and the 1 left (keepdims is ignored with a split).
  v = seqopt_run(R"(g (float[5, 2] x) => (float y, int64 n) {
    two = Constant <value_int = 2> ()
    s = SplitToSequence <axis = -2, keepdims = 0> (x, two)
    n = SequenceLength(s)
    y = SequenceAt(s, two)
  })", {{"x", x}});
  CHECK(values<int64_t>(v.at("n")) == std::vector<int64_t>{3});
  CHECK(v.at("y").shape() == Shape{1, 2});
  CHECK(values<float>(v.at("y")) == std::vector<float>{8, 9});
  // Split lengths along axis 1, one of them 0.
  v = seqopt_run(R"(g (float[5, 2] x) => (float y, int64 n) {
    sizes = Constant <value_ints = [0, 2]> ()
    s = SplitToSequence <axis = 1> (x, sizes)
    n = SequenceLength(s)
    y = SequenceAt(s, zero)
    zero = Constant <value_int = 0> ()
  })", {{"x", x}});
  CHECK(values<int64_t>(v.at("n")) == std::vector<int64_t>{2});
  CHECK(v.at("y").shape() == Shape{5, 0});
  // Lengths that do not add up, and an axis outside the rank.
  CHECK(seqopt_run_error(R"(g (float[5, 2] x) => (int64 n) {
    sizes = Constant <value_ints = [2, 2]> ()
    s = SplitToSequence (x, sizes)
    n = SequenceLength(s)
  })", {{"x", x}}).find("split sums to 4 but axis 0") != std::string::npos);
  CHECK(seqopt_run_error(R"(g (float[5, 2] x) => (int64 n) {
    s = SplitToSequence <axis = 2> (x)
    n = SequenceLength(s)
  })", {{"x", x}}).find("axis 2 is outside [-2, 1]") != std::string::npos);
}

TEST_CASE("concat_from_sequence_new_axis_with_a_negative_axis") {
  const NamedTensors in = {{"a", floats({2, 3}, {0, 1, 2, 3, 4, 5})}, {"b", floats({2, 3}, {10, 11, 12, 13, 14, 15})}};
  // new_axis = 1, axis = -1: a new last axis ([2, 3, 2]), each tensor one slice of it.
  auto v = seqopt_run(R"(g (float[2, 3] a, float[2, 3] b) => (float y) {
    s = SequenceConstruct(a, b)
    y = ConcatFromSequence <axis = -1, new_axis = 1> (s)
  })", in);
  CHECK(v.at("y").shape() == Shape{2, 3, 2});
  CHECK(values<float>(v.at("y")) == std::vector<float>{0, 10, 1, 11, 2, 12, 3, 13, 4, 14, 5, 15});
  // new_axis = 1, axis = -3: the new axis first ([2, 2, 3], a stack).
  v = seqopt_run(R"(g (float[2, 3] a, float[2, 3] b) => (float y) {
    s = SequenceConstruct(a, b)
    y = ConcatFromSequence <axis = -3, new_axis = 1> (s)
  })", in);
  CHECK(v.at("y").shape() == Shape{2, 2, 3});
  CHECK(values<float>(v.at("y")) == std::vector<float>{0, 1, 2, 3, 4, 5, 10, 11, 12, 13, 14, 15});
  // Without new_axis, axis = -1 joins along the last axis.
  v = seqopt_run(R"(g (float[2, 3] a, float[2, 3] b) => (float y) {
    s = SequenceConstruct(a, b)
    y = ConcatFromSequence <axis = -1> (s)
  })", in);
  CHECK(v.at("y").shape() == Shape{2, 6});
  CHECK(values<float>(v.at("y")) == std::vector<float>{0, 1, 2, 10, 11, 12, 3, 4, 5, 13, 14, 15});
  // -4 is outside [-3, 2] with new_axis; shapes that differ off the axis are refused.
  CHECK(seqopt_run_error(R"(g (float[2, 3] a, float[2, 3] b) => (float y) {
    s = SequenceConstruct(a, b)
    y = ConcatFromSequence <axis = -4, new_axis = 1> (s)
  })", in).find("axis -4 is outside [-3, 2]") != std::string::npos);
  CHECK(seqopt_run_error(R"(g (float[2, 3] a, float[3, 2] b) => (float y) {
    s = SequenceConstruct(a, b)
    y = ConcatFromSequence <axis = 0> (s)
  })", {{"a", floats({2, 3}, {0, 1, 2, 3, 4, 5})}, {"b", floats({3, 2}, {0, 1, 2, 3, 4, 5})}})
            .find("does not concatenate") != std::string::npos);
}

TEST_CASE("optional_none_through_has_element_and_get_element") {
  const Model model = seqopt_model(R"(g (float[2] o) => (bool has, float y) {
    has = OptionalHasElement(o)
    y = Identity(o)
  })", {{"o", "opt"}, {"y", "opt"}});
  // None: HasElement false, Identity passes none through.
  std::vector<Value> out = seqopt_run_values(model, {Value()});
  CHECK(values<bool>(out[0].tensor()) == std::vector<bool>{false});
  CHECK(out[1].is_none());
  out = seqopt_run_values(model, {Value(floats({2}, {1, 2}))});
  CHECK(values<bool>(out[0].tensor()) == std::vector<bool>{true});
  CHECK(values<float>(out[1].tensor()) == std::vector<float>{1, 2});
  // The tensor form takes an absent optional tensor as an empty tensor.
  RuntimeSession session(model);
  std::vector<Tensor> tin{Tensor()}, tout(2);
  session.run(std::span<const Tensor>(tin), std::span<Tensor>(tout));
  CHECK(values<bool>(tout[0]) == std::vector<bool>{false});
  CHECK(tout[1].empty());

  // OptionalGetElement of none: an input error naming the node.
  const Model get = seqopt_model(R"(g (float[2] o) => (float y) { y = OptionalGetElement(o) })",
                                 {{"o", "opt"}});
  RuntimeSession get_session(get);
  std::vector<Value> none{Value()}, result(1);
  try {
    get_session.run(std::span<const Value>(none), std::span<Value>(result));
    FAIL("no error");
  } catch (const InputError& e) {
    CHECK(std::string(e.what()).find("OptionalGetElement node") != std::string::npos);
    CHECK(std::string(e.what()).find("the optional input is empty") != std::string::npos);
  }
  // Optional of an optional sequence that is none, then a sequence.
  const Model seq = seqopt_model(R"(g (float o) => (bool has) { has = OptionalHasElement(o) })", {{"o", "optseq"}});
  CHECK(values<bool>(seqopt_run_values(seq, {Value()})[0].tensor()) == std::vector<bool>{false});
  CHECK(values<bool>(seqopt_run_values(seq, {Value(TensorSequence(ElementType::float32))})[0].tensor()) ==
        std::vector<bool>{true});
}

TEST_CASE("sequence_graph_inputs_and_outputs_run_with_values_and_refuse_tensor_runs") {
  const Model model = seqopt_model(R"(g (float s, float[1] x) => (float t, float same) {
    t = SequenceInsert(s, x, zero)
    zero = Constant <value_int = 0> ()
    same = Identity(s)
  })", {{"s", "seq"}, {"t", "seq"}, {"same", "seq"}});
  const TensorSequence s = seqopt_floats_sequence({{1, 2}, {3}});
  std::vector<Value> out = seqopt_run_values(model, {Value(s), Value(floats({1}, {9}))});
  REQUIRE(out[0].is_sequence());
  CHECK(out[0].sequence().size() == 3);
  CHECK(values<float>(out[0].sequence().at(0)) == std::vector<float>{9});
  CHECK(values<float>(out[0].sequence().at(2)) == std::vector<float>{3});
  CHECK(bitwise_equal(out[1].sequence(), s));
  // The inserted tensor is a copy: writing the caller's x afterwards changes nothing.
  Tensor x = floats({1}, {9});
  RuntimeSession session(model);
  std::vector<Value> in{Value(s), Value(x)}, again(2);
  session.run(std::span<const Value>(in), std::span<Value>(again));
  x.data<float>()[0] = -1;
  CHECK(values<float>(again[0].sequence().at(0)) == std::vector<float>{9});
  // Wrong kinds and element types are input errors naming the input.
  std::vector<Value> wrong{Value(floats({1}, {1})), Value(x)};
  CHECK_THROWS_WITH_AS(session.run(std::span<const Value>(wrong), std::span<Value>(again)),
                       doctest::Contains("input 's' must be seq(float)"), InputError);
  std::vector<Value> ints{Value(TensorSequence(ElementType::int64)), Value(x)};
  CHECK_THROWS_AS(session.run(std::span<const Value>(ints), std::span<Value>(again)), InputError);
  std::vector<Value> missing{Value(), Value(x)};
  CHECK_THROWS_WITH_AS(session.run(std::span<const Value>(missing), std::span<Value>(again)),
                       doctest::Contains("missing input 's'"), InputError);
  // The tensor forms name the sequence input and the way to run it.
  std::vector<Tensor> tin{Tensor(), x}, tout(2);
  CHECK_THROWS_WITH_AS(session.run(std::span<const Tensor>(tin), std::span<Tensor>(tout)),
                       doctest::Contains("graph input 's' is a sequence"), InputError);
  RuntimeContext context;
  CHECK_THROWS_WITH_AS(session.run(context), doctest::Contains("RuntimeSession::run with values"), InputError);
  // An empty input sequence.
  out = seqopt_run_values(model, {Value(TensorSequence(ElementType::float32)), Value(floats({1}, {5}))});
  CHECK(out[0].sequence().size() == 1);
  CHECK(out[1].sequence().empty());
}

TEST_CASE("sequence_map_and_loop_carry_sequences") {
  // SequenceMap over an empty and a two-tensor sequence, with a tensor input.
  const Model map = seqopt_model(R"(g (float s, float[1] x) => (float y) {
    y = SequenceMap <body = b (float[N] e, float[1] k) => (float[N] r) { r = Add(e, k) }> (s, x)
  })", {{"s", "seq"}, {"y", "seq"}});
  std::vector<Value> out = seqopt_run_values(map, {Value(TensorSequence(ElementType::float32)), Value(floats({1}, {1}))});
  CHECK(out[0].sequence().empty());
  CHECK(out[0].sequence().element_type() == ElementType::float32);
  out = seqopt_run_values(map, {Value(seqopt_floats_sequence({{1, 2}, {3}})), Value(floats({1}, {10}))});
  REQUIRE(out[0].sequence().size() == 2);
  CHECK(values<float>(out[0].sequence().at(0)) == std::vector<float>{11, 12});
  CHECK(values<float>(out[0].sequence().at(1)) == std::vector<float>{13});
  // A Loop carrying a sequence that starts empty: one tensor appended per iteration.
  const Model loop = seqopt_model(R"(g (int64 m) => (float y) {
    cond = Constant <value = bool {1}> ()
    empty = SequenceEmpty <dtype = 1> ()
    y = Loop (m, cond, empty) <body = b (int64 i, bool c, float s) => (bool co, float so) {
      co = Identity(c)
      f = Cast <to = 1> (i)
      so = SequenceInsert(s, f)
    }>
  })", {{"y", "seq"}, {"so", "seq"}});
  out = seqopt_run_values(loop, {Value(int64s({}, {3}))});
  REQUIRE(out[0].sequence().size() == 3);
  CHECK(values<float>(out[0].sequence().at(2)) == std::vector<float>{2});
  out = seqopt_run_values(loop, {Value(int64s({}, {0}))});
  CHECK(out[0].sequence().empty());
}

TEST_CASE("sequence_given_to_scan_is_refused_at_creation") {
  const std::string message = seqopt_run_error(R"(g (float[2] a) => (float y) {
    s = SequenceConstruct(a)
    y = Scan <num_scan_inputs = 1, body = b (float st, float x) => (float so) { so = Identity(st) }> (s, a)
  })", {{"a", floats({2}, {1, 2})}});
  CHECK(message.find("input 's' is a sequence; Scan takes tensors only") != std::string::npos);
}
