// External data: tensors kept in side files next to the model, read through a read-only mapping
// and confined to the model's directory (no absolute paths, no "..", no symlink leaving it,
// offset and length inside the file and equal to the tensor's bytes).
#include <doctest/doctest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <sys/stat.h>
#include <unistd.h>

#include "onnx_light/runtime/error.h"
#include "onnx_light/runtime/model.h"
#include "onnx_light/runtime/session.h"
#include "onnx_light/runtime/tensor_proto.h"
#include "test_models.h"

using namespace onnx_light;
using namespace onnx_light::runtime;
namespace fs = std::filesystem;

namespace {

// A fresh directory per test case, removed at the end.
struct ScratchModelDir {
  fs::path path;
  ScratchModelDir() {
    std::string pattern = (fs::temp_directory_path() / "olt-external-XXXXXX").string();
    path = mkdtemp(pattern.data());
  }
  ~ScratchModelDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

void write_bytes(const fs::path& path, const std::vector<float>& values, std::size_t leading_bytes = 0) {
  std::ofstream out(path, std::ios::binary);
  const std::string pad(leading_bytes, '\x7f');
  out.write(pad.data(), static_cast<std::streamsize>(pad.size()));
  out.write(reinterpret_cast<const char*>(values.data()), static_cast<std::streamsize>(values.size() * sizeof(float)));
}

std::vector<float> ramp_values(int n, float start) {
  std::vector<float> v(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) v[static_cast<std::size_t>(i)] = start + static_cast<float>(i);
  return v;
}

// y = Add(x, w) over float[N], w an initializer whose data is external with these entries.
onnx::ModelProto add_model(int n, const std::vector<std::pair<std::string, std::string>>& entries) {
  std::string zeros;
  for (int i = 0; i < n; ++i) zeros += (i ? ", " : "") + std::string("0");
  const std::string text = "<ir_version: 8, opset_import: [\"\" : 17]>\ng (float[" + std::to_string(n) + "] x) => (float[" +
                           std::to_string(n) + "] y) <float[" + std::to_string(n) + "] w = {" + zeros +
                           "}> { y = Add(x, w) }";
  onnx::ModelProto proto = test::parse(text).proto();
  onnx::TensorProto& w = *proto.mutable_graph()->mutable_initializer(0);
  w.clear_float_data();
  w.clear_raw_data();
  w.set_data_location(onnx::TensorProto_DataLocation_EXTERNAL);
  for (const auto& [key, value] : entries) {
    auto* entry = w.add_external_data();
    entry->set_key(key);
    entry->set_value(value);
  }
  return proto;
}

fs::path save(const onnx::ModelProto& proto, const fs::path& path) {
  std::ofstream out(path, std::ios::binary);
  proto.SerializeToOstream(&out);
  return path;
}

std::string load_error(const fs::path& path) {
  try {
    (void)load_model_file(path);
  } catch (const ModelError& e) {
    return e.what();
  }
  FAIL("the model loaded");
  return {};
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

std::vector<float> run_add(const Model& model, int n, float x) {
  RuntimeSessionOptions options;
  options.parameters = RuntimeParameters(1);
  RuntimeSession session(model, options);
  RuntimeContext context;
  Tensor input(ElementType::float32, {n});
  for (int i = 0; i < n; ++i) input.data<float>()[i] = x;
  context.set("x", input);
  session.run(context);
  const Tensor& y = context.get("y");
  return std::vector<float>(y.data<float>(), y.data<float>() + n);
}

}  // namespace

TEST_CASE("aligned_external_tensor_is_a_view_of_the_mapping_and_runs") {
  ScratchModelDir dir;
  write_bytes(dir.path / "weights.bin", ramp_values(64, 1.0f));
  const fs::path model_path = save(add_model(64, {{"location", "weights.bin"}, {"offset", "0"}, {"length", "256"}}),
                                   dir.path / "model.onnx");
  Model model = load_model_file(model_path);
  REQUIRE(model.external_data() != nullptr);
  const Tensor a = tensor_from_proto(model.graph().initializer(0), model.external_data());
  const Tensor b = tensor_from_proto(model.graph().initializer(0), model.external_data());
  CHECK(a.raw_data() == b.raw_data());  // one mapping, no copies
  CHECK(a.data<float>()[63] == 64.0f);
  const std::vector<float> y = run_add(model, 64, 0.5f);
  CHECK(y[0] == 1.5f);
  CHECK(y[63] == 64.5f);
}

TEST_CASE("unaligned_offset_is_copied_and_length_may_be_omitted") {
  ScratchModelDir dir;
  fs::create_directory(dir.path / "data");
  write_bytes(dir.path / "data" / "w.bin", ramp_values(8, 10.0f), 4);
  const fs::path model_path =
      save(add_model(8, {{"location", "data/w.bin"}, {"offset", "4"}, {"checksum", "ignored"}}), dir.path / "m.onnx");
  Model model = load_model_file(model_path);
  const Tensor a = tensor_from_proto(model.graph().initializer(0), model.external_data());
  const Tensor b = tensor_from_proto(model.graph().initializer(0), model.external_data());
  CHECK(a.raw_data() != b.raw_data());  // copies: the bytes are not 64-byte aligned in the file
  CHECK(run_add(model, 8, 1.0f) == std::vector<float>{11, 12, 13, 14, 15, 16, 17, 18});
}

TEST_CASE("external_weights_go_through_the_optimizer_and_conv_batchnorm_folding") {
  // Conv (W external) then BatchNormalization (scale external): the optimizer reads both through
  // the mapping, writes folded weights of its own and never writes the read-only pages.
  ScratchModelDir dir;
  const std::string text =
      "<ir_version: 8, opset_import: [\"\" : 17]>\n"
      "g (float[1, 2, 4, 4] x) => (float[1, 2, 4, 4] y) <float[2, 2, 1, 1] w = {0, 0, 0, 0}, float[2] s = {0, 0}, "
      "float[2] bias = {0.5, -0.5}, float[2] mean = {0, 0}, float[2] var = {1, 1}> {\n"
      "  c = Conv(x, w)\n  y = BatchNormalization <epsilon = 0.0> (c, s, bias, mean, var)\n}";
  onnx::ModelProto proto = test::parse(text).proto();
  write_bytes(dir.path / "w.bin", {1, 2, 3, 4, 2, 3});  // w at 0, s at 16 (unaligned: a copy)
  for (int k = 0; k < 2; ++k) {
    onnx::TensorProto& t = *proto.mutable_graph()->mutable_initializer(k);
    t.clear_float_data();
    t.set_data_location(onnx::TensorProto_DataLocation_EXTERNAL);
    auto add = [&t](const std::string& key, const std::string& value) {
      auto* e = t.add_external_data();
      e->set_key(key);
      e->set_value(value);
    };
    add("location", "w.bin");
    add("offset", k == 0 ? "0" : "16");
    add("length", k == 0 ? "16" : "8");
  }
  Model model = load_model_file(save(proto, dir.path / "conv.onnx"));
  RuntimeSessionOptions options;
  options.parameters = RuntimeParameters(1);
  RuntimeSession session(model, options);
  CHECK(session.optimization_report().nodes_after == 1);  // BatchNormalization folded into the Conv
  RuntimeContext context;
  Tensor x(ElementType::float32, {1, 2, 4, 4});
  for (int i = 0; i < 32; ++i) x.data<float>()[i] = i < 16 ? 1.0f : 2.0f;
  context.set("x", x);
  session.run(context);
  const Tensor& y = context.get("y");
  // map 0: (1*1 + 2*2) * 2 + 0.5; map 1: (3*1 + 4*2) * 3 - 0.5
  CHECK(y.data<float>()[0] == 10.5f);
  CHECK(y.data<float>()[16] == 32.5f);
}

TEST_CASE("locations_leaving_the_model_directory_are_refused") {
  ScratchModelDir dir;
  fs::create_directory(dir.path / "model");
  write_bytes(dir.path / "outside.bin", ramp_values(4, 0.0f));
  write_bytes(dir.path / "model" / "inside.bin", ramp_values(4, 0.0f));
  const fs::path m = dir.path / "model" / "m.onnx";
  SUBCASE("absolute") {
    save(add_model(4, {{"location", (dir.path / "outside.bin").string()}}), m);
    CHECK(contains(load_error(m), "is an absolute path"));
  }
  SUBCASE("dot_dot") {
    save(add_model(4, {{"location", "../outside.bin"}}), m);
    const std::string message = load_error(m);
    CHECK(contains(message, "m.onnx: tensor 'w': external data location '../outside.bin' contains '..'"));
  }
  SUBCASE("dot_dot_in_the_middle") {
    save(add_model(4, {{"location", "sub/../inside.bin"}}), m);
    CHECK(contains(load_error(m), "contains '..'"));
  }
  SUBCASE("symlink_to_outside") {
    fs::create_symlink(dir.path / "outside.bin", dir.path / "model" / "link.bin");
    save(add_model(4, {{"location", "link.bin"}}), m);
    const std::string message = load_error(m);
    CHECK(contains(message, "outside the model's directory"));
    CHECK(contains(message, "outside.bin"));
  }
  SUBCASE("symlinked_directory_to_outside") {
    fs::create_directory_symlink(dir.path, dir.path / "model" / "up");
    save(add_model(4, {{"location", "up/outside.bin"}}), m);
    CHECK(contains(load_error(m), "outside the model's directory"));
  }
  SUBCASE("symlink_staying_inside_is_followed") {
    fs::create_symlink("inside.bin", dir.path / "model" / "alias.bin");
    save(add_model(4, {{"location", "alias.bin"}}), m);
    CHECK(run_add(load_model_file(m), 4, 1.0f) == std::vector<float>{1, 2, 3, 4});
  }
  SUBCASE("model_reached_through_a_symlinked_directory_still_reads_its_own_files") {
    fs::create_directory_symlink(dir.path / "model", dir.path / "via");
    save(add_model(4, {{"location", "inside.bin"}}), m);
    CHECK(run_add(load_model_file(dir.path / "via" / "m.onnx"), 4, 0.0f) == std::vector<float>{0, 1, 2, 3});
  }
}

TEST_CASE("offsets_lengths_and_files_that_do_not_fit_the_tensor_are_refused") {
  ScratchModelDir dir;
  write_bytes(dir.path / "w.bin", ramp_values(4, 0.0f));  // 16 bytes
  const fs::path m = dir.path / "m.onnx";
  SUBCASE("offset_past_the_end") {
    save(add_model(4, {{"location", "w.bin"}, {"offset", "17"}}), m);
    CHECK(contains(load_error(m), "offset 17 is past the end of 'w.bin' (16 bytes)"));
  }
  SUBCASE("length_past_the_end") {
    save(add_model(4, {{"location", "w.bin"}, {"offset", "8"}, {"length", "16"}}), m);
    CHECK(contains(load_error(m), "offset 8 + length 16 runs past the end"));
  }
  SUBCASE("length_not_the_tensors_size") {
    save(add_model(4, {{"location", "w.bin"}, {"length", "12"}}), m);
    CHECK(contains(load_error(m), "holds 12 bytes at offset 0 but float[4] needs 16"));
  }
  SUBCASE("truncated_file_without_length") {
    save(add_model(8, {{"location", "w.bin"}}), m);
    CHECK(contains(load_error(m), "to the end of the file"));
  }
  SUBCASE("huge_offset_does_not_wrap") {
    save(add_model(4, {{"location", "w.bin"}, {"offset", "18446744073709551615"}}), m);
    CHECK(contains(load_error(m), "offset '18446744073709551615' is not a non-negative integer"));
  }
  SUBCASE("negative_offset") {
    save(add_model(4, {{"location", "w.bin"}, {"offset", "-4"}}), m);
    CHECK(contains(load_error(m), "offset '-4' is not a non-negative integer"));
  }
  SUBCASE("missing_file") {
    save(add_model(4, {{"location", "nope.bin"}}), m);
    CHECK(contains(load_error(m), "'nope.bin' cannot be opened"));
  }
  SUBCASE("a_directory") {
    fs::create_directory(dir.path / "d");
    save(add_model(4, {{"location", "d"}}), m);
    CHECK(contains(load_error(m), "is not a regular file"));
  }
  SUBCASE("a_fifo_is_refused_without_hanging") {
    REQUIRE(mkfifo((dir.path / "fifo").c_str(), 0600) == 0);
    save(add_model(4, {{"location", "fifo"}}), m);
    CHECK(contains(load_error(m), "is not a regular file"));
  }
  SUBCASE("no_location") {
    save(add_model(4, {{"offset", "0"}}), m);
    CHECK(contains(load_error(m), "has no 'location' entry"));
  }
  SUBCASE("empty_location") {
    save(add_model(4, {{"location", ""}}), m);
    CHECK(contains(load_error(m), "is empty"));
  }
  SUBCASE("unknown_key") {
    save(add_model(4, {{"location", "w.bin"}, {"basepath", "/etc"}}), m);
    CHECK(contains(load_error(m), "unknown external_data key 'basepath'"));
  }
  SUBCASE("entries_without_data_location_external") {
    onnx::ModelProto proto = add_model(4, {{"location", "w.bin"}});
    proto.mutable_graph()->mutable_initializer(0)->set_data_location(onnx::TensorProto_DataLocation_DEFAULT);
    save(proto, m);
    CHECK(contains(load_error(m), "data_location is not EXTERNAL"));
  }
  SUBCASE("raw_data_beside_external_data") {
    onnx::ModelProto proto = add_model(4, {{"location", "w.bin"}});
    proto.mutable_graph()->mutable_initializer(0)->set_raw_data(std::string(16, '\0'));
    save(proto, m);
    CHECK(contains(load_error(m), "both external data and raw_data"));
  }
}

TEST_CASE("a_model_from_bytes_has_no_directory_for_its_external_data") {
  const onnx::ModelProto proto = add_model(4, {{"location", "w.bin"}});
  std::string bytes;
  proto.SerializeToString(&bytes);
  Model model = load_model_bytes(std::as_bytes(std::span(bytes)), "<bytes>");
  CHECK(model.external_data() == nullptr);
  try {
    RuntimeSession session(model);
    FAIL("created");
  } catch (const ModelError& e) {
    CHECK(contains(e.what(), "its data is in an external file ('w.bin')"));
    CHECK(contains(e.what(), "load the model by its path"));
  }
}
