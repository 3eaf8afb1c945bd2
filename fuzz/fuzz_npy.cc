// libFuzzer target: parse_npy must reject hostile bytes with onnx_light::Error, never crash, leak or
// over-allocate, and whatever it accepts must survive serialize_npy -> parse_npy unchanged.
#include <cstddef>
#include <cstdint>
#include <span>

#include "onnx_light/runtime/error.h"
#include "onnx_light/runtime/npy.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace onnx_light::runtime;
  Tensor tensor;
  try {
    tensor = parse_npy(std::span(reinterpret_cast<const std::byte*>(data), size), "fuzz.npy");
  } catch (const onnx_light::Error&) {
    return 0;
  }
  const Tensor again = parse_npy(serialize_npy(tensor), "round-trip.npy");
  if (!bitwise_equal(tensor, again)) __builtin_trap();
  return 0;
}
