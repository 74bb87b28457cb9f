#include "master/db/sqlite_database.h"

#include <sqlite3.h>
#include <stdlib.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <optional>
#include <ostream>
#include <set>
#include <string>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "master/db/database.h"
#include "master/db/postgres_database.h"
#include "master/db/sqlite_migrations.h"
#include "master/db/testing/db_test_helpers.h"
#include "master/db/testing/postgres_server.h"

namespace cohort::master {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::SizeIs;
using namespace std::string_literals;
using wire::ExperimentState;
using wire::TrialState;

auto Fields(const ExperimentRow& r) {
  return std::tie(r.id, r.name, r.state, r.config_yaml, r.original_yaml, r.template_name,
                  r.context_path, r.slots_per_trial, r.priority, r.max_restarts, r.created_ms);
}
auto Fields(const TrialRow& r) {
  return std::tie(r.id, r.experiment_id, r.hparams_json, r.seed, r.state, r.restarts, r.batches,
                  r.total_batches, r.searcher_metric, r.latest_checkpoint, r.error_lines,
                  r.sequence, r.kill_requested);
}
auto Fields(const MetricRow& r) {
  return std::tie(r.trial_id, r.kind, r.steps_completed, r.metrics_json, r.time);
}
auto Fields(const CheckpointRow& r) {
  return std::tie(r.storage_id, r.trial_id, r.steps_completed, r.path, r.metadata_json);
}
auto Fields(const LogRow& r) { return std::tie(r.seq, r.trial_id, r.rank, r.line); }
auto Fields(const TemplateRow& r) { return std::tie(r.name, r.yaml); }
auto Fields(const AgentRow& r) { return std::tie(r.id, r.slots, r.host, r.enabled); }

// Compares two lists of rows field by field.
template <typename Row>
void ExpectSameRows(const std::vector<Row>& actual, const std::vector<Row>& expected) {
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t i = 0; i < actual.size(); ++i) {
    EXPECT_EQ(Fields(actual[i]), Fields(expected[i])) << "row " << i;
  }
}

// The Database conformance suite, run against every implementation: SQLite in memory and in a
// file, and PostgreSQL (a throwaway server shared by the binary, a fresh database per test).
enum class Backend { kSqliteInMemory, kSqliteFile, kPostgres };

void PrintTo(Backend backend, std::ostream* os) {
  switch (backend) {
    case Backend::kSqliteInMemory:
      *os << "SQLite in memory";
      return;
    case Backend::kSqliteFile:
      *os << "SQLite file";
      return;
    case Backend::kPostgres:
      *os << "PostgreSQL";
      return;
  }
}

class DatabaseTest : public ::testing::TestWithParam<Backend> {
 protected:
  void SetUp() override {
    if (GetParam() == Backend::kPostgres) {
      ASSERT_OK_AND_ASSIGN(std::string url, db_testing::NewSharedDatabase());
      ASSERT_OK_AND_ASSIGN(db_, PostgresDatabase::Open(url));
      return;
    }
    std::string path = ":memory:";
    if (GetParam() == Backend::kSqliteFile) path = dir_.path() + "/master.db";
    ASSERT_OK_AND_ASSIGN(db_, OpenSqliteDatabase(path));
  }

  // An experiment with one trial; returns the trial's id.
  int64_t AddTrial() {
    int64_t experiment_id = db_->InsertExperiment(MakeExperiment("exp")).value();
    return db_->InsertTrial(MakeTrial(experiment_id)).value();
  }

  TempDir dir_;
  std::unique_ptr<Database> db_;
};

INSTANTIATE_TEST_SUITE_P(Backends, DatabaseTest,
                         ::testing::Values(Backend::kSqliteInMemory, Backend::kSqliteFile,
                                           Backend::kPostgres),
                         [](const ::testing::TestParamInfo<Backend>& info) {
                           switch (info.param) {
                             case Backend::kSqliteInMemory:
                               return "SqliteInMemory";
                             case Backend::kSqliteFile:
                               return "SqliteFile";
                             case Backend::kPostgres:
                               return "Postgres";
                           }
                           return "Unknown";
                         });

TEST_P(DatabaseTest, ListsNothingInANewDatabase) {
  EXPECT_THAT(db_->ListExperiments().value(), IsEmpty());
  EXPECT_THAT(db_->ListTrials(std::nullopt).value(), IsEmpty());
  EXPECT_THAT(db_->ListMetrics(1, std::nullopt).value(), IsEmpty());
  EXPECT_THAT(db_->ListCheckpoints(1).value(), IsEmpty());
  EXPECT_THAT(db_->ListLogs(1, 0, std::nullopt, 100).value(), IsEmpty());
  EXPECT_THAT(db_->ListTemplates().value(), IsEmpty());
  EXPECT_THAT(db_->ListAgents().value(), IsEmpty());
}

TEST_P(DatabaseTest, AssignsExperimentIdsFromOne) {
  EXPECT_EQ(db_->InsertExperiment(MakeExperiment("a")).value(), 1);
  EXPECT_EQ(db_->InsertExperiment(MakeExperiment("b")).value(), 2);
  EXPECT_EQ(db_->InsertExperiment(MakeExperiment("c")).value(), 3);
}

TEST_P(DatabaseTest, RoundTripsEveryExperimentFieldAndIgnoresTheGivenId) {
  ExperimentRow row = MakeExperiment("mnist");
  row.id = 99;
  ASSERT_OK_AND_ASSIGN(int64_t id, db_->InsertExperiment(row));
  EXPECT_EQ(id, 1);
  row.id = id;
  ASSERT_OK_AND_ASSIGN(ExperimentRow stored, db_->GetExperiment(id));
  EXPECT_EQ(Fields(stored), Fields(row));
}

TEST_P(DatabaseTest, ListsExperimentsById) {
  for (const char* name : {"a", "b", "c"}) ASSERT_OK(db_->InsertExperiment(MakeExperiment(name)));
  ASSERT_OK_AND_ASSIGN(std::vector<ExperimentRow> all, db_->ListExperiments());
  ASSERT_THAT(all, SizeIs(3));
  for (int i = 0; i < 3; ++i) {
    ExperimentRow expected = MakeExperiment(std::string(1, static_cast<char>('a' + i)));
    expected.id = i + 1;
    EXPECT_EQ(Fields(all[i]), Fields(expected));
  }
}

// Contexts are stored once per content: a deletion asks who else names its file.
TEST_P(DatabaseTest, CountsTheOtherExperimentsNamingAContext) {
  ExperimentRow shared = MakeExperiment("a");
  ASSERT_OK_AND_ASSIGN(int64_t a, db_->InsertExperiment(shared));
  ASSERT_OK_AND_ASSIGN(int64_t b, db_->InsertExperiment(shared));
  ASSERT_OK(db_->InsertExperiment(MakeExperiment("c")));
  EXPECT_THAT(db_->CountExperimentsNamingContext(shared.context_path, a), IsOkAndHolds(1));
  EXPECT_THAT(db_->CountExperimentsNamingContext(shared.context_path, 0), IsOkAndHolds(2));
  ASSERT_OK_AND_ASSIGN(int64_t rows, db_->DeleteExperimentRows(b, 1000));
  EXPECT_GT(rows, 0);
  EXPECT_THAT(db_->CountExperimentsNamingContext(shared.context_path, a), IsOkAndHolds(0));
  EXPECT_THAT(db_->CountExperimentsNamingContext("/elsewhere.tar.gz", 0), IsOkAndHolds(0));
}

TEST_P(DatabaseTest, SetsExperimentStateAndLeavesOtherFields) {
  ASSERT_OK_AND_ASSIGN(int64_t id, db_->InsertExperiment(MakeExperiment("a")));
  ASSERT_OK(db_->SetExperimentState(id, ExperimentState::kPaused, {}));
  ExperimentRow expected = MakeExperiment("a");
  expected.id = id;
  expected.state = ExperimentState::kPaused;
  EXPECT_EQ(Fields(db_->GetExperiment(id).value()), Fields(expected));
}

TEST_P(DatabaseTest, ArchivesAndUnarchivesAnExperiment) {
  const int64_t id = db_->InsertExperiment(MakeExperiment("a")).value();
  EXPECT_FALSE(db_->GetExperiment(id).value().archived) << "a new experiment is not archived";
  ASSERT_OK(db_->SetExperimentArchived(id, true));
  EXPECT_TRUE(db_->GetExperiment(id).value().archived);
  EXPECT_TRUE(db_->ListExperiments().value().at(0).archived);
  ASSERT_OK(db_->SetExperimentArchived(id, false));
  EXPECT_FALSE(db_->GetExperiment(id).value().archived);
  EXPECT_TRUE(absl::IsNotFound(db_->SetExperimentArchived(9, true)));
}

TEST_P(DatabaseTest, ReopensAnExperimentWithItsTrialsInOneTransaction) {
  ExperimentRow row = MakeExperiment("a");
  row.state = ExperimentState::kError;
  ASSERT_OK_AND_ASSIGN(row.id, db_->InsertExperiment(row));
  ASSERT_OK(db_->SetExperimentEnded(row.id, 1234));
  TrialRow trial = MakeTrial(row.id);
  trial.state = TrialState::kError;
  trial.restarts = 3;
  trial.error_lines = "boom";
  ASSERT_OK_AND_ASSIGN(trial.id, db_->InsertTrial(trial));
  const int64_t other = AddTrial();  // of another experiment

  row.state = ExperimentState::kActive;
  row.name = "b";
  row.config_yaml = "name: b\n";
  row.slots_per_trial = 4;
  row.max_restarts = 2;
  trial.state = TrialState::kQueued;
  trial.restarts = 0;
  trial.error_lines.clear();
  trial.total_batches = 77;
  TrialRow stranger = db_->GetTrial(other).value();
  stranger.state = TrialState::kCompleted;
  // A trial of another experiment: nothing at all is written.
  EXPECT_THAT(db_->ReopenExperiment(row, {trial, stranger}, {}),
              StatusIs(absl::StatusCode::kNotFound));
  EXPECT_EQ(db_->GetExperiment(row.id).value().state, ExperimentState::kError);
  EXPECT_EQ(db_->GetExperiment(row.id).value().ended_ms, 1234);
  EXPECT_EQ(db_->GetTrial(trial.id).value().state, TrialState::kError);
  EXPECT_EQ(db_->GetTrial(other).value().state, TrialState::kRunning) << "as MakeTrial made it";

  ASSERT_OK(db_->ReopenExperiment(row, {trial}, {}));
  ExperimentRow stored = db_->GetExperiment(row.id).value();
  EXPECT_EQ(stored.state, ExperimentState::kActive);
  EXPECT_EQ(stored.name, "b");
  EXPECT_EQ(stored.config_yaml, "name: b\n");
  EXPECT_EQ(stored.slots_per_trial, 4);
  EXPECT_EQ(stored.max_restarts, 2);
  EXPECT_EQ(stored.ended_ms, 0);
  TrialRow reopened = db_->GetTrial(trial.id).value();
  EXPECT_EQ(reopened.state, TrialState::kQueued);
  EXPECT_EQ(reopened.restarts, 0);
  EXPECT_EQ(reopened.error_lines, "");
  EXPECT_EQ(reopened.total_batches, 77);
  EXPECT_THAT(db_->ReopenExperiment(MakeExperiment("gone"), {}, {}),
              StatusIs(absl::StatusCode::kNotFound));
}

TEST_P(DatabaseTest, ReportsAMissingExperimentByItsId) {
  EXPECT_THAT(db_->GetExperiment(7).status(),
              StatusIs(absl::StatusCode::kNotFound, "experiment 7 not found"));
  EXPECT_THAT(db_->SetExperimentState(7, ExperimentState::kPaused, {}),
              StatusIs(absl::StatusCode::kNotFound, "experiment 7 not found"));
}

TEST_P(DatabaseTest, StoresTextWithQuotesNewlinesAndUnicodeVerbatim) {
  ExperimentRow row = MakeExperiment("Robert'); DROP TABLE experiments;--");
  row.config_yaml = "a: \"b\"\n\tc: 'd'\n\\0e";
  row.original_yaml = "名前: ✓";
  ASSERT_OK_AND_ASSIGN(int64_t id, db_->InsertExperiment(row));
  row.id = id;
  EXPECT_EQ(Fields(db_->GetExperiment(id).value()), Fields(row));
  EXPECT_THAT(db_->ListExperiments().value(), SizeIs(1));
}

// Text is UTF-8 without NULs on every backend (PostgreSQL stores nothing else): a NUL is
// refused naming the operation, and nothing is stored.
TEST_P(DatabaseTest, RefusesTextWithANulByteAndStoresNothing) {
  ExperimentRow row = MakeExperiment("a");
  row.config_yaml = "a: 1\n\0b"s;
  absl::StatusOr<int64_t> id = db_->InsertExperiment(row);
  EXPECT_THAT(id, StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("insert experiment")));
  EXPECT_THAT(db_->ListExperiments().value(), IsEmpty());
}

// A trial's output is arbitrary bytes: its NULs and invalid UTF-8 are stored as U+FFFD, the
// rest as printed, and the batch is not refused.
TEST_P(DatabaseTest, LogLinesAreStoredAsCleanText) {
  ASSERT_OK_AND_ASSIGN(int64_t experiment_id, db_->InsertExperiment(MakeExperiment("a")));
  ASSERT_OK_AND_ASSIGN(int64_t trial, db_->InsertTrial(MakeTrial(experiment_id)));
  ASSERT_OK(
      db_->AppendLogs(trial, {{0, "nul\0here"s}, {0, "bad \xC3\x28 byte"}, {0, "ok ✓"}}).status());
  ASSERT_OK_AND_ASSIGN(std::vector<LogRow> rows, db_->ListLogs(trial, 0, std::nullopt, 10));
  ASSERT_THAT(rows, SizeIs(3));
  EXPECT_EQ(rows[0].line, "nul\xEF\xBF\xBDhere");
  EXPECT_EQ(rows[1].line, "bad \xEF\xBF\xBD( byte");
  EXPECT_EQ(rows[2].line, "ok ✓");
}

TEST_P(DatabaseTest, AssignsTrialIdsFromOneAcrossExperiments) {
  ASSERT_OK_AND_ASSIGN(int64_t first, db_->InsertExperiment(MakeExperiment("a")));
  ASSERT_OK_AND_ASSIGN(int64_t second, db_->InsertExperiment(MakeExperiment("b")));
  EXPECT_EQ(db_->InsertTrial(MakeTrial(first)).value(), 1);
  EXPECT_EQ(db_->InsertTrial(MakeTrial(second)).value(), 2);
  EXPECT_EQ(db_->InsertTrial(MakeTrial(first)).value(), 3);
}

TEST_P(DatabaseTest, RoundTripsEveryTrialFieldWithASearcherMetric) {
  ASSERT_OK_AND_ASSIGN(int64_t experiment_id, db_->InsertExperiment(MakeExperiment("a")));
  TrialRow row = MakeTrial(experiment_id);
  ASSERT_OK_AND_ASSIGN(row.id, db_->InsertTrial(row));
  ASSERT_OK_AND_ASSIGN(TrialRow stored, db_->GetTrial(row.id));
  EXPECT_EQ(Fields(stored), Fields(row));
  EXPECT_EQ(stored.searcher_metric, std::optional<double>(0.125));
}

TEST_P(DatabaseTest, RoundTripsATrialWithoutASearcherMetric) {
  ASSERT_OK_AND_ASSIGN(int64_t experiment_id, db_->InsertExperiment(MakeExperiment("a")));
  TrialRow row = MakeTrial(experiment_id);
  row.searcher_metric = std::nullopt;
  ASSERT_OK_AND_ASSIGN(row.id, db_->InsertTrial(row));
  ASSERT_OK_AND_ASSIGN(TrialRow stored, db_->GetTrial(row.id));
  EXPECT_EQ(Fields(stored), Fields(row));
  EXPECT_EQ(stored.searcher_metric, std::nullopt);
}

TEST_P(DatabaseTest, RefusesATrialOfAMissingExperiment) {
  EXPECT_THAT(db_->InsertTrial(MakeTrial(42)).status(),
              StatusIs(absl::StatusCode::kNotFound, "experiment 42 not found"));
  EXPECT_THAT(db_->ListTrials(std::nullopt).value(), IsEmpty());
}

// The master's fields, not a report's: a row the master read before a report was stored does
// not write the report's progress back.
TEST_P(DatabaseTest, UpdateTrialWritesTheMastersFieldsAndLeavesAReportsAlone) {
  ASSERT_OK_AND_ASSIGN(int64_t first, db_->InsertExperiment(MakeExperiment("a")));
  ASSERT_OK_AND_ASSIGN(int64_t second, db_->InsertExperiment(MakeExperiment("b")));
  ASSERT_OK_AND_ASSIGN(int64_t id, db_->InsertTrial(MakeTrial(first)));
  const TrialRow inserted = db_->GetTrial(id).value();

  TrialRow update;
  update.id = id;
  update.experiment_id = second;  // ignored
  update.hparams_json = R"({"lr": 0.1})";
  update.seed = 5;
  update.state = TrialState::kError;
  update.restarts = 4;
  update.batches = 999;  // the report's four: ignored
  update.total_batches = 2000;
  update.searcher_metric = -2.5;
  update.latest_checkpoint = "ckpt-def";
  update.error_lines = "[rank=0] out of memory\n";
  update.sequence = 3;
  update.kill_requested = true;
  ASSERT_OK(db_->UpdateTrial(update));

  TrialRow expected = update;
  expected.experiment_id = first;
  expected.batches = inserted.batches;
  expected.total_batches = inserted.total_batches;
  expected.searcher_metric = inserted.searcher_metric;
  expected.latest_checkpoint = inserted.latest_checkpoint;
  EXPECT_EQ(Fields(db_->GetTrial(id).value()), Fields(expected));

  // A report stored after the master read the row, before it wrote it back.
  const TrialRow read_before = db_->GetTrial(id).value();
  const std::vector<OutputRowsWritten> written = db_->WriteOutputs(
      {{.trial_id = id, .reports = true, .trial = {.batches = std::make_pair(300, 600)}}});
  ASSERT_OK(written.at(0).reports);
  TrialRow decided = read_before;
  decided.state = TrialState::kCompleted;
  ASSERT_OK(db_->UpdateTrial(decided));
  const TrialRow after = db_->GetTrial(id).value();
  EXPECT_EQ(after.state, TrialState::kCompleted);
  EXPECT_EQ(after.batches, 300) << "the report's progress was written over";
  EXPECT_EQ(after.total_batches, 600);
}

// A reports part writes its trial's report fields, and only those given; the row comes back
// as it is after.
TEST_P(DatabaseTest, AReportWritesOnlyTheTrialFieldsGivenAndReturnsTheRow) {
  ASSERT_OK_AND_ASSIGN(int64_t experiment, db_->InsertExperiment(MakeExperiment("a")));
  ASSERT_OK_AND_ASSIGN(int64_t id, db_->InsertTrial(MakeTrial(experiment)));
  TrialRow expected = db_->GetTrial(id).value();
  const auto report = [&](TrialReportFields fields) {
    OutputRows rows{.trial_id = id, .reports = true, .trial = std::move(fields)};
    return db_->WriteOutputs({rows}).at(0);
  };

  OutputRowsWritten written = report({});
  ASSERT_OK(written.reports);
  ASSERT_TRUE(written.trial.has_value());
  EXPECT_EQ(Fields(*written.trial), Fields(expected)) << "nothing given, nothing changed";

  written = report({.batches = std::make_pair(400, 900)});
  expected.batches = 400;
  expected.total_batches = 900;
  ASSERT_TRUE(written.trial.has_value());
  EXPECT_EQ(Fields(*written.trial), Fields(expected));

  written = report({.latest_checkpoint = "ckpt-2", .searcher_metric = -1.5});
  expected.latest_checkpoint = "ckpt-2";
  expected.searcher_metric = -1.5;
  ASSERT_TRUE(written.trial.has_value());
  EXPECT_EQ(Fields(*written.trial), Fields(expected));
  EXPECT_EQ(Fields(db_->GetTrial(id).value()), Fields(expected));

  OutputRows missing{
      .trial_id = id + 100, .reports = true, .trial = {.batches = std::make_pair(1, 2)}};
  written = db_->WriteOutputs({missing}).at(0);
  EXPECT_THAT(written.reports,
              StatusIs(absl::StatusCode::kNotFound, HasSubstr(absl::StrCat(id + 100))));
  EXPECT_FALSE(written.trial.has_value());
}

// A scheduling pass's batch: its trials in one query (more than one IN list's worth here),
// those that exist, by id, each once.
TEST_P(DatabaseTest, GetTrialsReadsThoseThatExistById) {
  ASSERT_OK_AND_ASSIGN(int64_t experiment, db_->InsertExperiment(MakeExperiment("a")));
  std::vector<int64_t> ids;
  for (int i = 0; i < 300; ++i) {
    TrialRow row = MakeTrial(experiment);
    row.seed = i;
    ASSERT_OK_AND_ASSIGN(int64_t id, db_->InsertTrial(row));
    ids.push_back(id);
  }
  ASSERT_OK_AND_ASSIGN(std::vector<TrialRow> some,
                       db_->GetTrials({ids[7], ids[299] + 1000, ids[2], ids[7]}));
  ASSERT_THAT(some, SizeIs(2));
  EXPECT_EQ(Fields(some[0]), Fields(db_->GetTrial(ids[2]).value()));
  EXPECT_EQ(Fields(some[1]), Fields(db_->GetTrial(ids[7]).value()));

  std::vector<int64_t> reversed(ids.rbegin(), ids.rend());
  ASSERT_OK_AND_ASSIGN(std::vector<TrialRow> all, db_->GetTrials(reversed));
  ASSERT_THAT(all, SizeIs(300));
  for (int i = 0; i < 300; ++i) {
    EXPECT_EQ(all[i].id, ids[i]);
    EXPECT_EQ(all[i].seed, i);
  }
  EXPECT_THAT(db_->GetTrials({}).value(), IsEmpty());
}

// The trials a pass started: all RUNNING with their lines, or, when one is missing, none.
TEST_P(DatabaseTest, MarkTrialsRunningWritesEveryStateAndLineOrNone) {
  ASSERT_OK_AND_ASSIGN(int64_t experiment, db_->InsertExperiment(MakeExperiment("a")));
  TrialRow queued = MakeTrial(experiment);
  queued.state = TrialState::kQueued;
  const int64_t a = db_->InsertTrial(queued).value();
  const int64_t b = db_->InsertTrial(queued).value();
  const int64_t c = db_->InsertTrial(queued).value();
  ASSERT_OK(db_->MarkTrialsRunning({{a, "master: a on x"}, {b, "master: b on y"}}));
  EXPECT_EQ(db_->GetTrial(a).value().state, TrialState::kRunning);
  EXPECT_EQ(db_->GetTrial(b).value().state, TrialState::kRunning);
  ASSERT_OK_AND_ASSIGN(std::vector<LogRow> lines, db_->ListLogs(b, 0, std::nullopt, 10));
  ASSERT_THAT(lines, SizeIs(1));
  EXPECT_EQ(lines[0].line, "master: b on y");
  EXPECT_EQ(lines[0].rank, -1);

  EXPECT_THAT(db_->MarkTrialsRunning({{c, "master: c"}, {c + 500, "master: lost"}}),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr(absl::StrCat(c + 500))));
  EXPECT_EQ(db_->GetTrial(c).value().state, TrialState::kQueued) << "rolled back";
  EXPECT_THAT(db_->ListLogs(c, 0, std::nullopt, 10).value(), IsEmpty());
  ASSERT_OK(db_->MarkTrialsRunning({}));
}

// A pass's allocations in one statement (more than one statement's worth here: a
// transaction), all or none.
TEST_P(DatabaseTest, InsertAllocationsStoresAllOrNone) {
  const int64_t trial = AddTrial();
  std::vector<AllocationRow> rows;
  for (int i = 0; i < 70; ++i) {
    rows.push_back({absl::StrCat(trial, ".b.", i), trial, "hash", {{"agent", 1}, {"b", 2}}, i});
  }
  ASSERT_OK(db_->InsertAllocations({rows[0], rows[1]}));
  EXPECT_THAT(db_->InsertAllocations({rows[2], rows[1]}),
              StatusIs(absl::StatusCode::kAlreadyExists, HasSubstr(rows[1].id)));
  EXPECT_THAT(db_->InsertAllocation(rows[0]),
              StatusIs(absl::StatusCode::kAlreadyExists,
                       absl::StrCat("allocation '", rows[0].id, "' already exists")));
  EXPECT_THAT(db_->ListAllocations().value(), SizeIs(2)) << "none of the refused batch";
  ASSERT_OK(db_->InsertAllocations(std::vector<AllocationRow>(rows.begin() + 2, rows.end())));
  ASSERT_OK_AND_ASSIGN(std::vector<AllocationRow> stored, db_->ListAllocations());
  ASSERT_THAT(stored, SizeIs(70));
  const auto found = std::find_if(stored.begin(), stored.end(),
                                  [&](const AllocationRow& r) { return r.id == rows[69].id; });
  ASSERT_NE(found, stored.end());
  EXPECT_EQ(found->nodes, rows[69].nodes);
  EXPECT_EQ(found->created_ms, 69);
  ASSERT_OK(db_->InsertAllocations({}));
}

TEST_P(DatabaseTest, ReportsAMissingTrialByItsId) {
  TrialRow row = MakeTrial(1);
  row.id = 3;
  EXPECT_THAT(db_->UpdateTrial(row), StatusIs(absl::StatusCode::kNotFound, "trial 3 not found"));
  EXPECT_THAT(db_->GetTrial(3).status(),
              StatusIs(absl::StatusCode::kNotFound, "trial 3 not found"));
}

TEST_P(DatabaseTest, ListsAllTrialsOrThoseOfOneExperimentById) {
  ASSERT_OK_AND_ASSIGN(int64_t first, db_->InsertExperiment(MakeExperiment("a")));
  ASSERT_OK_AND_ASSIGN(int64_t second, db_->InsertExperiment(MakeExperiment("b")));
  std::vector<TrialRow> all;
  for (int64_t experiment_id : {first, second, first, second, first}) {
    TrialRow row = MakeTrial(experiment_id);
    row.seed = static_cast<int64_t>(all.size());
    ASSERT_OK_AND_ASSIGN(row.id, db_->InsertTrial(row));
    all.push_back(row);
  }
  ExpectSameRows(db_->ListTrials(std::nullopt).value(), all);
  ExpectSameRows(db_->ListTrials(first).value(), {all[0], all[2], all[4]});
  ExpectSameRows(db_->ListTrials(second).value(), {all[1], all[3]});
  EXPECT_THAT(db_->ListTrials(99).value(), IsEmpty());
}

TEST_P(DatabaseTest, ListsTrialsInGivenStatesAcrossExperimentsById) {
  ASSERT_OK_AND_ASSIGN(int64_t first, db_->InsertExperiment(MakeExperiment("a")));
  ASSERT_OK_AND_ASSIGN(int64_t second, db_->InsertExperiment(MakeExperiment("b")));
  std::vector<TrialRow> all;
  const std::vector<TrialState> states = {TrialState::kQueued, TrialState::kCompleted,
                                          TrialState::kRunning, TrialState::kError,
                                          TrialState::kQueued};
  for (size_t i = 0; i < states.size(); ++i) {
    TrialRow row = MakeTrial(i % 2 ? second : first);
    row.state = states[i];
    ASSERT_OK_AND_ASSIGN(row.id, db_->InsertTrial(row));
    all.push_back(row);
  }
  ExpectSameRows(db_->ListTrialsInStates({TrialState::kQueued, TrialState::kRunning}).value(),
                 {all[0], all[2], all[4]});
  ExpectSameRows(db_->ListTrialsInStates({TrialState::kError}).value(), {all[3]});
  EXPECT_THAT(db_->ListTrialsInStates({TrialState::kPaused}).value(), IsEmpty());
  EXPECT_THAT(db_->ListTrialsInStates({}).value(), IsEmpty());
  all[3].state = TrialState::kQueued;
  ASSERT_OK(db_->UpdateTrial(all[3]));
  ExpectSameRows(db_->ListTrialsInStates({TrialState::kQueued}).value(), {all[0], all[3], all[4]});
}

TEST_P(DatabaseTest, ListsTheTrialsToScheduleWithTheirStateAndSequence) {
  const int64_t exp = db_->InsertExperiment(MakeExperiment("exp")).value();
  for (wire::TrialState state : {wire::TrialState::kQueued, wire::TrialState::kCompleted,
                                 wire::TrialState::kRunning, wire::TrialState::kPaused}) {
    TrialRow t = MakeTrial(exp);
    t.state = state;
    t.sequence = 40 + static_cast<int>(state);
    ASSERT_OK(db_->InsertTrial(t).status());
  }
  ASSERT_OK_AND_ASSIGN(std::vector<TrialScheduleRow> rows, db_->ListTrialsToSchedule());
  ASSERT_THAT(rows, SizeIs(2));
  EXPECT_EQ(rows[0].id, 1);
  EXPECT_EQ(rows[0].state, wire::TrialState::kQueued);
  EXPECT_EQ(rows[0].experiment_id, exp);
  EXPECT_EQ(rows[1].id, 3);
  EXPECT_EQ(rows[1].state, wire::TrialState::kRunning);
  EXPECT_EQ(rows[1].sequence, 40 + static_cast<int>(wire::TrialState::kRunning));
}

TEST_P(DatabaseTest, ListsMetricsInInsertionOrderAndFiltersByKind) {
  int64_t trial = AddTrial();
  int64_t other = AddTrial();
  std::vector<MetricRow> rows = {
      {trial, "training", 100, R"({"loss": 0.9})", 1700000000.25},
      {trial, "validation", 100, R"({"accuracy": 0.5})", 1700000001.5},
      {other, "training", 100, R"({"loss": 7})", 1700000002.0},
      {trial, "training", 50, R"({"loss": 0.95})", 1700000003.75},  // out of step order
  };
  ASSERT_OK(db_->InsertMetrics({rows[0], rows[1]}));
  ASSERT_OK(db_->InsertMetrics({rows[2], rows[3]}));

  ExpectSameRows(db_->ListMetrics(trial, std::nullopt).value(), {rows[0], rows[1], rows[3]});
  ExpectSameRows(db_->ListMetrics(trial, "training").value(), {rows[0], rows[3]});
  ExpectSameRows(db_->ListMetrics(trial, "validation").value(), {rows[1]});
  ExpectSameRows(db_->ListMetrics(other, std::nullopt).value(), {rows[2]});
  EXPECT_THAT(db_->ListMetrics(trial, "testing").value(), IsEmpty());
}

TEST_P(DatabaseTest, InsertsNoMetricsOfABatchWithAMissingTrial) {
  int64_t trial = AddTrial();
  std::vector<MetricRow> rows = {{trial, "training", 1, "{}", 1.0}, {77, "training", 1, "{}", 2.0}};
  EXPECT_THAT(db_->InsertMetrics(rows),
              StatusIs(absl::StatusCode::kNotFound, "trial 77 not found"));
  EXPECT_THAT(db_->ListMetrics(trial, std::nullopt).value(), IsEmpty());
  ASSERT_OK(db_->InsertMetrics({}));
}

TEST_P(DatabaseTest, ListsCheckpointsOfATrialInInsertionOrder) {
  int64_t trial = AddTrial();
  int64_t other = AddTrial();
  std::vector<CheckpointRow> rows = {
      {"uuid-2", trial, 200, "/ckpt/uuid-2", R"({"framework": "torch"})"},
      {"uuid-1", trial, 100, "/ckpt/uuid-1", "{}"},
      {"uuid-3", other, 300, "/ckpt/uuid-3", "{}"},
  };
  for (const CheckpointRow& row : rows) ASSERT_OK(db_->InsertCheckpoint(row));
  ExpectSameRows(db_->ListCheckpoints(trial).value(), {rows[0], rows[1]});
  ExpectSameRows(db_->ListCheckpoints(other).value(), {rows[2]});
}

TEST_P(DatabaseTest, ListsAnExperimentsActiveCheckpointsWithTheirValidationMetrics) {
  const int64_t experiment = db_->InsertExperiment(MakeExperiment("exp")).value();
  const int64_t trial = db_->InsertTrial(MakeTrial(experiment)).value();
  const int64_t sibling = db_->InsertTrial(MakeTrial(experiment)).value();
  const int64_t stranger = AddTrial();  // another experiment's
  ASSERT_OK(db_->InsertMetrics({{trial, "validation", 100, R"({"loss": 0.5})", 1.0},
                                {trial, "training", 200, R"({"loss": 9})", 2.0},
                                {trial, "validation", 100, R"({"loss": 0.4})", 3.0},
                                {sibling, "validation", 50, R"({"loss": 0.7})", 4.0}}));
  const std::vector<CheckpointRow> rows = {{"b", trial, 200, "/ckpt/b", "{}"},
                                           {"a", trial, 100, "/ckpt/a", "{}"},
                                           {"c", sibling, 50, "/ckpt/c", "{}"},
                                           {"d", sibling, 60, "/ckpt/d", "{}"},
                                           {"e", stranger, 100, "/ckpt/e", "{}"}};
  for (const CheckpointRow& row : rows) ASSERT_OK(db_->InsertCheckpoint(row));
  ASSERT_OK(db_->MarkCheckpointDeleted("d"));

  ASSERT_OK_AND_ASSIGN(std::vector<GcCheckpointRow> active, db_->ListActiveCheckpoints(experiment));
  ASSERT_EQ(active.size(), 3u);
  // By trial, then batch; the last validation at a checkpoint's batch; none at batch 200.
  EXPECT_EQ(active[0].checkpoint.storage_id, "a");
  EXPECT_EQ(active[0].validation_metrics_json, R"({"loss": 0.4})");
  EXPECT_EQ(active[1].checkpoint.storage_id, "b");
  EXPECT_EQ(active[1].validation_metrics_json, std::nullopt);
  EXPECT_EQ(active[2].checkpoint.storage_id, "c");
  EXPECT_EQ(active[2].checkpoint.trial_id, sibling);
  EXPECT_EQ(active[2].validation_metrics_json, R"({"loss": 0.7})");
  EXPECT_THAT(db_->ListActiveCheckpoints(experiment + 100).value(), IsEmpty());
}

TEST_P(DatabaseTest, RefusesADuplicateCheckpointStorageIdAndKeepsTheFirst) {
  int64_t trial = AddTrial();
  CheckpointRow first = {"uuid-1", trial, 100, "/ckpt/a", "{}"};
  ASSERT_OK(db_->InsertCheckpoint(first));
  CheckpointRow again = {"uuid-1", trial, 200, "/ckpt/b", "{}"};
  EXPECT_THAT(db_->InsertCheckpoint(again),
              StatusIs(absl::StatusCode::kAlreadyExists, HasSubstr("uuid-1")));
  ExpectSameRows(db_->ListCheckpoints(trial).value(), {first});
}

TEST_P(DatabaseTest, GetsACheckpointByItsStorageId) {
  const int64_t trial = AddTrial();
  ASSERT_OK(db_->InsertCheckpoint({"uuid-1", trial, 10, "/ckpt/uuid-1", "{}"}));
  ASSERT_OK_AND_ASSIGN(CheckpointRow row, db_->GetCheckpoint("uuid-1"));
  EXPECT_EQ(row.trial_id, trial);
  EXPECT_EQ(row.path, "/ckpt/uuid-1");
  EXPECT_THAT(db_->GetCheckpoint("nope").status(),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("checkpoint nope")));
}

TEST_P(DatabaseTest, RefusesACheckpointOfAMissingTrial) {
  EXPECT_THAT(db_->InsertCheckpoint({"uuid-1", 5, 100, "/ckpt/a", "{}"}),
              StatusIs(absl::StatusCode::kNotFound, "trial 5 not found"));
}

TEST_P(DatabaseTest, AppendLogsAssignsIncreasingSeqsAndReturnsTheLast) {
  int64_t trial = AddTrial();
  int64_t other = AddTrial();
  EXPECT_EQ(db_->AppendLogs(trial, {{0, "a"}, {1, "b"}, {-1, "c"}}).value(), 3);
  EXPECT_EQ(db_->AppendLogs(other, {{0, "x"}}).value(), 4);
  EXPECT_EQ(db_->AppendLogs(trial, {{0, "d"}}).value(), 5);
  EXPECT_EQ(db_->AppendLogs(trial, {}).value(), 0);

  ASSERT_OK_AND_ASSIGN(std::vector<LogRow> logs, db_->ListLogs(trial, 0, std::nullopt, 100));
  ExpectSameRows(logs,
                 {{1, trial, 0, "a"}, {2, trial, 1, "b"}, {3, trial, -1, "c"}, {5, trial, 0, "d"}});
  ExpectSameRows(db_->ListLogs(other, 0, std::nullopt, 100).value(), {{4, other, 0, "x"}});
}

TEST_P(DatabaseTest, AppendLogsRecordsWhenEachLineWasStored) {
  int64_t trial = AddTrial();
  const int64_t before = absl::ToUnixMillis(absl::Now());
  ASSERT_OK(db_->AppendLogs(trial, {{0, "a"}, {1, "b"}}).status());
  const int64_t after = absl::ToUnixMillis(absl::Now());
  for (const std::vector<LogRow>& rows : {db_->ListLogs(trial, 0, std::nullopt, 100).value(),
                                          db_->ListLastLogs(trial, 10, std::nullopt).value()}) {
    ASSERT_EQ(rows.size(), 2u);
    for (const LogRow& row : rows) {
      EXPECT_GE(row.time_ms, before) << row.line;
      EXPECT_LE(row.time_ms, after) << row.line;
    }
  }
}

TEST_P(DatabaseTest, ListLogsReturnsLinesAfterTheGivenSeq) {
  int64_t trial = AddTrial();
  ASSERT_OK(db_->AppendLogs(trial, {{0, "a"}, {0, "b"}, {0, "c"}, {0, "d"}}).status());
  EXPECT_THAT(Lines(db_->ListLogs(trial, 2, std::nullopt, 100).value()), ElementsAre("c", "d"));
  EXPECT_THAT(db_->ListLogs(trial, 4, std::nullopt, 100).value(), IsEmpty());
}

TEST_P(DatabaseTest, ListLogsFiltersByRank) {
  int64_t trial = AddTrial();
  ASSERT_OK(
      db_->AppendLogs(trial, {{0, "r0 a"}, {1, "r1 a"}, {-1, "launcher"}, {1, "r1 b"}, {0, "r0 b"}})
          .status());
  EXPECT_THAT(Lines(db_->ListLogs(trial, 0, 1, 100).value()), ElementsAre("r1 a", "r1 b"));
  EXPECT_THAT(Lines(db_->ListLogs(trial, 0, -1, 100).value()), ElementsAre("launcher"));
  EXPECT_THAT(Lines(db_->ListLogs(trial, 2, 0, 100).value()), ElementsAre("r0 b"));
  EXPECT_THAT(db_->ListLogs(trial, 0, 5, 100).value(), IsEmpty());
}

TEST_P(DatabaseTest, ListLogsReturnsAtMostLimitLinesSoCallersCanPage) {
  int64_t trial = AddTrial();
  std::vector<std::pair<int, std::string>> batch;
  for (int i = 0; i < 10; ++i) batch.emplace_back(i % 2, absl::StrCat("line ", i));
  ASSERT_OK(db_->AppendLogs(trial, batch).status());

  EXPECT_THAT(Lines(db_->ListLogs(trial, 0, std::nullopt, 3).value()),
              ElementsAre("line 0", "line 1", "line 2"));
  EXPECT_THAT(Lines(db_->ListLogs(trial, 0, 1, 2).value()), ElementsAre("line 1", "line 3"));
  EXPECT_THAT(db_->ListLogs(trial, 0, std::nullopt, 0).value(), IsEmpty());
  EXPECT_THAT(db_->ListLogs(trial, 0, std::nullopt, -1),
              StatusIs(absl::StatusCode::kInvalidArgument));

  std::vector<std::string> paged;
  int64_t after = 0;
  for (;;) {
    ASSERT_OK_AND_ASSIGN(std::vector<LogRow> page, db_->ListLogs(trial, after, std::nullopt, 3));
    if (page.empty()) break;
    for (const LogRow& log : page) paged.push_back(log.line);
    after = page.back().seq;
  }
  EXPECT_THAT(paged, SizeIs(10));
  EXPECT_EQ(paged.front(), "line 0");
  EXPECT_EQ(paged.back(), "line 9");
}

TEST_P(DatabaseTest, ListLastLogsReturnsTheNewestLinesOldestFirst) {
  const int64_t trial = AddTrial();
  std::vector<std::pair<int, std::string>> lines;
  for (int i = 1; i <= 50; ++i) lines.push_back({i % 2, absl::StrCat("line ", i)});
  ASSERT_OK(db_->AppendLogs(trial, lines).status());
  ASSERT_OK_AND_ASSIGN(std::vector<LogRow> last, db_->ListLastLogs(trial, 3, std::nullopt));
  ASSERT_THAT(last, SizeIs(3));
  EXPECT_EQ(last[0].line, "line 48");
  EXPECT_EQ(last[2].line, "line 50");
  EXPECT_EQ(last[2].rank, 0);
  EXPECT_THAT(db_->ListLastLogs(trial, 100, std::nullopt).value(), SizeIs(50));
  EXPECT_THAT(db_->ListLastLogs(9999, 3, std::nullopt).value(), IsEmpty());
  ASSERT_OK_AND_ASSIGN(std::vector<LogRow> rank1, db_->ListLastLogs(trial, 2, 1));
  ASSERT_THAT(rank1, SizeIs(2));
  EXPECT_EQ(rank1[0].line, "line 47");
  EXPECT_EQ(rank1[1].line, "line 49");
}

TEST_P(DatabaseTest, AppendsNoLogsForAMissingTrial) {
  EXPECT_THAT(db_->AppendLogs(9, {{0, "a"}}).status(),
              StatusIs(absl::StatusCode::kNotFound, "trial 9 not found"));
  EXPECT_THAT(db_->ListLogs(9, 0, std::nullopt, 100).value(), IsEmpty());
}

TEST_P(DatabaseTest, AppendsABatchOfAThousandLines) {
  int64_t trial = AddTrial();
  std::vector<std::pair<int, std::string>> batch;
  for (int i = 0; i < 1000; ++i) batch.emplace_back(i % 8, absl::StrCat("[rank=", i % 8, "] ", i));
  EXPECT_EQ(db_->AppendLogs(trial, batch).value(), 1000);
  ASSERT_OK_AND_ASSIGN(std::vector<LogRow> logs, db_->ListLogs(trial, 0, std::nullopt, 5000));
  ASSERT_THAT(logs, SizeIs(1000));
  for (int i = 0; i < 1000; ++i) {
    EXPECT_EQ(logs[i].seq, i + 1);
    EXPECT_EQ(logs[i].rank, i % 8);
    EXPECT_EQ(logs[i].line, batch[i].second);
  }
}

TEST_P(DatabaseTest, PutsReplacesAndGetsTemplates) {
  ASSERT_OK(db_->PutTemplate({"gpu", "resources:\n  slots_per_trial: 8\n"}));
  EXPECT_EQ(Fields(db_->GetTemplate("gpu").value()),
            Fields(TemplateRow{"gpu", "resources:\n  slots_per_trial: 8\n"}));
  ASSERT_OK(db_->PutTemplate({"gpu", "resources:\n  slots_per_trial: 4\n"}));
  EXPECT_EQ(db_->GetTemplate("gpu").value().yaml, "resources:\n  slots_per_trial: 4\n");
  EXPECT_THAT(db_->ListTemplates().value(), SizeIs(1));
}

TEST_P(DatabaseTest, ListsTemplatesByName) {
  ASSERT_OK(db_->PutTemplate({"zeta", "z: 1\n"}));
  ASSERT_OK(db_->PutTemplate({"alpha", "a: 1\n"}));
  ASSERT_OK(db_->PutTemplate({"mid", "m: 1\n"}));
  ExpectSameRows(db_->ListTemplates().value(),
                 {{"alpha", "a: 1\n"}, {"mid", "m: 1\n"}, {"zeta", "z: 1\n"}});
}

TEST_P(DatabaseTest, DeletesTemplatesAndReportsMissingOnesByName) {
  ASSERT_OK(db_->PutTemplate({"x", "a: 1\n"}));
  ASSERT_OK(db_->DeleteTemplate("x"));
  EXPECT_THAT(db_->GetTemplate("x").status(),
              StatusIs(absl::StatusCode::kNotFound, "template 'x' not found"));
  EXPECT_THAT(db_->DeleteTemplate("x"),
              StatusIs(absl::StatusCode::kNotFound, "template 'x' not found"));
  EXPECT_THAT(db_->ListTemplates().value(), IsEmpty());
}

TEST_P(DatabaseTest, UpsertAgentStoresANewAgentAsGiven) {
  ASSERT_OK(db_->UpsertAgent({"a1", 8, "host-1", true}));
  ASSERT_OK(db_->UpsertAgent({"a2", 4, "host-2", false}));
  ExpectSameRows(db_->ListAgents().value(),
                 {{"a1", 8, "host-1", true}, {"a2", 4, "host-2", false}});
}

TEST_P(DatabaseTest, UpsertAgentKeepsEnabledOfAKnownAgentButUpdatesSlotsAndHost) {
  ASSERT_OK(db_->UpsertAgent({"a1", 8, "host-1", true}));
  ASSERT_OK(db_->SetAgentEnabled("a1", false));
  ASSERT_OK(db_->UpsertAgent({"a1", 4, "host-9", true}));  // re-registration after a restart
  ExpectSameRows(db_->ListAgents().value(), {{"a1", 4, "host-9", false}});

  ASSERT_OK(db_->SetAgentEnabled("a1", true));
  ASSERT_OK(db_->UpsertAgent({"a1", 4, "host-9", false}));
  ExpectSameRows(db_->ListAgents().value(), {{"a1", 4, "host-9", true}});
}

TEST_P(DatabaseTest, SetAgentEnabledReportsAnUnknownAgent) {
  EXPECT_THAT(db_->SetAgentEnabled("a1", false),
              StatusIs(absl::StatusCode::kNotFound, "agent 'a1' not found"));
}

TEST_P(DatabaseTest, ListsAgentsById) {
  for (const char* id : {"node-c", "node-a", "node-b"}) {
    ASSERT_OK(db_->UpsertAgent({id, 2, "h", true}));
  }
  ASSERT_OK_AND_ASSIGN(std::vector<AgentRow> agents, db_->ListAgents());
  ASSERT_THAT(agents, SizeIs(3));
  EXPECT_EQ(agents[0].id, "node-a");
  EXPECT_EQ(agents[1].id, "node-b");
  EXPECT_EQ(agents[2].id, "node-c");
}

// What only a database in a file can show: persistence, the schema version, WAL, errors.
class SqliteFileTest : public ::testing::Test {
 protected:
  TempDir dir_;
  const std::string path_ = dir_.path() + "/master.db";
};

// A large experiment (600,000 log lines and series points) is deleted in transactions of the
// limit's size; each one's time is printed (docs/reliability.md), never asserted.
TEST_F(SqliteFileTest, ALargeExperimentIsDeletedInManySmallTransactions) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Database> db, OpenSqliteDatabase(path_));
  const int64_t doomed = db->InsertExperiment(MakeExperiment("large")).value();
  const int64_t kept = db->InsertExperiment(MakeExperiment("kept")).value();
  const int64_t trial = db->InsertTrial(MakeTrial(doomed)).value();
  const int64_t other = db->InsertTrial(MakeTrial(kept)).value();
  constexpr int kRows = 300'000, kChunk = 10'000;
  for (int first = 0; first < kRows; first += kChunk) {
    std::vector<std::pair<int, std::string>> lines;
    std::vector<PointRow> points;
    for (int i = first; i < first + kChunk; ++i) {
      lines.emplace_back(0, absl::StrCat("line ", i));
      points.push_back({"training/loss", "", i, 1.0 * i, 0.5});
    }
    ASSERT_OK(db->AppendLogs(trial, lines).status());
    ASSERT_OK(db->InsertPoints(trial, points));
    ASSERT_OK(db->AppendLogs(other, {{0, absl::StrCat("other ", first)}}).status());
  }
  absl::Duration longest, total;
  int calls = 0;
  int64_t rows = 0;
  for (;; ++calls) {
    const absl::Time start = absl::Now();
    ASSERT_OK_AND_ASSIGN(int64_t deleted, db->DeleteExperimentRows(doomed, 5000));
    const absl::Duration took = absl::Now() - start;
    longest = std::max(longest, took);
    total += took;
    if (deleted == 0) break;
    rows += deleted;
  }
  std::printf("deleted %lld rows in %d transactions of at most 5000: %s in all, the longest %s\n",
              static_cast<long long>(rows), calls, absl::FormatDuration(total).c_str(),
              absl::FormatDuration(longest).c_str());
  EXPECT_EQ(rows, 2 * kRows + 1 + 1 + 2);  // lines, points, its series, log_stats, trial, itself
  EXPECT_GE(calls, 2 * kRows / 5000);
  EXPECT_TRUE(absl::IsNotFound(db->GetExperiment(doomed).status()));
  EXPECT_THAT(db->ListLogs(other, 0, std::nullopt, 100).value(), SizeIs(kRows / kChunk));
}

TEST_F(SqliteFileTest, KeepsEveryRowAcrossReopening) {
  ExperimentRow experiment = MakeExperiment("persist");
  TrialRow with_metric;
  TrialRow without_metric;
  std::vector<MetricRow> metrics;
  CheckpointRow checkpoint;
  {
    ASSERT_OK_AND_ASSIGN(std::unique_ptr<Database> db, OpenSqliteDatabase(path_));
    ASSERT_OK_AND_ASSIGN(experiment.id, db->InsertExperiment(experiment));
    with_metric = MakeTrial(experiment.id);
    ASSERT_OK_AND_ASSIGN(with_metric.id, db->InsertTrial(with_metric));
    without_metric = MakeTrial(experiment.id);
    without_metric.searcher_metric = std::nullopt;
    ASSERT_OK_AND_ASSIGN(without_metric.id, db->InsertTrial(without_metric));
    metrics = {{with_metric.id, "training", 10, R"({"loss": 1.5})", 12.5},
               {with_metric.id, "validation", 10, R"({"acc": 0.5})", 13.5}};
    ASSERT_OK(db->InsertMetrics(metrics));
    checkpoint = {"uuid-1", with_metric.id, 10, "/ckpt/uuid-1", R"({"steps": 10})"};
    ASSERT_OK(db->InsertCheckpoint(checkpoint));
    ASSERT_OK(db->AppendLogs(with_metric.id, {{0, "hello"}, {-1, "launcher"}}).status());
    ASSERT_OK(db->PutTemplate({"base", "a: 1\n"}));
    ASSERT_OK(db->UpsertAgent({"a1", 8, "host-1", true}));
    ASSERT_OK(db->SetAgentEnabled("a1", false));
  }

  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Database> db, OpenSqliteDatabase(path_));
  ExpectSameRows(db->ListExperiments().value(), {experiment});
  ExpectSameRows(db->ListTrials(std::nullopt).value(), {with_metric, without_metric});
  ExpectSameRows(db->ListMetrics(with_metric.id, std::nullopt).value(), metrics);
  ExpectSameRows(db->ListCheckpoints(with_metric.id).value(), {checkpoint});
  ExpectSameRows(db->ListLogs(with_metric.id, 0, std::nullopt, 100).value(),
                 {{1, with_metric.id, 0, "hello"}, {2, with_metric.id, -1, "launcher"}});
  ExpectSameRows(db->ListTemplates().value(), {{"base", "a: 1\n"}});
  ExpectSameRows(db->ListAgents().value(), {{"a1", 8, "host-1", false}});

  // Numbering continues where it stopped.
  EXPECT_EQ(db->InsertExperiment(MakeExperiment("next")).value(), 2);
  EXPECT_EQ(db->InsertTrial(MakeTrial(experiment.id)).value(), 3);
  EXPECT_EQ(db->AppendLogs(with_metric.id, {{0, "again"}}).value(), 3);
}

TEST_F(SqliteFileTest, AppliesEachMigrationOnceAcrossReopening) {
  ASSERT_OK(OpenSqliteDatabase(path_).status());
  ASSERT_OK(OpenSqliteDatabase(path_).status());
  std::vector<std::string> expected;
  for (int v = 1; v <= internal::LatestSqliteSchemaVersion(); ++v) {
    expected.push_back(std::to_string(v));
  }
  EXPECT_EQ(QueryFile(path_, "SELECT version FROM schema_version ORDER BY version"), expected);
}

TEST_F(SqliteFileTest, UsesTheWriteAheadLog) {
  ASSERT_OK(OpenSqliteDatabase(path_).status());
  EXPECT_THAT(QueryFile(path_, "PRAGMA journal_mode"), ElementsAre("wal"));
}

// The log is copied back into the file by the checkpointer's thread, not by the writes (in the
// commit that passed 1000 pages, every other call would wait for the copy and its syncs).
TEST_F(SqliteFileTest, CheckpointsRunBesideTheWritesNotInThem) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<SqliteDatabase> db, SqliteDatabase::Open(path_));
  ASSERT_OK_AND_ASSIGN(int64_t exp, db->InsertExperiment(MakeExperiment("wal")));
  ASSERT_OK_AND_ASSIGN(int64_t trial, db->InsertTrial(MakeTrial(exp)));
  const std::string line(4096, 'x');  // a page or more of log per commit
  for (int i = 0; i < 1500; ++i) ASSERT_OK(db->AppendLogs(trial, {{0, line}}).status());
  const absl::Time deadline = absl::Now() + absl::Seconds(20);
  while (db->wal_checkpoints().background == 0 && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(10));
  }
  const WalCheckpoints counts = db->wal_checkpoints();
  EXPECT_GE(counts.background, 1) << "none within 20 s of 1,500 commits";
  EXPECT_EQ(counts.by_writer, 0);
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<SqliteDatabase> memory, SqliteDatabase::Open(":memory:"));
  EXPECT_EQ(memory->wal_checkpoints().background, 0) << "no log in memory";
}

// The WAL's checkpoints reach monitoring through the backend-neutral BackendMetrics: one
// counter, by checkpointer and by writer, zeros included (an in-memory database has no log).
TEST_F(SqliteFileTest, ReportsItsCheckpointsAsBackendMetrics) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<SqliteDatabase> db, SqliteDatabase::Open(path_));
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Database> memory, OpenSqliteDatabase(":memory:"));
  for (Database* database : {static_cast<Database*>(db.get()), memory.get()}) {
    const std::vector<BackendMetric> metrics = database->BackendMetrics();
    ASSERT_EQ(metrics.size(), 2u);
    for (const BackendMetric& m : metrics) {
      EXPECT_EQ(m.name, "wal_checkpoints_total");
      EXPECT_EQ(m.kind, BackendMetric::Kind::kCounter);
      EXPECT_FALSE(m.help.empty());
      EXPECT_EQ(m.help, metrics[0].help) << "one metric, one help text";
    }
    using Labels = std::vector<std::pair<std::string, std::string>>;
    EXPECT_EQ(metrics[0].labels, (Labels{{"by", "checkpointer"}}));
    EXPECT_EQ(metrics[1].labels, (Labels{{"by", "writer"}}));
  }
  const WalCheckpoints counts = db->wal_checkpoints();
  const std::vector<BackendMetric> metrics = db->BackendMetrics();
  // Counts only grow: what was read before is at most what the metrics say.
  EXPECT_LE(counts.background, metrics[0].value);
  EXPECT_LE(counts.by_writer, metrics[1].value);
  EXPECT_EQ(memory->BackendMetrics()[0].value, 0);
  EXPECT_EQ(memory->BackendMetrics()[1].value, 0);
}

TEST_F(SqliteFileTest, RefusesASchemaVersionNewerThanThisBuild) {
  ASSERT_OK(OpenSqliteDatabase(path_).status());
  const int latest = internal::LatestSqliteSchemaVersion();
  ExecOnFile(path_, "INSERT INTO schema_version (version) VALUES (?1)", latest + 1);
  EXPECT_THAT(OpenSqliteDatabase(path_).status(),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       absl::StrCat(path_, ": schema version ", latest + 1,
                                    " is newer than this build of cohort-master understands (",
                                    latest, "); upgrade cohort-master")));
}

TEST_F(SqliteFileTest, OpeningUnderAMissingDirectoryFailsNamingThePath) {
  const std::string path = dir_.path() + "/no/such/dir/master.db";
  absl::Status status = OpenSqliteDatabase(path).status();
  EXPECT_THAT(status, StatusIs(absl::StatusCode::kUnavailable, HasSubstr(path)));
  EXPECT_THAT(std::string(status.message()), HasSubstr("unable to open database file"));
}

TEST_F(SqliteFileTest, OpeningAFileThatIsNotADatabaseFailsNamingThePath) {
  {
    std::FILE* file = std::fopen(path_.c_str(), "w");
    ASSERT_NE(file, nullptr);
    std::fputs("this is not an SQLite database, just some text that is long enough\n", file);
    std::fclose(file);
  }
  absl::Status status = OpenSqliteDatabase(path_).status();
  EXPECT_FALSE(status.ok());
  EXPECT_THAT(std::string(status.message()), HasSubstr(path_));
  EXPECT_THAT(std::string(status.message()), HasSubstr("not a database"));
}

TEST_F(SqliteFileTest, LosesNothingWhenFourThreadsWriteAtOnce) {
  constexpr int kThreads = 4;
  constexpr int kBatches = 50;
  constexpr int kLinesPerBatch = 20;
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Database> db, OpenSqliteDatabase(path_));
  ASSERT_OK_AND_ASSIGN(int64_t experiment, db->InsertExperiment(MakeExperiment("busy")));
  std::vector<int64_t> trials;
  for (int t = 0; t < kThreads; ++t)
    trials.push_back(db->InsertTrial(MakeTrial(experiment)).value());

  std::vector<std::vector<int64_t>> last_seqs(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int b = 0; b < kBatches; ++b) {
        std::vector<std::pair<int, std::string>> batch;
        for (int i = 0; i < kLinesPerBatch; ++i) {
          batch.emplace_back(t, absl::StrCat(t, ":", b * kLinesPerBatch + i));
        }
        absl::StatusOr<int64_t> last = db->AppendLogs(trials[t], batch);
        EXPECT_OK(last);
        if (last.ok()) last_seqs[t].push_back(*last);
        EXPECT_OK(db->InsertMetrics({{trials[t], "training", b, "{}", 1.0 * b}}));
        EXPECT_OK(db->ListLogs(trials[t], 0, std::nullopt, 10));
      }
    });
  }
  for (std::thread& thread : threads) thread.join();

  std::set<int64_t> all_seqs;
  for (int t = 0; t < kThreads; ++t) {
    ASSERT_OK_AND_ASSIGN(std::vector<LogRow> logs,
                         db->ListLogs(trials[t], 0, std::nullopt, kBatches * kLinesPerBatch * 2));
    ASSERT_THAT(logs, SizeIs(kBatches * kLinesPerBatch));
    for (int i = 0; i < static_cast<int>(logs.size()); ++i) {
      EXPECT_EQ(logs[i].line, absl::StrCat(t, ":", i));
      EXPECT_EQ(logs[i].rank, t);
      if (i > 0) {
        EXPECT_GT(logs[i].seq, logs[i - 1].seq);
      }
      all_seqs.insert(logs[i].seq);
    }
    // Each call returned the seq of its own batch's last line.
    ASSERT_THAT(last_seqs[t], SizeIs(kBatches));
    for (int b = 0; b < kBatches; ++b) {
      EXPECT_EQ(last_seqs[t][b], logs[(b + 1) * kLinesPerBatch - 1].seq);
    }
    ASSERT_OK_AND_ASSIGN(std::vector<MetricRow> metrics, db->ListMetrics(trials[t], std::nullopt));
    ASSERT_THAT(metrics, SizeIs(kBatches));
    for (int b = 0; b < kBatches; ++b) EXPECT_EQ(metrics[b].steps_completed, b);
  }
  EXPECT_THAT(all_seqs, SizeIs(kThreads * kBatches * kLinesPerBatch));
  EXPECT_EQ(*all_seqs.begin(), 1);
  EXPECT_EQ(*all_seqs.rbegin(), kThreads * kBatches * kLinesPerBatch);
}

// Fills trial `t` with `n` rows of each kind an experiment's deletion must find.
void FillTrial(Database& db, int64_t t, int n) {
  std::vector<std::pair<int, std::string>> lines;
  std::vector<MetricRow> metrics;
  std::vector<PointRow> points;
  for (int i = 1; i <= n; ++i) {
    lines.emplace_back(0, absl::StrCat("line ", i));
    metrics.push_back({t, "training", i, R"({"loss": 1})", 1.0 * i});
    points.push_back({"training/loss", "", i, 1.0 * i, 1.0});
  }
  ASSERT_OK(db.AppendLogs(t, lines));
  ASSERT_OK(db.InsertMetrics(metrics));
  ASSERT_OK(db.InsertPoints(t, points));
  ASSERT_OK(db.InsertCheckpoint({absl::StrCat("ckpt-", t), t, n, "/ckpt", "{}"}));
}

TEST_P(DatabaseTest, DeletesAnExperimentsRowsInBoundedStepsAndNothingOfAnother) {
  const int64_t doomed = db_->InsertExperiment(MakeExperiment("doomed")).value();
  const int64_t kept = db_->InsertExperiment(MakeExperiment("kept")).value();
  const int64_t t1 = db_->InsertTrial(MakeTrial(doomed)).value();
  const int64_t t2 = db_->InsertTrial(MakeTrial(doomed)).value();
  const int64_t other = db_->InsertTrial(MakeTrial(kept)).value();
  for (int64_t t : {t1, t2, other}) FillTrial(*db_, t, 40);

  EXPECT_THAT(db_->DeleteExperimentRows(doomed, 0).status().message(), HasSubstr("limit >= 1"));
  int calls = 0;
  int64_t total = 0;
  for (;; ++calls) {
    ASSERT_LT(calls, 1000) << "the deletion never ends";
    ASSERT_OK_AND_ASSIGN(int64_t deleted, db_->DeleteExperimentRows(doomed, 25));
    if (deleted == 0) break;
    total += deleted;
    // At most the limit, but for the last call's trials and experiment (3 rows here).
    EXPECT_LE(deleted, 25 + 3);
    if (calls == 0) {
      EXPECT_OK(db_->GetExperiment(doomed)) << "gone at the first step";
    }
  }
  // 2 trials x (40 lines, 40 metrics, 40 points, 1 series, 1 checkpoint, 1 log_stats row),
  // then 2 trials and the experiment.
  EXPECT_EQ(total, 2 * (40 * 3 + 3) + 3);
  EXPECT_GE(calls, total / 28);
  EXPECT_TRUE(absl::IsNotFound(db_->GetExperiment(doomed).status()));
  EXPECT_TRUE(absl::IsNotFound(db_->GetTrial(t1).status()));
  EXPECT_THAT(db_->ListLogs(t2, 0, std::nullopt, 100).value(), IsEmpty());
  EXPECT_THAT(db_->ListMetrics(t1, std::nullopt).value(), IsEmpty());
  EXPECT_THAT(db_->ListSeries(t1).value(), IsEmpty());
  EXPECT_THAT(db_->ListCheckpoints(t2).value(), IsEmpty());
  // The other experiment keeps everything.
  EXPECT_THAT(db_->ListLogs(other, 0, std::nullopt, 100).value(), SizeIs(40));
  EXPECT_THAT(db_->ListMetrics(other, std::nullopt).value(), SizeIs(40));
  ASSERT_THAT(db_->ListSeries(other).value(), SizeIs(1));
  EXPECT_EQ(db_->ListSeries(other).value()[0].points, 40);
  EXPECT_THAT(db_->ListCheckpoints(other).value(), SizeIs(1));
  EXPECT_THAT(db_->ListExperiments().value(), SizeIs(1));
  // Deleting what is gone, or was never there, deletes nothing.
  EXPECT_EQ(db_->DeleteExperimentRows(doomed, 25).value(), 0);
  EXPECT_EQ(db_->DeleteExperimentRows(77, 25).value(), 0);
}

TEST_P(DatabaseTest, SeriesKeepTheirPointsApartAndRangesSelect) {
  const int64_t trial = AddTrial();
  std::vector<PointRow> points;
  for (int b = 1; b <= 10; ++b) {
    points.push_back({"training/loss", "", b, 100.0 + b, 1.0 / b});
    points.push_back({"gpu_util", "agent-1/GPU-1", b, 100.0 + b, 10.0 * b});
  }
  ASSERT_OK(db_->InsertPoints(trial, points));
  ASSERT_OK_AND_ASSIGN(std::vector<SeriesRow> series, db_->ListSeries(trial));
  ASSERT_THAT(series, SizeIs(2));
  EXPECT_EQ(series[0].name, "gpu_util");
  EXPECT_EQ(series[0].label, "agent-1/GPU-1");
  EXPECT_EQ(series[1].points, 10);
  EXPECT_EQ(series[1].first_batch, 1);
  EXPECT_EQ(series[1].last_batch, 10);

  PointQuery q{.trial_id = trial, .name = "training/loss", .min_batch = 3, .max_batch = 5};
  ASSERT_OK_AND_ASSIGN(std::vector<PointRow> range, db_->QueryPoints(q));
  ASSERT_THAT(range, SizeIs(3));
  EXPECT_EQ(range[0].batch, 3);
  EXPECT_DOUBLE_EQ(range[2].value, 0.2);
  q = {.trial_id = trial, .name = "gpu_util", .label = "agent-1/GPU-1", .min_time = 108};
  ASSERT_OK_AND_ASSIGN(range, db_->QueryPoints(q));
  ASSERT_THAT(range, SizeIs(3));
  EXPECT_EQ(range[0].batch, 8);
  // Following: only what was stored after the last point seen.
  q = {.trial_id = trial, .name = "training/loss", .after_id = range.back().id};
  ASSERT_OK(db_->InsertPoints(trial, {{"training/loss", "", 11, 111, 0.05}}));
  ASSERT_OK_AND_ASSIGN(range, db_->QueryPoints(q));
  ASSERT_THAT(range, SizeIs(1));
  EXPECT_EQ(range[0].batch, 11);

  EXPECT_THAT(db_->QueryPoints({.trial_id = trial, .name = "nope"}).value(), IsEmpty());
  EXPECT_THAT(db_->InsertPoints(9999, {{"x", "", 1, 1, 1}}),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("trial 9999")));
  EXPECT_THAT(db_->ListSeries(trial).value(), SizeIs(2)) << "a refused insert adds nothing";
}

TEST_P(DatabaseTest, AReportsMetricsAndPointsAreStoredTogetherOrNotAtAll) {
  const int64_t trial = AddTrial();
  ASSERT_OK(db_->InsertMetricsAndPoints(
      trial, {{trial, "training", 10, R"({"loss":0.5})", 1.5}},
      {{"training/loss", "", 10, 1.5, 0.5}, {"training/acc", "", 10, 1.5, 0.9}}));
  EXPECT_THAT(db_->ListMetrics(trial, "training").value(), SizeIs(1));
  EXPECT_THAT(db_->ListSeries(trial).value(), SizeIs(2));
  // A point of a trial that does not exist fails the whole write: the metric goes too.
  const int64_t other = AddTrial();
  EXPECT_THAT(db_->InsertMetricsAndPoints(9999, {{other, "training", 1, R"({"loss":1})", 2}},
                                          {{"training/loss", "", 1, 2, 1}}),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("trial 9999")));
  EXPECT_THAT(db_->ListMetrics(other, std::nullopt).value(), IsEmpty())
      << "the metric of a refused report was kept";
  ASSERT_OK(db_->InsertMetricsAndPoints(trial, {}, {}));
}

// An agent's combined post: one transaction, each item's logs and reports all-or-nothing on
// their own, so an item of a trial that is gone takes nothing of the others with it.
TEST_P(DatabaseTest, WriteOutputsStoresEachPartOnItsOwnInOneTransaction) {
  const int64_t trial = AddTrial();
  const int64_t other = AddTrial();
  ASSERT_OK(db_->InsertCheckpoint({"ck-sent-before", trial, 2, "p", "{}"}));
  std::vector<OutputRows> items(4);
  items[0] = {.trial_id = trial,
              .lines = {{0, "a"}, {1, "b"}},
              .reports = true,
              .checkpoints = {{"ck-sent-before", trial, 2, "p", "{}"}, {"ck-new", trial, 4, "q"}},
              .metrics = {{trial, "training", 4, R"({"loss":0.5})", 1.5}},
              .points = {{"training/loss", "", 4, 1.5, 0.5}}};
  items[1] = {.trial_id = 9999,
              .lines = {{0, "lost"}},
              .reports = true,
              .metrics = {{9999, "training", 1, R"({"loss":1})", 2}}};
  // Its lines are fine; its report names a trial that does not exist: only the report goes.
  items[2] = {.trial_id = other,
              .lines = {{0, "kept"}},
              .reports = true,
              .metrics = {{other, "training", 1, R"({"loss":1})", 2},
                          {9999, "training", 1, R"({"loss":1})", 2}}};
  items[3] = {.trial_id = other,
              .reports = true,
              .metrics = {{other, "validation", 5, R"({"acc":0.9})", 3}}};
  const std::vector<OutputRowsWritten> written = db_->WriteOutputs(items);
  ASSERT_THAT(written, SizeIs(4));
  EXPECT_OK(written[0].logs);
  EXPECT_OK(written[0].reports) << "a checkpoint stored before is not an error";
  EXPECT_GT(written[0].last_seq, 0);
  EXPECT_THAT(written[1].logs, StatusIs(absl::StatusCode::kNotFound, HasSubstr("trial 9999")));
  EXPECT_THAT(written[1].reports,
              StatusIs(absl::StatusCode::kAborted, HasSubstr("log lines before it")));
  EXPECT_OK(written[2].logs);
  EXPECT_THAT(written[2].reports, StatusIs(absl::StatusCode::kNotFound, HasSubstr("trial 9999")));
  EXPECT_OK(written[3].logs) << "no lines: nothing to fail";
  EXPECT_OK(written[3].reports);
  EXPECT_TRUE(written[0].trial.has_value()) << "a stored report returns its trial's row";
  EXPECT_FALSE(written[2].trial.has_value()) << "a refused one does not";
  ASSERT_TRUE(written[3].trial.has_value());
  EXPECT_EQ(written[3].trial->id, other);

  EXPECT_THAT(db_->ListLogs(trial, 0, std::nullopt, 10).value(), SizeIs(2));
  EXPECT_THAT(db_->ListCheckpoints(trial).value(), SizeIs(2));
  EXPECT_THAT(db_->ListMetrics(trial, std::nullopt).value(), SizeIs(1));
  EXPECT_THAT(db_->ListSeries(trial).value(), SizeIs(1));
  EXPECT_THAT(db_->ListLogs(other, 0, std::nullopt, 10).value(), SizeIs(1));
  ASSERT_OK_AND_ASSIGN(std::vector<MetricRow> metrics, db_->ListMetrics(other, std::nullopt));
  ASSERT_THAT(metrics, SizeIs(1)) << "item 2's refused report left nothing; item 3's is kept";
  EXPECT_EQ(metrics[0].kind, "validation");
  EXPECT_THAT(db_->WriteOutputs({}), IsEmpty());
}

// A big post (an agent back after a partition) is written in a few transactions, cut between
// items: everything is stored, and an item that fails in a later one fails alone.
TEST_P(DatabaseTest, WriteOutputsOfABigPostStoresEveryItem) {
  const int64_t trial = AddTrial();
  std::vector<OutputRows> items(300);
  for (int i = 0; i < 300; ++i) {
    items[i].trial_id = i == 250 ? 9999 : trial;
    for (int l = 0; l < 10; ++l) items[i].lines.emplace_back(0, absl::StrCat(i, ".", l));
  }
  const std::vector<OutputRowsWritten> written = db_->WriteOutputs(items);
  ASSERT_THAT(written, SizeIs(300));
  for (int i = 0; i < 300; ++i) {
    EXPECT_EQ(written[i].logs.ok(), i != 250) << i << ": " << written[i].logs;
  }
  EXPECT_THAT(db_->ListLogs(trial, 0, std::nullopt, 10000).value(), SizeIs(2990));
}

TEST_P(DatabaseTest, DownsamplingKeepsTheFirstLastLowestAndHighestPoints) {
  const int64_t trial = AddTrial();
  std::vector<PointRow> points;
  for (int b = 0; b < 10000; ++b) {
    double value = std::sin(b / 100.0);
    if (b == 4321) value = -50;  // a dip and a spike that a chart must not hide
    if (b == 7777) value = 80;
    points.push_back({"validation/loss", "", b, 1000.0 + b, value});
  }
  ASSERT_OK(db_->InsertPoints(trial, points));
  ASSERT_OK_AND_ASSIGN(
      std::vector<PointRow> down,
      db_->QueryPoints({.trial_id = trial, .name = "validation/loss", .max_points = 100}));
  EXPECT_LE(down.size(), 100u);
  EXPECT_GE(down.size(), 50u);
  EXPECT_EQ(down.front().batch, 0);
  EXPECT_EQ(down.back().batch, 9999);
  auto has = [&](int64_t batch) {
    return std::any_of(down.begin(), down.end(),
                       [&](const PointRow& p) { return p.batch == batch; });
  };
  EXPECT_TRUE(has(4321)) << "the lowest point";
  EXPECT_TRUE(has(7777)) << "the highest point";
  EXPECT_TRUE(std::is_sorted(down.begin(), down.end(), [](const PointRow& a, const PointRow& b) {
    return a.batch < b.batch;
  }));
  // A range downsamples only what is inside it.
  ASSERT_OK_AND_ASSIGN(down, db_->QueryPoints({.trial_id = trial,
                                               .name = "validation/loss",
                                               .min_batch = 5000,
                                               .max_batch = 5999,
                                               .max_points = 40}));
  EXPECT_LE(down.size(), 40u);
  EXPECT_EQ(down.front().batch, 5000);
  EXPECT_EQ(down.back().batch, 5999);
  EXPECT_THAT(
      db_->QueryPoints({.trial_id = trial, .name = "validation/loss", .max_points = 3}).status(),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("at least 4")));
}

TEST_P(DatabaseTest, StepProfilesAreReadByBatchRangeAndTimingsAccumulate) {
  const int64_t trial = AddTrial();
  std::vector<StepProfileRow> rows;
  for (int b = 0; b < 6; ++b) {
    for (int rank : {1, 0}) rows.push_back({rank, b, 1000.0 + b, absl::StrCat("{\"b\":", b, "}")});
  }
  ASSERT_OK(db_->InsertStepProfiles(trial, rows, {{0, "forward", 3, 300, 90, 120}}));
  ASSERT_OK(db_->InsertStepProfiles(
      trial, {}, {{0, "forward", 2, 100, 40, 60}, {1, "forward", 1, 70, 70, 70}}));
  EXPECT_EQ(db_->CountStepProfiles(trial).value(), 12);
  ASSERT_OK_AND_ASSIGN(std::vector<StepProfileRow> range, db_->ListStepProfiles(trial, 2, 3, 100));
  ASSERT_THAT(range, SizeIs(4));
  EXPECT_EQ(range[0].batch, 2);
  EXPECT_EQ(range[0].rank, 0);
  EXPECT_EQ(range[1].rank, 1);
  EXPECT_EQ(range[3].record_json, "{\"b\":3}");
  EXPECT_THAT(db_->ListStepProfiles(trial, 0, 100, 5).value(), SizeIs(5));
  ASSERT_OK_AND_ASSIGN(std::vector<StepTimingRow> timings, db_->ListStepTimings(trial));
  ASSERT_THAT(timings, SizeIs(2));
  EXPECT_EQ(timings[0].rank, 0);
  EXPECT_EQ(timings[0].count, 5);
  EXPECT_EQ(timings[0].total_us, 400);
  EXPECT_EQ(timings[0].min_us, 40);
  EXPECT_EQ(timings[0].max_us, 120);
  EXPECT_EQ(timings[1].rank, 1);
  EXPECT_THAT(db_->InsertStepProfiles(9999, rows, {}),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("trial 9999")));
  EXPECT_EQ(db_->CountStepProfiles(trial).value(), 12) << "a refused insert adds nothing";
}

TEST_P(DatabaseTest, ARanksStepProfilesAreReadEveryStrideBatches) {
  const int64_t trial = AddTrial();
  std::vector<StepProfileRow> rows;
  for (int b = 1; b <= 10; ++b) {
    for (int rank : {1, 0}) rows.push_back({rank, b, 1000.0 + b, absl::StrCat("{\"b\":", b, "}")});
  }
  ASSERT_OK(db_->InsertStepProfiles(trial, rows, {}));
  auto batches = [](const std::vector<StepProfileRow>& rows) {
    std::vector<int64_t> out;
    for (const StepProfileRow& r : rows) out.push_back(r.batch);
    return out;
  };
  ASSERT_OK_AND_ASSIGN(std::vector<StepProfileRow> every,
                       db_->ListRankStepProfiles(trial, 1, 1, 100));
  EXPECT_THAT(batches(every), ElementsAre(1, 2, 3, 4, 5, 6, 7, 8, 9, 10));
  EXPECT_EQ(every[0].rank, 1);
  EXPECT_EQ(every[0].record_json, "{\"b\":1}");
  EXPECT_THAT(batches(db_->ListRankStepProfiles(trial, 0, 3, 100).value()), ElementsAre(3, 6, 9));
  EXPECT_THAT(batches(db_->ListRankStepProfiles(trial, 0, 2, 2).value()), ElementsAre(2, 4));
  EXPECT_THAT(db_->ListRankStepProfiles(trial, 5, 1, 100).value(), IsEmpty());
  EXPECT_THAT(db_->ListRankStepProfiles(trial, 0, 0, 100),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("stride 0")));
}

TEST_P(DatabaseTest, LogPolicyMatchesKeepTheFirstOfEachPolicyInEachRun) {
  const int64_t trial = AddTrial();
  wire::LogPolicyMatch first{.policy = "OOM",
                             .action = wire::LogPolicyAction::kCancelRetries,
                             .allocation = "1.ab.1",
                             .agent = "a1",
                             .rank = 0,
                             .line = "CUDA out of memory",
                             .time_ms = 10};
  ASSERT_OK(db_->InsertLogPolicyMatch(trial, first));
  wire::LogPolicyMatch again = first;
  again.line = "CUDA out of memory again";
  ASSERT_OK(db_->InsertLogPolicyMatch(trial, again));  // the same run and policy: ignored
  wire::LogPolicyMatch other = first;
  other.allocation = "1.ab.2";
  other.action = wire::LogPolicyAction::kExcludeNode;
  other.time_ms = 20;
  ASSERT_OK(db_->InsertLogPolicyMatch(trial, other));
  ASSERT_OK_AND_ASSIGN(auto matches, db_->ListLogPolicyMatches());
  ASSERT_THAT(matches, SizeIs(2));
  EXPECT_EQ(matches[0].first, trial);
  EXPECT_EQ(matches[0].second.line, "CUDA out of memory");
  EXPECT_EQ(matches[0].second.action, wire::LogPolicyAction::kCancelRetries);
  EXPECT_EQ(matches[1].second.allocation, "1.ab.2");
  EXPECT_EQ(matches[1].second.action, wire::LogPolicyAction::kExcludeNode);
  EXPECT_THAT(db_->InsertLogPolicyMatch(9999, first),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("trial 9999")));
}

}  // namespace
}  // namespace cohort::master

namespace cohort::master {
namespace {

// The model registry's rows (docs/design/0023): names unique, listed by name, updated in place.
TEST_P(DatabaseTest, ModelsHaveUniqueNamesAndAreListedByName) {
  ModelRow resnet{.name = "resnet", .description = "vision", .owner = "ann", .created_ms = 5};
  ASSERT_OK_AND_ASSIGN(resnet.id, db_->InsertModel(resnet));
  ASSERT_OK(db_->InsertModel({.name = "bert", .owner = "bob"}).status());
  EXPECT_THAT(db_->InsertModel({.name = "resnet", .owner = "bob"}),
              StatusIs(absl::StatusCode::kAlreadyExists, HasSubstr("'resnet'")));
  ASSERT_OK_AND_ASSIGN(std::vector<ModelRow> all, db_->ListModels());
  ASSERT_THAT(all, SizeIs(2));
  EXPECT_EQ(all[0].name, "bert");
  EXPECT_EQ(all[1].description, "vision");

  resnet.description = "vision, 50 layers";
  resnet.labels_json = R"(["prod"])";
  resnet.updated_ms = 9;
  ASSERT_OK(db_->UpdateModel(resnet));
  ASSERT_OK_AND_ASSIGN(ModelRow read, db_->GetModel("resnet"));
  EXPECT_EQ(read.description, "vision, 50 layers");
  EXPECT_EQ(read.labels_json, R"(["prod"])");
  EXPECT_EQ(read.owner, "ann");
  EXPECT_EQ(read.updated_ms, 9);
  resnet.name = "bert";
  EXPECT_THAT(db_->UpdateModel(resnet), StatusIs(absl::StatusCode::kAlreadyExists));
  EXPECT_THAT(db_->GetModel("gpt"), StatusIs(absl::StatusCode::kNotFound, HasSubstr("'gpt'")));
}

// Versions are numbered per model, never reusing a number, and name an existing checkpoint.
TEST_P(DatabaseTest, ModelVersionsAreNumberedPerModelAndNameACheckpoint) {
  const int64_t trial = AddTrial();
  ASSERT_OK(db_->InsertCheckpoint({"ck-1", trial, 100, "p1", "{}"}));
  ASSERT_OK(db_->InsertCheckpoint({"ck-2", trial, 200, "p2", "{}"}));
  ASSERT_OK_AND_ASSIGN(int64_t a, db_->InsertModel({.name = "a", .owner = "ann"}));
  ASSERT_OK_AND_ASSIGN(int64_t b, db_->InsertModel({.name = "b", .owner = "ann"}));
  ASSERT_OK_AND_ASSIGN(
      ModelVersionRow v1,
      db_->InsertModelVersion(
          {.model_id = a, .checkpoint_id = "ck-1", .notes = "first", .registered_by = "ann"}));
  EXPECT_EQ(v1.version, 1);
  EXPECT_GT(v1.id, 0);
  ASSERT_OK_AND_ASSIGN(ModelVersionRow v2,
                       db_->InsertModelVersion({.model_id = a, .checkpoint_id = "ck-2"}));
  EXPECT_EQ(v2.version, 2);
  ASSERT_OK_AND_ASSIGN(ModelVersionRow b1,
                       db_->InsertModelVersion({.model_id = b, .checkpoint_id = "ck-2"}));
  EXPECT_EQ(b1.version, 1) << "numbered per model";

  ASSERT_OK(db_->DeleteModelVersion(a, 2));
  ASSERT_OK_AND_ASSIGN(ModelVersionRow v3,
                       db_->InsertModelVersion({.model_id = a, .checkpoint_id = "ck-2"}));
  EXPECT_EQ(v3.version, 3) << "a deleted version's number is not given again";
  EXPECT_EQ(db_->GetModel("a").value().last_version, 3);
  EXPECT_EQ(db_->GetModel("a").value().num_versions, 2) << "v1 and v3";
  EXPECT_EQ(db_->ListModels().value()[1].num_versions, 1) << "b's";
  ASSERT_OK_AND_ASSIGN(std::vector<ModelVersionRow> of_a, db_->ListModelVersions(a));
  ASSERT_THAT(of_a, SizeIs(2));
  EXPECT_EQ(of_a[0].notes, "first");
  EXPECT_EQ(of_a[1].version, 3);

  EXPECT_THAT(db_->InsertModelVersion({.model_id = a, .checkpoint_id = "ck-none"}),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("ck-none")));
  EXPECT_THAT(db_->InsertModelVersion({.model_id = a + b + 7, .checkpoint_id = "ck-1"}),
              StatusIs(absl::StatusCode::kNotFound));
  ASSERT_OK(db_->InsertCheckpoint({"ck-gone", trial, 300, "p3", "{}"}));
  ASSERT_OK(db_->MarkCheckpointDeleted("ck-gone"));
  EXPECT_THAT(db_->InsertModelVersion({.model_id = a, .checkpoint_id = "ck-gone"}),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("ck-gone is DELETED")));
  EXPECT_EQ(db_->GetModel("a").value().last_version, 3) << "a refused version takes no number";
  EXPECT_THAT(db_->DeleteModelVersion(a, 2), StatusIs(absl::StatusCode::kNotFound));

  ASSERT_OK_AND_ASSIGN(std::vector<ModelVersionRow> holding,
                       db_->ListVersionsOfCheckpoints({"ck-2", "ck-none", "ck-2"}));
  ASSERT_THAT(holding, SizeIs(2));
  EXPECT_EQ(holding[0].id, b1.id);
  EXPECT_EQ(holding[1].id, v3.id);

  ASSERT_OK(db_->DeleteModel(b));
  EXPECT_THAT(db_->GetModel("b"), StatusIs(absl::StatusCode::kNotFound));
  EXPECT_THAT(db_->ListVersionsOfCheckpoints({"ck-2"}).value(), SizeIs(1)) << "b's went with it";
  EXPECT_THAT(db_->DeleteModel(b), StatusIs(absl::StatusCode::kNotFound));
}

// A state and its webhooks' deliveries commit together: a refused state queues nothing, a
// delivery to a webhook deleted meanwhile leaves the state as it was.
TEST_P(DatabaseTest, AStateChangeAndItsDeliveriesCommitTogether) {
  const int64_t trial = AddTrial();
  const int64_t experiment = db_->GetTrial(trial).value().experiment_id;
  ASSERT_OK_AND_ASSIGN(int64_t hook, db_->InsertWebhook({.url = "http://a/", .type = "DEFAULT"}));
  const DeliveryRow row{.webhook_id = hook, .event = "EXPERIMENT_STATE_CHANGE", .body = "{}"};
  ASSERT_OK(db_->SetExperimentState(experiment, ExperimentState::kCompleted, {row}));
  EXPECT_THAT(db_->ListDeliveries(hook, 10).value(), SizeIs(1));

  ASSERT_OK(db_->InsertCheckpoint({"ck-1", trial, 100, "p1", "{}"}));
  ASSERT_OK_AND_ASSIGN(int64_t m, db_->InsertModel({.name = "m", .owner = "ann"}));
  ASSERT_OK(db_->InsertModelVersion({.model_id = m, .checkpoint_id = "ck-1"}));
  EXPECT_THAT(db_->SetExperimentState(experiment, ExperimentState::kDeleting, {row}),
              StatusIs(absl::StatusCode::kFailedPrecondition));
  EXPECT_THAT(db_->ListDeliveries(hook, 10).value(), SizeIs(1)) << "the refused move's: none";

  DeliveryRow gone = row;
  gone.webhook_id = hook + 100;
  EXPECT_THAT(db_->SetExperimentState(experiment, ExperimentState::kError, {gone}),
              StatusIs(absl::StatusCode::kNotFound));
  EXPECT_EQ(db_->GetExperiment(experiment).value().state, ExperimentState::kCompleted);
}

TEST_P(DatabaseTest, AVersionHoldsItsCheckpointAgainstTheGcAndItsExperimentAgainstDeletion) {
  const int64_t trial = AddTrial();
  const int64_t experiment = db_->GetTrial(trial).value().experiment_id;
  ASSERT_OK(db_->InsertCheckpoint({"ck-1", trial, 100, "p1", "{}"}));
  ASSERT_OK(db_->InsertCheckpoint({"ck-2", trial, 200, "p2", "{}"}));
  ASSERT_OK_AND_ASSIGN(int64_t m, db_->InsertModel({.name = "resnet", .owner = "ann"}));
  ASSERT_OK(db_->InsertModelVersion({.model_id = m, .checkpoint_id = "ck-1"}));

  EXPECT_THAT(db_->MarkCheckpointDeleted("ck-1"),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("checkpoint ck-1 is version 1 of model 'resnet'")));
  EXPECT_EQ(db_->GetCheckpoint("ck-1").value().state, wire::CheckpointState::kActive);
  ASSERT_OK(db_->MarkCheckpointDeleted("ck-2")) << "one no version names";
  EXPECT_THAT(db_->MarkCheckpointDeleted("ck-none"), StatusIs(absl::StatusCode::kNotFound));

  ASSERT_OK(db_->SetExperimentState(experiment, wire::ExperimentState::kCompleted, {}));
  EXPECT_THAT(db_->SetExperimentState(experiment, wire::ExperimentState::kDeleting, {}),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("checkpoint ck-1 is version 1 of model 'resnet'")));
  EXPECT_EQ(db_->GetExperiment(experiment).value().state, wire::ExperimentState::kCompleted)
      << "refused: the state is as it was";

  ASSERT_OK(db_->DeleteModelVersion(m, 1));
  ASSERT_OK(db_->SetExperimentState(experiment, wire::ExperimentState::kDeleting, {}));
  ASSERT_OK(db_->InsertCheckpoint({"ck-3", trial, 300, "p3", "{}"}));
  EXPECT_THAT(db_->InsertModelVersion({.model_id = m, .checkpoint_id = "ck-3"}),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("being deleted")));
  ASSERT_OK(db_->MarkCheckpointDeleted("ck-1")) << "free again";
}

// A registration racing the GC or an experiment's deletion: whichever comes second sees the
// first, so a version never names a checkpoint marked DELETED or of a DELETING experiment.
TEST_P(DatabaseTest, ARegistrationRacingTheGcOrADeletionNeverLeavesAVersionWithoutFiles) {
  ASSERT_OK_AND_ASSIGN(int64_t m, db_->InsertModel({.name = "m", .owner = "ann"}));
  int registered = 0;
  for (int i = 0; i < 30; ++i) {
    const int64_t trial = AddTrial();
    const int64_t experiment = db_->GetTrial(trial).value().experiment_id;
    const std::string id = absl::StrCat("ck-", i);
    ASSERT_OK(db_->InsertCheckpoint({id, trial, 1, "p", "{}"}));
    absl::Status other;
    std::thread racer([&] {
      other = i % 2 == 0
                  ? db_->MarkCheckpointDeleted(id)
                  : db_->SetExperimentState(experiment, wire::ExperimentState::kDeleting, {});
    });
    absl::StatusOr<ModelVersionRow> version =
        db_->InsertModelVersion({.model_id = m, .checkpoint_id = id});
    racer.join();
    ASSERT_NE(version.ok(), other.ok()) << "exactly one wins: " << version.status() << " / "
                                        << other;
    if (version.ok()) ++registered;
  }
  // Every version names an ACTIVE checkpoint of an experiment not being deleted.
  ASSERT_OK_AND_ASSIGN(std::vector<ModelVersionRow> versions, db_->ListModelVersions(m));
  for (const ModelVersionRow& v : versions) {
    const CheckpointRow c = db_->GetCheckpoint(v.checkpoint_id).value();
    EXPECT_EQ(c.state, wire::CheckpointState::kActive) << v.checkpoint_id;
    const int64_t e = db_->GetTrial(c.trial_id).value().experiment_id;
    EXPECT_NE(db_->GetExperiment(e).value().state, wire::ExperimentState::kDeleting);
  }
  EXPECT_EQ(versions.size(), static_cast<size_t>(registered));
}

TEST_P(DatabaseTest, DeliveriesQueueInOrderPerWebhookUntilFinished) {
  ASSERT_OK_AND_ASSIGN(int64_t a, db_->InsertWebhook({.url = "http://a/", .type = "DEFAULT",
                                                      .secret = "s", .allow_local = true,
                                                      .created_by = "root", .created_ms = 5}));
  ASSERT_OK_AND_ASSIGN(int64_t b, db_->InsertWebhook({.url = "http://b/", .type = "SLACK"}));
  ASSERT_OK_AND_ASSIGN(std::vector<WebhookRow> hooks, db_->ListWebhooks());
  ASSERT_THAT(hooks, SizeIs(2));
  EXPECT_EQ(hooks[0].id, a);
  EXPECT_TRUE(hooks[0].allow_local);
  EXPECT_EQ(hooks[0].secret, "s");
  EXPECT_FALSE(hooks[1].allow_local);

  std::vector<DeliveryRow> rows;
  for (int i = 0; i < 70; ++i) {  // more than one multi-row INSERT
    rows.push_back({.webhook_id = i % 2 == 0 ? a : b, .event = "E", .body = absl::StrCat(i),
                    .next_attempt_ms = 100, .created_ms = 1});
  }
  ASSERT_OK(db_->InsertDeliveries(rows));
  EXPECT_THAT(db_->ListDueDeliveries(99, 10).value(), SizeIs(0)) << "none due yet";
  ASSERT_OK_AND_ASSIGN(std::vector<DeliveryRow> due, db_->ListDueDeliveries(100, 10));
  ASSERT_THAT(due, SizeIs(2)) << "each webhook's oldest, nothing behind it";
  EXPECT_EQ(due[0].body, "0");
  EXPECT_EQ(due[1].body, "1");

  // a's first fails and waits: a's later ones wait behind it; b's first is delivered.
  DeliveryRow failed = due[0];
  failed.attempts = 1;
  failed.next_attempt_ms = 200;
  failed.last_error = "HTTP 500";
  ASSERT_OK(db_->UpdateDelivery(failed));
  DeliveryRow done = due[1];
  done.state = "DELIVERED";
  done.attempts = 1;
  done.finished_ms = 150;
  ASSERT_OK(db_->UpdateDelivery(done));
  ASSERT_OK_AND_ASSIGN(due, db_->ListDueDeliveries(150, 10));
  ASSERT_THAT(due, SizeIs(1));
  EXPECT_EQ(due[0].body, "3") << "b's next";
  ASSERT_OK_AND_ASSIGN(due, db_->ListDueDeliveries(200, 10));
  ASSERT_THAT(due, SizeIs(2));
  EXPECT_EQ(due[0].body, "0") << "a's first again, retried";
  EXPECT_EQ(due[0].attempts, 1);
  EXPECT_EQ(due[0].last_error, "HTTP 500");

  ASSERT_OK_AND_ASSIGN(std::vector<DeliveryRow> of_b, db_->ListDeliveries(b, 3));
  ASSERT_THAT(of_b, SizeIs(3));
  EXPECT_EQ(of_b[0].body, "69") << "newest first";
  EXPECT_THAT(db_->InsertDeliveries({{.webhook_id = a + b + 10, .event = "E"}}),
              StatusIs(absl::StatusCode::kNotFound));
  ASSERT_OK(db_->DeleteWebhook(a));
  EXPECT_THAT(db_->ListDeliveries(a, 100).value(), SizeIs(0)) << "its deliveries went with it";
  EXPECT_THAT(db_->DeleteWebhook(a), StatusIs(absl::StatusCode::kNotFound));
  EXPECT_THAT(db_->UpdateDelivery(failed), StatusIs(absl::StatusCode::kNotFound));
}

}  // namespace
}  // namespace cohort::master
