// sort_by_runs (libtune/src/sorted_runs.h), the writer's sort: the same order as std::stable_sort
// for any input (already sorted, a few sorted runs as files arrive, reversed, random, with equal
// keys), odd and even numbers of runs alike.
#include <algorithm>
#include <random>
#include <utility>
#include <vector>

#include <doctest/doctest.h>

#include "sorted_runs.h"

namespace {

using Item = std::pair<int, int>;  // key, original position (to see stability)

bool by_key(const Item& a, const Item& b) { return a.first < b.first; }

void check(std::vector<int> keys) {
  std::vector<Item> items;
  for (std::size_t i = 0; i < keys.size(); ++i) items.emplace_back(keys[i], static_cast<int>(i));
  std::vector<Item> expected = items;
  std::stable_sort(expected.begin(), expected.end(), by_key);
  onnx_light::tune::sort_by_runs(items.begin(), items.end(), by_key);
  CHECK(items == expected);
}

std::vector<int> runs(std::size_t count, std::size_t length, std::mt19937& random) {
  std::vector<int> keys;
  for (std::size_t r = 0; r < count; ++r) {
    std::vector<int> run(length);
    for (auto& key : run) key = static_cast<int>(random() % 50);
    std::sort(run.begin(), run.end());
    keys.insert(keys.end(), run.begin(), run.end());
  }
  return keys;
}

}  // namespace

TEST_CASE("sort_by_runs_orders_as_stable_sort_does") {
  std::mt19937 random(7);
  check({});
  check({3});
  check({1, 2, 3, 4});
  check({4, 3, 2, 1, 0});
  check({2, 2, 1, 1, 3, 3, 0});
  for (std::size_t count : {1, 2, 3, 4, 5, 7, 8, 9, 31}) {
    CAPTURE(count);
    check(runs(count, 13, random));
  }
  for (int round = 0; round < 50; ++round) {
    std::vector<int> keys(1 + random() % 300);
    for (auto& key : keys) key = static_cast<int>(random() % 20);
    check(keys);
  }
}
