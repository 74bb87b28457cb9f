// Sharing a cluster (issue 39, docs/scheduling.md) with real processes: a real cohort-master
// with a --resource-pools file, real cohort-agents in two pools, and real Core API trials (the
// tutorial's stage 3, which checkpoints every 10 batches and checkpoints and exits when
// preempted). The urgent-run story end to end: a low-priority grid holds the default pool, an
// urgent run preempts one of its trials, starts, and the grid's trial resumes from its
// checkpoint with its metrics continuous; the big pool's agent is never used by the default
// pool's experiments, but runs the one that names it.
#include <algorithm>
#include <fstream>
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

  void StartPooledMaster() {
    const fs::path pools = dir_ / "pools.yaml";
    std::ofstream(pools) << "resource_pools:\n"
                            "  - pool_name: default\n"
                            "    scheduler: {type: priority, preemption: true}\n"
                            "  - pool_name: big\n"
                            "    description: the 4-slot machine\n";
    StartMaster({"--resource-pools", pools.string()});
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

}  // namespace
}  // namespace cohort::testing
