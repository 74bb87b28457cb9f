// SqlDatabase's step timelines (database.h): one row per rank and profiled batch, read by
// batch range for the trace, and each rank's running totals per phase, read for its timings.

#include <vector>

#include "absl/strings/str_cat.h"
#include "cohort/status.h"
#include "master/db/sql_database.h"

namespace cohort::master {

using sql::Query;
using sql::ReadAll;

absl::Status SqlDatabase::InsertStepProfiles(int64_t trial_id,
                                             const std::vector<StepProfileRow>& rows,
                                             const std::vector<StepTimingRow>& timings) {
  if (rows.empty() && timings.empty()) return absl::OkStatus();
  return Transact([&](sql::Connection& c) -> absl::Status {
    Query insert(c, "insert step profile",
                 "INSERT INTO step_profiles (trial_id, rank, batch, time, record_json) "
                 "VALUES (?1, ?2, ?3, ?4, ?5)");
    // Portable SQL: columns of the existing row named by table (PostgreSQL would find a bare
    // `count` ambiguous), CASE for the two-argument MIN/MAX SQLite has and PostgreSQL lacks.
    Query add(c, "add step timings",
              "INSERT INTO step_timings (trial_id, rank, phase, count, total_us, min_us, max_us) "
              "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7) ON CONFLICT (trial_id, rank, phase) DO UPDATE "
              "SET count = step_timings.count + excluded.count, "
              "total_us = step_timings.total_us + excluded.total_us, "
              "min_us = CASE WHEN excluded.min_us < step_timings.min_us THEN excluded.min_us "
              "ELSE step_timings.min_us END, "
              "max_us = CASE WHEN excluded.max_us > step_timings.max_us THEN excluded.max_us "
              "ELSE step_timings.max_us END");
    auto not_found = [&](const Query& s) {
      return s.failure() == sql::Failure::kForeignKeyViolation
                 ? absl::NotFoundError(absl::StrCat("trial ", trial_id, " not found"))
                 : absl::OkStatus();
    };
    for (const StepProfileRow& r : rows) {
      insert.BindInt64(1, trial_id);
      insert.BindInt64(2, r.rank);
      insert.BindInt64(3, r.batch);
      insert.BindDouble(4, r.time);
      insert.BindText(5, r.record_json);
      absl::Status s = insert.Run();
      COHORT_RETURN_IF_ERROR(not_found(insert));
      COHORT_RETURN_IF_ERROR(s);
    }
    for (const StepTimingRow& t : timings) {
      add.BindInt64(1, trial_id);
      add.BindInt64(2, t.rank);
      add.BindText(3, t.phase);
      add.BindInt64(4, t.count);
      add.BindInt64(5, t.total_us);
      add.BindInt64(6, t.min_us);
      add.BindInt64(7, t.max_us);
      absl::Status s = add.Run();
      COHORT_RETURN_IF_ERROR(not_found(add));
      COHORT_RETURN_IF_ERROR(s);
    }
    return absl::OkStatus();
  });
}

absl::StatusOr<int64_t> SqlDatabase::CountStepProfiles(int64_t trial_id) {
  COHORT_ASSIGN_OR_RETURN(Lease c, Connect());
  Query s(*c, "count step profiles", "SELECT COUNT(*) FROM step_profiles WHERE trial_id = ?1");
  s.BindInt64(1, trial_id);
  COHORT_ASSIGN_OR_RETURN(bool has_row, s.Step());
  return has_row ? s.Int64(0) : 0;
}

namespace {

// A row of `SELECT rank, batch, time, record_json FROM step_profiles`.
StepProfileRow StepProfileRowOf(const Query& r) {
  return StepProfileRow{static_cast<int>(r.Int64(0)), r.Int64(1), r.Double(2), r.Text(3)};
}

}  // namespace

absl::StatusOr<std::vector<StepProfileRow>> SqlDatabase::ListStepProfiles(int64_t trial_id,
                                                                          int64_t min_batch,
                                                                          int64_t max_batch,
                                                                          int limit) {
  if (limit < 0) return absl::InvalidArgumentError(absl::StrCat("limit ", limit, " < 0"));
  COHORT_ASSIGN_OR_RETURN(Lease c, Connect());
  Query s(*c, "list step profiles",
          "SELECT rank, batch, time, record_json FROM step_profiles WHERE trial_id = ?1 AND "
          "batch BETWEEN ?2 AND ?3 ORDER BY batch, rank, id LIMIT ?4");
  s.BindInt64(1, trial_id);
  s.BindInt64(2, min_batch);
  s.BindInt64(3, max_batch);
  s.BindInt64(4, limit);
  return ReadAll<StepProfileRow>(s, StepProfileRowOf);
}

absl::StatusOr<std::vector<StepProfileRow>> SqlDatabase::ListRankStepProfiles(int64_t trial_id,
                                                                              int rank,
                                                                              int64_t stride,
                                                                              int limit) {
  if (stride < 1) return absl::InvalidArgumentError(absl::StrCat("stride ", stride, " < 1"));
  if (limit < 0) return absl::InvalidArgumentError(absl::StrCat("limit ", limit, " < 0"));
  COHORT_ASSIGN_OR_RETURN(Lease c, Connect());
  // Along step_profiles_by_batch (trial_id, batch, rank): the trial's index entries are read,
  // the records of the chosen rows only.
  Query s(*c, "list rank step profiles",
          "SELECT rank, batch, time, record_json FROM step_profiles WHERE trial_id = ?1 AND "
          "rank = ?2 AND batch % ?3 = 0 ORDER BY batch, id LIMIT ?4");
  s.BindInt64(1, trial_id);
  s.BindInt64(2, rank);
  s.BindInt64(3, stride);
  s.BindInt64(4, limit);
  return ReadAll<StepProfileRow>(s, StepProfileRowOf);
}

absl::StatusOr<std::vector<StepTimingRow>> SqlDatabase::ListStepTimings(int64_t trial_id) {
  COHORT_ASSIGN_OR_RETURN(Lease c, Connect());
  Query s(*c, "list step timings",
          "SELECT rank, phase, count, total_us, min_us, max_us FROM step_timings "
          "WHERE trial_id = ?1 ORDER BY rank, phase");
  s.BindInt64(1, trial_id);
  return ReadAll<StepTimingRow>(s, [](const Query& r) {
    return StepTimingRow{
        static_cast<int>(r.Int64(0)), r.Text(1), r.Int64(2), r.Int64(3), r.Int64(4), r.Int64(5)};
  });
}

}  // namespace cohort::master
