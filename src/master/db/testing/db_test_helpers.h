#pragma once
// Helpers shared by the database's tests (sqlite_*_test.cc): Status assertions, a temporary
// directory, rows with every field set, and raw SQL on a database file behind the Database's
// back. Test-only.

#include <sqlite3.h>
#include <stdlib.h>

#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "master/db/database.h"

namespace cohort::master {

#define TEST_CONCAT_INNER_(a, b) a##b
#define TEST_CONCAT_(a, b) TEST_CONCAT_INNER_(a, b)
#define ASSERT_OK(expr) ASSERT_PRED_FORMAT1(IsOk(), expr)
#define ASSERT_OK_AND_ASSIGN(lhs, expr) \
  ASSERT_OK_AND_ASSIGN_IMPL_(TEST_CONCAT_(status_or_, __LINE__), lhs, expr)
#define ASSERT_OK_AND_ASSIGN_IMPL_(status_or, lhs, expr) \
  auto status_or = (expr);                               \
  ASSERT_TRUE(status_or.ok()) << status_or.status();     \
  lhs = std::move(status_or).value()

// Predicate formatter for ASSERT_OK: evaluates the Status or StatusOr once, prints it on failure.
struct IsOk {
  ::testing::AssertionResult operator()(const char* text, const absl::Status& status) const {
    if (status.ok()) return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure() << text << " failed: " << status;
  }
  template <typename T>
  ::testing::AssertionResult operator()(const char* text, const absl::StatusOr<T>& value) const {
    return (*this)(text, value.status());
  }
};

// Matches an absl::Status with `code` whose message matches `message` (a string or a matcher).
MATCHER_P2(StatusIs, code, message, "") {
  return arg.code() == code &&
         ::testing::ExplainMatchResult(message, std::string(arg.message()), result_listener);
}

// A fresh directory under ::testing::TempDir(), removed with everything in it at destruction.
class TempDirectory {
 public:
  TempDirectory() {
    std::string pattern = ::testing::TempDir();
    if (pattern.empty() || pattern.back() != '/') pattern += '/';
    pattern += "cohort_db_test_XXXXXX";
    const char* made = mkdtemp(pattern.data());
    EXPECT_NE(made, nullptr) << "mkdtemp " << pattern;
    path_ = pattern;
  }
  ~TempDirectory() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

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
