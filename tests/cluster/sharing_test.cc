// Sharing a cluster (issue 39, docs/scheduling.md) with real processes: a real cohort-master
// with a --resource-pools file, real cohort-agents in two pools, and real Core API trials (the
// tutorial's stage 3, which checkpoints every 10 batches and checkpoints and exits when
// preempted). The urgent-run story end to end: a low-priority grid holds the default pool, an
// urgent run preempts one of its trials, starts, and the grid's trial resumes from its
// checkpoint with its metrics continuous; the big pool's agent is never used by the default
// pool's experiments, but runs the one that names it.
#include <algorithm>
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/cluster_fixture.h"
#include "tests/testing/worker_group.h"

namespace cohort::testing {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using ::testing::HasSubstr;

class SharingTest : public ClusterFixture {
 protected:
  SharingTest() : ClusterFixture("sharing_test") {}

  // The master with the default pool (`policy`, preemption on) and a pool "big"; on `port`
  // (0: any) for a restart.
  void StartPooledMaster(const std::string& policy = "priority", int port = 0,
                         std::vector<std::string> extra = {}) {
    const fs::path pools = dir_ / "pools.yaml";
    std::ofstream(pools) << "resource_pools:\n"
                            "  - pool_name: default\n"
                            "    scheduler: {type: " << policy << ", preemption: true}\n"
                            "  - pool_name: big\n"
                            "    description: the 4-slot machine\n";
    extra.insert(extra.end(), {"--resource-pools", pools.string()});
    StartMaster(extra, "master", port);
    Script("hp.sh", absl::StrCat("exec ", BinaryPath("core_api_3_hpsearch"),
                                 " --config \"$COHORT_CONFIG\"\n"));
  }
  // An experiment of stage 3 trials: `increments` (one trial each, a grid), `batches` long,
  // with the config lines `resources`.
  int64_t CreateGrid(const std::string& name, const std::string& increments, int batches,
                     const std::string& resources) {
    const fs::path config = dir_ / (name + ".yaml");
    std::ofstream(config) << "name: " << name << "\nentrypoint: ./hp.sh\n"
                          << "hyperparameters:\n  global_batch_size: 1\n"
                          << "  increment_by: {type: categorical, vals: " << increments << "}\n"
                          << "searcher:\n  name: grid\n  metric: x\n  smaller_is_better: true\n"
                          << "  max_length: {batches: " << batches << "}\n"
                          << "resources: " << resources << "\nmax_restarts: 0\n";
    LaunchResult r = Cohort({"experiment", "create", config.string(), (dir_ / "context").string()});
    EXPECT_EQ(r.status, 0) << r.out << r.err;
    const size_t at = r.out.find("created experiment ");
    return at == std::string::npos ? -1 : std::stoll(r.out.substr(at + 19));
  }
  // `cohort ARGS` as user `name` (password NAME-password), who logs in from the environment.
  LaunchResult CohortAs(const std::string& name, std::vector<std::string> args) {
    return RunToCompletion(CohortArgv(std::move(args)),
                           {{"XDG_CONFIG_HOME", (dir_ / ("config-" + name)).string()},
                            {"COHORT_USER", name},
                            {"COHORT_PASSWORD", name + "-password"}},
                           absl::Seconds(60));
  }
  // The experiments of `cohort job list --json`, in order, and their slots held.
  std::vector<std::pair<int64_t, int>> Jobs() {
    const json list = Json({"job", "list"});
    std::vector<std::pair<int64_t, int>> out;
    for (const json& j : list.value("jobs", json::array())) {
      out.emplace_back(j["experiment_id"].get<int64_t>(), j["slots_held"].get<int>());
    }
    return out;
  }
  json Trials(int64_t experiment) {
    const json e = Json({"experiment", "describe", std::to_string(experiment)});
    return e.value("trials", json::array());
  }
  // `trial describe --json`'s "trial" part.
  json TrialJson(int64_t trial) {
    const json described = Json({"trial", "describe", std::to_string(trial)});
    return described.value("trial", json::object());
  }
  // Agent `id` with `slots` artificial slots in resource pool `pool`.
  void StartPoolAgent(const std::string& id, int slots, const std::string& pool) {
    std::vector<std::string> argv = AgentArgv(id, (dir_ / id).string(),
                                              {"--resource-pool", pool});
    const auto flag = std::find(argv.begin(), argv.end(), "--slots");
    ASSERT_NE(flag, argv.end());
    *(flag + 1) = std::to_string(slots);
    agents_.push_back(std::make_unique<LauncherProcess>(argv));
    WaitUntil([&] { return Connected(id); }, "agent " + id + " to connect");
  }
};

TEST_F(SharingTest, AnUrgentRunPreemptsALowPriorityGridWhoseTrialResumesFromItsCheckpoint) {
  StartPooledMaster();
  StartAgent("a1");
  StartAgent("a2");
  StartPoolAgent("big1", 4, "big");
  const int64_t grid = CreateGrid("grid", "[1, 2, 3]", 400, "{priority: 50}");
  // Both default-pool agents busy with grid trials that have checkpointed at least once.
  std::vector<int64_t> running;
  WaitUntil(
      [&] {
        running.clear();
        const json trials = Trials(grid);
        for (const json& t : trials) {
          if (t["state"] == "RUNNING" && t.value("batches", 0) >= 20) {
            running.push_back(t["id"].get<int64_t>());
          }
        }
        return running.size() == 2;
      },
      "two grid trials running past their second checkpoint", absl::Seconds(90));
  const absl::Time submitted = absl::Now();
  const int64_t urgent = CreateGrid("urgent", "[5]", 20, "{priority: 10}");
  WaitUntil([&] { return Trials(urgent)[0]["state"] == "RUNNING"; }, "the urgent trial to start",
            absl::Seconds(60));
  const absl::Duration to_start = absl::Now() - submitted;
  std::printf("the urgent run started %.1f s after its submission\n",
              absl::ToDoubleSeconds(to_start));
  // The grid's newest running trial was preempted for it, says so, and is queued again.
  const int64_t preempted = *std::max_element(running.begin(), running.end());
  const std::string logs = Logs(preempted);
  EXPECT_THAT(logs, HasSubstr(absl::StrCat("preempted by experiment ", urgent, " (priority 10)")));
  WaitUntil([&] { return State(urgent) == "COMPLETED"; }, "the urgent run to complete");
  WaitUntil([&] { return State(grid) == "COMPLETED"; }, "the grid to complete",
            absl::Seconds(120));
  const json after = TrialJson(preempted);
  EXPECT_EQ(after.value("restarts", -1), 0) << "a preemption is not a failure: " << after.dump();
  EXPECT_THAT(Logs(preempted), HasSubstr("resuming from checkpoint"));
  // Its training metric is continuous: every batch from 1 to 400 reported, none missing.
  std::vector<int> batches = SeriesBatches(preempted, "training/x");
  std::set<int> seen(batches.begin(), batches.end());
  EXPECT_EQ(seen.size(), 400u);
  EXPECT_EQ(*seen.begin(), 1);
  EXPECT_EQ(*seen.rbegin(), 400);
  // The big pool's agent never ran a default-pool trial; an experiment naming it runs there.
  for (int64_t experiment : {grid, urgent}) {
    const json trials = Trials(experiment);
    for (const json& t : trials) {
      EXPECT_THAT(Logs(t["id"].get<int64_t>()), ::testing::Not(HasSubstr("on big1"))) << t.dump();
    }
  }
  const int64_t big = CreateGrid("big", "[1]", 10, "{slots_per_trial: 4, resource_pool: big}");
  WaitUntil([&] { return State(big) == "COMPLETED"; }, "the big pool's experiment to complete");
  EXPECT_THAT(Logs(Trials(big)[0]["id"].get<int64_t>()), HasSubstr("on big1"));
}

TEST_F(SharingTest, AnOwnerReordersTheirJobAndCannotTouchAnothersWhileTheQueueFollows) {
  StartPooledMaster();
  StartAgent("a1");
  const int64_t first = CreateGrid("first", "[1]", 100000, "{priority: 42}");
  WaitUntil([&] { return Trials(first)[0]["state"] == "RUNNING"; }, "the first job to run");
  const int64_t second = CreateGrid("second", "[1]", 20, "{priority: 42}");
  LaunchResult made = RunToCompletion(
      {"/bin/sh", "-c",
       absl::StrCat(BinaryPath("cohort"), " -m ", url_, " user create alice <<EOF\n",
                    "alice-password\nEOF\n")},
      CohortEnv());
  ASSERT_EQ(made.status, 0) << made.err;
  // Alice's: as admin's second, but long enough (6 s) to be seen running before it ends.
  const fs::path config = dir_ / "third.yaml";
  std::string yaml = ReadFile(dir_ / "second.yaml");
  yaml.replace(yaml.find("batches: 20"), 11, "batches: 300");
  WriteFile(config, yaml);
  LaunchResult created =
      CohortAs("alice", {"experiment", "create", config.string(), (dir_ / "context").string()});
  ASSERT_EQ(created.status, 0) << created.err;
  const int64_t third = second + 1;
  using Order = std::vector<std::pair<int64_t, int>>;
  EXPECT_EQ(Jobs(), (Order{{first, 1}, {second, 0}, {third, 0}}));
  // Alice moves her job ahead of admin's; she may not change admin's.
  LaunchResult ahead = CohortAs(
      "alice", {"job", "update", std::to_string(third), "--ahead-of", std::to_string(second)});
  EXPECT_EQ(ahead.status, 0) << ahead.err;
  EXPECT_EQ(Jobs(), (Order{{first, 1}, {third, 0}, {second, 0}}));
  LaunchResult denied = CohortAs("alice", {"job", "update", std::to_string(second), "--priority", "1"});
  EXPECT_NE(denied.status, 0);
  EXPECT_THAT(denied.err, HasSubstr("belongs to 'admin'"));
  LaunchResult bad = CohortAs("alice", {"experiment", "set", "priority", std::to_string(third), "100"});
  EXPECT_NE(bad.status, 0);
  EXPECT_THAT(bad.err, HasSubstr("priority"));
  // When the slot frees, hers runs first.
  ASSERT_EQ(Cohort({"experiment", "kill", std::to_string(first)}).status, 0);
  // One slot: while hers runs, admin's (now behind) has not started.
  WaitUntil([&] { return Trials(third)[0]["state"] != "QUEUED"; }, "alice's job to start first");
  EXPECT_EQ(Trials(second)[0]["state"], "QUEUED") << "admin's job, now behind, waits";
  WaitUntil([&] { return State(second) == "COMPLETED"; }, "admin's job to run after");
  EXPECT_EQ(State(third), "COMPLETED");
}

TEST_F(SharingTest, FairShareGivesEachExperimentItsWeightedShare) {
  StartPooledMaster("fair_share");
  for (const char* id : {"a1", "a2", "a3"}) StartAgent(id);
  const int64_t heavy = CreateGrid("heavy", "[1, 2, 3, 4]", 100000, "{weight: 2}");
  WaitUntil([&] { return Jobs() == std::vector<std::pair<int64_t, int>>{{heavy, 3}}; },
            "the first experiment to take every idle slot");
  const int64_t light = CreateGrid("light", "[1, 2, 3, 4]", 100000, "{weight: 1}");
  // 3 slots by weights 2:1: the light one preempts one of the heavy one's trials.
  WaitUntil(
      [&] {
        const auto jobs = Jobs();
        std::map<int64_t, int> held(jobs.begin(), jobs.end());
        return held[heavy] == 2 && held[light] == 1;
      },
      "the slots held to converge to 2:1", absl::Seconds(60));
  bool preempted = false;
  const json trials = Trials(heavy);
  for (const json& t : trials) {
    preempted = preempted || Logs(t["id"].get<int64_t>()).find("preempted for fair share") !=
                                 std::string::npos;
  }
  EXPECT_TRUE(preempted) << "one of the heavy experiment's trials says why it stopped";
  for (int64_t e : {heavy, light}) ASSERT_EQ(Cohort({"experiment", "kill", std::to_string(e)}).status, 0);
}

TEST_F(SharingTest, APreemptionSurvivesAMasterRestart) {
  StartPooledMaster();
  StartAgent("a1");
  const int64_t low = CreateGrid("low", "[1]", 600, "{priority: 50}");
  WaitUntil([&] { return Trials(low)[0].value("batches", 0) >= 20; },
            "the low-priority trial past its second checkpoint");
  const int64_t trial = Trials(low)[0]["id"].get<int64_t>();
  const int64_t urgent = CreateGrid("urgent", "[5]", 20, "{priority: 10}");
  // The master dies right after it asked for the preemption; the new one decides again.
  WaitUntil([&] { return Logs(trial).find("preempted by experiment") != std::string::npos; },
            "the preemption to be asked for");
  KillMaster();
  StartPooledMaster("priority", port_, {"--readopt-grace", "20"});
  WaitUntil([&] { return State(urgent) == "COMPLETED"; }, "the urgent run to complete",
            absl::Seconds(90));
  WaitUntil([&] { return State(low) == "COMPLETED"; }, "the preempted run to finish",
            absl::Seconds(90));
  EXPECT_EQ(TrialJson(trial).value("restarts", -1), 0);
  EXPECT_THAT(Logs(trial), HasSubstr("resuming from checkpoint"));
}

}  // namespace
}  // namespace cohort::testing
