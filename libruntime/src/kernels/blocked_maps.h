#pragma once
// What the kernels that block output maps by vector lanes share (depthwise_conv.cc's blocked path,
// direct_conv.cc): weights repacked by block of maps, and a padded scratch whose zero pads outlive
// the run that wrote them.
#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "kernels/epilogue.h"
#include "kernels/packed_gemm.h"
#include "kernels/simd/dwconv_f32_blocked.h"

namespace onnx_light::runtime::kernels {

// w [maps][taps] and bias [maps] (or null) as [blocks][taps][lanes] and [blocks][lanes], the lanes
// past the last map zero. Once per run: a task reads its block's vectors as they are.
void pack_weights_by_block(const float* w, const float* bias, int64_t maps, int64_t taps, int64_t lanes,
                           std::vector<float>& weights, std::vector<float>& biases);

// The epilogue the vector stores apply: the activation and post affine where the vector code has the
// activation; else nothing, and `scalar_after` says apply_activation runs over the stored values.
simd::DwconvF32Epilogue vector_epilogue(const Epilogue& epilogue, bool& scalar_after);

// A 64-byte aligned scratch (every pixel of a blocked plane is one vector load; a load split
// across cache lines costs two) whose zeros persist across runs: zeroed whole when it grows or
// when the layout that decides where the pads are changes, otherwise left as the last task wrote
// it (the tasks write only values, never pads).
class PaddedScratch {
 public:
  using Layout = std::array<int64_t, 8>;
  // `floats` floats laid out as `layout`; call between parallel regions, or inside one by the only
  // thread using this scratch (a leased slot).
  void prepare(std::size_t floats, const Layout& layout);
  float* data() const { return buffer_.data(); }

 private:
  PackedBuffer buffer_;
  std::size_t floats_ = 0;
  Layout layout_{};
  bool zeroed_ = false;
};

}  // namespace onnx_light::runtime::kernels
