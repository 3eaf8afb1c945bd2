#pragma once
// The exact identity of a tunable kernel variant.
#include <compare>
#include <cstdint>
#include <functional>
#include <string>

namespace onnx_light::runtime {

inline constexpr const char* kLibraryName = "onnx_light";
inline constexpr int kCpuDevice = -1;

struct TuningKey {
  std::string library = kLibraryName;
  std::string kernel;          // ONNX op type, e.g. "Abs"
  std::string implementation;  // "portable", "avx2", ...
  int32_t element_type = 1;    // TensorProto.DataType
  int32_t device = kCpuDevice;
  int32_t tuning_abi = 1;      // bumped when the parameter set changes shape

  auto operator<=>(const TuningKey&) const = default;
  bool operator==(const TuningKey&) const = default;

  // Same key except the ABI: identifies stale profiles.
  bool same_identity(const TuningKey& other) const;
  // "onnx_light/Abs/portable/float/CPU/abi2".
  std::string to_string() const;
};

std::string device_name(int32_t device);

struct TuningKeyHash {
  std::size_t operator()(const TuningKey& key) const;
};

}  // namespace onnx_light::runtime
