#include "onnx_light/runtime/model.h"

#include <cctype>
#include <fstream>
#include <iterator>
#include <vector>

#include <fmt/format.h>
#include <onnx/defs/parser.h>

#include "onnx_light/runtime/error.h"
#include "onnx_light/runtime/tensor_proto.h"

namespace onnx_light::runtime {

namespace {

// The checks every model needs before a session looks at it; errors name the origin.
void check_model_proto(const onnx::ModelProto& model, const std::string& origin) {
  if (!model.has_graph()) throw ModelError(fmt::format("{}: not an ONNX model (no graph)", origin));
  if (model.graph().output_size() == 0) throw ModelError(fmt::format("{}: the graph has no outputs", origin));
  if (model.opset_import_size() == 0 && model.ir_version() >= 3)
    throw ModelError(fmt::format("{}: the model imports no opset", origin));
}

}  // namespace

Model::Model(std::shared_ptr<const onnx::ModelProto> proto, std::string origin,
             std::shared_ptr<const ExternalDataDirectory> external)
    : proto_(std::move(proto)), origin_(std::move(origin)), external_(std::move(external)) {}

Model Model::with_proto(onnx::ModelProto proto) const { return with_proto(std::move(proto), origin_); }

Model Model::with_proto(onnx::ModelProto proto, std::string origin) const {
  check_model_proto(proto, origin);
  return Model(std::make_shared<const onnx::ModelProto>(std::move(proto)), std::move(origin), external_);
}

int64_t Model::opset_version(std::string_view domain) const {
  const bool default_domain = domain.empty() || domain == "ai.onnx";
  for (const auto& import : proto_->opset_import()) {
    const bool import_default = import.domain().empty() || import.domain() == "ai.onnx";
    if ((default_domain && import_default) || import.domain() == domain) return import.version();
  }
  return 0;
}

bool looks_like_onnx_text(std::span<const std::byte> bytes) {
  // Binary ModelProto starts with a field tag (a control byte such as 0x08); the text syntax
  // starts with '<', a graph name or a comment, and contains no control bytes besides whitespace.
  std::size_t i = 0;
  while (i < bytes.size() && std::isspace(static_cast<unsigned char>(bytes[i]))) ++i;
  if (i == bytes.size()) return false;
  auto first = static_cast<unsigned char>(bytes[i]);
  if (!(first == '<' || first == '#' || first == '_' || std::isalpha(first))) return false;
  std::size_t limit = std::min<std::size_t>(bytes.size(), 4096);
  for (std::size_t j = 0; j < limit; ++j) {
    auto c = static_cast<unsigned char>(bytes[j]);
    if (c < 0x20 && c != '\n' && c != '\r' && c != '\t') return false;
  }
  return true;
}

Model model_from_proto(onnx::ModelProto proto, const std::string& origin) {
  check_model_proto(proto, origin);
  return Model(std::make_shared<const onnx::ModelProto>(std::move(proto)), origin);
}

Model with_initializers(const Model& model, const std::map<std::string, Tensor>& values) {
  onnx::ModelProto proto = model.proto();
  auto* graph = proto.mutable_graph();
  for (const auto& [name, value] : values) {
    int index = -1;
    for (int i = 0; i < graph->input_size() && index < 0; ++i)
      if (graph->input(i).name() == name) index = i;
    if (index < 0) throw NotFoundError(fmt::format("{}: '{}' is not a graph input", model.origin(), name));
    graph->mutable_input()->DeleteSubrange(index, 1);
    *graph->add_initializer() = tensor_to_proto(value, name);
  }
  return model.with_proto(std::move(proto));
}

Model parse_model_text(std::string_view text, const std::string& origin) {
  auto proto = std::make_shared<onnx::ModelProto>();
  std::string buffer(text);  // the parser wants a NUL-terminated string
  onnx::Common::Status status;
  try {
    status = onnx::OnnxParser::Parse(*proto, buffer.c_str());
  } catch (const std::exception& e) {
    throw ModelError(fmt::format("{}: ONNX text syntax error: {}", origin, e.what()));
  }
  if (!status.IsOK()) {
    std::string message = status.ErrorMessage();
    while (!message.empty() && (message.back() == '\n' || message.back() == ' ')) message.pop_back();
    throw ModelError(fmt::format("{}: ONNX text syntax error {}", origin, message));
  }
  check_model_proto(*proto, origin);
  return Model(std::move(proto), origin);
}

Model load_model_bytes(std::span<const std::byte> bytes, const std::string& origin) {
  if (bytes.empty()) throw ModelError(fmt::format("{}: the model is empty", origin));
  if (looks_like_onnx_text(bytes))
    return parse_model_text(std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()), origin);
  if (bytes.size() > static_cast<std::size_t>(INT32_MAX))
    throw ModelError(fmt::format("{}: a protobuf model cannot be over 2 GiB; save its tensors as external data "
                                 "(onnx.save_model(..., save_as_external_data=True)) and load it by its path",
                                 origin));
  auto proto = std::make_shared<onnx::ModelProto>();
  if (!proto->ParseFromArray(bytes.data(), static_cast<int>(bytes.size())))
    throw ModelError(fmt::format("{}: not a valid ONNX protobuf model (truncated or not protobuf)", origin));
  check_model_proto(*proto, origin);
  return Model(std::move(proto), origin);
}

Model load_model_file(const std::filesystem::path& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) throw IoError(fmt::format("{}: no such file", path.string()));
  if (std::filesystem::is_directory(path, ec)) throw IoError(fmt::format("{}: is a directory, not a model", path.string()));
  std::ifstream in(path, std::ios::binary);
  if (!in) throw IoError(fmt::format("{}: cannot open for reading", path.string()));
  std::vector<char> content((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) throw IoError(fmt::format("{}: read failed", path.string()));
  Model loaded = load_model_bytes(std::as_bytes(std::span(content)), path.string());
  auto external = std::make_shared<const ExternalDataDirectory>(path.parent_path(), path.string());
  for (const auto& initializer : loaded.graph().initializer())
    if (uses_external_data(initializer)) (void)tensor_from_proto(initializer, external.get());
  for (const auto& node : loaded.graph().node())
    for (const auto& attribute : node.attribute())
      if (attribute.has_t() && uses_external_data(attribute.t())) (void)tensor_from_proto(attribute.t(), external.get());
  return Model(std::make_shared<const onnx::ModelProto>(loaded.proto()), path.string(), std::move(external));
}

}  // namespace onnx_light::runtime
