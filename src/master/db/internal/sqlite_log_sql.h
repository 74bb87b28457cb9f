#pragma once
// The SQL of the database's log reads (sql_logs.cc), shared with its tests, which check the
// plan SQLite makes for them (sqlite_logs_test.cc: the tail of a trial's log is read from the
// index, not the whole log). SQL both backends take: a parameter that may be NULL is CAST where
// it is tested, since PostgreSQL cannot tell the type of a bare `?3 IS NULL`. Thread-safe
// (constants).

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

}  // namespace cohort::master::internal
