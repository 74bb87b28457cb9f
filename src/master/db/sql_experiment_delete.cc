// SqlDatabase::DeleteExperimentRows: an experiment's rows deleted in bounded transactions,
// so that deleting a large experiment (millions of log lines and series points) never holds the
// database for long (database.h).
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "cohort/status.h"
#include "master/db/sql_database.h"

namespace cohort::master {

using sql::Query;

namespace {

// The experiment's trials (?1 is the experiment's id).
constexpr const char* kTrialsOf = "(SELECT id FROM trials WHERE experiment_id = ?1)";

// What refers to the experiment's trials, largest first; each entry is a table and the rows of
// it that belong to the experiment. series_points refer to series, which the later entry
// deletes: points first, or they could never be found again.
struct Part {
  const char* table;
  std::string rows;  // a condition on the table's columns
};

const std::vector<Part>& Parts() {
  static const std::vector<Part>* const parts = new std::vector<Part>{
      {"logs", absl::StrCat("trial_id IN ", kTrialsOf)},
      {"series_points",
       absl::StrCat("series_id IN (SELECT id FROM series WHERE trial_id IN ", kTrialsOf, ")")},
      {"metrics", absl::StrCat("trial_id IN ", kTrialsOf)},
      {"step_profiles", absl::StrCat("trial_id IN ", kTrialsOf)},
      {"series", absl::StrCat("trial_id IN ", kTrialsOf)},
      {"step_timings", absl::StrCat("trial_id IN ", kTrialsOf)},
      {"checkpoints", absl::StrCat("trial_id IN ", kTrialsOf)},
      {"log_policy_matches", absl::StrCat("trial_id IN ", kTrialsOf)},
      {"log_stats", absl::StrCat("trial_id IN ", kTrialsOf)},
      {"allocations", absl::StrCat("trial_id IN ", kTrialsOf)},
  };
  return *parts;
}

}  // namespace

absl::StatusOr<int64_t> SqlDatabase::DeleteExperimentRows(int64_t id, int64_t limit) {
  if (limit < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("deleting experiment ", id, "'s rows needs a limit >= 1, got ", limit));
  }
  int64_t deleted = 0;
  absl::Status status = Transact([&](sql::Connection& c) -> absl::Status {
    deleted = 0;  // a transaction run again starts over
    for (const Part& part : Parts()) {
      Query s(c, absl::StrCat("delete an experiment's ", part.table),
              absl::StrCat("DELETE FROM ", part.table, " WHERE ", dialect().row_locator,
                           " IN (SELECT ", dialect().row_locator, " FROM ", part.table, " WHERE ",
                           part.rows, " LIMIT ?2)"));
      s.BindInt64(1, id);
      s.BindInt64(2, limit - deleted);
      COHORT_RETURN_IF_ERROR(s.Run());
      deleted += s.Changes();
      if (deleted >= limit) return absl::OkStatus();  // the rest in the next transaction
    }
    // Nothing refers to the trials any more: they and the experiment go last, together.
    for (const char* sql :
         {"DELETE FROM trials WHERE experiment_id = ?1", "DELETE FROM experiments WHERE id = ?1"}) {
      Query s(c, "delete an experiment", sql);
      s.BindInt64(1, id);
      COHORT_RETURN_IF_ERROR(s.Run());
      deleted += s.Changes();
    }
    return absl::OkStatus();
  });
  COHORT_RETURN_IF_ERROR(status);
  return deleted;
}

}  // namespace cohort::master
