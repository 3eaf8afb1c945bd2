#pragma once
// The transforms, one function each; every one returns how many times it rewrote the graph.
// They mark nodes removed through GraphEdit; the pass list compacts between them.
#include <cstdint>

#include "optimizer/graph_edit.h"

namespace onnx_light::runtime::optimizer {

// elimination.cc
int64_t fold_constants(GraphEdit& g);
int64_t eliminate_identities(GraphEdit& g);
int64_t eliminate_dead_nodes(GraphEdit& g);
// conv_folding.cc
int64_t fold_conv_batch_norm(GraphEdit& g);
int64_t fold_conv_mul_add(GraphEdit& g);
// gemm_folding.cc
int64_t fold_gemm_batch_norm(GraphEdit& g);
// epilogue_fusion.cc
int64_t matmul_add_to_gemm(GraphEdit& g);
int64_t fuse_epilogues(GraphEdit& g);
// pattern_fusion.cc
int64_t fuse_layer_norm(GraphEdit& g);
int64_t fuse_gelu(GraphEdit& g);
// elementwise_chain.cc
int64_t fuse_elementwise_chains(GraphEdit& g);

}  // namespace onnx_light::runtime::optimizer
