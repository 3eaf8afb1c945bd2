#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "onnx_light/runtime/error.h"
#include "onnx_light/runtime/kernel_table.h"
#include "onnx_light/runtime/session.h"
#include "onnx_light/runtime/session_profile.h"
#include "onnx_light/runtime/tuning_registry.h"
#include "test_models.h"

using namespace onnx_light;
using namespace onnx_light::runtime;

namespace {

Tensor filled(const Shape& shape, float start, float step) {
  Tensor t(ElementType::float32, shape);
  for (int64_t i = 0; i < t.element_count(); ++i) t.data<float>()[i] = start + step * static_cast<float>(i);
  return t;
}

// `text` with its nodes named: an empty name leaves that node unnamed (reported as "#index").
Model named(const std::string& text, const std::vector<std::string>& names) {
  onnx::ModelProto proto = test::parse(text).proto();
  REQUIRE(proto.graph().node_size() == static_cast<int>(names.size()));
  for (std::size_t i = 0; i < names.size(); ++i) proto.mutable_graph()->mutable_node(static_cast<int>(i))->set_name(names[i]);
  return model_from_proto(proto, "<profile test>");
}

// Abs (x) -> a, Neg (a) -> b, Abs (b) -> c, Add (c, x) -> y: three op types, two Abs nodes.
const char* kChain =
    "<ir_version: 8, opset_import: [\"\" : 18]>\n"
    "g (float[N] x) => (float[N] y) { a = Abs(x)\n b = Neg(a)\n c = Abs(b)\n y = Add(c, x) }";

RuntimeSessionOptions options(int threads, bool profile) {
  // A private registry: what other tests publish in this process must not move thresholds here.
  static TuningRegistry registry;
  RuntimeSessionOptions o;
  o.parameters = RuntimeParameters(threads);
  o.registry = &registry;
  o.profile = profile;
  // The graphs as written: under `all` these elementwise chains would be one ElementwiseChain node.
  o.optimization = OptimizationLevel::none;
  return o;
}

const NodeProfile& node_named(const SessionProfile& p, const std::string& name) {
  auto it = std::find_if(p.nodes.begin(), p.nodes.end(), [&](const NodeProfile& n) { return n.node == name; });
  REQUIRE_MESSAGE(it != p.nodes.end(), "no profile entry for node " << name);
  return *it;
}

// A test Abs (float) that reports which path ran, as a real kernel's variant() would, and can take
// a following Relu into its store.
class PathAbs final : public Kernel {
 public:
  void run(KernelExecution& e) override {
    const Tensor& x = e.required_input(0);
    Tensor& y = e.output(0, ElementType::float32, x.shape());
    for (int64_t i = 0; i < x.element_count(); ++i) {
      const float v = std::fabs(x.data<float>()[i]);
      y.data<float>()[i] = relu_ ? std::max(v, 0.0f) : v;
    }
    wide_ = x.element_count() >= 8;
  }
  bool fuse_relu() override {
    relu_ = true;
    return true;
  }
  std::string_view variant() const override { return wide_ ? "abs_wide_test" : std::string_view(); }

 private:
  bool relu_ = false;
  bool wide_ = false;
};

// The CPU table with Abs float replaced by PathAbs ("test_path" implementation).
const KernelTable& path_table() {
  static const KernelTable table = [] {
    KernelTable t;
    for (const KernelDef& d : cpu_kernel_table().definitions())
      if (!(d.op_type == "Abs" && d.element_type == ElementType::float32)) t.add(d);
    KernelDef d;
    d.op_type = "Abs";
    d.since_version = 1;
    d.element_type = ElementType::float32;
    d.implementation = "test_path";
    TuningKey key;
    key.kernel = "Abs";
    key.implementation = "test_path";
    key.element_type = static_cast<int32_t>(ElementType::float32);
    d.schema = parallel_threshold_schema(key, 1024);
    d.create = [](const KernelCreateInfo&) { return std::make_unique<PathAbs>(); };
    t.add(std::move(d));
    return t;
  }();
  return table;
}

}  // namespace

TEST_CASE("profile_off_records_nothing") {
  // Off, the session owns no recorder at all: the run loop has nothing to read the clock for.
  RuntimeSession session(test::parse(kChain), options(1, false));
  RuntimeContext context;
  context.set("x", filled({16}, -8.0f, 1.0f));
  for (int i = 0; i < 3; ++i) session.run(context);
  const SessionProfile p = session.profile();
  CHECK(p.nodes.empty());
  CHECK(p.op_types.empty());
  CHECK(p.events.empty());
  CHECK(p.runs == 0);
  CHECK(p.total_us == 0.0);
  session.reset_profile();  // harmless when off
  CHECK(session.profile().nodes.empty());
}

TEST_CASE("profile_one_entry_per_node_with_calls_shares_and_shapes") {
  RuntimeSession session(named(kChain, {"abs1", "neg", "", "sum"}), options(1, true));
  RuntimeContext context;
  context.set("x", filled({1000}, -500.0f, 1.0f));
  const int runs = 5;
  for (int i = 0; i < runs; ++i) session.run(context);
  const SessionProfile p = session.profile();

  REQUIRE(p.nodes.size() == 4);
  CHECK(p.runs == runs);
  CHECK(node_named(p, "abs1").op_type == "Abs");
  CHECK(node_named(p, "neg").op_type == "Neg");
  CHECK(node_named(p, "#2").op_type == "Abs");  // unnamed: its graph index
  CHECK(node_named(p, "#2").label == "Abs node #2");
  CHECK(node_named(p, "sum").op_type == "Add");
  CHECK(node_named(p, "sum").label == "Add node 'sum'");
  double shares = 0;
  for (const auto& n : p.nodes) {
    CHECK(n.calls == static_cast<uint64_t>(runs));
    CHECK(n.total_us > 0.0);
    CHECK(n.mean_us == doctest::Approx(n.total_us / runs));
    CHECK(n.domain.empty());
    // The dispatched definition's implementation: nothing here reports a variant.
    const KernelDef* def = cpu_kernel_table().choose("", n.op_type, 18, ElementType::float32, host_cpu_features()).def;
    REQUIRE(def != nullptr);
    CHECK(n.implementation == def->implementation);
    shares += n.share;
  }
  CHECK(shares == doctest::Approx(1.0));
  for (std::size_t i = 1; i < p.nodes.size(); ++i) CHECK(p.nodes[i - 1].total_us >= p.nodes[i].total_us);
  REQUIRE(node_named(p, "sum").input_shapes.size() == 2);
  CHECK(*node_named(p, "sum").input_shapes[0] == Shape{1000});
  CHECK(*node_named(p, "sum").input_shapes[1] == Shape{1000});
  CHECK(p.nodes_us <= p.total_us);
  CHECK(p.nodes_us == doctest::Approx(std::accumulate(p.nodes.begin(), p.nodes.end(), 0.0,
                                                      [](double s, const NodeProfile& n) { return s + n.total_us; })));

  // Aggregated by op type: Abs has two nodes.
  REQUIRE(p.op_types.size() == 3);
  auto abs = std::find_if(p.op_types.begin(), p.op_types.end(), [](const OpTypeProfile& t) { return t.op_type == "Abs"; });
  REQUIRE(abs != p.op_types.end());
  CHECK(abs->nodes == 2);
  CHECK(abs->calls == 2u * runs);
  CHECK(abs->total_us == doctest::Approx(node_named(p, "abs1").total_us + node_named(p, "#2").total_us));
  for (std::size_t i = 1; i < p.op_types.size(); ++i) CHECK(p.op_types[i - 1].total_us >= p.op_types[i].total_us);

  // One node event per node per run, in run order, none overlapping the next.
  std::vector<TraceEvent> node_events;
  for (const auto& e : p.events)
    if (e.kind == TraceEvent::Kind::node) node_events.push_back(e);
  REQUIRE(node_events.size() == 4u * runs);
  for (std::size_t i = 0; i < node_events.size(); ++i) {
    CHECK(node_events[i].run == i / 4);
    CHECK(node_events[i].dur_us >= 0.0);
    // Microseconds from whole nanoseconds: allow the rounding of one addition.
    if (i > 0) CHECK(node_events[i].ts_us >= node_events[i - 1].ts_us + node_events[i - 1].dur_us - 1e-6);
  }
  // Run order within each run: abs1, neg, #2, sum.
  const std::vector<std::string> order{"abs1", "neg", "#2", "sum"};
  for (std::size_t i = 0; i < node_events.size(); ++i) CHECK(p.nodes[node_events[i].node].node == order[i % 4]);
  CHECK(p.dropped_events == 0);

  // The positional form is profiled the same way; reset forgets everything.
  session.reset_profile();
  CHECK(session.profile().runs == 0);
  CHECK(session.profile().events.empty());
  CHECK(session.profile().nodes.size() == 4);  // the nodes stay listed, with nothing recorded
  CHECK(session.profile().nodes[0].calls == 0);
  std::vector<Tensor> in{filled({7}, -3.0f, 1.0f)};
  std::vector<Tensor> out(1);
  session.run(in, out);
  const SessionProfile again = session.profile();
  CHECK(again.runs == 1);
  CHECK(*node_named(again, "abs1").input_shapes[0] == Shape{7});
  for (const auto& n : again.nodes) CHECK(n.calls == 1);
}

TEST_CASE("profile_names_the_variant_that_ran") {
  RuntimeSessionOptions o = options(1, true);
  o.kernels = &path_table();
  RuntimeSession session(named("<ir_version: 8, opset_import: [\"\" : 18]>\n"
                               "g (float[N] x) => (float[N] y) { y = Abs(x) }",
                               {"abs"}),
                         o);
  RuntimeContext context;
  context.set("x", filled({4}, -2.0f, 1.0f));  // below 8: the definition's own path
  session.run(context);
  CHECK(session.profile().nodes.at(0).implementation == "test_path");
  context.set("x", filled({64}, -2.0f, 1.0f));  // the wide path: the variant names it
  session.run(context);
  CHECK(session.profile().nodes.at(0).implementation == "abs_wide_test");
  std::ostringstream trace;
  write_chrome_trace(session.profile(), trace);
  CHECK(trace.str().find("\"implementation\": \"abs_wide_test\"") != std::string::npos);
}

TEST_CASE("profile_shows_a_fused_relu_as_one_entry_naming_both") {
  RuntimeSessionOptions o = options(1, true);
  o.kernels = &path_table();
  RuntimeSession session(named("<ir_version: 8, opset_import: [\"\" : 18]>\n"
                               "g (float[N] x) => (float[N] y) { a = Abs(x)\n y = Relu(a) }",
                               {"abs", "relu"}),
                         o);
  RuntimeContext context;
  context.set("x", filled({16}, -8.0f, 1.0f));
  session.run(context);
  session.run(context);
  const SessionProfile p = session.profile();
  REQUIRE(p.nodes.size() == 1);
  CHECK(p.nodes[0].node == "abs + relu");
  CHECK(p.nodes[0].op_type == "Abs + Relu");
  CHECK(p.nodes[0].label == "Abs node 'abs' + Relu node 'relu'");
  CHECK(p.nodes[0].calls == 2);
  REQUIRE(p.op_types.size() == 1);
  CHECK(p.op_types[0].op_type == "Abs + Relu");
}

TEST_CASE("profile_counts_parallel_regions_and_their_blocks_per_thread") {
  // Abs over 100000 floats with the default threshold (32768) opens one two-thread region per run.
  RuntimeSession session(named("<ir_version: 8, opset_import: [\"\" : 18]>\n"
                               "g (float[N] x) => (float[N] y) { y = Abs(x) }",
                               {"abs"}),
                         options(2, true));
  RuntimeContext context;
  context.set("x", filled({100000}, -1.0f, 1e-5f));
  const int runs = 20;
  for (int i = 0; i < runs; ++i) session.run(context);
  const SessionProfile p = session.profile();
  REQUIRE(p.nodes.size() == 1);
  CHECK(p.nodes[0].parallel_regions == runs);
  CHECK(p.nodes[0].parallel_threads == 2u * runs);
  std::size_t regions = 0, blocks = 0;
  std::set<int> tids;
  for (const auto& e : p.events) {
    if (e.kind == TraceEvent::Kind::region) {
      ++regions;
      CHECK(e.threads == 2);
      CHECK(e.tid == 0);
    }
    if (e.kind == TraceEvent::Kind::block) {
      ++blocks;
      tids.insert(e.tid);
    }
  }
  CHECK(regions == runs);
  CHECK(blocks == 2u * runs);  // every block of every region, whichever thread ran it
  CHECK(*tids.rbegin() <= 1);  // the caller (0) and the pool's one worker (1)
}

TEST_CASE("profile_event_capacity_bounds_memory_and_counts_the_rest") {
  RuntimeSessionOptions o = options(1, true);
  o.profile_event_capacity = 5;
  RuntimeSession session(test::parse(kChain), o);
  RuntimeContext context;
  context.set("x", filled({8}, -4.0f, 1.0f));
  for (int i = 0; i < 3; ++i) session.run(context);
  const SessionProfile p = session.profile();
  CHECK(p.events.size() == 5);
  CHECK(p.dropped_events == 3 * 4 - 5);
  for (const auto& n : p.nodes) CHECK(n.calls == 3);  // the tables do not depend on the capacity
}

TEST_CASE("chrome_trace_is_valid_json_with_one_event_per_node_per_run") {
  // A node name that needs escaping, and an omitted optional input (Clip's min).
  onnx::ModelProto proto = named("<ir_version: 8, opset_import: [\"\" : 18]>\n"
                                 "g (float[N] x, float hi) => (float[N] y) { a = Abs(x)\n y = Clip(a, hi, hi) }",
                                 {"quote\"back\\slash\ttab", "clip"})
                               .proto();
  proto.mutable_graph()->mutable_node(1)->set_input(1, "");  // Clip(a, <no min>, hi)
  RuntimeSession session(model_from_proto(proto), options(1, true));
  RuntimeContext context;
  context.set("x", filled({10}, -5.0f, 1.0f));
  Tensor hi(ElementType::float32, {});
  *hi.data<float>() = 2.0f;
  context.set("hi", hi);
  for (int i = 0; i < 3; ++i) session.run(context);
  const SessionProfile p = session.profile();
  CHECK(format_input_shapes(node_named(p, "clip").input_shapes) == "10, -, scalar");

  std::ostringstream out;
  write_chrome_trace(p, out);
  const nlohmann::json trace = nlohmann::json::parse(out.str());
  std::vector<nlohmann::json> nodes;
  for (const auto& e : trace.at("traceEvents")) {
    if (e.at("ph") == "X" && e.at("cat") != "parallel_region" && e.at("cat") != "parallel_block") nodes.push_back(e);
  }
  REQUIRE(nodes.size() == 2 * 3);
  double last = -1;
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    const auto& e = nodes[i];
    CHECK(e.at("name") == (i % 2 == 0 ? "quote\"back\\slash\ttab" : "clip"));
    CHECK(e.at("cat") == (i % 2 == 0 ? "Abs" : "Clip"));
    CHECK(e.at("ts").get<double>() >= last);
    CHECK(e.at("dur").get<double>() >= 0.0);
    CHECK(e.at("tid") == 0);
    CHECK(e.at("pid").is_number_integer());
    CHECK(e.at("args").at("run") == i / 2);
    last = e.at("ts").get<double>();
  }
  CHECK(nodes[1].at("args").at("input_shapes") == "10, -, scalar");
}

TEST_CASE("chrome_trace_file_that_cannot_be_written_is_an_io_error") {
  CHECK_THROWS_AS(write_chrome_trace(SessionProfile{}, std::filesystem::path("/nonexistent-dir/trace.json")), IoError);
}

TEST_CASE("profile_reports_each_nodes_work_in_its_thresholds_unit") {
  // Elementwise nodes compare their element count with parallel.minimum_elements, Softmax its row
  // count with parallel.minimum_rows, MatMul its multiply-accumulates with parallel.minimum_macs;
  // Shape compares nothing. The work is reported whether or not the node went parallel.
  RuntimeSession session(named("<ir_version: 8, opset_import: [\"\" : 18]>\n"
                               "g (float[6,40] x, float[40,5] w) => (float[6,5] y, float[6,40] s, int64[2] n) {"
                               " a = Abs(x)\n s = Softmax(a)\n y = MatMul(a, w)\n n = Shape(x) }",
                               {"abs", "softmax", "mm", "shape"}),
                         options(2, true));
  RuntimeContext context;
  context.set("x", filled({6, 40}, -1.0f, 0.01f));
  context.set("w", filled({40, 5}, -0.5f, 0.005f));
  session.run(context);
  const SessionProfile p = session.profile();
  CHECK(node_named(p, "abs").threshold_work == 240);
  CHECK(node_named(p, "softmax").threshold_work == 6);
  CHECK(node_named(p, "mm").threshold_work == 6 * 40 * 5);
  CHECK(node_named(p, "shape").threshold_work == -1);
  session.reset_profile();
  CHECK(session.profile().nodes.front().threshold_work == -1);
  const auto json = nlohmann::json::parse(profile_json(p));
  CHECK(json["nodes"][0].contains("threshold_work"));
}
