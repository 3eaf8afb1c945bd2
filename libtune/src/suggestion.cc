#include "onnx_light/tune/suggestion.h"

#include <algorithm>
#include <cctype>
#include <set>

namespace onnx_light::tune {

std::size_t edit_distance(std::string_view a, std::string_view b) {
  // Optimal string alignment: insertions, deletions, substitutions and adjacent transpositions
  // ("lnog" -> "long") cost one edit each.
  auto same = [](char x, char y) {
    return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
  };
  const std::size_t width = b.size() + 1;
  std::vector<std::size_t> d((a.size() + 1) * width);
  for (std::size_t i = 0; i <= a.size(); ++i) d[i * width] = i;
  for (std::size_t j = 0; j <= b.size(); ++j) d[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    for (std::size_t j = 1; j <= b.size(); ++j) {
      std::size_t best = std::min({d[(i - 1) * width + j] + 1, d[i * width + j - 1] + 1,
                                   d[(i - 1) * width + j - 1] + (same(a[i - 1], b[j - 1]) ? 0 : 1)});
      if (i > 1 && j > 1 && same(a[i - 1], b[j - 2]) && same(a[i - 2], b[j - 1])) {
        best = std::min(best, d[(i - 2) * width + j - 2] + 1);
      }
      d[i * width + j] = best;
    }
  }
  return d[a.size() * width + b.size()];
}

std::vector<std::string> nearest_names(std::string_view word, const std::vector<std::string>& candidates) {
  const std::size_t limit = std::max<std::size_t>(1, word.size() / 4);
  std::size_t best = limit + 1;
  std::set<std::string> found;
  for (const auto& candidate : candidates) {
    const std::size_t distance = edit_distance(word, candidate);
    if (distance > limit) continue;
    if (distance < best) {
      best = distance;
      found.clear();
    }
    if (distance == best) found.insert(candidate);
  }
  if (found.empty() && !word.empty()) {
    // An unambiguous prefix ("insp" for "inspect") is as good a hint as a typo.
    std::set<std::string> prefixed;
    for (const auto& candidate : candidates)
      if (candidate.size() > word.size() && candidate.compare(0, word.size(), word) == 0) prefixed.insert(candidate);
    if (prefixed.size() == 1) found = std::move(prefixed);
  }
  return {found.begin(), found.end()};
}

}  // namespace onnx_light::tune
