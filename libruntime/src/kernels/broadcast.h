#pragma once
// Numpy-style (multidirectional) broadcasting: output shape, per-input strides, and a walker
// that visits any contiguous range of output elements as rows with constant input steps.
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "onnx_light/runtime/tensor.h"

namespace onnx_light::runtime::kernels {

// Throws InputError naming `label` and both shapes when they do not broadcast, and when the
// broadcast shape has more elements than int64 counts.
Shape broadcast_shapes(std::span<const Shape* const> shapes, const std::string& label);
Shape broadcast_shapes(const Shape& a, const Shape& b, const std::string& label);

// Element strides of `input` viewed with `output`'s shape (0 where the input is broadcast).
std::vector<int64_t> broadcast_strides(const Shape& input, const Shape& output);

struct BroadcastPlan {
  Shape output;                               // collapsed output dims (at least 1)
  std::vector<std::vector<int64_t>> strides;  // per input, per collapsed dim
};

// Merges adjacent dims that broadcast the same way in every input, so that the inner rows are long.
BroadcastPlan make_broadcast_plan(const Shape& output, std::span<const Shape* const> inputs);

// A kernel's broadcast of its inputs kept across runs: the output shape and plan are recomputed
// only when an input shape changes, so that a steady state allocates nothing.
class CachedBroadcast {
 public:
  // Broadcasts `inputs` (throws as broadcast_shapes); shape() and plan() then describe them.
  void update(std::span<const Shape* const> inputs, const std::string& label);
  const Shape& shape() const { return shape_; }
  const BroadcastPlan& plan() const { return plan_; }

 private:
  std::vector<Shape> inputs_;
  Shape shape_;
  BroadcastPlan plan_;
  bool valid_ = false;
};

// Visits output elements [begin, end) in row pieces: row(out_offset, input_offsets, count, input_steps).
template <std::size_t N, typename Row>
void walk_broadcast(const BroadcastPlan& plan, int64_t begin, int64_t end, Row&& row) {
  const std::size_t rank = plan.output.size();
  const int64_t inner = plan.output[rank - 1];
  // On the stack for the ranks models have (collapsed dims), so a walk allocates nothing.
  constexpr std::size_t kStackRank = 16;
  int64_t stack_index[kStackRank] = {};
  std::vector<int64_t> heap_index;
  if (rank > kStackRank) heap_index.assign(rank, 0);
  int64_t* index = rank > kStackRank ? heap_index.data() : stack_index;
  int64_t rest = begin;
  for (std::size_t d = rank; d-- > 0;) {
    index[d] = rest % plan.output[d];
    rest /= plan.output[d];
  }
  int64_t offsets[N];
  int64_t steps[N];
  for (std::size_t k = 0; k < N; ++k) {
    offsets[k] = 0;
    for (std::size_t d = 0; d < rank; ++d) offsets[k] += index[d] * plan.strides[k][d];
    steps[k] = plan.strides[k][rank - 1];
  }
  int64_t position = begin;
  while (position < end) {
    int64_t count = std::min(inner - index[rank - 1], end - position);
    row(position, offsets, count, steps);
    position += count;
    index[rank - 1] += count;
    for (std::size_t k = 0; k < N; ++k) offsets[k] += count * steps[k];
    // Carry into outer dims, recomputing offsets incrementally.
    for (std::size_t d = rank - 1; d > 0 && index[d] == plan.output[d]; --d) {
      for (std::size_t k = 0; k < N; ++k) offsets[k] += plan.strides[k][d - 1] - plan.output[d] * plan.strides[k][d];
      index[d] = 0;
      ++index[d - 1];
    }
  }
}

}  // namespace onnx_light::runtime::kernels
