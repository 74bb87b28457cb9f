// SqlDatabase's model registry (database.h: ModelRow, ModelVersionRow; docs/design/0023) and
// the hold it puts on checkpoints: a checkpoint a version names is never marked DELETED, and
// its experiment never moves to DELETING (MarkCheckpointDeleted, SetExperimentState).

#include <algorithm>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "cohort/status.h"
#include "master/db/sql_database.h"
#include "wire/states.h"

namespace cohort::master {
namespace {

using sql::Query;
using sql::ReadAll;

constexpr absl::string_view kModelColumns =
    "id, name, description, labels_json, metadata_json, owner, created_ms, updated_ms, "
    "last_version, (SELECT COUNT(*) FROM model_versions v WHERE v.model_id = models.id)";

ModelRow ReadModel(const Query& s) {
  return ModelRow{s.Int64(0), s.Text(1),  s.Text(2),  s.Text(3),  s.Text(4),
                  s.Text(5),  s.Int64(6), s.Int64(7), s.Int64(8), s.Int64(9)};
}

constexpr absl::string_view kVersionColumns =
    "id, model_id, version, checkpoint_id, name, comment, notes, labels_json, metadata_json, "
    "registered_by, created_ms";

ModelVersionRow ReadVersion(const Query& s) {
  return ModelVersionRow{s.Int64(0), s.Int64(1), s.Int64(2), s.Text(3), s.Text(4),  s.Text(5),
                         s.Text(6),  s.Text(7),  s.Text(8),  s.Text(9), s.Int64(10)};
}

absl::Status ModelNameTaken(const std::string& name) {
  return absl::AlreadyExistsError(absl::StrCat("a model named '", name, "' already exists"));
}

// The experiment of checkpoint `id` and its state, its row locked until the commit (a write:
// PostgreSQL's row lock, SQLite's database lock). The experiment's row is the one lock of its
// checkpoints' fate: registering a version, the GC marking a checkpoint DELETED and the
// experiment's deletion each take it before they read what the others write, so whichever runs
// second sees the first's outcome (each statement after the lock reads anew). NotFound naming
// the checkpoint.
absl::StatusOr<std::pair<int64_t, std::string>> LockExperimentOf(sql::Connection& c,
                                                                 const std::string& id) {
  Query s(c, "lock a checkpoint's experiment",
          "UPDATE experiments SET state = state WHERE id = (SELECT t.experiment_id FROM "
          "checkpoints c JOIN trials t ON t.id = c.trial_id WHERE c.storage_id = ?1) "
          "RETURNING id, state");
  s.BindText(1, id);
  COHORT_ASSIGN_OR_RETURN(bool has_row, s.Step());
  if (!has_row) return absl::NotFoundError(absl::StrCat("checkpoint ", id, " not found"));
  std::pair<int64_t, std::string> experiment{s.Int64(0), s.Text(1)};
  s.Reset();
  return experiment;
}

// "checkpoint C is version 3 of model 'resnet'; ..." for the versions `where` selects (model
// name, version, checkpoint; at most 5 named); empty when none.
absl::StatusOr<std::string> Holders(sql::Connection& c, const std::string& where,
                                    const std::function<void(Query&)>& bind) {
  Query s(c, "versions holding checkpoints",
          absl::StrCat("SELECT m.name, v.version, v.checkpoint_id FROM model_versions v JOIN "
                       "models m ON m.id = v.model_id ",
                       where, " ORDER BY m.name, v.version LIMIT 6"));
  bind(s);
  std::string text;
  int n = 0;
  while (true) {
    COHORT_ASSIGN_OR_RETURN(bool has_row, s.Step());
    if (!has_row) break;
    if (++n > 5) {
      absl::StrAppend(&text, "; and more (`cohort model list`)");
      break;
    }
    absl::StrAppend(&text, text.empty() ? "" : "; ", "checkpoint ", s.Text(2), " is version ",
                    s.Int64(1), " of model '", s.Text(0), "'");
  }
  s.Reset();
  return text;
}

// Checks, after LockExperimentOf, that checkpoint `id` is ACTIVE and its experiment is not being
// deleted. FailedPrecondition otherwise.
absl::Status CheckRegistrable(sql::Connection& c, const std::string& id,
                              const std::pair<int64_t, std::string>& experiment) {
  if (experiment.second == wire::Name(wire::ExperimentState::kDeleting)) {
    return absl::FailedPreconditionError(absl::StrCat("checkpoint ", id, " belongs to experiment ",
                                                      experiment.first,
                                                      ", which is being deleted"));
  }
  Query s(c, "read a version's checkpoint", "SELECT state FROM checkpoints WHERE storage_id = ?1");
  s.BindText(1, id);
  COHORT_ASSIGN_OR_RETURN(bool has_row, s.Step());
  const std::string state = has_row ? s.Text(0) : "gone";
  s.Reset();
  if (state != wire::Name(wire::CheckpointState::kActive)) {
    return absl::FailedPreconditionError(
        absl::StrCat("checkpoint ", id, " is ", state, ": its files are gone"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<int64_t> SqlDatabase::InsertModel(const ModelRow& row) {
  COHORT_ASSIGN_OR_RETURN(Lease c, Connect());
  Query s(*c, "insert model",
          "INSERT INTO models (name, description, labels_json, metadata_json, owner, created_ms, "
          "updated_ms, last_version) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8) RETURNING id");
  s.BindText(1, row.name);
  s.BindText(2, row.description);
  s.BindText(3, row.labels_json);
  s.BindText(4, row.metadata_json);
  s.BindText(5, row.owner);
  s.BindInt64(6, row.created_ms);
  s.BindInt64(7, row.updated_ms);
  s.BindInt64(8, row.last_version);
  absl::StatusOr<int64_t> id = s.RunReturningInt64();
  if (s.failure() == sql::Failure::kUniqueViolation) return ModelNameTaken(row.name);
  return id;
}

absl::StatusOr<ModelRow> SqlDatabase::GetModel(const std::string& name) {
  COHORT_ASSIGN_OR_RETURN(Lease c, Connect());
  Query s(*c, "get model", absl::StrCat("SELECT ", kModelColumns, " FROM models WHERE name = ?1"));
  s.BindText(1, name);
  COHORT_ASSIGN_OR_RETURN(bool has_row, s.Step());
  if (!has_row) return absl::NotFoundError(absl::StrCat("no model named '", name, "'"));
  ModelRow row = ReadModel(s);
  s.Reset();
  return row;
}

absl::StatusOr<std::vector<ModelRow>> SqlDatabase::ListModels() {
  COHORT_ASSIGN_OR_RETURN(Lease c, Connect());
  Query s(*c, "list models", absl::StrCat("SELECT ", kModelColumns, " FROM models ORDER BY name"));
  return ReadAll<ModelRow>(s, ReadModel);
}

absl::Status SqlDatabase::UpdateModel(const ModelRow& row) {
  COHORT_ASSIGN_OR_RETURN(Lease c, Connect());
  Query s(*c, "update model",
          "UPDATE models SET name = ?2, description = ?3, labels_json = ?4, metadata_json = ?5, "
          "updated_ms = ?6 WHERE id = ?1");
  s.BindInt64(1, row.id);
  s.BindText(2, row.name);
  s.BindText(3, row.description);
  s.BindText(4, row.labels_json);
  s.BindText(5, row.metadata_json);
  s.BindInt64(6, row.updated_ms);
  absl::Status status = s.RunOnRow(absl::StrCat("model ", row.id));
  if (s.failure() == sql::Failure::kUniqueViolation) return ModelNameTaken(row.name);
  return status;
}

absl::Status SqlDatabase::DeleteModel(int64_t id) {
  return Transact([&](sql::Connection& c) -> absl::Status {
    Query versions(c, "delete a model's versions",
                   "DELETE FROM model_versions WHERE model_id = ?1");
    versions.BindInt64(1, id);
    COHORT_RETURN_IF_ERROR(versions.Run());
    Query model(c, "delete model", "DELETE FROM models WHERE id = ?1");
    model.BindInt64(1, id);
    return model.RunOnRow(absl::StrCat("model ", id));
  });
}

absl::StatusOr<ModelVersionRow> SqlDatabase::InsertModelVersion(const ModelVersionRow& row) {
  ModelVersionRow stored = row;
  COHORT_RETURN_IF_ERROR(Transact([&](sql::Connection& c) -> absl::Status {
    COHORT_ASSIGN_OR_RETURN(auto experiment, LockExperimentOf(c, row.checkpoint_id));
    COHORT_RETURN_IF_ERROR(CheckRegistrable(c, row.checkpoint_id, experiment));
    // The model's row is locked until the commit: two registrations number one after the other.
    Query next(c, "number a model version",
               "UPDATE models SET last_version = last_version + 1, updated_ms = ?2 WHERE id = ?1 "
               "RETURNING last_version");
    next.BindInt64(1, row.model_id);
    next.BindInt64(2, row.created_ms);
    COHORT_ASSIGN_OR_RETURN(bool has_row, next.Step());
    if (!has_row) return absl::NotFoundError(absl::StrCat("model ", row.model_id, " not found"));
    stored.version = next.Int64(0);
    next.Reset();
    Query s(c, "insert model version",
            "INSERT INTO model_versions (model_id, version, checkpoint_id, name, comment, notes, "
            "labels_json, metadata_json, registered_by, created_ms) VALUES (?1, ?2, ?3, ?4, ?5, "
            "?6, ?7, ?8, ?9, ?10) RETURNING id");
    s.BindInt64(1, stored.model_id);
    s.BindInt64(2, stored.version);
    s.BindText(3, stored.checkpoint_id);
    s.BindText(4, stored.name);
    s.BindText(5, stored.comment);
    s.BindText(6, stored.notes);
    s.BindText(7, stored.labels_json);
    s.BindText(8, stored.metadata_json);
    s.BindText(9, stored.registered_by);
    s.BindInt64(10, stored.created_ms);
    COHORT_ASSIGN_OR_RETURN(stored.id, s.RunReturningInt64());
    return absl::OkStatus();
  }));
  return stored;
}

absl::StatusOr<std::vector<ModelVersionRow>> SqlDatabase::ListModelVersions(int64_t model_id) {
  COHORT_ASSIGN_OR_RETURN(Lease c, Connect());
  Query s(*c, "list model versions",
          absl::StrCat("SELECT ", kVersionColumns,
                       " FROM model_versions WHERE model_id = ?1 ORDER BY version"));
  s.BindInt64(1, model_id);
  return ReadAll<ModelVersionRow>(s, ReadVersion);
}

absl::Status SqlDatabase::DeleteModelVersion(int64_t model_id, int64_t version) {
  COHORT_ASSIGN_OR_RETURN(Lease c, Connect());
  Query s(*c, "delete model version",
          "DELETE FROM model_versions WHERE model_id = ?1 AND version = ?2");
  s.BindInt64(1, model_id);
  s.BindInt64(2, version);
  return s.RunOnRow(absl::StrCat("version ", version, " of model ", model_id));
}

absl::StatusOr<std::vector<ModelVersionRow>> SqlDatabase::ListVersionsOfCheckpoints(
    const std::vector<std::string>& checkpoint_ids) {
  const std::vector<std::string> ids = SortedDistinct(checkpoint_ids);
  std::vector<ModelVersionRow> rows;
  if (ids.empty()) return rows;
  COHORT_ASSIGN_OR_RETURN(Lease c, Connect());
  for (size_t first = 0; first < ids.size(); first += sql::kMaxInList) {
    const size_t n = std::min(sql::kMaxInList, ids.size() - first);
    Query s(
        *c, "list versions of checkpoints",
        absl::StrCat("SELECT ", kVersionColumns, " FROM model_versions WHERE checkpoint_id IN (",
                     sql::Placeholders(1, n), ")"));
    for (size_t i = 0; i < n; ++i) s.BindText(static_cast<int>(i + 1), ids[first + i]);
    COHORT_ASSIGN_OR_RETURN(std::vector<ModelVersionRow> some,
                            ReadAll<ModelVersionRow>(s, ReadVersion));
    rows.insert(rows.end(), some.begin(), some.end());
  }
  // Each version names one checkpoint: distinct ids find each once, in chunks; by id.
  std::sort(rows.begin(), rows.end(),
            [](const ModelVersionRow& a, const ModelVersionRow& b) { return a.id < b.id; });
  return rows;
}

absl::Status SqlDatabase::MarkCheckpointDeleted(const std::string& storage_id) {
  return Transact([&](sql::Connection& c) -> absl::Status {
    COHORT_RETURN_IF_ERROR(LockExperimentOf(c, storage_id).status());
    COHORT_ASSIGN_OR_RETURN(
        std::string held,
        Holders(c, "WHERE v.checkpoint_id = ?1", [&](Query& q) { q.BindText(1, storage_id); }));
    if (!held.empty()) return absl::FailedPreconditionError(held);
    Query s(c, "mark checkpoint deleted",
            "UPDATE checkpoints SET state = ?2 WHERE storage_id = ?1");
    s.BindText(1, storage_id);
    s.BindText(2, wire::Name(wire::CheckpointState::kDeleted));
    return s.RunOnRow(absl::StrCat("checkpoint ", storage_id));
  });
}

absl::Status SqlDatabase::SetExperimentState(int64_t id, wire::ExperimentState state,
                                             const std::vector<DeliveryRow>& deliveries) {
  return Transact([&](sql::Connection& c) -> absl::Status {
    Query s(c, "set experiment state", "UPDATE experiments SET state = ?2 WHERE id = ?1");
    s.BindInt64(1, id);
    s.BindText(2, wire::Name(state));
    COHORT_RETURN_IF_ERROR(s.RunOnRow(absl::StrCat("experiment ", id)));
    COHORT_RETURN_IF_ERROR(InsertDeliveriesIn(c, deliveries));
    if (state != wire::ExperimentState::kDeleting) return absl::OkStatus();
    // Its row is locked now: a registration that came first is seen here.
    COHORT_ASSIGN_OR_RETURN(
        std::string held,
        Holders(c,
                "JOIN checkpoints c ON c.storage_id = v.checkpoint_id JOIN trials t ON t.id = "
                "c.trial_id WHERE t.experiment_id = ?1",
                [&](Query& q) { q.BindInt64(1, id); }));
    if (held.empty()) return absl::OkStatus();
    return absl::FailedPreconditionError(
        absl::StrCat("the model registry holds its checkpoints: ", held));
  });
}

}  // namespace cohort::master
