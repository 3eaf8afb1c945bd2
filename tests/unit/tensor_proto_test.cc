#include "onnx_light/runtime/tensor_proto.h"

#include <doctest/doctest.h>

#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "onnx_light/runtime/error.h"

using onnx_light::InvalidValueError;
using onnx_light::ModelError;
using onnx_light::runtime::bitwise_equal;
using onnx_light::runtime::element_type_name;
using onnx_light::runtime::ElementType;
using onnx_light::runtime::kTensorAlignment;
using onnx_light::runtime::Shape;
using onnx_light::runtime::supported_element_types;
using onnx_light::runtime::Tensor;
using onnx_light::runtime::tensor_from_proto;
using onnx_light::runtime::tensor_to_proto;

namespace {

// Distinct bytes in every position; bool bytes stay 0/1 so the tensor is valid.
Tensor proto_pattern_tensor(ElementType type, Shape shape) {
  Tensor t(type, std::move(shape));
  auto bytes = t.mutable_bytes();
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    bytes[i] = type == ElementType::boolean ? static_cast<std::byte>(i % 3 == 0) : static_cast<std::byte>(i * 37 + 11);
  }
  return t;
}

template <typename T>
Tensor make(ElementType type, Shape shape, std::vector<T> values) {
  Tensor t(type, std::move(shape));
  REQUIRE(t.byte_size() == values.size() * sizeof(T));
  std::memcpy(t.raw_data(), values.data(), t.byte_size());
  return t;
}

onnx::TensorProto proto_of(ElementType type, Shape dims, const std::string& name = "w") {
  onnx::TensorProto proto;
  proto.set_name(name);
  proto.set_data_type(static_cast<int32_t>(type));
  for (const int64_t d : dims) proto.add_dims(d);
  return proto;
}

}  // namespace

TEST_CASE("tensor_proto: every supported element type round-trips through raw_data bit-exactly") {
  for (const ElementType type : supported_element_types()) {
    for (const Shape& shape : {Shape{}, Shape{5}, Shape{2, 3}, Shape{0}, Shape{2, 0, 3}}) {
      CAPTURE(element_type_name(type));
      CAPTURE(shape.size());
      const Tensor original = proto_pattern_tensor(type, shape);
      const onnx::TensorProto proto = tensor_to_proto(original, "x");
      CHECK(proto.name() == "x");
      CHECK(proto.data_type() == static_cast<int32_t>(type));
      CHECK(proto.dims_size() == static_cast<int>(shape.size()));
      CHECK(proto.has_raw_data());
      CHECK(proto.raw_data().size() == original.byte_size());

      // Through the wire format too, so that dims and an empty raw_data survive serialisation.
      onnx::TensorProto parsed;
      REQUIRE(parsed.ParseFromString(proto.SerializeAsString()));
      const Tensor back = tensor_from_proto(parsed);
      CHECK(bitwise_equal(back, original));
      CHECK_FALSE(back.is_view());
      CHECK(reinterpret_cast<std::uintptr_t>(back.raw_data()) % kTensorAlignment == 0);
    }
  }
}

TEST_CASE("tensor_proto: complex64 round-trips through raw_data and reads (re, im) pairs from float_data") {
  const Tensor original = proto_pattern_tensor(ElementType::complex64, {3});
  CHECK(bitwise_equal(tensor_from_proto(tensor_to_proto(original)), original));

  auto proto = proto_of(ElementType::complex64, {2});
  for (const float v : {1.0f, -1.0f, 2.5f, 0.0f}) proto.add_float_data(v);
  CHECK(bitwise_equal(tensor_from_proto(proto), make<float>(ElementType::complex64, {2}, {1.0f, -1.0f, 2.5f, 0.0f})));
  proto.mutable_float_data()->RemoveLast();
  CHECK_THROWS_WITH_AS(tensor_from_proto(proto), doctest::Contains("float_data has 3 values but complex64[2] needs 4"),
                       ModelError);
}

TEST_CASE("tensor_proto: tensor_to_proto leaves the name unset when empty and refuses an undefined tensor") {
  const auto proto = tensor_to_proto(Tensor(ElementType::int8, {1}));
  CHECK_FALSE(proto.has_name());
  CHECK_THROWS_AS(tensor_to_proto(Tensor(), "nothing"), InvalidValueError);
}

TEST_CASE("tensor_proto: typed fields of every supported type give the same bytes as raw_data") {
  struct Case {
    ElementType type;
    onnx::TensorProto proto;
    Tensor expected;
  };
  std::vector<Case> cases;
  {
    auto p = proto_of(ElementType::float32, {3});
    for (const float v : {1.5f, -2.0f, std::numeric_limits<float>::infinity()}) p.add_float_data(v);
    cases.push_back({ElementType::float32, p,
                     make<float>(ElementType::float32, {3}, {1.5f, -2.0f, std::numeric_limits<float>::infinity()})});
  }
  {
    auto p = proto_of(ElementType::float64, {2});
    p.add_double_data(0.1);
    p.add_double_data(-1e300);
    cases.push_back({ElementType::float64, p, make<double>(ElementType::float64, {2}, {0.1, -1e300})});
  }
  {
    auto p = proto_of(ElementType::int32, {2});
    p.add_int32_data(std::numeric_limits<int32_t>::min());
    p.add_int32_data(std::numeric_limits<int32_t>::max());
    cases.push_back({ElementType::int32, p,
                     make<int32_t>(ElementType::int32, {2},
                                   {std::numeric_limits<int32_t>::min(), std::numeric_limits<int32_t>::max()})});
  }
  {
    auto p = proto_of(ElementType::int64, {2});
    p.add_int64_data(std::numeric_limits<int64_t>::min());
    p.add_int64_data(42);
    cases.push_back(
        {ElementType::int64, p, make<int64_t>(ElementType::int64, {2}, {std::numeric_limits<int64_t>::min(), 42})});
  }
  {
    auto p = proto_of(ElementType::int8, {2});
    p.add_int32_data(-128);
    p.add_int32_data(127);
    cases.push_back({ElementType::int8, p, make<int8_t>(ElementType::int8, {2}, {-128, 127})});
  }
  {
    auto p = proto_of(ElementType::uint8, {2});
    p.add_int32_data(0);
    p.add_int32_data(255);
    cases.push_back({ElementType::uint8, p, make<uint8_t>(ElementType::uint8, {2}, {0, 255})});
  }
  {
    auto p = proto_of(ElementType::int16, {2});
    p.add_int32_data(-32768);
    p.add_int32_data(32767);
    cases.push_back({ElementType::int16, p, make<int16_t>(ElementType::int16, {2}, {-32768, 32767})});
  }
  {
    auto p = proto_of(ElementType::uint16, {2});
    p.add_int32_data(0);
    p.add_int32_data(65535);
    cases.push_back({ElementType::uint16, p, make<uint16_t>(ElementType::uint16, {2}, {0, 65535})});
  }
  {
    // float16 travels as bit patterns: 1.0 = 0x3C00, -2.0 = 0xC000.
    auto p = proto_of(ElementType::float16, {2});
    p.add_int32_data(0x3C00);
    p.add_int32_data(0xC000);
    cases.push_back({ElementType::float16, p, make<uint16_t>(ElementType::float16, {2}, {0x3C00, 0xC000})});
  }
  {
    // bfloat16 1.0 = 0x3F80, largest pattern 0xFFFF (a NaN) must survive.
    auto p = proto_of(ElementType::bfloat16, {2});
    p.add_int32_data(0x3F80);
    p.add_int32_data(0xFFFF);
    cases.push_back({ElementType::bfloat16, p, make<uint16_t>(ElementType::bfloat16, {2}, {0x3F80, 0xFFFF})});
  }
  {
    auto p = proto_of(ElementType::uint32, {2});
    p.add_uint64_data(0);
    p.add_uint64_data(std::numeric_limits<uint32_t>::max());
    cases.push_back(
        {ElementType::uint32, p, make<uint32_t>(ElementType::uint32, {2}, {0, std::numeric_limits<uint32_t>::max()})});
  }
  {
    auto p = proto_of(ElementType::uint64, {1});
    p.add_uint64_data(std::numeric_limits<uint64_t>::max());
    cases.push_back(
        {ElementType::uint64, p, make<uint64_t>(ElementType::uint64, {1}, {std::numeric_limits<uint64_t>::max()})});
  }
  {
    auto p = proto_of(ElementType::boolean, {3});
    p.add_int32_data(0);
    p.add_int32_data(1);
    p.add_int32_data(1);
    cases.push_back({ElementType::boolean, p, make<uint8_t>(ElementType::boolean, {3}, {0, 1, 1})});
  }

  REQUIRE(cases.size() == supported_element_types().size());
  for (const auto& c : cases) {
    CAPTURE(element_type_name(c.type));
    const Tensor from_typed = tensor_from_proto(c.proto);
    CHECK(bitwise_equal(from_typed, c.expected));
    CHECK(bitwise_equal(tensor_from_proto(tensor_to_proto(from_typed)), c.expected));
  }
}

TEST_CASE("tensor_proto: bool int32_data maps any non-zero value to 1") {
  auto p = proto_of(ElementType::boolean, {3});
  p.add_int32_data(0);
  p.add_int32_data(-5);
  p.add_int32_data(2);
  CHECK(bitwise_equal(tensor_from_proto(p), make<uint8_t>(ElementType::boolean, {3}, {0, 1, 1})));
}

TEST_CASE("tensor_proto: 0-d tensor from a single typed value, empty tensor from no data") {
  auto scalar = proto_of(ElementType::int64, {});
  scalar.add_int64_data(-7);
  const Tensor t = tensor_from_proto(scalar);
  CHECK(t.rank() == 0);
  CHECK(t.data<int64_t>()[0] == -7);

  const Tensor empty = tensor_from_proto(proto_of(ElementType::float32, {0, 4}));
  CHECK(empty.element_count() == 0);
  CHECK(empty.shape() == Shape{0, 4});
}

TEST_CASE("tensor_proto: typed values out of range for the narrow type are refused with the index") {
  auto int8 = proto_of(ElementType::int8, {2}, "q");
  int8.add_int32_data(1);
  int8.add_int32_data(128);
  CHECK_THROWS_WITH_AS(tensor_from_proto(int8), doctest::Contains("tensor 'q': int32_data[1] = 128 is out of range for"),
                       ModelError);

  auto uint8 = proto_of(ElementType::uint8, {1});
  uint8.add_int32_data(-1);
  CHECK_THROWS_AS(tensor_from_proto(uint8), ModelError);

  auto uint16 = proto_of(ElementType::uint16, {1});
  uint16.add_int32_data(65536);
  CHECK_THROWS_AS(tensor_from_proto(uint16), ModelError);

  auto uint32 = proto_of(ElementType::uint32, {1});
  uint32.add_uint64_data(uint64_t{1} << 32);
  CHECK_THROWS_WITH_AS(tensor_from_proto(uint32), doctest::Contains("uint64_data[0]"), ModelError);

  auto half = proto_of(ElementType::float16, {2});
  half.add_int32_data(0);
  half.add_int32_data(0x10000);
  CHECK_THROWS_WITH_AS(tensor_from_proto(half), doctest::Contains("not a 16-bit pattern"), ModelError);

  auto bf = proto_of(ElementType::bfloat16, {1});
  bf.add_int32_data(-1);
  CHECK_THROWS_AS(tensor_from_proto(bf), ModelError);
}

TEST_CASE("tensor_proto: typed-field count mismatch (short and oversized) names the tensor and the field") {
  auto short_proto = proto_of(ElementType::float32, {2, 3}, "weights");
  for (int i = 0; i < 5; ++i) short_proto.add_float_data(1.0f);
  CHECK_THROWS_WITH_AS(tensor_from_proto(short_proto),
                       doctest::Contains("tensor 'weights': float_data has 5 values but float[2, 3] needs 6"),
                       ModelError);

  auto long_proto = proto_of(ElementType::int8, {2});
  for (int i = 0; i < 3; ++i) long_proto.add_int32_data(1);
  CHECK_THROWS_WITH_AS(tensor_from_proto(long_proto), doctest::Contains("oversized"), ModelError);
}

TEST_CASE("tensor_proto: raw_data shorter or longer than the shape needs is refused") {
  auto p = proto_of(ElementType::int32, {3}, "bias");
  p.set_raw_data(std::string(11, '\0'));
  CHECK_THROWS_WITH_AS(tensor_from_proto(p),
                       doctest::Contains("tensor 'bias': raw_data has 11 bytes but int32[3] needs 12 bytes"),
                       ModelError);
  p.set_raw_data(std::string(13, '\0'));
  CHECK_THROWS_WITH_AS(tensor_from_proto(p), doctest::Contains("oversized"), ModelError);

  // An explicitly empty raw_data is data of length zero, not "no data".
  auto scalar = proto_of(ElementType::float32, {});
  scalar.set_raw_data("");
  CHECK_THROWS_WITH_AS(tensor_from_proto(scalar), doctest::Contains("raw_data has 0 bytes"), ModelError);
}

TEST_CASE("tensor_proto: a non-empty tensor without any data is refused") {
  CHECK_THROWS_WITH_AS(tensor_from_proto(proto_of(ElementType::float32, {}, "s")),
                       doctest::Contains("tensor 's': has no data"), ModelError);
  CHECK_THROWS_AS(tensor_from_proto(proto_of(ElementType::float32, {4})), ModelError);
}

TEST_CASE("tensor_proto: huge dims with little data fail on size, before any allocation") {
  auto p = proto_of(ElementType::float64, {int64_t{1} << 30, int64_t{1} << 10}, "big");
  p.set_raw_data(std::string(16, '\0'));
  CHECK_THROWS_WITH_AS(tensor_from_proto(p), doctest::Contains("data is short"), ModelError);

  auto typed = proto_of(ElementType::float32, {int64_t{1} << 50});
  typed.add_float_data(1.0f);
  CHECK_THROWS_AS(tensor_from_proto(typed), ModelError);

  auto overflow = proto_of(ElementType::float32, {int64_t{1} << 40, int64_t{1} << 40}, "ovf");
  CHECK_THROWS_WITH_AS(tensor_from_proto(overflow), doctest::Contains("tensor 'ovf'"), ModelError);

  auto bytes_overflow = proto_of(ElementType::float64, {int64_t{1} << 61});
  CHECK_THROWS_WITH_AS(tensor_from_proto(bytes_overflow), doctest::Contains("too large"), ModelError);
}

TEST_CASE("tensor_proto: negative dims are refused with their index") {
  auto p = proto_of(ElementType::float32, {2, -3}, "neg");
  CHECK_THROWS_WITH_AS(tensor_from_proto(p), doctest::Contains("tensor 'neg': dims[1] is negative (-3)"), ModelError);
}

TEST_CASE("tensor_proto: external data without a model directory is refused, by data_location or by entries") {
  auto p = proto_of(ElementType::float32, {1}, "ext");
  p.clear_raw_data();
  p.clear_float_data();
  p.set_data_location(onnx::TensorProto_DataLocation_EXTERNAL);
  CHECK_THROWS_WITH_AS(tensor_from_proto(p), doctest::Contains("tensor 'ext': its data is in an external file"),
                       ModelError);

  auto q = proto_of(ElementType::float32, {1}, "ext2");
  auto* entry = q.add_external_data();
  entry->set_key("location");
  entry->set_value("weights.bin");
  CHECK_THROWS_WITH_AS(tensor_from_proto(q), doctest::Contains("external file ('weights.bin')"), ModelError);
}

TEST_CASE("tensor_proto: string tensors, undefined and unknown data_type numbers are refused") {
  auto s = proto_of(ElementType::string, {1}, "names");
  s.add_string_data("hello");
  CHECK_THROWS_WITH_AS(tensor_from_proto(s), doctest::Contains("tensor 'names': string tensors are not supported"),
                       ModelError);

  auto undefined = proto_of(ElementType::undefined, {1});
  CHECK_THROWS_WITH_AS(tensor_from_proto(undefined), doctest::Contains("data_type is not set"), ModelError);

  for (const int32_t number : {17, 999, -3}) {
    CAPTURE(number);
    auto p = proto_of(ElementType::float32, {1});
    p.set_data_type(number);
    p.add_float_data(1.0f);
    CHECK_THROWS_WITH_AS(tensor_from_proto(p), doctest::Contains(("unknown data_type " + std::to_string(number)).c_str()),
                         ModelError);
  }
}

TEST_CASE("tensor_proto: values in raw_data and a typed field at once are refused") {
  auto p = proto_of(ElementType::float32, {1});
  p.set_raw_data(std::string(4, '\0'));
  p.add_float_data(1.0f);
  CHECK_THROWS_WITH_AS(tensor_from_proto(p), doctest::Contains("both raw_data and float_data"), ModelError);
}

TEST_CASE("tensor_proto: values in the wrong typed field for the data_type are refused") {
  auto p = proto_of(ElementType::float32, {1});
  p.add_int64_data(1);
  CHECK_THROWS_WITH_AS(tensor_from_proto(p), doctest::Contains("stores its values in float_data, but the data is in int64_data"),
                       ModelError);

  auto two = proto_of(ElementType::int32, {1});
  two.add_int32_data(1);
  two.add_int64_data(1);
  CHECK_THROWS_WITH_AS(tensor_from_proto(two), doctest::Contains("more than one typed field"), ModelError);

  auto uint32 = proto_of(ElementType::uint32, {1});
  uint32.add_int32_data(1);  // uint32 belongs in uint64_data
  CHECK_THROWS_WITH_AS(tensor_from_proto(uint32), doctest::Contains("uint64_data"), ModelError);
}

TEST_CASE("tensor_proto: an unnamed tensor is called 'unnamed tensor' in messages") {
  auto p = proto_of(ElementType::float32, {2}, "");
  CHECK_THROWS_WITH_AS(tensor_from_proto(p), doctest::Contains("unnamed tensor: has no data"), ModelError);
}
