#pragma once
// The master's REST bodies about experiments and templates (docs/design/0006-cluster.md),
// written by the master and read by the CLI (and the web UI to come):
//
//   POST /api/v1/experiments           (multipart: config, context, template) -> CreatedExperiment
//   GET  /api/v1/experiments           ExperimentList
//   GET  /api/v1/experiments/{id}      ExperimentDescription
//   POST /api/v1/experiments/{id}/continue  ExperimentContinue -> CreatedExperiment
//   GET  /api/v1/templates             TemplateList
//   GET  /api/v1/templates/{name}      Template
//
// Field names and shapes are the API's; parsers name the body and the field in errors and
// ignore unknown fields. Thread-compatible value types; the functions are thread-safe.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"
#include "wire/states.h"
#include "wire/trial_bodies.h"

namespace cohort::wire {

using Json = nlohmann::json;

struct CreatedExperiment {
  int64_t id = 0;
  // The config's warnings as the master merged it (a field Cohort accepts but ignores:
  // "environment.image: ignored: ..."); optional, at most 1,000.
  std::vector<std::string> warnings;
  Json ToJson() const;
};
absl::StatusOr<CreatedExperiment> ParseCreatedExperiment(const Json& json);

// One row of the experiment list.
struct ExperimentSummary {
  int64_t id = 0;
  std::string name;
  ExperimentState state = ExperimentState::kActive;
  int trials = 0;       // all of its trials
  int trials_done = 0;  // those in a final state
  int slots_per_trial = 1;
  int priority = 42;
  std::string template_name;  // "template"; empty: none
  int64_t created_ms = 0;     // unix milliseconds
  std::string owner;          // the user who created it; empty: from before users existed
  int64_t ended_ms = 0;       // when it reached a final state; 0: not yet (optional on the wire)
  bool archived = false;      // hidden from lists unless asked for (optional on the wire)
  std::string description;    // the config's; empty: none (optional on the wire)
  std::vector<std::string> labels;  // the config's (optional on the wire)
};

// A change to an experiment's name, description or labels (PATCH /api/v1/experiments/{id},
// `cohort experiment set`): the fields present are written, the others kept.
struct ExperimentPatch {
  std::optional<std::string> name;
  std::optional<std::string> description;
  std::optional<std::vector<std::string>> labels;
  Json ToJson() const;
};
absl::StatusOr<ExperimentPatch> ParseExperimentPatch(const Json& json);

// `cohort experiment continue ID` (Determined's ContinueExperiment): the fields to change in
// the ended experiment's effective config before its trials train again, a mapping merged on
// top of it (mappings merged key by key, anything else replaced); empty: no change.
struct ExperimentContinue {
  Json override_config = Json::object();
  Json ToJson() const;
};
absl::StatusOr<ExperimentContinue> ParseExperimentContinue(const Json& json);

struct ExperimentList {
  std::vector<ExperimentSummary> experiments;
  Json ToJson() const;
};
absl::StatusOr<ExperimentList> ParseExperimentList(const Json& json);

struct ExperimentDescription {
  int64_t id = 0;
  std::string name;
  ExperimentState state = ExperimentState::kActive;
  std::string config;         // the effective config, YAML text
  std::string template_name;  // "template"; empty: none
  int slots_per_trial = 1;
  int priority = 42;
  int max_restarts = 0;
  int64_t created_ms = 0;
  std::string owner;     // as in ExperimentSummary
  int64_t ended_ms = 0;  // as in ExperimentSummary
  bool archived = false;  // as in ExperimentSummary
  std::vector<TrialDescription> trials;

  Json ToJson() const;
};
absl::StatusOr<ExperimentDescription> ParseExperimentDescription(const Json& json);

struct Template {
  std::string name;
  std::string config;  // YAML text
  Json ToJson() const;
};
absl::StatusOr<Template> ParseTemplate(const Json& json);

struct TemplateList {
  std::vector<Template> templates;
  Json ToJson() const;
};
absl::StatusOr<TemplateList> ParseTemplateList(const Json& json);

}  // namespace cohort::wire
