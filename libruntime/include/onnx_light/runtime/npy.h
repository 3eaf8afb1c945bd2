#pragma once
// NumPy .npy files (format versions 1.0-3.0, little-endian, C order) for the CLI.
#include <cstddef>
#include <filesystem>
#include <span>
#include <vector>

#include "onnx_light/runtime/tensor.h"

namespace onnx_light::runtime {

// Throws IoError (cannot read) or InvalidValueError naming the file and the header field at fault.
Tensor read_npy(const std::filesystem::path& path);
Tensor parse_npy(std::span<const std::byte> bytes, const std::string& origin = "<bytes>");
void write_npy(const std::filesystem::path& path, const Tensor& tensor);
std::vector<std::byte> serialize_npy(const Tensor& tensor);

}  // namespace onnx_light::runtime
