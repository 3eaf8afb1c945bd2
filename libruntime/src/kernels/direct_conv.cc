#include "kernels/direct_conv.h"

#include <algorithm>

#if defined(ONNX_LIGHT_X86_SIMD)
#include "kernels/simd/conv_f32_direct.h"
#include "kernels/simd/dwconv_f32_blocked.h"  // the lane counts
#endif

namespace onnx_light::runtime::kernels {

namespace {

// Bytes of padded input and blocked output one task keeps (within L2, as the depthwise bands).
constexpr int64_t kDirectBandBytes = 384 * 1024;

}  // namespace

void direct_conv_variant(const DirectConv& c, DirectConvIsa isa, std::string& out) {
  out = "direct_";
  append_plane_geometry(c, out);
  out += isa == DirectConvIsa::avx512 ? "_blocked16_avx512" : "_blocked8_avx2";
}

void run_direct_conv(KernelExecution& execution, const DirectConv& c, DirectConvIsa isa, int admitted,
                     DirectConvWorkspace& workspace) {
#if defined(ONNX_LIGHT_X86_SIMD)
  const bool wide = isa == DirectConvIsa::avx512;
  const int64_t L = wide ? simd::dwconv_f32_block_lanes_avx512 : simd::dwconv_f32_block_lanes_avx2;
  void (*compute)(const simd::ConvF32DirectBlock&) = wide ? simd::conv_f32_direct_avx512 : simd::conv_f32_direct_avx2;
  const int64_t pitch = c.stride_w * (c.out_w - 1) + (c.kernel_w - 1) * c.dilation_w + 1;
  const int64_t reach = (c.kernel_h - 1) * c.dilation_h + 1;
  const int64_t kernel = c.kernel_h * c.kernel_w, taps = c.channels * kernel;
  const int64_t in_plane = c.in_h * c.in_w, out_plane = c.out_h * c.out_w;
  const int64_t blocks_per_image = (c.maps + L - 1) / L;
  // Band height: the L2 budget, and enough tasks for every admitted thread.
  const int64_t row_bytes = (c.channels * c.stride_h * pitch + c.out_w * L) * static_cast<int64_t>(sizeof(float));
  int64_t band = std::clamp<int64_t>(kDirectBandBytes / std::max<int64_t>(1, row_bytes), 1, c.out_h);
  if (const int64_t tasks = c.batch * blocks_per_image; tasks < admitted)
    band = std::min(band, std::max<int64_t>(1, (c.out_h * tasks + admitted - 1) / admitted));
  const int64_t bands = (c.out_h + band - 1) / band;
  const int64_t band_rows = c.stride_h * (band - 1) + reach;
  // Residual, activation and post affine in the vector store where it has the activation, else
  // the activation and affine in a scalar pass after it: the same expressions.
  bool activation_after = false;
  const simd::DwconvF32Epilogue epilogue = vector_epilogue(c.epilogue, activation_after);
  const bool residual = c.z != nullptr;

  std::vector<int64_t>& offsets = workspace.tap_offsets;
  offsets.clear();
  for (int64_t ch = 0; ch < c.channels; ++ch)
    for (int64_t ky = 0; ky < c.kernel_h; ++ky)
      for (int64_t kx = 0; kx < c.kernel_w; ++kx)
        offsets.push_back((ch * band_rows + ky * c.dilation_h) * pitch + kx * c.dilation_w);
  pack_weights_by_block(c.w, c.bias, c.maps, taps, L, workspace.weights, workspace.bias);
  ScratchSlots<DirectConvWorkspace::Slot>& slots = workspace.slots;
  slots.ensure(static_cast<std::size_t>(std::max(1, execution.threads())) + 1);
  const auto padded_floats = static_cast<std::size_t>(c.channels * band_rows * pitch);
  // Pad columns are never written by the row copies: zeroed once per layout; pad rows per task.
  const PaddedScratch::Layout layout{pitch, c.pad_left, c.in_w, c.channels, band_rows, -1, -1, -1};
  // Columns of an input row that land inside the padded pitch.
  const int64_t copy_w = std::clamp<int64_t>(pitch - c.pad_left, 0, c.in_w);
  execution.parallel_for(c.batch * blocks_per_image * bands, 1, admitted, [&](int64_t begin, int64_t end) {
    ScratchSlots<DirectConvWorkspace::Slot>::Lease slot(slots);
    DirectConvWorkspace::Slot& s = *slot;
    // Sized by the thread that leased it (only slots a run uses are allocated and zeroed).
    s.padded.prepare(padded_floats, layout);
    s.z_planes.resize(static_cast<std::size_t>(L));
    s.out_planes.resize(static_cast<std::size_t>(L));
    for (int64_t task = begin; task < end; ++task) {
      const int64_t block = task / bands, oy0 = (task % bands) * band, oy1 = std::min(c.out_h, oy0 + band);
      const int64_t image = block / blocks_per_image, block_in_image = block % blocks_per_image;
      const int64_t m0 = block_in_image * L, valid = std::min(L, c.maps - m0);
      const int64_t r0 = oy0 * c.stride_h, rows = c.stride_h * (oy1 - oy0 - 1) + reach;
      float* padded = s.padded.data();
      for (int64_t ch = 0; ch < c.channels; ++ch) {
        const float* plane = c.x + (image * c.channels + ch) * in_plane;
        for (int64_t r = 0; r < rows; ++r) {
          float* dst = padded + (ch * band_rows + r) * pitch;
          const int64_t in_row = r0 + r - c.pad_top;
          if (in_row < 0 || in_row >= c.in_h) std::fill(dst, dst + pitch, 0.0f);
          else if (copy_w > 0)  // pads wider than the pitch: no input column is read
            std::copy(plane + in_row * c.in_w, plane + in_row * c.in_w + copy_w, dst + c.pad_left);
        }
      }
      for (int64_t l = 0; l < L; ++l) {
        const auto i = static_cast<std::size_t>(l);
        const bool live = l < valid;
        const int64_t at = (image * c.maps + m0 + l) * out_plane + oy0 * c.out_w;
        s.out_planes[i] = live ? c.y + at : nullptr;
        s.z_planes[i] = live && residual ? c.z + at : nullptr;
      }
      const simd::ConvF32DirectBlock b{padded, pitch, workspace.weights.data() + block_in_image * taps * L,
                                       offsets.data(), taps, workspace.bias.data() + block_in_image * L,
                                       c.stride_h, c.stride_w, oy1 - oy0, c.out_w, epilogue,
                                       s.out_planes.data(), residual ? s.z_planes.data() : nullptr, valid};
      compute(b);
      const int64_t n = (oy1 - oy0) * c.out_w;
      if (activation_after)
        for (int64_t l = 0; l < valid; ++l) apply_activation(c.epilogue, s.out_planes[static_cast<std::size_t>(l)], n);
    }
  });
#else
  (void)execution;
  (void)c;
  (void)isa;
  (void)admitted;
  (void)workspace;
#endif
}

}  // namespace onnx_light::runtime::kernels
