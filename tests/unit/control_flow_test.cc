// If: the branch cond selects runs on the outer values it reads by name (graph inputs, node outputs,
// constants, values two scopes out), which must stay alive until the If has run, survive the
// optimizer's renames, and order the If after their producers; mismatched branches are refused
// naming the node, a cond of two elements an input error; the profile names the branch that ran.
#include <doctest/doctest.h>

#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "onnx_light/runtime/error.h"
#include "onnx_light/runtime/session.h"
#include "tensor_values.h"
#include "test_models.h"

using namespace onnx_light;
using namespace onnx_light::runtime;
using namespace onnx_light::test;

namespace {

const std::string kModelHeader = "<ir_version: 8, opset_import: [\"\" : 17]>\n";

Tensor boolean(bool value) {
  Tensor t(ElementType::boolean, Shape{});
  t.data<bool>()[0] = value;
  return t;
}

std::vector<float> run_if(const std::string& graph, bool cond, const std::vector<float>& x,
                          OptimizationLevel level = OptimizationLevel::all, int threads = 1) {
  RuntimeSessionOptions options;
  options.parameters = RuntimeParameters(threads);
  options.optimization = level;
  RuntimeSession session(test::parse(kModelHeader + graph), options);
  RuntimeContext context;
  context.set("c", boolean(cond));
  context.set("x", floats({static_cast<int64_t>(x.size())}, x));
  session.run(context);
  return values<float>(context.get("y"));
}

}  // namespace

TEST_CASE("if_runs_the_branch_cond_selects_on_the_outer_values_it_reads") {
  const std::string g = R"(g (bool c, float[2] x) => (float[2] y) {
    two = Constant <value = float[1] {2.0}> ()
    a = Mul(x, two)
    y = If (c) <then_branch = t () => (float[2] r) { r = Add(a, x) }, else_branch = e () => (float[2] r) { r = Sub(two, a) }>
  })";
  CHECK(run_if(g, true, {1, 2}) == std::vector<float>{3, 6});
  CHECK(run_if(g, false, {1, 2}) == std::vector<float>{0, -2});
  CHECK(run_if(g, false, {1, 2}, OptimizationLevel::none, 2) == std::vector<float>{0, -2});
}

TEST_CASE("if_keeps_an_outer_value_alive_after_its_last_explicit_reader") {
  // `a`'s last ordinary reader is b; three same-sized values follow before the If reads `a`. A plan
  // that released `a` after b would hand its buffer to d or e and the branch would read their values.
  const std::string g = R"(g (bool c, float[4] x) => (float[4] y) {
    a = Neg(x)
    b = Abs(a)
    d = Sqrt(b)
    e = Exp(d)
    y = If (c) <then_branch = t () => (float[4] r) { r = Add(a, e) }, else_branch = f () => (float[4] r) { r = Identity(a) }>
  })";
  const std::vector<float> x{1, 4, 9, 16};
  const std::vector<float> taken = run_if(g, false, x, OptimizationLevel::none);
  CHECK(taken == std::vector<float>{-1, -4, -9, -16});
  const std::vector<float> added = run_if(g, true, x, OptimizationLevel::none);
  CHECK(added[1] == doctest::Approx(-4 + std::exp(2.0f)));
}

TEST_CASE("if_nested_reads_a_value_two_scopes_out") {
  const std::string g = R"(g (bool c, float[2] x) => (float[2] y) {
    k = Constant <value = float[1] {10.0}> ()
    y = If (c) <then_branch = t () => (float[2] r) {
          inner = Not(c)
          r = If (inner) <then_branch = tt () => (float[2] q) { q = Add(x, k) }, else_branch = te () => (float[2] q) { q = Mul(x, k) }>
        }, else_branch = e () => (float[2] r) { r = Neg(x) }>
  })";
  CHECK(run_if(g, true, {1, 2}) == std::vector<float>{10, 20});  // inner cond = !c = false: Mul
  CHECK(run_if(g, false, {1, 2}) == std::vector<float>{-1, -2});
}

TEST_CASE("if_branch_may_return_an_outer_value_as_it_is") {
  const std::string g = R"(g (bool c, float[2] x) => (float[2] y) {
    y = If (c) <then_branch = t () => (float[2] x) { }, else_branch = e () => (float[2] r) { r = Neg(x) }>
  })";
  CHECK(run_if(g, true, {5, 6}) == std::vector<float>{5, 6});
}

TEST_CASE("if_survives_the_optimizer_renaming_a_value_its_branches_read") {
  // Identity elimination would rewrite readers of `b` to read `a`; the branch's read is by name.
  const std::string g = R"(g (bool c, float[2] x) => (float[2] y) {
    a = Abs(x)
    b = Identity(a)
    unused = Identity(b)
    y = If (c) <then_branch = t () => (float[2] r) { r = Add(b, b) }, else_branch = e () => (float[2] r) { r = Identity(b) }>
  })";
  for (auto level : {OptimizationLevel::none, OptimizationLevel::basic, OptimizationLevel::all}) {
    CHECK(run_if(g, true, {-1, 2}, level) == std::vector<float>{2, 4});
    CHECK(run_if(g, false, {-1, 2}, level) == std::vector<float>{1, 2});
  }
}

TEST_CASE("if_with_a_constant_cond_is_not_folded_and_still_runs") {
  const std::string g = R"(g (bool c, float[2] x) => (float[2] y) {
    k = Constant <value = bool {1}> ()
    y = If (k) <then_branch = t () => (float[2] r) { r = Neg(x) }, else_branch = e () => (float[2] r) { r = Abs(x) }>
  })";
  CHECK(run_if(g, false, {1, -2}) == std::vector<float>{-1, 2});
}

TEST_CASE("if_branches_that_disagree_are_model_errors_naming_the_node") {
  const std::string types = R"(g (bool c, float[2] x) => (float[2] y) {
    y = If (c) <then_branch = t () => (float[2] r) { r = Neg(x) }, else_branch = e () => (int64[2] r) { r = Shape(x) }>
  })";
  CHECK_THROWS_WITH_AS(RuntimeSession(test::parse(kModelHeader + types)), doctest::Contains("If node (output 'y'): output 0 is float in then_branch and int64 in else_branch"),
                       UnsupportedError);  // listed with every other node that cannot run
  const std::string counts = R"(g (bool c, float[2] x) => (float[2] y) {
    y = If (c) <then_branch = t () => (float[2] r, float[2] s) { r = Neg(x) s = Abs(x) }, else_branch = e () => (float[2] r) { r = Neg(x) }>
  })";
  CHECK_THROWS_WITH_AS(RuntimeSession(test::parse(kModelHeader + counts)),
                       doctest::Contains("the node has 1 output(s), then_branch 2 and else_branch 1"), UnsupportedError);
}

TEST_CASE("if_a_node_error_inside_a_branch_names_the_branch") {
  const std::string g = R"(g (bool c, float[2] x) => (float[2] y) {
    y = If (c) <then_branch = t () => (float[2] r) { r = NoSuchOp(x) }, else_branch = e () => (float[2] r) { r = Neg(x) }>
  })";
  CHECK_THROWS_WITH_AS(RuntimeSession(test::parse(kModelHeader + g)), doctest::Contains("then_branch"), UnsupportedError);
}

TEST_CASE("if_cond_of_two_elements_is_an_input_error") {
  RuntimeSession session(test::parse(kModelHeader + R"(g (bool[2] c, float[2] x) => (float[2] y) {
    y = If (c) <then_branch = t () => (float[2] r) { r = Neg(x) }, else_branch = e () => (float[2] r) { r = Abs(x) }>
  })"));
  RuntimeContext context;
  Tensor c(ElementType::boolean, Shape{2});
  context.set("c", c);
  context.set("x", floats({2}, {1, 2}));
  CHECK_THROWS_WITH_AS(session.run(context), doctest::Contains("cond must hold one element"), InputError);
}

TEST_CASE("if_profile_names_the_branch_that_ran") {
  RuntimeSessionOptions options;
  options.parameters = RuntimeParameters(1);
  options.profile = true;
  RuntimeSession session(test::parse(kModelHeader + R"(g (bool c, float[2] x) => (float[2] y) {
    y = If (c) <then_branch = t () => (float[2] r) { r = Neg(x) }, else_branch = e () => (float[2] r) { r = Abs(x) }>
  })"), options);
  RuntimeContext context;
  context.set("c", boolean(false));
  context.set("x", floats({2}, {1, 2}));
  session.run(context);
  const SessionProfile profile = session.profile();
  REQUIRE(profile.nodes.size() == 3);  // the If, then its branches' nodes
  CHECK(profile.nodes[0].implementation == "else_branch");
  CHECK(profile.nodes[0].parent.empty());
  for (const auto& n : profile.nodes) {
    if (n.op_type == "Abs") {
      CHECK(n.parent == "If node (output 'y') else_branch");
      CHECK(n.node == "If node (output 'y') else_branch / #0");
      CHECK(n.calls == 1);
      CHECK(n.total_us <= profile.nodes[0].total_us);  // inside the If's time
    }
    if (n.op_type == "Neg") CHECK(n.calls == 0);  // then_branch did not run
  }
  REQUIRE(profile.op_types.size() == 1);  // nested nodes are not counted twice
  CHECK(profile.op_types[0].op_type == "If");
  session.reset_profile();
  for (const auto& n : session.profile().nodes) CHECK(n.calls == 0);
}

// ---- Loop ----------------------------------------------------------------------------------------

namespace {

struct LoopResult {
  std::vector<float> v;
  std::vector<float> scan;
  Shape scan_shape;
};

LoopResult run_loop(const std::string& graph, const std::vector<std::pair<std::string, Tensor>>& inputs,
                    int threads = 1) {
  RuntimeSessionOptions options;
  options.parameters = RuntimeParameters(threads);
  RuntimeSession session(test::parse(kModelHeader + graph), options);
  RuntimeContext context;
  for (const auto& [name, t] : inputs) context.set(name, t);
  session.run(context);
  LoopResult r;
  r.v = values<float>(context.get("v_final"));
  if (context.contains("scan")) {
    r.scan = values<float>(context.get("scan"));
    r.scan_shape = context.get("scan").shape();
  }
  return r;
}

// v <- v + x (x read from the outer scope), and each new v stacked.
const std::string kAccumulate = R"(g (int64 m, bool c, float[2] x) => (float[2] v_final, float[N, 2] scan) {
  v_final, scan = Loop (m, c, x) <body = b (int64 i, bool cin, float[2] v) => (bool cout, float[2] vout, float[2] s) {
    cout = Identity(cin)
    vout = Add(v, x)
    s = Identity(vout)
  }>
})";

Tensor scalar_i64(int64_t value) { return int64s({}, {value}); }

// The text syntax of ONNX 1.12 cannot leave an input out: the top graph's nodes read `omitted`
// where the input is meant to be absent.
Model with_omitted_inputs(const std::string& text) {
  onnx::ModelProto proto = test::parse(kModelHeader + text).proto();
  for (auto& node : *proto.mutable_graph()->mutable_node())
    for (auto& input : *node.mutable_input())
      if (input == "omitted") input.clear();
  return model_from_proto(std::move(proto), "<test model>");
}

}  // namespace

TEST_CASE("loop_with_a_trip_count_carries_values_and_stacks_scan_outputs") {
  for (int threads : {1, 2}) {
    const LoopResult r = run_loop(kAccumulate, {{"m", scalar_i64(3)}, {"c", boolean(true)}, {"x", floats({2}, {1, 2})}}, threads);
    CHECK(r.v == std::vector<float>{4, 8});
    CHECK(r.scan_shape == Shape{3, 2});
    CHECK(r.scan == std::vector<float>{2, 4, 3, 6, 4, 8});
  }
}

TEST_CASE("loop_with_zero_trips_or_a_false_cond_returns_the_initial_values_and_empty_scans") {
  LoopResult r = run_loop(kAccumulate, {{"m", scalar_i64(0)}, {"c", boolean(true)}, {"x", floats({2}, {1, 2})}});
  CHECK(r.v == std::vector<float>{1, 2});
  CHECK(r.scan_shape == Shape{0});
  r = run_loop(kAccumulate, {{"m", scalar_i64(5)}, {"c", boolean(false)}, {"x", floats({2}, {1, 2})}});
  CHECK(r.v == std::vector<float>{1, 2});
}

TEST_CASE("loop_without_a_trip_count_stops_when_the_body_cond_turns_false") {
  // cout = i < 2: iterations 0, 1 and 2 run, the third says stop.
  const std::string g = R"(g (bool c, float[1] x) => (float[1] v_final) {
    v_final = Loop (omitted, c, x) <body = b (int64 i, bool cin, float[1] v) => (bool cout, float[1] vout) {
      two = Constant <value = int64 {2}> ()
      cout = Less(i, two)
      one = Constant <value = float[1] {1.0}> ()
      vout = Add(v, one)
    }>
  })";
  RuntimeSession session(with_omitted_inputs(g));
  RuntimeContext context;
  context.set("c", boolean(true));
  context.set("x", floats({1}, {10}));
  session.run(context);
  CHECK(values<float>(context.get("v_final")) == std::vector<float>{13});
}

TEST_CASE("loop_body_passing_iteration_num_straight_out_keeps_each_value") {
  // Loop-carried `a` is the body's iteration_num input itself, so the next iteration reads the
  // previous iteration's number through it: b sums 0 (initial a), 0, 1, 2 = 3. A kernel that wrote
  // the next number into the tensor it handed out would sum 0, 1, 2, 3 = 6.
  const std::string g = R"(g (int64 m, bool c, int64 a0, int64 b0) => (int64 a_final, int64 b_final) {
    a_final, b_final = Loop (m, c, a0, b0) <body = body (int64 i, bool cin, int64 a, int64 b) => (bool cout, int64 i, int64 bout) {
      cout = Identity(cin)
      bout = Add(b, a)
    }>
  })";
  RuntimeSession session(test::parse(kModelHeader + g));
  RuntimeContext context;
  context.set("m", scalar_i64(4));
  context.set("c", boolean(true));
  context.set("a0", scalar_i64(0));
  context.set("b0", scalar_i64(0));
  session.run(context);
  CHECK(values<int64_t>(context.get("b_final")) == std::vector<int64_t>{3});
  CHECK(values<int64_t>(context.get("a_final")) == std::vector<int64_t>{3});
}

TEST_CASE("loop_scan_output_changing_shape_is_an_input_error") {
  const std::string g = R"(g (int64 m, bool c, float[1] x) => (float[1] v_final, float[N, M] scan) {
    v_final, scan = Loop (m, c, x) <body = b (int64 i, bool cin, float[K] v) => (bool cout, float[K2] vout, float[K2] s) {
      cout = Identity(cin)
      vout = Concat <axis = 0> (v, v)
      s = Identity(vout)
    }>
  })";
  RuntimeSession session(test::parse(kModelHeader + g));
  RuntimeContext context;
  context.set("m", scalar_i64(3));
  context.set("c", boolean(true));
  context.set("x", floats({1}, {1}));
  CHECK_THROWS_WITH_AS(session.run(context), doctest::Contains("scan output 0 is float[4] in iteration 1 but had shape [2] before"),
                       InputError);
}

TEST_CASE("loop_without_trip_count_or_cond_is_refused_when_the_session_is_made") {
  const std::string g = R"(g (float[1] x) => (float[1] v_final) {
    v_final = Loop (omitted, omitted, x) <body = b (int64 i, bool cin, float[1] v) => (bool cout, float[1] vout) {
      cout = Identity(cin)
      vout = Identity(v)
    }>
  })";
  CHECK_THROWS_WITH_AS(RuntimeSession(with_omitted_inputs(g)), doctest::Contains("element type float is not supported by Loop"),
                       UnsupportedError);
}

TEST_CASE("loop_profile_counts_each_body_node_once_per_iteration") {
  RuntimeSessionOptions options;
  options.parameters = RuntimeParameters(1);
  options.profile = true;
  RuntimeSession session(test::parse(kModelHeader + kAccumulate), options);
  RuntimeContext context;
  context.set("m", int64s({}, {5}));
  context.set("c", boolean(true));
  context.set("x", floats({2}, {1, 2}));
  session.run(context);
  bool found = false;
  for (const auto& n : session.profile().nodes)
    if (n.op_type == "Add") {
      found = true;
      CHECK(n.calls == 5);
      CHECK(n.parent.find("Loop node") == 0);
    }
  CHECK(found);
}


TEST_CASE("scan_runs_along_any_axis_and_direction_and_stacks_outputs_on_theirs") {
  // x [2, 3]: scanned along axis 1 (3 steps of 2 values) in reverse; the running sum is the state;
  // scan output 0 (each step's sum) stacked along axis 1, scan output 1 (each slice doubled) on
  // axis 0 in reverse. An outer value `w` is read by the body.
  const std::string g = R"(g (float[2] s0, float[2,3] x, float[1] w) => (float[2] s, float[2,3] sums, float[3,2] twice) {
    s, sums, twice = Scan (s0, x) <num_scan_inputs = 1, scan_input_axes = [1], scan_input_directions = [1],
                                   scan_output_axes = [1, 0], scan_output_directions = [0, 1],
        body = b (float[2] acc, float[2] v) => (float[2] next, float[2] out, float[2] dbl) {
          next = Add(acc, v)
          out = Identity(next)
          dbl = Mul(v, w)
        }>
  })";
  auto r = run_graph(g, {{"s0", floats({2}, {0, 100})}, {"x", floats({2, 3}, {1, 2, 3, 4, 5, 6})}, {"w", floats({1}, {2})}});
  CHECK(values<float>(r["s"]) == std::vector<float>{6, 115});
  // Steps visit columns 2, 1, 0: sums after each step are (3, 106), (5, 111), (6, 115), stacked on axis 1.
  REQUIRE(r["sums"].shape() == Shape{2, 3});
  CHECK(values<float>(r["sums"]) == std::vector<float>{3, 5, 6, 106, 111, 115});
  // Doubled slices of steps 0, 1, 2 are columns 2, 1, 0; stored in reverse along axis 0.
  REQUIRE(r["twice"].shape() == Shape{3, 2});
  CHECK(values<float>(r["twice"]) == std::vector<float>{2, 8, 4, 10, 6, 12});
}

TEST_CASE("scan_opset_8_scans_each_batch_entry_up_to_its_length_and_pads_with_zeros") {
  const std::string g = R"(g (int64[2] lens, float[2,1] s0, float[2,3,1] x) => (float[2,1] s, float[2,3,1] ys) {
    s, ys = Scan (lens, s0, x) <num_scan_inputs = 1,
        body = b (float[1] acc, float[1] v) => (float[1] next, float[1] out) { next = Add(acc, v)
          out = Identity(next) }>
  })";
  auto r = run_graph(g, {{"lens", int64s({2}, {3, 1})}, {"s0", floats({2, 1}, {0, 10})}, {"x", floats({2, 3, 1}, {1, 2, 3, 4, 5, 6})}},
                     8);
  CHECK(values<float>(r["s"]) == std::vector<float>{6, 14});
  CHECK(values<float>(r["ys"]) == std::vector<float>{1, 3, 6, 14, 0, 0});
  CHECK_THROWS_WITH_AS(run_graph(g, {{"lens", int64s({2}, {4, 1})}, {"s0", floats({2, 1}, {0, 10})},
                                     {"x", floats({2, 3, 1}, {1, 2, 3, 4, 5, 6})}},
                                 8),
                       doctest::Contains("sequence_lens[0] = 4 is outside [0, 3]"), InputError);
}

TEST_CASE("scan_of_zero_steps_keeps_the_states_and_gives_empty_outputs") {
  const std::string g = R"(g (float[2] s0, float[0,2] x) => (float[2] s, float[0] ys) {
    s, ys = Scan (s0, x) <num_scan_inputs = 1,
        body = b (float[2] acc, float[2] v) => (float[2] next, float[2] out) { next = Add(acc, v)
          out = Identity(v) }>
  })";
  auto r = run_graph(g, {{"s0", floats({2}, {7, 8})}, {"x", floats({0, 2}, {})}});
  CHECK(values<float>(r["s"]) == std::vector<float>{7, 8});
  CHECK(r["ys"].element_count() == 0);
}

TEST_CASE("scan_refuses_mismatched_lengths_arities_and_directions_naming_the_node") {
  const std::string body = "body = b (float[2] acc, float[2] v, float[2] u) => (float[2] next) { next = Add(acc, v) }";
  const std::string two = "g (float[2] s0, float[3,2] x, float[4,2] z) => (float[2] s) { s = Scan (s0, x, z) <num_scan_inputs = 2, " + body + "> }";
  CHECK_THROWS_WITH_AS(run_graph(two, {{"s0", floats({2}, {0, 0})}, {"x", floats({3, 2}, std::vector<float>(6))},
                                       {"z", floats({4, 2}, std::vector<float>(8))}}),
                       doctest::Contains("scan input 1 has 4 steps along axis 0 but scan input 0 has 3"), InputError);
  const std::string arity = "g (float[2] s0, float[3,2] x) => (float[2] s) { s = Scan (s0, x) <num_scan_inputs = 1, " + body + "> }";
  CHECK_THROWS_WITH_AS(run_graph(arity, {{"s0", floats({2}, {0, 0})}, {"x", floats({3, 2}, std::vector<float>(6))}}),
                       doctest::Contains("the body has 3 input(s); Scan gives it 1 state(s) and 1 scan slice(s)"), Error);
  const std::string direction =
      "g (float[2] s0, float[3,2] x) => (float[2] s) { s = Scan (s0, x) <num_scan_inputs = 1, scan_input_directions = [2], "
      "body = b (float[2] acc, float[2] v) => (float[2] next) { next = Add(acc, v) }> }";
  CHECK_THROWS_WITH_AS(run_graph(direction, {{"s0", floats({2}, {0, 0})}, {"x", floats({3, 2}, std::vector<float>(6))}}),
                       doctest::Contains("a scan direction must be 0 or 1, not 2"), Error);
}
