#pragma once
// The selection logic of a threshold search, separate from any timing so that it can be tested
// exactly: measured cases of doubling sizes go in, the crossover (or why none) comes out.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace onnx_light::tune {

struct ThresholdSearchSettings {
  double margin = 0.05;      // the candidate wins a size when it is at least 5% faster
  int consecutive_wins = 2;  // wins in a row needed to choose the crossover; a loss resets
};

// One size, summed over its variants: medians of the forced-serial reference and the candidate.
struct ThresholdCase {
  int64_t size = 0;
  double serial_ns = 0;
  double candidate_ns = 0;
  bool candidate_wins = false;  // filled in by ThresholdSearch::record
};

class ThresholdSearch {
 public:
  explicit ThresholdSearch(ThresholdSearchSettings settings = {});
  // Records the next (larger) size. Returns true once the crossover is chosen; later cases are
  // still recorded (for reports) but do not change the choice.
  bool record(ThresholdCase measured);
  bool found() const { return chosen_.has_value(); }
  // The first size of the winning streak.
  std::optional<int64_t> chosen() const { return chosen_; }
  // The largest measured size below the streak (it lost), if any; the upper end is chosen().
  std::optional<int64_t> bracket_low() const { return bracket_low_; }
  const std::vector<ThresholdCase>& cases() const { return cases_; }
  const ThresholdSearchSettings& settings() const { return settings_; }
  // Why no crossover was chosen, for diagnostics ("the candidate never won", "won only at ...").
  std::string no_crossover_reason() const;
  bool wins(double serial_ns, double candidate_ns) const;

 private:
  ThresholdSearchSettings settings_;
  std::vector<ThresholdCase> cases_;
  int streak_ = 0;
  std::optional<int64_t> streak_start_;
  std::optional<int64_t> last_loss_;
  std::optional<int64_t> chosen_;
  std::optional<int64_t> bracket_low_;
};

}  // namespace onnx_light::tune
