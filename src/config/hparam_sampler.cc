#include "config/hparam_sampler.h"

#include <cmath>
#include <set>
#include <string>

#include "absl/strings/str_cat.h"
#include "config/error_list.h"

namespace cohort::config {
namespace {

constexpr uint64_t kSamplingSalt = 0x68706172616d73;  // "hparams"

// A leaf of the hyperparameter tree with its path from the root.
struct Leaf {
  std::vector<std::string> path;
  const Hyperparameter* hp;
};

void Flatten(const Hyperparameters& hparams, std::vector<std::string>& prefix,
             std::vector<Leaf>& leaves) {
  for (const auto& [name, hp] : hparams) {
    prefix.push_back(name);
    if (hp.type == Hyperparameter::Type::kGroup) {
      Flatten(hp.members, prefix, leaves);
    } else {
      leaves.push_back({prefix, &hp});
    }
    prefix.pop_back();
  }
}

std::string PathName(const Leaf& leaf) {
  std::string path = "hyperparameters";
  for (const std::string& part : leaf.path) path = JoinPath(path, part);
  return path;
}

void Assign(Json& sample, const Leaf& leaf, Json value) {
  Json* node = &sample;
  for (size_t i = 0; i + 1 < leaf.path.size(); ++i) node = &(*node)[leaf.path[i]];
  (*node)[leaf.path.back()] = std::move(value);
}

Json Draw(const Hyperparameter& hp, SplitMix64& rng) {
  switch (hp.type) {
    case Hyperparameter::Type::kInt: {
      const int64_t lo = static_cast<int64_t>(hp.minval), hi = static_cast<int64_t>(hp.maxval);
      return lo + static_cast<int64_t>(rng.Next() % static_cast<uint64_t>(hi - lo + 1));
    }
    case Hyperparameter::Type::kDouble:
      return hp.minval + rng.Uniform() * (hp.maxval - hp.minval);
    case Hyperparameter::Type::kLog:
      return std::pow(hp.base, hp.minval + rng.Uniform() * (hp.maxval - hp.minval));
    case Hyperparameter::Type::kCategorical:
      return hp.vals[rng.Next() % hp.vals.size()];
    default:
      return hp.val;
  }
}

std::vector<Json> RandomSamples(const std::vector<Leaf>& leaves, int64_t n, uint32_t seed) {
  SplitMix64 rng(Mix64(seed ^ kSamplingSalt));
  std::vector<Json> samples;
  for (int64_t i = 0; i < n; ++i) {
    Json sample = Json::object();
    for (const Leaf& leaf : leaves) Assign(sample, leaf, Draw(*leaf.hp, rng));
    samples.push_back(std::move(sample));
  }
  return samples;
}

absl::StatusOr<std::vector<Json>> GridAxis(const Leaf& leaf) {
  const Hyperparameter& hp = *leaf.hp;
  using Type = Hyperparameter::Type;
  if (hp.type == Type::kConst) return std::vector<Json>{hp.val};
  if (hp.type == Type::kCategorical) return hp.vals;
  if (!hp.count.has_value()) {
    const char* kind = hp.type == Type::kInt ? "an int" : hp.type == Type::kLog ? "a log"
                                                                                 : "a double";
    return absl::InvalidArgumentError(absl::StrCat(
        PathName(leaf), ": grid search needs count for ", kind, " hyperparameter"));
  }
  std::vector<Json> axis;
  if (hp.type == Type::kInt) {
    const int64_t lo = static_cast<int64_t>(hp.minval), hi = static_cast<int64_t>(hp.maxval);
    const int64_t count = std::min<int64_t>(*hp.count, hi - lo + 1);
    if (count == 1) return std::vector<Json>{lo + (hi - lo) / 2};
    std::set<int64_t> seen;
    for (int64_t i = 0; i < count; ++i) {
      const int64_t v = lo + std::llround(static_cast<double>(i) * (hi - lo) / (count - 1));
      if (seen.insert(v).second) axis.push_back(v);
    }
    return axis;
  }
  const int64_t count = *hp.count;
  for (int64_t i = 0; i < count; ++i) {
    const double x = count == 1 ? (hp.minval + hp.maxval) / 2
                                : hp.minval + (hp.maxval - hp.minval) * i / (count - 1);
    axis.push_back(hp.type == Type::kLog ? std::pow(hp.base, x) : x);
  }
  return axis;
}

absl::StatusOr<std::vector<Json>> GridSamples(const std::vector<Leaf>& leaves) {
  std::vector<std::vector<Json>> axes;
  ErrorList errors;
  double total = 1;
  for (const Leaf& leaf : leaves) {
    absl::StatusOr<std::vector<Json>> axis = GridAxis(leaf);
    if (!axis.ok()) {
      errors.Add("", axis.status().message());
      continue;
    }
    total *= static_cast<double>(axis->size());
    axes.push_back(*std::move(axis));
  }
  if (!errors.empty()) return errors.ToStatus();
  if (total > kMaxGridPoints) {
    return absl::InvalidArgumentError(absl::StrCat("hyperparameters: the grid has ", total,
                                                   " points, more than ", kMaxGridPoints,
                                                   " (the most trials an experiment may have)"));
  }
  std::vector<Json> samples;
  std::vector<size_t> index(axes.size(), 0);
  while (true) {
    Json sample = Json::object();
    for (size_t a = 0; a < axes.size(); ++a) Assign(sample, leaves[a], axes[a][index[a]]);
    samples.push_back(std::move(sample));
    // Odometer: the last axis turns fastest.
    size_t a = axes.size();
    while (a > 0 && ++index[a - 1] == axes[a - 1].size()) index[--a] = 0;
    if (a == 0) break;
  }
  return samples;
}

}  // namespace

uint32_t TrialSeed(uint32_t experiment_seed, uint64_t trial_index) {
  return static_cast<uint32_t>(Mix64(Mix64(experiment_seed) + trial_index) & 0x7fffffffULL);
}

absl::StatusOr<std::vector<Json>> SampleHyperparameters(const Hyperparameters& hparams,
                                                        const SearcherConfig& searcher,
                                                        uint32_t experiment_seed) {
  std::vector<Leaf> leaves;
  std::vector<std::string> prefix;
  Flatten(hparams, prefix, leaves);
  if (searcher.name == "single") return RandomSamples(leaves, 1, experiment_seed);
  if (searcher.name == "random" || searcher.name == "adaptive_asha" ||
      searcher.name == "async_halving") {
    return RandomSamples(leaves, searcher.max_trials, experiment_seed);
  }
  if (searcher.name == "grid") return GridSamples(leaves);
  return absl::InvalidArgumentError(
      absl::StrCat("searcher.name: cannot sample for searcher '", searcher.name, "'"));
}

}  // namespace cohort::config
