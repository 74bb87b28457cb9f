#pragma once
// Parsing and validation of Determined-format experiment configs: a config tree (from
// ParseYaml) in, a typed ExperimentConfig with Determined's defaults out. Thread-safe
// (stateless; the seed source is std::random_device unless given).
//
// Every problem is reported at once: the InvalidArgument status lists one error per line,
// each naming the field path and the rule, e.g.
//   resources.slots_per_trial: must be >= 0, got -2
//   optimizations.mixed_precision: expected a string, got integer 3
//   resources.slot_per_trial: unknown field; did you mean slots_per_trial?
// ConfigErrors(status) (config/error_list.h) splits it back into the list.
//
// Example:
//   COHORT_ASSIGN_OR_RETURN(Json tree, LoadYamlFile(path));
//   COHORT_ASSIGN_OR_RETURN(ExperimentConfig config, ParseExperimentConfig(tree));
//   std::cout << ToYaml(config.effective);

#include <cstdint>
#include <optional>

#include "absl/status/statusor.h"
#include "cohort/config/experiment_config.h"
#include "config/yaml_json.h"

namespace cohort::config {

struct ParseOptions {
  // The experiment seed to record when the config has no reproducibility.experiment_seed.
  // Unset: one is drawn from std::random_device (in [0, 2^31)).
  std::optional<uint32_t> seed_if_absent;
};

// Validates `tree` and fills in defaults. The returned config's `effective` is the tree as the
// experiment will run it: every default written out, the experiment seed recorded, unknown and
// invalid fields absent (they are errors), `data` kept as given. A grid searcher's rules
// (SampleHyperparameters in config/hparam_sampler.h) are checked here too.
absl::StatusOr<ExperimentConfig> ParseExperimentConfig(const Json& tree,
                                                       const ParseOptions& options = {});

}  // namespace cohort::config
