// SqlDatabase's trial logs (database.h): appending, reading and dropping lines. Each
// trial's line count, text bytes and drop marker are kept in log_stats by the same
// transactions that change its lines, so retention never counts a log.

#include <algorithm>
#include <map>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "cohort/status.h"
#include "common/utf8_text.h"
#include "master/db/internal/read_sql.h"
#include "master/db/sql_database.h"

namespace cohort::master {
namespace {

using sql::Query;
using sql::ReadAll;

LogRow ReadLog(const Query& r) {
  return LogRow{r.Int64(0), r.Int64(1), r.Int(2), r.Text(3), r.Int64(4)};
}

// Lines per INSERT at most: one round trip to PostgreSQL for a post's lines, not one per line.
constexpr size_t kLinesPerInsert = sql::kRowsPerInsert;

// What adds counted lines to log_stats, in CountLinesIn's INSERT and in the WITH clause of
// AppendLinesIn's on PostgreSQL (which counts from the rows its INSERT returned).
constexpr absl::string_view kUpsertCounts =
    "ON CONFLICT (trial_id) DO UPDATE SET lines = log_stats.lines + excluded.lines, "
    "bytes = log_stats.bytes + excluded.bytes";
const std::string& CountAddedSql() {
  static const std::string* const sql = new std::string(absl::StrCat(
      "counted AS (INSERT INTO log_stats (trial_id, lines, bytes, dropped, marker_seq) "
      "SELECT trial_id, COUNT(*), SUM(bytes), 0, 0 FROM added GROUP BY trial_id ",
      kUpsertCounts, ")"));
  return *sql;
}

// The VALUES of `rows` log lines (?1 the time; trial, rank, line of each row from ?2 on), made
// once per process for each count rather than once per post.
const std::string& LinesValuesSql(size_t rows) {
  static const std::vector<std::string>* const texts = [] {
    auto* made = new std::vector<std::string>(kLinesPerInsert + 1);
    for (size_t n = 1; n <= kLinesPerInsert; ++n) {
      std::string& sql = (*made)[n];
      sql = absl::StrCat("INSERT INTO logs (trial_id, rank, line, time_ms) VALUES ",
                         sql::ValuesRows(n, 3, 2, ", ?1"));
    }
    return made;
  }();
  return (*texts)[rows];
}

}  // namespace

// The batch is one transaction of up to kLinesPerInsert lines per statement: the commit (a WAL
// append) is paid once per batch, not once per line. On PostgreSQL a batch that fits one
// statement needs no transaction (AppendLinesIn counts in the same statement).
absl::StatusOr<int64_t> SqlDatabase::AppendLogs(
    int64_t trial_id, const std::vector<std::pair<int, std::string>>& rank_and_line) {
  std::vector<LineToAppend> rows;
  for (const auto& [rank, line] : rank_and_line) rows.push_back({trial_id, rank, &line});
  return AppendLines(rows);
}

absl::Status SqlDatabase::AppendMasterLines(
    const std::vector<std::pair<int64_t, std::string>>& trial_and_line) {
  std::vector<LineToAppend> rows;
  for (const auto& [trial_id, line] : trial_and_line) rows.push_back({trial_id, -1, &line});
  return AppendLines(rows).status();
}

absl::StatusOr<int64_t> SqlDatabase::AppendLines(const std::vector<LineToAppend>& rows) {
  if (rows.empty()) return 0;
  if (dialect().inserts_in_with && rows.size() <= kLinesPerInsert) {
    COHORT_ASSIGN_OR_RETURN(Lease c, Connect());
    return AppendLinesIn(*c, rows);
  }
  int64_t last_seq = 0;
  COHORT_RETURN_IF_ERROR(Transact([&](sql::Connection& c) -> absl::Status {
    COHORT_ASSIGN_OR_RETURN(last_seq, AppendLinesIn(c, rows));
    return absl::OkStatus();
  }));
  return last_seq;
}

absl::StatusOr<int64_t> SqlDatabase::AppendLogsIn(
    sql::Connection& c, int64_t trial_id,
    const std::vector<std::pair<int, std::string>>& rank_and_line) {
  std::vector<LineToAppend> rows;
  for (const auto& [rank, line] : rank_and_line) rows.push_back({trial_id, rank, &line});
  return AppendLinesIn(c, rows);
}

absl::StatusOr<int64_t> SqlDatabase::AppendLinesIn(sql::Connection& c,
                                                   const std::vector<LineToAppend>& rows) {
  // The wall clock when the master stores the line: within an agent's flush (500 ms) of when it
  // was printed, which is what a log reader's HH:MM:SS needs.
  const int64_t now_ms = absl::ToUnixMillis(absl::Now());
  const bool count_in_statement = dialect().inserts_in_with;
  std::map<int64_t, std::pair<int64_t, int64_t>> added;  // trial -> (lines, bytes), SQLite's
  int64_t last_seq = 0;
  std::string cleaned;  // a line that needed it, cleaned (both drivers copy what they bind)
  for (size_t first = 0; first < rows.size(); first += kLinesPerInsert) {
    const size_t n = std::min(kLinesPerInsert, rows.size() - first);
    // PostgreSQL: the lines, then each trial's count from what was inserted (one row per
    // trial: it refuses an upsert that meets a row twice), in one statement.
    Query s(c, "append log lines",
            count_in_statement
                ? absl::StrCat("WITH added AS (", LinesValuesSql(n), " RETURNING trial_id, seq, ",
                               dialect().line_bytes, " AS bytes), ", CountAddedSql(),
                               " SELECT MAX(seq) FROM added")
                : absl::StrCat(LinesValuesSql(n), " RETURNING seq"));
    s.BindInt64(1, now_ms);
    std::set<int64_t> trials;  // of this statement, to name when one does not exist
    for (size_t r = 0; r < n; ++r) {
      const LineToAppend& row = rows[first + r];
      // A trial's output is whatever bytes it printed: stored as text every backend takes (the
      // agent cleans its lines already; a client posting NULs must not fail the whole batch).
      absl::string_view text = *row.line;
      if (!IsCleanUtf8(text)) text = cleaned = CleanUtf8(text);
      s.BindInt64(static_cast<int>(2 + 3 * r), row.trial_id);
      s.BindInt64(static_cast<int>(3 + 3 * r), row.rank);
      s.BindText(static_cast<int>(4 + 3 * r), text);
      if (!count_in_statement) {
        added[row.trial_id].first += 1;
        added[row.trial_id].second += static_cast<int64_t>(text.size());
      }
      trials.insert(row.trial_id);
    }
    COHORT_ASSIGN_OR_RETURN(int64_t seq, LastSeqOf(s, trials));
    last_seq = std::max(last_seq, seq);
  }
  if (count_in_statement) return last_seq;
  COHORT_RETURN_IF_ERROR(CountLinesIn(c, added));
  return last_seq;
}

absl::StatusOr<int64_t> SqlDatabase::LastSeqOf(sql::Query& s, const std::set<int64_t>& trials) {
  int64_t last_seq = 0;
  for (;;) {
    absl::StatusOr<bool> row = s.Step();
    if (s.failure() == sql::Failure::kForeignKeyViolation) {
      return absl::NotFoundError(
          trials.size() == 1
              ? absl::StrCat("trial ", *trials.begin(), " not found")
              : absl::StrCat("trial not found: one of ", absl::StrJoin(trials, ", ")));
    }
    COHORT_RETURN_IF_ERROR(row.status());
    if (!*row) return last_seq;
    if (!s.IsNull(0)) last_seq = std::max(last_seq, s.Int64(0));
  }
}

absl::Status SqlDatabase::CountLinesIn(
    sql::Connection& c, const std::map<int64_t, std::pair<int64_t, int64_t>>& added) {
  // One row per trial in each statement (PostgreSQL refuses an upsert that meets a row twice).
  auto it = added.begin();
  while (it != added.end()) {
    std::vector<std::pair<int64_t, std::pair<int64_t, int64_t>>> rows;
    for (; it != added.end() && rows.size() < kLinesPerInsert; ++it) rows.emplace_back(*it);
    const std::string sql =
        absl::StrCat("INSERT INTO log_stats (trial_id, lines, bytes, dropped, marker_seq) VALUES ",
                     sql::ValuesRows(rows.size(), 3, 1, ", 0, 0"), " ", kUpsertCounts);
    Query count(c, "count logs", sql);
    for (size_t r = 0; r < rows.size(); ++r) {
      count.BindInt64(static_cast<int>(1 + 3 * r), rows[r].first);
      count.BindInt64(static_cast<int>(2 + 3 * r), rows[r].second.first);
      count.BindInt64(static_cast<int>(3 + 3 * r), rows[r].second.second);
    }
    COHORT_RETURN_IF_ERROR(count.Run());
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<LogRow>> SqlDatabase::ListLogs(int64_t trial_id, int64_t after_seq,
                                                          std::optional<int> rank, int limit) {
  if (limit < 0) {
    return absl::InvalidArgumentError(absl::StrCat("log limit must be >= 0, got ", limit));
  }
  COHORT_ASSIGN_OR_RETURN(Lease c, Connect());
  Query s(*c, "list logs", internal::kListLogsSql);
  s.BindInt64(1, trial_id);
  s.BindInt64(2, after_seq);
  s.BindInt64OrNull(3, rank);
  s.BindInt64(4, limit);
  return ReadAll<LogRow>(s, ReadLog);
}

absl::StatusOr<std::vector<LogRow>> SqlDatabase::ListLastLogs(int64_t trial_id, int limit,
                                                              std::optional<int> rank) {
  if (limit < 0) {
    return absl::InvalidArgumentError(absl::StrCat("log limit must be >= 0, got ", limit));
  }
  COHORT_ASSIGN_OR_RETURN(Lease c, Connect());
  Query s(*c, "list last logs", internal::kListLastLogsSql);
  s.BindInt64(1, trial_id);
  s.BindInt64(2, limit);
  s.BindInt64OrNull(3, rank);
  COHORT_ASSIGN_OR_RETURN(std::vector<LogRow> rows, ReadAll<LogRow>(s, ReadLog));
  std::reverse(rows.begin(), rows.end());
  return rows;
}

absl::StatusOr<std::vector<LogStatsRow>> SqlDatabase::ListLogStats() {
  COHORT_ASSIGN_OR_RETURN(Lease c, Connect());
  Query s(*c, "list log stats",
          "SELECT trial_id, lines, bytes, dropped FROM log_stats ORDER BY trial_id");
  return ReadAll<LogStatsRow>(s, [](const Query& r) {
    return LogStatsRow{r.Int64(0), r.Int64(1), r.Int64(2), r.Int64(3)};
  });
}

absl::StatusOr<int64_t> SqlDatabase::DropLogLines(int64_t trial_id, int64_t keep_first,
                                                  int64_t count, const std::string& reason) {
  if (keep_first < 0 || count < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("dropping log lines needs keep_first >= 0 and count >= 0, got ", keep_first,
                     " and ", count));
  }
  if (count == 0) return 0;
  int64_t dropped = 0;
  COHORT_RETURN_IF_ERROR(Transact([&](sql::Connection& c) -> absl::Status {
    COHORT_ASSIGN_OR_RETURN(dropped, DropLinesIn(c, trial_id, keep_first, count, reason));
    return absl::OkStatus();
  }));
  return dropped;
}

absl::StatusOr<int64_t> SqlDatabase::DropLinesIn(sql::Connection& c, int64_t trial_id,
                                                 int64_t keep_first, int64_t count,
                                                 const std::string& reason) {
  Query stats(c, "read log stats", "SELECT dropped, marker_seq FROM log_stats WHERE trial_id = ?1");
  stats.BindInt64(1, trial_id);
  COHORT_ASSIGN_OR_RETURN(bool has_stats, stats.Step());
  if (!has_stats) return 0;
  const int64_t dropped = stats.Int64(0);
  int64_t marker_seq = stats.Int64(1);
  COHORT_ASSIGN_OR_RETURN(std::optional<int64_t> after,
                          DropStart(c, trial_id, keep_first, marker_seq));
  if (!after.has_value()) return 0;
  COHORT_ASSIGN_OR_RETURN(DropRange range, FindDropRange(c, trial_id, *after, marker_seq, count));
  if (range.lines == 0) return 0;
  Query drop(c, "drop log lines",
             "DELETE FROM logs WHERE trial_id = ?1 AND seq BETWEEN ?2 AND ?3 AND seq != ?4");
  drop.BindInt64(1, trial_id);
  drop.BindInt64(2, range.first);
  drop.BindInt64(3, range.last);
  drop.BindInt64(4, marker_seq);
  COHORT_RETURN_IF_ERROR(drop.Run());
  const std::string marker =
      absl::StrFormat("[cohort-master: %d lines dropped here; %s]", dropped + range.lines, reason);
  if (marker_seq == 0) marker_seq = range.first;  // the first dropped line's place, now free
  Query mark(c, "mark dropped log lines",
             "INSERT INTO logs (seq, trial_id, rank, line) VALUES (?1, ?2, -1, ?3) "
             "ON CONFLICT (seq) DO UPDATE SET line = excluded.line");
  mark.BindInt64(1, marker_seq);
  mark.BindInt64(2, trial_id);
  mark.BindText(3, marker);
  COHORT_RETURN_IF_ERROR(mark.Run());
  Query update(c, "count dropped log lines",
               "UPDATE log_stats SET lines = lines - ?2, bytes = bytes - ?3, "
               "dropped = dropped + ?2, marker_seq = ?4 WHERE trial_id = ?1");
  update.BindInt64(1, trial_id);
  update.BindInt64(2, range.lines);
  update.BindInt64(3, range.bytes);
  update.BindInt64(4, marker_seq);
  COHORT_RETURN_IF_ERROR(update.Run());
  return range.lines;
}

absl::StatusOr<std::optional<int64_t>> SqlDatabase::DropStart(sql::Connection& c, int64_t trial_id,
                                                              int64_t keep_first,
                                                              int64_t marker_seq) {
  if (keep_first == 0) return std::optional<int64_t>(0);
  if (marker_seq > 0) return std::optional<int64_t>(marker_seq);
  // The seq of the keep_first-th line: keep_first index steps, once per trial (later drops
  // start after the marker).
  Query s(c, "find the kept beginning of a log",
          "SELECT seq FROM logs WHERE trial_id = ?1 ORDER BY seq LIMIT 1 OFFSET ?2");
  s.BindInt64(1, trial_id);
  s.BindInt64(2, keep_first - 1);
  COHORT_ASSIGN_OR_RETURN(bool has_row, s.Step());
  if (!has_row) return std::optional<int64_t>();
  return std::optional<int64_t>(s.Int64(0));
}

absl::StatusOr<SqlDatabase::DropRange> SqlDatabase::FindDropRange(sql::Connection& c,
                                                                  int64_t trial_id, int64_t after,
                                                                  int64_t marker_seq,
                                                                  int64_t count) {
  // `count` steps along logs_by_trial (trial_id, seq) from `after`, reading each line's size.
  Query s(
      c, "measure log lines to drop",
      absl::StrCat("SELECT MIN(seq), MAX(seq), COUNT(*), COALESCE(SUM(", dialect_.line_bytes,
                   "), 0) FROM (SELECT seq, line FROM logs WHERE "
                   "trial_id = ?1 AND seq > ?2 AND seq != ?3 ORDER BY seq LIMIT ?4) AS picked"));
  s.BindInt64(1, trial_id);
  s.BindInt64(2, after);
  s.BindInt64(3, marker_seq);
  s.BindInt64(4, count);
  COHORT_ASSIGN_OR_RETURN(bool has_row, s.Step());
  if (!has_row) return DropRange{};
  return DropRange{s.Int64(0), s.Int64(1), s.Int64(2), s.Int64(3)};
}

}  // namespace cohort::master
