#pragma once
// A dense 2-D float32 Conv with few input channels (a CNN's stem) computed directly with the output
// maps blocked (simd/conv_f32_direct.h), in parallel over (image, block of maps, band of output
// rows). Its GEMM has a depth of channels x kernel (27 for a 3-channel 3x3 stem): too shallow for
// the packed driver's packing to pay, while the direct loop runs one broadcast-FMA per tap for 16
// maps at once. Results are independent of the thread count and the bands.
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/blocked_maps.h"
#include "kernels/depthwise_conv.h"
#include "kernels/epilogue.h"
#include "kernels/packed_gemm.h"
#include "kernels/scratch_slots.h"
#include "onnx_light/runtime/kernel.h"

namespace onnx_light::runtime::kernels {

// The same 2-D problem as a depthwise Conv's, W being [maps, channels, kernel_h, kernel_w].
using DirectConv = DepthwiseConv;

// Input channels up to which a dense 2-D Conv runs direct (stems have 3 or 4).
inline constexpr int64_t kDirectConvMaxChannels = 4;

enum class DirectConvIsa { avx2, avx512 };

struct DirectConvWorkspace {
  struct Slot {
    PaddedScratch padded;  // a band's padded input rows, channel-major
    std::vector<const float*> z_planes;
    std::vector<float*> out_planes;
  };
  std::vector<int64_t> tap_offsets;
  std::vector<float> weights, bias;  // by block of maps: [blocks][taps][lanes], [blocks][lanes]
  ScratchSlots<Slot> slots;
};

// Runs it with up to `admitted` threads. Only reached where the host has the ISA.
void run_direct_conv(KernelExecution& execution, const DirectConv& conv, DirectConvIsa isa, int admitted,
                     DirectConvWorkspace& workspace);

// "direct_3x3s2_blocked16_avx512": what run_direct_conv ran, for Kernel::variant().
void direct_conv_variant(const DirectConv& conv, DirectConvIsa isa, std::string& out);

}  // namespace onnx_light::runtime::kernels
