// The master's lifecycles in-process: a real Master on an in-memory SQLite database, agents
// played by the test through the same calls the HTTP routes make, and a FakeClock, so timeouts
// are tested without waiting for them (no HTTP, no processes; tests/cluster runs the real ones).

#include "master/master.h"

#include <sys/mount.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <future>
#include <iterator>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <thread>

#include "absl/strings/str_cat.h"
#include "common/clock.h"
#include "common/testing/status_matchers.h"
#include "config/yaml_json.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace cohort::master {
namespace {

namespace fs = std::filesystem;
using ::cohort::testing_support::IsOk;
using ::cohort::testing_support::StatusIs;
using ::testing::HasSubstr;
using ::testing::Not;

const Actor kRoot{"admin", true};

std::string Config(int slots, int max_restarts, const std::string& searcher,
                   const std::string& hparams = "{global_batch_size: 8}") {
  return absl::StrCat("name: t\nentrypoint: trial\nhyperparameters: ", hparams, "\n",
                      "resources: {slots_per_trial: ", slots, "}\nmax_restarts: ", max_restarts,
                      "\nsearcher: ", searcher, "\n");
}
const char kSingle[] = "{name: single, metric: loss, max_length: {batches: 10}}";
// Seed 5 draws increments 12, 21, 23, 20; the metric at a rung is increment * rung (smaller is
// better), as stage 3 of the Core API tutorial reports it. Rungs 200 and 400.
const char kAsha[] =
    "name: asha\nentrypoint: trial\nreproducibility: {experiment_seed: 5}\n"
    "hyperparameters: {global_batch_size: 16, increment_by: {type: int, minval: 1, maxval: 50}}\n"
    "searcher: {name: adaptive_asha, metric: x, max_length: {batches: 400}, max_trials: 4,\n"
    "  max_rungs: 2, divisor: 2, mode: aggressive, max_concurrent_trials: 1}\n";

double MetricAt(const Json& start, int64_t length) {
  return static_cast<double>(start["hparams"]["increment_by"].get<int64_t>() * length);
}

class MasterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           absl::StrCat("cohort-master-test-", ::getpid(), "-",
                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
    // An allowed checkpoint storage root beside the data directory (never inside it).
    shared_ = fs::path(dir_.string() + "-shared");
    fs::create_directories(shared_);
    roots_ = {shared_.string()};
    Start(":memory:");
  }
  // (Re)starts the master on the SQLite database `db_path` (":memory:" or a file in dir_).
  // Passes run inside each request (kInline) unless `scheduling` says otherwise; `during_schedule`
  // runs while a kManual or kBackground pass computes.
  void Start(const std::string& db_path, int max_log_followers = 16,
             SchedulingMode scheduling = SchedulingMode::kInline,
             std::function<void()> during_schedule = nullptr) {
    master_.reset();
    master_ = Master::Create(OpenSqliteDatabase(db_path).value(),
                             {.data_dir = dir_.string(),
                              .checkpoint_storage_roots = roots_,
                              .agent_timeout = absl::Seconds(30),
                              .clock = &clock_,
                              .max_log_followers = max_log_followers,
                              .scheduling = scheduling,
                              .during_schedule = std::move(during_schedule),
                              .resource_pools = pools_})
                  .value();
  }
  // A master on a database file in dir_, so a test can restart it.
  void StartOnFile() { Start((dir_ / "master.db").string()); }
  void TearDown() override {
    master_.reset();
    fs::remove_all(dir_);
    fs::remove_all(shared_);
  }

  void Register(const std::string& id, int slots) {
    ASSERT_OK(master_->agents().Register({.id = id, .slots = slots, .host = "127.0.0.1"}));
  }
  Json Actions(const std::string& agent) {
    absl::StatusOr<wire::ActionBatch> r = master_->agents().WaitForActions(agent, absl::ZeroDuration());
    EXPECT_OK(r);
    return r.ok() ? r->ToJson()["actions"] : Json::array();
  }
  int64_t Create(const std::string& yaml) {
    absl::StatusOr<int64_t> id = master_->CreateExperiment(yaml, "", "", kRoot);
    EXPECT_OK(id);
    return id.value_or(0);
  }
  Json Experiment(int64_t id) { return master_->DescribeExperiment(id, kRoot).value().ToJson(); }
  Json Trial(int64_t id) { return master_->DescribeTrial(id).value().ToJson(); }
  // The one start action `agent` has waiting; fails the test otherwise.
  Json OnlyStart(const std::string& agent) {
    Json actions = Actions(agent);
    EXPECT_EQ(actions.size(), 1u) << actions.dump();
    if (actions.size() != 1u) return Json::object();
    EXPECT_EQ(actions[0]["type"], "start");
    return actions[0];
  }
  absl::Status Exit(const Json& start, int status) {
    return master_->AllocationExit(start["allocation"].get<std::string>(),
                                   {.node = start["node_rank"].get<int>(), .status = status});
  }
  // The chief's report that the trial finished the searcher operation of `length` with `metric`.
  absl::Status ReportRung(const Json& start, int64_t length, double metric) {
    wire::ReportRecord completed{.kind = wire::ReportKind::kCompleted,
                                 .searcher_metric = metric,
                                 .length = static_cast<double>(length)};
    return master_->AllocationReports(start["allocation"].get<std::string>(),
                                      {.trial_id = start["trial_id"], .lines = {completed}});
  }
  // The run `start`'s chief stores checkpoint `id` after `steps` batches (at /ck/ID).
  absl::Status ReportCheckpoint(const Json& start, int64_t steps, const std::string& id) {
    wire::ReportRecord checkpoint{.kind = wire::ReportKind::kCheckpoint,
                                  .steps_completed = steps,
                                  .storage_id = id,
                                  .path = "/ck/" + id};
    return master_->AllocationReports(start["allocation"].get<std::string>(),
                                      {.trial_id = start["trial_id"], .lines = {checkpoint}});
  }
  // kAsha's first two trials on agent "a1": trial 1 reports both rungs and completes, trial 2
  // stops at 200 (4200 is not the best 1 of 2). Returns trial 2's start action.
  Json AshaUntilTheSecondTrialStops() {
    Json t1 = OnlyStart("a1");
    EXPECT_OK(ReportRung(t1, 200, MetricAt(t1, 200)));
    EXPECT_OK(ReportRung(t1, 400, MetricAt(t1, 400)));
    EXPECT_OK(Exit(t1, 0));
    Json t2 = OnlyStart("a1");
    EXPECT_OK(ReportRung(t2, 200, MetricAt(t2, 200)));
    EXPECT_EQ(Actions("a1").size(), 1u) << "trial 2's stop";
    EXPECT_OK(Exit(t2, 143));
    EXPECT_EQ(Trial(t2["trial_id"])["state"], "STOPPED");
    return t2;
  }
  std::string Logs(int64_t trial) {
    Json page = master_->trial_logs().Read(trial, std::nullopt, 0, absl::ZeroDuration()).value().ToJson();
    std::string text;
    for (const Json& l : page["logs"]) absl::StrAppend(&text, l["line"].get<std::string>(), "\n");
    return text;
  }

  FakeClock clock_;
  ResourcePools pools_ = DefaultResourcePools();  // what Start gives the master
  fs::path dir_;
  fs::path shared_;                  // an allowed checkpoint storage root
  std::vector<std::string> roots_;  // what Start allows: shared_
  std::unique_ptr<Master> master_;
};

// --- scheduling passes off the request path (docs/design/0012) ----------------------------------

TEST_F(MasterTest, TheListCarriesTheConfigsDescriptionAndLabels) {
  Create(Config(1, 0, kSingle) + "description: a sweep of the learning rate\nlabels: [nlp, base]\n");
  Create(Config(1, 0, kSingle));
  absl::StatusOr<wire::ExperimentList> list = master_->ListExperiments();
  ASSERT_OK(list);
  ASSERT_EQ(list->experiments.size(), 2u);
  EXPECT_EQ(list->experiments[0].description, "a sweep of the learning rate");
  EXPECT_EQ(list->experiments[0].labels, (std::vector<std::string>{"nlp", "base"}));
  EXPECT_EQ(list->experiments[1].description, "");
  EXPECT_TRUE(list->experiments[1].labels.empty());
}

TEST_F(MasterTest, ManyRequestsShareOnePendingSchedulingPass) {
  Start(":memory:", 16, SchedulingMode::kManual);
  Register("a1", 1);
  Register("a2", 1);
  Create(Config(1, 0, kSingle));
  Create(Config(1, 0, kSingle));
  EXPECT_TRUE(Actions("a1").empty()) << "requests only mark a pass pending";
  EXPECT_EQ(master_->Stats()->scheduling.passes, 0);
  EXPECT_TRUE(master_->RunPendingPass());
  EXPECT_FALSE(master_->RunPendingPass()) << "five requests, one pass";
  EXPECT_EQ(master_->Stats()->scheduling.passes, 1);
  const Json on_a1 = OnlyStart("a1");
  const Json on_a2 = OnlyStart("a2");
  EXPECT_NE(on_a1["trial_id"], on_a2["trial_id"]);
  EXPECT_EQ(Trial(on_a1["trial_id"])["state"], "RUNNING");
  EXPECT_EQ(master_->Stats()->queued, 0);
}

TEST_F(MasterTest, ARequestCompletesWhileAPassComputes) {
  std::optional<bool> answered;  // set while the pass computes
  Start(":memory:", 16, SchedulingMode::kManual, [&] {
    if (answered) return;
    std::future<absl::StatusOr<wire::AgentList>> list =
        std::async(std::launch::async, [&] { return master_->agents().List(); });
    // Only a deadline for a failure: with the lock held the request could not finish at all.
    answered = list.wait_for(std::chrono::seconds(30)) == std::future_status::ready;
  });
  Register("a1", 1);
  const int64_t exp = Create(Config(1, 0, kSingle));
  ASSERT_TRUE(master_->RunPendingPass());
  ASSERT_TRUE(answered.has_value());
  EXPECT_TRUE(*answered) << "the state lock is free while Schedule() computes";
  EXPECT_EQ(Experiment(exp)["trials"][0]["state"], "RUNNING");
}

TEST_F(MasterTest, APassStartsNothingOnAnAgentDisabledWhileItComputed) {
  bool disable = true;
  Start(":memory:", 16, SchedulingMode::kManual, [&] {
    if (!disable) return;
    disable = false;
    EXPECT_OK(master_->agents().SetEnabled("a1", false));
  });
  Register("a1", 1);
  const int64_t exp = Create(Config(1, 0, kSingle));
  ASSERT_TRUE(master_->RunPendingPass());
  EXPECT_TRUE(Actions("a1").empty()) << "placed on a1 before it was disabled: not started";
  EXPECT_EQ(Experiment(exp)["trials"][0]["state"], "QUEUED");
  ASSERT_OK(master_->agents().SetEnabled("a1", true));
  ASSERT_TRUE(master_->RunPendingPass());
  OnlyStart("a1");
  EXPECT_EQ(Experiment(exp)["trials"][0]["state"], "RUNNING");
}

TEST_F(MasterTest, APassStartsNoTrialPausedWhileItComputed) {
  int64_t exp = 0;
  bool pause = true;
  Start(":memory:", 16, SchedulingMode::kManual, [&] {
    if (!pause) return;
    pause = false;
    EXPECT_OK(master_->PauseExperiment(exp, kRoot));
  });
  Register("a1", 1);
  exp = Create(Config(1, 0, kSingle));
  ASSERT_TRUE(master_->RunPendingPass());
  EXPECT_TRUE(Actions("a1").empty());
  EXPECT_EQ(Experiment(exp)["trials"][0]["state"], "PAUSED");
}

TEST_F(MasterTest, TheSchedulerThreadPlacesWhatRequestsQueue) {
  Start(":memory:", 16, SchedulingMode::kBackground);
  Register("a1", 1);
  const int64_t exp = Create(Config(1, 0, kSingle));
  ASSERT_TRUE(master_->WaitForScheduling(absl::Seconds(30)));
  const Json start = OnlyStart("a1");
  ASSERT_OK(Exit(start, 0));
  ASSERT_TRUE(master_->WaitForScheduling(absl::Seconds(30)));
  EXPECT_EQ(Experiment(exp)["state"], "COMPLETED");
  master_.reset();  // the scheduler thread stops with the master
}

TEST_F(MasterTest, ARestartedMasterSchedulesFromTheQueueItLoads) {
  StartOnFile();
  const int64_t exp = Create(Config(1, 0, kSingle));  // no agent yet: it waits
  Start((dir_ / "master.db").string(), 16, SchedulingMode::kManual);
  Register("a1", 1);
  EXPECT_EQ(master_->Stats()->queued, 1) << "loaded from the database";
  ASSERT_TRUE(master_->RunPendingPass());
  OnlyStart("a1");
  EXPECT_EQ(Experiment(exp)["trials"][0]["state"], "RUNNING");
}

TEST_F(MasterTest, ATrialRunsOnAFreeAgentAndCompletesWhenEveryNodeExitsZero) {
  Register("a1", 2);
  const int64_t exp = Create(Config(2, 0, kSingle));
  Json start = OnlyStart("a1");
  const int64_t trial = start["trial_id"];
  EXPECT_EQ(start["slots"], 2);
  EXPECT_EQ(Trial(trial)["state"], "RUNNING");
  ASSERT_OK(Exit(start, 0));
  EXPECT_EQ(Trial(trial)["state"], "COMPLETED");
  EXPECT_EQ(Experiment(exp)["state"], "COMPLETED");
  EXPECT_TRUE(Actions("a1").empty()) << "nothing is left to run";
}

// A searched global_batch_size: each trial's length in records is counted in its own batches.
TEST_F(MasterTest, EachTrialsTotalBatchesFollowItsSearchedGlobalBatchSize) {
  const int64_t exp = Create(Config(1, 0, "{name: grid, metric: loss, max_length: {records: 640}}",
                                    "{global_batch_size: {type: categorical, vals: [16, 32]}}"));
  const Json e = Experiment(exp);
  std::map<int64_t, int64_t> total_by_batch;
  for (const Json& t : e["trials"]) {
    total_by_batch[t["hparams"]["global_batch_size"]] = t["total_batches"];
  }
  EXPECT_EQ(total_by_batch, (std::map<int64_t, int64_t>{{16, 40}, {32, 20}})) << e.dump();
}

// A checkpoint_storage block without a type (Determined's examples set only save_* counts) is
// the master's own storage with those counts.
TEST_F(MasterTest, AStorageBlockWithoutATypeIsTheMastersSharedFsWithItsCounts) {
  Register("a1", 1);
  Create(Config(1, 0, kSingle) + "checkpoint_storage: {save_trial_latest: 5}\n");
  const Json start = OnlyStart("a1");
  absl::StatusOr<config::Json> effective = config::ParseYaml(start["config"].get<std::string>());
  ASSERT_OK(effective);
  const auto& storage = (*effective)["checkpoint_storage"];
  EXPECT_EQ(storage["type"], "shared_fs") << storage.dump();
  EXPECT_EQ(storage["host_path"], (dir_ / "checkpoints").string());
  EXPECT_EQ(storage["save_trial_latest"], 5);
  EXPECT_EQ(storage["save_trial_best"], 1) << "Determined's default";
}

// When the experiment ends, the checkpoints its save_* counts let go are marked DELETED and
// deleted from the storage; a path outside the storage (an agent's word) is never removed. One
// marked but not yet deleted when the master stopped (killed) is deleted by the next start.
TEST_F(MasterTest, CheckpointGcDeletesWhatTheSaveCountsLetGoWhenTheExperimentEnds) {
  StartOnFile();
  Register("a1", 1);
  const fs::path storage = shared_ / "storage";
  const fs::path outside = dir_ / "outside";
  fs::create_directories(outside);
  Create(Config(1, 0, kSingle) + "checkpoint_storage: {type: shared_fs, host_path: " +
         storage.string() + ", save_trial_best: 1, save_trial_latest: 1}\n");
  const Json start = OnlyStart("a1");
  const int64_t trial = start["trial_id"];
  // Checkpoints at batches 2, 4, 6, 8; the loss is lowest at 4; the one at 6 claims a path
  // outside the storage.
  const double loss[] = {0.9, 0.2, 0.5, 0.7};
  std::vector<wire::ReportRecord> lines;
  for (int i = 0; i < 4; ++i) {
    const int64_t batch = 2 * (i + 1);
    const std::string id = absl::StrCat("ck-", batch);
    const fs::path path = (i == 2 ? outside : storage) / id;
    fs::create_directories(path);
    lines.push_back({.kind = wire::ReportKind::kValidation,
                     .steps_completed = batch,
                     .metrics = {{"loss", loss[i]}}});
    lines.push_back({.kind = wire::ReportKind::kCheckpoint,
                     .steps_completed = batch,
                     .storage_id = id,
                     .path = path.string()});
  }
  ASSERT_OK(master_->AllocationReports(start["allocation"], {.trial_id = trial, .lines = lines}));
  ASSERT_OK(Exit(start, 0));
  const wire::CheckpointList list = master_->checkpoints().OfTrial(trial).value();
  std::map<std::string, wire::CheckpointState> state;
  for (const wire::CheckpointEntry& c : list.checkpoints) state[c.storage_id] = c.state;
  EXPECT_EQ(state["ck-2"], wire::CheckpointState::kDeleted);
  EXPECT_EQ(state["ck-4"], wire::CheckpointState::kActive) << "the best";
  EXPECT_EQ(state["ck-6"], wire::CheckpointState::kActive) << "outside the storage: kept";
  EXPECT_EQ(state["ck-8"], wire::CheckpointState::kActive) << "the latest";
  EXPECT_TRUE(fs::exists(outside / "ck-6"));
  EXPECT_THAT(Logs(trial), HasSubstr("checkpoint ck-2 (batch 2) deleted"));
  EXPECT_THAT(Logs(trial), HasSubstr("ck-6 (batch 6) kept: its path"));
  EXPECT_THAT(master_->checkpoints().Files("ck-2"),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("checkpoint GC")))
      << "marked: never read again";
  // The files go without the master's lock (through the storage, on its monitor thread); by
  // the time the master has stopped nothing is left of them.
  master_.reset();
  EXPECT_FALSE(fs::exists(storage / "ck-2"));
  EXPECT_FALSE(fs::exists(storage / ".deleted-ck-2"));
  EXPECT_TRUE(fs::exists(storage / "ck-4"));
  // A master killed between the mark and the deletion: the next start deletes it.
  fs::create_directories(storage / "ck-2" / "sub");
  StartOnFile();
  master_.reset();
  EXPECT_FALSE(fs::exists(storage / "ck-2"));
  EXPECT_TRUE(fs::exists(storage / "ck-4")) << "an active checkpoint stays";
  EXPECT_TRUE(fs::exists(storage / "ck-8"));
}

// Whether experiment `id` is gone (NotFound) within 10 s: its deletion runs on the master's
// monitor thread.
bool GoneWithin10s(Master& master, int64_t id) {
  for (int i = 0; i < 1000; ++i) {
    if (absl::IsNotFound(master.DescribeExperiment(id, kRoot).status())) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

// --- checkpoint storage the master can trust (issue 34) ---------------------------------------

// The attack: an experiment whose checkpoint storage is the master's data directory's parent
// (or the directory itself, or anywhere outside the allowed roots) is refused at creation,
// naming the roots; nothing is stored.
TEST_F(MasterTest, ACheckpointStorageOutsideTheAllowedRootsIsRefusedAtCreation) {
  Register("a1", 1);
  const std::string up = (shared_ / ".." / dir_.filename()).string();
  for (const std::string& storage :
       {"{type: shared_fs, host_path: " + dir_.parent_path().string() + "}",
        "{type: shared_fs, host_path: " + dir_.string() + "}", std::string("{type: shared_fs, "
                                                                           "host_path: /}"),
        "{type: shared_fs, host_path: " + up + "}",
        "{type: shared_fs, host_path: " + shared_.string() + ", storage_path: ../x}"}) {
    absl::StatusOr<int64_t> id = master_->CreateExperiment(
        Config(1, 0, kSingle) + "checkpoint_storage: " + storage + "\n", "", "", kRoot);
    ASSERT_THAT(id, Not(IsOk())) << storage;
    EXPECT_TRUE(absl::IsInvalidArgument(id.status())) << id.status();
    EXPECT_THAT(id.status().message(), HasSubstr("checkpoint_storage."));
    EXPECT_THAT(id.status().message(), HasSubstr(shared_.string())) << "names the roots";
    EXPECT_THAT(id.status().message(), HasSubstr("--checkpoint-storage-roots"));
  }
  EXPECT_TRUE(master_->ListExperiments()->experiments.empty());
  // A link inside an allowed root that leads to the data directory's parent: refused too.
  fs::create_directory_symlink(dir_.parent_path(), shared_ / "escape");
  EXPECT_TRUE(absl::IsInvalidArgument(
      master_
          ->CreateExperiment(Config(1, 0, kSingle) + "checkpoint_storage: {type: shared_fs, "
                                                     "host_path: " +
                                 (shared_ / "escape").string() + "}\n",
                             "", "", kRoot)
          .status()));
}

// Inside an allowed storage, a trial reports a "checkpoint" that is a link to the master's data
// directory, or names it with '..': it is never downloaded, and neither the checkpoint GC at
// the end, a kill, nor deleting the experiment removes what the link points to.
TEST_F(MasterTest, ACheckpointThatLeadsOutOfItsStorageIsNeitherReadNorDeleted) {
  Register("a1", 1);
  const fs::path storage = shared_ / "storage";
  fs::create_directories(storage);
  std::ofstream(dir_ / "secret") << "the master's";
  fs::create_directory_symlink(dir_, storage / "m1");
  fs::create_directory_symlink(dir_, storage / "m2");
  const std::string config = Config(1, 0, kSingle) +
                             "checkpoint_storage: {type: shared_fs, host_path: " +
                             storage.string() +
                             ", save_experiment_best: 0, save_trial_best: 0, "
                             "save_trial_latest: 0}\n";
  auto run = [&](bool kill, const std::string& id) {
    const int64_t exp = Create(config);
    const Json start = OnlyStart("a1");
    const int64_t trial = start["trial_id"];
    for (const std::string& bad : {std::string(".."), "../" + dir_.filename().string()}) {
      wire::ReportRecord dotted{.kind = wire::ReportKind::kCheckpoint,
                                .steps_completed = 1,
                                .storage_id = bad,
                                .path = (storage / bad).string()};
      EXPECT_THAT(wire::ParseReportRecord(dotted.ToJson()), Not(IsOk())) << bad;
    }
    wire::ReportRecord linked{.kind = wire::ReportKind::kCheckpoint,
                              .steps_completed = 2,
                              .storage_id = id,
                              .path = (storage / id).string()};
    EXPECT_OK(
        master_->AllocationReports(start["allocation"], {.trial_id = trial, .lines = {linked}}));
    absl::StatusOr<checkpoints::CheckpointFiles> files = master_->checkpoints().Files(id);
    EXPECT_TRUE(absl::IsFailedPrecondition(files.status())) << files.status();
    EXPECT_THAT(files.status().message(), HasSubstr("symbolic link"));
    if (kill) {
      EXPECT_OK(master_->KillExperiment(exp, kRoot));
    }
    EXPECT_OK(Exit(start, kill ? 143 : 0));
    EXPECT_TRUE(wire::IsTerminal(wire::ParseExperimentState(Experiment(exp)["state"]).value()));
    EXPECT_THAT(Logs(trial), HasSubstr("checkpoint " + id + " (batch 2) kept"));
    return exp;
  };
  const int64_t ended = run(false, "m1");
  const int64_t killed = run(true, "m2");
  for (int64_t exp : {ended, killed}) {
    ASSERT_OK(master_->DeleteExperiment(exp, kRoot));
    ASSERT_TRUE(GoneWithin10s(*master_, exp));
  }
  master_.reset();  // the monitor thread's removals are done
  EXPECT_TRUE(fs::exists(dir_ / "secret"));
  EXPECT_TRUE(fs::exists(dir_ / "contexts"));
  EXPECT_TRUE(fs::is_symlink(storage / "m1")) << "refused, so left as it was";
  EXPECT_TRUE(fs::is_symlink(storage / "m2"));
}

// An experiment stored while a root was allowed, by a master that no longer allows it (or by
// an older master that allowed anything): its checkpoints are neither read nor deleted.
TEST_F(MasterTest, ACheckpointOutsideTheRootsOfThisRunIsNotActedOn) {
  const fs::path other = fs::path(dir_.string() + "-other");
  fs::create_directories(other / "ck-1");
  roots_ = {shared_.string(), other.string()};
  StartOnFile();
  Register("a1", 1);
  const int64_t exp = Create(Config(1, 0, kSingle) +
                             "checkpoint_storage: {type: shared_fs, host_path: " + other.string() +
                             ", save_trial_latest: 5}\n");
  const Json start = OnlyStart("a1");
  wire::ReportRecord c{.kind = wire::ReportKind::kCheckpoint,
                       .steps_completed = 1,
                       .storage_id = "ck-1",
                       .path = (other / "ck-1").string()};
  ASSERT_OK(master_->AllocationReports(start["allocation"],
                                       {.trial_id = start["trial_id"], .lines = {c}}));
  ASSERT_OK(Exit(start, 0));
  EXPECT_OK(master_->checkpoints().Files("ck-1")) << "allowed in this run";
  roots_ = {shared_.string()};
  StartOnFile();
  absl::StatusOr<checkpoints::CheckpointFiles> files = master_->checkpoints().Files("ck-1");
  EXPECT_TRUE(absl::IsFailedPrecondition(files.status())) << files.status();
  EXPECT_THAT(files.status().message(), HasSubstr("outside the checkpoint storage roots"));
  ASSERT_OK(master_->DeleteExperiment(exp, kRoot));
  ASSERT_TRUE(GoneWithin10s(*master_, exp));
  EXPECT_TRUE(fs::exists(other / "ck-1")) << "not in a root of this run: left";
  fs::remove_all(other);
}

// A trial that ends gives up what the save_* counts let go at once, while the experiment still
// runs; what the experiment's best might still need waits for the experiment's end.
TEST_F(MasterTest, CheckpointGcCollectsATrialsCheckpointsWhenTheTrialEnds) {
  Register("a1", 2);
  const fs::path storage = shared_ / "storage";
  Create(Config(1, 0, "{name: grid, metric: loss, max_length: {batches: 10}}",
                "{global_batch_size: 8, x: {type: categorical, vals: [1, 2]}}") +
         "checkpoint_storage: {type: shared_fs, host_path: " + storage.string() +
         ", save_experiment_best: 1, save_trial_best: 0, save_trial_latest: 1}\n");
  const Json actions = Actions("a1");
  ASSERT_EQ(actions.size(), 2u) << actions.dump();
  // Each trial: checkpoints at batches 2 (loss 0.1 for the first trial, 0.3 for the second),
  // 4 and 6 (loss 0.5).
  auto report = [&](const Json& start, double first_loss) {
    std::vector<wire::ReportRecord> lines;
    for (int64_t batch : {2, 4, 6}) {
      const std::string id = absl::StrCat("t", start["trial_id"].get<int64_t>(), "-", batch);
      fs::create_directories(storage / id);
      lines.push_back({.kind = wire::ReportKind::kValidation,
                       .steps_completed = batch,
                       .metrics = {{"loss", batch == 2 ? first_loss : 0.5}}});
      lines.push_back({.kind = wire::ReportKind::kCheckpoint,
                       .steps_completed = batch,
                       .storage_id = id,
                       .path = (storage / id).string()});
    }
    return master_->AllocationReports(start["allocation"],
                                      {.trial_id = start["trial_id"], .lines = lines});
  };
  const int64_t first = actions[0]["trial_id"], second = actions[1]["trial_id"];
  // Whether checkpoint t<trial>-<batch> is marked DELETED (its files go on the monitor thread).
  auto deleted = [&](int64_t trial, int64_t batch) {
    const std::string id = absl::StrCat("t", trial, "-", batch);
    const wire::CheckpointList list = master_->checkpoints().OfTrial(trial).value();
    for (const wire::CheckpointEntry& c : list.checkpoints) {
      if (c.storage_id == id) return c.state == wire::CheckpointState::kDeleted;
    }
    ADD_FAILURE() << "no checkpoint " << id << " in " << list.ToJson().dump();
    return false;
  };
  ASSERT_OK(report(actions[1], 0.3));
  ASSERT_OK(Exit(actions[1], 0));  // the second trial ends; the first still runs
  // Its batch-4 checkpoint is neither its latest nor the experiment's best: gone at once. Its
  // batch-2 one is the experiment's best so far (0.3): kept, as the running trial may or may not
  // do better.
  EXPECT_TRUE(deleted(second, 4));
  EXPECT_FALSE(deleted(second, 2));
  EXPECT_FALSE(deleted(second, 6)) << "its latest";
  ASSERT_OK(report(actions[0], 0.1));  // the first trial does better
  EXPECT_FALSE(deleted(first, 4)) << "a running trial's";
  ASSERT_OK(Exit(actions[0], 0));  // the experiment ends: the final pass
  EXPECT_TRUE(deleted(second, 2)) << "no longer the best";
  EXPECT_FALSE(deleted(first, 2)) << "the experiment's best";
  EXPECT_TRUE(deleted(first, 4));
  master_.reset();  // its monitor thread has deleted what was marked
  for (const auto& [trial, batch, gone] :
       std::vector<std::tuple<int64_t, int, bool>>{{second, 4, true}, {second, 2, true},
                                                   {second, 6, false}, {first, 2, false},
                                                   {first, 4, true}, {first, 6, false}}) {
    EXPECT_EQ(fs::exists(storage / absl::StrCat("t", trial, "-", batch)), !gone)
        << "t" << trial << "-" << batch;
  }
}

TEST_F(MasterTest, AFailedTrialRestartsFromItsLatestCheckpointThenEndsInError) {
  Register("a1", 1);
  const int64_t exp = Create(Config(1, 1, kSingle));
  Json first = OnlyStart("a1");
  const int64_t trial = first["trial_id"];
  ASSERT_OK(ReportCheckpoint(first, 5, "ck-5"));
  ASSERT_OK(Exit(first, 3));
  // Restarted at once (the slot is free again), resuming from the checkpoint.
  Json second = OnlyStart("a1");
  EXPECT_NE(second["allocation"], first["allocation"]);
  EXPECT_EQ(second["latest_checkpoint"], "ck-5");
  EXPECT_EQ(Trial(trial)["restarts"], 1);
  // The first run is superseded: its reports can no longer move the trial.
  absl::Status stale = master_->AllocationReports(first["allocation"], {.trial_id = trial});
  EXPECT_TRUE(absl::IsFailedPrecondition(stale)) << stale;
  ASSERT_OK(Exit(second, 3));
  const Json t = Trial(trial);
  EXPECT_EQ(t["state"], "ERROR");
  EXPECT_THAT(t["error_lines"].get<std::string>(), HasSubstr("exited with status 3"));
  EXPECT_EQ(Experiment(exp)["state"], "ERROR");
  EXPECT_THAT(Logs(trial), HasSubstr("restart 1 of 1 from checkpoint ck-5"));
}

// Posts `line` as rank 0's output of the run `start`.
absl::Status PostLine(Master& master, const Json& start, const std::string& line) {
  return master.AllocationLogs(start["allocation"].get<std::string>(),
                               {.trial_id = start["trial_id"].get<int64_t>(),
                                .lines = {{0, "ok so far"}, {0, line}, {0, line + " again"}},
                                .node = start["node_rank"].get<int>()});
}

TEST_F(MasterTest, ACancelRetriesLogPolicyMatchEndsTheFailedTrialWithRestartsLeft) {
  Register("a1", 1);
  const int64_t exp =
      Create(Config(1, 3, kSingle) +
             "log_policies: [{name: bad data, pattern: 'corrupt (record|shard) \\d+', action: "
             "cancel_retries}]\n");
  Json start = OnlyStart("a1");
  const int64_t trial = start["trial_id"];
  ASSERT_OK(PostLine(*master_, start, "ValueError: corrupt shard 17"));
  ASSERT_OK(Exit(start, 1));
  const Json t = Trial(trial);
  EXPECT_EQ(t["state"], "ERROR");
  EXPECT_EQ(t["restarts"], 0);
  ASSERT_EQ(t["log_policy_matches"].size(), 1u) << t.dump();  // the first line of the run
  EXPECT_EQ(t["log_policy_matches"][0]["policy"], "bad data");
  EXPECT_EQ(t["log_policy_matches"][0]["action"], "cancel_retries");
  EXPECT_EQ(t["log_policy_matches"][0]["agent"], "a1");
  EXPECT_EQ(t["log_policy_matches"][0]["line"], "ValueError: corrupt shard 17");
  EXPECT_EQ(Experiment(exp)["state"], "ERROR");
  EXPECT_THAT(Logs(trial), HasSubstr("is not restarted: its log matched log policy \"bad data\""));
}

TEST_F(MasterTest, WithoutAMatchTheSamePolicyLetsTheTrialRestart) {
  Register("a1", 1);
  Create(Config(1, 3, kSingle) +
         "log_policies: [{name: bad data, pattern: corrupt, action: cancel_retries}]\n");
  Json start = OnlyStart("a1");
  ASSERT_OK(PostLine(*master_, start, "Segmentation fault"));
  ASSERT_OK(Exit(start, 1));
  EXPECT_EQ(OnlyStart("a1")["trial_id"], start["trial_id"]);
  EXPECT_EQ(Trial(start["trial_id"])["restarts"], 1);
}

TEST_F(MasterTest, AnExcludeNodeMatchKeepsTheRestartsOffThatAgentAlsoAfterAMasterRestart) {
  StartOnFile();
  Register("a1", 1);
  Register("a2", 1);
  Create(Config(1, 3, kSingle) +
         "log_policies: [{pattern: 'ECC error', action: {type: exclude_node}}]\n");
  Json first = OnlyStart("a1");
  const int64_t trial = first["trial_id"];
  ASSERT_OK(PostLine(*master_, first, "uncorrectable ECC error encountered"));
  ASSERT_OK(Exit(first, 1));
  Json second = OnlyStart("a2");  // not a1, although a1 comes first by id
  EXPECT_EQ(second["trial_id"], trial);
  ASSERT_OK(Exit(second, 1));  // fails again, on a2 without a match
  // Only a1 is excluded: the third run goes to a2 again.
  EXPECT_EQ(OnlyStart("a2")["trial_id"], trial);
  EXPECT_THAT(Actions("a1"), ::testing::IsEmpty());

  // A restarted master remembers the exclusion: a2 does not come back to reclaim the run, so
  // after the grace the trial is queued again, and with only a1 connected it waits.
  StartOnFile();
  Register("a1", 1);
  clock_.Advance(absl::Seconds(31));
  ASSERT_OK(master_->agents().Heartbeat("a1"));
  master_->ExpireLostAgents();
  EXPECT_THAT(Actions("a1"), ::testing::IsEmpty());
  const Json t = Trial(trial);
  EXPECT_EQ(t["state"], "QUEUED");
  EXPECT_THAT(t["waiting_reason"].get<std::string>(), HasSubstr("(excluded: a1)"));
  // Determined's default "ECC Error" policy matched the same line: shown, no action.
  ASSERT_EQ(t["log_policy_matches"].size(), 2u) << t.dump();
  EXPECT_EQ(t["log_policy_matches"][0]["policy"], "ECC error");
  EXPECT_EQ(t["log_policy_matches"][0]["action"], "exclude_node");
  EXPECT_EQ(t["log_policy_matches"][1]["policy"], "ECC Error");
  EXPECT_EQ(t["log_policy_matches"][1]["action"], "");
}

TEST_F(MasterTest, ALogBatchFromANodeTheRunDoesNotHaveIsRefused) {
  Register("a1", 1);
  Create(Config(1, 0, kSingle));
  Json start = OnlyStart("a1");
  absl::Status s = master_->AllocationLogs(start["allocation"].get<std::string>(),
                                           {.trial_id = start["trial_id"].get<int64_t>(),
                                            .lines = {{0, "CUDA out of memory"}},
                                            .node = 3});
  EXPECT_TRUE(absl::IsInvalidArgument(s)) << s;
}

TEST_F(MasterTest, AnAgentSilentPastTheTimeoutIsLostAndItsTrialRestartsElsewhere) {
  Register("a1", 1);
  Register("a2", 1);
  Create(Config(1, 2, kSingle));
  Json start = OnlyStart("a1");  // best fit: equally free agents go by id
  const int64_t trial = start["trial_id"];
  clock_.Advance(absl::Seconds(29));
  master_->ExpireLostAgents();
  EXPECT_EQ(Trial(trial)["state"], "RUNNING") << "29 s of silence is within the timeout";
  ASSERT_OK(master_->agents().Heartbeat("a2"));
  clock_.Advance(absl::Seconds(2));  // a1: 31 s silent; a2: 2 s
  master_->ExpireLostAgents();
  Json again = OnlyStart("a2");
  EXPECT_EQ(again["trial_id"], trial);
  EXPECT_EQ(Trial(trial)["restarts"], 1);
  EXPECT_THAT(Logs(trial), HasSubstr("agent a1 lost"));
  EXPECT_TRUE(absl::IsNotFound(master_->agents().Heartbeat("a1"))) << "a lost agent must register again";
}

// A two-node run whose node-0 agent is lost (behind a partition, say) while node 1 is still being
// stopped: the lost node's logs and reports, arriving once the partition heals, are refused and
// never counted; the other node's lines are still taken.
TEST_F(MasterTest, TheOutputOfANodeWhoseAgentWasLostIsRefused) {
  Register("a1", 1);
  Register("a2", 1);
  Create(Config(2, 2, kSingle));
  Json node0 = OnlyStart("a1");
  Json node1 = OnlyStart("a2");
  ASSERT_EQ(node0["node_rank"], 0);
  const int64_t trial = node0["trial_id"];
  const std::string allocation = node0["allocation"];
  ASSERT_OK(master_->agents().Heartbeat("a1"));
  ASSERT_OK(master_->agents().Heartbeat("a2"));
  clock_.Advance(absl::Seconds(20));
  ASSERT_OK(master_->agents().Heartbeat("a2"));
  clock_.Advance(absl::Seconds(11));  // a1: 31 s silent
  master_->ExpireLostAgents();
  ASSERT_EQ(Trial(trial)["state"], "RUNNING") << "node 1 is still being stopped";
  absl::Status logs = master_->AllocationLogs(
      allocation, {.trial_id = trial, .lines = {{0, "printed behind the partition"}}, .node = 0});
  EXPECT_TRUE(absl::IsNotFound(logs)) << logs;
  EXPECT_THAT(logs.message(), HasSubstr("agent a1 was lost"));
  wire::ReportRecord checkpoint{.kind = wire::ReportKind::kCheckpoint,
                                .steps_completed = 9,
                                .storage_id = "ck-stale",
                                .path = "ck-stale"};
  absl::Status reports =
      master_->AllocationReports(allocation, {.trial_id = trial, .lines = {checkpoint}});
  EXPECT_TRUE(absl::IsNotFound(reports)) << reports;
  ASSERT_OK(master_->AllocationLogs(
      allocation, {.trial_id = trial, .lines = {{1, "node 1 stopping"}}, .node = 1}));
  ASSERT_OK(Exit(node1, 137));
  EXPECT_EQ(Trial(trial)["restarts"], 1);
  EXPECT_EQ(Trial(trial).value("latest_checkpoint", ""), "") << "the fenced checkpoint counted";
  EXPECT_THAT(Logs(trial), ::testing::Not(HasSubstr("printed behind the partition")));
  EXPECT_THAT(Logs(trial), HasSubstr("node 1 stopping"));
}

// An agent's combined post, stored in three steps: each item ends up as its own posts would
// have (a refused part ends its item, the parts before it stay stored), whatever the others do.
TEST_F(MasterTest, ACombinedPostStoresEachItemAsItsOwnPostsWould) {
  Register("a1", 3);
  Create(Config(1, 0, "{name: random, metric: loss, max_length: {batches: 10}, max_trials: 3}"));
  Json actions = Actions("a1");
  ASSERT_EQ(actions.size(), 3u) << actions.dump();
  const std::string a = actions[0]["allocation"], b = actions[1]["allocation"],
                    c = actions[2]["allocation"];
  const int64_t ta = actions[0]["trial_id"], tb = actions[1]["trial_id"],
                tc = actions[2]["trial_id"];
  const std::string token_a = actions[0]["allocation_token"], token_b =
                                                                  actions[1]["allocation_token"];
  const wire::LogBatch lines_a{.trial_id = ta, .lines = {{0, "a: step 1"}}};
  wire::ReportBatch reports_a{.trial_id = ta,
                              .lines = {{.kind = wire::ReportKind::kTraining,
                                         .steps_completed = 4,
                                         .metrics = {{"loss", 0.5}}},
                                        {.kind = wire::ReportKind::kCheckpoint,
                                         .steps_completed = 4,
                                         .storage_id = "ck-a",
                                         .path = "ck-a"}}};
  reports_a.progress = wire::ProgressRecord{.completed = 4, .total = 10, .unit = "batches"};
  const wire::LogBatch lines_b{.trial_id = tb, .lines = {{0, "b: kept"}}};
  const wire::ReportBatch reports_b{.trial_id = ta};  // a's trial, not b's: refused
  const wire::ExitReport exit_b{.node = 0, .status = 0};
  const wire::LogBatch lines_c{.trial_id = tc, .lines = {{0, "c: no token"}}};
  const wire::ExitReport exit_c{.node = 0, .status = 0};
  const std::string wrong = "not-a-token";
  const std::vector<Master::OutputStored> stored = master_->StoreOutputs(
      {{.allocation = a, .token = &token_a, .logs = &lines_a, .reports = &reports_a},
       {.allocation = b, .token = &token_b, .logs = &lines_b, .reports = &reports_b,
        .exit = &exit_b},
       {.allocation = c, .token = &wrong, .logs = &lines_c, .exit = &exit_c},
       {.allocation = "no-such-allocation", .logs = &lines_c}});
  ASSERT_EQ(stored.size(), 4u);
  EXPECT_OK(stored[0].status);
  EXPECT_EQ(stored[1].part, "reports") << stored[1].status;
  EXPECT_FALSE(stored[1].status.ok());
  EXPECT_TRUE(absl::IsUnauthenticated(stored[2].status)) << stored[2].status;
  EXPECT_EQ(stored[2].part, "");
  EXPECT_TRUE(absl::IsInvalidArgument(stored[3].status)) << stored[3].status;
  EXPECT_EQ(stored[3].part, "logs");

  EXPECT_THAT(Logs(ta), HasSubstr("a: step 1"));
  const Json trial_a = Trial(ta);
  EXPECT_EQ(trial_a["batches"], 4);
  EXPECT_EQ(trial_a["total_batches"], 10);
  EXPECT_EQ(trial_a["latest_checkpoint"], "ck-a");
  EXPECT_EQ(master_->series().TrialMetrics(ta, std::nullopt, 0, 100).value().metrics.size(), 1u);
  EXPECT_EQ(master_->checkpoints().OfTrial(ta).value().checkpoints.size(), 1u);
  EXPECT_THAT(Logs(tb), HasSubstr("b: kept")) << "the lines before the refused reports";
  EXPECT_EQ(Trial(tb)["state"], "RUNNING") << "b's exit came after its refused reports";
  EXPECT_THAT(Logs(tc), ::testing::Not(HasSubstr("c: no token")))
      << "neither with the wrong token nor from an allocation not of its trial";
  EXPECT_EQ(Trial(tc)["state"], "RUNNING");
  // The same reports again (an agent whose answer was lost): the checkpoint is not doubled.
  EXPECT_OK(master_->AllocationReports(a, reports_a));
  EXPECT_EQ(master_->checkpoints().OfTrial(ta).value().checkpoints.size(), 1u);
  // b's exit alone, as the agent sends it again: stored.
  EXPECT_OK(
      master_->StoreOutputs({{.allocation = b, .token = &token_b, .exit = &exit_b}})[0].status);
  EXPECT_EQ(Trial(tb)["state"], "COMPLETED");
}

TEST_F(MasterTest, PausePreemptsTheRunningTrialAndActivateQueuesItAgain) {
  Register("a1", 1);
  const int64_t exp = Create(Config(1, 0, kSingle));
  Json start = OnlyStart("a1");
  const int64_t trial = start["trial_id"];
  ASSERT_OK(master_->PauseExperiment(exp, kRoot));
  Json stop = Actions("a1");
  ASSERT_EQ(stop.size(), 1u) << stop.dump();
  EXPECT_EQ(stop[0]["type"], "stop");
  EXPECT_EQ(stop[0]["mode"], "preempt");
  ASSERT_OK(Exit(start, 143));  // the trial checkpointed and left on SIGTERM
  EXPECT_EQ(Trial(trial)["state"], "PAUSED");
  EXPECT_EQ(Trial(trial)["restarts"], 0) << "a pause is not a failure";
  ASSERT_OK(master_->ActivateExperiment(exp, kRoot));
  EXPECT_EQ(OnlyStart("a1")["trial_id"], trial);
  EXPECT_EQ(Experiment(exp)["state"], "ACTIVE");
}

// --- sharing a cluster (docs/design/0020) -------------------------------------------------------

std::string Shared(const std::string& resources, const std::string& hparams = "{global_batch_size: 8}",
                   const std::string& searcher = kSingle) {
  return absl::StrCat("name: t\nentrypoint: trial\nhyperparameters: ", hparams,
                      "\nresources: ", resources, "\nmax_restarts: 0\nsearcher: ", searcher, "\n");
}

TEST_F(MasterTest, AnUrgentExperimentPreemptsALowerPriorityTrialWhichResumesLater) {
  pools_[kDefaultPool].spec.preemption = true;
  Start(":memory:");
  Register("a1", 1);
  const int64_t low = Create(Shared("{slots_per_trial: 1, priority: 50}"));
  Json start = OnlyStart("a1");
  const int64_t trial = start["trial_id"];
  const int64_t urgent = Create(Shared("{slots_per_trial: 1, priority: 10}"));
  Json stop = Actions("a1");
  ASSERT_EQ(stop.size(), 1u) << stop.dump();
  EXPECT_EQ(stop[0]["type"], "stop");
  EXPECT_EQ(stop[0]["mode"], "preempt") << "it checkpoints first";
  EXPECT_THAT(Logs(trial), HasSubstr(absl::StrCat("preempted by experiment ", urgent,
                                                  " (priority 10)")));
  master_->EscalatePreemptions();
  EXPECT_TRUE(Actions("a1").empty()) << "within the timeout nothing more happens";
  clock_.Advance(absl::Minutes(10));
  master_->EscalatePreemptions();
  Json kill = Actions("a1");
  ASSERT_EQ(kill.size(), 1u) << kill.dump();
  EXPECT_EQ(kill[0]["mode"], "kill") << "it did not stop within the preemption timeout";
  EXPECT_THAT(Logs(trial), HasSubstr("did not checkpoint and stop within 10m"));
  ASSERT_OK(Exit(start, 137));
  EXPECT_EQ(Trial(trial)["state"], "QUEUED");
  EXPECT_EQ(Trial(trial)["restarts"], 0) << "a preemption is not a failure";
  Json next = OnlyStart("a1");
  EXPECT_EQ(Experiment(urgent)["trials"][0]["id"], next["trial_id"]);
  EXPECT_THAT(Trial(trial)["waiting_reason"].get<std::string>(),
              HasSubstr(absl::StrCat("preempted by experiment ", urgent)));
  ASSERT_OK(Exit(next, 0));
  EXPECT_EQ(OnlyStart("a1")["trial_id"], trial) << "it resumes once it displaces nobody";
  EXPECT_EQ(Experiment(low)["state"], "ACTIVE");
}

TEST_F(MasterTest, WithoutPreemptionTheUrgentExperimentWaitsItsTurnFirst) {
  Register("a1", 1);
  Create(Shared("{slots_per_trial: 1, priority: 50}"));
  OnlyStart("a1");
  const int64_t urgent = Create(Shared("{slots_per_trial: 1, priority: 10}"));
  EXPECT_TRUE(Actions("a1").empty()) << "the default pool does not preempt";
  EXPECT_THAT(Trial(Experiment(urgent)["trials"][0]["id"])["waiting_reason"].get<std::string>(),
              HasSubstr("waiting for 1 free slot"));
}

TEST_F(MasterTest, PoolsKeepExperimentsOnTheirOwnAgents) {
  pools_["big"] = ResourcePool{"the 8-slot machines", {}};
  Start(":memory:");
  Register("small", 1);
  ASSERT_OK(master_->agents().Register(
      {.id = "big1", .slots = 8, .host = "127.0.0.1", .resource_pool = "big"}));
  absl::Status unknown = master_->agents().Register(
      {.id = "x", .slots = 1, .host = "127.0.0.1", .resource_pool = "gpu"});
  EXPECT_THAT(unknown, StatusIs(absl::StatusCode::kInvalidArgument,
                                HasSubstr("resource pool 'gpu' is not one of this master's: big, "
                                          "default")));
  Create(Shared("{slots_per_trial: 1}"));
  OnlyStart("small");
  const int64_t second = Create(Shared("{slots_per_trial: 1}"));
  EXPECT_TRUE(Actions("big1").empty()) << "a default-pool trial never goes on the big pool";
  EXPECT_THAT(Trial(Experiment(second)["trials"][0]["id"])["waiting_reason"].get<std::string>(),
              HasSubstr("waiting for 1 free slot"));
  Create(Shared("{slots_per_trial: 4, resource_pool: big}"));
  EXPECT_EQ(OnlyStart("big1")["slots"], 4);
  absl::StatusOr<int64_t> nowhere =
      master_->CreateExperiment(Shared("{resource_pool: gpu}"), "", "", kRoot);
  EXPECT_THAT(nowhere.status(), StatusIs(absl::StatusCode::kInvalidArgument,
                                         HasSubstr("resources.resource_pool: resource pool 'gpu' "
                                                   "is not one of this master's")));
}

TEST_F(MasterTest, MaxSlotsCapsWhatAnExperimentHoldsAtOnce) {
  Register("a1", 1);
  Register("a2", 1);
  const int64_t exp =
      Create(Shared("{slots_per_trial: 1, max_slots: 1}",
                    "{global_batch_size: 8, x: {type: categorical, vals: [1, 2, 3]}}",
                    "{name: grid, metric: loss, max_length: {batches: 10}}"));
  const size_t started = Actions("a1").size() + Actions("a2").size();
  EXPECT_EQ(started, 1u);
  int capped = 0;
  const Json described = Experiment(exp);  // kept: the loop reads into it
  for (const Json& t : described["trials"]) {
    if (t["state"] != "QUEUED") continue;
    EXPECT_EQ(Trial(t["id"])["waiting_reason"],
              absl::StrCat("experiment ", exp, " holds 1 slot: its resources.max_slots is 1"));
    ++capped;
  }
  EXPECT_EQ(capped, 2);
}

TEST_F(MasterTest, TheJobQueueListsJobsInOrderAndOwnersReorderTheirs) {
  Register("a1", 1);
  const int64_t running = Create(Shared("{slots_per_trial: 1}"));
  OnlyStart("a1");
  const int64_t first = Create(Shared("{slots_per_trial: 1}"));
  const int64_t second = Create(Shared("{slots_per_trial: 1}"));
  auto order = [&] {
    std::vector<int64_t> ids;
    const wire::JobList list = master_->ListJobs("").value();  // kept: the loop reads into it
    for (const wire::JobEntry& j : list.jobs) ids.push_back(j.experiment_id);
    return ids;
  };
  EXPECT_EQ(order(), (std::vector<int64_t>{running, first, second}));
  const wire::JobList jobs = master_->ListJobs(kDefaultPool).value();
  EXPECT_EQ(jobs.jobs[0].slots_held, 1);
  EXPECT_EQ(jobs.jobs[1].waiting, "waiting for 1 free slot on one agent: the most free on any "
                                  "agent is 0");
  EXPECT_EQ(jobs.jobs[2].waiting, absl::StrCat("queued behind task ",
                                               Experiment(first)["trials"][0]["id"].get<int64_t>(),
                                               " (priority 42)"));
  // The second goes ahead of the first: it is the next to start.
  ASSERT_OK(master_->UpdateJob(second, {.ahead_of = first}, kRoot));
  EXPECT_EQ(order(), (std::vector<int64_t>{running, second, first}));
  // Only its owner or an admin may; values are checked.
  EXPECT_THAT(master_->UpdateJob(first, {.priority = 1}, Actor{"mallory", false}),
              StatusIs(absl::StatusCode::kPermissionDenied));
  EXPECT_THAT(master_->UpdateJob(first, {.max_slots = 0}, kRoot), IsOk());
  EXPECT_THAT(master_->ListJobs("gpu").status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("the pools are default")));
  // A priority changed while it waits takes effect at the next pass.
  ASSERT_OK(master_->UpdateJob(first, {.priority = 10}, kRoot));
  EXPECT_EQ(order(), (std::vector<int64_t>{first, running, second}));
  const wire::ResourcePoolList pools = master_->ListResourcePools();
  ASSERT_EQ(pools.pools.size(), 1u);
  EXPECT_EQ(pools.pools[0].slots, 1);
  EXPECT_EQ(pools.pools[0].used, 1);
  EXPECT_EQ(pools.pools[0].trials_queued, 2);
}

TEST(ResourcePoolsTest, AFileNamesPoolsAndItsMistakes) {
  absl::StatusOr<ResourcePools> pools = ParseResourcePools(
      "resource_pools:\n"
      "  - pool_name: big\n    description: GPUs\n"
      "    scheduler: {type: fair_share, preemption: true}\n",
      "pools.yaml");
  ASSERT_OK(pools);
  ASSERT_EQ(pools->size(), 2u) << "default is always there";
  EXPECT_EQ(pools->at("big").spec.policy, PoolPolicy::kFairShare);
  EXPECT_TRUE(pools->at("big").spec.preemption);
  EXPECT_FALSE(pools->at(kDefaultPool).spec.preemption);
  EXPECT_THAT(ParseResourcePools("resource_pools:\n  - pool_name: x\n    scheduler: {type: fifo}\n",
                                 "pools.yaml")
                  .status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("pools.yaml: resource_pools[0].scheduler.type: must be priority "
                                 "or fair_share, got 'fifo'")));
  EXPECT_THAT(ParseResourcePools("resource_pools:\n  - pool_name: a\n  - pool_name: a\n", "p")
                  .status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("named twice")));
  EXPECT_THAT(ParseResourcePools("pools: []\n", "p").status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("must hold resource_pools")));
}

TEST_F(MasterTest, KillCancelsTheQueuedTrialAtOnceAndTheRunningOneWhenItExits) {
  Register("a1", 1);
  const int64_t exp =
      Create(Config(1, 3, "{name: random, metric: loss, max_trials: 2, max_length: {batches: 10}}",
                    "{global_batch_size: 8, lr: {type: double, minval: 0.1, maxval: 1}}"));
  Json start = OnlyStart("a1");
  ASSERT_OK(master_->KillExperiment(exp, kRoot));
  Json e = Experiment(exp);
  EXPECT_EQ(e["state"], "CANCELED");
  int canceled = 0;
  for (const Json& t : e["trials"]) canceled += t["state"] == "CANCELED";
  EXPECT_EQ(canceled, 1) << "the queued trial; the running one stops first";
  Json stop = Actions("a1");
  ASSERT_EQ(stop.size(), 1u) << stop.dump();
  EXPECT_EQ(stop[0]["mode"], "kill");
  ASSERT_OK(Exit(start, 137));
  EXPECT_EQ(Trial(start["trial_id"])["state"], "CANCELED");
  EXPECT_EQ(Trial(start["trial_id"])["restarts"], 0);
}

TEST_F(MasterTest, AKilledExperimentsSearcherOnlyRecordsARungReportedAfterTheKill) {
  Register("a1", 1);
  const int64_t exp = Create(kAsha);
  const Json t2 = AshaUntilTheSecondTrialStops();
  ASSERT_FALSE(HasFailure());
  Json t3 = OnlyStart("a1");
  ASSERT_OK(master_->KillExperiment(exp, kRoot));
  EXPECT_EQ(Trial(t2["trial_id"])["state"], "CANCELED");
  // In an active experiment trial 3's rung would stop it and promote trial 2; after the kill
  // it is only recorded (the searcher used to send a second, preempting stop).
  absl::Status report = ReportRung(t3, 200, MetricAt(t3, 200));
  EXPECT_OK(report);
  EXPECT_EQ(Trial(t2["trial_id"])["state"], "CANCELED");
  ASSERT_OK(Exit(t3, 137));
  EXPECT_EQ(Trial(t3["trial_id"])["state"], "CANCELED");
  EXPECT_EQ(Experiment(exp)["state"], "CANCELED");
  Json actions = Actions("a1");
  ASSERT_EQ(actions.size(), 1u) << actions.dump();
  EXPECT_EQ(actions[0]["mode"], "kill") << "and nothing after it";
  EXPECT_EQ(
      master_->series().TrialMetrics(t3["trial_id"], wire::MetricKind::kSearcher, 0, 10)->metrics.size(), 1u)
      << "the rung metric is kept";
}

TEST_F(MasterTest, AKilledTrialIsCanceledAndItsExperimentGoesOnWithTheOthers) {
  Register("a1", 1);
  const int64_t exp =
      Create(Config(1, 3, "{name: grid, metric: loss, max_length: {batches: 10}}",
                    "{global_batch_size: 8, lr: {type: categorical, vals: [0.1, 0.2, 0.3]}}"));
  Json first = OnlyStart("a1");
  const int64_t running = first["trial_id"];
  ASSERT_OK(master_->KillTrial(running, kRoot));
  Json stop = Actions("a1");
  ASSERT_EQ(stop.size(), 1u) << stop.dump();
  EXPECT_EQ(stop[0]["mode"], "kill");
  EXPECT_EQ(Trial(running)["state"], "RUNNING") << "until its nodes have exited";
  ASSERT_OK(Exit(first, 137));
  EXPECT_EQ(Trial(running)["state"], "CANCELED") << "a kill is not a failure to restart";
  EXPECT_EQ(Trial(running)["restarts"], 0);
  EXPECT_THAT(Logs(running), HasSubstr("trial " + std::to_string(running) + " killed by admin"));

  // A queued trial ends at once; the third runs to the end and the experiment completes.
  Json second = OnlyStart("a1");
  Json e = Experiment(exp);
  int64_t queued = 0;
  for (const Json& t : e["trials"]) {
    if (t["state"] == "QUEUED") queued = t["id"];
  }
  ASSERT_NE(queued, 0) << e.dump(2);
  ASSERT_OK(master_->KillTrial(queued, kRoot));
  EXPECT_EQ(Trial(queued)["state"], "CANCELED");
  EXPECT_EQ(Experiment(exp)["state"], "ACTIVE") << "one trial still runs";
  ASSERT_OK(Exit(second, 0));
  EXPECT_EQ(Experiment(exp)["state"], "COMPLETED") << "canceled trials are not errors";
  EXPECT_OK(master_->KillTrial(queued, kRoot)) << "killing what ended is a no-op";
  EXPECT_EQ(Trial(second["trial_id"])["state"], "COMPLETED");
  EXPECT_TRUE(absl::IsNotFound(master_->KillTrial(999, kRoot)));
}

TEST_F(MasterTest, AKilledStoppedTrialIsNeverPromotedAgain) {
  Register("a1", 1);
  const int64_t exp = Create(kAsha);
  const Json t2 = AshaUntilTheSecondTrialStops();
  ASSERT_FALSE(HasFailure());
  ASSERT_OK(master_->KillTrial(t2["trial_id"], kRoot));
  EXPECT_EQ(Trial(t2["trial_id"])["state"], "CANCELED");
  Json t3 = OnlyStart("a1");
  // 4600 at rung 200 would promote trial 2 (AdaptiveAshaStops...): it stays CANCELED.
  ASSERT_OK(ReportRung(t3, 200, MetricAt(t3, 200)));
  EXPECT_EQ(Trial(t2["trial_id"])["state"], "CANCELED");
  Json stop = Actions("a1");
  ASSERT_EQ(stop.size(), 1u) << stop.dump();
  EXPECT_EQ(stop[0]["type"], "stop") << "trial 3 stops at its rung; nothing starts";
  ASSERT_OK(Exit(t3, 143));
  Json t4 = OnlyStart("a1");
  EXPECT_NE(t4["trial_id"], t2["trial_id"]);
  ASSERT_OK(ReportRung(t4, 200, MetricAt(t4, 200)));
  ASSERT_OK(ReportRung(t4, 400, MetricAt(t4, 400)));
  ASSERT_OK(Exit(t4, 0));
  const Json e = Experiment(exp);
  EXPECT_EQ(e["state"], "COMPLETED") << e.dump(2);
  EXPECT_EQ(Trial(t2["trial_id"])["state"], "CANCELED");
}

TEST_F(MasterTest, KillingATrialOverridesAPauseInProgressAndOnlyItsOwnerOrAnAdminMay) {
  Register("a1", 1);
  absl::StatusOr<int64_t> exp =
      master_->CreateExperiment(Config(1, 0, kSingle), "", "", Actor{"alice", false});
  ASSERT_OK(exp);
  Json start = OnlyStart("a1");
  const int64_t trial = start["trial_id"];
  absl::Status denied = master_->KillTrial(trial, Actor{"bob", false});
  EXPECT_TRUE(absl::IsPermissionDenied(denied)) << denied;
  EXPECT_THAT(denied.message(), HasSubstr("may kill trial " + std::to_string(trial) + " of it"));
  ASSERT_OK(master_->PauseExperiment(*exp, kRoot));
  EXPECT_EQ(Actions("a1")[0]["mode"], "preempt");
  ASSERT_OK(master_->KillTrial(trial, Actor{"alice", false}));
  EXPECT_EQ(Actions("a1")[0]["mode"], "kill") << "the kill follows the preemption";
  ASSERT_OK(Exit(start, 137));
  EXPECT_EQ(Trial(trial)["state"], "CANCELED") << "not PAUSED: it must not resume";
  ASSERT_OK(master_->ActivateExperiment(*exp, kRoot));
  EXPECT_TRUE(Actions("a1").empty());
}

TEST_F(MasterTest, MovesTheLifecycleForbidsAreRefusedNamingBothStates) {
  Register("a1", 1);
  const int64_t exp = Create(Config(1, 0, kSingle));
  ASSERT_OK(Exit(OnlyStart("a1"), 0));
  absl::Status pause = master_->PauseExperiment(exp, kRoot);
  EXPECT_TRUE(absl::IsFailedPrecondition(pause)) << pause;
  EXPECT_THAT(pause.message(), HasSubstr("cannot move from COMPLETED to PAUSED"));
  EXPECT_EQ(Experiment(exp)["state"], "COMPLETED");
  EXPECT_OK(master_->KillExperiment(exp, kRoot)) << "killing what ended is a no-op";
  EXPECT_EQ(Experiment(exp)["state"], "COMPLETED");
}

// --- experiment continue (Determined's ContinueExperiment) ------------------------------------

TEST_F(MasterTest, AnErroredSingleTrialContinuesFromItsCheckpointWithTheChangedConfig) {
  Register("a1", 1);
  const int64_t exp = Create(Config(1, 0, kSingle));
  Json first = OnlyStart("a1");
  const int64_t trial = first["trial_id"];
  ASSERT_OK(ReportCheckpoint(first, 5, "ck-5"));
  ASSERT_OK(Exit(first, 3));
  ASSERT_EQ(Experiment(exp)["state"], "ERROR");
  ASSERT_GT(Experiment(exp)["ended_ms"].get<int64_t>(), 0);

  absl::StatusOr<std::vector<std::string>> continued = master_->ContinueExperiment(
      exp,
      Json::parse(R"({"max_restarts": 2, "searcher": {"max_length": {"batches": 20}},
                      "hyperparameters": {"lr": 0.5}})"),
      kRoot);
  ASSERT_OK(continued);
  const Json e = Experiment(exp);
  EXPECT_EQ(e["state"], "ACTIVE");
  EXPECT_EQ(e["ended_ms"], 0);
  EXPECT_EQ(e["max_restarts"], 2);
  EXPECT_EQ(e["trials"].size(), 1u) << "the same trial trains again";
  Json second = OnlyStart("a1");
  EXPECT_EQ(second["trial_id"], trial);
  EXPECT_EQ(second["latest_checkpoint"], "ck-5");
  EXPECT_EQ(second["hparams"]["lr"], 0.5);
  EXPECT_EQ(second["hparams"]["global_batch_size"], 8) << "merged, not replaced";
  EXPECT_THAT(second["config"].get<std::string>(), HasSubstr("batches: 20"));
  EXPECT_EQ(Trial(trial)["restarts"], 0);
  EXPECT_EQ(Trial(trial)["total_batches"], 20);
  EXPECT_THAT(Logs(trial), HasSubstr("continued by 'admin': resumes from checkpoint ck-5"));
  ASSERT_OK(Exit(second, 0));
  EXPECT_EQ(Trial(trial)["state"], "COMPLETED");
  EXPECT_EQ(Experiment(exp)["state"], "COMPLETED");
  EXPECT_GT(Experiment(exp)["ended_ms"].get<int64_t>(), 0);
}

TEST_F(MasterTest, OnlyAnEndedExperimentContinuesAndItsSearcherAndStorageStay) {
  Register("a1", 1);
  const int64_t exp = Create(Config(1, 0, kSingle));
  Json start = OnlyStart("a1");
  absl::Status active = master_->ContinueExperiment(exp, Json::object(), kRoot).status();
  EXPECT_THAT(active, StatusIs(absl::StatusCode::kFailedPrecondition));
  EXPECT_THAT(active.message(), HasSubstr("is ACTIVE: only an ended experiment"));
  ASSERT_OK(Exit(start, 0));
  absl::Status bob = master_->ContinueExperiment(exp, Json::object(), {"bob", false}).status();
  EXPECT_THAT(bob, StatusIs(absl::StatusCode::kPermissionDenied));
  absl::Status searcher = master_->ContinueExperiment(
      exp, Json::parse(R"({"searcher": {"name": "random", "max_trials": 3}})"), kRoot).status();
  EXPECT_THAT(searcher.message(), HasSubstr("searcher.name: cannot change when experiment"));
  EXPECT_THAT(searcher.message(), HasSubstr("cohort experiment fork"));
  absl::Status storage = master_->ContinueExperiment(
      exp, Json::parse(R"({"checkpoint_storage": {"save_trial_best": 3}})"), kRoot).status();
  EXPECT_THAT(storage.message(), HasSubstr("checkpoint_storage: cannot change"));
  absl::Status invalid =
      master_->ContinueExperiment(exp, Json::parse(R"({"max_restarts": "two"})"), kRoot).status();
  EXPECT_THAT(invalid, StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(invalid.message(), HasSubstr("max_restarts"));
  EXPECT_EQ(Experiment(exp)["state"], "COMPLETED") << "a refused continue changes nothing";
  EXPECT_THAT(Actions("a1"), ::testing::IsEmpty());
}

TEST_F(MasterTest, AKilledRandomSearchContinuesItsCanceledTrialsWithItsConfigUnchanged) {
  Register("a1", 1);
  const int64_t exp =
      Create(Config(1, 3, "{name: random, metric: loss, max_trials: 2, max_length: {batches: 10}}",
                    "{global_batch_size: 8, lr: {type: double, minval: 0.1, maxval: 1}}"));
  Json start = OnlyStart("a1");
  ASSERT_OK(master_->KillExperiment(exp, kRoot));
  ASSERT_EQ(Actions("a1").size(), 1u) << "the running trial's kill";
  ASSERT_OK(Exit(start, 137));
  const Json before = Experiment(exp)["trials"];
  absl::Status changed =
      master_->ContinueExperiment(exp, Json::parse(R"({"max_restarts": 1})"), kRoot).status();
  EXPECT_THAT(changed.message(), HasSubstr("has 2 trials: a continue changes the config only"));
  ASSERT_OK(master_->ContinueExperiment(exp, Json::object(), kRoot));
  for (int i = 0; i < 2; ++i) {
    Json run = OnlyStart("a1");
    EXPECT_EQ(run["hparams"], before[i]["hparams"]) << "the samples stay as drawn";
    ASSERT_OK(Exit(run, 0));
  }
  EXPECT_EQ(Experiment(exp)["state"], "COMPLETED");
  absl::Status nothing = master_->ContinueExperiment(exp, Json::object(), kRoot).status();
  EXPECT_THAT(nothing, StatusIs(absl::StatusCode::kFailedPrecondition));
  EXPECT_THAT(nothing.message(), HasSubstr("COMPLETED: there is nothing to continue"));
}

TEST_F(MasterTest, AnAdaptiveAshaSearchDoesNotContinue) {
  Register("a1", 1);
  const int64_t exp = Create(kAsha);
  Json start = OnlyStart("a1");
  ASSERT_OK(master_->KillExperiment(exp, kRoot));
  ASSERT_OK(Exit(start, 137));
  absl::Status asha = master_->ContinueExperiment(exp, Json::object(), kRoot).status();
  EXPECT_THAT(asha.message(), HasSubstr("adaptive_asha search: the rungs it decided"));
}

TEST_F(MasterTest, AContinuedExperimentSurvivesAMasterRestart) {
  StartOnFile();
  Register("a1", 1);
  const int64_t exp = Create(Config(1, 0, kSingle));
  ASSERT_OK(Exit(OnlyStart("a1"), 0));
  ASSERT_OK(master_->ContinueExperiment(
      exp, Json::parse(R"({"searcher": {"max_length": {"batches": 30}}})"), kRoot));
  StartOnFile();
  Register("a1", 1);
  Json run = OnlyStart("a1");
  EXPECT_EQ(Trial(run["trial_id"])["total_batches"], 30);
  ASSERT_OK(Exit(run, 0));
  EXPECT_EQ(Experiment(exp)["state"], "COMPLETED");
}

TEST_F(MasterTest, ATaskLargerThanTheFreeSlotsWaitsAndSaysWhy) {
  Register("a1", 2);
  const int64_t exp = Create(Config(2, 0, kSingle));
  Json first = OnlyStart("a1");
  const int64_t second_exp = Create(Config(1, 0, kSingle));
  const int64_t third_exp = Create(Config(1, 0, kSingle));
  Json tasks = master_->ListTasks().value().ToJson()["tasks"];
  ASSERT_EQ(tasks.size(), 3u) << tasks.dump();
  EXPECT_EQ(tasks[1]["state"], "QUEUED");
  EXPECT_THAT(tasks[1]["reason"].get<std::string>(), HasSubstr("waiting for 1 free slot"));
  // Every later task waits behind the first that waits (the pass records it once).
  const std::string behind = absl::StrCat("queued behind task ", tasks[1]["trial_id"].get<int64_t>(),
                                          " (priority 42)");
  EXPECT_EQ(tasks[2]["reason"], behind);
  EXPECT_EQ(Trial(tasks[2]["trial_id"])["waiting_reason"], behind);
  ASSERT_OK(Exit(first, 0));
  Json started = Actions("a1");  // both 1-slot tasks fit on the 2 free slots now
  ASSERT_EQ(started.size(), 2u) << started.dump();
  EXPECT_EQ(started[0]["experiment_id"], second_exp);
  EXPECT_EQ(started[1]["experiment_id"], third_exp);
  EXPECT_EQ(Experiment(exp)["state"], "COMPLETED");
}

// Determined 0.38's forms: async_halving (one bracket of num_rungs rungs) with its length as
// max_time units of time_metric; its second trial is stopped at the first rung as adaptive_asha's
// would be (the same seed draws the same increments as kAsha's).
TEST_F(MasterTest, AsyncHalvingWithMaxTimeStopsTrialsAtItsRungs) {
  Register("a1", 1);
  const int64_t exp = Create(
      "name: halving\nentrypoint: trial\nreproducibility: {experiment_seed: 5}\n"
      "hyperparameters: {global_batch_size: 16, increment_by: {type: int, minval: 1, maxval: 50}}\n"
      "searcher: {name: async_halving, metric: x, time_metric: batches, max_time: 400,\n"
      "  num_rungs: 2, max_trials: 2, divisor: 2, max_concurrent_trials: 1}\n");
  Json t1 = OnlyStart("a1");
  EXPECT_EQ(t1["searcher_ops"], Json::array({200, 400}));
  EXPECT_EQ(Trial(t1["trial_id"])["total_batches"], 400);
  ASSERT_OK(ReportRung(t1, 200, MetricAt(t1, 200)));
  ASSERT_OK(ReportRung(t1, 400, MetricAt(t1, 400)));
  ASSERT_OK(Exit(t1, 0));
  Json t2 = OnlyStart("a1");
  EXPECT_EQ(t2["searcher_ops"], Json::array({200, 400})) << "one bracket";
  ASSERT_OK(ReportRung(t2, 200, MetricAt(t2, 200)));  // 4200 after 2400: not the best 1 of 2
  Json stop = Actions("a1");
  ASSERT_EQ(stop.size(), 1u) << stop.dump();
  EXPECT_EQ(stop[0]["type"], "stop");
  ASSERT_OK(Exit(t2, 143));
  EXPECT_EQ(Experiment(exp)["state"], "COMPLETED");
  EXPECT_THAT(Logs(t2["trial_id"]), HasSubstr("async_halving rungs 200, 400 batches"));
}

TEST_F(MasterTest, AdaptiveAshaStopsPromotesAndCompletesTrialsAsItsSearcherDecides) {
  Register("a1", 1);
  const int64_t exp = Create(kAsha);
  Json t1 = OnlyStart("a1");
  EXPECT_EQ(t1["searcher_ops"], Json::array({200, 400}));
  ASSERT_EQ(t1["hparams"]["increment_by"], 12) << "the sampler changed";
  ASSERT_OK(ReportRung(t1, 200, MetricAt(t1, 200)));
  EXPECT_TRUE(Actions("a1").empty()) << "the first trial at a rung goes on";
  ASSERT_OK(ReportRung(t1, 400, MetricAt(t1, 400)));
  ASSERT_OK(Exit(t1, 0));

  Json t2 = OnlyStart("a1");
  ASSERT_OK(ReportRung(t2, 200, MetricAt(t2, 200)));  // 4200: not the best 1 of 2
  Json stop = Actions("a1");
  ASSERT_EQ(stop.size(), 1u) << stop.dump();
  EXPECT_EQ(stop[0]["type"], "stop");
  ASSERT_OK(Exit(t2, 143));
  EXPECT_EQ(Trial(t2["trial_id"])["state"], "STOPPED");

  Json t3 = OnlyStart("a1");
  ASSERT_OK(ReportRung(t3, 200, MetricAt(t3, 200)));  // 4600: stops, and lifts trial 2
  EXPECT_EQ(Trial(t2["trial_id"])["state"], "QUEUED");
  EXPECT_THAT(Logs(t2["trial_id"]), HasSubstr("adaptive_asha promotes the trial at 200 batches"));
  ASSERT_EQ(Actions("a1").size(), 1u) << "trial 3's stop";
  ASSERT_OK(Exit(t3, 143));
  EXPECT_EQ(Trial(t3["trial_id"])["state"], "STOPPED");

  Json t2_again = OnlyStart("a1");  // queued before trial 4: it resumes first
  EXPECT_EQ(t2_again["trial_id"], t2["trial_id"]);
  ASSERT_OK(ReportRung(t2_again, 200, MetricAt(t2, 200)));
  EXPECT_TRUE(Actions("a1").empty()) << "a repeated rung report keeps its first decision";
  ASSERT_OK(Exit(t2_again, 0));

  Json t4 = OnlyStart("a1");
  ASSERT_OK(ReportRung(t4, 200, MetricAt(t4, 200)));  // 4000: second of 4, goes on
  EXPECT_TRUE(Actions("a1").empty());
  ASSERT_OK(Exit(t4, 0));
  const Json e = Experiment(exp);
  EXPECT_EQ(e["state"], "COMPLETED") << e.dump(2);
  for (const Json& t : e["trials"]) EXPECT_EQ(t["state"], "COMPLETED") << t.dump(2);
  EXPECT_THAT(Logs(t3["trial_id"]), HasSubstr("promoted no further trial"));
  // The rung metrics were recorded where a restarted master's searcher finds them.
  Json rungs =
      master_->series().TrialMetrics(t3["trial_id"], wire::MetricKind::kSearcher, 0, 1000)->ToJson();
  ASSERT_EQ(rungs["metrics"].size(), 1u) << rungs.dump();
  EXPECT_EQ(rungs["metrics"][0]["steps_completed"], 200);
}

TEST_F(MasterTest, ARestartedMasterRebuildsTheSearcherAndItsEarlierDecisionsStand) {
  StartOnFile();
  Register("a1", 1);
  const int64_t exp = Create(kAsha);
  const Json t2 = AshaUntilTheSecondTrialStops();
  ASSERT_FALSE(HasFailure());

  StartOnFile();  // the master restarts; its searcher is rebuilt from the database
  Register("a1", 1);
  Json t3 = OnlyStart("a1");
  EXPECT_EQ(t3["searcher_ops"], Json::array({200, 400}));
  ASSERT_OK(ReportRung(t3, 200, MetricAt(t3, 200)));
  EXPECT_EQ(Trial(t2["trial_id"])["state"], "QUEUED")
      << "trial 3's rung metric, ranked with the restored ones, promotes trial 2";
  EXPECT_EQ(Experiment(exp)["trials"][0]["state"], "COMPLETED") << "trial 1";
  EXPECT_EQ(Experiment(exp)["trials"].size(), 4u) << "the restart created no trial twice";
}

// The registration of an agent that still runs `start`'s node (as after a master restart).
wire::AgentRegistration Claiming(const std::string& agent, const Json& start) {
  wire::AgentRegistration r{.id = agent, .slots = 1, .host = "127.0.0.1"};
  r.allocations.push_back({.allocation = start["allocation"].get<std::string>(),
                           .trial_id = start["trial_id"].get<int64_t>(),
                           .node_rank = start["node_rank"].get<int>(),
                           .slots = start["slots"].get<int>()});
  return r;
}

TEST_F(MasterTest, ARestartedMasterReadoptsTheAllocationItsAgentClaims) {
  StartOnFile();
  Register("a1", 1);
  const int64_t exp = Create(Config(1, 0, kSingle));
  const Json start = OnlyStart("a1");
  const int64_t trial = start["trial_id"];
  StartOnFile();  // the master restarts; the trial's processes run on at the agent
  EXPECT_EQ(Trial(trial)["state"], "RUNNING");
  EXPECT_OK(master_->CheckAllocationToken(start["allocation"],
                                          start["allocation_token"].get<std::string>()))
      << "the allocation may report before its agent is back";
  ASSERT_OK(master_->agents().Register(Claiming("a1", start)));
  EXPECT_TRUE(Actions("a1").empty()) << "neither a stop nor a second start";
  clock_.Advance(absl::Minutes(1));  // past the grace: a re-adopted allocation has none
  ASSERT_OK(master_->agents().Heartbeat("a1"));
  master_->ExpireLostAgents();
  EXPECT_EQ(Trial(trial)["state"], "RUNNING");
  EXPECT_EQ(Trial(trial)["allocation"], start["allocation"]);
  EXPECT_THAT(Logs(trial), HasSubstr("the trial runs on, re-adopted"));
  ASSERT_OK(Exit(start, 0));
  EXPECT_EQ(Trial(trial)["state"], "COMPLETED");
  EXPECT_EQ(Trial(trial)["restarts"], 0);
  EXPECT_EQ(Experiment(exp)["state"], "COMPLETED");
}

TEST_F(MasterTest, AnAllocationNoAgentReclaimsWithinTheGraceIsQueuedWithoutARestart) {
  StartOnFile();
  Register("a1", 1);
  Create(Config(1, 0, kSingle));  // max_restarts 0: a counted restart would end it in ERROR
  const Json start = OnlyStart("a1");
  const int64_t trial = start["trial_id"];
  StartOnFile();
  clock_.Advance(absl::Seconds(29));
  master_->ExpireLostAgents();
  EXPECT_EQ(Trial(trial)["state"], "RUNNING") << "within the 30 s grace";
  clock_.Advance(absl::Seconds(2));
  master_->ExpireLostAgents();
  EXPECT_EQ(Trial(trial)["state"], "QUEUED");
  EXPECT_EQ(Trial(trial)["restarts"], 0);
  EXPECT_THAT(Logs(trial), HasSubstr("not counted as a restart"));
  // The agent comes back late, still running the old allocation: told to stop it, then given
  // the trial again.
  ASSERT_OK(master_->agents().Register(Claiming("a1", start)));
  const Json actions = Actions("a1");
  ASSERT_EQ(actions.size(), 2u) << actions.dump();
  EXPECT_EQ(actions[0]["type"], "stop");
  EXPECT_EQ(actions[0]["allocation"], start["allocation"]);
  EXPECT_EQ(actions[1]["type"], "start");
  EXPECT_NE(actions[1]["allocation"], start["allocation"]);
}

TEST_F(MasterTest, AnAgentBackWithoutTheRestoredAllocationQueuesItWithoutARestart) {
  StartOnFile();
  Register("a1", 1);
  Create(Config(1, 0, kSingle));
  const Json start = OnlyStart("a1");
  const int64_t trial = start["trial_id"];
  StartOnFile();
  Register("a1", 1);  // claims nothing: the start never reached it, or it restarted
  EXPECT_EQ(Trial(trial)["restarts"], 0);
  const Json again = OnlyStart("a1");
  EXPECT_EQ(again["trial_id"], trial) << "queued again and placed at once";
  EXPECT_NE(again["allocation"], start["allocation"]);
}

TEST_F(MasterTest, AKillWhileTheAgentIsAwayReachesItWhenItReclaimsTheAllocation) {
  StartOnFile();
  Register("a1", 1);
  const int64_t exp = Create(Config(1, 0, kSingle));
  const Json start = OnlyStart("a1");
  StartOnFile();
  ASSERT_OK(master_->KillExperiment(exp, kRoot));
  ASSERT_OK(master_->agents().Register(Claiming("a1", start)));
  const Json actions = Actions("a1");
  ASSERT_GE(actions.size(), 1u);
  EXPECT_EQ(actions[0]["type"], "stop");
  EXPECT_EQ(actions[0]["mode"], "kill");
  ASSERT_OK(Exit(start, 137));
  EXPECT_EQ(Trial(start["trial_id"])["state"], "CANCELED");
}

TEST_F(MasterTest, ATrialKilledBeforeAMasterRestartIsCanceledAfterIt) {
  StartOnFile();
  Register("a1", 1);
  Register("a2", 1);
  const int64_t exp =
      Create(Config(1, 3, "{name: grid, metric: loss, max_length: {batches: 10}}",
                    "{global_batch_size: 8, lr: {type: categorical, vals: [0.1, 0.2]}}"));
  const Json reclaimed = OnlyStart("a1");
  const Json lost = OnlyStart("a2");
  ASSERT_OK(master_->KillTrial(reclaimed["trial_id"], kRoot));
  ASSERT_OK(master_->KillTrial(lost["trial_id"], kRoot));
  StartOnFile();  // before either agent fetched its stop
  // a1 comes back running its node: the kill reaches it; a2 never comes back.
  ASSERT_OK(master_->agents().Register(Claiming("a1", reclaimed)));
  const Json stop = Actions("a1");
  ASSERT_EQ(stop.size(), 1u) << stop.dump();
  EXPECT_EQ(stop[0]["type"], "stop");
  EXPECT_EQ(stop[0]["mode"], "kill");
  ASSERT_OK(Exit(reclaimed, 137));
  EXPECT_EQ(Trial(reclaimed["trial_id"])["state"], "CANCELED");
  clock_.Advance(absl::Seconds(31));  // past the grace: a2's allocation was never reclaimed
  master_->ExpireLostAgents();
  EXPECT_EQ(Trial(lost["trial_id"])["state"], "CANCELED") << "not queued again";
  EXPECT_EQ(Experiment(exp)["state"], "COMPLETED");
}

// Waits (bounded) until `n` long polls wait in the master.
void AwaitWaitingPolls(Master& master, int n) {
  const absl::Time deadline = absl::Now() + absl::Seconds(20);
  while (master.WaitingPolls() < n && absl::Now() < deadline) absl::SleepFor(absl::Milliseconds(5));
  ASSERT_GE(master.WaitingPolls(), n) << "the polls never started waiting";
}

TEST_F(MasterTest, LogFollowersBeyondTheLimitAreAnsweredAtOnce) {
  Start(":memory:", /*max_log_followers=*/2);
  Register("a1", 1);
  Create(Config(1, 0, kSingle));
  Json start = OnlyStart("a1");
  const int64_t trial = start["trial_id"];
  const int64_t after = master_->trial_logs().Read(trial, std::nullopt, 0, absl::ZeroDuration())->next;
  auto follow = [&] { return master_->trial_logs().Read(trial, std::nullopt, after, absl::Seconds(60)); };
  std::future<absl::StatusOr<wire::LogsPage>> first = std::async(std::launch::async, follow);
  std::future<absl::StatusOr<wire::LogsPage>> second = std::async(std::launch::async, follow);
  AwaitWaitingPolls(*master_, 2);
  // The third follower does not wait: the request threads stay free for agents.
  std::future<absl::StatusOr<wire::LogsPage>> third = std::async(std::launch::async, follow);
  ASSERT_EQ(third.wait_for(std::chrono::seconds(20)), std::future_status::ready);
  EXPECT_TRUE(third.get()->logs.empty());
  // A new line ends the two that wait.
  ASSERT_OK(
      master_->AllocationLogs(start["allocation"], {.trial_id = trial, .lines = {{0, "epoch 1"}}}));
  ASSERT_EQ(first.wait_for(std::chrono::seconds(20)), std::future_status::ready);
  ASSERT_EQ(second.wait_for(std::chrono::seconds(20)), std::future_status::ready);
  EXPECT_EQ(first.get()->logs.size(), 1u);
  EXPECT_EQ(second.get()->logs.size(), 1u);
}

TEST_F(MasterTest, ANewerPollOfTheSameAgentEndsTheOlderOne) {
  Register("a1", 1);
  auto poll = [&] { return master_->agents().WaitForActions("a1", absl::Seconds(60)); };
  std::future<absl::StatusOr<wire::ActionBatch>> older = std::async(std::launch::async, poll);
  AwaitWaitingPolls(*master_, 1);
  std::future<absl::StatusOr<wire::ActionBatch>> newer = std::async(std::launch::async, poll);
  ASSERT_EQ(older.wait_for(std::chrono::seconds(20)), std::future_status::ready);
  absl::StatusOr<wire::ActionBatch> superseded = older.get();
  ASSERT_OK(superseded);
  EXPECT_TRUE(superseded->actions.empty());
  Create(Config(1, 0, kSingle));  // its start action goes to the poll still waiting
  ASSERT_EQ(newer.wait_for(std::chrono::seconds(20)), std::future_status::ready);
  absl::StatusOr<wire::ActionBatch> actions = newer.get();
  ASSERT_OK(actions);
  EXPECT_EQ(actions->actions.size(), 1u);
}

// The bytes of `file` after running `command` in dir (a test helper, so std::system is fine).
std::string Made(const fs::path& dir, const std::string& command, const std::string& file) {
  const std::string full = absl::StrCat("cd '", dir.string(), "' && ", command);
  EXPECT_EQ(std::system(full.c_str()), 0) << full;
  std::ifstream in(dir / file, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

size_t SavedContexts(const fs::path& data_dir) {
  size_t n = 0;
  for (const auto& entry : fs::directory_iterator(data_dir / "contexts"))
    n += entry.is_regular_file();
  return n;
}

// Issue 44: a context upload onto the master's full disk says that the disk is full, naming the
// directory, and leaves no partial archive behind (before: 503 naming only the file, and a
// 0-byte context-*.tar.gz nothing refers to).
TEST_F(MasterTest, AContextUploadOntoAFullDiskSaysSoAndLeavesNothing) {
  const fs::path small = fs::path(dir_.string() + "-small");
  fs::create_directories(small);
  if (::mount("tmpfs", small.c_str(), "tmpfs", MS_NOSUID | MS_NODEV, "size=1m") != 0) {
    GTEST_SKIP() << "mounting a tmpfs needs root: " << std::strerror(errno);
  }
  {
    std::unique_ptr<Master> master =
        Master::Create(OpenSqliteDatabase(":memory:").value(),
                       {.data_dir = small.string(), .clock = &clock_,
                        .scheduling = SchedulingMode::kInline})
            .value();
    ASSERT_OK(master->agents().Register({.id = "a1", .slots = 1, .host = "127.0.0.1"}));
    const std::string big = Made(
        dir_, "head -c 2000000 /dev/urandom > big.bin && tar czf big.tar.gz big.bin", "big.tar.gz");
    absl::StatusOr<int64_t> id = master->CreateExperiment(Config(1, 0, kSingle), "", big, kRoot);
    EXPECT_TRUE(absl::IsUnavailable(id.status())) << id.status();
    EXPECT_THAT(id.status().message(),
                HasSubstr(absl::StrCat("the master's disk is full: no space left on device in ",
                                       (small / "contexts").string())));
    EXPECT_TRUE(fs::is_empty(small / "contexts")) << "a partial upload was left";
    EXPECT_TRUE(master->ListExperiments()->experiments.empty());
  }
  ::umount2(small.c_str(), MNT_DETACH);
  fs::remove_all(small);
}

// Issue 44: what a master killed half way through left is swept at the next start: a context
// upload cut short (.tmp-PID) or with no experiment (its row never written), and a checkpoint
// the GC had renamed aside (.deleted-ID) but not removed. An experiment's own context stays.
// Identical contexts (re-submissions of one build, forks) are stored once, named by their
// SHA-256; the file goes when the last experiment that names it is deleted.
TEST_F(MasterTest, IdenticalContextsAreStoredOnceAndRemovedWithTheirLastExperiment) {
  Register("a1", 2);
  const std::string one = Made(dir_, "echo one > trial && tar czf one.tar.gz trial", "one.tar.gz");
  const std::string two = Made(dir_, "echo two > trial && tar czf two.tar.gz trial", "two.tar.gz");
  const int64_t a = master_->CreateExperiment(Config(1, 0, kSingle), "", one, kRoot).value();
  const int64_t b = master_->CreateExperiment(Config(1, 0, kSingle), "", one, kRoot).value();
  const int64_t c = master_->CreateExperiment(Config(1, 0, kSingle), "", two, kRoot).value();
  const std::string path = master_->ContextPath(a).value();
  EXPECT_EQ(master_->ContextPath(b).value(), path);
  EXPECT_NE(master_->ContextPath(c).value(), path);
  EXPECT_THAT(fs::path(path).filename().string(), ::testing::StartsWith("sha256-"));
  EXPECT_EQ(SavedContexts(dir_), 2u);
  EXPECT_EQ(master_->ContextArchive(b).value(), one);
  for (int64_t e : {a, b, c}) ASSERT_OK(master_->KillExperiment(e, kRoot));
  for (const Json& action : Actions("a1")) {  // the two that ran exit
    if (action["type"] == "start") ASSERT_OK(Exit(action, 137));
  }

  ASSERT_OK(master_->DeleteExperiment(a, kRoot));
  ASSERT_TRUE(GoneWithin10s(*master_, a));
  EXPECT_TRUE(fs::exists(path)) << "b still names it";
  EXPECT_EQ(master_->ContextArchive(b).value(), one);
  ASSERT_OK(master_->DeleteExperiment(b, kRoot));
  ASSERT_TRUE(GoneWithin10s(*master_, b));
  EXPECT_FALSE(fs::exists(path)) << "its last experiment is gone";
  EXPECT_EQ(SavedContexts(dir_), 1u) << "c's";
  const int64_t again = master_->CreateExperiment(Config(1, 0, kSingle), "", one, kRoot).value();
  EXPECT_EQ(master_->ContextPath(again).value(), path) << "saved again under its name";
  EXPECT_EQ(master_->ContextArchive(again).value(), one);
}

TEST_F(MasterTest, ARestartedMasterSweepsWhatAKilledOneLeftHalfDone) {
  StartOnFile();
  Register("a1", 1);
  const fs::path storage = shared_ / "storage";
  const int64_t exp = Create(Config(1, 0, kSingle) +
                             "checkpoint_storage: {type: shared_fs, host_path: " +
                             storage.string() + "}\n");
  const std::string kept = master_->ContextPath(exp).value();
  fs::create_directories(storage / ".deleted-ck-1" / "sub");
  std::ofstream(storage / ".deleted-ck-1" / "sub" / "model.pt") << "weights";
  const fs::path half = dir_ / "contexts" / "context-1-deadbeef.tar.gz.tmp-77";
  const fs::path rowless = dir_ / "contexts" / "context-2-cafef00d.tar.gz";
  std::ofstream(half) << "half an upload";
  std::ofstream(rowless) << "an upload whose experiment was never stored";
  StartOnFile();
  EXPECT_FALSE(fs::exists(storage / ".deleted-ck-1"));
  EXPECT_FALSE(fs::exists(half));
  EXPECT_FALSE(fs::exists(rowless));
  EXPECT_TRUE(fs::exists(kept)) << "an experiment's own context";
}

TEST_F(MasterTest, AContextThatIsNotATarGzIsRefusedBeforeTheExperimentIsStored) {
  Register("a1", 1);
  absl::StatusOr<int64_t> plain =
      master_->CreateExperiment(Config(1, 0, kSingle), "", "hello", kRoot);
  EXPECT_THAT(
      plain,
      StatusIs(absl::StatusCode::kInvalidArgument,
               HasSubstr("context: not a gzip'd tar archive (its 5 bytes do not begin with the "
                         "gzip magic 1f 8b)")));
  const std::string text =
      Made(dir_, "yes 'not a tar' | head -c 4000 | gzip -c > text.gz", "text.gz");
  absl::StatusOr<int64_t> not_tar =
      master_->CreateExperiment(Config(1, 0, kSingle), "", text, kRoot);
  EXPECT_THAT(not_tar, StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(not_tar.status().message(), HasSubstr("context: not a valid tar.gz archive ("));
  const std::string tiny = Made(dir_, "printf 'not a tar' | gzip -c > tiny.gz", "tiny.gz");
  EXPECT_THAT(master_->CreateExperiment(Config(1, 0, kSingle), "", tiny, kRoot).status().message(),
              HasSubstr("context: not a valid tar.gz archive ("));
  const std::string empty =
      Made(dir_, "head -c 10240 /dev/zero | gzip -c > empty.tar.gz", "empty.tar.gz");
  EXPECT_THAT(master_->CreateExperiment(Config(1, 0, kSingle), "", empty, kRoot).status().message(),
              HasSubstr("context: the tar.gz archive lists no entries"));
  const std::string absolute = Made(
      dir_, "echo x > abs.txt && tar czPf abs.tar.gz \"$PWD/abs.txt\" 2>/dev/null", "abs.tar.gz");
  EXPECT_THAT(
      master_->CreateExperiment(Config(1, 0, kSingle), "", absolute, kRoot).status().message(),
      HasSubstr("': absolute paths are not allowed"));
  EXPECT_TRUE(master_->ListExperiments().value().experiments.empty());
  EXPECT_EQ(SavedContexts(dir_), 0u) << "a refused context is not kept";

  const std::string archive = Made(
      dir_, "mkdir -p ctx && echo x > ctx/train.py && tar czf ctx.tar.gz -C ctx .", "ctx.tar.gz");
  absl::StatusOr<int64_t> ok = master_->CreateExperiment(Config(1, 0, kSingle), "", archive, kRoot);
  EXPECT_OK(ok);
  EXPECT_EQ(SavedContexts(dir_), 1u);
}

TEST_F(MasterTest, AContextWithoutTheEntrypointsProgramIsRefusedAtUpload) {
  Register("a1", 1);
  std::string config = Config(1, 0, kSingle);
  config.replace(config.find("entrypoint: trial"), 17, "entrypoint: ./bin/train --fast");
  absl::Status none = master_->CreateExperiment(config, "", "", kRoot).status();
  EXPECT_TRUE(absl::IsInvalidArgument(none)) << none;
  EXPECT_THAT(none.message(), HasSubstr("the program bin/train is not in the context (none was"));
  const std::string other = Made(
      dir_, "mkdir -p c1/bin && echo x > c1/bin/other && tar czf c1.tar.gz -C c1 .", "c1.tar.gz");
  EXPECT_THAT(master_->CreateExperiment(config, "", other, kRoot).status().message(),
              HasSubstr("the program bin/train is not in the context: upload the directory"));
  EXPECT_TRUE(master_->ListExperiments().value().experiments.empty());
  const std::string right = Made(
      dir_, "mkdir -p c2/bin && echo x > c2/bin/train && tar czf c2.tar.gz -C c2 .", "c2.tar.gz");
  EXPECT_OK(master_->CreateExperiment(config, "", right, kRoot));
  // A bare name may come from PATH, an absolute path from the agent's machine: no context needed.
  EXPECT_OK(master_->CreateExperiment(Config(1, 0, kSingle), "", "", kRoot));
}

TEST_F(MasterTest, StorageAndSearchersCohortCannotRunAreRefusedAtCreation) {
  Register("a1", 1);
  // S3 without keys anywhere the master looks: it could neither delete nor serve checkpoints.
  for (const char* name : {"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_PROFILE"}) {
    ::unsetenv(name);
  }
  ::setenv("AWS_SHARED_CREDENTIALS_FILE", (dir_ / "no-such-credentials").c_str(), 1);
  absl::Status s3 =
      master_
          ->CreateExperiment(Config(1, 0, kSingle) + "checkpoint_storage: {type: s3, bucket: b}\n",
                             "", "", kRoot)
          .status();
  ::unsetenv("AWS_SHARED_CREDENTIALS_FILE");
  EXPECT_TRUE(absl::IsInvalidArgument(s3)) << s3;
  EXPECT_THAT(s3.message(), HasSubstr("checkpoint_storage: the master cannot reach checkpoint "
                                      "storage s3://b: no S3 credentials"));
  ASSERT_OK(master_->templates().Put("gcs", "checkpoint_storage: {type: gcs, bucket: b}\n"));
  EXPECT_THAT(master_->CreateExperiment(Config(1, 0, kSingle), "gcs", "", kRoot).status().message(),
              HasSubstr("checkpoint storage type gcs is not supported by Cohort"));
  EXPECT_THAT(master_->CreateExperiment(Config(1, 0, "{name: custom, metric: loss}"), "", "", kRoot)
                  .status()
                  .message(),
              HasSubstr("searcher.name: the custom searcher is not supported by Cohort"));
  EXPECT_TRUE(master_->ListExperiments().value().experiments.empty());
  // What Cohort only ignores (with a warning at validation) is created.
  absl::StatusOr<int64_t> ignored = master_->CreateExperiment(
      Config(1, 0, kSingle) + "environment: {image: my/image}\nslurm: {gpu_type: a100}\n", "", "",
      kRoot);
  EXPECT_OK(ignored);
}

TEST_F(MasterTest, TemplateNamesAreSafeForUrlsAndRefusedNamingTheField) {
  EXPECT_OK(master_->templates().Put("gpu-base_2", "max_restarts: 1\n"));
  absl::Status bad = master_->templates().Put("../etc", "max_restarts: 1\n");
  EXPECT_THAT(bad,
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("template name must be 1 to 128 characters of [A-Za-z0-9._-]")));
  EXPECT_THAT(master_->templates().Put(std::string(200, 't'), "max_restarts: 1\n").message(),
              HasSubstr("(200 bytes)"));
  Register("a1", 1);
  EXPECT_THAT(master_->CreateExperiment(Config(1, 0, kSingle), "a b", "", kRoot).status().message(),
              HasSubstr("template must be 1 to 128 characters"));
}

TEST_F(MasterTest, AHugeProgressCountCannotOverflowTheTrialsBatches) {
  Register("a1", 1);
  Create(Config(1, 0, kSingle));
  Json start = OnlyStart("a1");
  wire::ProgressRecord progress;
  progress.completed = 1e300;  // the wire parser refuses this; the master clamps regardless
  progress.total = 1e300;
  progress.unit = "batches";
  ASSERT_OK(master_->AllocationReports(start["allocation"].get<std::string>(),
                                       {.trial_id = start["trial_id"], .progress = progress}));
  const Json trial = Trial(start["trial_id"]);
  EXPECT_EQ(trial["batches"], int64_t{1000000000000000});
  EXPECT_EQ(trial["total_batches"], int64_t{1000000000000000});
}

TEST_F(MasterTest, OnlyTheOwnerOrAnAdminChangesAnExperimentOrSeesItsEnvironment) {
  const std::string yaml =
      Config(1, 0, kSingle) + "environment: {environment_variables: [TOKEN=s3cret, PLAIN=1]}\n";
  absl::StatusOr<int64_t> exp = master_->CreateExperiment(yaml, "", "", Actor{"alice", false});
  ASSERT_OK(exp);
  EXPECT_EQ(master_->ListExperiments().value().experiments.at(0).owner, "alice");
  const Actor bob{"bob", false};
  absl::Status denied = master_->KillExperiment(*exp, bob);
  EXPECT_TRUE(absl::IsPermissionDenied(denied)) << denied;
  EXPECT_THAT(denied.message(), HasSubstr("belongs to 'alice'"));
  EXPECT_TRUE(absl::IsPermissionDenied(master_->PauseExperiment(*exp, bob)));
  EXPECT_TRUE(absl::IsPermissionDenied(master_->ActivateExperiment(*exp, bob)));
  EXPECT_EQ(Experiment(*exp)["state"], "ACTIVE") << "a refused request changes nothing";

  const std::string seen_by_bob = master_->DescribeExperiment(*exp, bob).value().config;
  EXPECT_THAT(seen_by_bob, HasSubstr("TOKEN=***"));
  EXPECT_THAT(seen_by_bob, ::testing::Not(HasSubstr("s3cret")));
  EXPECT_THAT(master_->DescribeExperiment(*exp, Actor{"alice", false}).value().config,
              HasSubstr("TOKEN=s3cret"));
  EXPECT_THAT(master_->DescribeExperiment(*exp, kRoot).value().config, HasSubstr("s3cret"));

  EXPECT_OK(master_->PauseExperiment(*exp, Actor{"alice", false}));
  EXPECT_OK(master_->KillExperiment(*exp, kRoot)) << "admins may change anyone's";
}

// Issue 34: a registry's password and a template's environment values were shown in clear to
// every user; they are masked like the environment's values, by the same function.
TEST_F(MasterTest, RegistryPasswordsAndTemplateSecretsAreMaskedForOthers) {
  const std::string yaml = Config(1, 0, kSingle) +
                           "environment: {registry_auth: {username: alice, password: hunter22}}\n";
  absl::StatusOr<int64_t> exp = master_->CreateExperiment(yaml, "", "", Actor{"alice", false});
  ASSERT_OK(exp);
  const Actor bob{"bob", false};
  const std::string seen_by_bob = master_->DescribeExperiment(*exp, bob).value().config;
  EXPECT_THAT(seen_by_bob, ::testing::Not(HasSubstr("hunter22")));
  EXPECT_THAT(seen_by_bob, HasSubstr("alice"));
  EXPECT_THAT(master_->DescribeExperiment(*exp, Actor{"alice", false}).value().config,
              HasSubstr("hunter22"));
  ASSERT_OK(master_->templates().Put("team",
                                 "# the team's defaults\nenvironment: "
                                 "{environment_variables: [WANDB_KEY=k3y]}\n"));
  const std::string template_for_bob = master_->templates().Get("team", bob.admin).value().config;
  EXPECT_THAT(template_for_bob, ::testing::Not(HasSubstr("k3y")));
  EXPECT_THAT(template_for_bob, HasSubstr("WANDB_KEY=***"));
  EXPECT_THAT(master_->templates().List(bob.admin).value().templates.at(0).config,
              ::testing::Not(HasSubstr("k3y")));
  EXPECT_THAT(master_->templates().Get("team", kRoot.admin).value().config,
              HasSubstr("# the team's defaults")) << "admins read it as written";
}

// Deleting an ended experiment removes its checkpoints (only those in its storage), its
// context and every row of it, and nothing of another experiment.
TEST_F(MasterTest, DeletingAnEndedExperimentRemovesItsFilesAndRowsAndNothingElse) {
  Register("a1", 1);
  const fs::path storage = shared_ / "storage";
  const fs::path outside = dir_ / "outside";
  const int64_t exp = Create(Config(1, 0, kSingle) + "checkpoint_storage: {type: shared_fs, " +
                             "host_path: " + storage.string() + ", save_trial_latest: 5}\n");
  const Json start = OnlyStart("a1");
  const int64_t trial = start["trial_id"];
  std::vector<wire::ReportRecord> lines;
  for (const fs::path& path : {storage / "ck-2", outside / "ck-4"}) {
    fs::create_directories(path);
    std::ofstream(path / "model.pt") << "weights";
    lines.push_back({.kind = wire::ReportKind::kCheckpoint,
                     .steps_completed = path.filename() == "ck-2" ? 2 : 4,
                     .storage_id = path.filename().string(),
                     .path = path.string()});
  }
  ASSERT_OK(master_->AllocationReports(start["allocation"], {.trial_id = trial, .lines = lines}));
  ASSERT_OK(Exit(start, 0));
  ASSERT_EQ(Experiment(exp)["state"], "COMPLETED");
  // TensorBoard event files, its trial's and another's (trial 999: not of this experiment).
  const fs::path events = storage / "tensorboard" / absl::StrCat("trial_", trial);
  fs::create_directories(events);
  fs::create_directories(storage / "tensorboard" / "trial_999");
  std::ofstream(events / "events.out.tfevents") << "x";
  const std::string context = master_->ContextPath(exp).value();
  ASSERT_TRUE(fs::exists(context));
  const int64_t other = Create(Config(1, 0, kSingle));
  const int64_t other_trial = OnlyStart("a1")["trial_id"];

  absl::Status active = master_->DeleteExperiment(other, kRoot);
  EXPECT_TRUE(absl::IsFailedPrecondition(active)) << active;
  EXPECT_THAT(active.message(), HasSubstr("is ACTIVE: only an ended experiment can be deleted"));
  EXPECT_THAT(active.message(), HasSubstr("cohort experiment kill"));
  EXPECT_TRUE(absl::IsPermissionDenied(master_->DeleteExperiment(exp, Actor{"bob", false})));
  EXPECT_TRUE(absl::IsNotFound(master_->DeleteExperiment(99, kRoot)));

  ASSERT_OK(master_->DeleteExperiment(exp, kRoot));
  ASSERT_TRUE(GoneWithin10s(*master_, exp));
  EXPECT_FALSE(fs::exists(storage / "ck-2"));
  EXPECT_TRUE(fs::exists(outside / "ck-4" / "model.pt")) << "outside its storage: left";
  EXPECT_FALSE(fs::exists(events));
  EXPECT_TRUE(fs::exists(storage / "tensorboard" / "trial_999"));
  EXPECT_EQ(master_->ContextPath(other).value(), context)
      << "both sent the same (empty) context: one file";
  EXPECT_TRUE(fs::exists(context)) << "the other experiment still names it";
  EXPECT_TRUE(absl::IsNotFound(master_->DescribeTrial(trial).status()));
  EXPECT_TRUE(absl::IsNotFound(master_->DeleteExperiment(exp, kRoot)));
  const wire::ExperimentList list = master_->ListExperiments().value();
  ASSERT_EQ(list.experiments.size(), 1u);
  EXPECT_EQ(list.experiments[0].id, other);
  EXPECT_EQ(Trial(other_trial)["state"], "RUNNING") << "the other experiment goes on";
  EXPECT_TRUE(fs::exists(master_->ContextPath(other).value()));
}

// An experiment that warm-starts from another's trial keeps that one from being deleted while
// it has not ended (its next trial would find no checkpoint), by either field.
TEST_F(MasterTest, AnExperimentOthersStillWarmStartFromIsNotDeleted) {
  Register("a1", 1);
  const int64_t source = Create(Config(1, 0, kSingle));
  const Json start = OnlyStart("a1");
  const int64_t trial = start["trial_id"];
  const fs::path ckpt = dir_ / "checkpoints" / "ck-10";
  fs::create_directories(ckpt);
  wire::ReportRecord checkpoint{.kind = wire::ReportKind::kCheckpoint,
                                .steps_completed = 10,
                                .storage_id = "ck-10",
                                .path = ckpt.string()};
  ASSERT_OK(
      master_->AllocationReports(start["allocation"], {.trial_id = trial, .lines = {checkpoint}}));
  ASSERT_OK(Exit(start, 0));
  const int64_t by_trial =
      Create(Config(1, 0,
                    absl::StrCat("{name: single, metric: loss, max_length: {batches: 10}, ",
                                 "source_trial_id: ", trial, "}")));
  const int64_t by_uuid = Create(Config(1, 0,
                                        "{name: single, metric: loss, max_length: {batches: 10}, "
                                        "source_checkpoint_uuid: ck-10}"));
  absl::Status refused = master_->DeleteExperiment(source, kRoot);
  EXPECT_TRUE(absl::IsFailedPrecondition(refused)) << refused;
  EXPECT_THAT(
      refused.message(),
      HasSubstr(absl::StrCat("experiment ", by_trial, " (ACTIVE) starts its trials from trial ",
                             trial, " of experiment ", source, " (searcher.source_trial_id)")));
  EXPECT_EQ(Experiment(source)["state"], "COMPLETED") << "a refused delete changes nothing";
  ASSERT_OK(master_->KillExperiment(by_trial, kRoot));
  refused = master_->DeleteExperiment(source, kRoot);
  EXPECT_TRUE(absl::IsFailedPrecondition(refused)) << refused;
  EXPECT_THAT(refused.message(), HasSubstr("(searcher.source_checkpoint_uuid)"));
  ASSERT_OK(master_->KillExperiment(by_uuid, kRoot));
  ASSERT_OK(master_->DeleteExperiment(source, kRoot)) << "nothing depends on it now";
  EXPECT_TRUE(GoneWithin10s(*master_, source));
}

// A new experiment cannot warm-start from a checkpoint of one being deleted.
TEST_F(MasterTest, NoExperimentWarmStartsFromOneBeingDeleted) {
  StartOnFile();
  Register("a1", 1);
  const int64_t source = Create(Config(1, 0, kSingle));
  const Json start = OnlyStart("a1");
  wire::ReportRecord checkpoint{.kind = wire::ReportKind::kCheckpoint,
                                .steps_completed = 10,
                                .storage_id = "ck-10",
                                .path = (dir_ / "ck-10").string()};
  ASSERT_OK(master_->AllocationReports(start["allocation"],
                                       {.trial_id = start["trial_id"], .lines = {checkpoint}}));
  ASSERT_OK(Exit(start, 0));
  {  // DELETING as the request leaves it, without this master's monitor deleting it meanwhile
    std::unique_ptr<Database> db = OpenSqliteDatabase((dir_ / "master.db").string()).value();
    ASSERT_OK(db->SetExperimentState(source, wire::ExperimentState::kDeleting, {}));
  }
  absl::StatusOr<int64_t> child =
      master_->CreateExperiment(Config(1, 0,
                                       "{name: single, metric: loss, max_length: {batches: 10}, "
                                       "source_checkpoint_uuid: ck-10}"),
                                "", "", kRoot);
  EXPECT_TRUE(absl::IsInvalidArgument(child.status())) << child.status();
  EXPECT_THAT(child.status().message(),
              HasSubstr(absl::StrCat("checkpoint ck-10 belongs to experiment ", source,
                                     ", which is being deleted")));
}

// Archiving hides an ended experiment from lists (the list says so; the CLI and the web filter):
// only an ended one, only by its owner or an admin, and kept across a restart.
TEST_F(MasterTest, OnlyAnEndedExperimentIsArchivedAndItStaysArchivedAcrossARestart) {
  StartOnFile();
  Register("a1", 1);
  const int64_t exp = Create(Config(1, 0, kSingle));
  const Json start = OnlyStart("a1");
  absl::Status running = master_->ArchiveExperiment(exp, true, kRoot);
  EXPECT_TRUE(absl::IsFailedPrecondition(running)) << running;
  EXPECT_THAT(running.message(), HasSubstr("is ACTIVE: only an ended experiment can be archived"));
  ASSERT_OK(Exit(start, 0));
  EXPECT_TRUE(absl::IsPermissionDenied(master_->ArchiveExperiment(exp, true, Actor{"bob"})));
  ASSERT_OK(master_->ArchiveExperiment(exp, true, kRoot));
  EXPECT_OK(master_->ArchiveExperiment(exp, true, kRoot)) << "again: nothing to do";
  EXPECT_TRUE(Experiment(exp)["archived"]);
  EXPECT_TRUE(master_->ListExperiments().value().experiments.at(0).archived);
  StartOnFile();
  EXPECT_TRUE(Experiment(exp)["archived"]) << "kept by the database";
  ASSERT_OK(master_->ArchiveExperiment(exp, false, kRoot));
  EXPECT_FALSE(Experiment(exp)["archived"]);
  EXPECT_TRUE(absl::IsNotFound(master_->ArchiveExperiment(42, true, kRoot)));
}

// A master stopped while an experiment was DELETING deletes it when it starts again.
TEST_F(MasterTest, AnExperimentLeftDeletingIsDeletedByTheNextMaster) {
  StartOnFile();
  Register("a1", 1);
  const int64_t exp = Create(Config(1, 0, kSingle));
  ASSERT_OK(Exit(OnlyStart("a1"), 0));
  const std::string context = master_->ContextPath(exp).value();
  master_.reset();
  {  // as a master that stopped right after the request left it
    std::unique_ptr<Database> db = OpenSqliteDatabase((dir_ / "master.db").string()).value();
    ASSERT_OK(db->SetExperimentState(exp, wire::ExperimentState::kDeleting, {}));
  }
  StartOnFile();
  ASSERT_TRUE(GoneWithin10s(*master_, exp));
  EXPECT_FALSE(fs::exists(context));
  EXPECT_TRUE(master_->ListExperiments().value().experiments.empty());
}

TEST_F(MasterTest, MetricsArePagedSoNoAnswerGrowsWithTheTrial) {
  Register("a1", 1);
  Create(Config(1, 0, kSingle));
  const Json start = OnlyStart("a1");
  wire::ReportBatch batch{.trial_id = start["trial_id"]};
  for (int i = 1; i <= 25; ++i) {
    batch.lines.push_back({.kind = wire::ReportKind::kTraining,
                           .steps_completed = i,
                           .metrics = Json{{"loss", 1.0 / i}}});
  }
  ASSERT_OK(master_->AllocationReports(start["allocation"].get<std::string>(), batch));
  std::vector<int64_t> steps;
  int64_t after = 0;
  int pages = 0;
  for (;; ++pages) {
    wire::MetricList page =
        master_->series().TrialMetrics(start["trial_id"], wire::MetricKind::kTraining, after, 10).value();
    EXPECT_LE(page.metrics.size(), 10u);
    for (const wire::MetricEntry& m : page.metrics) steps.push_back(m.steps_completed);
    if (!page.next_after) break;
    after = *page.next_after;
  }
  EXPECT_EQ(pages, 2) << "pages of 10, 10 and 5";
  ASSERT_EQ(steps.size(), 25u);
  for (int i = 0; i < 25; ++i) EXPECT_EQ(steps[i], i + 1);
  EXPECT_FALSE(master_->series().TrialMetrics(start["trial_id"], std::nullopt, 0, 25)->next_after)
      << "an exact fit is the last page";
}

TEST_F(MasterTest, ReportedMetricsBecomeTimeSeriesThatCanBeFollowed) {
  Register("a1", 1);
  const int64_t exp = Create(Config(1, 0, kSingle));
  const Json start = OnlyStart("a1");
  const std::string allocation = start["allocation"].get<std::string>();
  auto report = [&](int64_t step, double loss) {
    wire::ReportBatch batch{.trial_id = start["trial_id"]};
    batch.lines.push_back({.kind = wire::ReportKind::kTraining,
                           .time = 1000.0 + step,
                           .steps_completed = step,
                           .metrics = Json{{"loss", loss}, {"lr", {{"group0", 0.1}}}}});
    batch.lines.push_back({.kind = wire::ReportKind::kValidation,
                           .time = 1000.0 + step,
                           .steps_completed = step,
                           .metrics = Json{{"accuracy", 1 - loss}}});
    return master_->AllocationReports(allocation, batch);
  };
  for (int step = 1; step <= 3; ++step) ASSERT_OK(report(step * 10, 1.0 / step));
  const int64_t trial = start["trial_id"];
  wire::SeriesList series = master_->series().TrialSeries(trial).value();
  ASSERT_EQ(series.series.size(), 3u);
  EXPECT_EQ(series.series[0].name, "training/loss");
  EXPECT_EQ(series.series[1].name, "training/lr/group0");
  EXPECT_EQ(series.series[2].name, "validation/accuracy");
  EXPECT_EQ(series.series[2].points, 3);
  EXPECT_EQ(series.series[2].last_batch, 30);
  EXPECT_DOUBLE_EQ(series.series[0].last_value, 1.0 / 3);
  EXPECT_DOUBLE_EQ(series.series[0].max_value, 1.0);
  EXPECT_DOUBLE_EQ(series.series[0].min_value, 1.0 / 3);

  series::SeriesRequest request{.names = {"training/loss", "validation/accuracy"}, .min_batch = 20};
  wire::SeriesData data = master_->series().TrialSeriesData(trial, request, absl::ZeroDuration()).value();
  ASSERT_EQ(data.series.size(), 2u);
  ASSERT_EQ(data.series[0].points.size(), 2u);
  EXPECT_EQ(data.series[0].points[0].batch, 20);
  EXPECT_DOUBLE_EQ(data.series[0].points[0].value, 0.5);
  EXPECT_DOUBLE_EQ(data.series[1].points[1].value, 1 - 1.0 / 3);

  // A follow waits for the next point and returns only what is new.
  request = {.names = {"training/loss"}, .after = data.last_id};
  std::thread later([&] {
    absl::SleepFor(absl::Milliseconds(200));
    ASSERT_OK(report(40, 0.25));
  });
  wire::SeriesData next = master_->series().TrialSeriesData(trial, request, absl::Seconds(10)).value();
  later.join();
  ASSERT_EQ(next.series[0].points.size(), 1u);
  EXPECT_EQ(next.series[0].points[0].batch, 40);
  EXPECT_GT(next.last_id, data.last_id);

  wire::ExperimentSeriesData curves =
      master_->series().ExperimentSeries(exp, {.names = {"validation/accuracy"}}).value();
  ASSERT_EQ(curves.trials.size(), 1u);
  EXPECT_EQ(curves.trials[0].trial_id, trial);
  EXPECT_EQ(curves.trials[0].points.size(), 4u);
  EXPECT_TRUE(
      absl::IsInvalidArgument(master_->series().TrialSeriesData(trial, {}, absl::ZeroDuration()).status()));
}

TEST_F(MasterTest, SystemMetricsAreKeptOnlyInsideTheProfilingWindow) {
  Register("a1", 1);
  Create(Config(1, 0, kSingle) +
         "profiling: {enabled: true, begin_on_batch: 5, end_after_batch: 8}\n");
  const Json start = OnlyStart("a1");
  const int64_t trial = start["trial_id"];
  auto report = [&](double batches) {
    wire::ReportBatch batch{.trial_id = trial};
    batch.progress = wire::ProgressRecord{};
    batch.progress->completed = batches;
    batch.progress->total = 10;
    batch.progress->unit = "batches";
    batch.system_metrics = {
        {1000 + batches, "a1", {{"cpu_util_simple", 40 + batches}}, {{"GPU-1", 90, 5e9}}}};
    return master_->AllocationReports(start["allocation"].get<std::string>(), batch);
  };
  for (int b : {3, 5, 7, 9}) ASSERT_OK(report(b)) << b;
  const wire::SeriesList series = master_->series().TrialSeries(trial).value();
  ASSERT_EQ(series.series.size(), 3u);
  EXPECT_EQ(series.series[0].name, "cpu_util_simple");
  EXPECT_EQ(series.series[0].label, "a1");
  EXPECT_EQ(series.series[0].points, 2) << "batches 5 and 7: inside [5, 8]";
  EXPECT_EQ(series.series[0].first_batch, 5);
  EXPECT_DOUBLE_EQ(series.series[0].max_value, 47);
  EXPECT_EQ(series.series[1].name, "gpu_free_memory");
  EXPECT_EQ(series.series[1].label, "a1/GPU-1");
  EXPECT_EQ(series.series[2].name, "gpu_util");
}

TEST_F(MasterTest, WithoutProfilingSystemMetricsAreNotStored) {
  Register("a1", 1);
  Create(Config(1, 0, kSingle));
  const Json start = OnlyStart("a1");
  wire::ReportBatch batch{.trial_id = start["trial_id"]};
  batch.system_metrics = {{1000, "a1", {{"cpu_util_simple", 40}}, {}}};
  ASSERT_OK(master_->AllocationReports(start["allocation"].get<std::string>(), batch));
  EXPECT_TRUE(master_->series().TrialSeries(start["trial_id"]).value().series.empty());
}

TEST_F(MasterTest, StepProfilesInsideTheWindowMakeTimingsAndATraceOfBothRanks) {
  Register("a1", 2);
  Create(Config(2, 0, kSingle) +
         "profiling: {enabled: true, begin_on_batch: 3, end_after_batch: 4}\n");
  const Json start = OnlyStart("a1");
  const int64_t trial = start["trial_id"];
  wire::ReportBatch batch{.trial_id = trial};
  for (int64_t b = 1; b <= 6; ++b) {  // the window holds batches 3 and 4
    for (int rank : {0, 1, 7}) {      // rank 7: the trial has no such rank
      batch.step_profiles.push_back(
          {.rank = rank,
           .batch = b,
           .time = 1000.0 + static_cast<double>(b),
           .phases = {{"step", 0, 10000 + 1000 * rank}, {"backward", 100, 4000}},
           .buckets = {{0, 4096, 1200, 500}, {1, 8192, 3000, 700}}});
    }
  }
  ASSERT_OK(master_->AllocationReports(start["allocation"].get<std::string>(), batch));
  const wire::StepTimings timings = master_->series().TrialStepTimings(trial).value();
  EXPECT_EQ(timings.profiled_steps, 4) << "2 batches x 2 ranks";
  ASSERT_EQ(timings.ranks.size(), 2u);
  EXPECT_EQ(timings.ranks[1].rank, 1);
  std::map<std::string, wire::PhaseTiming> rank1;
  for (const wire::PhaseTiming& p : timings.ranks[1].phases) rank1[p.name] = p;
  EXPECT_EQ(rank1["step"].count, 2);
  EXPECT_DOUBLE_EQ(rank1["step"].mean_ms, 11.0);
  EXPECT_DOUBLE_EQ(rank1[wire::kGradientCommunicationPhase].mean_ms, 1.2);

  const Json trace = master_->series().TrialTrace(trial, std::nullopt, std::nullopt).value();
  std::set<int> ranks;
  std::set<int64_t> batches;
  int buckets = 0;
  for (const Json& e : trace["traceEvents"]) {
    if (e["ph"] != "X") continue;
    ranks.insert(e["pid"].get<int>());
    batches.insert(e["args"]["batch"].get<int64_t>());
    if (e["cat"] == "gradients") ++buckets;
  }
  EXPECT_EQ(ranks, (std::set<int>{0, 1}));
  EXPECT_EQ(batches, (std::set<int64_t>{3, 4}));
  EXPECT_EQ(buckets, 8);
  EXPECT_EQ(trace["otherData"]["start_unix_seconds"], 1003.0);
  const Json one = master_->series().TrialTrace(trial, 3, 3).value();
  for (const Json& e : one["traceEvents"]) {
    if (e["ph"] == "X") {
      EXPECT_EQ(e["args"]["batch"], 3) << e;
    }
  }
}

}  // namespace
TEST_F(MasterTest, StatsCountSlotsTrialsAndTheQueuedWaitSinceTheTrialWasLastQueued) {
  Register("a1", 2);
  const int64_t running = Create(Config(2, 0, kSingle));
  clock_.Advance(absl::Seconds(5));
  const int64_t waiting = Create(Config(2, 0, kSingle));
  clock_.Advance(absl::Seconds(7));
  ClusterStats stats = master_->Stats().value();
  ASSERT_EQ(stats.agents.size(), 1u);
  EXPECT_EQ(stats.agents[0].id, "a1");
  EXPECT_EQ(stats.agents[0].slots, 2);
  EXPECT_EQ(stats.agents[0].used, 2);
  EXPECT_EQ(stats.trials[wire::TrialState::kRunning], 1);
  EXPECT_EQ(stats.trials[wire::TrialState::kQueued], 1);
  EXPECT_EQ(stats.trials[wire::TrialState::kCompleted], 0) << "every state is present";
  EXPECT_EQ(stats.queued, 1);
  EXPECT_EQ(stats.longest_queued_wait, absl::Seconds(7));
  EXPECT_GT(stats.database_bytes, 0);

  ASSERT_OK(master_->PauseExperiment(waiting, kRoot));
  EXPECT_EQ(master_->Stats().value().longest_queued_wait, absl::ZeroDuration());
  clock_.Advance(absl::Seconds(3));
  ASSERT_OK(master_->ActivateExperiment(waiting, kRoot));
  clock_.Advance(absl::Seconds(2));
  EXPECT_EQ(master_->Stats().value().longest_queued_wait, absl::Seconds(2))
      << "the wait starts again when the trial is queued again";
  ASSERT_OK(Exit(OnlyStart("a1"), 0));
  stats = master_->Stats().value();
  EXPECT_EQ(stats.trials[wire::TrialState::kCompleted], 1);
  EXPECT_EQ(stats.queued, 0) << "the waiting trial took the freed slots";
  EXPECT_EQ(stats.longest_queued_wait, absl::ZeroDuration());
  EXPECT_EQ(stats.agents[0].used, 2);
  EXPECT_EQ(Experiment(running)["state"], "COMPLETED");
}

}  // namespace cohort::master
