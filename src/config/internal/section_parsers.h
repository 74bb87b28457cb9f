#pragma once
// Parsers for the sections of an experiment config, shared by config_parser.cc,
// hyperparameter_parser.cc and searcher_parser.cc. Each reads the tree at `path`, records every
// problem in `errors`, writes the normalized section (defaults filled) into `effective`, and
// returns what it could read. Thread-compatible.

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "cohort/config/experiment_config.h"
#include "config/error_list.h"
#include "config/internal/object_reader.h"
#include "config/yaml_json.h"

namespace cohort::config::internal {

// {batches: N} | {records: N} | {epochs: N}, N >= 1 (>= 0 when allow_zero).
std::optional<Length> ParseLength(const Json& node, const std::string& path, bool allow_zero,
                                  ErrorList* errors, Json* effective);

// The hyperparameter tree (a map of name -> value / typed hyperparameter / nested group).
Hyperparameters ParseHyperparameters(const Json& node, const std::string& path, ErrorList* errors,
                                     Json* effective);

// The `searcher` section; null means the default (single).
SearcherConfig ParseSearcher(const Json& node, ErrorList* errors, Json* effective);

// The `environment` section; returns the variables a trial on a CPU slot gets (KEY, VALUE).
std::vector<std::pair<std::string, std::string>> ParseEnvironment(const Json& node,
                                                                  ErrorList* errors,
                                                                  Json* effective);

// `checkpoint_storage`, Determined's union by `type`.
CheckpointStorage ParseCheckpointStorage(const Json& node, ErrorList* errors, Json* effective);

// `log_policies` of the root map `root` (Determined's defaults when absent); `effective` is the
// root's effective config.
std::vector<LogPolicy> ParseLogPolicies(ObjectReader& root, ErrorList* errors, Json* effective);

// The top-level sections Cohort accepts and ignores with a warning: data_layer, slurm, pbs,
// retention_policy, tensorboard_storage, security, integrations, internal.
void ParseIgnoredSections(ObjectReader& root, ErrorList* errors, Json* effective);

}  // namespace cohort::config::internal
