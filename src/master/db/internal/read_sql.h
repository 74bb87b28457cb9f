#pragma once
// The SQL of the database's reads that must walk an index, not a table: the log reads
// (sql_logs.cc) and the time-series range (sql_series.cc), shared with the tests that check the
// plan each backend makes for them (sqlite_logs_test.cc, postgres_database_test.cc: the tail of
// a trial's log is read from the index, not the whole log). SQL both backends take: a
// parameter that may be NULL is CAST where it is tested, since PostgreSQL cannot tell the type
// of a bare `?3 IS NULL`. Thread-safe (constants and pure functions).

#include <string>

#include "absl/strings/str_cat.h"

namespace cohort::master::internal {

// ?1 trial, ?2 after seq, ?3 rank or NULL, ?4 limit: a range of logs_by_trial (trial_id, seq).
inline constexpr char kListLogsSql[] =
    "SELECT seq, trial_id, rank, line, time_ms FROM logs "
    "WHERE trial_id = ?1 AND seq > ?2 AND (CAST(?3 AS INTEGER) IS NULL OR rank = ?3) "
    "ORDER BY seq LIMIT ?4";

// ?1 trial, ?2 limit, ?3 rank or NULL: backwards along logs_by_trial (trial_id, seq), `limit`
// index steps however long the trial's log is (more when lines of other ranks are passed over).
inline constexpr char kListLastLogsSql[] =
    "SELECT seq, trial_id, rank, line, time_ms FROM logs WHERE trial_id = ?1 "
    "AND (CAST(?3 AS INTEGER) IS NULL OR rank = ?3) ORDER BY seq DESC LIMIT ?2";

// The points of one series within a query's ranges: ?1 series, ?2..?3 batches, ?4..?5 times,
// ?6 the id to follow after; ReadPointsSql reads them in batch order (SQLite: along
// series_points_by_batch; PostgreSQL: from that index alone).
inline constexpr char kPointsInRange[] =
    "series_id = ?1 AND batch BETWEEN ?2 AND ?3 AND time BETWEEN ?4 AND ?5 AND id > ?6";
inline std::string ReadPointsSql() {
  return absl::StrCat("SELECT id, batch, time, value FROM series_points WHERE ", kPointsInRange,
                      " ORDER BY batch, id");
}

}  // namespace cohort::master::internal
