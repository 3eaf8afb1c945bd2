#pragma once
// The selection logic of a threshold search, separate from any timing so that it can be tested
// exactly: a measurement function goes in (synthetic in tests), the pick and its evidence come out.
#include <cstdint>
#include <functional>
#include <utility>
#include <optional>
#include <string>
#include <vector>

namespace onnx_light::tune {

struct ThresholdSearchSettings {
  double margin = 0.05;      // the candidate wins a size when it is at least 5% faster
  int consecutive_wins = 2;  // wins in a row needed to choose the crossover; a loss resets
};


enum class Confidence { low, medium, high };
const char* confidence_name(Confidence c);

// A batch of pairs at one size, or why none could be run (budget, memory, size limit).
struct PairBatch {
  std::vector<double> ratios;  // candidate_ns / serial_ns, one per interleaved pair
  double serial_ns = 0;        // median of the serial times (reports only)
  double candidate_ns = 0;
  std::string description;
  std::string stop_reason;  // non-empty: nothing was measured and the search must stop
};
using PairMeasure = std::function<PairBatch(int64_t size, int pairs)>;

enum class SizeVerdict { win, loss, undecided };
const char* size_verdict_name(SizeVerdict v);

struct SizeEvidence {
  int64_t size = 0;
  std::vector<double> ratios;
  double ratio = 0;  // 20% trimmed mean of the pair ratios (trimmed_mean_interval)
  double low = 0;    // its 95% interval
  double high = 0;
  SizeVerdict verdict = SizeVerdict::undecided;
  bool wins = false;       // the decision used: the interval clears the margin, or (undecided) the mean does
  bool retested = false;   // measured again because it contradicted its neighbours
  bool refined = false;    // a geometric midpoint inside the final bracket
  double serial_ns = 0;
  double candidate_ns = 0;
  std::string description;
  // Interquartile range of the ratios over their median: the dispersion named in noise warnings.
  double dispersion = 0;
  // `ratio` after the non-increasing fit across all sizes (non_increasing_fit, weighted by pairs):
  // what the pick is read from once the search has its bracket.
  double fitted = 0;
};

struct SequentialSearchSettings {
  double margin = 0.05;
  int consecutive_wins = 2;
  int minimum_pairs = 5;   // first batch per size
  int batch_pairs = 4;     // added while the interval straddles the margin
  int maximum_pairs = 21;  // per size, then the mean decides and the size counts as undecided
  int refine_steps = 2;    // geometric midpoints measured inside the final bracket, budget allowing
  // Then the measured sizes from half the bracket's low end to twice its high end get more pairs,
  // in rounds across the sizes, up to this many each (0: no confirmation), budget allowing.
  int confirm_pairs = 0;
  // When the sizes still do not pin the pick within one doubling after that (confidence not
  // high), the rounds go on up to this many pairs per size, budget allowing (0: they stop).
  int unsure_confirm_pairs = 0;
  double outlier_factor = 10;  // a mean ratio this far from its neighbour's is measured again
  int64_t first_size = 1024;
  int64_t minimum_value = 1;                     // the parameter's validation range
  int64_t maximum_value = int64_t{1} << 62;
  std::function<bool(int64_t)> valid;             // extra validation of a pick (nullptr: range only)
};

struct SequentialSearchResult {
  std::vector<SizeEvidence> sizes;  // sorted by size
  std::optional<int64_t> pick;      // nullopt: keep `default_value` (reported by `notes`)
  bool stop_rule_met = false;       // `consecutive_wins` wins in a row were measured
  std::optional<int64_t> bracket_low;   // largest size at which serial won or tied below the pick
  std::optional<int64_t> bracket_high;  // smallest winning size (the pick when the rule was met)
  Confidence confidence = Confidence::low;
  std::vector<std::string> notes;  // diagnostics: why this pick, budget, noise
  bool noisy = false;              // a deciding size stayed undecided: too noisy for the margin
  std::string stop_reason;
  int pairs = 0;  // pairs measured in all
};

// `default_value` is kept only when the measurements agree with it.
SequentialSearchResult sequential_threshold_search(const SequentialSearchSettings& settings, int64_t default_value,
                                                   const PairMeasure& measure);

// The statistic each size is decided by: the 20% trimmed mean of the pair ratios with Yuen's 95%
// interval (winsorized variance, Student's t with h - 1 degrees of freedom, h the values kept).
// Why not the median: parallel timings on a shared VM are bimodal (the second vCPU is there or it
// is not: ratios cluster at ~0.55 and ~1.3), and the median's order-statistic interval spans the
// gap between the modes at any affordable pair count, while a trimmed mean converges like a mean
// (to the expected ratio, which is what a run pays) and still ignores preempted pairs.
inline constexpr double kTrimFraction = 0.2;
struct TrimmedMean {
  double mean = 0;
  double low = 0;   // below 2 kept values: the full range
  double high = 0;
};
TrimmedMean trimmed_mean_interval(std::vector<double> values);
double median(std::vector<double> values);
// The weighted least-squares non-increasing fit of `values` (pool-adjacent-violators). The
// parallel/serial ratio falls with the size (fixed costs amortise), so a size measured faster
// than a larger one is noise, and pooling it with its neighbours lets every size's pairs inform
// the crossover instead of whichever single size a slow spell of the machine hit.
std::vector<double> non_increasing_fit(const std::vector<double>& values, const std::vector<double>& weights);  // 0 for none; the mean of the middle two for an even count
double student_t_975(int df);  // two-sided 95% quantile of Student's t

}  // namespace onnx_light::tune
