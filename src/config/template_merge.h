#pragma once
// Configuration templates: the effective config of an experiment that uses a template is
// MergeTemplate(template, config). Thread-safe (stateless).
//
// Rules (Determined's, docs/architecture.md §7):
// * scalars: the config's value wins;
// * maps: merged recursively (a key present on one side only is kept);
// * lists: the template's items followed by the config's, except `bind_mounts` and
//   `resources.devices`: the config's items, then the template's items whose `container_path`
//   the config does not use (Determined's order);
// * a map on one side and anything else on the other: the config's value wins, except
//   `environment.image` and `environment.environment_variables`, whose short form (a name, a
//   list) stands for {cpu: v, cuda: v, rocm: v} and merges with the map form as a map;
// * hyperparameters: a typed hyperparameter or a constant is atomic (the config's replaces the
//   template's); nested groups merge recursively;
// * a tagged union whose tag differs on the two sides (`checkpoint_storage.type`,
//   `searcher.name`, `data_layer.type`, `tensorboard_storage.type`) is taken whole from the
//   config, so the fields of one variant never leak into another.
// A config uses at most one template (`template: NAME` names it; the name is not validated
// here). A template that itself names a template is rejected.
//
// Example:
//   COHORT_ASSIGN_OR_RETURN(Json merged, MergeTemplate(template_tree, config_tree));
//   COHORT_ASSIGN_OR_RETURN(ExperimentConfig c, ParseExperimentConfig(merged));

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "config/yaml_json.h"

namespace cohort::config {

// Merges `config` over `tmpl` with the rules above. Errors (InvalidArgument, one per line like
// ParseExperimentConfig): the template is not a map ("template: expected a map, got list"), the
// template names a template ("template.template: a template cannot itself name a template").
// The config's own errors are left to ParseExperimentConfig.
absl::StatusOr<Json> MergeTemplate(const Json& tmpl, const Json& config);

// Checks `tmpl` as the part of a config a template may hold, when it is set: MergeTemplate's
// rules, then every error ParseExperimentConfig gives for it alone (the same lines `experiment
// validate` prints: wrong types, values out of range, unknown fields and enum values) except
// those the config it is merged under can still settle: a required field missing, a length in
// epochs without records_per_epoch. OK for an empty template.
//
// Example:
//   CheckTemplate(Yaml("resources: {slots_per_trial: two}"))
//   // InvalidArgument "resources.slots_per_trial: expected an integer, got string \"two\""
absl::Status CheckTemplate(const Json& tmpl);

}  // namespace cohort::config
