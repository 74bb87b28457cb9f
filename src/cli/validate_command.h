#pragma once
// `cohort experiment validate CONFIG [--template TEMPLATE]`: loads a config (and a template
// file), merges, validates and prints the effective config. Thread-compatible (writes to the
// given streams only).

#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "cohort/config/experiment_config.h"

namespace cohort::cli {

struct ValidateArgs {
  std::string config_path;
  std::optional<std::string> template_path;
  std::vector<std::string> overrides;  // --config KEY=VALUE, set in the config before the merge
};

// On success writes a line per warning to `err` (a field Cohort accepts but ignores:
// "exp.yaml: warning: environment.image: ignored: ...") and the effective config (defaults
// filled, template merged, experiment seed recorded) as YAML to `out`, and returns kExitOk.
// Otherwise writes every error to `err`, one per line, prefixed by the file it concerns ("exp.yaml:
// resources.slots_per_trial: must be >= 0, got -2"), and returns kExitInvalid (invalid YAML or
// config) or kExitUsage (unreadable file).
int RunValidate(const ValidateArgs& args, std::ostream& out, std::ostream& err);

// The validated config of `args` (template merged, defaults filled, seed recorded), after
// writing its warnings to `err` as RunValidate does; or nullopt after writing every error to
// `err` as RunValidate does and setting *exit_code (kExitUsage for a bad override).
std::optional<config::ExperimentConfig> LoadExperimentConfig(const ValidateArgs& args,
                                                             std::ostream& err, int* exit_code);

}  // namespace cohort::cli
