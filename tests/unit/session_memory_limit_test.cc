// The session memory limit (RuntimeSessionOptions::max_memory_bytes): a value that would pass it
// is refused before anything is allocated, with an error naming the node, the output, its shape
// and the bytes; the session stays usable; weights, held outputs and constant folding count.
#include <doctest/doctest.h>

#include <cstdint>
#include <string>
#include <vector>

#include <unistd.h>

#include "onnx_light/runtime/error.h"
#include "onnx_light/runtime/memory_limit.h"
#include "onnx_light/runtime/model.h"
#include "onnx_light/runtime/session.h"
#include "tensor_buffer_pool.h"
#include "test_models.h"

using namespace onnx_light;
using namespace onnx_light::runtime;

namespace {

constexpr int64_t kMiB = int64_t{1} << 20;

RuntimeSession limited_session(const std::string& graph, int64_t max_memory_bytes = 0,
                          OptimizationLevel level = OptimizationLevel::all) {
  RuntimeSessionOptions options;
  options.parameters = RuntimeParameters(1);
  options.max_memory_bytes = max_memory_bytes;
  options.optimization = level;
  return RuntimeSession(test::parse("<ir_version: 8, opset_import: [\"\" : 17]>\ng " + graph), options);
}

Tensor int64_shape(const std::vector<int64_t>& values) {
  Tensor t(ElementType::int64, {static_cast<int64_t>(values.size())});
  std::copy(values.begin(), values.end(), t.data<int64_t>());
  return t;
}

Tensor filled_floats(int64_t n, float value) {
  Tensor t(ElementType::float32, {n});
  for (int64_t i = 0; i < n; ++i) t.data<float>()[i] = value;
  return t;
}

template <typename F>
std::string memory_limit_error_of(F&& f) {
  try {
    f();
  } catch (const MemoryLimitError& e) {
    return e.what();
  }
  FAIL("no MemoryLimitError");
  return {};
}

bool limit_error_mentions(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace

TEST_CASE("constant_of_shape_asking_terabytes_names_node_output_shape_and_bytes") {
  RuntimeSession session = limited_session("(int64[2] s) => (float[A, B] y) { y = ConstantOfShape(s) }");
  RuntimeContext context;
  context.set("s", int64_shape({1000000, 1000000}));
  const std::string message = memory_limit_error_of([&] { session.run(context); });
  CHECK(message.find("ConstantOfShape node") == 0);
  CHECK(limit_error_mentions(message, "output 'y'"));
  CHECK(limit_error_mentions(message, "[1000000, 1000000]"));
  CHECK(limit_error_mentions(message, "4000000000000 bytes"));
  CHECK(limit_error_mentions(message, "3.6 TiB"));
  CHECK(limit_error_mentions(message, "--max-memory"));
  CHECK_FALSE(context.contains("y"));  // a failed run leaves the context as it was

  // The pool is consistent afterwards: a small shape runs.
  context.set("s", int64_shape({2, 3}));
  session.run(context);
  CHECK(context.get("y").shape() == Shape{2, 3});
}

TEST_CASE("expand_and_pad_over_the_limit_fail_naming_the_node") {
  {
    RuntimeSession expand = limited_session("(float[1] x, int64[2] s) => (float[A, B] y) { y = Expand(x, s) }", 64 * kMiB);
    RuntimeContext context;
    context.set("x", filled_floats(1, 1.0f));
    context.set("s", int64_shape({4096, 8192}));  // 128 MiB
    const std::string message = memory_limit_error_of([&] { expand.run(context); });
    CHECK(message.find("Expand node") == 0);
    CHECK(limit_error_mentions(message, "[4096, 8192]"));
    CHECK(limit_error_mentions(message, "134217728 bytes"));
    CHECK(limit_error_mentions(message, "limit of 64.0 MiB"));
  }
  {
    RuntimeSession pad = limited_session("(float[2] x, int64[2] p) => (float[M] y) { y = Pad(x, p) }", 64 * kMiB);
    RuntimeContext context;
    context.set("x", filled_floats(2, 1.0f));
    context.set("p", int64_shape({0, int64_t{1} << 40}));
    const std::string message = memory_limit_error_of([&] { pad.run(context); });
    CHECK(message.find("Pad node") == 0);
    CHECK(limit_error_mentions(message, "output 'y'"));
  }
}

TEST_CASE("a_folded_constant_over_the_fold_budget_is_left_to_the_run_which_names_the_node") {
  // The shape is an initializer, so the optimizer tries to fold the node: it must not compute
  // 4 TB at creation, and the run reports it.
  RuntimeSession session = limited_session(
      "() => (float[A, B] y) <int64[2] s = {1000000, 1000000}> { y = ConstantOfShape(s) }");
  CHECK(session.optimization_report().nodes_after == 1);
  RuntimeContext context;
  const std::string message = memory_limit_error_of([&] { session.run(context); });
  CHECK(message.find("ConstantOfShape node") == 0);
  CHECK(limit_error_mentions(message, "[1000000, 1000000]"));
}

TEST_CASE("values_within_the_limit_run_and_the_limit_counts_what_is_held_at_once") {
  // Three 1 MiB values (x is the caller's): a and b are held at once (a has a second reader), y
  // is written over a, and b's block is released after y; y stays held by the caller between runs.
  const std::string graph = "(float[262144] x) => (float[262144] y) { a = Abs(x)\n b = Add(a, x)\n y = Add(a, b) }";
  RuntimeSession roomy = limited_session(graph, 3 * kMiB, OptimizationLevel::none);
  RuntimeContext context;
  context.set("x", filled_floats(262144, -2.0f));
  for (int i = 0; i < 3; ++i) roomy.run(context);
  CHECK(context.get("y").data<float>()[0] == 2.0f);
  CHECK(roomy.memory_report().memory_limit_bytes == 3 * kMiB);

  // Under 2 MiB + a page the run fits (two values at once) only while the caller drops y between runs.
  RuntimeSession tight = limited_session(graph, 2 * kMiB + 4096, OptimizationLevel::none);
  RuntimeContext first;
  first.set("x", filled_floats(262144, -2.0f));
  tight.run(first);
  const Tensor kept = first.get("y");  // the caller keeps last run's output alive
  RuntimeContext second;
  second.set("x", filled_floats(262144, -3.0f));
  const std::string message = memory_limit_error_of([&] { tight.run(second); });
  CHECK(limit_error_mentions(message, "1.0 MiB"));
  CHECK(limit_error_mentions(message, "held"));
  CHECK(kept.data<float>()[0] == 2.0f);
}

TEST_CASE("weights_over_the_limit_refuse_the_session_naming_the_model") {
  std::string values;
  for (int i = 0; i < 1024; ++i) values += (i ? ", " : "") + std::to_string(i);
  const std::string graph = "(float[1024] x) => (float[1024] y) <float[1024] w = {" + values + "}> { y = Add(x, w) }";
  try {
    (void)limited_session(graph, 1024);
    FAIL("a session whose weights pass its limit was created");
  } catch (const MemoryLimitError& e) {
    CHECK(limit_error_mentions(e.what(), "<test model>"));
    CHECK(limit_error_mentions(e.what(), "weights"));
    CHECK(limit_error_mentions(e.what(), "4096 bytes"));
  }
  RuntimeSession fits = limited_session(graph, kMiB);
  CHECK(fits.memory_report().weights_bytes == 4096);
}

TEST_CASE("negative_limit_is_an_invalid_value_and_zero_means_the_default") {
  CHECK_THROWS_AS(limited_session("(float[1] x) => (float[1] y) { y = Abs(x) }", -1), InvalidValueError);
  RuntimeSession session = limited_session("(float[1] x) => (float[1] y) { y = Abs(x) }", 0);
  CHECK(session.memory_report().memory_limit_bytes == default_session_memory_limit());
}

TEST_CASE("default_limit_is_three_quarters_of_physical_memory") {
  const int64_t physical = static_cast<int64_t>(sysconf(_SC_PHYS_PAGES)) * sysconf(_SC_PAGESIZE);
  const int64_t limit = default_session_memory_limit();
  CHECK(limit > 0);
  CHECK(limit <= physical / 4 * 3);
  CHECK(limit >= physical / 4 * 3 - sysconf(_SC_PAGESIZE) * 4);
}

TEST_CASE("format_bytes_uses_binary_units") {
  CHECK(format_bytes(0) == "0 B");
  CHECK(format_bytes(1023) == "1023 B");
  CHECK(format_bytes(1024) == "1.0 KiB");
  CHECK(format_bytes(3 * kMiB / 2) == "1.5 MiB");
  CHECK(format_bytes(int64_t{4000000000000}) == "3.6 TiB");
}

TEST_CASE("pool_gives_cached_blocks_back_to_the_os_to_make_room") {
  auto pool = std::make_shared<TensorBufferPool>();
  pool->set_limit(static_cast<std::size_t>(3 * kMiB), 0);
  {
    Tensor a = pool->make(ElementType::float32, {262144}, false);  // 1 MiB
    Tensor b = pool->make(ElementType::float32, {262144}, false);
  }
  CHECK(pool->cached_bytes() == static_cast<std::size_t>(2 * kMiB));
  // 2 MiB more does not fit beside the cached 2 MiB: the cache goes, the request is served.
  Tensor big = pool->make(ElementType::float32, {524288}, false);
  CHECK(pool->cached_bytes() == 0);
  CHECK(pool->outstanding_bytes() == static_cast<std::size_t>(2 * kMiB));
  // Nothing cached is left to give: 2 MiB more is refused and nothing is counted for it.
  try {
    (void)pool->make(ElementType::float32, {524288}, false);
    FAIL("over the limit");
  } catch (const PoolLimitError& e) {
    CHECK(e.requested == static_cast<std::size_t>(2 * kMiB));
    CHECK(e.held == static_cast<std::size_t>(2 * kMiB));
    CHECK(e.limit == static_cast<std::size_t>(3 * kMiB));
  }
  CHECK(pool->outstanding_bytes() == static_cast<std::size_t>(2 * kMiB));
}

TEST_CASE("pool_limit_counts_the_reserved_weights") {
  auto pool = std::make_shared<TensorBufferPool>();
  pool->set_limit(static_cast<std::size_t>(2 * kMiB), static_cast<std::size_t>(kMiB + 1));
  CHECK_THROWS_AS((void)pool->make(ElementType::float32, {262144}, false), PoolLimitError);
  Tensor fits = pool->make(ElementType::float32, {262000}, false);  // 1048000 bytes
  CHECK(fits.element_count() == 262000);
}
