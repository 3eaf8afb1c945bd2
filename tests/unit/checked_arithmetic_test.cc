// Shape and size arithmetic at the int64 limits: the checked helpers themselves, then the
// operators whose output dims come from input values (Range, Tile, Reshape, Pad, Concat, Expand,
// ConstantOfShape, Conv, MaxPool) run through a real session. An overflow must reach the caller
// as an InputError naming the node, never as wrapped dims, a wrong result or UB.
#include <doctest/doctest.h>

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "checked_math.h"
#include "onnx_light/runtime/error.h"
#include "onnx_light/runtime/session.h"
#include "test_models.h"

using namespace onnx_light;
using namespace onnx_light::runtime;

namespace {

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
constexpr int64_t kTwo53 = int64_t{1} << 53;
constexpr int64_t kTwo62 = int64_t{1} << 62;

RuntimeSession session_of(const std::string& graph) {
  return RuntimeSession(test::parse("<ir_version: 8, opset_import: [\"\" : 17]>\ng " + graph));
}

template <typename T>
Tensor scalar(ElementType type, T value) {
  Tensor t(type, {});
  *t.data<T>() = value;
  return t;
}

Tensor int64_operand(const std::vector<int64_t>& values) {
  Tensor t(ElementType::int64, {static_cast<int64_t>(values.size())});
  std::copy(values.begin(), values.end(), t.data<int64_t>());
  return t;
}

template <typename T>
std::vector<T> values_of(const Tensor& t) {
  return std::vector<T>(t.data<T>(), t.data<T>() + t.element_count());
}

// The message of the InputError that `run` throws ("" and a failed check when it throws anything else).
template <typename F>
std::string input_error_of(F&& run) {
  try {
    run();
  } catch (const InputError& e) {
    return e.what();
  } catch (const std::exception& e) {
    FAIL_CHECK("expected InputError, got: " << std::string(e.what()));
    return "";
  }
  FAIL_CHECK("expected InputError, nothing was thrown");
  return "";
}

std::vector<int64_t> run_int64_range(int64_t start, int64_t limit, int64_t delta) {
  RuntimeSession session = session_of("(int64 s, int64 l, int64 d) => (int64[N] y) { y = Range(s, l, d) }");
  RuntimeContext context;
  context.set("s", scalar(ElementType::int64, start));
  context.set("l", scalar(ElementType::int64, limit));
  context.set("d", scalar(ElementType::int64, delta));
  session.run(context);
  return values_of<int64_t>(context.get("y"));
}

}  // namespace

TEST_CASE("checked_add and checked_sub: exact up to the int64 limits, InputError one past them") {
  CHECK(checked_add(kMax, 0, "x") == kMax);
  CHECK(checked_add(kMax - 1, 1, "x") == kMax);
  CHECK(checked_add(kMin, kMax, "x") == -1);
  CHECK_THROWS_WITH_AS(checked_add(kMax, 1, "the sum of dims"), doctest::Contains("the sum of dims overflows"), InputError);
  CHECK_THROWS_AS(checked_add(kMin, -1, "x"), InputError);
  CHECK(checked_sub(kMin + 1, 1, "x") == kMin);
  CHECK(checked_sub(-1, kMax, "x") == kMin);
  CHECK_THROWS_AS(checked_sub(kMin, 1, "x"), InputError);
  CHECK_THROWS_AS(checked_sub(0, kMin, "x"), InputError);
  CHECK_THROWS_WITH_AS(checked_sub(kMax, -1, "pads"), doctest::Contains("9223372036854775807 - -1"), InputError);
}

TEST_CASE("checked_mul: products that just fit, just overflow, zeros and signs") {
  // floor(sqrt(2^63 - 1)) = 3037000499.
  CHECK(checked_mul(3037000499, 3037000499, "x") == 9223372030926249001);
  CHECK_THROWS_WITH_AS(checked_mul(3037000500, 3037000500, "dim 0"),
                       doctest::Contains("dim 0 overflows 64-bit integers (3037000500 * 3037000500)"), InputError);
  CHECK(checked_mul(kMax, 1, "x") == kMax);
  CHECK_THROWS_AS(checked_mul(kMax, 2, "x"), InputError);
  CHECK(checked_mul(0, kMax, "x") == 0);
  CHECK(checked_mul(kMin, 0, "x") == 0);
  CHECK(checked_mul(kMin, 1, "x") == kMin);
  CHECK(checked_mul(-(int64_t{1} << 31), int64_t{1} << 32, "x") == kMin);
  CHECK_THROWS_AS(checked_mul(int64_t{1} << 31, int64_t{1} << 32, "x"), InputError);  // +2^63
  CHECK_THROWS_AS(checked_mul(kMin, -1, "x"), InputError);
  CHECK(checked_mul(kMax, -1, "x") == -kMax);
  CHECK(checked_mul(2, kTwo62 - 1, "x") == kMax - 1);
  CHECK_THROWS_AS(checked_mul(2, kTwo62, "x"), InputError);
}

TEST_CASE("checked_product: exact whatever the order, zero anywhere gives 0") {
  CHECK(checked_product(std::vector<int64_t>{}, "x") == 1);
  CHECK(checked_product(std::vector<int64_t>{kMax}, "x") == kMax);
  CHECK(checked_product(std::vector<int64_t>{kMin}, "x") == kMin);
  CHECK(checked_product(std::vector<int64_t>{2, 3, 7}, "x") == 42);
  CHECK(checked_product(std::vector<int64_t>{int64_t{1} << 31, int64_t{1} << 31, 1}, "x") == kTwo62);
  CHECK_THROWS_WITH_AS(checked_product(std::vector<int64_t>{kTwo62, 2}, "the element count"),
                       doctest::Contains("the element count overflows 64-bit integers (product of [4611686018427387904, 2])"),
                       InputError);
  // The partial product 2^62 * 2 is past INT64_MAX, the whole one is INT64_MIN: still exact.
  CHECK(checked_product(std::vector<int64_t>{kTwo62, 2, -1}, "x") == kMin);
  CHECK(checked_product(std::vector<int64_t>{-1, kTwo62, 2}, "x") == kMin);
  CHECK_THROWS_AS(checked_product(std::vector<int64_t>{kMin, -1}, "x"), InputError);
  CHECK(checked_product(std::vector<int64_t>{kMax, -1}, "x") == -kMax);
  // A zero anywhere: an empty tensor's count, however large the other dims.
  CHECK(checked_product(std::vector<int64_t>{kTwo62, kTwo62, 0}, "x") == 0);
  CHECK(checked_product(std::vector<int64_t>{0, kMax, kMax}, "x") == 0);
  CHECK_THROWS_AS(checked_product(std::vector<int64_t>{kMax, kMax, kMax}, "x"), InputError);
}

TEST_CASE("checked_element_count refuses negative dims; checked_byte_count refuses what cannot be addressed") {
  CHECK(checked_element_count(std::vector<int64_t>{}, "shape") == 1);
  CHECK(checked_element_count(std::vector<int64_t>{kMax}, "shape") == kMax);
  CHECK(checked_element_count(std::vector<int64_t>{kTwo62, 0}, "shape") == 0);
  CHECK_THROWS_WITH_AS(checked_element_count(std::vector<int64_t>{2, -1}, "output shape"),
                       doctest::Contains("dimension 1 is negative"), InputError);
  CHECK_THROWS_WITH_AS(checked_element_count(std::vector<int64_t>{int64_t{1} << 32, int64_t{1} << 32}, "output shape"),
                       doctest::Contains("[4294967296, 4294967296]"), InputError);
  CHECK(checked_byte_count(0, 8, "x") == 0);
  constexpr int64_t kMaxBytes = kMax - static_cast<int64_t>(kTensorAlignment);
  CHECK(checked_byte_count(kMaxBytes / 8, 8, "x") == kMaxBytes / 8 * 8);
  CHECK_THROWS_AS(checked_byte_count(kMaxBytes / 8 + 1, 8, "x"), InputError);
  CHECK_THROWS_WITH_AS(checked_byte_count(int64_t{1} << 61, 4, "tensor float"), doctest::Contains("too large to address"),
                       InputError);
  CHECK_THROWS_AS(checked_byte_count(-1, 4, "x"), InputError);
}

TEST_CASE("Range on int64 counts in integers: exact past 2^53 and up to INT64_MAX") {
  // In double, 2^53 + 3 - 2^53 rounds and the limit itself was produced.
  CHECK(run_int64_range(kTwo53, kTwo53 + 3, 1) == std::vector<int64_t>{kTwo53, kTwo53 + 1, kTwo53 + 2});
  // In double, limit and start were both 2^63 and the range was empty.
  std::vector<int64_t> top;
  for (int64_t v = 9223372036854775800; v < kMax; ++v) top.push_back(v);
  REQUIRE(top.size() == 7);
  CHECK(run_int64_range(9223372036854775800, kMax, 1) == top);
  std::vector<int64_t> top_down;
  for (int64_t v = kMax; v > 9223372036854775800; --v) top_down.push_back(v);
  CHECK(run_int64_range(kMax, 9223372036854775800, -1) == top_down);
  // limit - start is 2^64 - 1: counted without overflow, values reached without it.
  CHECK(run_int64_range(kMin, kMax, kTwo62) == std::vector<int64_t>{kMin, -kTwo62, 0, kTwo62});
  CHECK(run_int64_range(kMax, kMin, kMin) == std::vector<int64_t>{kMax, -1});
  CHECK(run_int64_range(10, 0, -3) == std::vector<int64_t>{10, 7, 4, 1});
  CHECK(run_int64_range(-5, 5, 5) == std::vector<int64_t>{-5, 0});
  CHECK(run_int64_range(0, 10, -1).empty());
  CHECK(run_int64_range(5, 5, 1).empty());
  CHECK(run_int64_range(kMax, kMin, 1).empty());
}

TEST_CASE("Range refuses delta 0 and counts that cannot be held, naming the node, before allocating") {
  const std::string zero = input_error_of([] { run_int64_range(0, 10, 0); });
  CHECK(zero.find("Range node") == 0);
  CHECK(zero.find("delta") != std::string::npos);
  // INT64_MAX elements of 8 bytes: past the address space, refused without asking the allocator.
  const std::string huge = input_error_of([] { run_int64_range(0, kMax, 1); });
  CHECK(huge.find("Range node") == 0);
  CHECK(huge.find("too large") != std::string::npos);
  // 2^64 - 1 elements: not even an int64 count.
  const std::string wider = input_error_of([] { run_int64_range(kMin, kMax, 1); });
  CHECK(wider.find("Range node") == 0);
  CHECK(wider.find("18446744073709551615") != std::string::npos);
}

TEST_CASE("Range on int32 and int16 is exact at the type's limits") {
  RuntimeSession s32 = session_of("(int32 s, int32 l, int32 d) => (int32[N] y) { y = Range(s, l, d) }");
  RuntimeContext c32;
  c32.set("s", scalar<int32_t>(ElementType::int32, 2147483640));
  c32.set("l", scalar<int32_t>(ElementType::int32, 2147483647));
  c32.set("d", scalar<int32_t>(ElementType::int32, 3));
  s32.run(c32);
  CHECK(values_of<int32_t>(c32.get("y")) == std::vector<int32_t>{2147483640, 2147483643, 2147483646});
  RuntimeSession s16 = session_of("(int16 s, int16 l, int16 d) => (int16[N] y) { y = Range(s, l, d) }");
  RuntimeContext c16;
  c16.set("s", scalar<int16_t>(ElementType::int16, 32767));
  c16.set("l", scalar<int16_t>(ElementType::int16, -32768));
  c16.set("d", scalar<int16_t>(ElementType::int16, -32768));
  s16.run(c16);
  CHECK(values_of<int16_t>(c16.get("y")) == std::vector<int16_t>{32767, -1});
}

TEST_CASE("Range on float counts in float, as ONNX's function body and numpy.arange do") {
  RuntimeSession session = session_of("(float s, float l, float d) => (float[N] y) { y = Range(s, l, d) }");
  auto run = [&](float start, float limit, float delta) {
    RuntimeContext context;
    context.set("s", scalar(ElementType::float32, start));
    context.set("l", scalar(ElementType::float32, limit));
    context.set("d", scalar(ElementType::float32, delta));
    session.run(context);
    return values_of<float>(context.get("y"));
  };
  // 0.1f / 0.01f is 10 in float and 10.0000001 in double (11 elements).
  CHECK(run(0.0f, 0.1f, 0.01f).size() == 10);
  CHECK(run(1.0f, 5.5f, 1.5f) == std::vector<float>{1.0f, 2.5f, 4.0f});
  CHECK(run(3.0f, 0.0f, -1.0f) == std::vector<float>{3.0f, 2.0f, 1.0f});
  CHECK(input_error_of([&] { run(0.0f, 1.0f, 0.0f); }).find("delta") != std::string::npos);
  CHECK(input_error_of([&] { run(0.0f, std::numeric_limits<float>::infinity(), 1.0f); }).find("Range node") == 0);
  CHECK(input_error_of([&] { run(0.0f, 1.0f, std::numeric_limits<float>::quiet_NaN()); }).find("Range node") == 0);
}

TEST_CASE("Tile refuses output dims and sizes past int64 or the address space, and negative repeats") {
  RuntimeSession session = session_of("(float[4] x, int64[1] r) => (float[M] y) { y = Tile(x, r) }");
  auto run = [&](int64_t repeats, const Shape& x_shape = {4}) {
    RuntimeContext context;
    context.set("x", Tensor(ElementType::float32, x_shape));
    context.set("r", int64_operand({repeats}));
    session.run(context);
    return context.get("y").shape();
  };
  // 4 * 2^62 wrapped to 0 and the run "succeeded" with float[0].
  const std::string wrapped = input_error_of([&] { run(kTwo62); });
  CHECK(wrapped.find("Tile node") == 0);
  CHECK(wrapped.find("4 * 4611686018427387904") != std::string::npos);
  CHECK(input_error_of([&] { run(int64_t{1} << 61); }).find("overflows") != std::string::npos);
  // 2^62 elements fit int64 but not 4 bytes each in an address space.
  const std::string bytes = input_error_of([&] { run(int64_t{1} << 60); });
  CHECK(bytes.find("Tile node") == 0);
  CHECK(bytes.find("too large to address") != std::string::npos);
  CHECK(input_error_of([&] { run(-1); }).find("non-negative") != std::string::npos);
  CHECK(run(3) == Shape{12});
}

TEST_CASE("Reshape's product of known dims is checked, not wrapped") {
  RuntimeSession session = session_of("(float[N] x, int64[3] s) => (float[A, B, C] y) { y = Reshape(x, s) }");
  RuntimeSession allow_zero =
      session_of("(float[N] x, int64[3] s) => (float[A, B, C] y) { y = Reshape <allowzero = 1> (x, s) }");
  auto run = [&](const Shape& x_shape, const std::vector<int64_t>& shape, RuntimeSession* s = nullptr) {
    RuntimeContext context;
    context.set("x", Tensor(ElementType::float32, x_shape));
    context.set("s", int64_operand(shape));
    (s != nullptr ? *s : session).run(context);
    return context.get("y").shape();
  };
  // (2^32 + 1)(2^32 - 1) = 2^64 - 1 wrapped to -1, and the -1 was "inferred" as -4.
  const std::string wrapped = input_error_of([&] { run({4}, {4294967297, 4294967295, -1}); });
  CHECK(wrapped.find("Reshape node") == 0);
  CHECK(wrapped.find("overflows") != std::string::npos);
  CHECK(input_error_of([&] { run({4}, {kTwo62, 4, -1}); }).find("overflows") != std::string::npos);
  // An empty tensor may take huge dims beside a zero: that count is 0, not an overflow.
  CHECK(run({0}, {kTwo62, 4, 0}, &allow_zero) == Shape{kTwo62, 4, 0});
  CHECK(input_error_of([&] { run({0}, {kTwo62, 4, -1}, &allow_zero); }).find("overflows") != std::string::npos);
  CHECK(run({12}, {2, -1, 3}) == Shape{2, 2, 3});
}

TEST_CASE("Pad, Concat, Expand and ConstantOfShape report overflowing output dims as InputError naming the node") {
  {
    RuntimeSession pad = session_of("(float[2] x, int64[2] p) => (float[M] y) { y = Pad(x, p) }");
    RuntimeContext context;
    context.set("x", Tensor(ElementType::float32, {2}));
    context.set("p", int64_operand({kMax, 1}));
    const std::string message = input_error_of([&] { pad.run(context); });
    CHECK(message.find("Pad node") == 0);
    CHECK(message.find("overflows") != std::string::npos);
  }
  {
    RuntimeSession concat = session_of("(float[A, 0] x) => (float[B, 0] y) { y = Concat <axis = 0> (x, x, x) }");
    RuntimeContext context;
    context.set("x", Tensor(ElementType::float32, {kTwo62, 0}));
    const std::string message = input_error_of([&] { concat.run(context); });
    CHECK(message.find("Concat node") == 0);
    CHECK(message.find("overflows") != std::string::npos);
  }
  {
    RuntimeSession expand = session_of("(float[1] x, int64[2] s) => (float[A, B] y) { y = Expand(x, s) }");
    RuntimeContext context;
    context.set("x", Tensor(ElementType::float32, {1}));
    context.set("s", int64_operand({int64_t{1} << 32, int64_t{1} << 32}));
    const std::string message = input_error_of([&] { expand.run(context); });
    CHECK(message.find("Expand node") == 0);
    CHECK(message.find("[4294967296, 4294967296]") != std::string::npos);
  }
  {
    RuntimeSession constant = session_of("(int64[2] s) => (float[A, B] y) { y = ConstantOfShape(s) }");
    RuntimeContext context;
    context.set("s", int64_operand({kTwo62, 4}));
    const std::string message = input_error_of([&] { constant.run(context); });
    CHECK(message.find("ConstantOfShape node") == 0);
    CHECK(message.find("overflows") != std::string::npos);
  }
}

TEST_CASE("Conv and MaxPool geometry with huge pads or dilations is an InputError, not wrapped output dims") {
  {
    RuntimeSession conv = session_of(
        "(float[1, 1, 3] x, float[1, 1, 1] w) => (float[1, 1, M] y) { y = Conv <pads = [9223372036854775807, 0]> (x, w) }");
    RuntimeContext context;
    context.set("x", Tensor(ElementType::float32, {1, 1, 3}));
    context.set("w", Tensor(ElementType::float32, {1, 1, 1}));
    const std::string message = input_error_of([&] { conv.run(context); });
    CHECK(message.find("Conv node") == 0);
    CHECK(message.find("overflows") != std::string::npos);
  }
  {
    RuntimeSession pool = session_of(
        "(float[1, 1, 3] x) => (float[1, 1, M] y) "
        "{ y = MaxPool <kernel_shape = [3], dilations = [4611686018427387904]> (x) }");
    RuntimeContext context;
    context.set("x", Tensor(ElementType::float32, {1, 1, 3}));
    const std::string message = input_error_of([&] { pool.run(context); });
    CHECK(message.find("MaxPool node") == 0);
    CHECK(message.find("overflows") != std::string::npos);
  }
}

TEST_CASE("Pools with strides near INT64_MAX are valid models: one window, no overflow on the way") {
  // ceil((in + stride - 1) / stride) and ceil_mode's (span + stride - 1) / stride wrapped here.
  for (const char* attributes : {"kernel_shape = [1], strides = [9223372036854775807], ceil_mode = 1",
                                 "kernel_shape = [1], strides = [9223372036854775807], auto_pad = \"SAME_UPPER\""}) {
    const std::string attribute_list = attributes;
    CAPTURE(attribute_list);
    RuntimeSession pool = session_of("(float[1, 1, 3] x) => (float[1, 1, M] y) { y = MaxPool <" + attribute_list + "> (x) }");
    RuntimeContext context;
    Tensor x(ElementType::float32, {1, 1, 3});
    for (int i = 0; i < 3; ++i) x.data<float>()[i] = static_cast<float>(i + 5);
    context.set("x", std::move(x));
    pool.run(context);
    CHECK(context.get("y").shape() == Shape{1, 1, 1});
    CHECK(values_of<float>(context.get("y")) == std::vector<float>{5.0f});
  }
}
