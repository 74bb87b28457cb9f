#pragma once
// Helpers shared by the database's tests (sqlite_*_test.cc): rows with every field set and raw
// SQL on a database file behind the Database's back, plus the shared Status assertions
// (ASSERT_OK, StatusIs: common/testing/status_matchers.h) and TempDir (common/testing/temp_dir.h).
// Test-only.

#include <sqlite3.h>

#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/testing/status_matchers.h"
#include "common/testing/temp_dir.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "master/db/database.h"

namespace cohort::master {

using ::cohort::testing_support::IsOkAndHolds;
using ::cohort::testing_support::StatusIs;
using ::cohort::testing_support::TempDir;

// Rows with a value in every field that differs from its default, so a field that is not
// stored or read back shows up as a mismatch.
inline ExperimentRow MakeExperiment(const std::string& name) {
  ExperimentRow row;
  row.name = name;
  row.state = wire::ExperimentState::kActive;
  row.config_yaml = "name: " + name + "\nresources:\n  slots_per_trial: 4\n";
  row.original_yaml = "name: " + name + "\n";
  row.template_name = "base";
  row.context_path = "/var/cohort/contexts/" + name + ".tar.gz";
  row.slots_per_trial = 4;
  row.priority = 7;
  row.max_restarts = 3;
  row.created_ms = 1700000000123;
  return row;
}

inline TrialRow MakeTrial(int64_t experiment_id) {
  TrialRow row;
  row.experiment_id = experiment_id;
  row.hparams_json = R"({"lr": 0.01, "layers": 3})";
  row.seed = 1234567890123;
  row.state = wire::TrialState::kRunning;
  row.restarts = 2;
  row.batches = 150;
  row.total_batches = 1000;
  row.searcher_metric = 0.125;
  row.latest_checkpoint = "ckpt-abc";
  row.error_lines = "[rank=1] Traceback\n[rank=1] boom\n";
  row.sequence = 17;
  return row;
}

inline std::vector<std::string> Lines(const std::vector<LogRow>& logs) {
  std::vector<std::string> lines;
  for (const LogRow& log : logs) lines.push_back(log.line);
  return lines;
}

// Runs SQL with one bound integer on a raw connection to `path`, behind the database's back.
inline void ExecOnFile(const std::string& path, const char* sql, int64_t value) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE, nullptr), SQLITE_OK);
  sqlite3_stmt* stmt = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(db, sql, -1, &stmt, nullptr), SQLITE_OK) << sqlite3_errmsg(db);
  sqlite3_bind_int64(stmt, 1, value);
  EXPECT_EQ(sqlite3_step(stmt), SQLITE_DONE) << sqlite3_errmsg(db);
  sqlite3_finalize(stmt);
  sqlite3_close(db);
}

// Reads the first column of every row a query returns, as text, from a raw connection.
inline std::vector<std::string> QueryFile(const std::string& path, const char* sql) {
  std::vector<std::string> values;
  sqlite3* db = nullptr;
  EXPECT_EQ(sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
  sqlite3_stmt* stmt = nullptr;
  EXPECT_EQ(sqlite3_prepare_v2(db, sql, -1, &stmt, nullptr), SQLITE_OK) << sqlite3_errmsg(db);
  while (sqlite3_step(stmt) == SQLITE_ROW) {
    values.emplace_back(reinterpret_cast<const char*>(sqlite3_column_text(stmt, 0)));
  }
  sqlite3_finalize(stmt);
  sqlite3_close(db);
  return values;
}

}  // namespace cohort::master
