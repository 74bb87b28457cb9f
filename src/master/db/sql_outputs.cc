// SqlDatabase::WriteOutputs: an agent's combined post in one transaction (a few for a big
// one), each part of each item in a savepoint of its own so that one part's failure undoes only
// that part.
#include "cohort/status.h"
#include "master/db/sql_database.h"

namespace cohort::master {

using sql::Query;

namespace {

// Rows per transaction at most (whole items: a bigger item has one of its own). A post of an
// agent with 8 trials holds ~40; one from an agent that was away can hold 100,000 lines, and
// one transaction for all of them would hold the database's mutex for ~0.5 s.
constexpr size_t kRowsPerTransaction = 2048;

size_t RowsOf(const OutputRows& item) {
  return item.lines.size() + item.checkpoints.size() + item.metrics.size() + item.points.size();
}

}  // namespace

std::vector<OutputRowsWritten> SqlDatabase::WriteOutputs(const std::vector<OutputRows>& items) {
  std::vector<OutputRowsWritten> written(items.size());
  for (size_t begin = 0; begin < items.size();) {
    size_t end = begin, rows = 0;
    while (end < items.size() &&
           (end == begin || rows + RowsOf(items[end]) <= kRowsPerTransaction)) {
      rows += RowsOf(items[end++]);
    }
    // The batch's items, each written by `write` (WriteOutputAtOnce or WriteOutputIn), in one
    // transaction.
    using Write =
        absl::Status (SqlDatabase::*)(sql::Connection&, const OutputRows&, OutputRowsWritten&);
    auto write_batch = [&](Write write) {
      return Transact([&](sql::Connection& c) -> absl::Status {
        for (size_t i = begin; i < end; ++i) {
          written[i] = {};  // a transaction run again starts over
          COHORT_RETURN_IF_ERROR((this->*write)(c, items[i], written[i]));
        }
        return absl::OkStatus();
      });
    };
    // Every part at once first, without savepoints (each costs two round trips to PostgreSQL,
    // a handful per item): the common post has nothing wrong. When anything fails the
    // transaction rolled back, and the batch is written again part by part, each in a
    // savepoint, so that a part's failure undoes that part only.
    absl::Status whole = write_batch(&SqlDatabase::WriteOutputAtOnce);
    if (!whole.ok()) whole = write_batch(&SqlDatabase::WriteOutputIn);
    for (size_t i = begin; i < end && !whole.ok(); ++i) {  // rolled back: none of them stored
      written[i] = {};
      if (!items[i].lines.empty()) written[i].logs = whole;
      if (items[i].reports) written[i].reports = whole;
    }
    begin = end;
  }
  return written;
}

absl::Status SqlDatabase::WriteOutputIn(sql::Connection& c, const OutputRows& item,
                                        OutputRowsWritten& written) {
  if (!item.lines.empty()) {
    COHORT_RETURN_IF_ERROR(InSavepoint(
        c,
        [&]() -> absl::Status {
          COHORT_ASSIGN_OR_RETURN(written.last_seq, AppendLogsIn(c, item.trial_id, item.lines));
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
  return InSavepoint(
      c, [&] { return WriteReportsIn(c, item, written); }, &written.reports);
}

absl::Status SqlDatabase::WriteOutputAtOnce(sql::Connection& c, const OutputRows& item,
                                            OutputRowsWritten& written) {
  if (!item.lines.empty()) {
    COHORT_ASSIGN_OR_RETURN(written.last_seq, AppendLogsIn(c, item.trial_id, item.lines));
  }
  return item.reports ? WriteReportsIn(c, item, written) : absl::OkStatus();
}

absl::Status SqlDatabase::WriteReportsIn(sql::Connection& c, const OutputRows& item,
                                         OutputRowsWritten& written) {
  for (const CheckpointRow& checkpoint : item.checkpoints) {
    absl::Status s = InsertCheckpointIn(c, checkpoint);
    if (!s.ok() && !absl::IsAlreadyExists(s)) return s;  // a report sent again
  }
  COHORT_RETURN_IF_ERROR(InsertMetricsIn(c, item.metrics));
  COHORT_RETURN_IF_ERROR(InsertPointsIn(c, item.trial_id, item.points));
  // Last: the trial's row stays locked (PostgreSQL) for the shortest time before the commit.
  COHORT_ASSIGN_OR_RETURN(written.trial, UpdateTrialReportIn(c, item.trial_id, item.trial));
  return absl::OkStatus();
}

absl::Status SqlDatabase::InSavepoint(sql::Connection& c, absl::FunctionRef<absl::Status()> body,
                                      absl::Status* part) {
  COHORT_RETURN_IF_ERROR(Query(c, "open a savepoint", "SAVEPOINT part").Run());
  *part = body();
  if (part->ok()) {
    return Query(c, "release a savepoint", "RELEASE part").Run();
  }
  // Undo this part only; if even that fails, the transaction is not to be trusted.
  COHORT_RETURN_IF_ERROR(Query(c, "roll back to a savepoint", "ROLLBACK TO part").Run());
  return Query(c, "release a savepoint", "RELEASE part").Run();
}

}  // namespace cohort::master
