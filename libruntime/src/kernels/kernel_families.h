#pragma once
// One registration function per kernel family (one file each); RegisterCpuKernels calls them all.
#include "onnx_light/runtime/kernel_table.h"

namespace onnx_light::runtime::kernels {

void register_unary_kernels(KernelTable& table);
void register_binary_kernels(KernelTable& table);
void register_data_movement_kernels(KernelTable& table);

}  // namespace onnx_light::runtime::kernels
