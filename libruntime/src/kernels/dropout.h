#pragma once
// Dropout of a float type. Defined in random.cc (training mode draws from the node's generator);
// registered with the data-movement kernels, whose copy it is in inference.
#include <memory>

#include "onnx_light/runtime/kernel.h"

namespace onnx_light::runtime::kernels {

std::unique_ptr<Kernel> create_dropout_kernel(const KernelCreateInfo& info, ElementType type);

}  // namespace onnx_light::runtime::kernels
