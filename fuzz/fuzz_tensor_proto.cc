// libFuzzer target: any bytes that parse as an onnx::TensorProto must either convert to a Tensor or be
// refused with onnx_light::Error; accepted tensors must survive tensor_to_proto -> tensor_from_proto.
#include <climits>
#include <cstddef>
#include <cstdint>

#include <onnx/onnx_pb.h>

#include "onnx_light/runtime/error.h"
#include "onnx_light/runtime/tensor_proto.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace onnx_light::runtime;
  if (size > INT_MAX) return 0;
  onnx::TensorProto proto;
  if (!proto.ParseFromArray(data, static_cast<int>(size))) return 0;
  Tensor tensor;
  try {
    tensor = tensor_from_proto(proto);
  } catch (const onnx_light::Error&) {
    return 0;
  }
  const Tensor again = tensor_from_proto(tensor_to_proto(tensor, proto.name()));
  if (!bitwise_equal(tensor, again)) __builtin_trap();
  return 0;
}
