#include "onnx_light/runtime/tensor.h"

#include <doctest/doctest.h>

#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "onnx_light/runtime/error.h"
#include "tensor_memory.h"

using onnx_light::InvalidValueError;
using onnx_light::runtime::bitwise_equal;
using onnx_light::runtime::ElementType;
using onnx_light::runtime::kTensorAlignment;
using onnx_light::runtime::Shape;
using onnx_light::runtime::shape_element_count;
using onnx_light::runtime::shape_to_string;
using onnx_light::runtime::supported_element_types;
using onnx_light::runtime::Tensor;

namespace {

std::uintptr_t address(const void* p) { return reinterpret_cast<std::uintptr_t>(p); }

std::vector<std::byte> iota_bytes(std::size_t n) {
  std::vector<std::byte> bytes(n);
  for (std::size_t i = 0; i < n; ++i) bytes[i] = static_cast<std::byte>(i * 7 + 1);
  return bytes;
}

}  // namespace

TEST_CASE("tensor: shape_element_count of scalar, vector, and shapes with a zero dimension") {
  CHECK(shape_element_count(Shape{}) == 1);
  CHECK(shape_element_count(Shape{5}) == 5);
  CHECK(shape_element_count(Shape{2, 3, 4}) == 24);
  CHECK(shape_element_count(Shape{3, 0, 2}) == 0);
  // A zero dimension empties the tensor even when the others would overflow.
  CHECK(shape_element_count(Shape{int64_t{1} << 62, int64_t{1} << 62, 0}) == 0);
}

TEST_CASE("tensor: shape_element_count rejects negative dimensions and 64-bit overflow") {
  CHECK_THROWS_AS(shape_element_count(Shape{2, -1}), InvalidValueError);
  CHECK_THROWS_WITH_AS(shape_element_count(Shape{2, -1}), doctest::Contains("negative"), InvalidValueError);
  CHECK_THROWS_WITH_AS(shape_element_count(Shape{int64_t{1} << 32, int64_t{1} << 32}), doctest::Contains("overflow"),
                       InvalidValueError);
  CHECK(shape_element_count(Shape{int64_t{1} << 31, int64_t{1} << 31}) == int64_t{1} << 62);
  CHECK(shape_element_count(Shape{std::numeric_limits<int64_t>::max()}) == std::numeric_limits<int64_t>::max());
  CHECK_THROWS_AS(shape_element_count(Shape{std::numeric_limits<int64_t>::max(), 2}), InvalidValueError);
}

TEST_CASE("tensor: shape_to_string and describe") {
  CHECK(shape_to_string(Shape{}) == "[]");
  CHECK(shape_to_string(Shape{2, 3, 4}) == "[2, 3, 4]");
  CHECK(Tensor(ElementType::float32, {2, 3}).describe() == "float[2, 3]");
  CHECK(Tensor(ElementType::int64, {}).describe() == "int64[]");
  CHECK(Tensor(ElementType::boolean, {0}).describe() == "bool[0]");
}

TEST_CASE("tensor: default-constructed tensor is empty, not a view, has no data") {
  const Tensor t;
  CHECK(t.empty());
  CHECK_FALSE(t.is_view());
  CHECK_FALSE(t.exclusively_owned());
  CHECK(t.element_count() == 0);
  CHECK(t.byte_size() == 0);
  CHECK(t.raw_data() == nullptr);
}

TEST_CASE("tensor: owned storage is zeroed and 64-byte aligned for every type and odd sizes") {
  for (const ElementType type : supported_element_types()) {
    for (const int64_t n : {0, 1, 3, 63, 64, 65, 1000}) {
      CAPTURE(static_cast<int>(type));
      CAPTURE(n);
      const Tensor t(type, {n});
      REQUIRE(t.raw_data() != nullptr);
      CHECK(address(t.raw_data()) % kTensorAlignment == 0);
      CHECK(t.element_count() == n);
      CHECK(t.byte_size() == static_cast<std::size_t>(n) * onnx_light::runtime::element_size(type));
      CHECK_FALSE(t.is_view());
      CHECK(t.exclusively_owned());
      for (const std::byte b : t.bytes()) REQUIRE(b == std::byte{0});
    }
  }
}

TEST_CASE("tensor: storage of 2 MiB and more is zeroed and aligned to the huge page size") {
  // Just below, at and above the threshold: only blocks of at least kHugePageBytes get the
  // 2 MiB alignment (they may then sit on transparent huge pages); all stay zeroed.
  const int64_t floats_at = static_cast<int64_t>(onnx_light::runtime::kHugePageBytes / sizeof(float));
  for (const int64_t n : {floats_at - 16, floats_at, 3 * floats_at + 5}) {
    CAPTURE(n);
    const Tensor t(ElementType::float32, {n});
    CHECK(address(t.raw_data()) % kTensorAlignment == 0);
    if (n >= floats_at) CHECK(address(t.raw_data()) % onnx_light::runtime::kHugePageBytes == 0);
    bool zero = true;
    for (const std::byte b : t.bytes()) zero = zero && b == std::byte{0};
    CHECK(zero);
  }
}

TEST_CASE("tensor: 0-d tensor holds one element") {
  Tensor t(ElementType::float64, {});
  CHECK(t.rank() == 0);
  CHECK(t.element_count() == 1);
  CHECK(t.byte_size() == 8);
  t.data<double>()[0] = 2.5;
  CHECK(t.data<double>()[0] == 2.5);
}

TEST_CASE("tensor: string, undefined and out-of-range element types cannot be held") {
  CHECK_THROWS_WITH_AS(Tensor(ElementType::string, {2}), doctest::Contains("string"), InvalidValueError);
  CHECK_THROWS_AS(Tensor(ElementType::undefined, {2}), InvalidValueError);
  CHECK_THROWS_AS(Tensor(static_cast<ElementType>(42), {2}), InvalidValueError);
  std::array<std::byte, 8> buffer{};
  CHECK_THROWS_AS(Tensor::borrow(ElementType::string, {1}, buffer.data()), InvalidValueError);
}

TEST_CASE("tensor: negative dims and byte sizes beyond the address space throw InvalidValueError, not bad_alloc") {
  CHECK_THROWS_AS(Tensor(ElementType::float32, {-1}), InvalidValueError);
  CHECK_THROWS_WITH_AS(Tensor(ElementType::float32, {int64_t{1} << 62}), doctest::Contains("too large"),
                       InvalidValueError);
  CHECK_THROWS_AS(Tensor(ElementType::float64, {int64_t{1} << 60}), InvalidValueError);
}

TEST_CASE("tensor: from_bytes copies the bytes and rejects a size mismatch") {
  auto bytes = iota_bytes(24);
  Tensor t = Tensor::from_bytes(ElementType::int32, {2, 3}, bytes);
  CHECK(address(t.raw_data()) % kTensorAlignment == 0);
  CHECK(std::memcmp(t.raw_data(), bytes.data(), 24) == 0);
  bytes[0] = std::byte{0xFF};
  CHECK(t.bytes()[0] == std::byte{1});  // independent of the source

  CHECK_THROWS_WITH_AS(Tensor::from_bytes(ElementType::int32, {2, 3}, std::span(bytes).first(23)),
                       doctest::Contains("needs 24 bytes but 23"), InvalidValueError);
  CHECK_THROWS_AS(Tensor::from_bytes(ElementType::int32, {2, 3}, iota_bytes(25)), InvalidValueError);
  CHECK(Tensor::from_bytes(ElementType::int8, {0}, {}).element_count() == 0);
}

TEST_CASE("tensor: a borrowed view aliases caller memory and does not own it") {
  alignas(8) std::array<float, 6> buffer{1, 2, 3, 4, 5, 6};
  Tensor view = Tensor::borrow(ElementType::float32, {2, 3}, buffer.data());
  CHECK(view.is_view());
  CHECK_FALSE(view.exclusively_owned());
  CHECK(view.raw_data() == buffer.data());
  CHECK(view.data<float>()[4] == 5.0f);
  view.data<float>()[0] = 42.0f;
  CHECK(buffer[0] == 42.0f);
  buffer[5] = -1.0f;
  CHECK(view.data<float>()[5] == -1.0f);

  const Tensor copy = view;  // copying a view is another view of the same memory
  CHECK(copy.is_view());
  CHECK(copy.raw_data() == buffer.data());
}

TEST_CASE("tensor: borrow rejects a null pointer with elements and a misaligned pointer") {
  CHECK_THROWS_WITH_AS(Tensor::borrow(ElementType::float32, {2}, nullptr), doctest::Contains("null"),
                       InvalidValueError);
  const Tensor empty_view = Tensor::borrow(ElementType::float32, {0}, nullptr);
  CHECK(empty_view.element_count() == 0);
  CHECK_FALSE(empty_view.empty());

  alignas(8) std::array<std::byte, 32> buffer{};
  CHECK_THROWS_WITH_AS(Tensor::borrow(ElementType::float32, {2}, buffer.data() + 2), doctest::Contains("aligned"),
                       InvalidValueError);
  CHECK_THROWS_AS(Tensor::borrow(ElementType::int64, {2}, buffer.data() + 4), InvalidValueError);
  // One-byte types have no alignment requirement.
  CHECK(Tensor::borrow(ElementType::uint8, {2}, buffer.data() + 3).is_view());
  CHECK(Tensor::borrow(ElementType::float16, {2}, buffer.data() + 2).is_view());
}

TEST_CASE("tensor: clone of a view is an owned, aligned deep copy") {
  std::array<int16_t, 4> buffer{1, -2, 3, -4};
  const Tensor view = Tensor::borrow(ElementType::int16, {4}, buffer.data());
  Tensor copy = view.clone();
  CHECK_FALSE(copy.is_view());
  CHECK(copy.exclusively_owned());
  CHECK(address(copy.raw_data()) % kTensorAlignment == 0);
  CHECK(bitwise_equal(copy, view));
  buffer[0] = 99;
  CHECK(copy.data<int16_t>()[0] == 1);
  CHECK_FALSE(bitwise_equal(copy, view));
}

TEST_CASE("tensor: clone of an owned tensor does not share storage; copies do") {
  Tensor a(ElementType::int32, {3});
  a.data<int32_t>()[1] = 7;
  const Tensor shared = a;
  CHECK_FALSE(a.exclusively_owned());
  CHECK(shared.raw_data() == a.raw_data());
  Tensor deep = a.clone();
  CHECK(deep.raw_data() != a.raw_data());
  CHECK(deep.exclusively_owned());
  a.data<int32_t>()[1] = 8;
  CHECK(deep.data<int32_t>()[1] == 7);
  CHECK(shared.data<int32_t>()[1] == 8);
  CHECK(Tensor().clone().empty());
}

TEST_CASE("tensor: reshaped shares storage and requires the same element count") {
  Tensor a(ElementType::float32, {2, 3});
  const Tensor b = a.reshaped({3, 2});
  CHECK(b.raw_data() == a.raw_data());
  CHECK(b.shape() == Shape{3, 2});
  CHECK(a.shape() == Shape{2, 3});
  CHECK(a.reshaped({6}).element_count() == 6);
  CHECK_THROWS_WITH_AS(a.reshaped({4, 2}), doctest::Contains("cannot reshape float[2, 3]"), InvalidValueError);
  CHECK_THROWS_AS(a.reshaped({-6}), InvalidValueError);
  CHECK_THROWS_AS(Tensor().reshaped({}), InvalidValueError);

  std::array<float, 6> buffer{};
  CHECK(Tensor::borrow(ElementType::float32, {6}, buffer.data()).reshaped({2, 3}).is_view());
  CHECK(Tensor(ElementType::int8, {}).reshaped({1, 1}).shape() == Shape{1, 1});
}

TEST_CASE("tensor: bitwise_equal compares type, shape and bytes (NaN equals itself, -0 differs from +0)") {
  Tensor a(ElementType::float32, {2});
  Tensor b(ElementType::float32, {2});
  CHECK(bitwise_equal(a, b));
  CHECK_FALSE(bitwise_equal(a, Tensor(ElementType::int32, {2})));
  CHECK_FALSE(bitwise_equal(a, Tensor(ElementType::float32, {2, 1})));
  CHECK_FALSE(bitwise_equal(a, Tensor(ElementType::float32, {1})));

  a.data<float>()[0] = std::numeric_limits<float>::quiet_NaN();
  b.data<float>()[0] = std::numeric_limits<float>::quiet_NaN();
  CHECK(bitwise_equal(a, b));
  b.data<float>()[1] = -0.0f;
  CHECK_FALSE(bitwise_equal(a, b));
  CHECK(bitwise_equal(Tensor(), Tensor()));
  CHECK(bitwise_equal(Tensor(ElementType::int8, {0, 3}), Tensor(ElementType::int8, {0, 3})));
  CHECK_FALSE(bitwise_equal(Tensor(ElementType::int8, {0, 3}), Tensor(ElementType::int8, {3, 0})));
}
