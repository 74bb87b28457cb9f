#pragma once
// `--config KEY=VALUE` (Determined's `det experiment fork --config`): one field of an experiment
// config set from the command line. KEY is a dotted path of mapping keys
// (hyperparameters.lr.maxval); VALUE is YAML (0.1, true, "text", [1, 2], {type: const, val: 3}),
// so it takes the type it would have in the file. Missing mappings on the way are created.
// Pure; thread-safe.
//
// Example:
//   COHORT_RETURN_IF_ERROR(ApplyConfigOverrides({"searcher.max_trials=4"}, tree));

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "nlohmann/json.hpp"

namespace cohort::cli {

// Sets each override in `tree` (a config as JSON, a mapping), in order. InvalidArgument naming
// the override when it has no '=', an empty key or an empty part of the key ("a..b"), a VALUE
// that is not YAML, or a path through a value that is not a mapping; `tree` may then hold the
// overrides before it.
absl::Status ApplyConfigOverrides(const std::vector<std::string>& overrides, nlohmann::json& tree);

}  // namespace cohort::cli
