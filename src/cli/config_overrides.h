#pragma once
// `--config KEY=VALUE` (Determined's `det experiment fork --config`): one field of an experiment
// config set from the command line. KEY is a dotted path of mapping keys
// (hyperparameters.lr.maxval); VALUE is YAML (0.1, true, "text", [1, 2], {type: const, val: 3}),
// so it takes the type it would have in the file. Missing mappings on the way are created.
// Pure; thread-safe.
//
// Example:
//   COHORT_RETURN_IF_ERROR(ApplyConfigOverrides({"searcher.max_trials=4"}, tree));

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "cohort/config/json.h"

namespace cohort::cli {

// Sets each override in `tree` (a config as JSON, a mapping), in order. InvalidArgument naming
// the override when it has no '=', an empty key or an empty part of the key ("a..b"), a VALUE
// that is not YAML, or a path through a value that is not a mapping; `tree` may then hold the
// overrides before it.
absl::Status ApplyConfigOverrides(const std::vector<std::string>& overrides, config::Json& tree);

// `experiment create --test` (Determined's smoke test): at most this many batches, one
// validation at the end.
inline constexpr int64_t kSmokeTestBatches = 10;

// Rewrites a config file's tree (a mapping, possibly partial: a template may supply the rest)
// into a smoke test a master runs: its searcher becomes `single` (one trial, hyperparameters
// drawn as `single` draws them) keeping the metric and smaller_is_better it names, of
// min(kSmokeTestBatches, its max_length in batches) batches; min_validation_period becomes that
// length (one validation, at the end); min_checkpoint_period is dropped.
void ApplySmokeTest(config::Json& tree);

}  // namespace cohort::cli
