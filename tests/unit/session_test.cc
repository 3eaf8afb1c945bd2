#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "onnx_light/runtime/error.h"
#include "onnx_light/runtime/kernel_table.h"
#include "onnx_light/runtime/session.h"
#include "onnx_light/runtime/tuning_registry.h"
#include "test_models.h"

using namespace onnx_light;
using namespace onnx_light::runtime;

namespace {

Tensor ramp(const Shape& shape, float start, float step) {
  Tensor t(ElementType::float32, shape);
  for (int64_t i = 0; i < t.element_count(); ++i) t.data<float>()[i] = start + step * static_cast<float>(i);
  return t;
}

std::string session_error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "<no error>";
}

TuningKey abs_float_key() {
  const KernelDef* def = cpu_kernel_table().choose("", "Abs", 18, ElementType::float32, host_cpu_features()).def;
  REQUIRE(def != nullptr);
  return def->schema.key;
}

// A complete profile for the dispatched Abs kernel: its defaults with the threshold replaced.
TuningValues abs_values(int64_t minimum_elements) {
  const KernelDef* def = cpu_kernel_table().choose("", "Abs", 18, ElementType::float32, host_cpu_features()).def;
  REQUIRE(def != nullptr);
  TuningValues values = def->schema.defaults();
  values["parallel.minimum_elements"] = minimum_elements;
  return values;
}

RuntimeSessionOptions options_with(int threads, TuningRegistry* registry,
                                   std::shared_ptr<ParallelRegionCollector> collector = nullptr) {
  RuntimeSessionOptions o;
  o.parameters = RuntimeParameters(threads);
  o.registry = registry;
  o.parallel_region_collector = std::move(collector);
  return o;
}

}  // namespace

TEST_CASE("seed_scenario_session_copies_threshold_once") {
  // The user's gallery in C++: a profile above N keeps an N-element Abs serial; publishing the
  // lower value changes only sessions created afterwards.
  TuningRegistry registry;
  const int64_t n = 32768;
  registry.publish({{abs_float_key(), 2, abs_values(n + 1)}});
  Model model = test::parse(test::kSeedAbsModel);
  RuntimeContext context(KernelContext(default_opset(18)));
  Tensor x(ElementType::float32, {n});
  for (int64_t i = 0; i < n; ++i) x.data<float>()[i] = -1.0f;

  auto serial_collector = std::make_shared<ParallelRegionCollector>(4);
  RuntimeSession serial(model, options_with(2, &registry, serial_collector));
  context.set("x", x);
  serial.run(context);
  auto events = serial.parallel_region_report().events;
  REQUIRE(events.size() == 1);
  CHECK(events[0].admitted_threads == 1);
  CHECK(events[0].requested_threads == 2);

  registry.publish({{abs_float_key(), 2, abs_values(n / 2)}});
  serial.run(context);
  events = serial.parallel_region_report().events;
  REQUIRE(events.size() == 2);
  CHECK(events[1].admitted_threads == 1);

  auto tuned_collector = std::make_shared<ParallelRegionCollector>(4);
  RuntimeSession tuned(model, options_with(2, &registry, tuned_collector));
  RuntimeContext tuned_context;
  tuned_context.set("x", x);
  tuned.run(tuned_context);
  events = tuned.parallel_region_report().events;
  REQUIRE(events.size() == 1);
  CHECK(events[0].requested_threads == 2);
  CHECK(events[0].admitted_threads == 2);
  const Tensor& y = tuned_context.get("y");
  for (int64_t i = 0; i < n; ++i) REQUIRE(y.data<float>()[i] == 1.0f);

  auto resolved = tuned.resolved_tuning();
  REQUIRE(resolved.size() == 1);
  CHECK(resolved[0].source == TuningSource::published_profile);
  CHECK(std::get<int64_t>(resolved[0].values.at("parallel.minimum_elements")) == n / 2);
}

TEST_CASE("transpose_default_threshold_keeps_a_32k_element_copy_serial_and_splits_2_pow_17") {
  // Transpose's default parallel.minimum_elements is 2^17 (data_movement.cc): attention's
  // [1,128,4,64] -> [1,4,128,64] ran 2.5-3 us on one thread and 6 on two.
  const KernelDef* def = cpu_kernel_table().choose("", "Transpose", 13, ElementType::float32, host_cpu_features()).def;
  REQUIRE(def != nullptr);
  CHECK(std::get<int64_t>(def->schema.defaults().at("parallel.minimum_elements")) == int64_t{1} << 17);
  for (const int64_t heads : {4, 15, 16}) {  // 32768, 122880 and 131072 elements
    CAPTURE(heads);
    Model model = test::parse(
        "<ir_version: 8, opset_import: [\"\" : 13]>\n"
        "t (float[1,128," + std::to_string(heads) + ",64] x) => (float[1," + std::to_string(heads) +
        ",128,64] y) { y = Transpose<perm = [0, 2, 1, 3]>(x) }");
    auto collector = std::make_shared<ParallelRegionCollector>(4);
    TuningRegistry registry;
    RuntimeSession session(model, options_with(2, &registry, collector));
    RuntimeContext context;
    const Tensor x = ramp({1, 128, heads, 64}, 0.0f, 1.0f);
    context.set("x", x);
    session.run(context);
    const auto events = session.parallel_region_report().events;
    REQUIRE(events.size() == 1);
    CHECK(events[0].requested_threads == 2);
    CHECK(events[0].admitted_threads == (heads == 16 ? 2 : 1));
    const Tensor& y = context.get("y");
    for (int64_t h = 0; h < heads; ++h)
      for (int64_t s = 0; s < 128; s += 37)
        for (int64_t d = 0; d < 64; d += 9)
          REQUIRE(y.data<float>()[(h * 128 + s) * 64 + d] == x.data<float>()[(s * heads + h) * 64 + d]);
  }
}

TEST_CASE("profile_for_other_thread_count_is_not_used") {
  TuningRegistry registry;
  registry.publish({{abs_float_key(), 4, abs_values(1)}});
  RuntimeSession session(test::parse(test::kSeedAbsModel), options_with(2, &registry));
  session.initialize();
  CHECK(session.resolved_tuning()[0].source == TuningSource::portable_default);
  CHECK(std::get<int64_t>(session.resolved_tuning()[0].values.at("parallel.minimum_elements")) == 32768);
}

TEST_CASE("profile_for_other_spin_class_is_not_used") {
  // Sessions whose workers park at once (spin none) and those whose workers spin find their own
  // profiles: parking moves the crossover (bench/RESULTS.md).
  TuningRegistry registry;
  registry.publish({{abs_float_key(), 2, abs_values(1000), /*idle_spin=*/true},
                    {abs_float_key(), 2, abs_values(500000), /*idle_spin=*/false}});
  const auto threshold_of = [&](int64_t spin_us) {
    RuntimeSessionOptions o = options_with(2, &registry);
    o.parameters.spin_microseconds = spin_us;
    RuntimeSession session(test::parse(test::kSeedAbsModel), o);
    session.initialize();
    REQUIRE(session.resolved_tuning()[0].source == TuningSource::published_profile);
    return std::get<int64_t>(session.resolved_tuning()[0].values.at("parallel.minimum_elements"));
  };
  CHECK(threshold_of(kSpinShortMicroseconds) == 1000);
  CHECK(threshold_of(kSpinLongMicroseconds) == 1000);
  CHECK(threshold_of(kSpinNoneMicroseconds) == 500000);

  TuningRegistry spinning_only;
  spinning_only.publish({{abs_float_key(), 2, abs_values(1000)}});
  RuntimeSessionOptions parks = options_with(2, &spinning_only);
  parks.parameters.spin_microseconds = kSpinNoneMicroseconds;
  RuntimeSession session(test::parse(test::kSeedAbsModel), parks);
  session.initialize();
  CHECK(session.resolved_tuning()[0].source == TuningSource::portable_default);
}

TEST_CASE("invalid_published_values_fall_back_to_defaults") {
  TuningRegistry registry;
  registry.publish({{abs_float_key(), 2, abs_values(-5)}});
  RuntimeSession session(test::parse(test::kSeedAbsModel), options_with(2, &registry));
  session.initialize();
  CHECK(session.resolved_tuning()[0].source == TuningSource::portable_default);
}

TEST_CASE("unsupported_nodes_are_all_listed_at_creation") {
  const char* text =
      "<ir_version: 8, opset_import: [\"\" : 17]>\n"
      "g (float[4] x, string[4] s) => (float[4] y, float[4] z, string[4] t) {\n"
      "  a = FancyOp(x)\n  y = Abs(a)\n  z = OtherOp(x)\n  t = Identity(s)\n}";
  std::string message;
  try {
    RuntimeSession session(test::parse(text));
    FAIL("created");
  } catch (const UnsupportedError& e) {
    message = e.what();
  }
  CHECK(message.find("FancyOp") != std::string::npos);
  CHECK(message.find("OtherOp") != std::string::npos);
}

TEST_CASE("unsupported_element_type_names_node_and_type") {
  const char* text =
      "<ir_version: 8, opset_import: [\"\" : 17]>\n"
      "g (bool[4] x) => (bool[4] y) { y = Abs(x) }";
  auto message = session_error_of([&] { RuntimeSession session(test::parse(text)); });
  CHECK(message.find("Abs node") != std::string::npos);
  CHECK(message.find("bool") != std::string::npos);
}

TEST_CASE("missing_input_names_input_and_type") {
  RuntimeSession session(test::parse(test::kSeedAbsModel), options_with(1, nullptr));
  RuntimeContext context;
  auto message = session_error_of([&] { session.run(context); });
  CHECK(message.find("missing input 'x'") != std::string::npos);
  CHECK(message.find("float[N]") != std::string::npos);
  CHECK_THROWS_AS(session.run(context), InputError);
}

TEST_CASE("input_of_wrong_type_or_rank_is_rejected") {
  RuntimeSession session(test::parse(test::kSeedAbsModel), options_with(1, nullptr));
  RuntimeContext context;
  context.set("x", Tensor(ElementType::float64, {4}));
  auto message = session_error_of([&] { session.run(context); });
  CHECK(message.find("input 'x' must be float[N]") != std::string::npos);
  context.set("x", Tensor(ElementType::float32, {2, 2}));
  message = session_error_of([&] { session.run(context); });
  CHECK(message.find("rank 1") != std::string::npos);
}

TEST_CASE("fixed_dimension_mismatch_and_symbol_conflict") {
  const char* text =
      "<ir_version: 8, opset_import: [\"\" : 17]>\n"
      "g (float[N, 3] a, float[N, 3] b) => (float[N, 3] y) { y = Add(a, b) }";
  RuntimeSession session(test::parse(text), options_with(1, nullptr));
  RuntimeContext context;
  context.set("a", Tensor(ElementType::float32, {2, 4}));
  context.set("b", Tensor(ElementType::float32, {2, 3}));
  CHECK(session_error_of([&] { session.run(context); }).find("dimension 1 must be 3") != std::string::npos);
  context.set("a", Tensor(ElementType::float32, {2, 3}));
  context.set("b", Tensor(ElementType::float32, {5, 3}));
  CHECK(session_error_of([&] { session.run(context); }).find("'N'") != std::string::npos);
}

TEST_CASE("broadcast_mismatch_names_node_and_shapes") {
  const char* text =
      "<ir_version: 8, opset_import: [\"\" : 17]>\n"
      "g (float[A, B] a, float[C] b) => (float[A, B] y) { y = Add(a, b) }";
  RuntimeSession session(test::parse(text), options_with(1, nullptr));
  RuntimeContext context;
  context.set("a", Tensor(ElementType::float32, {2, 3}));
  context.set("b", Tensor(ElementType::float32, {4}));
  auto message = session_error_of([&] { session.run(context); });
  CHECK(message.find("Add node") != std::string::npos);
  CHECK(message.find("[2, 3]") != std::string::npos);
  CHECK(message.find("[4]") != std::string::npos);
  CHECK_THROWS_AS(session.run(context), InputError);
}

TEST_CASE("add_broadcasts_like_numpy") {
  const char* text =
      "<ir_version: 8, opset_import: [\"\" : 17]>\n"
      "g (float[A, 1, C] a, float[B, 1] b) => (float[A, B, C] y) { y = Add(a, b) }";
  RuntimeSession session(test::parse(text), options_with(1, nullptr));
  RuntimeContext context;
  context.set("a", ramp({2, 1, 3}, 0, 1));      // a[i,0,k] = 3i + k
  context.set("b", ramp({4, 1}, 100, 100));     // b[j,0] = 100 + 100j
  session.run(context);
  const Tensor& y = context.get("y");
  REQUIRE(y.shape() == Shape{2, 4, 3});
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 4; ++j)
      for (int k = 0; k < 3; ++k)
        CHECK(y.data<float>()[(i * 4 + j) * 3 + k] == static_cast<float>(3 * i + k + 100 + 100 * j));
}

TEST_CASE("nodes_out_of_order_initializers_and_constants") {
  const char* text =
      "<ir_version: 8, opset_import: [\"\" : 17]>\n"
      "g (float[3] x) => (float[3] y) <float[3] w = {1, 2, 3}> {\n"
      "  y = Mul(t, k)\n  t = Sub(x, w)\n  k = Constant <value = float[1] {-2}> ()\n}";
  RuntimeSession session(test::parse(text), options_with(1, nullptr));
  RuntimeContext context;
  context.set("x", ramp({3}, 10, 10));  // 10 20 30
  session.run(context);
  const Tensor& y = context.get("y");
  CHECK(y.data<float>()[0] == -18.0f);
  CHECK(y.data<float>()[1] == -36.0f);
  CHECK(y.data<float>()[2] == -54.0f);
}

TEST_CASE("graph_cycle_and_dangling_input_are_model_errors") {
  const char* cycle =
      "<ir_version: 8, opset_import: [\"\" : 17]>\n"
      "g (float[3] x) => (float[3] y) { a = Add(x, b)\n b = Abs(a)\n y = Abs(b) }";
  CHECK(session_error_of([&] { RuntimeSession s(test::parse(cycle)); }).find("cycle") != std::string::npos);
  const char* dangling =
      "<ir_version: 8, opset_import: [\"\" : 17]>\n"
      "g (float[3] x) => (float[3] y) { y = Add(x, nowhere) }";
  CHECK(session_error_of([&] { RuntimeSession s(test::parse(dangling)); }).find("'nowhere'") != std::string::npos);
}

TEST_CASE("integer_division_by_zero_is_an_input_error_not_a_crash") {
  const char* text =
      "<ir_version: 8, opset_import: [\"\" : 17]>\n"
      "g (int32[2] a, int32[2] b) => (int32[2] y) { y = Div(a, b) }";
  RuntimeSession session(test::parse(text), options_with(2, nullptr));
  RuntimeContext context;
  Tensor a(ElementType::int32, {2});
  Tensor b(ElementType::int32, {2});
  a.data<int32_t>()[0] = 7;
  b.data<int32_t>()[0] = 2;
  context.set("a", a);
  context.set("b", b);
  auto message = session_error_of([&] { session.run(context); });
  CHECK(message.find("Div node") != std::string::npos);
  CHECK(message.find("division by zero") != std::string::npos);
}

TEST_CASE("steady_state_reuses_output_buffer") {
  RuntimeSession session(test::parse(test::kSeedAbsModel), options_with(1, nullptr));
  RuntimeContext context;
  context.set("x", ramp({64}, -3, 0.1f));
  session.run(context);
  const void* first = context.get("y").raw_data();
  session.run(context);
  const void* second = context.get("y").raw_data();
  session.run(context);
  CHECK(context.get("y").raw_data() == first);  // two buffers, taken in turn from the session's pool
  session.run(context);
  CHECK(context.get("y").raw_data() == second);
  Tensor held = context.get("y");  // a caller holding the result keeps it out of the rotation
  session.run(context);
  session.run(context);
  CHECK(context.get("y").raw_data() != held.raw_data());
  CHECK(held.data<float>()[0] == doctest::Approx(3.0));
}

TEST_CASE("bit_exact_serial_and_parallel_across_threads_and_block_edges") {
  const char* text =
      "<ir_version: 8, opset_import: [\"\" : 17]>\n"
      "g (float[N] a, float[N] b, float[1] s) => (float[N] y, float[N] z, float[N] w) {\n"
      "  y = Abs(a)\n  z = Add(a, b)\n  w = Div(a, s)\n}";
  Model model = test::parse(text);
  TuningRegistry registry;
  std::vector<PublishedProfile> always_parallel;
  for (const char* op : {"Abs", "Add", "Div"}) {
    const KernelDef* def = cpu_kernel_table().choose("", op, 17, ElementType::float32, host_cpu_features()).def;
    TuningValues values = def->schema.defaults();
    values["parallel.minimum_elements"] = int64_t{1};
    for (int threads = 1; threads <= 4; ++threads) always_parallel.push_back({def->schema.key, threads, values});
  }
  registry.publish(always_parallel);
  for (int64_t n : {1, 2, 3, 15, 16, 17, 31, 32, 33, 63, 64, 65, 127, 128, 129, 1000, 4099}) {
    Tensor a(ElementType::float32, {n});
    Tensor b(ElementType::float32, {n});
    for (int64_t i = 0; i < n; ++i) {
      a.data<float>()[i] = std::sin(static_cast<float>(i)) * 1e3f;
      b.data<float>()[i] = std::cos(static_cast<float>(i) * 0.37f);
    }
    Tensor s(ElementType::float32, {1});
    s.data<float>()[0] = 3.7f;
    Tensor reference[3];
    for (int threads = 1; threads <= 4; ++threads) {
      CAPTURE(n);
      CAPTURE(threads);
      auto collector = std::make_shared<ParallelRegionCollector>(64);
      RuntimeSession session(model, options_with(threads, &registry, collector));
      RuntimeContext context;
      context.set("a", a);
      context.set("b", b);
      context.set("s", s);
      session.run(context);
      // The comparison is only worth something if the splits differ: with the threshold at 1 the
      // pool admits one participant per block, min(threads, ceil(n / grain)), in every region.
      const ParallelRegionReport regions = session.parallel_region_report();
      CHECK(regions.dropped_events == 0);
      for (const auto& event : regions.events) {
        CAPTURE(event.label);
        CAPTURE(event.grain);
        const int64_t blocks = (event.iterations + std::max<int64_t>(1, event.grain) - 1) / std::max<int64_t>(1, event.grain);
        CHECK(event.requested_threads == threads);
        CHECK(event.admitted_threads == std::min<int64_t>(threads, std::max<int64_t>(1, blocks)));
      }
      if (n >= 1000) {
        // Each of the three nodes ran a region on every thread of the session.
        for (const char* op : {"Abs", "Add", "Div"}) {
          CAPTURE(op);
          CHECK(std::any_of(regions.events.begin(), regions.events.end(), [&](const ParallelRegionEvent& e) {
            return e.label.rfind(op, 0) == 0 && e.admitted_threads == threads;
          }));
        }
      }
      const char* names[] = {"y", "z", "w"};
      for (int k = 0; k < 3; ++k) {
        if (threads == 1) {
          reference[k] = context.get(names[k]).clone();
          continue;
        }
        CHECK(bitwise_equal(context.get(names[k]), reference[k]));
      }
    }
  }
}

TEST_CASE("collector_records_only_up_to_capacity_per_session") {
  auto collector = std::make_shared<ParallelRegionCollector>(2);
  RuntimeSession session(test::parse(test::kSeedAbsModel), options_with(1, nullptr, collector));
  RuntimeContext context;
  context.set("x", ramp({8}, -1, 0.5f));
  for (int i = 0; i < 5; ++i) session.run(context);
  auto report = session.parallel_region_report();
  CHECK(report.events.size() == 2);
  CHECK(report.dropped_events == 3);
  CHECK(report.events[0].label.find("Abs") == 0);
  CHECK(report.events[0].iterations == 8);
}

TEST_CASE("positional_run_writes_into_borrowed_caller_memory") {
  RuntimeSession session(test::parse(test::kSeedAbsModel));
  Tensor x(ElementType::float32, {5});
  for (int i = 0; i < 5; ++i) x.data<float>()[i] = -static_cast<float>(i);
  std::vector<float> buffer(5, 99.0f);
  std::vector<Tensor> inputs{x};
  std::vector<Tensor> outputs{Tensor::borrow(ElementType::float32, {5}, buffer.data())};
  session.run(inputs, outputs);
  CHECK(outputs[0].data<float>() == buffer.data());
  for (int i = 0; i < 5; ++i) CHECK(buffer[static_cast<std::size_t>(i)] == static_cast<float>(i));
}

TEST_CASE("positional_run_same_shapes_reuses_the_output_buffer") {
  RuntimeSession session(test::parse(test::kSeedAbsModel));
  std::vector<Tensor> inputs{Tensor(ElementType::float32, {64})};
  std::vector<Tensor> outputs(1);
  session.run(inputs, outputs);
  const void* first = outputs[0].raw_data();
  session.run(inputs, outputs);
  CHECK(outputs[0].raw_data() == first);
  CHECK(outputs[0].exclusively_owned());
}

TEST_CASE("positional_run_output_of_wrong_shape_is_replaced_not_written") {
  RuntimeSession session(test::parse(test::kSeedAbsModel));
  std::vector<float> buffer(3, 7.0f);
  std::vector<Tensor> inputs{Tensor(ElementType::float32, {4})};
  std::vector<Tensor> outputs{Tensor::borrow(ElementType::float32, {3}, buffer.data())};
  session.run(inputs, outputs);
  CHECK(outputs[0].shape() == Shape{4});
  CHECK(outputs[0].raw_data() != static_cast<const void*>(buffer.data()));
  for (float v : buffer) CHECK(v == 7.0f);
}

TEST_CASE("positional_run_wrong_counts_and_missing_input_name_the_problem") {
  RuntimeSession session(test::parse(test::kSeedAbsModel));
  std::vector<Tensor> none;
  std::vector<Tensor> one(1);
  CHECK_THROWS_WITH_AS(session.run(none, one), doctest::Contains("takes 1 input(s) and 1 output(s)"), InputError);
  std::vector<Tensor> empty_input(1);
  CHECK_THROWS_WITH_AS(session.run(empty_input, one), doctest::Contains("missing input 'x'"), InputError);
}

TEST_CASE("positional_run_failure_hands_the_callers_buffer_back") {
  RuntimeSession session(test::parse(test::kSeedAbsModel));
  std::vector<float> buffer(4, 1.0f);
  std::vector<Tensor> inputs{Tensor(ElementType::int32, {4})};  // wrong element type
  std::vector<Tensor> outputs{Tensor::borrow(ElementType::float32, {4}, buffer.data())};
  CHECK_THROWS_AS(session.run(inputs, outputs), InputError);
  REQUIRE(outputs[0].is_view());
  CHECK(outputs[0].data<float>() == buffer.data());
}
