#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <unistd.h>
#include <map>
#include <stdexcept>

#include "onnx_light/runtime/calibration_workload.h"
#include "onnx_light/runtime/error.h"
#include "onnx_light/runtime/kernel_table.h"
#include "onnx_light/runtime/thread_pool.h"
#include "onnx_light/runtime/tuning_registry.h"
#include "onnx_light/tune/cache_file.h"
#include "onnx_light/tune/calibration.h"
#include "onnx_light/tune/operations.h"
#include "onnx_light/tune/threshold_search.h"
#include "onnx_light/tune/verification.h"

using namespace onnx_light;
using namespace onnx_light::runtime;
using namespace onnx_light::tune;

namespace {

// --- The engine with a synthetic clock and synthetic timings ---------------------------------

struct FakeClock final : CalibrationClock {
  int64_t now = 1'000'000'000;
  // Set: other processes keep this many of 2 CPUs busy all the time (the engine used none itself).
  std::optional<double> other_cpus;
  int64_t now_ns() override { return now; }
  std::optional<CpuTimes> cpu_times() override {
    if (!other_cpus) return std::nullopt;
    return CpuTimes{now, static_cast<int64_t>(*other_cpus * static_cast<double>(now)), 0, 2};
  }
};

// --- sequential_threshold_search: driven by synthetic pair-ratio sequences ------------------

// A measurement source: `ratio(size, pair_index_at_that_size)` per pair; refuses (like a budget)
// sizes above `largest` and any batch once `pair_budget` pairs were given.
struct SyntheticPairs {
  std::function<double(int64_t size, int index)> ratio;
  int64_t largest = int64_t{1} << 40;
  int pair_budget = 1 << 30;
  int given = 0;
  std::map<int64_t, int> per_size;  // pairs given per size
  std::vector<int64_t> batches;     // size of each batch, in order
  PairBatch operator()(int64_t size, int pairs) {
    PairBatch b;
    if (size > largest) {
      b.stop_reason = "the next case would pass the memory budget";
      return b;
    }
    if (given + pairs > pair_budget) {
      b.stop_reason = "the time budget ran out";
      return b;
    }
    batches.push_back(size);
    for (int i = 0; i < pairs; ++i) b.ratios.push_back(ratio(size, per_size[size]++));
    given += pairs;
    return b;
  }
  PairMeasure fn() {
    return [this](int64_t size, int pairs) { return (*this)(size, pairs); };
  }
};

std::function<double(int64_t, int)> step_at(int64_t crossover, double win = 0.6, double lose = 1.3) {
  return [=](int64_t size, int) { return size >= crossover ? win : lose; };
}

SequentialSearchSettings no_refine() {
  SequentialSearchSettings s;
  s.refine_steps = 0;
  return s;
}

bool mentions(const SequentialSearchResult& r, const std::string& text) {
  return std::any_of(r.notes.begin(), r.notes.end(), [&](const std::string& n) { return n.find(text) != std::string::npos; });
}

const SizeEvidence& at(const SequentialSearchResult& r, int64_t size) {
  for (const auto& e : r.sizes)
    if (e.size == size) return e;
  throw std::runtime_error("size not measured: " + std::to_string(size));
}

TEST_CASE("trimmed_mean_interval_drops_a_fifth_at_each_end_and_uses_the_winsorized_variance") {
  // 1..10: g = 2, kept 3..8 (mean 5.5); winsorized 3,3,3,4,5,6,7,8,8,8: sum of squares 42.5,
  // se = sqrt(42.5 / (6 * 5)), t(5) = 2.571.
  const TrimmedMean t = trimmed_mean_interval({10, 9, 8, 7, 6, 5, 4, 3, 2, 1});
  CHECK(t.mean == doctest::Approx(5.5));
  const double half = 2.571 * std::sqrt(42.5 / 30.0);
  CHECK(t.low == doctest::Approx(5.5 - half));
  CHECK(t.high == doctest::Approx(5.5 + half));
  // Identical pairs decide at once: the interval is a point.
  const TrimmedMean same = trimmed_mean_interval({0.6, 0.6, 0.6, 0.6, 0.6});
  CHECK(same.low == doctest::Approx(0.6));
  CHECK(same.high == doctest::Approx(0.6));
  // A preempted pair (a 90x ratio) is trimmed away, not averaged in.
  const TrimmedMean outlier = trimmed_mean_interval({0.6, 0.61, 0.59, 0.6, 90.0});
  CHECK(outlier.mean == doctest::Approx(0.6033).epsilon(0.001));
}

TEST_CASE("trimmed_mean_interval_narrows_on_a_bimodal_mixture_the_median_cannot_settle") {
  // A shared VM's parallel timings: a fast mode (0.55) and a slow one (1.3), about half each.
  // The median jumps between the modes; the trimmed mean converges to the expected ratio.
  std::vector<double> mixture;
  for (int i = 0; i < 120; ++i) mixture.push_back(i % 2 ? 0.55 + 0.001 * (i % 7) : 1.3 + 0.001 * (i % 5));
  const TrimmedMean t = trimmed_mean_interval(mixture);
  CHECK(t.mean > 0.55);
  CHECK(t.mean < 1.3);
  CHECK(t.high - t.low < 0.25);
}

TEST_CASE("non_increasing_fit_pools_adjacent_violators_by_weight_and_leaves_a_falling_curve_alone") {
  using V = std::vector<double>;
  // Already non-increasing: unchanged.
  CHECK(non_increasing_fit(V{1.3, 1.0, 0.7}, V{1, 1, 1}) == V{1.3, 1.0, 0.7});
  // 0.9 below 1.1: pooled to their mean, equal weights.
  const V equal = non_increasing_fit(V{1.3, 0.9, 1.1, 0.6}, V{1, 1, 1, 1});
  REQUIRE(equal.size() == 4);
  CHECK(equal[0] == doctest::Approx(1.3));
  CHECK(equal[1] == doctest::Approx(1.0));
  CHECK(equal[2] == doctest::Approx(1.0));
  CHECK(equal[3] == doctest::Approx(0.6));
  // Weights pull the pooled value toward the better measured size: (0.9 * 3 + 1.1 * 1) / 4.
  const V weighted = non_increasing_fit(V{0.9, 1.1}, V{3, 1});
  CHECK(weighted[0] == doctest::Approx(0.95));
  CHECK(weighted[1] == doctest::Approx(0.95));
  // A violation discovered late pools backwards through earlier blocks: 0.8, 0.9 then 1.3.
  const V chain = non_increasing_fit(V{0.8, 0.9, 1.3}, V{1, 1, 1});
  for (double v : chain) CHECK(v == doctest::Approx(1.0));
  // A zero weight still gets a defined value.
  const V zero = non_increasing_fit(V{0.5, 0.7}, V{0, 1});
  CHECK(zero[0] == doctest::Approx(0.7));
  CHECK(zero[1] == doctest::Approx(0.7));
  CHECK(non_increasing_fit(V{}, V{}).empty());
}

TEST_CASE("student_t_975_matches_the_table_and_approaches_the_normal_quantile") {
  CHECK(student_t_975(1) == doctest::Approx(12.706));
  CHECK(student_t_975(5) == doctest::Approx(2.571));
  CHECK(student_t_975(30) == doctest::Approx(2.042));
  CHECK(student_t_975(40) == doctest::Approx(2.021).epsilon(0.002));
  CHECK(student_t_975(1000) == doctest::Approx(1.962).epsilon(0.002));
  CHECK(std::isinf(student_t_975(0)));
}

TEST_CASE("sequential_clean_step_function_gives_exact_bracket_with_high_confidence") {
  SyntheticPairs m;
  m.ratio = step_at(65536);
  auto r = sequential_threshold_search(no_refine(), 32768, m.fn());
  CHECK(r.stop_rule_met);
  REQUIRE(r.pick.has_value());
  CHECK(*r.pick == 65536);
  CHECK(*r.bracket_low == 32768);
  CHECK(r.confidence == Confidence::high);
  CHECK_FALSE(r.noisy);
  // Clearly decided sizes cost only the first batch each.
  for (const auto& e : r.sizes) CHECK(e.ratios.size() == 5);
  CHECK(r.sizes.back().size == 131072);
}

TEST_CASE("sequential_refinement_picks_between_powers_of_two_inside_the_bracket") {
  SyntheticPairs m;
  m.ratio = step_at(50000);
  SequentialSearchSettings s;
  s.refine_steps = 2;
  auto r = sequential_threshold_search(s, 32768, m.fn());
  REQUIRE(r.pick.has_value());
  // Bracket 32768..65536 -> midpoint 46336 loses -> 55040 wins.
  CHECK(*r.pick == 55040);
  CHECK(*r.bracket_low == 46336);
  CHECK(at(r, 46336).refined);
  CHECK(r.confidence == Confidence::high);
}

TEST_CASE("sequential_refinement_respects_the_parameters_validation") {
  SyntheticPairs m;
  m.ratio = step_at(50000);
  SequentialSearchSettings s;
  s.valid = [](int64_t v) { return v % 4096 == 0; };  // midpoints 46336 is not valid
  auto r = sequential_threshold_search(s, 32768, m.fn());
  CHECK(*r.pick == 65536);
  CHECK(r.sizes.size() == 8);  // 1024 .. 131072, no midpoint
}

TEST_CASE("sequential_outlier_pair_batch_is_retested_and_the_pick_is_unchanged") {
  SyntheticPairs m;
  // 16384's first batch is a 10x outlier (a preempted run); measured again it is a clean win.
  m.ratio = [](int64_t size, int index) {
    if (size == 16384 && index < 5) return 6.0;
    return step_at(8192)(size, index);
  };
  auto r = sequential_threshold_search(no_refine(), 32768, m.fn());
  CHECK(*r.pick == 8192);
  CHECK(at(r, 16384).retested);
  CHECK(at(r, 16384).wins);
  CHECK(mentions(r, "10x outlier"));
}

TEST_CASE("sequential_loss_between_two_wins_is_retested_before_it_counts") {
  SyntheticPairs m;
  m.ratio = [](int64_t size, int index) {
    if (size == 16384 && index < 5) return 1.3;  // one transient loss
    return step_at(8192)(size, index);
  };
  SequentialSearchSettings s = no_refine();
  s.consecutive_wins = 3;  // so that 8192, (16384), 32768 does not stop the search first
  auto r = sequential_threshold_search(s, 32768, m.fn());
  CHECK(at(r, 16384).retested);
  CHECK(*r.pick == 8192);  // without the retest the streak would start at 32768
  CHECK(mentions(r, "a loss between two wins"));
}

TEST_CASE("sequential_budget_ends_after_one_win_pick_follows_evidence_not_default") {
  // The case: serial as fast or faster up to 1048576, one win at 2097152, then the
  // memory budget. The default 32768 is contradicted by every measurement.
  SyntheticPairs m;
  m.ratio = step_at(2097152, 0.5, 1.0);
  m.largest = 2097152;
  auto r = sequential_threshold_search(no_refine(), 32768, m.fn());
  CHECK_FALSE(r.stop_rule_met);
  REQUIRE(r.pick.has_value());
  CHECK(*r.pick == 2097152);
  CHECK(*r.bracket_low == 1048576);
  CHECK(r.confidence == Confidence::medium);
  CHECK(mentions(r, "the pick follows the evidence"));
  CHECK(mentions(r, "1048576, the largest size where serial won or tied"));
}

TEST_CASE("sequential_budget_ends_after_one_win_keeps_a_default_the_measurements_agree_with") {
  SyntheticPairs m;
  m.ratio = step_at(65536);
  m.largest = 65536;
  auto r = sequential_threshold_search(no_refine(), 50000, m.fn());  // 32768 < 50000 <= 65536
  CHECK_FALSE(r.pick.has_value());
  CHECK(mentions(r, "kept the default 50000"));
}

TEST_CASE("sequential_time_budget_after_one_win_stops_with_reason") {
  SyntheticPairs m;
  m.ratio = step_at(8192);
  m.pair_budget = 20;  // 1024, 2048, 4096, 8192 then nothing
  auto r = sequential_threshold_search(no_refine(), 32768, m.fn());
  CHECK(*r.pick == 8192);
  CHECK(r.stop_reason.find("time budget") != std::string::npos);
}

TEST_CASE("sequential_parallel_never_wins_pick_is_above_largest_measured") {
  SyntheticPairs m;
  m.ratio = step_at(int64_t{1} << 40);
  m.largest = 262144;
  auto r = sequential_threshold_search(no_refine(), 32768, m.fn());
  REQUIRE(r.pick.has_value());
  CHECK(*r.pick == 524288);
  CHECK(mentions(r, "never won up to the largest size measured, 262144"));
  CHECK(mentions(r, "above it"));
  // A default above every measured loss agrees with them and is kept.
  SyntheticPairs m2;
  m2.ratio = step_at(int64_t{1} << 40);
  m2.largest = 16384;
  auto kept = sequential_threshold_search(no_refine(), 32768, m2.fn());
  CHECK_FALSE(kept.pick.has_value());
  CHECK(mentions(kept, "kept the default 32768"));
}

TEST_CASE("sequential_straddling_margin_measures_more_pairs_than_clear_sizes") {
  SyntheticPairs m;
  // 16384 alternates 1.10 / 0.80: its median interval straddles 0.95 until the pair limit.
  m.ratio = [](int64_t size, int index) {
    if (size == 16384) return index % 2 ? 0.80 : 1.10;
    return step_at(32768)(size, index);
  };
  SequentialSearchSettings s = no_refine();
  s.maximum_pairs = 21;
  auto r = sequential_threshold_search(s, 32768, m.fn());
  CHECK(at(r, 16384).ratios.size() == 21);
  CHECK(at(r, 16384).verdict == SizeVerdict::undecided);
  CHECK(at(r, 8192).ratios.size() == 5);
  CHECK(at(r, 65536).ratios.size() == 5);
  // 16384 leans towards a loss (trimmed mean 0.96), so the pick is 32768; the nearest decided
  // sizes are 8192 (loss) and 32768 (win), two doublings apart: medium confidence, and a noise
  // warning naming the undecided size and the dispersion.
  CHECK(*r.pick == 32768);
  CHECK(r.confidence == Confidence::medium);
  CHECK(r.noisy);
  CHECK(mentions(r, "too noisy for the 5% margin"));
  CHECK(mentions(r, "dispersion"));
}

TEST_CASE("sequential_undecided_crossover_between_decided_sizes_one_doubling_apart_is_high_confidence") {
  // At the crossover the two sides tie by definition: an undecided midpoint between a decided
  // loss and a decided win one doubling apart pins the pick as well as anything can.
  SyntheticPairs m;
  m.ratio = [](int64_t size, int index) {
    if (size == 46336) return index % 2 ? 0.80 : 1.10;
    return step_at(65536)(size, index);
  };
  SequentialSearchSettings s;
  s.refine_steps = 1;
  auto r = sequential_threshold_search(s, 32768, m.fn());
  CHECK(at(r, 46336).verdict == SizeVerdict::undecided);
  CHECK(*r.pick == 65536);
  CHECK(r.confidence == Confidence::high);
  CHECK_FALSE(r.noisy);
  CHECK(mentions(r, "the two sides tie there"));
}

TEST_CASE("sequential_decided_sizes_more_than_two_doublings_apart_are_low_confidence") {
  SyntheticPairs m;
  m.ratio = [](int64_t size, int index) {
    if (size == 16384 || size == 32768) return index % 2 ? 0.80 : 1.10;  // both lean to a loss
    return step_at(65536)(size, index);
  };
  SequentialSearchSettings s = no_refine();
  s.maximum_pairs = 21;
  auto r = sequential_threshold_search(s, 32768, m.fn());
  CHECK(*r.pick == 65536);
  // The nearest decided loss is 8192: the crossover may be anywhere in 8192..65536.
  CHECK(r.confidence == Confidence::low);
  CHECK(r.noisy);
  CHECK(mentions(r, "a span of 8x"));
}

TEST_CASE("sequential_confirmation_measures_the_ladder_in_rounds_and_leaves_other_sizes_alone") {
  SyntheticPairs m;
  m.ratio = step_at(65536);
  SequentialSearchSettings s = no_refine();
  s.confirm_pairs = 13;  // 5 + 2 rounds of 4
  auto r = sequential_threshold_search(s, 32768, m.fn());
  CHECK(*r.pick == 65536);
  // Ladder: half the bracket's low end (16384) to twice its high end (131072).
  for (int64_t size : {16384, 32768, 65536, 131072}) CHECK(at(r, size).ratios.size() == 13);
  for (int64_t size : {1024, 2048, 4096, 8192}) CHECK(at(r, size).ratios.size() == 5);
  // Rounds: each ladder size once per round, not one size to the end and then the next.
  const std::vector<int64_t> tail(m.batches.end() - 8, m.batches.end());
  CHECK(tail == std::vector<int64_t>{16384, 32768, 65536, 131072, 16384, 32768, 65536, 131072});
  CHECK(mentions(r, "confirmed 4 sizes (16384..131072) in 2 rounds"));
}

TEST_CASE("sequential_confirmation_moves_the_pick_when_the_added_pairs_overturn_a_first_batch") {
  // 32768's first batch met a slow spell of the machine (a loss); later pairs win like its
  // neighbours. The confirmation rounds find that out and the pick follows.
  SyntheticPairs m;
  m.ratio = [](int64_t size, int index) {
    if (size == 32768) return index < 5 ? 1.3 : 0.6;
    return step_at(65536)(size, index);
  };
  SequentialSearchSettings s = no_refine();
  s.confirm_pairs = 45;
  auto r = sequential_threshold_search(s, 131072, m.fn());
  CHECK(at(r, 32768).wins);
  CHECK(*r.pick == 32768);
  CHECK(mentions(r, "the run of wins starts at 32768 (was 65536)"));
  CHECK(r.confidence == Confidence::high);  // decided loss at 16384, decided win at 32768
}

TEST_CASE("sequential_confirmation_stops_at_the_budget_with_a_note") {
  SyntheticPairs m;
  m.ratio = step_at(65536);
  m.pair_budget = 8 * 5 + 6;  // the search (8 sizes x 5 pairs), then one batch of 4 fits
  SequentialSearchSettings s = no_refine();
  s.confirm_pairs = 100;
  auto r = sequential_threshold_search(s, 32768, m.fn());
  CHECK(*r.pick == 65536);
  CHECK(at(r, 16384).ratios.size() == 9);
  CHECK(at(r, 32768).ratios.size() == 5);
  CHECK(mentions(r, "until the budget ended"));
}

TEST_CASE("sequential_fit_pools_a_plateau_so_one_size_above_the_bar_does_not_push_the_pick_two_doublings_up") {
  // A plateau near the margin, as on a slow VM: parallel wins ~10% at 262144 and ~3% at 524288
  // (both undecided), then clearly from 1048576. Per size, 524288 breaks the run of wins and the
  // pick would be 1048576; the fit pools the two plateau sizes (0.935, under the 0.95 bar).
  SyntheticPairs m;
  m.ratio = [](int64_t size, int index) {
    if (size == 262144) return index % 2 ? 0.65 : 1.15;
    if (size == 524288) return index % 2 ? 0.72 : 1.22;
    return size >= 1048576 ? 0.6 : 1.3;
  };
  SequentialSearchSettings s = no_refine();
  s.confirm_pairs = 45;
  auto r = sequential_threshold_search(s, 32768, m.fn());
  CHECK(at(r, 262144).verdict == SizeVerdict::undecided);
  CHECK(at(r, 524288).verdict == SizeVerdict::undecided);
  CHECK_FALSE(at(r, 524288).wins);
  CHECK(at(r, 262144).fitted == doctest::Approx(0.935).epsilon(0.01));
  CHECK(at(r, 524288).fitted == doctest::Approx(at(r, 262144).fitted));
  CHECK(at(r, 131072).fitted == doctest::Approx(1.3));
  REQUIRE(r.pick.has_value());
  CHECK(*r.pick == 262144);
  CHECK(mentions(r, "fit across sizes the run of wins starts at 262144 (was 1048576)"));
}

TEST_CASE("sequential_fit_never_carries_the_pick_below_a_decided_loss") {
  // 131072 measured faster (0.5) than the decided loss at 262144 (1.2): the fit pools them to
  // 0.85, under the bar, but a decided loss ends the run of wins whatever the fit says.
  SyntheticPairs m;
  m.ratio = [](int64_t size, int) {
    if (size == 131072) return 0.5;
    if (size == 262144) return 1.2;
    return size >= 524288 ? 0.6 : 1.3;
  };
  SequentialSearchSettings s = no_refine();
  s.confirm_pairs = 13;
  auto r = sequential_threshold_search(s, 32768, m.fn());
  CHECK(at(r, 262144).verdict == SizeVerdict::loss);
  CHECK(at(r, 262144).fitted < 0.95);  // pooled with 131072 (equal pairs): (0.5 + 1.2) / 2
  REQUIRE(r.pick.has_value());
  CHECK(*r.pick == 524288);
}

TEST_CASE("sequential_unsure_rounds_measure_on_until_decided_sizes_pin_the_pick_within_one_doubling") {
  // 32768 is noisy (0.5 or 1.9, mean 1.2): still undecided after 45 pairs, so the nearest
  // decided loss is 16384, two doublings below the pick (medium). More rounds decide it a loss.
  auto noisy_below = [](int64_t size, int index) {
    if (size == 32768) return index % 2 ? 0.5 : 1.9;
    return step_at(65536)(size, index);
  };
  SequentialSearchSettings s = no_refine();
  s.confirm_pairs = 45;

  SyntheticPairs base;
  base.ratio = noisy_below;
  auto without = sequential_threshold_search(s, 131072, base.fn());
  CHECK(*without.pick == 65536);
  CHECK(at(without, 32768).verdict == SizeVerdict::undecided);
  CHECK(without.confidence == Confidence::medium);

  SyntheticPairs more;
  more.ratio = noisy_below;
  s.unsure_confirm_pairs = 180;
  auto with = sequential_threshold_search(s, 131072, more.fn());
  CHECK(*with.pick == 65536);
  CHECK(at(with, 32768).verdict == SizeVerdict::loss);
  CHECK(at(with, 32768).ratios.size() > 45);
  CHECK(at(with, 32768).ratios.size() < 180);  // stopped once pinned, not at the cap
  CHECK(with.confidence == Confidence::high);
  CHECK(mentions(with, "then they did"));

  // The budget ends the extra rounds, with a note, and the pick stands.
  SyntheticPairs cut;
  cut.ratio = noisy_below;
  cut.pair_budget = 260;
  auto short_of_time = sequential_threshold_search(s, 131072, cut.fn());
  CHECK(*short_of_time.pick == 65536);
  CHECK(short_of_time.confidence == Confidence::medium);
  CHECK(mentions(short_of_time, "up to 180 per size) until the budget ended"));
}

TEST_CASE("sequential_confidence_is_low_when_nothing_was_measured_or_a_partial_search_is_noisy") {
  SyntheticPairs none;
  none.ratio = step_at(1024);
  none.largest = 512;
  auto r = sequential_threshold_search(no_refine(), 32768, none.fn());
  CHECK(r.sizes.empty());
  CHECK_FALSE(r.pick.has_value());
  CHECK(r.confidence == Confidence::low);

  SyntheticPairs noisy;
  noisy.ratio = [](int64_t size, int index) {
    if (size == 8192) return index % 2 ? 1.10 : 0.80;  // leans to a win, undecided
    return 1.3;
  };
  noisy.largest = 8192;  // budget ends after that one (undecided) win
  auto partial = sequential_threshold_search(no_refine(), 32768, noisy.fn());
  CHECK(*partial.pick == 8192);
  CHECK(partial.confidence == Confidence::low);
  CHECK(partial.noisy);
}

// Scripted timings: per size, the medians of each configuration; each measure() call costs
// `cost_ns` of fake time.
struct Script {
  std::function<std::vector<double>(int64_t size, const std::vector<TuningValues>&)> medians;
  int64_t cost_ns = 1'000'000;
  int64_t bytes_per_element = 16;
  int variants = 1;
  std::function<void(int64_t size)> before_measure;
  std::vector<int64_t> measured_sizes;
  // When set: per-pair samples (serial = size ns, candidate = size * ratio) instead of medians.
  std::function<double(int64_t size, int index)> pair_ratio;
  std::map<int64_t, int> pairs_given;
  // Fake time per timed repetition per 1024 elements, on top of cost_ns (warm-ups, setup).
  int64_t repetition_ns_per_1024 = 0;
};

struct FakeBenchmark final : CaseBenchmark {
  FakeBenchmark(Script& script, FakeClock& clock) : script_(script), clock_(clock) {}
  int variants() const override { return script_.variants; }
  int64_t memory_bytes(int64_t size, int, std::size_t) const override { return size * script_.bytes_per_element; }
  CaseTiming measure(int64_t size, int variant, const std::vector<TuningValues>& configurations, int64_t, int minimum,
                     int) override {
    if (script_.before_measure) script_.before_measure(size);
    if (variant == 0) script_.measured_sizes.push_back(size);
    clock_.now += script_.cost_ns + script_.repetition_ns_per_1024 * minimum * std::max<int64_t>(1, size / 1024);
    CaseTiming t;
    t.repetitions = 3;
    if (script_.pair_ratio) {
      t.repetitions = minimum;
      t.samples_ns.resize(2);
      for (int i = 0; i < minimum; ++i) {
        t.samples_ns[0].push_back(static_cast<double>(size));
        t.samples_ns[1].push_back(static_cast<double>(size) * script_.pair_ratio(size, script_.pairs_given[size]++));
      }
      t.median_ns = {static_cast<double>(size), static_cast<double>(size)};
    } else {
      t.median_ns = script_.medians(size, configurations);
    }
    t.description = "fake[" + std::to_string(size) + "]";
    return t;
  }
  Script& script_;
  FakeClock& clock_;
};

class IdleKernel final : public Kernel {
 public:
  void run(KernelExecution&) override {}
};

KernelDef fake_def(const std::string& op, bool with_workload = true) {
  KernelDef d;
  d.op_type = op;
  d.element_type = ElementType::float32;
  TuningKey key;
  key.kernel = op;
  key.implementation = "portable";
  d.schema = parallel_threshold_schema(key, 32768);
  ParameterSpec tile;
  tile.name = "tile.width";
  tile.type = ValueType::int64;
  tile.default_value = int64_t{8};
  tile.role = ParameterRole::tile;
  tile.allowed = {int64_t{4}, int64_t{8}, int64_t{16}};
  d.schema.parameters.push_back(tile);
  d.create = [](const KernelCreateInfo&) { return std::make_unique<IdleKernel>(); };
  if (with_workload) d.calibration_workload = [](int64_t, int, uint32_t) { return CalibrationWorkload{}; };
  return d;
}

struct CalibrationFixture {
  KernelTable table;
  TuningRegistry registry;
  FakeClock clock;
  Script script;
  OperationContext context;
  std::filesystem::path dir;

  CalibrationFixture() {
    table.add(fake_def("Fast"));
    table.add(fake_def("Slow"));
    table.add(fake_def("Plain", false));
    context.kernels = &table;
    context.registry = &registry;
    context.system_cache_path = std::filesystem::path();
    dir = std::filesystem::temp_directory_path() / ("onnx_light_calibration_test_" + std::to_string(::getpid()));
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
  }
  ~CalibrationFixture() { std::filesystem::remove_all(dir); }

  CalibrationOptions options(std::vector<std::string> kernels) {
    CalibrationOptions o;
    o.selection.kernels = std::move(kernels);
    o.selection.element_types = {1};
    o.num_threads = 2;
    o.save = false;
    o.path = (dir / "cache.toml").string();
    o.clock = std::shared_ptr<CalibrationClock>(&clock, [](CalibrationClock*) {});
    o.benchmark_factory = [this](const KernelDef&, int, uint32_t) { return std::make_unique<FakeBenchmark>(script, clock); };
    return o;
  }
};

int64_t threshold(const KeyCalibration& k) { return std::get<int64_t>(k.values.at("parallel.minimum_elements")); }

// Serial vs candidate (config 0 = serial, 1 = candidate): the candidate wins from `crossover` on.
std::function<std::vector<double>(int64_t, const std::vector<TuningValues>&)> crossover_at(int64_t crossover) {
  return [crossover](int64_t size, const std::vector<TuningValues>&) {
    double serial = static_cast<double>(size);
    return std::vector<double>{serial, size >= crossover ? serial * 0.6 : serial * 1.3};
  };
}

TEST_CASE("engine_chooses_crossover_and_reports_bracket_like_the_seed") {
  CalibrationFixture f;
  f.script.medians = crossover_at(65536);
  CalibrationReport r = calibrate_kernel_tuning(f.options({"Fast"}), f.context);
  REQUIRE(r.calibrated.size() == 1);
  CHECK(threshold(r.calibrated[0]) == 65536);
  // 32768..65536 refined at geometric midpoints 46336 and 55040 (both lose).
  CHECK(*r.calibrated[0].bracket_low == 55040);
  CHECK(std::get<int64_t>(r.calibrated[0].values.at("tile.width")) == 8);  // untouched parameter kept
  REQUIRE(r.diagnostics.size() == 5);
  CHECK(r.diagnostics[0].message == "Fast selected parallel.minimum_elements=65536.");
  CHECK(r.diagnostics[1].message == "Fast crossover is bracketed by measured sizes 55040 and 65536.");
  // The confirmation rounds: 16384 (half of 32768) .. 131072 (twice 65536), midpoints included.
  CHECK(r.diagnostics[2].message.find("Fast confirmed 6 sizes (16384..131072) in ") == 0);
  CHECK(r.diagnostics[3].message.find("Fast decided sizes pin the crossover: serial wins at 55040") == 0);
  CHECK(r.diagnostics[4].message.find("Fast confidence: high") == 0);
  CHECK(r.calibrated[0].confidence == Confidence::high);
  // Search stops after the second consecutive win: 1024 .. 131072, then the two midpoints.
  CHECK(f.script.measured_sizes.front() == 1024);
  CHECK(*std::max_element(f.script.measured_sizes.begin(), f.script.measured_sizes.end()) == 131072);
  auto json = r.to_json();
  CHECK(json["calibrated"][0]["kernel"] == "Fast");
  CHECK(json["calibrated"][0]["values"]["parallel.minimum_elements"] == 65536);
  CHECK(json["cache_update"].is_null());
  CHECK(json["measurements"][0]["confidence"] == "high");
  CHECK(json["measurements"][0]["cases"][0]["verdict"] == "loss");
  CHECK(json["measurements"][0]["cases"][0]["ratio_interval"].size() == 2);
  CHECK(r.ok());
}

TEST_CASE("engine_publishes_all_keys_in_one_generation") {
  CalibrationFixture f;
  f.script.medians = crossover_at(4096);
  uint64_t before = f.registry.published_generation();
  CalibrationReport r = calibrate_kernel_tuning(f.options({"Fast", "Slow"}), f.context);
  REQUIRE(r.calibrated.size() == 2);
  CHECK(r.published_generation == before + 1);
  auto snapshot = f.registry.snapshot();
  for (const auto& k : r.calibrated) {
    const TuningValues* v = snapshot->find(k.key, 2, true);
    REQUIRE(v != nullptr);
    CHECK(std::get<int64_t>(v->at("parallel.minimum_elements")) == 4096);
  }
}

TEST_CASE("engine_time_budget_exhaustion_keeps_default_with_reason") {
  CalibrationFixture f;
  f.script.medians = crossover_at(int64_t{1} << 40);  // never wins
  f.script.cost_ns = 30'000'000;                      // 30 ms per case
  auto o = f.options({"Fast"});
  o.maximum_duration_ms = 100;
  CalibrationReport r = calibrate_kernel_tuning(o, f.context);
  REQUIRE(r.calibrated.size() == 1);
  CHECK(threshold(r.calibrated[0]) == 32768);
  CHECK_FALSE(r.calibrated[0].changed_default);
  // Cases predicted to pass the deadline are not started: elapsed stays within the budget.
  CHECK(r.elapsed_ms <= 100);
  CHECK(f.script.measured_sizes.size() <= 3);
  // Parallel never won at the sizes measured, all below the default: the default agrees, kept.
  REQUIRE(r.diagnostics.size() == 2);
  CHECK(r.diagnostics[0].message.find("kept the default 32768") != std::string::npos);
  CHECK(r.diagnostics[0].message.find("time budget") != std::string::npos);
}

TEST_CASE("engine_memory_budget_bounds_case_sizes") {
  CalibrationFixture f;
  f.script.medians = crossover_at(int64_t{1} << 40);
  f.script.bytes_per_element = 16;
  auto o = f.options({"Fast"});
  o.maximum_memory_bytes = 16 * 8192;  // sizes up to 8192 fit
  CalibrationReport r = calibrate_kernel_tuning(o, f.context);
  CHECK(f.script.measured_sizes.back() == 8192);
  REQUIRE(r.diagnostics.size() == 2);
  CHECK(r.diagnostics[0].message.find("memory budget") != std::string::npos);
}

TEST_CASE("engine_memory_budget_below_first_case_keeps_default") {
  CalibrationFixture f;
  f.script.medians = crossover_at(1);
  auto o = f.options({"Fast"});
  o.maximum_memory_bytes = 100;
  CalibrationReport r = calibrate_kernel_tuning(o, f.context);
  CHECK(f.script.measured_sizes.empty());
  REQUIRE(r.calibrated.size() == 1);
  CHECK(threshold(r.calibrated[0]) == 32768);
  CHECK(r.diagnostics[0].message.find("no case could be measured") != std::string::npos);
}

TEST_CASE("engine_mismatch_is_an_error_and_nothing_is_published_for_that_key") {
  CalibrationFixture f;
  f.script.medians = crossover_at(2048);
  f.script.before_measure = [](int64_t size) {
    if (size == 4096) throw CalibrationMismatch("Fast: output 'y' of configuration 1 differs from the serial reference");
  };
  uint64_t before = f.registry.published_generation();
  CalibrationReport r = calibrate_kernel_tuning(f.options({"Fast"}), f.context);
  CHECK(r.calibrated.empty());
  REQUIRE(r.failed.size() == 1);
  CHECK(r.failed[0].kernel == "Fast");
  CHECK_FALSE(r.ok());
  CHECK(f.registry.published_generation() == before);
  CHECK(r.diagnostics.back().message.find("differs from the serial reference") != std::string::npos);
}

TEST_CASE("engine_one_thread_keeps_default_with_reason") {
  CalibrationFixture f;
  f.script.medians = crossover_at(1024);
  auto o = f.options({"Fast"});
  o.num_threads = 1;
  CalibrationReport r = calibrate_kernel_tuning(o, f.context);
  REQUIRE(r.calibrated.size() == 1);
  CHECK(threshold(r.calibrated[0]) == 32768);
  CHECK(f.script.measured_sizes.empty());
  CHECK(r.diagnostics[0].message.find("one thread") != std::string::npos);
}

TEST_CASE("engine_comparison_mode_picks_lowest_summed_median") {
  CalibrationFixture f;
  // Config medians: width 4 -> 100, 8 -> 80, 16 -> 90 per case.
  f.script.medians = [](int64_t, const std::vector<TuningValues>& configs) {
    std::vector<double> out;
    for (const auto& c : configs) {
      int64_t w = std::get<int64_t>(c.at("tile.width"));
      out.push_back(w == 4 ? 100.0 : w == 8 ? 80.0 : 90.0);
    }
    return out;
  };
  auto o = f.options({"Fast"});
  o.parameters["tile.width"] = {"4", "8", "16"};
  CalibrationReport r = calibrate_kernel_tuning(o, f.context);
  REQUIRE(r.calibrated.size() == 1);
  const auto& k = r.calibrated[0];
  CHECK(std::get<int64_t>(k.values.at("tile.width")) == 8);
  REQUIRE(k.comparison.size() == 3);
  CHECK(k.comparison[0].speedup == doctest::Approx(1.0));
  CHECK(k.comparison[1].speedup == doctest::Approx(100.0 / 80.0));
  CHECK(k.comparison[2].speedup == doctest::Approx(100.0 / 90.0));
  CHECK(r.diagnostics[0].message.find("selected tile.width=8") != std::string::npos);
  // Cases grow eightfold (doubling never reached the sizes where a GEMM tile parameter matters);
  // a sixth, 33554432, would pass the default 64 MiB memory budget at this fixture's bytes per element.
  CHECK(f.script.measured_sizes == std::vector<int64_t>{1024, 8192, 65536, 524288, 4194304});
  CHECK(k.comparison[0].total_median_ns == doctest::Approx(500.0));
}

TEST_CASE("engine_comparison_mode_keeps_the_baseline_unless_a_value_beats_it_by_the_noise") {
  // Summed medians 500 (baseline 4), 495 (8: 1% faster, within the noise between equal sessions)
  // and 510 (16): the baseline stays, and the report names the fastest and why it was not taken.
  CalibrationFixture f;
  auto medians_for = [&f](double eight) {
    f.script.medians = [eight](int64_t, const std::vector<TuningValues>& configs) {
      std::vector<double> out;
      for (const auto& c : configs) {
        const int64_t w = std::get<int64_t>(c.at("tile.width"));
        out.push_back(w == 4 ? 100.0 : w == 8 ? eight : 102.0);
      }
      return out;
    };
  };
  medians_for(99.0);
  auto o = f.options({"Fast"});
  o.parameters["tile.width"] = {"4", "8", "16"};
  CalibrationReport r = calibrate_kernel_tuning(o, f.context);
  REQUIRE(r.calibrated.size() == 1);
  CHECK(std::get<int64_t>(r.calibrated[0].values.at("tile.width")) == 4);
  CHECK_FALSE(r.calibrated[0].changed_default);
  CHECK(r.calibrated[0].comparison[1].speedup == doctest::Approx(100.0 / 99.0));
  REQUIRE_FALSE(r.diagnostics.empty());
  CHECK(r.diagnostics[0].message.find("kept the baseline tile.width=4: the fastest, 8, was not 2% faster") !=
        std::string::npos);
  // 2% exactly is enough.
  medians_for(98.0);
  r = calibrate_kernel_tuning(o, f.context);
  REQUIRE(r.calibrated.size() == 1);
  CHECK(std::get<int64_t>(r.calibrated[0].values.at("tile.width")) == 8);
  CHECK(r.calibrated[0].changed_default);
}

TEST_CASE("session_benchmark_memory_of_gemm_cases_follows_the_matrices_not_the_multiply_adds") {
  // MatMul's work size counts multiply-adds (s^3); its tensors hold s^2 floats each.
  const runtime::KernelDef* matmul = nullptr;
  const runtime::KernelDef* abs = nullptr;
  for (const auto& def : runtime::cpu_kernel_table().definitions()) {
    if (def.element_type != runtime::ElementType::float32) continue;
    if (def.op_type == "MatMul" && matmul == nullptr) matmul = &def;
    if (def.op_type == "Abs" && abs == nullptr) abs = &def;
  }
  REQUIRE(matmul != nullptr);
  REQUIRE(abs != nullptr);
  const int64_t macs = int64_t{320} * 320 * 320;
  CHECK(make_session_benchmark(*matmul, 1, 1)->memory_bytes(macs, 0, 1) == int64_t{320} * 320 * 4 * 4);
  CHECK(make_session_benchmark(*abs, 1, 1)->memory_bytes(1000, 0, 2) == int64_t{1000} * 4 * 5);
}

TEST_CASE("session_benchmark_sessions_take_their_configuration_under_every_spin_policy") {
  // Each configuration's session must resolve the configuration's values under the spin class it
  // runs with; otherwise every configuration would time the defaults (the benchmark refuses then).
  const runtime::KernelDef* abs = nullptr;
  for (const auto& def : runtime::cpu_kernel_table().definitions())
    if (def.element_type == runtime::ElementType::float32 && def.op_type == "Abs" && abs == nullptr) abs = &def;
  REQUIRE(abs != nullptr);
  TuningValues serial = abs->schema.defaults();
  serial["parallel.minimum_elements"] = int64_t{1} << 40;
  TuningValues parallel = abs->schema.defaults();
  parallel["parallel.minimum_elements"] = int64_t{1};
  for (const int64_t spin : {runtime::kSpinNoneMicroseconds, runtime::kSpinShortMicroseconds}) {
    CAPTURE(spin);
    runtime::RuntimeParameters policy;
    policy.spin_microseconds = spin;
    auto bench = make_session_benchmark(*abs, 2, 1, nullptr, policy);
    const int64_t deadline = steady_calibration_clock()->now_ns() + 1'000'000'000;
    const CaseTiming timing = bench->measure(4096, 0, {serial, parallel}, deadline, 1, 1);
    CHECK(timing.median_ns.size() == 2);
  }
}

TEST_CASE("engine_comparison_mode_rejects_invalid_values_and_unknown_parameter") {
  CalibrationFixture f;
  f.script.medians = crossover_at(1);
  auto o = f.options({"Fast"});
  o.parameters["tile.width"] = {"4", "12"};  // 12 not allowed
  CalibrationReport r = calibrate_kernel_tuning(o, f.context);
  REQUIRE(r.failed.size() == 1);
  CHECK(r.diagnostics.back().message.find("not one of") != std::string::npos);
  o.parameters.clear();
  o.parameters["tile.height"] = {"4", "8"};
  r = calibrate_kernel_tuning(o, f.context);
  REQUIRE(r.failed.size() == 1);
  CHECK(r.diagnostics.back().message.find("no parameter 'tile.height'") != std::string::npos);
}

TEST_CASE("engine_repeat_saves_median_pick_and_counts_agreement") {
  CalibrationFixture f;
  int run = 0;
  const int64_t crossovers[] = {4096, 8192, 4096, 16384, 4096};
  f.script.medians = [&](int64_t size, const std::vector<TuningValues>& c) {
    return crossover_at(crossovers[run])(size, c);
  };
  auto o = f.options({"Fast"});
  o.progress = [&](const CalibrationProgress& p) { run = p.repeat; };
  o.repeat = 5;
  o.maximum_duration_ms = 10'000;
  CalibrationReport r = calibrate_kernel_tuning(o, f.context);
  REQUIRE(r.calibrated.size() == 1);
  CHECK(r.calibrated[0].picks == std::vector<int64_t>{4096, 8192, 4096, 16384, 4096});
  CHECK(threshold(r.calibrated[0]) == 4096);
  // 16384 is two doublings from 4096: the runs disagree, so the confidence is low.
  CHECK(r.calibrated[0].agreement == 4);
  CHECK(r.calibrated[0].confidence == Confidence::low);
  CHECK(std::any_of(r.diagnostics.begin(), r.diagnostics.end(), [](const Diagnostic& d) {
    return d.message.find("4 of 5 runs picked within one doubling of 4096") != std::string::npos;
  }));
}

TEST_CASE("engine_unsupported_and_only_missing") {
  CalibrationFixture f;
  f.script.medians = crossover_at(1024);
  CalibrationReport r = calibrate_kernel_tuning(f.options({"Plain"}), f.context);
  CHECK(r.calibrated.empty());
  REQUIRE(r.unsupported.size() == 1);
  CHECK(r.unsupported[0].kernel == "Plain");
  CHECK(r.ok());
  // Save Fast, then only_missing skips it and calibrates Slow.
  auto o = f.options({"Fast"});
  o.save = true;
  r = calibrate_kernel_tuning(o, f.context);
  REQUIRE(r.cache_update.has_value());
  CHECK(r.cache_update->ok());
  o = f.options({"Fast", "Slow"});
  o.only_missing = true;
  r = calibrate_kernel_tuning(o, f.context);
  REQUIRE(r.skipped.size() == 1);
  CHECK(r.skipped[0].kernel == "Fast");
  REQUIRE(r.calibrated.size() == 1);
  CHECK(r.calibrated[0].key.kernel == "Slow");
}

TEST_CASE("engine_low_confidence_pick_is_published_but_not_saved_unless_forced") {
  CalibrationFixture f;
  // 8192 leans to a win but straddles the margin, and the memory budget ends the search there.
  f.script.pair_ratio = [](int64_t size, int index) {
    if (size == 8192) return index % 2 ? 1.10 : 0.80;
    return 1.3;
  };
  f.script.bytes_per_element = 16;
  auto o = f.options({"Fast"});
  o.save = true;
  o.maximum_memory_bytes = 16 * 8192;
  CalibrationReport r = calibrate_kernel_tuning(o, f.context);
  REQUIRE(r.calibrated.size() == 1);
  CHECK(r.calibrated[0].confidence == Confidence::low);
  CHECK(threshold(r.calibrated[0]) == 8192);
  CHECK_FALSE(r.calibrated[0].saved);
  CHECK_FALSE(r.cache_update.has_value());
  CHECK_FALSE(std::filesystem::exists(o.path));
  CHECK(std::any_of(r.diagnostics.begin(), r.diagnostics.end(),
                    [](const Diagnostic& d) { return d.message.find("not saved: confidence is low") != std::string::npos; }));
  // Published in-process all the same.
  const TuningValues* published = f.registry.snapshot()->find(r.calibrated[0].key, 2, true);
  REQUIRE(published != nullptr);
  CHECK(std::get<int64_t>(published->at("parallel.minimum_elements")) == 8192);
  CHECK(r.to_json()["measurements"][0]["saved"] == false);

  f.script.pairs_given.clear();
  o.force_save = true;
  CalibrationReport forced = calibrate_kernel_tuning(o, f.context);
  REQUIRE(forced.cache_update.has_value());
  CHECK(forced.cache_update->status == UpdateStatus::updated);
  CHECK(forced.calibrated[0].saved);
}

TEST_CASE("engine_measured_on_a_loaded_machine_is_low_confidence_and_not_saved") {
  CalibrationFixture f;
  f.script.medians = crossover_at(65536);  // a clean crossover: high confidence on an idle machine
  f.clock.other_cpus = 1.0;                // one busy loop beside it
  auto o = f.options({"Fast"});
  o.save = true;
  CalibrationReport r = calibrate_kernel_tuning(o, f.context);
  REQUIRE(r.calibrated.size() == 1);
  const KeyCalibration& k = r.calibrated[0];
  REQUIRE(k.contention.has_value());
  CHECK(k.contention->other_cpus.value_or(-1) == doctest::Approx(1.0));
  CHECK(k.confidence == Confidence::low);
  CHECK(threshold(k) == 65536);  // reported and published all the same
  CHECK_FALSE(k.saved);
  CHECK_FALSE(std::filesystem::exists(o.path));
  CHECK(std::any_of(r.diagnostics.begin(), r.diagnostics.end(), [](const Diagnostic& d) {
    return d.message.find("Fast measured on a loaded machine: other processes kept 1.00 of 2 CPUs busy") == 0;
  }));
  auto json = r.to_json();
  CHECK(json["measurements"][0]["contention"]["other_cpus"] == doctest::Approx(1.0));
  CHECK(json["measurements"][0]["contention"]["cpus"] == 2);

  // --allow-load: the same loaded window judged as usual, the load still reported.
  f.script.pairs_given.clear();
  o.allow_load = true;
  CalibrationReport allowed = calibrate_kernel_tuning(o, f.context);
  REQUIRE(allowed.calibrated.size() == 1);
  CHECK(allowed.calibrated[0].confidence == Confidence::high);
  CHECK(allowed.calibrated[0].contention->other_cpus.value_or(-1) == doctest::Approx(1.0));
  CHECK(allowed.calibrated[0].saved);
  o.allow_load = false;
  std::filesystem::remove(o.path);

  // The same measurements with a little background load: judged as before, and saved.
  f.script.pairs_given.clear();
  f.clock.other_cpus = 0.2;
  CalibrationReport idle = calibrate_kernel_tuning(o, f.context);
  REQUIRE(idle.calibrated.size() == 1);
  CHECK(idle.calibrated[0].confidence == Confidence::high);
  CHECK(idle.calibrated[0].contention->other_cpus.value_or(-1) == doctest::Approx(0.2));
  CHECK(idle.calibrated[0].saved);
  CHECK(std::none_of(idle.diagnostics.begin(), idle.diagnostics.end(),
                     [](const Diagnostic& d) { return d.message.find("loaded machine") != std::string::npos; }));

  // No accounting (the fake clock's default): nothing judged, JSON null.
  f.clock.other_cpus.reset();
  o.save = false;
  CalibrationReport unknown = calibrate_kernel_tuning(o, f.context);
  CHECK_FALSE(unknown.calibrated[0].contention.has_value());
  CHECK(unknown.to_json()["measurements"][0]["contention"].is_null());
}

TEST_CASE("engine_nothing_measured_is_not_saved") {
  CalibrationFixture f;
  f.script.medians = crossover_at(1);
  auto o = f.options({"Fast"});
  o.save = true;
  o.maximum_memory_bytes = 100;  // not even the first case fits
  CalibrationReport r = calibrate_kernel_tuning(o, f.context);
  REQUIRE(r.calibrated.size() == 1);
  CHECK_FALSE(r.calibrated[0].measured);
  CHECK_FALSE(r.cache_update.has_value());
  CHECK(std::any_of(r.diagnostics.begin(), r.diagnostics.end(),
                    [](const Diagnostic& d) { return d.message.find("not saved: nothing was measured") != std::string::npos; }));
}

TEST_CASE("engine_time_budget_is_hard_when_warmups_and_minimum_pairs_cost_time") {
  // Each batch costs a fixed 2 ms (sessions, warm-ups) plus 0.1 ms per pair per 1024 elements:
  // doubling sizes soon make one batch a large share of the budget. The pair source predicts
  // each batch (warm-ups and minimum pairs included) and does not start one past the deadline.
  for (int64_t budget_ms : {30, 100, 250}) {
    CalibrationFixture f;
    f.script.medians = crossover_at(int64_t{1} << 40);
    f.script.pair_ratio = [](int64_t, int) { return 1.3; };
    f.script.cost_ns = 2'000'000;
    f.script.repetition_ns_per_1024 = 100'000;
    auto o = f.options({"Fast"});
    o.maximum_duration_ms = budget_ms;
    CalibrationReport r = calibrate_kernel_tuning(o, f.context);
    CAPTURE(budget_ms);
    CHECK(r.elapsed_ms <= budget_ms * 12 / 10);
    CHECK(r.calibrated.at(0).measured);
  }
}

TEST_CASE("engine_first_pass_of_a_process_is_discarded_so_the_first_search_is_not_biased_high") {
  CalibrationFixture f;
  // The first measure() of the benchmark is cold: parallel looks 3x slower. Later calls are
  // clean, with parallel winning from the first size on.
  int calls = 0;
  f.script.before_measure = [&](int64_t) { ++calls; };
  f.script.pair_ratio = [&](int64_t, int) { return calls == 1 ? 3.0 : 0.5; };
  CalibrationReport r = calibrate_kernel_tuning(f.options({"Fast"}), f.context);
  REQUIRE(r.calibrated.size() == 1);
  CHECK(threshold(r.calibrated[0]) == 1024);  // a counted cold pass would have made it 2048
  CHECK(r.calibrated[0].cases.front().verdict == "win");
}

TEST_CASE("engine_save_writes_profiles_with_calibrate_provenance") {
  CalibrationFixture f;
  f.script.medians = crossover_at(2048);
  auto o = f.options({"Fast", "Slow"});
  o.save = true;
  CalibrationReport r = calibrate_kernel_tuning(o, f.context);
  REQUIRE(r.cache_update.has_value());
  CHECK(r.cache_update->status == UpdateStatus::updated);
  CHECK(r.cache_update->updated.size() == 2);
  CacheFile file = read_cache_file(o.path);
  REQUIRE(file.status == FileStatus::loaded);
  REQUIRE(file.profiles.size() == 2);
  for (const auto& p : file.profiles) {
    CHECK(p.provenance.source == "calibrate");
    CHECK(p.host.effective_threads == 2);
    CHECK(std::get<int64_t>(p.values.at("parallel.minimum_elements")) == 2048);
  }
  CHECK(r.to_json()["cache_update"]["status"] == "updated");
}

TEST_CASE("engine_records_the_spin_class_it_measured_under") {
  // Workers that park at once move the crossover: such a calibration is saved and published for
  // sessions of that spin class only, next to (not over) the spinning sessions' profile.
  CalibrationFixture f;
  f.script.medians = crossover_at(2048);
  auto spinning = f.options({"Fast"});
  spinning.save = true;
  REQUIRE(calibrate_kernel_tuning(spinning, f.context).calibrated.size() == 1);
  f.script.medians = crossover_at(8192);
  auto parking = f.options({"Fast"});
  parking.save = true;
  parking.policy.spin_microseconds = onnx_light::runtime::kSpinNoneMicroseconds;
  REQUIRE(calibrate_kernel_tuning(parking, f.context).calibrated.size() == 1);

  CacheFile file = read_cache_file(spinning.path);
  REQUIRE(file.profiles.size() == 2);
  for (const auto& p : file.profiles) {
    CAPTURE(p.host.idle_spin);
    CHECK(std::get<int64_t>(p.values.at("parallel.minimum_elements")) == (p.host.idle_spin ? 2048 : 8192));
  }
  const auto snapshot = f.registry.snapshot();
  const TuningKey key = file.profiles[0].key;
  REQUIRE(snapshot->find(key, 2, true) != nullptr);
  REQUIRE(snapshot->find(key, 2, false) != nullptr);
  CHECK(std::get<int64_t>(snapshot->find(key, 2, true)->at("parallel.minimum_elements")) == 2048);
  CHECK(std::get<int64_t>(snapshot->find(key, 2, false)->at("parallel.minimum_elements")) == 8192);
}

TEST_CASE("engine_save_to_malformed_cache_fails_and_leaves_bytes") {
  CalibrationFixture f;
  f.script.medians = crossover_at(2048);
  auto o = f.options({"Fast"});
  o.save = true;
  { std::ofstream(o.path) << "this is [not toml"; }
  CalibrationReport r = calibrate_kernel_tuning(o, f.context);
  REQUIRE(r.cache_update.has_value());
  CHECK(r.cache_update->status == UpdateStatus::malformed);
  CHECK_FALSE(r.ok());
  std::ifstream in(o.path);
  std::string content((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  CHECK(content == "this is [not toml");
}

TEST_CASE("engine_argument_errors") {
  CalibrationFixture f;
  f.script.medians = crossover_at(1);
  auto o = f.options({});
  CHECK_THROWS_AS(calibrate_kernel_tuning(o, f.context), InvalidValueError);
  o = f.options({"NoSuchKernel"});
  CHECK_THROWS_AS(calibrate_kernel_tuning(o, f.context), NotFoundError);
  o = f.options({"Fast"});
  o.maximum_duration_ms = 0;
  CHECK_THROWS_AS(calibrate_kernel_tuning(o, f.context), InvalidValueError);
  o = f.options({"Fast"});
  o.repeat = 0;
  CHECK_THROWS_AS(calibrate_kernel_tuning(o, f.context), InvalidValueError);
}

// --- The real session benchmark on a test-only kernel table ------------------------------------

// A one-input float kernel with a real threshold: the serial reference runs one block, the
// candidate one block per thread. When `thread_dependent`, each element gets the index where its
// block begins, so the bytes depend on how many threads ran (a broken kernel); otherwise it
// copies its input (an honest one).
class BlockStartKernel final : public Kernel {
 public:
  explicit BlockStartKernel(bool thread_dependent) : thread_dependent_(thread_dependent) {}
  void apply_tuning(const TuningValues& values) override {
    minimum_elements_ = std::get<int64_t>(values.at("parallel.minimum_elements"));
  }
  void run(KernelExecution& execution) override {
    const Tensor& x = execution.required_input(0);
    Tensor& y = execution.output(0, ElementType::float32, x.shape());
    const float* in = x.data<float>();
    float* out = y.data<float>();
    const int64_t n = x.element_count();
    const bool thread_dependent = thread_dependent_;
    execution.parallel_for(n, 1, admitted_threads_for(n, minimum_elements_, execution.threads()),
                           [&](int64_t begin, int64_t end) {
                             for (int64_t i = begin; i < end; ++i)
                               out[i] = thread_dependent ? static_cast<float>(begin) : in[i];
                           });
  }

 private:
  bool thread_dependent_;
  int64_t minimum_elements_ = 1;
};

KernelDef block_start_def(const std::string& op, bool thread_dependent) {
  KernelDef d;
  d.op_type = op;
  d.element_type = ElementType::float32;
  d.implementation = "block_start";
  TuningKey key;
  key.kernel = op;
  key.implementation = d.implementation;
  d.schema = parallel_threshold_schema(key, 32768);
  d.create = [thread_dependent](const KernelCreateInfo&) { return std::make_unique<BlockStartKernel>(thread_dependent); };
  d.calibration_workload = [op](int64_t n, int, uint32_t seed) {
    CalibrationWorkload w;
    w.model_text = "<ir_version: 8, opset_import: [\"\" : 18]>\ncalibration (float[" + std::to_string(n) +
                   "] x) => (float[" + std::to_string(n) + "] y) { y = " + op + "(x) }";
    w.inputs.emplace_back("x", random_tensor(ElementType::float32, {n}, seed));
    w.description = "float[" + std::to_string(n) + "]";
    w.work_size = n;
    return w;
  };
  return d;
}

// Abs writes block starts (thread-dependent), Neg copies (deterministic); both only in this table.
struct SessionFixture {
  KernelTable table;
  TuningRegistry registry;
  OperationContext context;
  std::filesystem::path dir;
  TuningKey abs_key;
  TuningKey neg_key;

  SessionFixture() {
    table.add(block_start_def("Abs", true));
    table.add(block_start_def("Neg", false));
    abs_key = table.definitions()[0].schema.key;
    neg_key = table.definitions()[1].schema.key;
    context.kernels = &table;
    context.registry = &registry;
    context.system_cache_path = std::filesystem::path();
    dir = std::filesystem::temp_directory_path() / ("onnx_light_calibration_session_test_" + std::to_string(::getpid()));
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
  }
  ~SessionFixture() { std::filesystem::remove_all(dir); }

  // The real engine end to end: steady clock, session benchmark (no factory), saving.
  CalibrationOptions options(std::vector<std::string> kernels) {
    CalibrationOptions o;
    o.selection.kernels = std::move(kernels);
    o.selection.element_types = {1};
    o.num_threads = 2;
    o.maximum_duration_ms = 200;
    o.save = true;
    o.path = (dir / "cache.toml").string();
    return o;
  }
};

bool names_mismatch_of_abs(const Diagnostic& d, const TuningKey& abs_key) {
  return d.key == abs_key && d.message.rfind("Abs failed: ", 0) == 0 &&
         d.message.find(abs_key.to_string()) != std::string::npos &&
         d.message.find("differs from the serial reference") != std::string::npos;
}

TEST_CASE("session_benchmark_rejects_a_kernel_whose_output_depends_on_the_thread_count") {
  SessionFixture f;
  const uint64_t before = f.registry.published_generation();
  auto o = f.options({"Abs"});
  CalibrationReport r = calibrate_kernel_tuning(o, f.context);
  CHECK(r.calibrated.empty());
  REQUIRE(r.failed.size() == 1);
  CHECK(r.failed[0] == f.abs_key);
  CHECK_FALSE(r.ok());
  REQUIRE_FALSE(r.diagnostics.empty());
  CHECK(names_mismatch_of_abs(r.diagnostics.back(), f.abs_key));
  // Nothing published, nothing written.
  CHECK(f.registry.published_generation() == before);
  CHECK(f.registry.snapshot()->find(f.abs_key, 2, true) == nullptr);
  CHECK_FALSE(r.cache_update.has_value());
  CHECK_FALSE(std::filesystem::exists(o.path));
}

TEST_CASE("session_benchmark_mismatch_of_one_key_keeps_it_out_of_the_registry_and_the_cache") {
  SessionFixture f;
  auto o = f.options({"Abs", "Neg"});
  o.force_save = true;  // Neg's real timings may be noisy; this test is about the mismatch, not confidence
  CalibrationReport r = calibrate_kernel_tuning(o, f.context);
  REQUIRE(r.failed.size() == 1);
  CHECK(r.failed[0] == f.abs_key);
  REQUIRE(r.calibrated.size() == 1);
  CHECK(r.calibrated[0].key == f.neg_key);
  CHECK(std::any_of(r.diagnostics.begin(), r.diagnostics.end(),
                    [&](const Diagnostic& d) { return names_mismatch_of_abs(d, f.abs_key); }));
  auto snapshot = f.registry.snapshot();
  CHECK(snapshot->find(f.abs_key, 2, true) == nullptr);
  CHECK(snapshot->find(f.neg_key, 2, true) != nullptr);
  REQUIRE(r.cache_update.has_value());
  CHECK(r.cache_update->ok());
  CacheFile file = read_cache_file(o.path);
  REQUIRE(file.status == FileStatus::loaded);
  REQUIRE(file.profiles.size() == 1);
  CHECK(file.profiles[0].key == f.neg_key);
}

}  // namespace

// --- verify: re-measured cached thresholds -------------------------------------------------------

TEST_CASE("verify_reports_holds_drifted_and_not_measured_and_never_writes_or_publishes") {
  CalibrationFixture f;
  const std::string path = (f.dir / "cache.toml").string();
  for (const char* kernel : {"Fast", "Slow", "Plain"}) {
    SetOptions s;
    s.kernel = kernel;
    s.implementation = "portable";
    s.values = {{"parallel.minimum_elements", int64_t{65536}}};
    s.path = path;
    s.num_threads = 2;
    s.load = false;
    REQUIRE(set_kernel_tuning_parameters(s, f.context).status == UpdateStatus::updated);
  }
  Script fast, slow;
  fast.medians = crossover_at(65536);    // the cached value still holds
  slow.medians = crossover_at(1048576);  // four doublings later now
  // "Plain" has no calibration workload in f.table: it cannot be re-measured.
  std::ifstream in(path, std::ios::binary);
  const std::string before((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const uint64_t generation = f.registry.published_generation();

  VerifyOptions o;
  o.selection.element_types = {1};
  o.selection.implementation = "portable";
  o.path = path;
  o.num_threads = 2;
  o.clock = std::shared_ptr<CalibrationClock>(&f.clock, [](CalibrationClock*) {});
  o.benchmark_factory = [&](const KernelDef& def, int, uint32_t) {
    return std::make_unique<FakeBenchmark>(def.op_type == "Fast" ? fast : slow, f.clock);
  };
  const VerificationReport r = verify_kernel_tuning(o, f.context);
  REQUIRE(r.profiles.size() == 3);
  std::map<std::string, const ProfileVerification*> by;
  for (const auto& p : r.profiles) by[p.key.kernel] = &p;
  CHECK(by["Fast"]->status == DriftStatus::holds);
  CHECK(*by["Fast"]->cached == 65536);
  CHECK(*by["Fast"]->measured == 65536);
  CHECK(by["Slow"]->status == DriftStatus::drifted);
  CHECK(*by["Slow"]->measured == 1048576);
  CHECK(by["Slow"]->reason.find("cached parallel.minimum_elements=65536, measured now 1048576") != std::string::npos);
  CHECK(by["Plain"]->status == DriftStatus::not_measured);
  CHECK_FALSE(by["Plain"]->measured.has_value());
  CHECK(by["Plain"]->reason.find("no calibration routine") != std::string::npos);
  CHECK(r.drifted());
  const auto json = r.to_json();
  CHECK(json["summary"]["holds"] == 1);
  CHECK(json["summary"]["drifted"] == 1);
  CHECK(json["summary"]["not_measured"] == 1);
  // Read-only: the cache's bytes and the process's registry are as they were.
  std::ifstream again(path, std::ios::binary);
  const std::string after((std::istreambuf_iterator<char>(again)), std::istreambuf_iterator<char>());
  CHECK(after == before);
  CHECK(f.registry.published_generation() == generation);

  // On a loaded machine neither verdict is given: Slow's drift reads as not measured, with why.
  f.clock.other_cpus = 1.0;
  const VerificationReport loaded = verify_kernel_tuning(o, f.context);
  for (const auto& p : loaded.profiles) {
    CHECK(p.status == DriftStatus::not_measured);
    if (p.key.kernel == "Slow") {
      CHECK(p.reason.find("not judged: measured on a loaded machine (other processes kept 1.00 of 2 CPUs busy") == 0);
      CHECK(p.reason.find("cached parallel.minimum_elements=65536, measured now 1048576") != std::string::npos);
    }
  }
  CHECK_FALSE(loaded.drifted());
  o.allow_load = true;
  const VerificationReport allowed = verify_kernel_tuning(o, f.context);
  for (const auto& p : allowed.profiles)
    if (p.key.kernel == "Slow") CHECK(p.status == DriftStatus::drifted);
}

TEST_CASE("verify_budget_and_argument_errors") {
  CalibrationFixture f;
  VerifyOptions o;
  o.path = (f.dir / "cache.toml").string();
  o.maximum_duration_ms = 0;
  CHECK_THROWS_AS(verify_kernel_tuning(o, f.context), InvalidValueError);
  // No cache: nothing to verify.
  o.maximum_duration_ms = 100;
  const VerificationReport r = verify_kernel_tuning(o, f.context);
  CHECK(r.cache_status == FileStatus::not_found);
  CHECK(r.profiles.empty());
  CHECK_FALSE(r.drifted());
}
