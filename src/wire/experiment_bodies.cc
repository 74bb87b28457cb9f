#include "wire/experiment_bodies.h"

#include "absl/strings/str_cat.h"
#include "cohort/status.h"
#include "wire/agent_protocol.h"
#include "wire/internal/field_reader.h"
#include "wire/limits.h"

namespace cohort::wire {
namespace {

using internal::FieldReader;

constexpr size_t kMaxNameBytes = 1024;
constexpr size_t kMaxExperiments = 1 << 20;
constexpr size_t kMaxTrials = 1 << 20;
constexpr size_t kMaxTemplates = 1 << 16;
// An experiment's description and labels: config/limits.h's bounds.
constexpr size_t kMaxDescriptionBytes = 4096;
constexpr size_t kMaxLabels = 100;
constexpr size_t kMaxLabelBytes = 256;

Json TemplateJson(const Template& t) { return {{"name", t.name}, {"config", t.config}}; }

absl::StatusOr<Template> ParseTemplateAt(const Json& json, const std::string& context) {
  FieldReader r(json, context);
  Template t;
  r.Required("name", &t.name, kMaxNameBytes);
  r.Required("config", &t.config, kMaxConfigBytes);
  COHORT_RETURN_IF_ERROR(r.status());
  return t;
}

absl::StatusOr<ExperimentSummary> ParseSummary(const Json& json, const std::string& context) {
  FieldReader r(json, context);
  ExperimentSummary e;
  r.Required("id", &e.id, {.min = 1});
  r.Required("name", &e.name, kMaxNameBytes);
  r.Enum("state", &e.state, ParseExperimentState, FieldReader::kRequired);
  r.Required("trials", &e.trials, {.min = 0});
  r.Required("trials_done", &e.trials_done, {.min = 0, .max = e.trials});
  r.Required("slots_per_trial", &e.slots_per_trial, {.min = 1});
  r.Required("priority", &e.priority);
  r.Optional("template", &e.template_name, kMaxNameBytes);
  r.Required("created_ms", &e.created_ms, {.min = 0});
  r.Optional("ended_ms", &e.ended_ms, {.min = 0});
  r.Optional("owner", &e.owner, kMaxSafeNameBytes);
  r.Optional("archived", &e.archived);
  r.Optional("description", &e.description, kMaxDescriptionBytes);
  r.Array("labels", &e.labels, kMaxLabels, FieldReader::kOptional,
          [](const Json& j, const std::string& where) -> absl::StatusOr<std::string> {
            if (!j.is_string() || j.get_ref<const std::string&>().size() > kMaxLabelBytes) {
              return absl::InvalidArgumentError(
                  absl::StrCat(where, ": expected a string of at most ", kMaxLabelBytes, " bytes"));
            }
            return j.get<std::string>();
          });
  COHORT_RETURN_IF_ERROR(r.status());
  return e;
}

}  // namespace

Json CreatedExperiment::ToJson() const { return {{"id", id}, {"warnings", warnings}}; }

absl::StatusOr<CreatedExperiment> ParseCreatedExperiment(const Json& json) {
  FieldReader r(json, "created experiment");
  CreatedExperiment c;
  r.Required("id", &c.id, {.min = 1});
  r.Array("warnings", &c.warnings, 1000, FieldReader::kOptional,
          [](const Json& j, const std::string& where) -> absl::StatusOr<std::string> {
            if (!j.is_string()) return absl::InvalidArgumentError(where + ": expected a string");
            return j.get<std::string>();
          });
  COHORT_RETURN_IF_ERROR(r.status());
  return c;
}

Json ExperimentList::ToJson() const {
  Json list = Json::array();
  for (const ExperimentSummary& e : experiments) {
    list.push_back({{"id", e.id},
                    {"name", e.name},
                    {"state", Name(e.state)},
                    {"trials", e.trials},
                    {"trials_done", e.trials_done},
                    {"slots_per_trial", e.slots_per_trial},
                    {"priority", e.priority},
                    {"template", e.template_name},
                    {"created_ms", e.created_ms},
                    {"owner", e.owner},
                    {"ended_ms", e.ended_ms},
                    {"archived", e.archived},
                    {"description", e.description},
                    {"labels", e.labels}});
  }
  return {{"experiments", list}};
}

absl::StatusOr<ExperimentList> ParseExperimentList(const Json& json) {
  FieldReader r(json, "experiment list");
  ExperimentList out;
  r.Array("experiments", &out.experiments, kMaxExperiments, FieldReader::kRequired, ParseSummary);
  COHORT_RETURN_IF_ERROR(r.status());
  return out;
}

Json ExperimentDescription::ToJson() const {
  Json list = Json::array();
  for (const TrialDescription& t : trials) list.push_back(t.ToJson());
  return {{"id", id},
          {"name", name},
          {"state", Name(state)},
          {"config", config},
          {"template", template_name},
          {"slots_per_trial", slots_per_trial},
          {"priority", priority},
          {"max_restarts", max_restarts},
          {"created_ms", created_ms},
          {"ended_ms", ended_ms},
          {"owner", owner},
          {"archived", archived},
          {"trials", list}};
}

absl::StatusOr<ExperimentDescription> ParseExperimentDescription(const Json& json) {
  FieldReader r(json, "experiment");
  ExperimentDescription e;
  r.Required("id", &e.id, {.min = 1});
  r.Required("name", &e.name, kMaxNameBytes);
  r.Enum("state", &e.state, ParseExperimentState, FieldReader::kRequired);
  r.Required("config", &e.config, kMaxConfigBytes);
  r.Optional("template", &e.template_name, kMaxNameBytes);
  r.Required("slots_per_trial", &e.slots_per_trial, {.min = 1});
  r.Required("priority", &e.priority);
  r.Required("max_restarts", &e.max_restarts, {.min = 0});
  r.Required("created_ms", &e.created_ms, {.min = 0});
  r.Optional("ended_ms", &e.ended_ms, {.min = 0});
  r.Optional("owner", &e.owner, kMaxSafeNameBytes);
  r.Optional("archived", &e.archived);
  r.Array("trials", &e.trials, kMaxTrials, FieldReader::kRequired,
          [](const Json& j, const std::string& where) { return ParseTrialDescription(j, where); });
  COHORT_RETURN_IF_ERROR(r.status());
  return e;
}

Json Template::ToJson() const { return TemplateJson(*this); }

absl::StatusOr<Template> ParseTemplate(const Json& json) {
  return ParseTemplateAt(json, "template");
}

Json TemplateList::ToJson() const {
  Json list = Json::array();
  for (const Template& t : templates) list.push_back(TemplateJson(t));
  return {{"templates", list}};
}

absl::StatusOr<TemplateList> ParseTemplateList(const Json& json) {
  FieldReader r(json, "template list");
  TemplateList out;
  r.Array("templates", &out.templates, kMaxTemplates, FieldReader::kRequired, ParseTemplateAt);
  COHORT_RETURN_IF_ERROR(r.status());
  return out;
}

}  // namespace cohort::wire

namespace cohort::wire {

Json ExperimentPatch::ToJson() const {
  Json json = Json::object();
  if (name) json["name"] = *name;
  if (description) json["description"] = *description;
  if (labels) json["labels"] = *labels;
  return json;
}

absl::StatusOr<ExperimentPatch> ParseExperimentPatch(const Json& json) {
  internal::FieldReader r(json, "experiment change");
  ExperimentPatch p;
  if (r.Has("name")) r.Optional("name", &p.name.emplace(), kMaxExperimentNameBytes);
  if (r.ok() && p.name && p.name->empty()) r.Fail("name", "must not be empty");
  if (r.Has("description")) r.Optional("description", &p.description.emplace(), 16 << 10);
  if (r.Has("labels")) {
    r.Array("labels", &p.labels.emplace(), 100, internal::FieldReader::kOptional,
            [](const Json& label, const std::string& where) -> absl::StatusOr<std::string> {
              if (!label.is_string() || label.get_ref<const std::string&>().empty() ||
                  label.get_ref<const std::string&>().size() > 255) {
                return absl::InvalidArgumentError(
                    absl::StrCat(where, ": must be a string of 1 to 255 bytes"));
              }
              return label.get<std::string>();
            });
  }
  COHORT_RETURN_IF_ERROR(r.status());
  if (!p.name && !p.description && !p.labels) {
    return absl::InvalidArgumentError(
        "experiment change: give \"name\", \"description\" or \"labels\"");
  }
  return p;
}

Json ExperimentContinue::ToJson() const { return {{"override_config", override_config}}; }

absl::StatusOr<ExperimentContinue> ParseExperimentContinue(const Json& json) {
  internal::FieldReader r(json, "experiment continue");
  ExperimentContinue c;
  r.Object("override_config", &c.override_config, internal::FieldReader::kOptional);
  COHORT_RETURN_IF_ERROR(r.status());
  if (c.override_config.is_null()) c.override_config = Json::object();
  return c;
}

}  // namespace cohort::wire
