#include <string>
#include <vector>

#include <doctest/doctest.h>

#include "onnx_light/tune/suggestion.h"

using onnx_light::tune::edit_distance;
using onnx_light::tune::nearest_names;

TEST_CASE("edit_distance_counts_an_adjacent_transposition_as_one_edit") {
  CHECK(edit_distance("lnog", "long") == 1);
  CHECK(edit_distance("isnpect", "inspect") == 1);
  CHECK(edit_distance("Abz", "Abs") == 1);
  CHECK(edit_distance("ABS", "abs") == 0);  // case-insensitive
  CHECK(edit_distance("", "abc") == 3);
  CHECK(edit_distance("kitten", "sitting") == 3);
}

TEST_CASE("nearest_names_returns_the_closest_ties_within_the_limit") {
  const std::vector<std::string> verbs{"list", "propose", "set", "inspect", "load", "remove", "calibrate"};
  CHECK(nearest_names("inspekt", verbs) == std::vector<std::string>{"inspect"});
  CHECK(nearest_names("lst", verbs) == std::vector<std::string>{"list"});  // "set" is two edits away
  CHECK(nearest_names("bet", {"set", "get", "list"}) == std::vector<std::string>{"get", "set"});  // ties
  CHECK(nearest_names("frobnicate", verbs).empty());                            // nothing near
  CHECK(nearest_names("calib", verbs) == std::vector<std::string>{"calibrate"});  // unambiguous prefix
  CHECK(nearest_names("l", verbs).empty());  // "list" and "load": an ambiguous prefix is no hint
}
