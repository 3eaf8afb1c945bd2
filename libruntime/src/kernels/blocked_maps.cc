#include "kernels/blocked_maps.h"

#include <algorithm>

namespace onnx_light::runtime::kernels {

void pack_weights_by_block(const float* w, const float* bias, int64_t maps, int64_t taps, int64_t lanes,
                           std::vector<float>& weights, std::vector<float>& biases) {
  const int64_t blocks = (maps + lanes - 1) / lanes;
  weights.assign(static_cast<std::size_t>(blocks * taps * lanes), 0.0f);
  biases.assign(static_cast<std::size_t>(blocks * lanes), 0.0f);
  for (int64_t map = 0; map < maps; ++map) {
    const int64_t block = map / lanes, lane = map % lanes;
    if (bias != nullptr) biases[static_cast<std::size_t>(block * lanes + lane)] = bias[map];
    for (int64_t t = 0; t < taps; ++t)
      weights[static_cast<std::size_t>((block * taps + t) * lanes + lane)] = w[map * taps + t];
  }
}

simd::DwconvF32Epilogue vector_epilogue(const Epilogue& e, bool& scalar_after) {
  const int code = f32_activation_code(e.activation);
  scalar_after = code < 0;
  if (scalar_after) return {};
  return {code, e.alpha, e.beta, e.post_affine, e.post_scale, e.post_shift};
}

void PaddedScratch::prepare(std::size_t floats, const Layout& layout) {
  if (floats_ < floats) {
    buffer_.grow(floats);
    floats_ = floats;
    zeroed_ = false;
  }
  if (zeroed_ && layout_ == layout) return;
  std::fill(buffer_.data(), buffer_.data() + floats_, 0.0f);
  layout_ = layout;
  zeroed_ = true;
}

}  // namespace onnx_light::runtime::kernels
