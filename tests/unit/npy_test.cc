#include "onnx_light/runtime/npy.h"

#include <doctest/doctest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>
#include <thread>
#include <vector>

#include "onnx_light/runtime/error.h"

using onnx_light::InvalidValueError;
using onnx_light::IoError;
using onnx_light::runtime::bitwise_equal;
using onnx_light::runtime::element_type_name;
using onnx_light::runtime::ElementType;
using onnx_light::runtime::kTensorAlignment;
using onnx_light::runtime::parse_npy;
using onnx_light::runtime::read_npy;
using onnx_light::runtime::serialize_npy;
using onnx_light::runtime::Shape;
using onnx_light::runtime::supported_element_types;
using onnx_light::runtime::Tensor;
using onnx_light::runtime::write_npy;

namespace {

// Files written by numpy itself (generated once with /usr/bin/python3, numpy 1.24.2, and pasted here so
// the unit tests stay self-contained). numpy >= 1.23 pads the dict with extra spaces to leave room for
// growing the shape in place; readers must accept any amount of space padding.
// <i2 shape (2, 3), np.save (numpy 1.24.2)
const std::string kNumpyInt16_2x3("\x93NUMPY\x01\x00v\x00{'descr': '<i2', 'fortran_order': False, 'shape': (2, 3), }                                                          \x0a\xfd\xff\xfe\xff\xff\xff\x00\x00\x01\x00\x02\x00", 140);
// |b1 shape (3,), np.save (numpy 1.24.2)
const std::string kNumpyBool3("\x93NUMPY\x01\x00v\x00{'descr': '|b1', 'fortran_order': False, 'shape': (3,), }                                                            \x0a\x01\x00\x01", 131);
// <f8 shape (), np.save (numpy 1.24.2)
const std::string kNumpyFloat64Scalar("\x93NUMPY\x01\x00v\x00{'descr': '<f8', 'fortran_order': False, 'shape': (), }                                                              \x0a\x00\x00\x00\x00\x00\x00\x04@", 136);
// <f4 shape (2,), np.lib.format.write_array(version=(2, 0)) (numpy 1.24.2)
const std::string kNumpyFloat32V2("\x93NUMPY\x02\x00t\x00\x00\x00{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }                                                          \x0a\x00\x00\x80\x3f\x00\x00\x00\xbf", 136);
// |u1 shape (2, 1), np.lib.format.write_array(version=(3, 0)) (numpy 1.24.2)
const std::string kNumpyUint8V3("\x93NUMPY\x03\x00t\x00\x00\x00{'descr': '|u1', 'fortran_order': False, 'shape': (2, 1), }                                                        \x0a\x07\xff", 130);
// <f2 shape (0, 4), np.save (numpy 1.24.2)
const std::string kNumpyFloat16Empty("\x93NUMPY\x01\x00v\x00{'descr': '<f2', 'fortran_order': False, 'shape': (0, 4), }                                                          \x0a", 128);
// <u8 shape (2,), np.save (numpy 1.24.2)
const std::string kNumpyUint64("\x93NUMPY\x01\x00v\x00{'descr': '<u8', 'fortran_order': False, 'shape': (2,), }                                                            \x0a\x00\x00\x00\x00\x00\x00\x00\x00\xff\xff\xff\xff\xff\xff\xff\xff", 144);
// |i1 shape (2,), np.save (numpy 1.24.2)
const std::string kNumpyInt8("\x93NUMPY\x01\x00v\x00{'descr': '|i1', 'fortran_order': False, 'shape': (2,), }                                                            \x0a\x80\x7f", 130);

std::span<const std::byte> as_bytes(const std::string& s) { return std::as_bytes(std::span(s.data(), s.size())); }

std::string as_string(const std::vector<std::byte>& v) { return std::string(reinterpret_cast<const char*>(v.data()), v.size()); }

// A .npy file built from a header dict and data, padded the way the spec asks.
std::string make_npy(const std::string& dict, const std::string& data, int major = 1) {
  const std::size_t prefix = major == 1 ? 10 : 12;
  std::string header = dict;
  while ((prefix + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  std::string out("\x93NUMPY", 6);
  out += static_cast<char>(major);
  out += '\0';
  for (std::size_t i = 0; i < prefix - 8; ++i) out += static_cast<char>((header.size() >> (8 * i)) & 0xFF);
  return out + header + data;
}

Tensor pattern_tensor(ElementType type, Shape shape) {
  Tensor t(type, std::move(shape));
  auto bytes = t.mutable_bytes();
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    bytes[i] = type == ElementType::boolean ? static_cast<std::byte>(i % 2) : static_cast<std::byte>(i * 29 + 3);
  }
  return t;
}

class TempDir {
 public:
  TempDir() {
    static std::atomic<int> counter{0};
    path_ = std::filesystem::temp_directory_path() /
            ("onnx_light_npy_test_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  std::filesystem::path operator/(const std::string& name) const { return path_ / name; }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

void write_file(const std::filesystem::path& path, const std::string& content) {
  std::ofstream out(path, std::ios::binary);
  out.write(content.data(), static_cast<std::streamsize>(content.size()));
  REQUIRE(out.good());
}

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// Checks that parsing fails with InvalidValueError whose message contains every fragment.
void check_rejected(const std::string& file, std::initializer_list<const char*> fragments) {
  try {
    (void)parse_npy(as_bytes(file), "bad.npy");
    FAIL("parse_npy accepted a bad file");
  } catch (const InvalidValueError& e) {
    const std::string message = e.what();
    CAPTURE(message);
    CHECK(message.rfind("bad.npy: ", 0) == 0);
    for (const char* fragment : fragments) CHECK(message.find(fragment) != std::string::npos);
  }
}

}  // namespace

TEST_CASE("npy: writer header for float32 (3,) is byte-exact per the format spec") {
  Tensor t(ElementType::float32, {3});
  t.data<float>()[0] = 1.0f;
  t.data<float>()[1] = -2.0f;
  t.data<float>()[2] = 0.5f;
  const std::string file = as_string(serialize_npy(t));

  const std::string dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }";
  REQUIRE(file.size() == 128 + 12);
  CHECK(file.substr(0, 8) == std::string("\x93NUMPY\x01\x00", 8));
  CHECK(static_cast<unsigned char>(file[8]) == 118);  // header length, little-endian uint16
  CHECK(file[9] == '\0');
  CHECK(file.substr(10, dict.size()) == dict);
  CHECK(file.substr(10 + dict.size(), 128 - 10 - dict.size() - 1) == std::string(128 - 10 - dict.size() - 1, ' '));
  CHECK(file[127] == '\n');
  CHECK(std::memcmp(file.data() + 128, t.raw_data(), 12) == 0);
}

TEST_CASE("npy: writer output is byte-identical to numpy's for small shapes") {
  // Same dict, and numpy's growth padding is just more spaces inside the same 64-byte block.
  CHECK(as_string(serialize_npy(parse_npy(as_bytes(kNumpyInt16_2x3)))) == kNumpyInt16_2x3);
  CHECK(as_string(serialize_npy(parse_npy(as_bytes(kNumpyBool3)))) == kNumpyBool3);
  CHECK(as_string(serialize_npy(parse_npy(as_bytes(kNumpyFloat64Scalar)))) == kNumpyFloat64Scalar);
  CHECK(as_string(serialize_npy(parse_npy(as_bytes(kNumpyFloat16Empty)))) == kNumpyFloat16Empty);
  CHECK(as_string(serialize_npy(parse_npy(as_bytes(kNumpyInt8)))) == kNumpyInt8);
}

TEST_CASE("npy: writer shape syntax for 0-d, 1-d and n-d, and descr for every supported type") {
  const auto header_of = [](const Tensor& t) {
    const std::string file = as_string(serialize_npy(t));
    return file.substr(10, file.find('}') - 9);
  };
  CHECK(header_of(Tensor(ElementType::float64, {})) == "{'descr': '<f8', 'fortran_order': False, 'shape': (), }");
  CHECK(header_of(Tensor(ElementType::int64, {2, 3, 4})) ==
        "{'descr': '<i8', 'fortran_order': False, 'shape': (2, 3, 4), }");
  CHECK(header_of(Tensor(ElementType::uint8, {0})) == "{'descr': '|u1', 'fortran_order': False, 'shape': (0,), }");

  const std::pair<ElementType, const char*> descrs[] = {
      {ElementType::float32, "'<f4'"}, {ElementType::uint8, "'|u1'"},  {ElementType::int8, "'|i1'"},
      {ElementType::uint16, "'<u2'"},  {ElementType::int16, "'<i2'"},  {ElementType::int32, "'<i4'"},
      {ElementType::int64, "'<i8'"},   {ElementType::boolean, "'|b1'"}, {ElementType::float16, "'<f2'"},
      {ElementType::float64, "'<f8'"}, {ElementType::uint32, "'<u4'"}, {ElementType::uint64, "'<u8'"},
  };
  for (const auto& entry : descrs) {  // not a structured binding: clang 14 cannot capture those in CAPTURE
    CAPTURE(element_type_name(entry.first));
    CHECK(header_of(Tensor(entry.first, {1})).find(entry.second) != std::string::npos);
  }
}

TEST_CASE("npy: every header is 64-byte aligned and ends in a newline, whatever the rank") {
  for (std::size_t rank = 0; rank < 40; ++rank) {
    CAPTURE(rank);
    const Tensor t(ElementType::int8, Shape(rank, 1));
    const std::string file = as_string(serialize_npy(t));
    const std::size_t data_offset = file.size() - 1;
    CHECK(data_offset % 64 == 0);
    CHECK(file[data_offset - 1] == '\n');
    CHECK(bitwise_equal(parse_npy(as_bytes(file)), t));
  }
}

TEST_CASE("npy: a header longer than 65535 bytes switches the writer to format 2.0") {
  const Tensor t(ElementType::uint8, Shape(30000, 1));  // "1, " x 30000 does not fit a 16-bit length
  const std::string file = as_string(serialize_npy(t));
  CHECK(file[6] == '\x02');
  const auto length = static_cast<uint32_t>(static_cast<unsigned char>(file[8])) |
                      static_cast<uint32_t>(static_cast<unsigned char>(file[9])) << 8 |
                      static_cast<uint32_t>(static_cast<unsigned char>(file[10])) << 16;
  CHECK(length > 65535);
  CHECK((12 + length) % 64 == 0);
  CHECK(bitwise_equal(parse_npy(as_bytes(file)), t));
}

TEST_CASE("npy: every supported type except bfloat16 round-trips, including 0-d and empty shapes") {
  for (const ElementType type : supported_element_types()) {
    if (type == ElementType::bfloat16) continue;
    for (const Shape& shape : {Shape{}, Shape{7}, Shape{2, 3}, Shape{0}, Shape{3, 0, 2}}) {
      CAPTURE(element_type_name(type));
      CAPTURE(shape.size());
      const Tensor original = pattern_tensor(type, shape);
      const Tensor back = parse_npy(serialize_npy(original));
      CHECK(bitwise_equal(back, original));
      CHECK(reinterpret_cast<std::uintptr_t>(back.raw_data()) % kTensorAlignment == 0);
    }
  }
}

TEST_CASE("npy: complex64 and complex128 round-trip as <c8 and <c16") {
  for (const ElementType type : {ElementType::complex64, ElementType::complex128}) {
    const Tensor original = pattern_tensor(type, {3});
    CHECK(bitwise_equal(parse_npy(serialize_npy(original)), original));
  }
}

TEST_CASE("npy: bfloat16 and undefined tensors are refused by the writer with a clear error") {
  CHECK_THROWS_WITH_AS(serialize_npy(Tensor(ElementType::bfloat16, {2})),
                       doctest::Contains("bfloat16 has no NumPy .npy dtype"), InvalidValueError);
  TempDir dir;
  CHECK_THROWS_WITH_AS(write_npy(dir / "b.npy", Tensor(ElementType::bfloat16, {2})),
                       doctest::Contains((dir / "b.npy").string().c_str()), InvalidValueError);
  CHECK_FALSE(std::filesystem::exists(dir / "b.npy"));  // refused before creating the file
  CHECK_THROWS_AS(serialize_npy(Tensor()), InvalidValueError);
}

TEST_CASE("npy: files written by numpy are read, in format 1.0, 2.0 and 3.0") {
  const Tensor i16 = parse_npy(as_bytes(kNumpyInt16_2x3));
  CHECK(i16.element_type() == ElementType::int16);
  CHECK(i16.shape() == Shape{2, 3});
  for (int i = 0; i < 6; ++i) CHECK(i16.data<int16_t>()[i] == i - 3);

  const Tensor b = parse_npy(as_bytes(kNumpyBool3));
  CHECK(b.element_type() == ElementType::boolean);
  CHECK(b.data<uint8_t>()[0] == 1);
  CHECK(b.data<uint8_t>()[1] == 0);
  CHECK(b.data<uint8_t>()[2] == 1);

  const Tensor scalar = parse_npy(as_bytes(kNumpyFloat64Scalar));
  CHECK(scalar.rank() == 0);
  CHECK(scalar.data<double>()[0] == 2.5);

  const Tensor v2 = parse_npy(as_bytes(kNumpyFloat32V2));
  CHECK(v2.shape() == Shape{2});
  CHECK(v2.data<float>()[0] == 1.0f);
  CHECK(v2.data<float>()[1] == -0.5f);

  const Tensor v3 = parse_npy(as_bytes(kNumpyUint8V3));
  CHECK(v3.shape() == Shape{2, 1});
  CHECK(v3.data<uint8_t>()[1] == 255);

  const Tensor empty = parse_npy(as_bytes(kNumpyFloat16Empty));
  CHECK(empty.element_type() == ElementType::float16);
  CHECK(empty.shape() == Shape{0, 4});

  const Tensor u64 = parse_npy(as_bytes(kNumpyUint64));
  CHECK(u64.data<uint64_t>()[1] == std::numeric_limits<uint64_t>::max());

  const Tensor i8 = parse_npy(as_bytes(kNumpyInt8));
  CHECK(i8.data<int8_t>()[0] == -128);
}

TEST_CASE("npy: reader accepts any key order, double quotes, no trailing comma and Python 2 long suffixes") {
  const std::string data(6, '\x01');
  const Tensor a = parse_npy(as_bytes(make_npy("{'shape': (2, 3), 'fortran_order': False, 'descr': '|u1'}", data)));
  CHECK(a.shape() == Shape{2, 3});
  const Tensor b = parse_npy(as_bytes(make_npy("{\"descr\": \"|u1\", \"fortran_order\": False, \"shape\": (6,)}", data)));
  CHECK(b.shape() == Shape{6});
  const Tensor c = parse_npy(as_bytes(make_npy("{'descr':'|u1','fortran_order':False,'shape':(2L,3L),}", data)));
  CHECK(c.shape() == Shape{2, 3});
  const Tensor d = parse_npy(as_bytes(make_npy("{ 'descr' : '|u1' ,\n 'fortran_order' : False , 'shape' : ( 2 , 3 , ) }", data)));
  CHECK(d.shape() == Shape{2, 3});
  // One-byte types may carry any byte-order mark.
  CHECK(parse_npy(as_bytes(make_npy("{'descr': '<u1', 'fortran_order': False, 'shape': (6,), }", data))).element_type() ==
        ElementType::uint8);
  CHECK(parse_npy(as_bytes(make_npy("{'descr': '|i1', 'fortran_order': False, 'shape': (6,), }", data))).element_type() ==
        ElementType::int8);
}

TEST_CASE("npy: bad magic, unknown versions and files too short for the prefix are rejected") {
  std::string file = make_npy("{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }", std::string(4, '\0'));
  std::string bad_magic = file;
  bad_magic[1] = 'X';
  check_rejected(bad_magic, {"bad magic"});
  check_rejected("PK\x03\x04 this is a zip file, not an npy file", {"bad magic"});

  std::string v4 = file;
  v4[6] = '\x04';
  check_rejected(v4, {"unsupported .npy format version 4.0"});
  std::string v0 = file;
  v0[6] = '\x00';
  check_rejected(v0, {"version 0.0"});
  std::string minor = file;
  minor[7] = '\x01';
  check_rejected(minor, {"version 1.1"});

  check_rejected("", {"too short"});
  check_rejected(std::string("\x93NUMPY", 6), {"too short"});
  check_rejected(std::string("\x93NUMPY\x01\x00", 8), {"ends inside the header length"});
  check_rejected(std::string("\x93NUMPY\x02\x00\x10\x00", 10), {"ends inside the header length"});
}

TEST_CASE("npy: a file truncated inside the header or inside the data is rejected") {
  const std::string file =
      make_npy("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", std::string(24, '\x07'));
  check_rejected(file.substr(0, 40), {"truncated", "header length 118", "runs past the end"});
  check_rejected(file.substr(0, 127), {"truncated"});
  check_rejected(file.substr(0, 128), {"truncated .npy data", "needs 24 bytes", "has 0"});
  check_rejected(file.substr(0, file.size() - 1), {"truncated .npy data", "needs 24 bytes", "has 23"});
  // Every prefix of a valid file is rejected cleanly.
  for (std::size_t n = 0; n < file.size(); ++n) {
    CAPTURE(n);
    CHECK_THROWS_AS(parse_npy(as_bytes(file.substr(0, n))), InvalidValueError);
  }
}

TEST_CASE("npy: data longer than the header's shape is rejected as oversized") {
  const std::string file =
      make_npy("{'descr': '<i2', 'fortran_order': False, 'shape': (3,), }", std::string(8, '\x01'));
  check_rejected(file, {"oversized", "needs 6 bytes", "has 8"});
}

TEST_CASE("npy: fortran_order True is rejected even for shapes where the layout would agree") {
  check_rejected(make_npy("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 2), }", std::string(16, '\0')),
                 {"header field 'fortran_order'", "Fortran order"});
  check_rejected(make_npy("{'descr': '<f4', 'fortran_order': True, 'shape': (4,), }", std::string(16, '\0')),
                 {"'fortran_order'"});
  check_rejected(make_npy("{'descr': '<f4', 'fortran_order': 0, 'shape': (4,), }", std::string(16, '\0')),
                 {"'fortran_order'", "True or False"});
}

TEST_CASE("npy: huge shapes fail on size checks without allocating") {
  // 2^40 float64 elements would be 8 TiB; the file holds 8 bytes.
  check_rejected(make_npy("{'descr': '<f8', 'fortran_order': False, 'shape': (1099511627776,), }", std::string(8, '\0')),
                 {"truncated", "needs 8796093022208 bytes"});
  check_rejected(make_npy("{'descr': '<f8', 'fortran_order': False, 'shape': (4294967296, 4294967296), }", ""),
                 {"'shape'", "overflows"});
  check_rejected(make_npy("{'descr': '<f8', 'fortran_order': False, 'shape': (4611686018427387904,), }", ""),
                 {"'shape'", "data size overflows"});
  check_rejected(make_npy("{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,), }", ""),
                 {"'shape'", "does not fit in 64 bits"});
  check_rejected(make_npy("{'descr': '<f4', 'fortran_order': False, 'shape': (9223372036854775808,), }", ""),
                 {"'shape'", "does not fit"});
  // The largest int64 is a valid dimension; the data is what is missing.
  check_rejected(make_npy("{'descr': '|u1', 'fortran_order': False, 'shape': (9223372036854775807,), }", ""),
                 {"truncated"});
}

TEST_CASE("npy: negative, non-integer and non-tuple shapes are rejected naming the shape field") {
  const std::string data(4, '\0');
  check_rejected(make_npy("{'descr': '<f4', 'fortran_order': False, 'shape': (2, -1), }", data),
                 {"header field 'shape'", "dimension 1 is negative (-1)"});
  check_rejected(make_npy("{'descr': '<f4', 'fortran_order': False, 'shape': (1.0,), }", data), {"'shape'"});
  check_rejected(make_npy("{'descr': '<f4', 'fortran_order': False, 'shape': (0x1,), }", data), {"','"});
  check_rejected(make_npy("{'descr': '<f4', 'fortran_order': False, 'shape': [1], }", data),
                 {"'shape'", "expected a tuple"});
  check_rejected(make_npy("{'descr': '<f4', 'fortran_order': False, 'shape': (1), }", data),
                 {"'shape'", "not a tuple"});
  check_rejected(make_npy("{'descr': '<f4', 'fortran_order': False, 'shape': (,), }", data), {"'shape'"});
  check_rejected(make_npy("{'descr': '<f4', 'fortran_order': False, 'shape': (1,,), }", data), {"'shape'"});
  check_rejected(make_npy("{'descr': '<f4', 'fortran_order': False, 'shape': (1, }", data), {"invalid .npy header"});
}

TEST_CASE("npy: unsupported, big-endian and structured descr values are rejected naming the descr field") {
  const std::string data(4, '\0');
  check_rejected(make_npy("{'descr': '>f4', 'fortran_order': False, 'shape': (1,), }", data),
                 {"header field 'descr'", "big-endian"});
  check_rejected(make_npy("{'descr': '|f4', 'fortran_order': False, 'shape': (1,), }", data),
                 {"'descr'", "little-endian"});
  check_rejected(make_npy("{'descr': '=f4', 'fortran_order': False, 'shape': (1,), }", data), {"'descr'"});
  check_rejected(make_npy("{'descr': '<U1', 'fortran_order': False, 'shape': (1,), }", data),
                 {"'descr'", "unsupported dtype"});
  check_rejected(make_npy("{'descr': '|O', 'fortran_order': False, 'shape': (1,), }", data), {"'descr'"});
  check_rejected(make_npy("{'descr': '<f16', 'fortran_order': False, 'shape': (1,), }", data), {"'descr'"});
  check_rejected(make_npy("{'descr': '', 'fortran_order': False, 'shape': (1,), }", data), {"'descr'"});
  check_rejected(make_npy("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (1,), }", data),
                 {"'descr'", "structured"});
}

TEST_CASE("npy: missing, unknown and duplicate keys and broken dict syntax are rejected") {
  const std::string data(4, '\0');
  check_rejected(make_npy("{'descr': '<f4', 'fortran_order': False, }", data), {"missing key 'shape'"});
  check_rejected(make_npy("{'fortran_order': False, 'shape': (1,), }", data), {"missing key 'descr'"});
  check_rejected(make_npy("{'descr': '<f4', 'shape': (1,), }", data), {"missing key 'fortran_order'"});
  check_rejected(make_npy("{'descr': '<f4', 'fortran_order': False, 'shape': (1,), 'extra': 1, }", data),
                 {"unexpected key \"extra\""});
  check_rejected(make_npy("{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (1,), }", data),
                 {"'descr' appears twice"});
  check_rejected(make_npy("'descr': '<f4', 'fortran_order': False, 'shape': (1,)", data), {"expected the dictionary"});
  check_rejected(make_npy("{'descr': '<f4' 'fortran_order': False, 'shape': (1,), }", data), {"',' or '}'"});
  check_rejected(make_npy("{'descr: '<f4', 'fortran_order': False, 'shape': (1,), }", data), {"invalid .npy header"});
  check_rejected(make_npy("{'descr': '<f4', 'fortran_order': False, 'shape': (1,), } trailing", data),
                 {"only spaces and a newline"});
  check_rejected(make_npy("{'descr': '<f4', 'fortran_order': False, 'shape': (1,), ", data), {"invalid .npy header"});
  check_rejected(make_npy("{'descr': '<\\x66\\x34', 'fortran_order': False, 'shape': (1,), }", data),
                 {"escape sequences"});
  check_rejected(make_npy(std::string("{'descr': '<f4'\0, 'fortran_order': False, 'shape': (1,), }", 58), data),
                 {"\\x00"});
  check_rejected(make_npy("", data), {"expected the dictionary"});
}

TEST_CASE("npy: write_npy then read_npy round-trips through a file") {
  TempDir dir;
  const Tensor original = pattern_tensor(ElementType::float32, {4, 5});
  write_npy(dir / "x.npy", original);
  CHECK(bitwise_equal(read_npy(dir / "x.npy"), original));
  CHECK(read_file(dir / "x.npy") == as_string(serialize_npy(original)));

  // Overwriting truncates the old, longer content.
  const Tensor scalar = pattern_tensor(ElementType::int8, {});
  write_npy(dir / "x.npy", scalar);
  CHECK(bitwise_equal(read_npy(dir / "x.npy"), scalar));
  CHECK(std::filesystem::file_size(dir / "x.npy") == 129);
}

TEST_CASE("npy: read_npy reports bad files by name with InvalidValueError") {
  TempDir dir;
  write_file(dir / "cut.npy", kNumpyInt16_2x3.substr(0, kNumpyInt16_2x3.size() - 2));
  CHECK_THROWS_WITH_AS(read_npy(dir / "cut.npy"), doctest::Contains(((dir / "cut.npy").string() + ": truncated").c_str()),
                       InvalidValueError);
  write_file(dir / "huge.npy",
             make_npy("{'descr': '<f8', 'fortran_order': False, 'shape': (1099511627776,), }", std::string(8, '\0')));
  CHECK_THROWS_WITH_AS(read_npy(dir / "huge.npy"), doctest::Contains("truncated"), InvalidValueError);
  write_file(dir / "tiny.npy", "\x93NU");
  CHECK_THROWS_WITH_AS(read_npy(dir / "tiny.npy"), doctest::Contains("too short"), InvalidValueError);
  write_file(dir / "long.npy", kNumpyBool3 + "x");
  CHECK_THROWS_WITH_AS(read_npy(dir / "long.npy"), doctest::Contains("oversized"), InvalidValueError);
  write_file(dir / "numpy.npy", kNumpyFloat32V2);
  CHECK(read_npy(dir / "numpy.npy").data<float>()[1] == -0.5f);
}

TEST_CASE("npy: missing files, directories and unwritable paths raise IoError naming the path") {
  TempDir dir;
  CHECK_THROWS_WITH_AS(read_npy(dir / "absent.npy"), doctest::Contains("absent.npy: cannot open"), IoError);
  CHECK_THROWS_WITH_AS(read_npy(dir.path()), doctest::Contains("is a directory"), IoError);
  CHECK_THROWS_WITH_AS(write_npy(dir / "no" / "such" / "dir.npy", Tensor(ElementType::float32, {1})),
                       doctest::Contains("dir.npy: cannot create"), IoError);
}

TEST_CASE("npy: a failed write raises IoError and leaves devices alone (/dev/full)") {
  if (!std::filesystem::is_character_file("/dev/full")) return;  // not every sandbox has it
  CHECK_THROWS_WITH_AS(write_npy("/dev/full", Tensor(ElementType::float32, {4})),
                       doctest::Contains("/dev/full: cannot write"), IoError);
  CHECK(std::filesystem::is_character_file("/dev/full"));
}

TEST_CASE("npy: read_npy reads from a FIFO (no size up front) and still rejects short data") {
  TempDir dir;
  const auto fifo = dir / "pipe.npy";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  const Tensor original = pattern_tensor(ElementType::int32, {300, 100});  // larger than one read chunk
  const std::string content = as_string(serialize_npy(original));
  {
    std::thread writer([&] { write_file(fifo, content); });
    const Tensor back = read_npy(fifo);
    writer.join();
    CHECK(bitwise_equal(back, original));
  }
  {
    const std::string hostile =
        make_npy("{'descr': '<f8', 'fortran_order': False, 'shape': (1099511627776,), }", std::string(8, '\0'));
    std::thread writer([&] { write_file(fifo, hostile); });
    CHECK_THROWS_WITH_AS(read_npy(fifo), doctest::Contains("truncated"), InvalidValueError);
    writer.join();
  }
  {
    std::thread writer([&] { write_file(fifo, "not an npy file at all, just text"); });
    CHECK_THROWS_WITH_AS(read_npy(fifo), doctest::Contains("bad magic"), InvalidValueError);
    writer.join();
  }
}
