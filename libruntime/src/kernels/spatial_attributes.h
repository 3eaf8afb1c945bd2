#pragma once
// The spatial attributes Conv, ConvTranspose and the pools share (kernel_shape, strides,
// dilations, pads, auto_pad, ceil_mode), read and validated once when a kernel is created; their
// lengths are checked against the input's rank at run time.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "onnx_light/runtime/error.h"
#include "onnx_light/runtime/kernel.h"

namespace onnx_light::runtime::kernels {

inline constexpr std::size_t kMaxSpatial = 3;

struct SpatialAttributes {
  std::string auto_pad = "NOTSET";
  std::vector<int64_t> kernel_shape, strides, dilations, pads;
  bool ceil_mode = false;

  explicit SpatialAttributes(const KernelCreateInfo& info) {
    const std::string label = info.node_label();
    auto_pad = info.string_attribute("auto_pad", "NOTSET");
    kernel_shape = info.ints_attribute("kernel_shape");
    strides = info.ints_attribute("strides");
    dilations = info.ints_attribute("dilations");
    pads = info.ints_attribute("pads");
    ceil_mode = info.int_attribute("ceil_mode", 0) != 0;
    if (auto_pad != "NOTSET" && auto_pad != "VALID" && auto_pad != "SAME_UPPER" && auto_pad != "SAME_LOWER")
      throw ModelError(
          fmt::format("{}: attribute 'auto_pad' = \"{}\" is not NOTSET, VALID, SAME_UPPER or SAME_LOWER", label, auto_pad));
    if (auto_pad != "NOTSET" && !pads.empty())
      throw ModelError(fmt::format("{}: attributes 'pads' and 'auto_pad' = \"{}\" cannot both be set", label, auto_pad));
    positive(label, kernel_shape, "kernel_shape");
    positive(label, strides, "strides");
    positive(label, dilations, "dilations");
    not_negative(label, pads, "pads");
    if (kernel_shape.size() > kMaxSpatial)
      throw UnsupportedError(fmt::format("{}: attribute 'kernel_shape' has {} spatial dims; at most {} are supported",
                                         label, kernel_shape.size(), kMaxSpatial));
  }

  static void positive(const std::string& label, const std::vector<int64_t>& values, std::string_view name) {
    for (int64_t v : values)
      if (v < 1) throw ModelError(fmt::format("{}: attribute '{}' = {} must be positive", label, name, values));
  }
  static void not_negative(const std::string& label, const std::vector<int64_t>& values, std::string_view name) {
    for (int64_t v : values)
      if (v < 0) throw ModelError(fmt::format("{}: attribute '{}' = {} must not be negative", label, name, values));
  }
};

}  // namespace onnx_light::runtime::kernels
