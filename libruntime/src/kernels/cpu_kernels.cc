// The explicit CPU kernel table: every family is registered here, in preference order.
#include "kernels/kernel_families.h"
#include "onnx_light/runtime/kernel_table.h"

namespace onnx_light::runtime {

void RegisterCpuKernels(KernelTable& table) {
  kernels::register_unary_kernels(table);
  kernels::register_binary_kernels(table);
  kernels::register_comparison_logic_kernels(table);
  kernels::register_variadic_kernels(table);
  kernels::register_matmul_gemm_kernels(table);
  kernels::register_conv_pool_kernels(table);
  kernels::register_conv_transpose_kernels(table);
  kernels::register_normalization_kernels(table);
  kernels::register_softmax_kernels(table);
  kernels::register_reduce_kernels(table);
  kernels::register_shape_kernels(table);
  kernels::register_data_movement_kernels(table);
  kernels::register_indexing_kernels(table);
  kernels::register_quantization_kernels(table);
  kernels::register_signal_kernels(table);
  kernels::register_sorting_kernels(table);
  kernels::register_linear_algebra_kernels(table);
  kernels::register_loss_kernels(table);
  kernels::register_detection_kernels(table);
  kernels::register_einsum_kernels(table);
  kernels::register_spectral_kernels(table);
  kernels::register_random_kernels(table);
  kernels::register_sampling_kernels(table);
  kernels::register_control_flow_kernels(table);
  kernels::register_sequence_kernels(table);
  kernels::register_quantized_conv_kernels(table);
  kernels::register_resize_kernels(table);
  kernels::register_recurrent_kernels(table);
  kernels::register_cast_kernels(table);
  kernels::register_gelu_kernels(table);
  kernels::register_elementwise_chain_kernels(table);
  kernels::register_fused_gemm_kernels(table);
}

}  // namespace onnx_light::runtime
