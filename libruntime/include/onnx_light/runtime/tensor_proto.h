#pragma once
// Conversion between Tensor and onnx::TensorProto (raw_data and the typed repeated fields).
#include <string>

#include <onnx/onnx_pb.h>

#include "onnx_light/runtime/external_data.h"
#include "onnx_light/runtime/tensor.h"

namespace onnx_light::runtime {

// Throws ModelError naming the tensor when data is missing, short or of a type we do not hold.
// External data is read through `external` (the model's directory, external_data.h); without
// one it is refused with a message saying to load the model by its path.
Tensor tensor_from_proto(const onnx::TensorProto& proto, const ExternalDataDirectory* external = nullptr);
// Writes raw_data (little-endian), dims, data_type and name.
onnx::TensorProto tensor_to_proto(const Tensor& tensor, const std::string& name = {});

}  // namespace onnx_light::runtime
