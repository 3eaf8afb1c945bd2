#pragma once
// ONNX external data: a model over protobuf's 2 GiB keeps its large tensors in side files next to
// it (TensorProto.data_location = EXTERNAL with location/offset/length entries). A model from
// the internet must not read what lies outside its own directory through them, so a location is
// a relative path with no "..", and the file it opens, symlinks resolved, must be inside the
// model's directory; offset and length must lie within the file and match the tensor's bytes.
// Files are memory-mapped read-only once per model; a tensor whose bytes are 64-byte aligned in
// the file is a view of the mapping (no copy), others are copied.
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include <onnx/onnx_pb.h>

#include "onnx_light/runtime/tensor.h"

namespace onnx_light::runtime {

// True when `proto` keeps its bytes in an external file.
bool uses_external_data(const onnx::TensorProto& proto);

class ExternalDataDirectory {
 public:
  // `directory` holds the model (made absolute now, so a later chdir changes nothing); `origin`
  // names the model in errors.
  ExternalDataDirectory(const std::filesystem::path& directory, std::string origin);
  ~ExternalDataDirectory();
  ExternalDataDirectory(const ExternalDataDirectory&) = delete;
  ExternalDataDirectory& operator=(const ExternalDataDirectory&) = delete;

  // The tensor `proto` describes (its element type, shape and byte size already checked by the
  // caller). Throws ModelError naming the model, the tensor and the location at fault.
  Tensor read(const onnx::TensorProto& proto, ElementType type, const Shape& shape, uint64_t bytes) const;
  const std::filesystem::path& directory() const { return directory_; }

 private:
  struct MappedFile;
  std::shared_ptr<const MappedFile> map(const std::string& location, const std::string& label) const;

  std::filesystem::path directory_;
  std::string origin_;
  mutable std::mutex mutex_;
  mutable std::map<std::string, std::shared_ptr<const MappedFile>> files_;  // by canonical path
};

}  // namespace onnx_light::runtime
