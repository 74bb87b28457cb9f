#include "wire/model_bodies.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "cohort/status.h"
#include "wire/internal/field_reader.h"
#include "wire/limits.h"

namespace cohort::wire {
namespace {

using internal::FieldReader;

constexpr size_t kMaxDescriptionBytes = 16 << 10;
constexpr size_t kMaxNotesBytes = 64 << 10;
constexpr size_t kMaxModels = 1 << 20;
constexpr size_t kMaxVersions = 1 << 20;

absl::StatusOr<std::string> ParseLabel(const Json& json, const std::string& context) {
  if (!json.is_string() || json.get_ref<const std::string&>().empty() ||
      json.get_ref<const std::string&>().size() > kMaxLabelBytes) {
    return absl::InvalidArgumentError(absl::StrCat(context, ": must be a string of 1 to ",
                                                   kMaxLabelBytes, " bytes, got ",
                                                   internal::Shown(json)));
  }
  return json.get<std::string>();
}

void ReadLabels(FieldReader& r, std::vector<std::string>* out) {
  r.Array("labels", out, kMaxLabels, FieldReader::kOptional, ParseLabel);
}

void ReadMetadata(FieldReader& r, Json* out) {
  r.Object("metadata", out, FieldReader::kOptional);
  if (r.ok() && out->dump().size() > kMaxModelMetadataBytes) {
    r.Fail("metadata",
           absl::StrCat("must be at most ", kMaxModelMetadataBytes, " bytes as JSON text"));
  }
}

absl::StatusOr<Model> ParseModelAt(const Json& json, const std::string& context) {
  FieldReader r(json, context);
  Model m;
  r.Required("id", &m.id, {.min = 1});
  r.Required("name", &m.name, kMaxSafeNameBytes);
  r.Optional("description", &m.description, kMaxDescriptionBytes);
  ReadLabels(r, &m.labels);
  ReadMetadata(r, &m.metadata);
  r.Optional("owner", &m.owner, kMaxSafeNameBytes);
  r.Required("created_ms", &m.created_ms, {.min = 0});
  r.Required("updated_ms", &m.updated_ms, {.min = 0});
  r.Required("num_versions", &m.num_versions, {.min = 0});
  r.Required("last_version", &m.last_version, {.min = 0});
  COHORT_RETURN_IF_ERROR(r.status());
  return m;
}

absl::StatusOr<ModelVersion> ParseVersionAt(const Json& json, const std::string& context) {
  FieldReader r(json, context);
  ModelVersion v;
  r.Required("id", &v.id, {.min = 1});
  r.Required("model", &v.model, kMaxSafeNameBytes);
  r.Required("version", &v.version, {.min = 1});
  r.Required("checkpoint", &v.checkpoint, kMaxSafeNameBytes);
  r.Optional("name", &v.name, kMaxSafeNameBytes * 2);
  r.Optional("comment", &v.comment, kMaxDescriptionBytes);
  r.Optional("notes", &v.notes, kMaxNotesBytes);
  ReadLabels(r, &v.labels);
  ReadMetadata(r, &v.metadata);
  r.Optional("registered_by", &v.registered_by, kMaxSafeNameBytes);
  r.Required("created_ms", &v.created_ms, {.min = 0});
  COHORT_RETURN_IF_ERROR(r.status());
  return v;
}

}  // namespace

Json Model::ToJson() const {
  return {{"id", id},
          {"name", name},
          {"description", description},
          {"labels", labels},
          {"metadata", metadata},
          {"owner", owner},
          {"created_ms", created_ms},
          {"updated_ms", updated_ms},
          {"num_versions", num_versions},
          {"last_version", last_version}};
}

absl::StatusOr<Model> ParseModel(const Json& json) { return ParseModelAt(json, "model"); }

Json ModelVersion::ToJson() const {
  return {{"id", id},
          {"model", model},
          {"version", version},
          {"checkpoint", checkpoint},
          {"name", name},
          {"comment", comment},
          {"notes", notes},
          {"labels", labels},
          {"metadata", metadata},
          {"registered_by", registered_by},
          {"created_ms", created_ms}};
}

absl::StatusOr<ModelVersion> ParseModelVersion(const Json& json) {
  return ParseVersionAt(json, "model version");
}

Json ModelList::ToJson() const {
  Json list = Json::array();
  for (const Model& m : models) list.push_back(m.ToJson());
  return {{"models", std::move(list)}};
}

absl::StatusOr<ModelList> ParseModelList(const Json& json) {
  FieldReader r(json, "model list");
  ModelList list;
  r.Array("models", &list.models, kMaxModels, FieldReader::kRequired, ParseModelAt);
  COHORT_RETURN_IF_ERROR(r.status());
  return list;
}

Json ModelDescription::ToJson() const {
  Json list = Json::array();
  for (const ModelVersion& v : versions) list.push_back(v.ToJson());
  return {{"model", model.ToJson()}, {"versions", std::move(list)}};
}

absl::StatusOr<ModelDescription> ParseModelDescription(const Json& json) {
  FieldReader r(json, "model description");
  ModelDescription d;
  Json model;
  r.Object("model", &model, FieldReader::kRequired);
  COHORT_RETURN_IF_ERROR(r.status());
  COHORT_ASSIGN_OR_RETURN(d.model, ParseModelAt(model, "model description: \"model\""));
  r.Array("versions", &d.versions, kMaxVersions, FieldReader::kRequired, ParseVersionAt);
  COHORT_RETURN_IF_ERROR(r.status());
  return d;
}

Json NewModel::ToJson() const {
  return {{"name", name}, {"description", description}, {"labels", labels}, {"metadata", metadata}};
}

absl::StatusOr<NewModel> ParseNewModel(const Json& json) {
  FieldReader r(json, "new model");
  NewModel m;
  r.Required("name", &m.name, kMaxSafeNameBytes);
  r.Optional("description", &m.description, kMaxDescriptionBytes);
  ReadLabels(r, &m.labels);
  ReadMetadata(r, &m.metadata);
  COHORT_RETURN_IF_ERROR(r.status());
  return m;
}

Json ModelPatch::ToJson() const {
  Json json = Json::object();
  if (name) json["name"] = *name;
  if (description) json["description"] = *description;
  if (labels) json["labels"] = *labels;
  if (metadata) json["metadata"] = *metadata;
  return json;
}

absl::StatusOr<ModelPatch> ParseModelPatch(const Json& json) {
  FieldReader r(json, "model change");
  ModelPatch p;
  if (r.Has("name")) r.Optional("name", &p.name.emplace(), kMaxSafeNameBytes);
  if (r.Has("description")) {
    r.Optional("description", &p.description.emplace(), kMaxDescriptionBytes);
  }
  if (r.Has("labels")) ReadLabels(r, &p.labels.emplace());
  if (r.Has("metadata")) ReadMetadata(r, &p.metadata.emplace());
  COHORT_RETURN_IF_ERROR(r.status());
  return p;
}

Json NewModelVersion::ToJson() const {
  return {{"checkpoint", checkpoint}, {"name", name},     {"comment", comment},
          {"notes", notes},           {"labels", labels}, {"metadata", metadata}};
}

absl::StatusOr<NewModelVersion> ParseNewModelVersion(const Json& json) {
  FieldReader r(json, "new model version");
  NewModelVersion v;
  r.Required("checkpoint", &v.checkpoint, kMaxSafeNameBytes);
  r.Optional("name", &v.name, kMaxSafeNameBytes * 2);
  r.Optional("comment", &v.comment, kMaxDescriptionBytes);
  r.Optional("notes", &v.notes, kMaxNotesBytes);
  ReadLabels(r, &v.labels);
  ReadMetadata(r, &v.metadata);
  COHORT_RETURN_IF_ERROR(r.status());
  return v;
}

}  // namespace cohort::wire
