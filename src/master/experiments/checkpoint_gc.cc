#include "master/experiments/checkpoint_gc.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

namespace cohort::master {
namespace {

using Ptrs = std::vector<const GcCheckpoint*>;

// Marks the first `n` of `sorted` kept.
void KeepFirst(const Ptrs& sorted, int64_t n, std::set<std::string>& keep) {
  for (size_t i = 0; i < sorted.size() && static_cast<int64_t>(i) < n; ++i) {
    keep.insert(sorted[i]->storage_id);
  }
}

// Those of `all` with a metric, best first (ties: the later batch first).
Ptrs Best(const Ptrs& all, bool smaller_is_better) {
  Ptrs best;
  for (const GcCheckpoint* c : all) {
    if (c->metric && !std::isnan(*c->metric)) best.push_back(c);
  }
  std::stable_sort(best.begin(), best.end(), [&](const GcCheckpoint* a, const GcCheckpoint* b) {
    if (*a->metric != *b->metric) {
      return smaller_is_better ? *a->metric < *b->metric : *a->metric > *b->metric;
    }
    return a->steps_completed > b->steps_completed;
  });
  return best;
}

}  // namespace

std::vector<std::string> CheckpointsToDelete(const std::vector<GcCheckpoint>& checkpoints,
                                             const GcPolicy& policy) {
  std::map<int64_t, Ptrs> by_trial;
  Ptrs all;
  for (const GcCheckpoint& c : checkpoints) {
    by_trial[c.trial_id].push_back(&c);
    all.push_back(&c);
  }
  std::set<std::string> keep;
  for (auto& [trial, list] : by_trial) {
    Ptrs newest = list;
    std::stable_sort(newest.begin(), newest.end(), [](const auto* a, const auto* b) {
      return a->steps_completed > b->steps_completed;
    });
    KeepFirst(newest, policy.save_trial_latest, keep);
    KeepFirst(Best(list, policy.smaller_is_better), policy.save_trial_best, keep);
  }
  KeepFirst(Best(all, policy.smaller_is_better), policy.save_experiment_best, keep);
  std::vector<std::string> gone;
  for (const GcCheckpoint& c : checkpoints) {
    if (!keep.count(c.storage_id)) gone.push_back(c.storage_id);
  }
  return gone;
}

}  // namespace cohort::master
