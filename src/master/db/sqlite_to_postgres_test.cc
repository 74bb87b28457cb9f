// CopySqliteToPostgres (--migrate-from): a SQLite master's rows, every table's, read back the
// same from PostgreSQL; ids continue after the copied ones; a non-empty target is refused and
// left as it was; text PostgreSQL cannot store arrives cleaned and counted.

#include "master/db/sqlite_to_postgres.h"

#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "master/db/postgres_database.h"
#include "master/db/sqlite_database.h"
#include "master/db/testing/db_test_helpers.h"
#include "master/db/testing/postgres_server.h"

namespace cohort::master {
namespace {

using ::testing::HasSubstr;
using ::testing::SizeIs;

// A database with rows in every table, as a master that ran a while leaves it.
void Fill(Database& db) {
  const int64_t e1 = db.InsertExperiment(MakeExperiment("first")).value();
  const int64_t e2 = db.InsertExperiment(MakeExperiment("second")).value();
  const int64_t t1 = db.InsertTrial(MakeTrial(e1)).value();
  const int64_t t2 = db.InsertTrial(MakeTrial(e2)).value();
  ASSERT_OK(db.AppendLogs(t1, {{0, "one"}, {1, "two ✓"}, {-1, "three"}}).status());
  ASSERT_OK(db.AppendLogs(t2, {{0, "other"}}).status());
  ASSERT_OK(db.InsertMetrics({{t1, "training", 10, R"({"loss": 0.5})", 1.5},
                              {t1, "validation", 10, R"({"acc": 0.75})", 2.5}}));
  // Inserted out of storage_id order: read back in insertion order.
  ASSERT_OK(db.InsertCheckpoint({"ck-b", t1, 10, "ck-b", "{}"}));
  ASSERT_OK(db.InsertCheckpoint({"ck-a", t1, 20, "ck-a", "{}"}));
  ASSERT_OK(db.MarkCheckpointDeleted("ck-b"));
  ASSERT_OK(db.PutTemplate({"base", "resources: {slots_per_trial: 2}\n"}));
  ASSERT_OK(db.UpsertAgent({"node-1", 8, "10.0.0.1", true}));
  const int64_t user = db.InsertUser({0, "alice", "$argon2id$...", true, true, 1700}).value();
  ASSERT_OK(db.InsertToken({"hash-1", user, 1700, 99999999999}));
  ASSERT_OK(db.InsertPoints(t1, {{"training/loss", "", 1, 1.0, 0.5}, {"gpu", "a/0", 1, 1.0, 9}}));
  ASSERT_OK(
      db.InsertStepProfiles(t1, {{0, 5, 1.25, R"({"b": 5})"}}, {{0, "forward", 2, 10, 4, 6}}));
  ASSERT_OK(db.InsertAllocation({"1.b.1", t1, "tokenhash", {{"node-1", 2}}, 1700}));
  ASSERT_OK(db.InsertLogPolicyMatch(t1, {.policy = "oom",
                                         .action = wire::LogPolicyAction::kCancelRetries,
                                         .allocation = "1.b.1",
                                         .agent = "node-1",
                                         .rank = 0,
                                         .line = "CUDA out of memory",
                                         .time_ms = 1700}));
  const int64_t model = db.InsertModel({.name = "net", .owner = "alice", .created_ms = 1}).value();
  ASSERT_OK(
      db.InsertModelVersion({.model_id = model, .checkpoint_id = "ck-a", .notes = "v1"}).status());
  const int64_t hook = db.InsertWebhook({.url = "https://ci/", .type = "DEFAULT"}).value();
  ASSERT_OK(db.InsertDeliveries({{.webhook_id = hook, .event = "E", .body = "{}"}}));
  // A deleted experiment's ids stay used: AUTOINCREMENT never hands them out again.
  const int64_t doomed = db.InsertExperiment(MakeExperiment("deleted")).value();
  ASSERT_OK(db.DeleteExperimentRows(doomed, 1000).status());
}

// The value of `rows` (by value: a range-for over a temporary StatusOr's value() would dangle);
// a failure fails the test.
template <typename T>
T Get(absl::StatusOr<T> rows) {
  EXPECT_TRUE(rows.ok()) << rows.status();
  return rows.ok() ? *std::move(rows) : T();
}

// Everything Fill stored, as the Database reads it, in one string per table.
std::vector<std::string> Snapshot(Database& db) {
  std::vector<std::string> out;
  for (const ExperimentRow& e : Get(db.ListExperiments())) {
    out.push_back(absl::StrCat("experiment ", e.id, " ", e.name, " ", e.queue_position));
  }
  for (const TrialRow& t : Get(db.ListTrials(std::nullopt))) {
    out.push_back(absl::StrCat("trial ", t.id, " ", t.experiment_id, " ", t.hparams_json, " ",
                               t.searcher_metric.value_or(-1)));
  }
  for (int64_t trial : {1, 2}) {
    for (const LogRow& l : Get(db.ListLogs(trial, 0, std::nullopt, 100))) {
      out.push_back(absl::StrCat("log ", l.seq, " ", l.trial_id, " ", l.rank, " ", l.line));
    }
    for (const MetricRow& m : Get(db.ListMetrics(trial, std::nullopt))) {
      out.push_back(absl::StrCat("metric ", m.id, " ", m.kind, " ", m.metrics_json, " ", m.time));
    }
    for (const CheckpointRow& c : Get(db.ListCheckpoints(trial))) {
      out.push_back(absl::StrCat("checkpoint ", c.storage_id, " ", wire::Name(c.state)));
    }
    for (const SeriesRow& s : Get(db.ListSeries(trial))) {
      out.push_back(absl::StrCat("series ", s.name, " ", s.label, " ", s.points));
    }
    for (const StepTimingRow& t : Get(db.ListStepTimings(trial))) {
      out.push_back(absl::StrCat("timing ", t.phase, " ", t.count, " ", t.min_us, " ", t.max_us));
    }
    out.push_back(absl::StrCat("profiles ", db.CountStepProfiles(trial).value()));
  }
  for (const TemplateRow& t : Get(db.ListTemplates())) out.push_back("template " + t.name);
  for (const AgentRow& a : Get(db.ListAgents())) out.push_back("agent " + a.id);
  for (const UserRow& u : Get(db.ListUsers())) out.push_back(absl::StrCat("user ", u.id, u.name));
  out.push_back("token " + db.GetToken("hash-1").value().hash);
  for (const AllocationRow& a : Get(db.ListAllocations())) out.push_back("allocation " + a.id);
  for (const auto& [trial, m] : Get(db.ListLogPolicyMatches())) {
    out.push_back(absl::StrCat("match ", trial, " ", m.policy, " ", m.line));
  }
  for (const LogStatsRow& s : Get(db.ListLogStats())) {
    out.push_back(absl::StrCat("stats ", s.trial_id, " ", s.lines, " ", s.bytes));
  }
  for (const ModelRow& m : Get(db.ListModels())) {
    out.push_back(absl::StrCat("model ", m.id, " ", m.name, " ", m.owner, " ", m.last_version));
    for (const ModelVersionRow& v : Get(db.ListModelVersions(m.id))) {
      out.push_back(
          absl::StrCat("version ", v.id, " ", v.version, " ", v.checkpoint_id, " ", v.notes));
    }
  }
  for (const WebhookRow& w : Get(db.ListWebhooks())) {
    out.push_back(absl::StrCat("webhook ", w.id, " ", w.url));
    for (const DeliveryRow& d : Get(db.ListDeliveries(w.id, 10))) {
      out.push_back(absl::StrCat("delivery ", d.id, " ", d.state, " ", d.body));
    }
  }
  return out;
}

TEST(SqliteToPostgresTest, EveryRowArrivesAndIdsContinueAfterTheCopiedOnes) {
  TempDir dir;
  const std::string path = dir.path() + "/master.db";
  std::vector<std::string> before;
  {
    ASSERT_OK_AND_ASSIGN(std::unique_ptr<Database> sqlite, OpenSqliteDatabase(path));
    Fill(*sqlite);
    before = Snapshot(*sqlite);
  }
  ASSERT_OK_AND_ASSIGN(std::string url, db_testing::NewSharedDatabase());
  std::vector<std::string> tables;
  ASSERT_OK_AND_ASSIGN(
      CopyReport report,
      CopySqliteToPostgres(path, url, {}, [&](const std::string& table, int64_t, int64_t) {
        if (tables.empty() || tables.back() != table) tables.push_back(table);
      }));
  EXPECT_EQ(report.tables, 20);
  EXPECT_EQ(report.cleaned_texts, 0);
  EXPECT_THAT(tables, SizeIs(20));
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<PostgresDatabase> postgres, PostgresDatabase::Open(url));
  EXPECT_EQ(Snapshot(*postgres), before);
  // The deleted experiment was 3: the next is 4 on PostgreSQL too.
  EXPECT_THAT(postgres->InsertExperiment(MakeExperiment("next")), IsOkAndHolds(4));
  EXPECT_THAT(postgres->AppendLogs(1, {{0, "after"}}), IsOkAndHolds(5));
}

TEST(SqliteToPostgresTest, ANonEmptyTargetIsRefusedAndLeftAsItWas) {
  TempDir dir;
  const std::string path = dir.path() + "/master.db";
  {
    ASSERT_OK_AND_ASSIGN(std::unique_ptr<Database> sqlite, OpenSqliteDatabase(path));
    Fill(*sqlite);
  }
  ASSERT_OK_AND_ASSIGN(std::string url, db_testing::NewSharedDatabase());
  {
    ASSERT_OK_AND_ASSIGN(std::unique_ptr<PostgresDatabase> postgres, PostgresDatabase::Open(url));
    ASSERT_OK(postgres->PutTemplate({"mine", "x: 1\n"}));
  }
  EXPECT_THAT(CopySqliteToPostgres(path, url, {}, {}).status(),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       ::testing::AllOf(HasSubstr("table templates holds 1 rows"),
                                        HasSubstr("empty database"))));
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<PostgresDatabase> postgres, PostgresDatabase::Open(url));
  EXPECT_THAT(postgres->ListExperiments().value(), ::testing::IsEmpty());
  EXPECT_THAT(postgres->ListTemplates().value(), SizeIs(1));
}

// An older master stored log lines as printed: a NUL and invalid UTF-8 arrive as U+FFFD.
TEST(SqliteToPostgresTest, TextPostgresqlCannotStoreArrivesCleanedAndCounted) {
  TempDir dir;
  const std::string path = dir.path() + "/master.db";
  {
    ASSERT_OK_AND_ASSIGN(std::unique_ptr<Database> sqlite, OpenSqliteDatabase(path));
    const int64_t e = sqlite->InsertExperiment(MakeExperiment("e")).value();
    ASSERT_OK(sqlite->InsertTrial(MakeTrial(e)).status());
  }
  // Behind the Database's back, as an older master wrote it.
  ExecOnFile(
      path, "INSERT INTO logs (trial_id, rank, line) VALUES (?1, 0, CAST(X'610062FF' AS TEXT))", 1);
  ASSERT_OK_AND_ASSIGN(std::string url, db_testing::NewSharedDatabase());
  ASSERT_OK_AND_ASSIGN(CopyReport report, CopySqliteToPostgres(path, url, {}, {}));
  EXPECT_EQ(report.cleaned_texts, 1);
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<PostgresDatabase> postgres, PostgresDatabase::Open(url));
  ASSERT_OK_AND_ASSIGN(std::vector<LogRow> logs, postgres->ListLogs(1, 0, std::nullopt, 10));
  ASSERT_THAT(logs, SizeIs(1));
  EXPECT_EQ(logs[0].line,
            "a\xEF\xBF\xBD"
            "b\xEF\xBF\xBD");
}

}  // namespace
}  // namespace cohort::master
