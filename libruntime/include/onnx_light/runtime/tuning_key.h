#pragma once
// The exact identity of a tunable kernel variant.
#include <compare>
#include <cstdint>
#include <functional>
#include <string>

namespace onnx_light::runtime {

inline constexpr const char* kLibraryName = "onnx_light";
inline constexpr int kCpuDevice = -1;
// The ABI kernels of this build register unless they say otherwise (Abs is one ahead). Bumped
// for every kernel when what a profile means changes for all of them: 2 records the spin class.
inline constexpr int32_t kTuningAbi = 2;

struct TuningKey {
  std::string library = kLibraryName;
  std::string kernel;          // ONNX op type, e.g. "Abs"
  std::string implementation;  // "portable", "avx2", ...
  int32_t element_type = 1;    // TensorProto.DataType
  int32_t device = kCpuDevice;
  // Bumped when the parameter set changes shape or what a profile means. 2: profiles record
  // whether the sessions' idle workers spin (host.idle_spin), which moves parallel thresholds.
  int32_t tuning_abi = kTuningAbi;

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
