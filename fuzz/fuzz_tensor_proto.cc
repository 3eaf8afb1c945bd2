// libFuzzer target: any bytes that parse as an onnx::TensorProto must either convert to a Tensor or be
// refused with onnx_light::Error; accepted tensors must survive tensor_to_proto -> tensor_from_proto.
// External data is read from a directory made once per process: a 256-byte side file "w.bin", a
// subdirectory, and a symlink "up" pointing out of the directory, so fuzzed locations, offsets and
// lengths reach the confinement and bounds checks.
#include <climits>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>

#include <onnx/onnx_pb.h>
#include <unistd.h>

#include "onnx_light/runtime/error.h"
#include "onnx_light/runtime/external_data.h"
#include "onnx_light/runtime/tensor_proto.h"

namespace {

// Removed at exit, so replaying the corpus in ctest leaves nothing in /tmp.
struct SideFiles {
  std::filesystem::path root;
  std::unique_ptr<onnx_light::runtime::ExternalDataDirectory> directory;
  SideFiles() {
    namespace fs = std::filesystem;
    std::string pattern = (fs::temp_directory_path() / "fuzz-tensor-proto-XXXXXX").string();
    root = mkdtemp(pattern.data());
    fs::create_directory(root / "model");
    fs::create_directory(root / "model" / "sub");
    std::ofstream out(root / "model" / "w.bin", std::ios::binary);
    for (int i = 0; i < 256; ++i) out.put(static_cast<char>(i));
    out.close();
    fs::copy_file(root / "model" / "w.bin", root / "secret.bin");
    fs::create_directory_symlink("..", root / "model" / "up");
    directory = std::make_unique<onnx_light::runtime::ExternalDataDirectory>(root / "model", "<fuzz>");
  }
  ~SideFiles() {
    std::error_code ec;
    std::filesystem::remove_all(root, ec);
  }
};

const onnx_light::runtime::ExternalDataDirectory& side_files() {
  static const SideFiles files;
  return *files.directory;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace onnx_light::runtime;
  if (size > INT_MAX) return 0;
  onnx::TensorProto proto;
  if (!proto.ParseFromArray(data, static_cast<int>(size))) return 0;
  Tensor tensor;
  try {
    tensor = tensor_from_proto(proto, &side_files());
  } catch (const onnx_light::Error&) {
    return 0;
  }
  const Tensor again = tensor_from_proto(tensor_to_proto(tensor, proto.name()));
  if (!bitwise_equal(tensor, again)) __builtin_trap();
  return 0;
}
