#pragma once
// models::Registry: the model registry (docs/design/0023-after-training.md). A model is a name
// for what a team ships; its versions 1, 2, ... each point at a checkpoint. The registry owns
// the rules: a model's name is a safe name (wire/limits.h: it is the key in routes and on the
// command line) and unique; labels are distinct; the owner or an admin changes, registers
// versions and deletes, everybody logged in reads (the rule experiments follow); a version's
// checkpoint exists and is ACTIVE when registered. The rows are the database's (database.h:
// ModelRow, ModelVersionRow), which numbers versions in the insert's transaction and never
// gives a number twice.
//
// Thread-safe: it keeps no state beyond the rows (each Database call is atomic) and takes no
// lock; the master's lock is never needed to call it. Two changes racing on one model resolve
// in the database (a name taken is AlreadyExists; concurrent registrations get distinct
// numbers).
//
// Example:
//   models::Registry registry(db, clock);
//   COHORT_ASSIGN_OR_RETURN(wire::Model m, registry.Create({"alice"}, {.name = "resnet"}));
//   COHORT_ASSIGN_OR_RETURN(wire::ModelVersion v,
//                           registry.RegisterVersion({"alice"}, "resnet", {.checkpoint = id}));

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/clock.h"
#include "master/db/database.h"
#include "wire/model_bodies.h"

namespace cohort::master::models {

// Who asks: a logged-in user (the master's Actor, without depending on the master).
struct Caller {
  std::string user;
  bool admin = false;
};

class Registry {
 public:
  Registry(Database& db, const Clock& clock) : db_(db), clock_(clock) {}

  // A new model owned by `caller`. InvalidArgument naming the field for a name that is not a
  // safe name or repeated labels; AlreadyExists for a name taken.
  absl::StatusOr<wire::Model> Create(const Caller& caller, const wire::NewModel& model);
  absl::StatusOr<wire::ModelList> List();  // by name
  // The model and its versions by number; NotFound naming it (and how to list them).
  absl::StatusOr<wire::ModelDescription> Describe(const std::string& name);
  // Writes the fields `patch` has. NotFound; PermissionDenied naming the owner unless the
  // caller owns it or is an admin; InvalidArgument and AlreadyExists as for Create.
  absl::StatusOr<wire::Model> Update(const Caller& caller, const std::string& name,
                                     const wire::ModelPatch& patch);
  // The model and all its versions (their checkpoints are then the GC's again). NotFound,
  // PermissionDenied.
  absl::Status Delete(const Caller& caller, const std::string& name);

  // Registers `version.checkpoint` as the model's next version. NotFound naming the model or
  // the checkpoint; FailedPrecondition for a checkpoint whose files the GC deleted;
  // PermissionDenied; InvalidArgument for repeated labels.
  absl::StatusOr<wire::ModelVersion> RegisterVersion(const Caller& caller, const std::string& name,
                                                     const wire::NewModelVersion& version);
  // NotFound naming the model or the version.
  absl::StatusOr<wire::ModelVersion> GetVersion(const std::string& name, int64_t version);
  absl::Status DeleteVersion(const Caller& caller, const std::string& name, int64_t version);

 private:
  // The model named `name`, when `caller` may change it; `verb` names the change in the error.
  absl::StatusOr<ModelRow> ForChange(const Caller& caller, const std::string& name,
                                     const char* verb);

  Database& db_;
  const Clock& clock_;
};

}  // namespace cohort::master::models
