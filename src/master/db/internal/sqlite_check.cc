#include "master/db/internal/sqlite_check.h"

#include <set>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "cohort/status.h"
#include "master/db/internal/sqlite_statement.h"

namespace cohort::master::internal {
namespace {

// What every refusal of a damaged file suggests.
std::string DamagedFix(const std::string& path) {
  return absl::StrCat(
      "cohort-master will not start on it. Restore the file from a backup (`cohort-master "
      "--backup FILE` makes one while the master runs), or move it away to start a new cluster "
      "(`sqlite3 ",
      path, " .recover` may save part of it)");
}

// Cohort's tables since schema version 1: a file recording a version without them is damaged.
const std::set<std::string>& CohortTables() {
  static const std::set<std::string>* const tables = new std::set<std::string>{
      "agents", "checkpoints", "experiments", "logs", "metrics", "templates", "trials"};
  return *tables;
}

// A failed read of the file as the refusal it means: not a database, damaged, or (anything
// else: I/O, locked) SQLite's own error.
absl::Status ReadError(sqlite3* db, const std::string& path, absl::string_view what, int rc) {
  const std::string reason = sqlite3_errmsg(db);
  if ((rc & 0xff) == SQLITE_NOTADB) {
    return absl::FailedPreconditionError(absl::StrCat(
        path, " is not an SQLite database (SQLite: ", reason,
        "); cohort-master will not touch it. If --db or --data-dir points at the wrong file, fix "
        "it; if this was the master's database, restore it from a backup; to start a new "
        "cluster, move the file away"));
  }
  if ((rc & 0xff) == SQLITE_CORRUPT) {
    return absl::DataLossError(absl::StrCat(path, " is damaged (SQLite: ", reason, " while it ",
                                            what, "); ", DamagedFix(path)));
  }
  return SqliteError(db, path, what, rc);
}

// Runs a query and returns the first column of every row as text, mapping read errors; `code`
// (when given) gets SQLite's result code.
absl::StatusOr<std::vector<std::string>> Column(sqlite3* db, const std::string& path,
                                                absl::string_view what, const char* sql,
                                                int* code = nullptr) {
  sqlite3_stmt* stmt = nullptr;
  int rc = sqlite3_prepare_v2(db, sql, -1, &stmt, nullptr);
  std::vector<std::string> values;
  while (rc == SQLITE_OK || rc == SQLITE_ROW) {
    rc = sqlite3_step(stmt);
    if (rc != SQLITE_ROW) break;
    const unsigned char* text = sqlite3_column_text(stmt, 0);
    values.emplace_back(text == nullptr ? "" : reinterpret_cast<const char*>(text));
  }
  if (code != nullptr) *code = rc;
  absl::Status error = rc == SQLITE_DONE ? absl::OkStatus() : ReadError(db, path, what, rc);
  sqlite3_finalize(stmt);
  if (!error.ok()) return error;
  return values;
}

// schema_version must hold exactly the versions 1..N (one row each, as Migrate writes them).
absl::Status CheckVersions(sqlite3* db, const std::string& path) {
  COHORT_ASSIGN_OR_RETURN(std::vector<std::string> versions,
                          Column(db, path, "read schema_version",
                                 "SELECT version FROM schema_version ORDER BY version"));
  for (size_t i = 0; i < versions.size(); ++i) {
    if (versions[i] != std::to_string(i + 1)) {
      return absl::DataLossError(absl::StrCat(
          path, " is damaged: its schema_version table holds ", absl::StrJoin(versions, ", "),
          " where Cohort writes 1, 2, ... once each; ", DamagedFix(path)));
    }
  }
  return absl::OkStatus();
}

int StopAtDeadline(void* deadline) {
  return absl::Now() >= *static_cast<const absl::Time*>(deadline) ? 1 : 0;
}

}  // namespace

absl::StatusOr<DatabaseContent> CheckIdentity(sqlite3* db, const std::string& path) {
  COHORT_ASSIGN_OR_RETURN(
      std::vector<std::string> tables,
      Column(db, path, "read the schema",
             "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite\\_%' "
             "ESCAPE '\\' ORDER BY name"));
  if (tables.empty()) return DatabaseContent::kEmpty;
  const std::set<std::string> present(tables.begin(), tables.end());
  if (present.count("schema_version") == 0) {
    if (tables.size() > 8) {
      tables.resize(8);
      tables.push_back("...");
    }
    return absl::FailedPreconditionError(absl::StrCat(
        path, " is an SQLite database but not Cohort's: it has the tables ",
        absl::StrJoin(tables, ", "),
        " and no schema_version table; cohort-master will not change it. Point --db (or "
        "--data-dir) at Cohort's database, or move this file away to start a new cluster"));
  }
  COHORT_RETURN_IF_ERROR(CheckVersions(db, path));
  std::vector<std::string> missing;
  for (const std::string& table : CohortTables()) {
    if (present.count(table) == 0) missing.push_back(table);
  }
  if (!missing.empty()) {
    return absl::DataLossError(absl::StrCat(path, " is damaged: Cohort's tables ",
                                            absl::StrJoin(missing, ", "), " are missing; ",
                                            DamagedFix(path)));
  }
  return DatabaseContent::kCohort;
}

absl::StatusOr<IntegrityCheck> CheckIntegrity(sqlite3* db, const std::string& path,
                                              absl::Duration time_limit) {
  if (time_limit <= absl::ZeroDuration()) return IntegrityCheck::kSkipped;
  // The progress handler runs every 10,000 virtual machine steps (well under a millisecond).
  absl::Time deadline = absl::Now() + time_limit;
  sqlite3_progress_handler(db, 10000, StopAtDeadline, &deadline);
  int code = SQLITE_OK;
  absl::StatusOr<std::vector<std::string>> findings =
      Column(db, path, "checked its integrity", "PRAGMA quick_check(5)", &code);
  sqlite3_progress_handler(db, 0, nullptr, nullptr);
  if (!findings.ok()) {
    if (code == SQLITE_INTERRUPT) return IntegrityCheck::kCutShort;
    return findings.status();
  }
  if (findings->size() == 1 && (*findings)[0] == "ok") return IntegrityCheck::kPassed;
  return absl::DataLossError(absl::StrCat(path, " is damaged: SQLite's quick_check found: ",
                                          absl::StrJoin(*findings, "; "), "; ", DamagedFix(path)));
}

}  // namespace cohort::master::internal
