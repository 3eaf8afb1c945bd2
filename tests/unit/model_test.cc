#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>

#include "onnx_light/runtime/error.h"
#include "onnx_light/runtime/model.h"
#include "test_models.h"

using namespace onnx_light;
using namespace onnx_light::runtime;

namespace {

std::filesystem::path temp_file(const std::string& name, const std::string& content) {
  auto dir = std::filesystem::temp_directory_path() / "onnx_light_model_test";
  std::filesystem::create_directories(dir);
  auto path = dir / name;
  std::ofstream(path, std::ios::binary) << content;
  return path;
}

std::string model_error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "<no error>";
}

}  // namespace

TEST_CASE("text_model_seed_loads_with_opset_18") {
  Model m = test::parse(test::kSeedAbsModel);
  CHECK(m.opset_version("") == 18);
  CHECK(m.opset_version("ai.onnx") == 18);
  CHECK(m.opset_version("com.example") == 0);
  REQUIRE(m.graph().node_size() == 1);
  CHECK(m.graph().node(0).op_type() == "Abs");
  CHECK(m.proto().ir_version() == 10);
}

TEST_CASE("binary_model_round_trips_through_file") {
  Model m = test::parse(test::kSeedAbsModel);
  std::string bytes;
  REQUIRE(m.proto().SerializeToString(&bytes));
  auto path = temp_file("abs.onnx", bytes);
  Model loaded = load_model_file(path);
  CHECK(loaded.graph().node(0).op_type() == "Abs");
  CHECK(loaded.origin() == path.string());
}

TEST_CASE("text_model_file_detected_by_content_not_extension") {
  auto path = temp_file("abs_text.onnx", test::kSeedAbsModel);
  CHECK(load_model_file(path).graph().node(0).op_type() == "Abs");
}

TEST_CASE("looks_like_onnx_text_distinguishes_binary") {
  std::string text = test::kSeedAbsModel;
  CHECK(looks_like_onnx_text(std::as_bytes(std::span(text))));
  std::string binary;
  REQUIRE(test::parse(test::kSeedAbsModel).proto().SerializeToString(&binary));
  CHECK_FALSE(looks_like_onnx_text(std::as_bytes(std::span(binary))));
}

TEST_CASE("missing_file_names_the_path") {
  auto message = model_error_of([] { load_model_file("/nonexistent/dir/model.onnx"); });
  CHECK(message.find("/nonexistent/dir/model.onnx") != std::string::npos);
  CHECK(message.find("no such file") != std::string::npos);
  CHECK_THROWS_AS(load_model_file("/nonexistent/dir/model.onnx"), IoError);
}

TEST_CASE("not_protobuf_is_a_model_error_naming_the_file") {
  auto path = temp_file("garbage.onnx", std::string("\x01\x02\xff\xfe\x00\x13garbage", 13));
  auto message = model_error_of([&] { load_model_file(path); });
  CHECK(message.find(path.string()) != std::string::npos);
  CHECK_THROWS_AS(load_model_file(path), ModelError);
}

TEST_CASE("truncated_protobuf_is_rejected") {
  std::string binary;
  REQUIRE(test::parse(test::kSeedAbsModel).proto().SerializeToString(&binary));
  for (std::size_t cut : {binary.size() / 2, binary.size() - 1, std::size_t{3}}) {
    CAPTURE(cut);
    auto path = temp_file("truncated.onnx", binary.substr(0, cut));
    CHECK_THROWS_AS(load_model_file(path), ModelError);
  }
}

TEST_CASE("text_syntax_error_reports_line_and_column") {
  auto message = model_error_of([] {
    parse_model_text("<ir_version: 8, opset_import: [\"\" : 17]>\nagraph (float[N] x) => (float[N] y)\n{ y = Abs(x ", "bad.onnxtxt");
  });
  CHECK(message.find("bad.onnxtxt") != std::string::npos);
  CHECK(message.find("line: 3") != std::string::npos);
  CHECK(message.find("column:") != std::string::npos);
}

TEST_CASE("empty_model_file_is_rejected") {
  auto path = temp_file("empty.onnx", "");
  CHECK_THROWS_AS(load_model_file(path), ModelError);
}

TEST_CASE("model_bytes_from_memory_load_both_syntaxes") {
  std::string text = test::kSeedAbsModel;
  CHECK(load_model_bytes(std::as_bytes(std::span(text))).graph().node_size() == 1);
  std::string binary;
  REQUIRE(test::parse(text).proto().SerializeToString(&binary));
  CHECK(load_model_bytes(std::as_bytes(std::span(binary))).graph().node_size() == 1);
}

TEST_CASE("model: with_initializers turns named graph inputs into initializers of any type") {
  const Model model = test::parse(
      "<ir_version: 8, opset_import: [\"\" : 17]>\n"
      "g (float[2] x, int64[3] shape, float[2] w) => (float[2] y) { y = Mul(x, w) }");
  Tensor w(ElementType::float32, {2});
  w.data<float>()[0] = 1.5f;
  w.data<float>()[1] = -2.0f;
  Tensor shape(ElementType::int64, {3});
  shape.data<int64_t>()[2] = 7;
  const Model frozen = with_initializers(model, {{"w", w}, {"shape", shape}});
  REQUIRE(frozen.graph().input_size() == 1);
  CHECK(frozen.graph().input(0).name() == "x");
  REQUIRE(frozen.graph().initializer_size() == 2);
  CHECK(model.graph().input_size() == 3);  // the original is unchanged
  for (const auto& init : frozen.graph().initializer()) {
    if (init.name() == "w") CHECK(init.data_type() == onnx::TensorProto::FLOAT);
    else CHECK(init.data_type() == onnx::TensorProto::INT64);
  }
  CHECK_THROWS_AS(with_initializers(model, {{"y", w}}), NotFoundError);  // an output, not an input
  try {
    with_initializers(model, {{"nope", w}});
    FAIL("no error");
  } catch (const NotFoundError& e) {
    CHECK(std::string(e.what()).find("'nope' is not a graph input") != std::string::npos);
  }
}
