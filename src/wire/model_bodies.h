#pragma once
// The master's REST bodies of the model registry (docs/design/0023; master/models/), written by
// the master and read by the CLI and the web page, and what they send:
//
//   GET    /api/v1/models                                    ModelList
//   POST   /api/v1/models                   NewModel      -> Model
//   GET    /api/v1/models/{name}                             ModelDescription
//   PATCH  /api/v1/models/{name}            ModelPatch    -> Model    (its owner or an admin)
//   DELETE /api/v1/models/{name}                          -> OkBody   (its owner or an admin)
//   POST   /api/v1/models/{name}/versions   NewModelVersion -> ModelVersion (owner or admin)
//   GET    /api/v1/models/{name}/versions/{n}                ModelVersion
//   DELETE /api/v1/models/{name}/versions/{n}             -> OkBody   (its owner or an admin)
//
// Field names follow Determined's model API where it has one (name, description, labels,
// metadata, num_versions, comment, notes); times are unix milliseconds as elsewhere in
// Cohort's API. Parsers check shapes and bounds, name the body and the field in errors and
// ignore unknown fields; the registry checks the rules (a model's name is a safe name, labels
// are distinct). Thread-compatible value types; the functions are thread-safe.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"

namespace cohort::wire {

using Json = nlohmann::json;

// At most this many labels, each of at most kMaxLabelBytes.
inline constexpr size_t kMaxLabels = 100;
inline constexpr size_t kMaxLabelBytes = 255;
// A model's or a version's metadata (a JSON object) is at most this long as JSON text.
inline constexpr size_t kMaxModelMetadataBytes = 64 << 10;

struct Model {
  int64_t id = 0;
  std::string name;
  std::string description;
  std::vector<std::string> labels;
  Json metadata = Json::object();
  std::string owner;  // the user who created it
  int64_t created_ms = 0;
  int64_t updated_ms = 0;    // the last change to it or its versions
  int64_t num_versions = 0;  // the versions it has now
  int64_t last_version = 0;  // the highest number given; the next version is this + 1
  Json ToJson() const;
};
absl::StatusOr<Model> ParseModel(const Json& json);

// One version of a model: a checkpoint, numbered 1, 2, ... per model (never reused).
struct ModelVersion {
  int64_t id = 0;
  std::string model;  // the model's name
  int64_t version = 0;
  std::string checkpoint;  // the checkpoint's UUID (its storage id)
  std::string name;
  std::string comment;
  std::string notes;
  std::vector<std::string> labels;
  Json metadata = Json::object();
  std::string registered_by;
  int64_t created_ms = 0;
  Json ToJson() const;
};
absl::StatusOr<ModelVersion> ParseModelVersion(const Json& json);

struct ModelList {
  std::vector<Model> models;  // by name
  Json ToJson() const;
};
absl::StatusOr<ModelList> ParseModelList(const Json& json);

struct ModelDescription {
  Model model;
  std::vector<ModelVersion> versions;  // by number
  Json ToJson() const;
};
absl::StatusOr<ModelDescription> ParseModelDescription(const Json& json);

struct NewModel {
  std::string name;
  std::string description;
  std::vector<std::string> labels;
  Json metadata = Json::object();
  Json ToJson() const;
};
absl::StatusOr<NewModel> ParseNewModel(const Json& json);

// A change to a model: the fields present are written, the others kept.
struct ModelPatch {
  std::optional<std::string> name;
  std::optional<std::string> description;
  std::optional<std::vector<std::string>> labels;
  std::optional<Json> metadata;
  Json ToJson() const;
};
absl::StatusOr<ModelPatch> ParseModelPatch(const Json& json);

struct NewModelVersion {
  std::string checkpoint;  // required
  std::string name;
  std::string comment;
  std::string notes;
  std::vector<std::string> labels;
  Json metadata = Json::object();
  Json ToJson() const;
};
absl::StatusOr<NewModelVersion> ParseNewModelVersion(const Json& json);

}  // namespace cohort::wire
