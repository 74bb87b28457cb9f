#include "master/models/registry.h"

#include <algorithm>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "cohort/status.h"
#include "nlohmann/json.hpp"
#include "wire/limits.h"
#include "wire/states.h"

namespace cohort::master::models {
namespace {

using Json = nlohmann::json;

// Labels as the database keeps them (a JSON array) and back. The stored text is the
// registry's own; anything else reads as no labels rather than failing a whole listing.
std::string LabelsText(const std::vector<std::string>& labels) { return Json(labels).dump(); }

std::vector<std::string> Labels(const std::string& text) {
  Json json = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  std::vector<std::string> labels;
  if (!json.is_array()) return labels;
  for (const Json& label : json) {
    if (label.is_string()) labels.push_back(label.get<std::string>());
  }
  return labels;
}

Json Metadata(const std::string& text) {
  Json json = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  return json.is_object() ? json : Json::object();
}

absl::Status CheckLabels(const char* what, const std::vector<std::string>& labels) {
  std::set<std::string> seen;
  for (const std::string& label : labels) {
    if (!seen.insert(label).second) {
      return absl::InvalidArgumentError(absl::StrCat(what, ": label '", label, "' is given twice"));
    }
  }
  return absl::OkStatus();
}

absl::Status CheckName(const std::string& name) {
  return wire::CheckSafeName("a model's name", name);
}

wire::Model ToWire(const ModelRow& row) {
  wire::Model m;
  m.id = row.id;
  m.name = row.name;
  m.description = row.description;
  m.labels = Labels(row.labels_json);
  m.metadata = Metadata(row.metadata_json);
  m.owner = row.owner;
  m.created_ms = row.created_ms;
  m.updated_ms = row.updated_ms;
  m.num_versions = row.num_versions;
  m.last_version = row.last_version;
  return m;
}

wire::ModelVersion ToWire(const ModelVersionRow& row, const std::string& model) {
  wire::ModelVersion v;
  v.id = row.id;
  v.model = model;
  v.version = row.version;
  v.checkpoint = row.checkpoint_id;
  v.name = row.name;
  v.comment = row.comment;
  v.notes = row.notes;
  v.labels = Labels(row.labels_json);
  v.metadata = Metadata(row.metadata_json);
  v.registered_by = row.registered_by;
  v.created_ms = row.created_ms;
  return v;
}

// The database's NotFound for a model, with how to find the names.
absl::StatusOr<ModelRow> Find(Database& db, const std::string& name) {
  absl::StatusOr<ModelRow> row = db.GetModel(name);
  if (absl::IsNotFound(row.status())) {
    return absl::NotFoundError(
        absl::StrCat("no model named '", name, "' (`cohort model list` shows them)"));
  }
  return row;
}

absl::StatusOr<ModelVersionRow> FindVersion(Database& db, const ModelRow& model, int64_t version) {
  COHORT_ASSIGN_OR_RETURN(std::vector<ModelVersionRow> versions, db.ListModelVersions(model.id));
  for (ModelVersionRow& v : versions) {
    if (v.version == version) return std::move(v);
  }
  return absl::NotFoundError(absl::StrCat("model '", model.name, "' has no version ", version,
                                          " (it has ", versions.size(), ")"));
}

}  // namespace

absl::StatusOr<wire::Model> Registry::Create(const Caller& caller, const wire::NewModel& model) {
  COHORT_RETURN_IF_ERROR(CheckName(model.name));
  COHORT_RETURN_IF_ERROR(CheckLabels("the model", model.labels));
  ModelRow row;
  row.name = model.name;
  row.description = model.description;
  row.labels_json = LabelsText(model.labels);
  row.metadata_json = model.metadata.dump();
  row.owner = caller.user;
  row.created_ms = row.updated_ms = absl::ToUnixMillis(clock_.Now());
  COHORT_ASSIGN_OR_RETURN(row.id, db_.InsertModel(row));
  return ToWire(row);
}

absl::StatusOr<wire::ModelList> Registry::List() {
  COHORT_ASSIGN_OR_RETURN(std::vector<ModelRow> rows, db_.ListModels());
  wire::ModelList list;
  list.models.reserve(rows.size());
  for (const ModelRow& row : rows) list.models.push_back(ToWire(row));
  return list;
}

absl::StatusOr<wire::ModelDescription> Registry::Describe(const std::string& name) {
  COHORT_ASSIGN_OR_RETURN(ModelRow row, Find(db_, name));
  COHORT_ASSIGN_OR_RETURN(std::vector<ModelVersionRow> versions, db_.ListModelVersions(row.id));
  wire::ModelDescription d;
  d.model = ToWire(row);
  for (const ModelVersionRow& v : versions) d.versions.push_back(ToWire(v, row.name));
  return d;
}

absl::StatusOr<ModelRow> Registry::ForChange(const Caller& caller, const std::string& name,
                                             const char* verb) {
  COHORT_ASSIGN_OR_RETURN(ModelRow row, Find(db_, name));
  if (caller.admin || caller.user == row.owner) return row;
  return absl::PermissionDeniedError(absl::StrCat("model '", row.name, "' belongs to '", row.owner,
                                                  "': only its owner or an admin may ", verb,
                                                  " it ('", caller.user, "' is neither)"));
}

absl::StatusOr<wire::Model> Registry::Update(const Caller& caller, const std::string& name,
                                             const wire::ModelPatch& patch) {
  COHORT_ASSIGN_OR_RETURN(ModelRow row, ForChange(caller, name, "change"));
  if (patch.name) {
    COHORT_RETURN_IF_ERROR(CheckName(*patch.name));
    row.name = *patch.name;
  }
  if (patch.description) row.description = *patch.description;
  if (patch.labels) {
    COHORT_RETURN_IF_ERROR(CheckLabels("the model", *patch.labels));
    row.labels_json = LabelsText(*patch.labels);
  }
  if (patch.metadata) row.metadata_json = patch.metadata->dump();
  row.updated_ms = absl::ToUnixMillis(clock_.Now());
  COHORT_RETURN_IF_ERROR(db_.UpdateModel(row));
  return ToWire(row);
}

absl::Status Registry::Delete(const Caller& caller, const std::string& name) {
  COHORT_ASSIGN_OR_RETURN(ModelRow row, ForChange(caller, name, "delete"));
  return db_.DeleteModel(row.id);
}

absl::StatusOr<wire::ModelVersion> Registry::RegisterVersion(const Caller& caller,
                                                             const std::string& name,
                                                             const wire::NewModelVersion& version) {
  COHORT_RETURN_IF_ERROR(CheckLabels("the version", version.labels));
  COHORT_ASSIGN_OR_RETURN(ModelRow model, ForChange(caller, name, "register a version of"));
  absl::StatusOr<CheckpointRow> checkpoint = db_.GetCheckpoint(version.checkpoint);
  if (absl::IsNotFound(checkpoint.status())) {
    return absl::NotFoundError(absl::StrCat("no checkpoint ", version.checkpoint,
                                            " (`cohort checkpoint list EXPERIMENT` shows them)"));
  }
  COHORT_RETURN_IF_ERROR(checkpoint.status());
  if (checkpoint->state != wire::CheckpointState::kActive) {
    return absl::FailedPreconditionError(
        absl::StrCat("checkpoint ", version.checkpoint, " is ", wire::Name(checkpoint->state),
                     ": its files are gone, so it cannot be registered"));
  }
  ModelVersionRow row;
  row.model_id = model.id;
  row.checkpoint_id = version.checkpoint;
  row.name = version.name;
  row.comment = version.comment;
  row.notes = version.notes;
  row.labels_json = LabelsText(version.labels);
  row.metadata_json = version.metadata.dump();
  row.registered_by = caller.user;
  row.created_ms = absl::ToUnixMillis(clock_.Now());
  // The read above gives the clear errors; the database checks again in the insert's
  // transaction (a checkpoint the GC claimed meanwhile is refused there: database.h).
  COHORT_ASSIGN_OR_RETURN(ModelVersionRow stored, db_.InsertModelVersion(row));
  return ToWire(stored, model.name);
}

absl::StatusOr<wire::ModelVersion> Registry::GetVersion(const std::string& name, int64_t version) {
  COHORT_ASSIGN_OR_RETURN(ModelRow model, Find(db_, name));
  COHORT_ASSIGN_OR_RETURN(ModelVersionRow row, FindVersion(db_, model, version));
  return ToWire(row, model.name);
}

absl::Status Registry::DeleteVersion(const Caller& caller, const std::string& name,
                                     int64_t version) {
  COHORT_ASSIGN_OR_RETURN(ModelRow model, ForChange(caller, name, "delete a version of"));
  absl::Status deleted = db_.DeleteModelVersion(model.id, version);
  if (absl::IsNotFound(deleted)) {
    return absl::NotFoundError(absl::StrCat("model '", name, "' has no version ", version));
  }
  return deleted;
}

}  // namespace cohort::master::models
