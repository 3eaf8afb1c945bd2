// kernels/blocked_maps.h: the weights of the blocked-maps kernels packed by block (partial last
// block zero-filled) and the padded scratch whose zeros outlive a run (kept while the layout holds,
// zeroed when it changes or the buffer grows), which the depthwise and direct kernels rely on to
// skip zero-filling pads on every run.
#include <doctest/doctest.h>

#include <cstdint>
#include <vector>

#include "kernels/blocked_maps.h"

using namespace onnx_light::runtime::kernels;

TEST_CASE("pack_weights_by_block_puts_map_m_in_lane_m_mod_lanes_and_zero_fills_the_partial_block") {
  // 5 maps x 2 taps, 4 lanes: block 0 holds maps 0..3, block 1 map 4 and three zero lanes.
  const std::vector<float> w = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
  const std::vector<float> bias = {-1, -2, -3, -4, -5};
  std::vector<float> weights, biases;
  pack_weights_by_block(w.data(), bias.data(), 5, 2, 4, weights, biases);
  CHECK(weights == std::vector<float>{1, 3, 5, 7, 2, 4, 6, 8, 9, 0, 0, 0, 10, 0, 0, 0});
  CHECK(biases == std::vector<float>{-1, -2, -3, -4, -5, 0, 0, 0});
  // No bias: zeros; a second call replaces, never appends.
  pack_weights_by_block(w.data(), nullptr, 5, 2, 4, weights, biases);
  CHECK(weights.size() == 16);
  CHECK(biases == std::vector<float>(8, 0.0f));
}

TEST_CASE("padded_scratch_keeps_what_tasks_wrote_while_the_layout_holds_and_zeroes_on_change_or_growth") {
  PaddedScratch s;
  const PaddedScratch::Layout a{1, 2, 3, 4, 5, 6, 7, 8}, b{1, 2, 3, 4, 5, 6, 7, 9};
  s.prepare(64, a);
  for (int i = 0; i < 64; ++i) CHECK(s.data()[i] == 0.0f);
  CHECK(reinterpret_cast<std::uintptr_t>(s.data()) % 64 == 0);  // one aligned vector per blocked pixel
  s.data()[10] = 3.0f;  // a value a task wrote
  s.prepare(64, a);     // the next run, same layout: not zeroed again
  CHECK(s.data()[10] == 3.0f);
  s.prepare(32, a);     // smaller, same layout: kept
  CHECK(s.data()[10] == 3.0f);
  s.prepare(64, b);     // another layout: the pads may be elsewhere, so everything is zero
  CHECK(s.data()[10] == 0.0f);
  s.data()[10] = 3.0f;
  s.prepare(4096, b);   // grown: a new buffer, zeroed whole
  for (int i = 0; i < 4096; ++i) REQUIRE(s.data()[i] == 0.0f);
}
