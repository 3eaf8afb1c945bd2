#pragma once
// The graph optimizer: runs once when a session is created, on a copy of the model, before the
// session orders the nodes and chooses kernels. Rewrites produce ordinary ONNX nodes or nodes of
// domain "com.onnx_light" (FusedConv, FusedGemm, FusedMatMul, Gelu, LayerNormalization,
// ElementwiseChain), with an
// opset import for that domain added to the model. The passes, in order (src/optimizer/passes.cc):
//
//   basic: constant_folding      every node whose inputs are all constants (initializers, Constant
//                                outputs) or static shapes (Shape of a fully known shape), evaluated
//                                with the session's own kernel table; results become initializers
//          identity_elimination  Identity, inference Dropout, Cast to the same type, and Reshape /
//                                Squeeze / Unsqueeze / Flatten whose output shape equals the input's
//          dead_node_elimination nodes and initializers nothing reads
//   all:   conv_bn_folding       BatchNormalization after a Conv or ConvTranspose into its weights and bias
//          conv_mul_add_folding  Mul / Add by a per-output-channel constant after a Conv or ConvTranspose, likewise
//          gemm_bn_folding       BatchNormalization after a 2-D Gemm / MatMul with constant B into B's
//                                columns and a bias (the MatMul becomes a Gemm)
//          matmul_add_to_gemm    2-D MatMul + Add(1-D constant bias) into Gemm
//          layer_norm_fusion     ReduceMean/Sub/Pow/ReduceMean/Add/Sqrt/Div/Mul/Add over the last axis
//                                (also when that axis is symbolic: then gamma must be longer than 1)
//          gelu_fusion           x * 0.5 * (1 + Erf(x / sqrt(2))) in its exporter spellings
//          epilogue_fusion       Conv / Gemm / MatMul followed by a residual Add and/or an
//                                activation (Relu, Clip with constant bounds, LeakyRelu, Sigmoid,
//                                HardSigmoid, HardSwish, Tanh, and the decomposed x*Sigmoid(x),
//                                x*HardSigmoid(x), x*Clip(x+3,0,6)/6) into FusedConv / FusedGemm /
//                                FusedMatMul (contract: src/kernels/epilogue.h); a MatMul's bias
//                                Add of a constant [N] when B has rank >= 2
//          elementwise_chain_fusion  two or more consecutive Add/Sub/Mul/Div (by one constant
//                                element or a value of the chain's shape), Relu, Clip, LeakyRelu,
//                                Sigmoid, HardSigmoid, HardSwish, Tanh, Abs, Neg, Sqrt, Exp into one
//                                ElementwiseChain (one pass over memory; src/kernels/elementwise_chain.cc)
// Nothing is fused across a value that is a graph output or that another node also reads; graph
// inputs and outputs keep their names.
//
// Bits: `none` runs the model exactly as written and is bit-exact with sessions before the
// optimizer existed. `basic` is bit-exact too (folded nodes are computed by the same kernels).
// Under `all`, results stay within ~1e-5 relative of `none` but are not bit-identical: folding a
// BatchNormalization or a Mul into a Conv's weights changes rounding (W*s rounds before the
// products are summed), fused LayerNormalization and Gelu compute the same formula in another
// order, a fused bias or residual Add is added before rather than after rounding the product, and
// the decomposed HardSwish forms become x*min(max(x/6+0.5,0),1).
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "onnx_light/runtime/model.h"

namespace onnx_light::runtime {

class KernelTable;

enum class OptimizationLevel { none, basic, all };

std::string_view optimization_level_name(OptimizationLevel level);
// "none", "basic", "all"; throws InvalidValueError naming the value otherwise.
OptimizationLevel parse_optimization_level(std::string_view name);

// One transform's effect on the graph.
struct TransformReport {
  std::string name;
  int64_t applied = 0;       // times it rewrote something
  int64_t nodes_before = 0;  // graph nodes when it started
  int64_t nodes_after = 0;
};

struct OptimizationReport {
  OptimizationLevel level = OptimizationLevel::none;
  int64_t nodes_before = 0;
  int64_t nodes_after = 0;
  std::vector<TransformReport> transforms;  // in the order they ran; empty for `none`
};

// The optimized model (the same model for `none`). `table` evaluates folded constants and tells
// which fused kernels exist (a fusion whose kernel the table lacks is skipped).
Model optimize_model(const Model& model, OptimizationLevel level, const KernelTable& table,
                     OptimizationReport& report);

}  // namespace onnx_light::runtime
