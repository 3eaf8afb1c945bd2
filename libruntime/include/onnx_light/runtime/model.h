#pragma once
// Loading ONNX models from binary protobuf, the ONNX text syntax, or bytes.
#include <cstddef>
#include <filesystem>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include <onnx/onnx_pb.h>

#include "onnx_light/runtime/external_data.h"
#include "onnx_light/runtime/tensor.h"

namespace onnx_light::runtime {

// An immutable, shared, loaded model. `origin` names where it came from for error messages.
class Model {
 public:
  // `external`: the directory its external data is read from (nullptr: a model that was not
  // loaded from a file, whose external tensors are refused).
  Model(std::shared_ptr<const onnx::ModelProto> proto, std::string origin,
        std::shared_ptr<const ExternalDataDirectory> external = nullptr);
  const onnx::ModelProto& proto() const { return *proto_; }
  const onnx::GraphProto& graph() const { return proto_->graph(); }
  const std::string& origin() const { return origin_; }
  // Opset version imported for a domain ("" and "ai.onnx" are the same); 0 when not imported.
  int64_t opset_version(std::string_view domain = "") const;
  // Where external tensors are read from; nullptr when the model was not loaded from a file.
  const ExternalDataDirectory* external_data() const { return external_.get(); }
  // A rewritten proto of this model, keeping its origin and external data directory.
  Model with_proto(onnx::ModelProto proto) const;
  // The same under another origin (a control-flow node's graph: "model.onnx (If node 'x' then_branch)").
  Model with_proto(onnx::ModelProto proto, std::string origin) const;

 private:
  std::shared_ptr<const onnx::ModelProto> proto_;
  std::string origin_;
  std::shared_ptr<const ExternalDataDirectory> external_;
};

// True when the bytes look like the ONNX text syntax rather than binary protobuf.
bool looks_like_onnx_text(std::span<const std::byte> bytes);
// Throws ModelError with line and column on a syntax error.
Model parse_model_text(std::string_view text, const std::string& origin = "<text>");
// Binary protobuf or text syntax, detected from the content.
Model load_model_bytes(std::span<const std::byte> bytes, const std::string& origin = "<bytes>");
// Throws IoError for a missing/unreadable file, ModelError for bad content; both name the file.
// External data (external_data.h) is read from the file's directory; every external initializer
// is checked (location, offset, length) here, so a bad one fails the load, naming it.
Model load_model_file(const std::filesystem::path& path);
Model model_from_proto(onnx::ModelProto proto, const std::string& origin = "<proto>");
// The same model with each named graph input turned into an initializer holding its tensor
// (weights made constant, so kernels can prepare them once, as in an exported model). Throws
// NotFoundError naming a value that is not a graph input.
Model with_initializers(const Model& model, const std::map<std::string, Tensor>& values);

}  // namespace onnx_light::runtime
