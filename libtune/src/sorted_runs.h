#pragma once
// A stable sort that merges the ascending runs its input already has: linear (in comparisons)
// for profiles that arrive as a few sorted files (a merge of exports, a cache and an import),
// O(n log n) otherwise. Comparing two profiles compares strings, so it matters at fleet scale.
#include <algorithm>
#include <iterator>
#include <vector>

namespace onnx_light::tune {

template <typename Iterator, typename Less>
void sort_by_runs(Iterator first, Iterator last, Less less) {
  if (first == last) return;
  std::vector<Iterator> bounds{first};  // where each ascending run starts, then `last`
  for (Iterator it = std::next(first); it != last; ++it) {
    if (less(*it, *std::prev(it))) bounds.push_back(it);
  }
  bounds.push_back(last);
  while (bounds.size() > 2) {
    std::vector<Iterator> merged;
    merged.reserve(bounds.size() / 2 + 2);
    std::size_t i = 0;
    for (; i + 2 < bounds.size(); i += 2) {
      std::inplace_merge(bounds[i], bounds[i + 1], bounds[i + 2], less);
      merged.push_back(bounds[i]);
    }
    if (i + 1 < bounds.size()) merged.push_back(bounds[i]);  // an odd run out waits for the next round
    merged.push_back(last);
    bounds = std::move(merged);
  }
}

}  // namespace onnx_light::tune
