#pragma once
// One registration function per kernel family (one file each); RegisterCpuKernels calls them all.
#include "onnx_light/runtime/kernel_table.h"

namespace onnx_light::runtime::kernels {

void register_unary_kernels(KernelTable& table);             // unary.cc
void register_binary_kernels(KernelTable& table);            // binary.cc
void register_comparison_logic_kernels(KernelTable& table);  // comparison_logic.cc
void register_variadic_kernels(KernelTable& table);          // variadic.cc
void register_reduce_kernels(KernelTable& table);            // reduce.cc
void register_data_movement_kernels(KernelTable& table);     // data_movement.cc

}  // namespace onnx_light::runtime::kernels
