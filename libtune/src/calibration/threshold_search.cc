#include "onnx_light/tune/threshold_search.h"

#include <fmt/format.h>

namespace onnx_light::tune {

ThresholdSearch::ThresholdSearch(ThresholdSearchSettings settings) : settings_(settings) {
  if (settings_.consecutive_wins < 1) settings_.consecutive_wins = 1;
  if (settings_.margin < 0) settings_.margin = 0;
}

bool ThresholdSearch::wins(double serial_ns, double candidate_ns) const {
  return candidate_ns > 0 && serial_ns > 0 && candidate_ns <= serial_ns * (1.0 - settings_.margin);
}

bool ThresholdSearch::record(ThresholdCase measured) {
  measured.candidate_wins = wins(measured.serial_ns, measured.candidate_ns);
  cases_.push_back(measured);
  if (chosen_) return true;
  if (measured.candidate_wins) {
    if (streak_ == 0) streak_start_ = measured.size;
    ++streak_;
    if (streak_ >= settings_.consecutive_wins) {
      chosen_ = streak_start_;
      bracket_low_ = last_loss_;
    }
  } else {
    streak_ = 0;
    streak_start_.reset();
    last_loss_ = measured.size;
  }
  return chosen_.has_value();
}

std::string ThresholdSearch::no_crossover_reason() const {
  if (chosen_) return {};
  if (cases_.empty()) return "no case could be measured";
  int won = 0;
  for (const auto& c : cases_) won += c.candidate_wins ? 1 : 0;
  if (won == 0)
    return fmt::format("the parallel candidate was never {:.0f}% faster than serial up to {} elements",
                       settings_.margin * 100, cases_.back().size);
  if (streak_ > 0)
    return fmt::format("the parallel candidate won from {} elements but only {} of {} consecutive sizes fit the budget",
                       *streak_start_, streak_, settings_.consecutive_wins);
  return fmt::format("no stable crossover: the parallel candidate won {} of {} sizes, never {} in a row", won,
                     cases_.size(), settings_.consecutive_wins);
}

}  // namespace onnx_light::tune
