#include "kernels/broadcast.h"

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "checked_math.h"
#include "onnx_light/runtime/error.h"

namespace onnx_light::runtime::kernels {

Shape broadcast_shapes(std::span<const Shape* const> shapes, const std::string& label) {
  std::size_t rank = 0;
  for (const Shape* s : shapes) rank = std::max(rank, s->size());
  Shape out(rank, 1);
  for (const Shape* s : shapes) {
    std::size_t offset = rank - s->size();
    for (std::size_t d = 0; d < s->size(); ++d) {
      int64_t dim = (*s)[d];
      int64_t& o = out[offset + d];
      if (dim == o || dim == 1) continue;
      if (o == 1) {
        o = dim;
        continue;
      }
      std::vector<std::string> described;
      for (const Shape* t : shapes) described.push_back(shape_to_string(*t));
      throw InputError(fmt::format("{}: shapes {} cannot be broadcast (dimension {} from the right: {} vs {})",
                                   label, fmt::join(described, " and "), rank - offset - d, o, dim));
    }
  }
  // Each dim comes from some input, but their product need not fit (a [2^32, 1] with a [1, 2^32]).
  checked_element_count(out, "the broadcast shape");  // the session names the node
  return out;
}

Shape broadcast_shapes(const Shape& a, const Shape& b, const std::string& label) {
  const Shape* shapes[] = {&a, &b};
  return broadcast_shapes(shapes, label);
}

std::vector<int64_t> broadcast_strides(const Shape& input, const Shape& output) {
  std::vector<int64_t> strides(output.size(), 0);
  // An empty input broadcasts to an empty output: nothing is addressed, and its other dims may
  // be too large to multiply.
  if (std::find(input.begin(), input.end(), 0) != input.end()) return strides;
  std::size_t offset = output.size() - input.size();
  int64_t stride = 1;
  for (std::size_t d = input.size(); d-- > 0;) {
    strides[offset + d] = input[d] == 1 ? 0 : stride;
    if (d > 0 && __builtin_mul_overflow(stride, input[d], &stride))
      throw InputError(fmt::format("the strides of shape {} overflow 64-bit integers", shape_to_string(input)));
  }
  return strides;
}

BroadcastPlan make_broadcast_plan(const Shape& output, std::span<const Shape* const> inputs) {
  std::vector<std::vector<int64_t>> full;
  for (const Shape* s : inputs) full.push_back(broadcast_strides(*s, output));
  BroadcastPlan plan;
  plan.strides.resize(inputs.size());
  for (std::size_t d = 0; d < output.size(); ++d) {
    if (output[d] == 1 && output.size() > 1) continue;  // size-1 dims never move an index
    bool merge = !plan.output.empty();
    if (merge) {
      for (std::size_t k = 0; k < inputs.size(); ++k) {
        // Contiguous with the previous dim in this input (or broadcast in both).
        int64_t prev = plan.strides[k].back();
        int64_t cur = full[k][d];
        if (!((prev == 0 && cur == 0) || (cur != 0 && prev == cur * output[d]))) merge = false;
      }
    }
    if (merge) {
      plan.output.back() *= output[d];
      for (std::size_t k = 0; k < inputs.size(); ++k) plan.strides[k].back() = full[k][d];
    } else {
      plan.output.push_back(output[d]);
      for (std::size_t k = 0; k < inputs.size(); ++k) plan.strides[k].push_back(full[k][d]);
    }
  }
  if (plan.output.empty()) {
    plan.output.push_back(1);
    for (auto& s : plan.strides) s.push_back(0);
  }
  return plan;
}

void CachedBroadcast::update(std::span<const Shape* const> inputs, const std::string& label) {
  bool same = valid_ && inputs_.size() == inputs.size();
  for (std::size_t i = 0; same && i < inputs.size(); ++i) same = inputs_[i] == *inputs[i];
  if (same) return;
  valid_ = false;
  shape_ = broadcast_shapes(inputs, label);
  plan_ = make_broadcast_plan(shape_, inputs);
  inputs_.resize(inputs.size());
  for (std::size_t i = 0; i < inputs.size(); ++i) inputs_[i] = *inputs[i];
  valid_ = true;
}

}  // namespace onnx_light::runtime::kernels
