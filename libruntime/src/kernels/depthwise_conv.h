#pragma once
// 2-D depthwise convolution over float32 NCHW (group == input channels, one input channel per
// group, any channel multiplier): Conv's fast path for the groups too thin for the packed GEMM.
// On AVX-512, 3x3 planes wide enough to fill 16 lanes run straight from NCHW (the CHW loops of
// simd/dwconv_f32.h, depthwise_runs_chw decides). Otherwise with AVX2 / AVX-512 most planes run
// channel-blocked (simd/dwconv_f32_blocked.h: 8 or 16 maps per vector, reordered in and out per
// band of rows, as ORT's NCHWc depthwise); wide stride-1 planes and the portable implementation
// run the rows below (depthwise_runs_blocked decides).
// Rows: each (image, output map) plane is padded with zeros and split by the column stride's phase into
// a per-thread scratch once, so that every output row is a list of contiguous tap rows (no
// division, no bounds test per output or per tap): the SIMD rows of simd/dwconv_f32.h, or a
// portable loop; narrow stride-1 planes without a residual run as one flat row over the padded
// pitch. The fused epilogue (bias, residual Z, activation) runs on each row as it is
// stored. Results are independent of the thread count (each output's sum has a fixed order).
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/blocked_maps.h"
#include "kernels/epilogue.h"
#include "kernels/packed_gemm.h"
#include "kernels/scratch_slots.h"
#include "onnx_light/runtime/kernel.h"

namespace onnx_light::runtime::kernels {

// Where a depthwise plane runs which loop on AVX2 / AVX-512 (depthwise_runs_chw,
// depthwise_runs_blocked, run_depthwise_conv's flat rows). Conv's packed keys tune them as
// depthwise.* parameters (the CHW widths on avx512 only: AVX2 has no CHW loop). Every path gives
// bit-identical results, so a value only moves time.
struct DepthwisePaths {
  // Output widths from which 3x3 planes run the CHW loops. Stride 1 (A/B minima, T=1, CHW against
  // blocked or rows: 24 wide 16.3 / 11.4 us, 28 wide 18.3 / 16.2, 32 wide 15.4 / 21.7, 40 wide
  // 22.1 / 21.2, 48 wide 14.4 / 18.1, 80 wide 89 / 101, 112 wide 86 / 115 rows, 160 wide 83 / 117
  // rows). 5x5 stays blocked or rows: a CHW loop for it measured slower (20 wide 74 / 37 us) or
  // level (80 wide 136 / 111-128), and the blocked loop's row reuse (simd/dwconv_f32_blocked.h,
  // row_taps) then took 80 wide to 84-88.
  int64_t chw_s1_from_width = 32;
  // Stride 2: narrower rows leave many of the CHW loop's 16 lanes idle, where the blocked path
  // fills them with maps (T=1: 7 wide 26 us CHW against 18 blocked, 10 wide 16 / 14, 12 wide a
  // tie, 14 wide 9 / 11, 15 wide 8 / 11).
  int64_t chw_s2_from_width = 12;
  // Output pixels from which stride-1 planes that do not run CHW keep the row kernels instead of
  // the channel-blocked loop: their rows are long enough for full vectors and row pairs without a
  // reorder (16x160x160 rows 164 us, blocked 198 us; 32x112x112 a tie; bench/RESULTS.md).
  int64_t rows_from_pixels = 10000;
  // Output widths below which a stride-1 plane on the row kernels runs as one flat row over the
  // padded pitch (full vectors instead of short rows with masked tails).
  int64_t flat_below_width = 64;
};

struct DepthwiseConv {
  int64_t batch = 0, channels = 0, maps = 0;  // maps = channels x multiplier
  int64_t in_h = 0, in_w = 0, out_h = 0, out_w = 0;
  int64_t kernel_h = 0, kernel_w = 0, stride_h = 1, stride_w = 1, dilation_h = 1, dilation_w = 1;
  int64_t pad_top = 0, pad_left = 0;
  const float* x = nullptr;
  const float* w = nullptr;     // [maps, 1, kernel_h, kernel_w]
  const float* bias = nullptr;  // [maps] or null
  const float* z = nullptr;     // residual of Y's shape or null
  float* y = nullptr;
  Epilogue epilogue;
  // W and bias hold the same values at the same addresses on every run (initializers): the blocked
  // path packs them on the first run only.
  bool weights_constant = false;
  DepthwisePaths paths;
};

enum class DepthwiseIsa { portable, avx2, avx512 };

// What a run needs besides its operands, kept by the kernel across runs so that a steady-state
// run allocates nothing: the padded plane's geometry and one scratch slot per participant.
struct DepthwiseWorkspace {
  struct Layout {
    int64_t rows = 0;         // padded rows any output reads
    int64_t phase_width = 0;  // columns of one stride phase
    bool direct = false;      // the input plane itself serves (stride 1 across, nothing padded)
    int64_t taps = 0;
    std::vector<int64_t> tap_phase, tap_column, tap_row;  // per tap (ky, kx) row-major
    std::vector<int64_t> phase_begin, phase_end;          // per phase: columns that hold input values
  };
  struct Slot {
    std::vector<float> plane;  // the padded, phase-split plane
    std::array<int64_t, 8> signature{};  // the layout whose pads `plane` holds as zeros
    std::vector<float> flat;   // a narrow plane's outputs at the padded pitch
    std::vector<const float*> src, below;
    // The channel-blocked path: a band's padded blocked input and its blocked outputs.
    PaddedScratch blocked_in;
    PackedBuffer blocked_out;
    std::size_t blocked_out_floats = 0;
    std::vector<const float*> in_planes, z_planes;
    std::vector<float*> out_planes;
  };
  Layout layout;
  // The blocked path's taps, in floats from an output's first input pixel, and its weights and
  // bias by block of maps ([blocks][taps][lanes], [blocks][lanes]), packed once per run.
  std::vector<int64_t> tap_offsets;
  std::vector<float> blocked_weights, blocked_bias;
  // What blocked_weights were packed from (W, bias, maps, taps, lanes), for constant weights.
  std::array<const void*, 2> packed_from{};
  std::array<int64_t, 3> packed_geometry{};
  ScratchSlots<Slot> slots;
};

// Runs it in parallel over (image, map) planes with up to `admitted` threads.
void run_depthwise_conv(KernelExecution& execution, const DepthwiseConv& conv, DepthwiseIsa isa, int admitted,
                        DepthwiseWorkspace& workspace);

// Whether run_depthwise_conv takes the channel-blocked path (simd/dwconv_f32_blocked.h).
bool depthwise_runs_blocked(const DepthwiseConv& conv, DepthwiseIsa isa);
// Whether it runs the planes straight from NCHW (simd::dwconv_f32_plane_*_avx512).
bool depthwise_runs_chw(const DepthwiseConv& conv, DepthwiseIsa isa);
// Whether the row kernels run each plane as one flat row over its padded pitch.
bool depthwise_runs_flat(const DepthwiseConv& conv, DepthwiseIsa isa);

// "3x3s2", "5x5s2x1d2": kernel, stride and dilation as the plane kernels' labels spell them.
void append_plane_geometry(const DepthwiseConv& conv, std::string& out);

// "dwconv_3x3s1_avx512", "dwconv_5x5s2_blocked16_avx512", "dwconv_3x3s2_chw_avx512",
// "dwconv_3x3s1_flat_avx2", "dwconv_5x5s2_portable": what
// run_depthwise_conv ran, for Kernel::variant().
std::string depthwise_variant(const DepthwiseConv& conv, DepthwiseIsa isa);
// The same written into `out` (no allocation once `out` has held a label as long).
void depthwise_variant(const DepthwiseConv& conv, DepthwiseIsa isa, std::string& out);

}  // namespace onnx_light::runtime::kernels
