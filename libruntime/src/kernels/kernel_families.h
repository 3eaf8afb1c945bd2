#pragma once
// One registration function per kernel family (one file each); RegisterCpuKernels calls them all.
#include <memory>

#include "onnx_light/runtime/kernel_table.h"

namespace onnx_light::runtime::kernels {

void register_unary_kernels(KernelTable& table);             // unary.cc
void register_binary_kernels(KernelTable& table);            // binary.cc
void register_comparison_logic_kernels(KernelTable& table);  // comparison_logic.cc
void register_variadic_kernels(KernelTable& table);          // variadic.cc (Sum, Mean, Max, Min, Where)
void register_matmul_gemm_kernels(KernelTable& table);       // matmul_gemm.cc
void register_conv_pool_kernels(KernelTable& table);         // conv_pool.cc
void register_conv_transpose_kernels(KernelTable& table);    // conv_transpose.cc
void register_normalization_kernels(KernelTable& table);     // normalization.cc
void register_softmax_kernels(KernelTable& table);           // softmax.cc (Softmax, LogSoftmax, Hardmax)
void register_reduce_kernels(KernelTable& table);            // reduce.cc (Reduce*, ArgMax/Min, global pools)
void register_shape_kernels(KernelTable& table);             // shape_ops.cc
void register_data_movement_kernels(KernelTable& table);     // data_movement.cc
// indexing.cc (GatherND, ScatterND, ScatterElements, Scatter, OneHot, Compress, NonZero, EyeLike,
// ReverseSequence, MaxUnpool)
void register_indexing_kernels(KernelTable& table);
// quantization.cc (QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear, MatMulInteger, QLinearMatMul)
void register_quantization_kernels(KernelTable& table);
void register_signal_kernels(KernelTable& table);             // signal.cc (Hann/Hamming/BlackmanWindow)
void register_sorting_kernels(KernelTable& table);            // sorting.cc (TopK, Unique)
void register_linear_algebra_kernels(KernelTable& table);     // linear_algebra.cc (Det)
void register_loss_kernels(KernelTable& table);  // loss.cc (NegativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss)
void register_detection_kernels(KernelTable& table);          // detection.cc (NonMaxSuppression)
void register_einsum_kernels(KernelTable& table);             // einsum.cc
void register_spectral_kernels(KernelTable& table);           // spectral.cc (DFT, STFT, MelWeightMatrix)
void register_random_kernels(KernelTable& table);             // random.cc (Random*, Bernoulli, Multinomial)
void register_sampling_kernels(KernelTable& table);           // sampling.cc (GridSample, RoiAlign)
void register_quantized_conv_kernels(KernelTable& table);     // quantized_conv.cc (ConvInteger, QLinearConv)
void register_control_flow_kernels(KernelTable& table);       // control_flow.cc (If, Loop, Scan, SequenceMap)
// sequence.cc (Sequence*, SplitToSequence, ConcatFromSequence, Optional*)
void register_sequence_kernels(KernelTable& table);
// sequence.cc: Identity over a sequence or an optional (data_movement.cc's Identity creates it for one).
std::unique_ptr<Kernel> make_sequence_identity_kernel(const KernelCreateInfo& info);
void register_resize_kernels(KernelTable& table);            // resize.cc (Resize, Upsample)
void register_recurrent_kernels(KernelTable& table);         // recurrent.cc (LSTM, GRU, RNN)
void register_cast_kernels(KernelTable& table);              // cast.cc
void register_gelu_kernels(KernelTable& table);              // gelu.cc (com.onnx_light Gelu)
void register_elementwise_chain_kernels(KernelTable& table); // elementwise_chain.cc (com.onnx_light)
// fused_gemm.cc (com.onnx_light FusedGemm, FusedMatMul, LayerNormalization): after the ones it wraps.
void register_fused_gemm_kernels(KernelTable& table);

}  // namespace onnx_light::runtime::kernels
