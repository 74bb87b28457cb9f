#pragma once
// Seeds and hyperparameter samples, both pure functions of the experiment seed: rerunning an
// experiment with the same config and seed gives the same trials with the same seeds.
// Thread-safe (stateless).
//
// Trial seed (documented so other implementations can reproduce it):
//   TrialSeed(s, i) = Mix64(Mix64(s) + i) & 0x7fffffff
// where Mix64 is SplitMix64's finalizer. The result fits both int32 and uint32 seeds.
//
// Sampling: a SplitMix64 stream seeded with Mix64(s ^ 0x68706172616d73) ("hparams") draws, per
// sample, one value for each non-const hyperparameter in config order (depth first through
// groups):
//   int:         minval + next % (maxval - minval + 1)
//   double:      minval + u * (maxval - minval),  u = (next >> 11) * 2^-53 in [0, 1)
//   log:         base ^ (minval + u * (maxval - minval))
//   categorical: vals[next % len(vals)]
// (the modulo bias is below 2^-40 for any realistic range.) Consts are copied as-is.
//
// Example:
//   COHORT_ASSIGN_OR_RETURN(std::vector<Json> samples,
//                           SampleHyperparameters(config.hyperparameters, config.searcher,
//                                                 config.experiment_seed));
//   // trial i trains with samples[i] and seed TrialSeed(config.experiment_seed, i)

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "cohort/config/experiment_config.h"
#include "common/split_mix64.h"
#include "config/limits.h"
#include "config/yaml_json.h"

namespace cohort::config {

// SplitMix64's finalizer (common/split_mix64.h).
using ::cohort::Mix64;

// The seed of trial `trial_index` (0, 1, ...) of an experiment (formula above).
uint32_t TrialSeed(uint32_t experiment_seed, uint64_t trial_index);

// At most this many grid points (as many as trials an experiment may have, config/limits.h);
// a larger grid is an error rather than a hang.
inline constexpr int64_t kMaxGridPoints = kMaxTrials;

// The hyperparameter samples the searcher starts trials with, each a JSON object shaped like
// the hyperparameter tree (groups become nested objects), in trial order:
// * single: one sample (consts as given, any searched hyperparameter drawn once);
// * random, adaptive_asha: searcher.max_trials random samples;
// * grid: the cartesian product of every hyperparameter's grid axis, the first hyperparameter
//   varying slowest. Axes: const: its value; categorical: vals; int/double/log: `count` evenly
//   spaced points from minval to maxval inclusive (in exponent space for log; the midpoint
//   when count is 1; an int axis has at most maxval - minval + 1 distinct points).
// Errors (InvalidArgument naming the hyperparameter): grid with a searched hyperparameter
// lacking `count` ("hyperparameters.lr: grid search needs count for a double hyperparameter");
// more than kMaxGridPoints points; an unknown searcher name.
absl::StatusOr<std::vector<Json>> SampleHyperparameters(const Hyperparameters& hparams,
                                                        const SearcherConfig& searcher,
                                                        uint32_t experiment_seed);

}  // namespace cohort::config
