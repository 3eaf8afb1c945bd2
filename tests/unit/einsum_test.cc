// Einsum at the edges the five ONNX node tests leave out: ellipsis broadcasting across operands,
// the implicit output, diagonals and traces, three operands, empty dimensions, integer wrap-around,
// thread-count independence, and every malformed equation named in its error.
#include <doctest/doctest.h>

#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "onnx_light/runtime/cpu_features.h"
#include "onnx_light/runtime/error.h"
#include "onnx_light/runtime/kernel_table.h"
#include "onnx_light/runtime/session.h"
#include "tensor_values.h"
#include "test_models.h"

using namespace onnx_light;
using namespace onnx_light::runtime;
using namespace onnx_light::test;

namespace {

std::map<std::string, Tensor> run_einsum(const std::string& graph, const NamedTensors& inputs, int threads = 1) {
  return run_graph("g " + graph, inputs, 17, threads);
}

std::vector<float> iota(std::size_t n, float scale = 1.0f) {
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = scale * static_cast<float>(static_cast<int>(i % 7) - 3) + 0.25f * static_cast<float>(i % 3);
  return v;
}

}  // namespace

TEST_CASE("einsum_ellipsis_broadcasts_batch_dimensions_right_aligned_like_numpy") {
  // A [2,1,2,3] x B [4,3,2]: batch dims (2,1) and (4) broadcast to (2,4).
  const std::vector<float> a = iota(2 * 1 * 2 * 3), b = iota(4 * 3 * 2, 0.5f);
  auto out = run_einsum("(float[2,1,2,3] a, float[4,3,2] b) => (float[2,4,2,2] y) { y = Einsum <equation = \"...ij,...jk->...ik\"> (a, b) }",
                 {{"a", floats({2, 1, 2, 3}, a)}, {"b", floats({4, 3, 2}, b)}});
  REQUIRE(out["y"].shape() == Shape{2, 4, 2, 2});
  const std::vector<float> y = values<float>(out["y"]);
  for (int p = 0; p < 2; ++p)
    for (int q = 0; q < 4; ++q)
      for (int i = 0; i < 2; ++i)
        for (int k = 0; k < 2; ++k) {
          double s = 0;
          for (int j = 0; j < 3; ++j) s += double(a[(p * 2 + i) * 3 + j]) * double(b[(q * 3 + j) * 2 + k]);
          CHECK(y[static_cast<std::size_t>(((p * 4 + q) * 2 + i) * 2 + k)] == doctest::Approx(s));
        }
}

TEST_CASE("einsum_implicit_output_is_the_ellipsis_then_letters_seen_once_in_alphabetical_order") {
  // "ba,bc": b occurs twice (summed), a and c once -> output "ac".
  const std::vector<float> a = iota(2 * 3), c = iota(2 * 4, 2.0f);
  auto out = run_einsum("(float[2,3] a, float[2,4] c) => (float[3,4] y) { y = Einsum <equation = \"ba,bc\"> (a, c) }",
                 {{"a", floats({2, 3}, a)}, {"c", floats({2, 4}, c)}});
  REQUIRE(out["y"].shape() == Shape{3, 4});
  const std::vector<float> y = values<float>(out["y"]);
  for (int i = 0; i < 3; ++i)
    for (int k = 0; k < 4; ++k)
      CHECK(y[static_cast<std::size_t>(i * 4 + k)] == doctest::Approx(double(a[i]) * c[k] + double(a[3 + i]) * c[4 + k]));
  // "ji" alone is a transpose (implicit output "ij").
  auto t = run_einsum("(float[2,3] x) => (float[3,2] y) { y = Einsum <equation = \"ji\"> (x) }", {{"x", floats({2, 3}, a)}});
  CHECK(values<float>(t["y"]) == std::vector<float>{a[0], a[3], a[1], a[4], a[2], a[5]});
}

TEST_CASE("einsum_repeated_subscript_reads_the_diagonal_and_a_trace_sums_it") {
  const std::vector<float> m = {1, 2, 3, 4, 5, 6, 7, 8, 9};
  auto diag = run_einsum("(float[3,3] x) => (float[3] y) { y = Einsum <equation = \"ii->i\"> (x) }", {{"x", floats({3, 3}, m)}});
  CHECK(values<float>(diag["y"]) == std::vector<float>{1, 5, 9});
  auto trace = run_einsum("(float[3,3] x) => (float[] y) { y = Einsum <equation = \"ii\"> (x) }", {{"x", floats({3, 3}, m)}});
  CHECK(trace["y"].shape().empty());
  CHECK(values<float>(trace["y"]) == std::vector<float>{15});
  // Diagonal of each batch matrix, batch last: "bii->ib".
  auto batched = run_einsum("(float[2,2,2] x) => (float[2,2] y) { y = Einsum <equation = \"bii->ib\"> (x) }",
                     {{"x", floats({2, 2, 2}, {1, 2, 3, 4, 5, 6, 7, 8})}});
  CHECK(values<float>(batched["y"]) == std::vector<float>{1, 5, 4, 8});
}

TEST_CASE("einsum_three_operands_chain_matrix_products") {
  const std::vector<float> a = iota(2 * 3), b = iota(3 * 4, 0.5f), c = iota(4 * 2, 1.5f);
  auto out = run_einsum("(float[2,3] a, float[3,4] b, float[4,2] c) => (float[2,2] y) { y = Einsum <equation = \"ij,jk,kl->il\"> (a, b, c) }",
                 {{"a", floats({2, 3}, a)}, {"b", floats({3, 4}, b)}, {"c", floats({4, 2}, c)}});
  const std::vector<float> y = values<float>(out["y"]);
  for (int i = 0; i < 2; ++i)
    for (int l = 0; l < 2; ++l) {
      double s = 0;
      for (int j = 0; j < 3; ++j)
        for (int k = 0; k < 4; ++k) s += double(a[i * 3 + j]) * b[j * 4 + k] * c[k * 2 + l];
      CHECK(y[static_cast<std::size_t>(i * 2 + l)] == doctest::Approx(s));
    }
}

TEST_CASE("einsum_contracting_an_empty_dimension_gives_zeros_and_an_empty_output_dimension_nothing") {
  auto zeros = run_einsum("(float[2,0] a, float[0,3] b) => (float[2,3] y) { y = Einsum <equation = \"ij,jk->ik\"> (a, b) }",
                   {{"a", floats({2, 0}, {})}, {"b", floats({0, 3}, {})}});
  CHECK(values<float>(zeros["y"]) == std::vector<float>(6, 0.0f));
  auto empty = run_einsum("(float[0,4] a, float[4,3] b) => (float[0,3] y) { y = Einsum <equation = \"ij,jk->ik\"> (a, b) }",
                   {{"a", floats({0, 4}, {})}, {"b", floats({4, 3}, std::vector<float>(12, 1.0f))}});
  CHECK(empty["y"].shape() == Shape{0, 3});
}

TEST_CASE("einsum_int32_products_wrap_around_without_undefined_behaviour") {
  const int32_t big = 2'000'000'000;
  auto out = run_einsum("(int32[2] a, int32[2] b) => (int32[] y) { y = Einsum <equation = \"i,i\"> (a, b) }",
                 {{"a", tensor<int32_t>(ElementType::int32, {2}, {big, big})}, {"b", tensor<int32_t>(ElementType::int32, {2}, {3, 1})}});
  const uint32_t expect = static_cast<uint32_t>(big) * 3u + static_cast<uint32_t>(big);
  CHECK(values<int32_t>(out["y"]) == std::vector<int32_t>{static_cast<int32_t>(expect)});
  auto wide = run_einsum("(int64[2,2] a) => (int64[2] y) { y = Einsum <equation = \"ij->i\"> (a) }",
                  {{"a", int64s({2, 2}, {INT64_MAX, 1, -5, 7})}});
  CHECK(values<int64_t>(wide["y"]) == std::vector<int64_t>{INT64_MIN, 2});
}

TEST_CASE("einsum_results_are_identical_at_one_and_three_threads") {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> a(4 * 32 * 48), b(4 * 48 * 40);
  for (float& v : a) v = dist(rng);
  for (float& v : b) v = dist(rng);
  const std::string g =
      "(float[4,32,48] a, float[4,48,40] b) => (float[4,32,40] y) { y = Einsum <equation = \"bij,bjk->bik\"> (a, b) }";
  auto one = run_einsum(g, {{"a", floats({4, 32, 48}, a)}, {"b", floats({4, 48, 40}, b)}}, 1);
  auto three = run_einsum(g, {{"a", floats({4, 32, 48}, a)}, {"b", floats({4, 48, 40}, b)}}, 3);
  CHECK(values<float>(one["y"]) == values<float>(three["y"]));
}

TEST_CASE("einsum_malformed_equations_and_mismatched_inputs_are_named") {
  const auto two = std::vector<std::pair<std::string, Tensor>>{{"a", floats({2, 3}, iota(6))}, {"b", floats({4, 2}, iota(8))}};
  CHECK_THROWS_WITH_AS(
      run_einsum("(float[2,3] a, float[4,2] b) => (float[2,2] y) { y = Einsum <equation = \"ij,jk->ik\"> (a, b) }", two),
      doctest::Contains("subscript 'j' has size 4 in input 1 [4, 2] but 3 elsewhere"), InputError);
  CHECK_THROWS_WITH_AS(run_einsum("(float[2,3] a) => (float[2] y) { y = Einsum <equation = \"ij->k\"> (a) }", {two[0]}),
                       doctest::Contains("output subscript 'k' is in no input"), UnsupportedError);
  CHECK_THROWS_WITH_AS(run_einsum("(float[2,3] a) => (float[2] y) { y = Einsum <equation = \"ij,jk->ik\"> (a) }", {two[0]}),
                       doctest::Contains("has 2 operands but the node has 1 input"), UnsupportedError);
  CHECK_THROWS_WITH_AS(run_einsum("(float[2,3] a) => (float[2] y) { y = Einsum <equation = \"ijk->i\"> (a) }", {two[0]}),
                       doctest::Contains("operand 0 has 3 subscripts but input 0 has rank 2"), InputError);
  CHECK_THROWS_WITH_AS(run_einsum("(float[2,3] a) => (float[2] y) { y = Einsum <equation = \"i1->i\"> (a) }", {two[0]}),
                       doctest::Contains("'1' is not a subscript"), UnsupportedError);
  CHECK_THROWS_WITH_AS(run_einsum("(float[2,3] a) => (float[2] y) { y = Einsum <equation = \"ij->ii\"> (a) }", {two[0]}),
                       doctest::Contains("repeats an output subscript"), UnsupportedError);
  CHECK_THROWS_WITH_AS(run_einsum("(float[2,3] a) => (float[2] y) { y = Einsum <equation = \"ij->...i\"> (a) }", {two[0]}),
                       doctest::Contains("'...' in the output but in no input"), UnsupportedError);
  CHECK_THROWS_WITH_AS(run_einsum("(float[2,3] a) => (float[2] y) { y = Einsum <equation = \"..i.->i\"> (a) }", {two[0]}),
                       doctest::Contains("only as one '...' per operand"), UnsupportedError);
  CHECK_THROWS_WITH_AS(run_einsum("(float[2,3] a) => (float[2] y) { y = Einsum(a) }", {two[0]}),
                       doctest::Contains("Required attribute 'equation' is missing"), Error);
}

namespace {

// The float32 result and the implementation the profile names, and the float64 (generic sum) result.
struct Both {
  std::vector<float> f32;
  std::vector<double> f64;
  std::string implementation;
};

Both run_both(const std::string& equation, const Shape& a_shape, const Shape& b_shape, const std::string& out_dims) {
  auto dims = [](const Shape& s) {
    std::string d;
    for (int64_t v : s) d += (d.empty() ? "" : ",") + std::to_string(v);
    return d;
  };
  auto count = [](const Shape& s) {
    std::size_t n = 1;
    for (int64_t v : s) n *= static_cast<std::size_t>(v);
    return n;
  };
  std::vector<float> a(count(a_shape)), b(count(b_shape));
  for (std::size_t i = 0; i < a.size(); ++i) a[i] = static_cast<float>(static_cast<int>(i * 7 % 13) - 6) * 0.125f;
  for (std::size_t i = 0; i < b.size(); ++i) b[i] = static_cast<float>(static_cast<int>(i * 5 % 11) - 5) * 0.25f;
  Both r;
  for (const char* type : {"float", "double"}) {
    const std::string g = fmt::format("(T[{}] a, T[{}] b) => (T[{}] y) {{ y = Einsum <equation = \"{}\"> (a, b) }}",
                                      dims(a_shape), dims(b_shape), out_dims, equation);
    std::string text = g;
    for (std::size_t p; (p = text.find("T[")) != std::string::npos;) text.replace(p, 1, type);
    RuntimeSessionOptions options;
    options.profile = true;
    RuntimeSession session(test::parse("<ir_version: 8, opset_import: [\"\" : 17]>\ng " + text), options);
    RuntimeContext context;
    if (std::string(type) == "float") {
      context.set("a", floats(a_shape, a));
      context.set("b", floats(b_shape, b));
      session.run(context);
      r.f32 = values<float>(context.get("y"));
      r.implementation = session.profile().nodes.at(0).implementation;
    } else {
      context.set("a", tensor<double>(ElementType::float64, a_shape, std::vector<double>(a.begin(), a.end())));
      context.set("b", tensor<double>(ElementType::float64, b_shape, std::vector<double>(b.begin(), b.end())));
      session.run(context);
      r.f64 = values<double>(context.get("y"));
    }
  }
  return r;
}

}  // namespace

// Operands read in place when their labels collapse to one stride per group, gathered otherwise;
// the output written in place or scattered: every combination against the float64 generic sum.
TEST_CASE("einsum_batched_matmul_path_matches_the_generic_sum_and_names_itself") {
  const KernelChoice choice =
      cpu_kernel_table().choose("", "Einsum", 17, ElementType::float32, host_cpu_features());
  REQUIRE(choice.def != nullptr);
  const bool packed = choice.def->implementation != "portable";
  struct Case {
    const char* equation;
    Shape a, b;
    const char* out;
    bool batched;
  };
  for (const Case& c : {Case{"bhqd,bhkd->bhqk", {1, 2, 5, 4}, {1, 2, 6, 4}, "1,2,5,6", true},
                        Case{"ij,jk->ki", {3, 4}, {4, 5}, "5,3", true},
                        Case{"bik,bkj->bji", {2, 3, 4}, {2, 4, 5}, "2,5,3", true},
                        Case{"...ij,...jk->...ik", {2, 3, 4}, {2, 4, 3}, "2,3,3", true},
                        Case{"abc,cd->abd", {2, 3, 4}, {4, 5}, "2,3,5", true},
                        Case{"ikj,kl->ijl", {2, 3, 4}, {3, 5}, "2,4,5", true},  // A's rows interleaved: gathered
                        Case{"kbi,bjk->bij", {3, 2, 4}, {2, 5, 3}, "2,4,5", true},  // batch not leading in A
                        Case{"ij,ij->ij", {3, 4}, {3, 4}, "3,4", true},   // batch labels only
                        Case{"ij,jk->i", {3, 4}, {4, 5}, "3", false},     // k summed in one operand
                        Case{"ii,ij->ij", {3, 3}, {3, 4}, "3,4", false},  // a diagonal
                        Case{"...ij,...jk->...ik", {2, 3, 4}, {1, 4, 3}, "2,3,3", false}}) {  // broadcast
    CAPTURE(c.equation);
    const Both r = run_both(c.equation, c.a, c.b, c.out);
    REQUIRE(r.f32.size() == r.f64.size());
    for (std::size_t i = 0; i < r.f32.size(); ++i) CHECK(r.f32[i] == doctest::Approx(r.f64[i]).epsilon(1e-5).scale(1.0));
    if (packed)
      CHECK(r.implementation == (c.batched ? "batched_matmul_" + choice.def->implementation : std::string("generic")));
  }
}

// The label sizes and strides are planned once per set of input shapes: one session fed shapes
// that switch between the batched path and the generic sum, and a mismatched run in between,
// must give each run its own result (a stale plan would reuse the previous sizes or path).
TEST_CASE("einsum_plan_follows_input_shapes_across_runs_of_one_session") {
  RuntimeSessionOptions options;
  options.profile = true;
  RuntimeSession session(test::parse("<ir_version: 8, opset_import: [\"\" : 17]>\ng (float[B,M,K] a, float[C,L,N] b) => "
                                     "(float[B,M,N] y) { y = Einsum <equation = \"...ij,...jk->...ik\"> (a, b) }"),
                         options);
  const KernelChoice choice = cpu_kernel_table().choose("", "Einsum", 17, ElementType::float32, host_cpu_features());
  REQUIRE(choice.def != nullptr);
  const bool packed = choice.def->implementation != "portable";
  struct Case {
    int64_t batch_a, batch_b, m, k, n;
    bool batched;  // a broadcast batch (1 against 2) takes the generic sum
  };
  int run_index = 0;
  for (const Case& c : {Case{2, 2, 3, 4, 5, true}, Case{2, 1, 3, 4, 5, false}, Case{1, 1, 7, 2, 3, true},
                        Case{3, 3, 1, 5, 2, true}, Case{2, 2, 3, 4, 5, true}}) {
    CAPTURE(run_index);
    const int64_t bt = std::max(c.batch_a, c.batch_b);
    const std::vector<float> a = iota(static_cast<std::size_t>(c.batch_a * c.m * c.k)),
                             b = iota(static_cast<std::size_t>(c.batch_b * c.k * c.n), 0.5f);
    RuntimeContext context;
    context.set("a", floats({c.batch_a, c.m, c.k}, a));
    context.set("b", floats({c.batch_b, c.k, c.n}, b));
    session.run(context);
    REQUIRE(context.get("y").shape() == Shape{bt, c.m, c.n});
    const std::vector<float> y = values<float>(context.get("y"));
    for (int64_t p = 0; p < bt; ++p)
      for (int64_t i = 0; i < c.m; ++i)
        for (int64_t j = 0; j < c.n; ++j) {
          double s = 0;
          for (int64_t q = 0; q < c.k; ++q)
            s += double(a[static_cast<std::size_t>(((c.batch_a == 1 ? 0 : p) * c.m + i) * c.k + q)]) *
                 double(b[static_cast<std::size_t>(((c.batch_b == 1 ? 0 : p) * c.k + q) * c.n + j)]);
          CHECK(y[static_cast<std::size_t>((p * c.m + i) * c.n + j)] == doctest::Approx(s).epsilon(1e-5));
        }
    if (packed)
      CHECK(session.profile().nodes.at(0).implementation ==
            (c.batched ? "batched_matmul_" + choice.def->implementation : std::string("generic")));
    session.reset_profile();
    ++run_index;
    // A mismatched depth after the first run: named, and the next run plans afresh.
    if (run_index == 1) {
      RuntimeContext bad;
      bad.set("a", floats({2, 3, 4}, iota(24)));
      bad.set("b", floats({2, 5, 2}, iota(20)));
      CHECK_THROWS_WITH_AS(session.run(bad), doctest::Contains("subscript 'j' has size 5 in input 1 [2, 5, 2] but 4 elsewhere"),
                           InputError);
    }
  }
}
