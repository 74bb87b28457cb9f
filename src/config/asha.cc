#include "config/asha.h"

#include <algorithm>
#include <cmath>

namespace cohort::config {

bool HasRungs(const SearcherConfig& searcher) {
  return searcher.name == "adaptive_asha" || searcher.name == "async_halving";
}

namespace {

// The number of rungs of each bracket: async_halving's one, bracket_rungs, or by mode.
std::vector<int64_t> RungCounts(const SearcherConfig& searcher) {
  if (searcher.name == "async_halving") {
    return {std::max<int64_t>(1, searcher.num_rungs.value_or(1))};
  }
  if (!searcher.bracket_rungs.empty()) return searcher.bracket_rungs;
  const int64_t max_rungs = std::max<int64_t>(1, searcher.max_rungs);
  int64_t brackets = 1;
  if (searcher.mode == "standard") brackets = (max_rungs + 1) / 2;
  if (searcher.mode == "conservative") brackets = max_rungs;
  std::vector<int64_t> counts;
  for (int64_t b = 0; b < brackets; ++b) counts.push_back(max_rungs - b);
  return counts;
}

}  // namespace

std::vector<std::vector<int64_t>> AshaBrackets(const SearcherConfig& searcher) {
  if (!HasRungs(searcher) || !searcher.max_length) return {};
  const int64_t max_length = searcher.max_length->value;
  std::vector<std::vector<int64_t>> out;
  for (const int64_t rungs : RungCounts(searcher)) {
    std::vector<int64_t> lengths;
    for (int64_t k = 0; k < rungs; ++k) {
      const double scaled =
          static_cast<double>(max_length) / std::pow(searcher.divisor, rungs - 1 - k);
      const int64_t length =
          k == rungs - 1 ? max_length : std::max<int64_t>(1, std::llround(scaled));
      if (lengths.empty() || length > lengths.back()) lengths.push_back(length);
    }
    out.push_back(std::move(lengths));
  }
  return out;
}

std::vector<int64_t> SearcherOperations(const SearcherConfig& searcher, int64_t index) {
  if (!searcher.max_length) return {};
  std::vector<std::vector<int64_t>> brackets = AshaBrackets(searcher);
  if (brackets.empty()) return {searcher.max_length->value};
  return brackets[static_cast<size_t>(std::max<int64_t>(0, index)) % brackets.size()];
}

bool AshaPromotes(const std::vector<double>& others, double mine, double divisor,
                  bool smaller_is_better) {
  const double n = static_cast<double>(others.size() + 1);
  const auto keep = static_cast<size_t>(std::ceil(n / divisor));
  size_t better = 0;
  for (double m : others) {
    if (smaller_is_better ? m < mine : m > mine) ++better;
  }
  return better < keep;
}

}  // namespace cohort::config
