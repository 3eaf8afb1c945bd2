#include "onnx_light/tune/threshold_search.h"

#include <algorithm>
#include <cmath>
#include <tuple>

#include <fmt/format.h>

namespace onnx_light::tune {

const char* confidence_name(Confidence c) {
  switch (c) {
    case Confidence::high: return "high";
    case Confidence::medium: return "medium";
    case Confidence::low: return "low";
  }
  return "low";
}

const char* size_verdict_name(SizeVerdict v) {
  switch (v) {
    case SizeVerdict::win: return "win";
    case SizeVerdict::loss: return "loss";
    case SizeVerdict::undecided: return "undecided";
  }
  return "undecided";
}

namespace {

double sorted_median(const std::vector<double>& s) {
  if (s.empty()) return 0;
  return s.size() % 2 ? s[s.size() / 2] : (s[s.size() / 2 - 1] + s[s.size() / 2]) / 2;
}

double quantile(const std::vector<double>& s, double q) {
  if (s.empty()) return 0;
  double pos = q * static_cast<double>(s.size() - 1);
  auto lo = static_cast<std::size_t>(std::floor(pos));
  std::size_t hi = std::min(s.size() - 1, lo + 1);
  return s[lo] + (s[hi] - s[lo]) * (pos - static_cast<double>(lo));
}

}  // namespace

std::pair<double, double> median_interval(std::vector<double> values) {
  if (values.empty()) return {0, 0};
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  // Largest k with P(Binomial(n, 1/2) <= k-1) <= 2.5%: then [x_(k), x_(n-k+1)] covers the median
  // with >= 95%. Below 6 pairs no such k exists and the full range is the widest honest answer.
  std::size_t k = 0;
  double tail = 0;
  double term = std::pow(0.5, static_cast<double>(n));  // C(n, 0) / 2^n
  for (std::size_t i = 0; i < n / 2; ++i) {
    tail += term;
    if (tail > 0.025) break;
    k = i + 1;
    term = term * static_cast<double>(n - i) / static_cast<double>(i + 1);
  }
  k = std::max<std::size_t>(k, 1);
  return {values[k - 1], values[n - k]};
}

namespace {

class Search {
 public:
  Search(const SequentialSearchSettings& s, const PairMeasure& measure) : s_(s), measure_(measure) {}

  void evaluate(SizeEvidence& e) const {
    std::vector<double> sorted = e.ratios;
    std::sort(sorted.begin(), sorted.end());
    e.ratio = sorted_median(sorted);
    std::tie(e.low, e.high) = median_interval(sorted);
    e.dispersion = e.ratio > 0 ? (quantile(sorted, 0.75) - quantile(sorted, 0.25)) / e.ratio : 0;
    const double bar = 1.0 - s_.margin;
    e.verdict = e.high <= bar ? SizeVerdict::win : (e.low > bar ? SizeVerdict::loss : SizeVerdict::undecided);
    e.wins = e.verdict == SizeVerdict::win || (e.verdict == SizeVerdict::undecided && e.ratio <= bar);
  }

  // Measures `size` until its interval clears the margin, the pair limit, or the budget. Returns
  // nullopt (and sets stop_reason) when not even the first batch could run.
  std::optional<SizeEvidence> measure_size(int64_t size) {
    SizeEvidence e;
    e.size = size;
    PairBatch batch = measure_(size, s_.minimum_pairs);
    if (!batch.stop_reason.empty() || batch.ratios.empty()) {
      stop_reason = batch.stop_reason.empty() ? "no pair could be measured" : batch.stop_reason;
      return std::nullopt;
    }
    absorb(e, batch);
    while (e.verdict == SizeVerdict::undecided && static_cast<int>(e.ratios.size()) < s_.maximum_pairs) {
      int more = std::min(s_.batch_pairs, s_.maximum_pairs - static_cast<int>(e.ratios.size()));
      PairBatch extra = measure_(size, more);
      if (!extra.stop_reason.empty() || extra.ratios.empty()) {
        stop_reason = extra.stop_reason.empty() ? "no pair could be measured" : extra.stop_reason;
        budget_cut_ = true;
        break;
      }
      absorb(e, extra);
    }
    return e;
  }

  std::string stop_reason;
  int pairs = 0;
  bool budget_cut_ = false;

 private:
  void absorb(SizeEvidence& e, const PairBatch& b) {
    e.ratios.insert(e.ratios.end(), b.ratios.begin(), b.ratios.end());
    pairs += static_cast<int>(b.ratios.size());
    e.serial_ns = b.serial_ns;
    e.candidate_ns = b.candidate_ns;
    if (e.description.empty()) e.description = b.description;
    evaluate(e);
  }

  const SequentialSearchSettings& s_;
  const PairMeasure& measure_;
};

std::string interval_text(const SizeEvidence& e) {
  return fmt::format("{:.3f} [{:.3f}, {:.3f}]", e.ratio, e.low, e.high);
}

bool outlier(const SizeEvidence& a, const SizeEvidence& b, double factor) {
  if (a.ratio <= 0 || b.ratio <= 0) return false;
  double q = a.ratio / b.ratio;
  return q >= factor || q <= 1.0 / factor;
}

}  // namespace

SequentialSearchResult sequential_threshold_search(const SequentialSearchSettings& settings, int64_t default_value,
                                                   const PairMeasure& measure) {
  SequentialSearchSettings s = settings;
  s.minimum_pairs = std::max(1, s.minimum_pairs);
  s.maximum_pairs = std::max(s.minimum_pairs, s.maximum_pairs);
  s.batch_pairs = std::max(1, s.batch_pairs);
  s.consecutive_wins = std::max(1, s.consecutive_wins);
  s.minimum_value = std::max<int64_t>(1, s.minimum_value);
  auto valid = [&](int64_t v) { return v >= s.minimum_value && v <= s.maximum_value && (!s.valid || s.valid(v)); };

  SequentialSearchResult r;
  Search search(s, measure);
  auto& sizes = r.sizes;
  auto trailing_wins = [&] {
    int n = 0;
    for (auto it = sizes.rbegin(); it != sizes.rend() && it->wins; ++it) ++n;
    return n;
  };
  // Replaces sizes[i] with a fresh measurement; keeps the old one when the budget refuses.
  auto retest = [&](std::size_t i, const std::string& why) {
    auto again = search.measure_size(sizes[i].size);
    if (!again) {
      r.notes.push_back(fmt::format("{} elements contradicted its neighbours ({}) but the budget left no time to "
                                    "measure it again; it counts as measured",
                                    sizes[i].size, why));
      return false;
    }
    r.notes.push_back(fmt::format("{} elements contradicted its neighbours ({}, ratio {}); measured again: ratio {}",
                                  sizes[i].size, why, interval_text(sizes[i]), interval_text(*again)));
    again->retested = true;
    sizes[i] = std::move(*again);
    return true;
  };

  int64_t size = std::clamp(s.first_size, s.minimum_value, s.maximum_value);
  while (true) {
    auto e = search.measure_size(size);
    if (!e) break;
    sizes.push_back(std::move(*e));
    const std::size_t n = sizes.size();
    if (n >= 2 && !sizes[n - 1].retested && outlier(sizes[n - 1], sizes[n - 2], s.outlier_factor))
      if (!retest(n - 1, fmt::format("{:.0f}x outlier", s.outlier_factor))) break;
    if (n >= 3 && sizes[n - 1].wins && !sizes[n - 2].wins && sizes[n - 3].wins && !sizes[n - 2].retested)
      if (!retest(n - 2, "a loss between two wins")) break;
    if (trailing_wins() >= s.consecutive_wins) {
      r.stop_rule_met = true;
      break;
    }
    if (size >= s.maximum_value) {
      search.stop_reason = fmt::format("the parameter's maximum {} was reached", s.maximum_value);
      break;
    }
    size = size > s.maximum_value / 2 ? s.maximum_value : size * 2;
  }
  r.stop_reason = search.stop_reason;

  if (sizes.empty()) {
    r.confidence = Confidence::low;
    r.notes.push_back(fmt::format("no case could be measured ({}); nothing to decide from", r.stop_reason));
    r.pairs = search.pairs;
    return r;
  }

  const int streak = trailing_wins();
  const std::size_t first_streak = sizes.size() - static_cast<std::size_t>(streak);
  std::optional<std::size_t> low_index;  // the last non-win below the streak
  if (first_streak > 0) low_index = first_streak - 1;
  if (low_index) r.bracket_low = sizes[*low_index].size;
  if (streak > 0) r.bracket_high = sizes[first_streak].size;

  // Sizes whose verdict decides the pick; any left undecided means the margin is below the noise.
  std::vector<const SizeEvidence*> deciding;
  if (low_index) deciding.push_back(&sizes[*low_index]);
  for (std::size_t i = first_streak; i < sizes.size(); ++i) deciding.push_back(&sizes[i]);
  std::optional<SizeEvidence> undecided;  // a copy: `sizes` grows while refining
  for (const auto* d : deciding)
    if (d->verdict == SizeVerdict::undecided) undecided = *d;

  if (r.stop_rule_met) {
    int64_t lo = r.bracket_low.value_or(0);
    int64_t hi = *r.bracket_high;
    // Refine inside (lo, hi] at geometric midpoints while the budget allows.
    for (int step = 0; lo > 0 && step < s.refine_steps; ++step) {
      double mid = std::sqrt(static_cast<double>(lo) * static_cast<double>(hi));
      int64_t m = mid >= 4096 ? std::llround(mid / 256) * 256 : std::llround(mid);
      if (m <= lo || m >= hi || !valid(m)) break;
      auto e = search.measure_size(m);
      if (!e) {
        r.notes.push_back(fmt::format("the budget left no time to refine inside {}..{} ({})", lo, hi, search.stop_reason));
        break;
      }
      e->refined = true;
      (e->wins ? hi : lo) = m;
      bool unsure = e->verdict == SizeVerdict::undecided;
      if (unsure) undecided = *e;
      sizes.push_back(std::move(*e));
      if (unsure) break;  // a noisy midpoint narrows no further
    }
    std::sort(sizes.begin(), sizes.end(), [](const auto& a, const auto& b) { return a.size < b.size; });
    r.bracket_low = lo > 0 ? std::optional<int64_t>(lo) : std::nullopt;
    r.bracket_high = hi;
    r.pick = hi;
    // A deciding size left undecided means the margin is below this machine's noise: the pick
    // rests on medians that may flip from run to run (seen on a loaded VM: 64K vs 4M).
    r.confidence = undecided ? Confidence::low : Confidence::high;
  } else {
    const SizeEvidence& last = sizes.back();
    if (streak > 0) {
      // Budget ended after fewer wins than the rule needs: the pick is the first win above the
      // largest size where serial won or tied, unless the default already lies between them.
      int64_t lo = r.bracket_low.value_or(0);
      int64_t hi = *r.bracket_high;
      if (default_value > lo && default_value <= hi) {
        r.notes.push_back(fmt::format("kept the default {}: it lies between the largest size where serial won or tied "
                                      "({}) and the first win ({}), as the measurements say",
                                      default_value, lo > 0 ? std::to_string(lo) : "none", hi));
      } else {
        r.pick = hi;
        r.notes.push_back(fmt::format("the search stopped after {} of {} consecutive wins ({}); the pick follows the "
                                      "evidence: {}, the first win above {}",
                                      streak, s.consecutive_wins, r.stop_reason, hi,
                                      lo > 0 ? fmt::format("{}, the largest size where serial won or tied", lo)
                                             : std::string("the smallest size measured")));
      }
    } else {
      // Parallel did not win at the largest size measured: the crossover lies above it.
      bool ever_won = std::any_of(sizes.begin(), sizes.end(), [](const auto& e) { return e.wins; });
      int64_t above = last.size > s.maximum_value / 2 ? s.maximum_value : last.size * 2;
      if (default_value > last.size) {
        r.notes.push_back(fmt::format("kept the default {}: parallel did not win up to {} elements ({}), which agrees "
                                      "with a default above that",
                                      default_value, last.size, r.stop_reason));
      } else if (valid(above) && above > last.size) {
        r.pick = above;
        r.notes.push_back(fmt::format("parallel {} up to the largest size measured, {} elements ({}); the pick {} is "
                                      "above it (the crossover was not measured)",
                                      ever_won ? "did not win consistently" : "never won", last.size, r.stop_reason,
                                      above));
      } else {
        r.notes.push_back(fmt::format("parallel did not win up to {} elements and no larger value is valid; kept the "
                                      "default {}",
                                      last.size, default_value));
      }
      r.bracket_low = last.size;
      r.bracket_high.reset();
    }
    r.confidence = undecided ? Confidence::low : Confidence::medium;
  }
  if (undecided) {
    r.noisy = true;
    r.notes.push_back(fmt::format(
        "too noisy for the {:.0f}% margin: at {} elements the candidate/serial ratio {} still straddles {:.2f} after "
        "{} pairs (pair-ratio dispersion, IQR/median: {:.0f}%)",
        s.margin * 100, undecided->size, interval_text(*undecided), 1.0 - s.margin, undecided->ratios.size(),
        undecided->dispersion * 100));
  }
  r.pairs = search.pairs;
  return r;
}

}  // namespace onnx_light::tune
