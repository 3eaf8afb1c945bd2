#include "onnx_light/runtime/element_type.h"

#include <doctest/doctest.h>

#include <string>

using onnx_light::runtime::element_size;
using onnx_light::runtime::element_type_name;
using onnx_light::runtime::ElementType;
using onnx_light::runtime::is_fixed_size;
using onnx_light::runtime::is_valid_element_type;
using onnx_light::runtime::parse_element_type;
using onnx_light::runtime::supported_element_types;

TEST_CASE("element_type: numbers are the ONNX TensorProto.DataType values") {
  CHECK(static_cast<int>(ElementType::float32) == 1);
  CHECK(static_cast<int>(ElementType::int64) == 7);
  CHECK(static_cast<int>(ElementType::boolean) == 9);
  CHECK(static_cast<int>(ElementType::float16) == 10);
  CHECK(static_cast<int>(ElementType::float64) == 11);
  CHECK(static_cast<int>(ElementType::bfloat16) == 16);
}

TEST_CASE("element_type: ONNX names and byte sizes of every supported type") {
  struct Expected {
    ElementType type;
    const char* name;
    std::size_t size;
  };
  const Expected expected[] = {
      {ElementType::float32, "float", 4},   {ElementType::uint8, "uint8", 1},     {ElementType::int8, "int8", 1},
      {ElementType::uint16, "uint16", 2},   {ElementType::int16, "int16", 2},     {ElementType::int32, "int32", 4},
      {ElementType::int64, "int64", 8},     {ElementType::boolean, "bool", 1},    {ElementType::float16, "float16", 2},
      {ElementType::float64, "double", 8},  {ElementType::uint32, "uint32", 4},   {ElementType::uint64, "uint64", 8},
      {ElementType::bfloat16, "bfloat16", 2},
  };
  REQUIRE(supported_element_types().size() == std::size(expected));
  for (std::size_t i = 0; i < std::size(expected); ++i) {
    CAPTURE(expected[i].name);
    CHECK(supported_element_types()[i] == expected[i].type);  // DataType order
    CHECK(element_type_name(expected[i].type) == expected[i].name);
    CHECK(element_size(expected[i].type) == expected[i].size);
    CHECK(is_fixed_size(expected[i].type));
  }
}

TEST_CASE("element_type: string and undefined have no fixed size and are not supported") {
  CHECK(element_size(ElementType::string) == 0);
  CHECK(element_size(ElementType::undefined) == 0);
  CHECK_FALSE(is_fixed_size(ElementType::string));
  CHECK_FALSE(is_fixed_size(ElementType::undefined));
  for (const ElementType type : supported_element_types()) {
    CHECK(type != ElementType::string);
    CHECK(type != ElementType::undefined);
  }
  CHECK(element_type_name(ElementType::string) == "string");
}

TEST_CASE("element_type: complex types are fixed-size pairs but not in the supported list") {
  CHECK(element_size(ElementType::complex64) == 8);
  CHECK(element_size(ElementType::complex128) == 16);
  CHECK(is_fixed_size(ElementType::complex64));
  for (const ElementType type : supported_element_types()) CHECK(type != ElementType::complex64);
}

TEST_CASE("element_type: out-of-range enum values have no name or size") {
  CHECK(element_type_name(static_cast<ElementType>(17)) == "unknown");
  CHECK(element_type_name(static_cast<ElementType>(-1)) == "unknown");
  CHECK(element_size(static_cast<ElementType>(999)) == 0);
  CHECK_FALSE(is_fixed_size(static_cast<ElementType>(17)));
}

TEST_CASE("element_type: valid numbers are 1..16, not 0 (UNDEFINED) or beyond BFLOAT16") {
  CHECK_FALSE(is_valid_element_type(0));
  CHECK_FALSE(is_valid_element_type(-1));
  CHECK_FALSE(is_valid_element_type(17));
  for (int32_t n = 1; n <= 16; ++n) CHECK(is_valid_element_type(n));
}

TEST_CASE("element_type: every name parses back to its type") {
  for (const ElementType type : supported_element_types()) {
    CAPTURE(element_type_name(type));
    CHECK(parse_element_type(element_type_name(type)) == type);
    CHECK(parse_element_type(std::to_string(static_cast<int>(type))) == type);
  }
}

TEST_CASE("element_type: numpy aliases and upper-case TensorProto spellings parse") {
  CHECK(parse_element_type("float32") == ElementType::float32);
  CHECK(parse_element_type("FLOAT") == ElementType::float32);
  CHECK(parse_element_type("f4") == ElementType::float32);
  CHECK(parse_element_type("float64") == ElementType::float64);
  CHECK(parse_element_type("DOUBLE") == ElementType::float64);
  CHECK(parse_element_type("f2") == ElementType::float16);
  CHECK(parse_element_type("half") == ElementType::float16);
  CHECK(parse_element_type("i8") == ElementType::int64);
  CHECK(parse_element_type("u1") == ElementType::uint8);
  CHECK(parse_element_type("b1") == ElementType::boolean);
  CHECK(parse_element_type("bool_") == ElementType::boolean);
  CHECK(parse_element_type("BFLOAT16") == ElementType::bfloat16);
}

TEST_CASE("element_type: unknown names, empty text, 0 and out-of-range numbers do not parse") {
  CHECK_FALSE(parse_element_type(""));
  CHECK_FALSE(parse_element_type("float33"));
  CHECK_FALSE(parse_element_type("undefined"));
  CHECK_FALSE(parse_element_type("0"));
  CHECK_FALSE(parse_element_type("17"));
  CHECK_FALSE(parse_element_type("-1"));
  CHECK_FALSE(parse_element_type("1.0"));
  CHECK_FALSE(parse_element_type("99999999999999999999"));
  CHECK_FALSE(parse_element_type(" float"));
}
