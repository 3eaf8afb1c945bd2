#pragma once
// "Did you mean ...?" for names a user mistyped: kernels, verbs, options.
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace onnx_light::tune {

// Case-insensitive edit distance; an adjacent transposition counts as one edit.
std::size_t edit_distance(std::string_view a, std::string_view b);

// The candidates closest to `word` (ties all returned, sorted, no duplicates) when they are within
// max(1, |word| / 4) edits, or `word` is a prefix of exactly that candidate; empty otherwise.
std::vector<std::string> nearest_names(std::string_view word, const std::vector<std::string>& candidates);

}  // namespace onnx_light::tune
