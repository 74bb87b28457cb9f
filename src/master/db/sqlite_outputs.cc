// SqliteDatabase::WriteOutputs: an agent's combined post in one transaction, each part of each
// item in a savepoint of its own so that one part's failure undoes only that part.
#include <sqlite3.h>

#include "cohort/status.h"
#include "master/db/internal/sqlite_statement.h"
#include "master/db/sqlite_database.h"

namespace cohort::master {

using internal::Statement;

std::vector<OutputRowsWritten> SqliteDatabase::WriteOutputs(const std::vector<OutputRows>& items) {
  std::vector<OutputRowsWritten> written(items.size());
  const absl::Status whole = WriteTransaction([&]() -> absl::Status {
    for (size_t i = 0; i < items.size(); ++i) {
      COHORT_RETURN_IF_ERROR(WriteOutputLocked(items[i], written[i]));
    }
    return absl::OkStatus();
  });
  if (whole.ok()) return written;
  // Rolled back: nothing of any item is stored.
  for (size_t i = 0; i < items.size(); ++i) {
    written[i] = {};
    if (!items[i].lines.empty()) written[i].logs = whole;
    if (items[i].reports) written[i].reports = whole;
  }
  return written;
}

absl::Status SqliteDatabase::WriteOutputLocked(const OutputRows& item, OutputRowsWritten& written) {
  if (!item.lines.empty()) {
    COHORT_RETURN_IF_ERROR(InSavepointLocked(
        [&]() -> absl::Status {
          COHORT_ASSIGN_OR_RETURN(written.last_seq, AppendLogsLocked(item.trial_id, item.lines));
          return absl::OkStatus();
        },
        &written.logs));
    if (!written.logs.ok()) {
      if (item.reports) {
        written.reports = absl::AbortedError("not stored: the log lines before it were not");
      }
      return absl::OkStatus();
    }
  }
  if (!item.reports) return absl::OkStatus();
  return InSavepointLocked(
      [&]() -> absl::Status {
        for (const CheckpointRow& checkpoint : item.checkpoints) {
          absl::Status s = InsertCheckpointLocked(checkpoint);
          if (!s.ok() && !absl::IsAlreadyExists(s)) return s;  // a report sent again
        }
        COHORT_RETURN_IF_ERROR(InsertMetricsLocked(item.metrics));
        return InsertPointsLocked(item.trial_id, item.points);
      },
      &written.reports);
}

absl::Status SqliteDatabase::InSavepointLocked(absl::FunctionRef<absl::Status()> body,
                                               absl::Status* part) {
  COHORT_RETURN_IF_ERROR(
      Statement(*statements_, path_, "open a savepoint", "SAVEPOINT part").Run());
  *part = body();
  if (part->ok()) {
    return Statement(*statements_, path_, "release a savepoint", "RELEASE part").Run();
  }
  // Undo this part only; if even that fails, the transaction is not to be trusted.
  COHORT_RETURN_IF_ERROR(
      Statement(*statements_, path_, "roll back to a savepoint", "ROLLBACK TO part").Run());
  return Statement(*statements_, path_, "release a savepoint", "RELEASE part").Run();
}

}  // namespace cohort::master
