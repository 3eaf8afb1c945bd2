#include "onnx_light/tune/threshold_search.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <tuple>

#include <fmt/format.h>
#include <fmt/ranges.h>

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

double quantile(const std::vector<double>& s, double q) {
  if (s.empty()) return 0;
  double pos = q * static_cast<double>(s.size() - 1);
  auto lo = static_cast<std::size_t>(std::floor(pos));
  std::size_t hi = std::min(s.size() - 1, lo + 1);
  return s[lo] + (s[hi] - s[lo]) * (pos - static_cast<double>(lo));
}

}  // namespace

double student_t_975(int df) {
  // Two-sided 95% quantiles of Student's t; past 30 degrees of freedom the Cornish-Fisher series
  // in 1/df is within 1e-3 of the exact value.
  static constexpr double table[] = {12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
                                     2.201,  2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
                                     2.080,  2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042};
  if (df < 1) return std::numeric_limits<double>::infinity();
  if (df <= 30) return table[df - 1];
  const double z = 1.959964, d = df;
  return z + (z * z * z + z) / (4 * d) + (5 * std::pow(z, 5) + 16 * z * z * z + 3 * z) / (96 * d * d);
}

double median(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  return n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

std::vector<double> non_increasing_fit(const std::vector<double>& values, const std::vector<double>& weights) {
  struct Block {
    double mean;
    double weight;
    std::size_t count;
  };
  std::vector<Block> blocks;
  for (std::size_t i = 0; i < values.size(); ++i) {
    // A zero or missing weight still counts a little, so a block's mean stays defined.
    const double w = std::max(i < weights.size() ? weights[i] : 1.0, 1e-12);
    blocks.push_back({values[i], w, 1});
    while (blocks.size() >= 2 && blocks[blocks.size() - 2].mean < blocks.back().mean) {
      const Block b = blocks.back();
      blocks.pop_back();
      Block& a = blocks.back();
      a.mean = (a.mean * a.weight + b.mean * b.weight) / (a.weight + b.weight);
      a.weight += b.weight;
      a.count += b.count;
    }
  }
  std::vector<double> fitted;
  fitted.reserve(values.size());
  for (const Block& b : blocks) fitted.insert(fitted.end(), b.count, b.mean);
  return fitted;
}

TrimmedMean trimmed_mean_interval(std::vector<double> values) {
  TrimmedMean t;
  if (values.empty()) return t;
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  const std::size_t g = static_cast<std::size_t>(std::floor(kTrimFraction * static_cast<double>(n)));
  const std::size_t h = n - 2 * g;
  double sum = 0;
  for (std::size_t i = g; i < n - g; ++i) sum += values[i];
  t.mean = sum / static_cast<double>(h);
  if (h < 2) {
    t.low = values.front();
    t.high = values.back();
    return t;
  }
  // Yuen's interval: the winsorized variance (the g values at each end replaced by their
  // neighbours) gives the trimmed mean's standard error; t with h - 1 degrees of freedom.
  double wsum = 0;
  for (std::size_t i = 0; i < n; ++i) wsum += values[std::clamp(i, g, n - g - 1)];
  const double wmean = wsum / static_cast<double>(n);
  double ss = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const double d = values[std::clamp(i, g, n - g - 1)] - wmean;
    ss += d * d;
  }
  const double se = std::sqrt(ss / (static_cast<double>(h) * static_cast<double>(h - 1)));
  const double half = student_t_975(static_cast<int>(h) - 1) * se;
  t.low = t.mean - half;
  t.high = t.mean + half;
  return t;
}

namespace {

class Search {
 public:
  Search(const SequentialSearchSettings& s, const PairMeasure& measure) : s_(s), measure_(measure) {}

  void evaluate(SizeEvidence& e) const {
    std::vector<double> sorted = e.ratios;
    std::sort(sorted.begin(), sorted.end());
    const TrimmedMean t = trimmed_mean_interval(sorted);
    e.ratio = t.mean;
    e.low = t.low;
    e.high = t.high;
    const double middle = median(sorted);
    e.dispersion = middle > 0 ? (quantile(sorted, 0.75) - quantile(sorted, 0.25)) / middle : 0;
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
        break;
      }
      absorb(e, extra);
    }
    return e;
  }

  // One more batch at a measured size; false (stop_reason set) when the budget refuses it.
  bool extend(SizeEvidence& e) {
    PairBatch extra = measure_(e.size, s_.batch_pairs);
    if (!extra.stop_reason.empty() || extra.ratios.empty()) {
      stop_reason = extra.stop_reason.empty() ? "no pair could be measured" : extra.stop_reason;
      return false;
    }
    absorb(e, extra);
    return true;
  }

  std::string stop_reason;
  int pairs = 0;

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

// The largest decided loss below `pick` and the smallest decided win at or above it (sizes sorted).
struct Pinned {
  const SizeEvidence* loss = nullptr;
  const SizeEvidence* win = nullptr;
  double span() const {
    return loss && win ? static_cast<double>(win->size) / static_cast<double>(loss->size)
                       : std::numeric_limits<double>::infinity();
  }
};

Pinned pinned(const std::vector<SizeEvidence>& sizes, int64_t pick) {
  Pinned p;
  for (const auto& e : sizes) {
    if (e.size < pick && e.verdict == SizeVerdict::loss) p.loss = &e;
    if (e.size >= pick && e.verdict == SizeVerdict::win && p.win == nullptr) p.win = &e;
  }
  return p;
}

// Decided sizes within one doubling of each other around the pick: high; two doublings: medium;
// otherwise, or with no decided size on one side, low.
Confidence pinned_confidence(const std::vector<SizeEvidence>& sizes, int64_t pick, std::vector<std::string>& notes) {
  const Pinned p = pinned(sizes, pick);
  if (p.loss == nullptr && p.win != nullptr && !sizes.empty() && sizes.front().size == pick) {
    // Parallel won from the smallest size measured: the crossover lies at or below it, which is
    // all a pick of that size claims (like "never won" at the top, the edge was not measured).
    notes.push_back(fmt::format("parallel won from the smallest size measured, {}: the crossover lies at or below it",
                                pick));
    return Confidence::medium;
  }
  if (p.loss == nullptr || p.win == nullptr) {
    notes.push_back(fmt::format("no decided {} {} the pick {}: its place is not pinned by the measurements",
                                p.loss == nullptr ? "loss" : "win", p.loss == nullptr ? "below" : "at or above", pick));
    return Confidence::low;
  }
  const double span = p.span();
  std::vector<std::string> ties;
  for (const auto& e : sizes)
    if (e.size > p.loss->size && e.size < p.win->size && e.verdict == SizeVerdict::undecided)
      ties.push_back(fmt::format("{} ({})", e.size, interval_text(e)));
  notes.push_back(fmt::format("decided sizes pin the crossover: serial wins at {} ({}), parallel at {} ({}), a span of "
                              "{:.2g}x{}{}",
                              p.loss->size, interval_text(*p.loss), p.win->size, interval_text(*p.win), span,
                              ties.empty() ? "" : "; undecided in between (the two sides tie there): ",
                              fmt::format("{}", fmt::join(ties, ", "))));
  return span <= 2.0 ? Confidence::high : span <= 4.0 ? Confidence::medium : Confidence::low;
}

// Sets every size's `fitted` ratio (sizes sorted), each size weighted by its pairs.
void fit_sizes(std::vector<SizeEvidence>& sizes) {
  std::vector<double> ratios, weights;
  for (const auto& e : sizes) {
    ratios.push_back(e.ratio);
    weights.push_back(static_cast<double>(e.ratios.size()));
  }
  const std::vector<double> fitted = non_increasing_fit(ratios, weights);
  for (std::size_t i = 0; i < sizes.size(); ++i) sizes[i].fitted = fitted[i];
}

// Where the trailing run of sizes whose fitted ratio clears the margin begins (sizes sorted and
// fitted); a decided loss ends the run whatever the fit says. nullopt when the largest size does
// not clear it.
std::optional<int64_t> fitted_streak_start(const std::vector<SizeEvidence>& sizes, double bar) {
  std::optional<int64_t> start;
  for (auto it = sizes.rbegin(); it != sizes.rend() && it->fitted <= bar && it->verdict != SizeVerdict::loss; ++it)
    start = it->size;
  return start;
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
    const int64_t search_lo = lo, search_hi = hi;  // the doubling search's bracket
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
    // Confirmation: the measured sizes from half the search's bracket low end to twice its high end get
    // more pairs in rounds, one batch per size per round, until each has `confirm_pairs` or the
    // budget ends. The machine's slow spells (on a shared VM the second vCPU comes and goes for
    // milliseconds at a time) then fall on every size alike instead of deciding one size alone.
    std::vector<std::size_t> ladder;
    if (s.confirm_pairs > 0)
      for (std::size_t i = 0; i < sizes.size(); ++i)
        if (sizes[i].size * 2 >= search_lo && sizes[i].size <= search_hi * 2) ladder.push_back(i);
    bool refused = false;
    // One batch at every ladder size that has fewer than `cap` pairs; false when none had.
    auto round = [&](int cap) {
      bool any = false;
      for (std::size_t i : ladder) {
        if (static_cast<int>(sizes[i].ratios.size()) >= cap) continue;
        if (!search.extend(sizes[i])) {
          refused = true;
          break;
        }
        any = true;
      }
      return any;
    };
    int rounds = 0;
    while (!refused && round(s.confirm_pairs)) ++rounds;
    if (!ladder.empty())
      r.notes.push_back(fmt::format("confirmed {} sizes ({}..{}) in {} round{} of pairs{}", ladder.size(),
                                    sizes[ladder.front()].size, sizes[ladder.back()].size, rounds,
                                    rounds == 1 ? "" : "s", refused ? " until the budget ended" : ""));
    // The pick is read from the non-increasing fit across sizes, so one size's slow spell moves
    // it less than a doubling (on a plateau near the margin the per-size verdicts flip from run
    // to run; the fit pools them).
    const double bar = 1.0 - s.margin;
    auto fitted_pick = [&] {
      fit_sizes(sizes);
      return fitted_streak_start(sizes, bar).value_or(hi);
    };
    int64_t pick = fitted_pick();
    // Not pinned within one doubling: more rounds while the budget lasts, the pick re-read after each.
    auto pinned_closely = [&] { return pick == sizes.front().size || pinned(sizes, pick).span() <= 2.0; };
    int unsure_rounds = 0;
    if (!ladder.empty() && s.unsure_confirm_pairs > s.confirm_pairs && !pinned_closely()) {
      while (!refused && !pinned_closely() && round(s.unsure_confirm_pairs)) {
        ++unsure_rounds;
        pick = fitted_pick();
      }
      r.notes.push_back(fmt::format("decided sizes did not pin the pick within one doubling: {} more round{} of pairs "
                                    "(up to {} per size){}",
                                    unsure_rounds, unsure_rounds == 1 ? "" : "s", s.unsure_confirm_pairs,
                                    refused ? " until the budget ended" : pinned_closely() ? ", then they did" : ""));
    }
    if (pick != hi) {
      r.notes.push_back(fmt::format("with the added pairs and the fit across sizes the run of wins starts at {} "
                                    "(was {})",
                                    pick, hi));
      hi = pick;
      lo = 0;
      for (const auto& e : sizes)
        if (e.size < hi) lo = e.size;
    }
    r.bracket_low = lo > 0 ? std::optional<int64_t>(lo) : std::nullopt;
    r.bracket_high = hi;
    r.pick = hi;
    // Confidence is how tightly decided sizes pin the crossover around the pick. An undecided size
    // in between is expected (at the crossover the two sides tie by definition); an undecided
    // size that leaves the nearest decided ones far apart means the pick may move from run to
    // run (seen on a loaded VM: 64K vs 4M).
    r.confidence = pinned_confidence(sizes, hi, r.notes);
    // The noise note names the undecided size that keeps the pick from being pinned closer.
    const Pinned p = pinned(sizes, hi);
    undecided.reset();
    for (const auto& e : sizes)
      if (e.verdict == SizeVerdict::undecided && (!p.loss || e.size > p.loss->size) && (!p.win || e.size < p.win->size))
        if (!undecided || std::abs(std::log(static_cast<double>(e.size) / static_cast<double>(hi))) <
                              std::abs(std::log(static_cast<double>(undecided->size) / static_cast<double>(hi))))
          undecided = e;
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
  if (undecided && r.confidence != Confidence::high) {
    r.noisy = true;
    r.notes.push_back(fmt::format(
        "too noisy for the {:.0f}% margin: at {} elements the candidate/serial ratio {} still straddles {:.2f} after "
        "{} pairs (pair-ratio dispersion, IQR/median: {:.0f}%)",
        s.margin * 100, undecided->size, interval_text(*undecided), 1.0 - s.margin, undecided->ratios.size(),
        undecided->dispersion * 100));
  }
  fit_sizes(sizes);
  r.pairs = search.pairs;
  return r;
}

}  // namespace onnx_light::tune
