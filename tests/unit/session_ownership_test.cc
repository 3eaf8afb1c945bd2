// Ownership and aliasing of session results (issue 13): moved-from tensors are empty, a failed run
// leaves the caller's values as they were, caller buffers that overlap inputs or each other are
// handled, duplicate graph outputs are refused.
#include <doctest/doctest.h>

#include <atomic>
#include <cstring>
#include <memory>
#include <new>
#include <numeric>
#include <vector>

#include "onnx_light/runtime/error.h"
#include "onnx_light/runtime/kernel_table.h"
#include "onnx_light/runtime/session.h"
#include "test_models.h"

using namespace onnx_light;
using namespace onnx_light::runtime;

namespace {

Tensor float_input(const Shape& shape, std::vector<float> values) {
  Tensor t(ElementType::float32, shape);
  REQUIRE(static_cast<std::size_t>(t.element_count()) == values.size());
  std::memcpy(t.raw_data(), values.data(), t.byte_size());
  return t;
}

std::vector<float> owned_values(const Tensor& t) {
  const float* p = t.data<float>();
  return {p, p + t.element_count()};
}

RuntimeSessionOptions serial() {
  RuntimeSessionOptions o;
  o.parameters = RuntimeParameters(1);
  return o;
}

// ReduceSum to a rank-0 output: the shape a moved-from tensor used to "match".
const char* kReduceSumScalar =
    "<ir_version: 8, opset_import: [\"\" : 17]>\n"
    "g (float[3] x) => (float y) { y = ReduceSum <keepdims = 0> (x) }";

// y is written by the first node, z's node fails at run time when b holds a zero.
const char* kAbsThenIntegerDivision =
    "<ir_version: 8, opset_import: [\"\" : 17]>\n"
    "g (float[4] x, int32[2] a, int32[2] b) => (float[4] y, int32[2] z) { y = Abs(x) z = Div(a, b) }";

}  // namespace

TEST_CASE("moved_from_tensor_is_empty_not_a_view") {
  Tensor owned = float_input({3}, {1, 2, 3});
  Tensor target(std::move(owned));
  CHECK(owned.empty());  // NOLINT(bugprone-use-after-move): the state after a move is the contract
  CHECK_FALSE(owned.is_view());
  CHECK(owned.ownership() == TensorOwnership::empty);
  CHECK(owned.raw_data() == nullptr);
  CHECK(owned.element_count() == 0);
  CHECK(owned.shape().empty());
  CHECK(target.ownership() == TensorOwnership::owned);
  CHECK(owned_values(target) == std::vector<float>{1, 2, 3});

  std::vector<float> memory{4, 5};
  Tensor view = Tensor::borrow(ElementType::float32, {2}, memory.data());
  Tensor assigned;
  assigned = std::move(view);
  CHECK(view.empty());  // NOLINT(bugprone-use-after-move)
  CHECK_FALSE(view.is_view());
  CHECK(view.raw_data() == nullptr);
  CHECK(assigned.is_view());
  CHECK(assigned.raw_data() == memory.data());

  Tensor& same = assigned;
  assigned = std::move(same);  // self-move keeps the value
  CHECK(assigned.is_view());
  CHECK(assigned.raw_data() == memory.data());
}

TEST_CASE("ownership_is_a_field_owned_borrowed_or_empty") {
  CHECK(Tensor().ownership() == TensorOwnership::empty);
  CHECK(Tensor(ElementType::float32, {0}).ownership() == TensorOwnership::owned);
  // A borrowed view of no elements is still a view, even with a null pointer.
  Tensor none = Tensor::borrow(ElementType::float32, {0}, nullptr);
  CHECK(none.is_view());
  CHECK_FALSE(none.exclusively_owned());
  Tensor released = float_input({1}, {1});
  released.release();
  CHECK(released.empty());
  CHECK_FALSE(released.is_view());
}

TEST_CASE("positional_rank0_result_kept_by_caller_is_not_overwritten_by_next_run") {
  Tensor first_result;
  {
    RuntimeSession session(test::parse(kReduceSumScalar), serial());
    std::vector<Tensor> inputs{float_input({3}, {1, 2, 3})};
    std::vector<Tensor> outputs(1);
    session.run(inputs, outputs);
    first_result = outputs[0];  // the caller keeps the first result
    inputs[0] = float_input({3}, {10, 20, 30});
    std::vector<Tensor> fresh(1);
    session.run(inputs, fresh);
    CHECK(fresh[0].data<float>()[0] == 60.0f);
    CHECK(first_result.data<float>()[0] == 6.0f);
    CHECK_FALSE(overlaps(first_result, fresh[0]));
    // The same output vector again: its entry is shared with first_result, so it is replaced.
    session.run(inputs, outputs);
    CHECK(first_result.data<float>()[0] == 6.0f);
    CHECK(outputs[0].data<float>()[0] == 60.0f);
  }
  // The session is gone; the result the caller holds is still valid memory (ASan checks this).
  CHECK(first_result.data<float>()[0] == 6.0f);
}

TEST_CASE("context_rank0_result_kept_by_caller_is_not_overwritten_by_next_run") {
  Tensor kept;
  {
    RuntimeSession session(test::parse(kReduceSumScalar), serial());
    RuntimeContext context;
    context.set("x", float_input({3}, {1, 2, 3}));
    session.run(context);
    kept = context.get("y");
    context.set("x", float_input({3}, {10, 20, 30}));
    session.run(context);
    CHECK(context.get("y").data<float>()[0] == 60.0f);
    CHECK(kept.data<float>()[0] == 6.0f);
    CHECK_FALSE(overlaps(kept, context.get("y")));
  }
  CHECK(kept.data<float>()[0] == 6.0f);
}

TEST_CASE("context_failed_run_on_missing_input_leaves_outputs_as_they_were") {
  RuntimeSession session(test::parse(test::kSeedAbsModel), serial());
  RuntimeContext context;
  std::vector<float> ones(1 << 16, -1.0f);
  context.set("x", float_input({1 << 16}, ones));
  session.run(context);
  const void* before = context.get("y").raw_data();
  context.erase("x");
  CHECK_THROWS_AS(session.run(context), InputError);
  REQUIRE(context.contains("y"));
  const Tensor& y = context.get("y");
  CHECK(y.raw_data() == before);
  CHECK(y.shape() == Shape{1 << 16});
  CHECK(y.element_count() == (1 << 16));
  CHECK(owned_values(y) == std::vector<float>(1 << 16, 1.0f));
  CHECK_FALSE(context.contains("x"));
}

TEST_CASE("context_failed_run_after_an_output_was_computed_leaves_outputs_as_they_were") {
  RuntimeSession session(test::parse(kAbsThenIntegerDivision), serial());
  RuntimeContext context;
  Tensor a(ElementType::int32, {2});
  Tensor b(ElementType::int32, {2});
  a.data<int32_t>()[0] = 8;
  a.data<int32_t>()[1] = 9;
  b.data<int32_t>()[0] = 2;
  b.data<int32_t>()[1] = 3;
  context.set("x", float_input({4}, {-1, 2, -3, 4}));
  context.set("a", a);
  context.set("b", b);
  session.run(context);
  REQUIRE(owned_values(context.get("y")) == std::vector<float>{1, 2, 3, 4});
  const void* y_before = context.get("y").raw_data();
  // The second run computes y from new values, then fails in Div: the context keeps the old y.
  context.set("x", float_input({4}, {-5, -6, -7, -8}));
  Tensor zero(ElementType::int32, {2});
  context.set("b", zero);
  CHECK_THROWS_WITH_AS(session.run(context), doctest::Contains("division by zero"), InputError);
  CHECK(context.get("y").raw_data() == y_before);
  CHECK(owned_values(context.get("y")) == std::vector<float>{1, 2, 3, 4});
  CHECK(context.get("z").data<int32_t>()[0] == 4);
  CHECK(context.get("z").data<int32_t>()[1] == 3);
  // And the session recovers: the next good run gives the new results.
  context.set("b", b);
  session.run(context);
  CHECK(owned_values(context.get("y")) == std::vector<float>{5, 6, 7, 8});
}

TEST_CASE("context_steady_state_alternates_between_two_buffers") {
  RuntimeSession session(test::parse(test::kSeedAbsModel), serial());
  RuntimeContext context;
  context.set("x", float_input({64}, std::vector<float>(64, -2.0f)));
  session.run(context);
  const void* first = context.get("y").raw_data();
  session.run(context);
  const void* second = context.get("y").raw_data();
  CHECK(second != first);  // the context's first result is never written in place
  for (int i = 0; i < 4; ++i) {
    session.run(context);
    const void* now = context.get("y").raw_data();
    CHECK((now == first || now == second));
  }
}

TEST_CASE("duplicate_graph_output_names_are_refused_naming_the_output") {
  const char* text =
      "<ir_version: 8, opset_import: [\"\" : 17]>\n"
      "g (float[4] x) => (float[4] y, float[4] y) { y = Abs(x) }";
  CHECK_THROWS_WITH_AS(RuntimeSession(test::parse(text)),
                       doctest::Contains("graph output 'y' is listed twice (outputs 0 and 1)"), ModelError);
}

TEST_CASE("positional_output_that_is_the_input_buffer_is_computed_privately_transpose") {
  RuntimeSession session(test::parse("<ir_version: 8, opset_import: [\"\" : 17]>\n"
                                     "g (float[3, 3] x) => (float[3, 3] y) { y = Transpose(x) }"),
                         serial());
  std::vector<float> memory(9);
  std::iota(memory.begin(), memory.end(), 0.0f);
  std::vector<Tensor> inputs{Tensor::borrow(ElementType::float32, {3, 3}, memory.data())};
  std::vector<Tensor> outputs{Tensor::borrow(ElementType::float32, {3, 3}, memory.data())};
  session.run(inputs, outputs);
  CHECK(outputs[0].raw_data() == memory.data());
  CHECK(memory == std::vector<float>{0, 3, 6, 1, 4, 7, 2, 5, 8});
  // Again, now that the session holds a private buffer: still exact, still no replacement.
  session.run(inputs, outputs);
  CHECK(memory == std::vector<float>{0, 1, 2, 3, 4, 5, 6, 7, 8});
}

TEST_CASE("positional_first_output_in_the_input_buffer_does_not_change_what_the_second_reads") {
  RuntimeSession session(test::parse("<ir_version: 8, opset_import: [\"\" : 17]>\n"
                                     "g (float[4] x) => (float[4] a, float[4] b) { a = Abs(x) b = Neg(x) }"),
                         serial());
  std::vector<float> x{-1, 2, -3, 4};
  std::vector<float> b(4, 0.0f);
  std::vector<Tensor> inputs{Tensor::borrow(ElementType::float32, {4}, x.data())};
  std::vector<Tensor> outputs{Tensor::borrow(ElementType::float32, {4}, x.data()),
                              Tensor::borrow(ElementType::float32, {4}, b.data())};
  session.run(inputs, outputs);
  CHECK(x == std::vector<float>{1, 2, 3, 4});
  CHECK(b == std::vector<float>{1, -2, 3, -4});
}

TEST_CASE("positional_output_partly_overlapping_the_input_is_exact") {
  // The output starts two floats into the input: a loop writing in place would read its own stores.
  RuntimeSession session(test::parse(test::kSeedAbsModel), serial());
  constexpr int64_t n = 1000;
  std::vector<float> memory(n + 2);
  for (std::size_t i = 0; i < memory.size(); ++i) memory[i] = -static_cast<float>(i + 1);
  std::vector<Tensor> inputs{Tensor::borrow(ElementType::float32, {n}, memory.data())};
  std::vector<Tensor> outputs{Tensor::borrow(ElementType::float32, {n}, memory.data() + 2)};
  session.run(inputs, outputs);
  CHECK(memory[0] == -1.0f);
  CHECK(memory[1] == -2.0f);
  for (std::size_t i = 0; i < static_cast<std::size_t>(n); ++i) {
    CAPTURE(i);
    REQUIRE(memory[i + 2] == static_cast<float>(i + 1));
  }
}

TEST_CASE("positional_outputs_sharing_memory_are_refused_naming_both") {
  RuntimeSession session(test::parse("<ir_version: 8, opset_import: [\"\" : 17]>\n"
                                     "g (float[4] x) => (float[4] a, float[4] b) { a = Abs(x) b = Neg(x) }"),
                         serial());
  std::vector<float> x{-1, 2, -3, 4};
  std::vector<float> shared(6, 7.0f);
  std::vector<Tensor> inputs{Tensor::borrow(ElementType::float32, {4}, x.data())};
  std::vector<Tensor> outputs{Tensor::borrow(ElementType::float32, {4}, shared.data()),
                              Tensor::borrow(ElementType::float32, {4}, shared.data() + 2)};
  CHECK_THROWS_WITH_AS(session.run(inputs, outputs),
                       doctest::Contains("outputs 0 ('a') and 1 ('b') share memory"), InputError);
  CHECK(shared == std::vector<float>(6, 7.0f));
  CHECK(outputs[0].raw_data() == shared.data());
  CHECK(outputs[1].raw_data() == shared.data() + 2);
}

TEST_CASE("positional_failed_run_gives_back_a_caller_buffer_that_did_not_fit_untouched") {
  RuntimeSession session(test::parse(kAbsThenIntegerDivision), serial());
  Tensor a(ElementType::int32, {2});
  Tensor zero(ElementType::int32, {2});
  std::vector<Tensor> inputs{float_input({4}, {-1, 2, -3, 4}), a, zero};
  std::vector<Tensor> outputs{float_input({3}, {7, 7, 7}), Tensor()};  // y's buffer has the wrong shape
  const void* callers = outputs[0].raw_data();
  CHECK_THROWS_AS(session.run(inputs, outputs), InputError);
  CHECK(outputs[0].raw_data() == callers);
  CHECK(owned_values(outputs[0]) == std::vector<float>{7, 7, 7});
  CHECK(outputs[1].empty());
}

TEST_CASE("positional_failed_run_gives_back_a_bound_caller_buffer") {
  RuntimeSession session(test::parse(kAbsThenIntegerDivision), serial());
  Tensor a(ElementType::int32, {2});
  Tensor zero(ElementType::int32, {2});
  std::vector<float> y(4, 7.0f);
  std::vector<Tensor> inputs{float_input({4}, {-1, 2, -3, 4}), a, zero};
  std::vector<Tensor> outputs{Tensor::borrow(ElementType::float32, {4}, y.data()), Tensor()};
  CHECK_THROWS_AS(session.run(inputs, outputs), InputError);
  REQUIRE(outputs[0].is_view());
  CHECK(outputs[0].raw_data() == y.data());
  // Written in place before the failure, as documented.
  CHECK(y == std::vector<float>{1, 2, 3, 4});
}

namespace {

// A kernel that fails the way an oversized request does inside a kernel or the allocator.
class FailingKernel final : public Kernel {
 public:
  explicit FailingKernel(bool out_of_memory) : out_of_memory_(out_of_memory) {}
  void run(KernelExecution&) override {
    if (out_of_memory_) throw std::bad_alloc();
    throw InvalidValueError("tensor float[4611686018427387904] is too large to address");
  }

 private:
  bool out_of_memory_;
};

KernelTable failing_table() {
  KernelTable table;
  for (const char* op : {"Abs", "Neg"}) {
    KernelDef def;
    def.op_type = op;
    def.schema.key.kernel = op;
    const bool out_of_memory = std::string(op) == "Neg";
    def.create = [out_of_memory](const KernelCreateInfo&) { return std::make_unique<FailingKernel>(out_of_memory); };
    table.add(std::move(def));
  }
  return table;
}

}  // namespace

TEST_CASE("kernel_failures_from_sizes_the_model_asked_for_name_the_node") {
  const KernelTable table = failing_table();
  RuntimeSessionOptions options = serial();
  options.kernels = &table;
  RuntimeSession session(test::parse("<ir_version: 8, opset_import: [\"\" : 17]>\n"
                                     "g (float[4] x) => (float[4] y, float[4] z) { y = Abs(x) z = Neg(x) }"),
                         options);
  RuntimeContext context;
  context.set("x", float_input({4}, {1, 2, 3, 4}));
  CHECK_THROWS_WITH_AS(session.run(context), doctest::Contains("Abs node #0: tensor float[4611686018427387904] is too large"),
                       InvalidValueError);
  RuntimeSession out_of_memory(test::parse("<ir_version: 8, opset_import: [\"\" : 17]>\n"
                                           "g (float[4] x) => (float[4] z) { z = Neg(x) }"),
                               options);
  CHECK_THROWS_WITH_AS(out_of_memory.run(context), doctest::Contains("Neg node #0: out of memory"), InputError);
}

namespace {

// Fills its output in parallel blocks; while `armed`, the last block throws (on a worker, as the
// pool hands the caller the first block).
class ThrowingParallelKernel final : public Kernel {
 public:
  explicit ThrowingParallelKernel(std::shared_ptr<std::atomic<bool>> armed) : armed_(std::move(armed)) {}
  void run(KernelExecution& execution) override {
    const Tensor& x = *execution.input(0);
    Tensor& y = execution.output(0, ElementType::float32, x.shape());
    const int64_t n = x.element_count();
    const float* in = x.data<float>();
    float* out = y.data<float>();
    execution.parallel_for(n, 1, execution.threads(), [&](int64_t begin, int64_t end) {
      if (*armed_ && end == n) throw InputError("a block failed on purpose");
      for (int64_t i = begin; i < end; ++i) out[i] = -in[i];
    });
  }

 private:
  std::shared_ptr<std::atomic<bool>> armed_;
};

}  // namespace

TEST_CASE("a_kernel_throwing_inside_parallel_for_fails_the_run_by_name_and_the_session_runs_again") {
  auto armed = std::make_shared<std::atomic<bool>>(true);
  KernelTable table;
  KernelDef def;
  def.op_type = "Neg";
  def.schema.key.kernel = "Neg";
  def.create = [armed](const KernelCreateInfo&) { return std::make_unique<ThrowingParallelKernel>(armed); };
  table.add(std::move(def));
  RuntimeSessionOptions options;
  options.parameters = RuntimeParameters(2);
  options.kernels = &table;
  RuntimeSession session(test::parse("<ir_version: 8, opset_import: [\"\" : 17]>\n"
                                     "g (float[64] x) => (float[64] y) { y = Neg(x) }"),
                         options);
  std::vector<float> values(64);
  for (std::size_t i = 0; i < values.size(); ++i) values[i] = static_cast<float>(i);
  RuntimeContext context;
  context.set("x", float_input({64}, values));
  for (int attempt = 0; attempt < 20; ++attempt) {  // the pool must stay usable after each failure
    CHECK_THROWS_WITH_AS(session.run(context), doctest::Contains("Neg node #0: a block failed on purpose"),
                         InputError);
  }
  *armed = false;
  session.run(context);
  const Tensor& y = context.get("y");
  for (std::size_t i = 0; i < values.size(); ++i) CHECK(y.data<float>()[i] == -values[i]);
}
