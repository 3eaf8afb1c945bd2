#include "kernels/depthwise_conv.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <iterator>
#include <vector>

#include <fmt/format.h>

#include "kernels/simd/dwconv_f32.h"
#include "kernels/simd/dwconv_f32_blocked.h"

namespace onnx_light::runtime::kernels {

namespace {

using Layout = DepthwiseWorkspace::Layout;

// Fills `l` in place (its vectors keep their capacity across runs).
void layout_of(const DepthwiseConv& c, Layout& l) {
  l.rows = c.stride_h * (c.out_h - 1) + (c.kernel_h - 1) * c.dilation_h + 1;
  l.phase_width = c.out_w + (c.kernel_w - 1) * c.dilation_w / c.stride_w;
  l.direct = c.stride_w == 1 && c.pad_top == 0 && c.pad_left == 0 && l.rows <= c.in_h && l.phase_width <= c.in_w;
  if (l.direct) l.phase_width = c.in_w;  // rows keep the input's stride
  l.taps = c.kernel_h * c.kernel_w;
  l.tap_phase.clear();
  l.tap_column.clear();
  l.tap_row.clear();
  l.phase_begin.clear();
  l.phase_end.clear();
  for (int64_t ky = 0; ky < c.kernel_h; ++ky)
    for (int64_t kx = 0; kx < c.kernel_w; ++kx) {
      l.tap_phase.push_back(kx * c.dilation_w % c.stride_w);
      l.tap_column.push_back(kx * c.dilation_w / c.stride_w);
      l.tap_row.push_back(ky * c.dilation_h);
    }
  // Column i of phase p is padded column stride_w * i + p, input column stride_w * i + p - pad_left.
  for (int64_t p = 0; p < c.stride_w; ++p) {
    const int64_t first = c.pad_left - p;  // i * stride_w >= first
    const int64_t begin = first <= 0 ? 0 : (first + c.stride_w - 1) / c.stride_w;
    const int64_t last = c.in_w + c.pad_left - p;  // i * stride_w < last
    const int64_t end = last <= 0 ? 0 : (last + c.stride_w - 1) / c.stride_w;
    l.phase_begin.push_back(std::min(begin, l.phase_width));
    l.phase_end.push_back(std::clamp(end, std::min(begin, l.phase_width), l.phase_width));
  }
}

// Pads `plane` with zeros and splits it by column phase into dst (phase-major, then rows). With
// `pads_ready` dst already holds this layout's zeros (a slot reused for the same layout), and only
// the input values are copied: on small planes the zero fills cost as much as the taps.
void fill_phases(const DepthwiseConv& c, const Layout& l, const float* plane, float* dst, bool pads_ready) {
  for (int64_t p = 0; p < c.stride_w; ++p) {
    const int64_t begin = l.phase_begin[static_cast<std::size_t>(p)], end = l.phase_end[static_cast<std::size_t>(p)];
    for (int64_t r = 0; r < l.rows; ++r) {
      float* d = dst + (p * l.rows + r) * l.phase_width;
      const int64_t in_row = r - c.pad_top;
      if (in_row < 0 || in_row >= c.in_h || begin >= end) {
        if (!pads_ready) std::fill(d, d + l.phase_width, 0.0f);
        continue;
      }
      if (!pads_ready) std::fill(d, d + begin, 0.0f);
      const float* s = plane + in_row * c.in_w + c.stride_w * begin + p - c.pad_left;
      if (c.stride_w == 1) {
        std::memcpy(d + begin, s, static_cast<std::size_t>(end - begin) * sizeof(float));
      } else {
        for (int64_t i = begin; i < end; ++i) d[i] = s[(i - begin) * c.stride_w];
      }
      if (!pads_ready) std::fill(d + end, d + l.phase_width, 0.0f);
    }
  }
}




// The portable row: the same sums in the same order, without FMA.
void portable_row(const simd::DwconvF32Row& r) {
  float* y = r.y;
  std::fill(y, y + r.n, 0.0f);
  for (int64_t t = 0; t < r.taps; ++t) {
    const float* s = r.src[t];
    const float k = r.weights[t];
    for (int64_t j = 0; j < r.n; ++j) y[j] += s[j] * k;
  }
  for (int64_t j = 0; j < r.n; ++j) y[j] += r.bias;
  if (r.z != nullptr)
    for (int64_t j = 0; j < r.n; ++j) y[j] += r.z[j];
}

// The channel-blocked path's functions for an ISA.
struct BlockedFunctions {
  int64_t lanes;
  void (*to_blocked)(const float* const*, int64_t, int64_t, int64_t, float*, int64_t, int64_t, int64_t, int64_t);
  void (*block)(const simd::DwconvF32Block&);
  void (*from_blocked)(const float*, int64_t, float* const*, int64_t, const float* const*,
                       const simd::DwconvF32Epilogue&);
};

#if defined(ONNX_LIGHT_X86_SIMD)
BlockedFunctions blocked_functions(DepthwiseIsa isa) {
  if (isa == DepthwiseIsa::avx512)
    return {simd::dwconv_f32_block_lanes_avx512, simd::dwconv_f32_to_blocked_avx512, simd::dwconv_f32_block_avx512,
            simd::dwconv_f32_from_blocked_avx512};
  return {simd::dwconv_f32_block_lanes_avx2, simd::dwconv_f32_to_blocked_avx2, simd::dwconv_f32_block_avx2,
          simd::dwconv_f32_from_blocked_avx2};
}
#endif

// Bytes of blocked input and output one task keeps: within L2 beside the weights and the planes
// it reads (AMD Zen 4/5: 1 MiB per core). Larger planes are cut into bands of output rows.
constexpr int64_t kBlockedBandBytes = 384 * 1024;

// Tasks of `lanes` maps of one image and a band of output rows: the band's input rows reordered
// into a zero-padded blocked plane, convolved there and reordered back (simd/dwconv_f32_blocked.h),
// in parallel over tasks. A band only changes which outputs a task computes, never how: the
// results do not depend on the bands or the thread count.
void run_blocked(KernelExecution& execution, const DepthwiseConv& c, const BlockedFunctions& f, int admitted,
                 DepthwiseWorkspace& workspace) {
  const int64_t L = f.lanes;
  // The activation and post affine in the vector code where it has the activation, else a scalar
  // pass over the stored planes afterwards (apply_activation): the same expressions either way.
  bool activation_after = false;
  const simd::DwconvF32Epilogue epilogue = vector_epilogue(c.epilogue, activation_after);
  const int64_t pitch = c.stride_w * (c.out_w - 1) + (c.kernel_w - 1) * c.dilation_w + 1;
  const int64_t reach = (c.kernel_h - 1) * c.dilation_h + 1;  // padded rows one output row reads
  const int64_t taps = c.kernel_h * c.kernel_w, multiplier = c.maps / c.channels;
  const int64_t in_plane = c.in_h * c.in_w, out_plane = c.out_h * c.out_w;
  const int64_t blocks_per_image = (c.maps + L - 1) / L;
  // Band height: the L2 budget, and enough tasks for every admitted thread.
  const int64_t row_bytes = (c.stride_h * pitch + c.out_w) * L * static_cast<int64_t>(sizeof(float));
  int64_t band = std::clamp<int64_t>(kBlockedBandBytes / std::max<int64_t>(1, row_bytes), 1, c.out_h);
  if (const int64_t tasks = c.batch * blocks_per_image; tasks < admitted)
    band = std::min(band, std::max<int64_t>(1, (c.out_h * tasks + admitted - 1) / admitted));
  const int64_t bands = (c.out_h + band - 1) / band;
  const int64_t band_rows = c.stride_h * (band - 1) + reach;
  std::vector<int64_t>& offsets = workspace.tap_offsets;
  offsets.clear();
  for (int64_t ky = 0; ky < c.kernel_h; ++ky)
    for (int64_t kx = 0; kx < c.kernel_w; ++kx) offsets.push_back((ky * c.dilation_h * pitch + kx * c.dilation_w) * L);
  ScratchSlots<DepthwiseWorkspace::Slot>& slots = workspace.slots;
  slots.ensure(static_cast<std::size_t>(std::max(1, execution.threads())) + 1);
  const std::size_t in_floats = static_cast<std::size_t>(band_rows * pitch * L);
  const auto out_floats = static_cast<std::size_t>(band * c.out_w * L);
  // Packing costs 10% of a 576x7x7 plane's run: constant weights are packed once.
  const std::array<const void*, 2> from{c.w, c.bias};
  const std::array<int64_t, 3> geometry{c.maps, taps, L};
  if (!c.weights_constant || workspace.packed_from != from || workspace.packed_geometry != geometry) {
    pack_weights_by_block(c.w, c.bias, c.maps, taps, L, workspace.blocked_weights, workspace.blocked_bias);
    workspace.packed_from = c.weights_constant ? from : std::array<const void*, 2>{};
    workspace.packed_geometry = geometry;
  }
  // The pad columns are never written by a reorder: zeroed once per layout. Pad rows move with the
  // band and are zeroed by each task, unless the plane is one band (then they are fixed too).
  const bool one_band = bands == 1;
  const PaddedScratch::Layout layout{pitch, c.pad_left, c.in_w, L, one_band ? c.pad_top : -1, one_band ? c.in_h : -1,
                                     one_band ? band_rows : -1, -1};
  const bool residual = c.z != nullptr;
  const int64_t row_taps = c.dilation_w == 1 && (c.kernel_w == 3 || c.kernel_w == 5) ? c.kernel_w : 0;
  execution.parallel_for(c.batch * blocks_per_image * bands, 1, admitted, [&](int64_t begin, int64_t end) {
    ScratchSlots<DepthwiseWorkspace::Slot>::Lease slot(slots);
    DepthwiseWorkspace::Slot& s = *slot;
    // Sized by the thread that leased it (only slots a run uses are allocated and zeroed).
    s.blocked_in.prepare(in_floats, layout);
    if (s.blocked_out_floats < out_floats) {
      s.blocked_out.grow(out_floats);
      s.blocked_out_floats = out_floats;
    }
    s.in_planes.resize(static_cast<std::size_t>(L));
    s.z_planes.resize(static_cast<std::size_t>(L));
    s.out_planes.resize(static_cast<std::size_t>(L));
    // Task = (image, block of maps, band), counted up without a division per task (36 tasks of a
    // 576x7x7 plane: the divisions were 3% of its time).
    int64_t band_index = begin % bands, block_in_image = begin / bands % blocks_per_image;
    int64_t image = begin / bands / blocks_per_image;
    for (int64_t task = begin; task < end; ++task) {
      const int64_t oy0 = band_index * band, oy1 = std::min(c.out_h, oy0 + band), m0 = block_in_image * L;
      const int64_t valid = std::min(L, c.maps - m0);
      // Padded rows [r0, r0 + rows) of this band; input rows [i0, i1) of them hold values.
      const int64_t r0 = oy0 * c.stride_h, rows = c.stride_h * (oy1 - oy0 - 1) + reach;
      const int64_t i0 = std::clamp<int64_t>(r0 - c.pad_top, 0, c.in_h);
      const int64_t i1 = std::clamp<int64_t>(r0 + rows - c.pad_top, i0, c.in_h);
      float* in = s.blocked_in.data();
      const int64_t first_value_row = i0 + c.pad_top - r0, end_value_row = i1 + c.pad_top - r0;
      if (!one_band) {
        std::fill(in, in + std::max<int64_t>(0, first_value_row) * pitch * L, 0.0f);
        std::fill(in + std::min(rows, std::max<int64_t>(0, end_value_row)) * pitch * L, in + rows * pitch * L, 0.0f);
      }
      for (int64_t l = 0; l < L; ++l) {
        const auto i = static_cast<std::size_t>(l);
        const int64_t map = m0 + l;
        const bool live = l < valid;
        const int64_t channel = multiplier == 1 ? map : map / multiplier;  // no division per lane (8% on 7x7)
        s.in_planes[i] = live ? c.x + (image * c.channels + channel) * in_plane + i0 * c.in_w : nullptr;
        s.out_planes[i] = live ? c.y + (image * c.maps + map) * out_plane + oy0 * c.out_w : nullptr;
        s.z_planes[i] = live && residual ? c.z + (image * c.maps + map) * out_plane + oy0 * c.out_w : nullptr;
      }
      if (i1 > i0) f.to_blocked(s.in_planes.data(), valid, i1 - i0, c.in_w, in, rows, pitch, first_value_row, c.pad_left);
      const simd::DwconvF32Block b{in, pitch, workspace.blocked_weights.data() + block_in_image * taps * L,
                                   offsets.data(), taps, workspace.blocked_bias.data() + block_in_image * L,
                                   c.stride_h, c.stride_w, oy1 - oy0, c.out_w,
                                   residual ? simd::DwconvF32Epilogue{} : epilogue, s.blocked_out.data(), row_taps};
      f.block(b);
      const int64_t n = (oy1 - oy0) * c.out_w;
      f.from_blocked(s.blocked_out.data(), n, s.out_planes.data(), valid, residual ? s.z_planes.data() : nullptr,
                     epilogue);
      if (activation_after)
        for (int64_t l = 0; l < valid; ++l) apply_activation(c.epilogue, s.out_planes[static_cast<std::size_t>(l)], n);
      if (++band_index == bands) {
        band_index = 0;
        if (++block_in_image == blocks_per_image) {
          block_in_image = 0;
          ++image;
        }
      }
    }
  });
}

#if defined(ONNX_LIGHT_X86_SIMD)
// Planes of the CHW kernels (simd::dwconv_f32_plane_*_avx512), in parallel over (image, map).
void run_chw(KernelExecution& execution, const DepthwiseConv& c, int admitted) {
  bool activation_after = false;
  const simd::DwconvF32Epilogue epilogue = vector_epilogue(c.epilogue, activation_after);
  const int64_t multiplier = c.maps / c.channels, in_plane = c.in_h * c.in_w, out_plane = c.out_h * c.out_w;
  const int64_t taps = c.kernel_h * c.kernel_w;
  const bool stride_2 = c.stride_h == 2;
  execution.parallel_for(c.batch * c.maps, 1, admitted, [&](int64_t begin, int64_t end) {
    for (int64_t plane = begin; plane < end; ++plane) {
      const int64_t image = plane / c.maps, map = plane % c.maps;
      float* y = c.y + plane * out_plane;
      const simd::DwconvF32Plane p{c.x + (image * c.channels + map / multiplier) * in_plane,
                                   c.in_h, c.in_w, c.pad_top, c.pad_left, c.w + map * taps,
                                   c.bias != nullptr ? c.bias[map] : 0.0f,
                                   c.z != nullptr ? c.z + plane * out_plane : nullptr, epilogue, c.out_h, c.out_w, y};
      if (stride_2) simd::dwconv_f32_plane_3x3s2_avx512(p);
      else simd::dwconv_f32_plane_3x3s1_avx512(p);
      if (activation_after) apply_activation(c.epilogue, y, out_plane);
    }
  });
}
#endif

}  // namespace

bool depthwise_runs_chw(const DepthwiseConv& c, DepthwiseIsa isa) {
#if defined(ONNX_LIGHT_X86_SIMD)
  if (isa != DepthwiseIsa::avx512 || c.dilation_h != 1 || c.dilation_w != 1 || c.kernel_h != 3 || c.kernel_w != 3)
    return false;
  if (c.stride_h == 2 && c.stride_w == 2)
    return c.out_w >= c.paths.chw_s2_from_width && simd::dwconv_f32_plane_3x3s2_fits(c.pad_left);
  return c.stride_h == 1 && c.stride_w == 1 && c.out_w >= c.paths.chw_s1_from_width &&
         simd::dwconv_f32_plane_3x3s1_fits(c.pad_left);
#else
  (void)c;
  (void)isa;
  return false;
#endif
}

bool depthwise_runs_blocked(const DepthwiseConv& c, DepthwiseIsa isa) {
#if defined(ONNX_LIGHT_X86_SIMD)
  // Wide stride-1 planes that do not run CHW (5x5, dilations, AVX2) keep the row kernels: their
  // rows are long enough for full vectors and row pairs without a reorder (bench/RESULTS.md:
  // 16x160x160 rows 164 us, blocked 198 us; 32x112x112 a tie). Everything else runs blocked
  // (stride 2 2-3x faster than the rows, 7x7 and 6x24 planes ~2x).
  return isa != DepthwiseIsa::portable && !depthwise_runs_chw(c, isa) &&
         !(c.stride_h == 1 && c.stride_w == 1 && c.out_h * c.out_w >= c.paths.rows_from_pixels);
#else
  (void)c;
  (void)isa;
  return false;
#endif
}

namespace {

// Whether a plane on the row kernels runs as one flat row: narrow planes at stride 1 without a
// residual, the whole plane as one long row over the padded pitch (the columns between output rows
// computed and dropped), then copied out row by row; one call per plane with full vectors instead
// of out_h short rows with masked tails. Each output's FMA chain and epilogue are those of its own
// row, so the bits are the same.
bool rows_run_flat(const DepthwiseConv& c) {
  return c.stride_h == 1 && c.stride_w == 1 && c.z == nullptr && c.out_h > 1 && c.out_w < c.paths.flat_below_width;
}

}  // namespace

bool depthwise_runs_flat(const DepthwiseConv& c, DepthwiseIsa isa) {
  return rows_run_flat(c) && !depthwise_runs_chw(c, isa) && !depthwise_runs_blocked(c, isa);
}

void append_plane_geometry(const DepthwiseConv& c, std::string& out) {
  auto it = std::back_inserter(out);
  fmt::format_to(it, "{}x{}", c.kernel_h, c.kernel_w);
  if (c.stride_h == c.stride_w) fmt::format_to(it, "s{}", c.stride_h);
  else fmt::format_to(it, "s{}x{}", c.stride_h, c.stride_w);
  if (c.dilation_h != 1 || c.dilation_w != 1) {
    if (c.dilation_h == c.dilation_w) fmt::format_to(it, "d{}", c.dilation_h);
    else fmt::format_to(it, "d{}x{}", c.dilation_h, c.dilation_w);
  }
}

void depthwise_variant(const DepthwiseConv& c, DepthwiseIsa isa, std::string& out) {
  const char* name = isa == DepthwiseIsa::avx512 ? "avx512" : isa == DepthwiseIsa::avx2 ? "avx2" : "portable";
  out = "dwconv_";
  append_plane_geometry(c, out);
  auto it = std::back_inserter(out);
  if (depthwise_runs_blocked(c, isa)) fmt::format_to(it, "_blocked{}", isa == DepthwiseIsa::avx512 ? 16 : 8);
  if (depthwise_runs_chw(c, isa)) out += "_chw";
  if (depthwise_runs_flat(c, isa)) out += "_flat";
  fmt::format_to(it, "_{}", name);
}

std::string depthwise_variant(const DepthwiseConv& c, DepthwiseIsa isa) {
  std::string out;
  depthwise_variant(c, isa, out);
  return out;
}

void run_depthwise_conv(KernelExecution& execution, const DepthwiseConv& c, DepthwiseIsa isa, int admitted,
                        DepthwiseWorkspace& workspace) {
  layout_of(c, workspace.layout);
  const Layout& l = workspace.layout;
  const int64_t planes = c.batch * c.maps, multiplier = c.maps / c.channels;
  const int64_t in_plane = c.in_h * c.in_w, out_plane = c.out_h * c.out_w;
  void (*row_fn)(const simd::DwconvF32Row&) = portable_row;
  void (*rows2_fn)(const simd::DwconvF32Row&, const float* const*, int64_t, const float*, float*) = nullptr;
  void (*rows4_fn)(const simd::DwconvF32Row&, int64_t, int64_t) = nullptr;
#if defined(ONNX_LIGHT_X86_SIMD)
  // Only reached after the kernel table found the host able to run the ISA.
  // 3x3 takes the fixed-tap rows (same results, no per-tap pointer or weight reloads).
  if (isa == DepthwiseIsa::avx512 || isa == DepthwiseIsa::avx2) {
    const simd::DwconvF32Kernels k = isa == DepthwiseIsa::avx512 ? simd::dwconv_f32_kernels_avx512(c.kernel_h, c.kernel_w)
                                                                 : simd::dwconv_f32_kernels_avx2(c.kernel_h, c.kernel_w);
    row_fn = k.row;
    rows2_fn = k.rows2;
    rows4_fn = k.rows4;
  }
#else
  isa = DepthwiseIsa::portable;
#endif
  // The vector rows store the activation and post affine where they have the activation; else (and
  // in the portable rows) a scalar pass over the stored row applies them: the same expressions.
  const int code = isa == DepthwiseIsa::portable ? -1 : f32_activation_code(c.epilogue.activation);
  const int row_activation = code < 0 ? simd::dwconv_f32_none : code;
  const bool row_affine = code >= 0 && c.epilogue.post_affine;
  const bool activation_after = code < 0 && !c.epilogue.is_identity();
#if defined(ONNX_LIGHT_X86_SIMD)
  if (depthwise_runs_chw(c, isa)) {
    run_chw(execution, c, admitted);
    return;
  }
  if (depthwise_runs_blocked(c, isa)) {
    run_blocked(execution, c, blocked_functions(isa), admitted, workspace);
    return;
  }
#endif
  // Pairs of rows share their input rows' loads where consecutive output rows are one input row apart.
  const bool pairs = rows2_fn != nullptr && c.stride_h == 1 && c.dilation_h == 1;
  const bool flat = rows_run_flat(c);  // the CHW and blocked paths returned above
  const int64_t flat_n = (c.out_h - 1) * l.phase_width + c.out_w;
  // One slot per participant (grows only), sized by the thread that leases it; a slot's pads are
  // zeroed once per layout (the copies write only input values).
  ScratchSlots<DepthwiseWorkspace::Slot>& slots = workspace.slots;
  slots.ensure(static_cast<std::size_t>(std::max(1, execution.threads())) + 1);
  const std::size_t plane_floats = l.direct ? 0 : static_cast<std::size_t>(c.stride_w * l.rows * l.phase_width);
  const std::array<int64_t, 8> signature{c.stride_w, l.rows, l.phase_width, c.pad_top, c.pad_left, c.in_h, c.in_w,
                                         static_cast<int64_t>(plane_floats)};
  execution.parallel_for(planes, 1, admitted, [&](int64_t begin, int64_t end) {
    ScratchSlots<DepthwiseWorkspace::Slot>::Lease slot(slots);
    {
      DepthwiseWorkspace::Slot& s = *slot;
      if (s.plane.size() < plane_floats) s.plane.resize(plane_floats);
      if (s.signature != signature && plane_floats > 0) {
        std::fill(s.plane.begin(), s.plane.begin() + static_cast<std::ptrdiff_t>(plane_floats), 0.0f);
        s.signature = signature;
      }
      if (flat && s.flat.size() < static_cast<std::size_t>(flat_n)) s.flat.resize(static_cast<std::size_t>(flat_n));
      s.src.resize(static_cast<std::size_t>(l.taps));
      s.below.resize(static_cast<std::size_t>(c.kernel_w));
    }
    float* scratch = slot->plane.data();
    std::vector<const float*>& src = slot->src;
    std::vector<const float*>& below = slot->below;
    for (int64_t plane = begin; plane < end; ++plane) {
      const int64_t image = plane / c.maps, map = plane % c.maps;
      const float* input = c.x + (image * c.channels + map / multiplier) * in_plane;
      const float* base = input;
      if (!l.direct) {
        fill_phases(c, l, input, scratch, /*pads_ready=*/true);
        base = scratch;
      }
      simd::DwconvF32Row row{src.data(), c.w + map * l.taps, l.taps, c.out_w,
                             c.bias != nullptr ? c.bias[map] : 0.0f, nullptr, row_activation,
                             c.epilogue.alpha, c.epilogue.beta, nullptr, row_affine, c.epilogue.post_scale,
                             c.epilogue.post_shift};
      if (flat) {
        for (std::size_t t = 0; t < src.size(); ++t) src[t] = base + l.tap_row[t] * l.phase_width + l.tap_column[t];
        row.n = flat_n;
        row.y = slot->flat.data();
        row_fn(row);
        float* y = c.y + plane * out_plane;
        for (int64_t oy = 0; oy < c.out_h; ++oy)
          std::memcpy(y + oy * c.out_w, row.y + oy * l.phase_width, static_cast<std::size_t>(c.out_w) * sizeof(float));
        if (activation_after) apply_activation(c.epilogue, y, out_plane);
        continue;
      }
      for (int64_t oy = 0; oy < c.out_h;) {
        const int64_t r0 = oy * c.stride_h;
        for (std::size_t t = 0; t < src.size(); ++t)
          src[t] = base + (l.tap_phase[t] * l.rows + r0 + l.tap_row[t]) * l.phase_width + l.tap_column[t];
        const int64_t offset = plane * out_plane + oy * c.out_w;
        row.y = c.y + offset;
        row.z = c.z != nullptr ? c.z + offset : nullptr;
        if (pairs && rows4_fn != nullptr && oy + 3 < c.out_h) {
          rows4_fn(row, l.phase_width, c.out_w);
          if (activation_after) apply_activation(c.epilogue, row.y, 4 * c.out_w);
          oy += 4;
          continue;
        }
        if (pairs && oy + 1 < c.out_h) {
          // The lower row's last input row: kernel row kernel_h - 1 of the upper row, one down.
          for (std::size_t kx = 0; kx < below.size(); ++kx) {
            const std::size_t t = src.size() - below.size() + kx;
            below[kx] = src[t] + l.phase_width;
          }
          rows2_fn(row, below.data(), c.kernel_w, row.z != nullptr ? row.z + c.out_w : nullptr, row.y + c.out_w);
          if (activation_after) apply_activation(c.epilogue, row.y, 2 * c.out_w);
          oy += 2;
          continue;
        }
        row_fn(row);
        if (activation_after) apply_activation(c.epilogue, row.y, c.out_w);
        ++oy;
      }
    }
  });
}

}  // namespace onnx_light::runtime::kernels
