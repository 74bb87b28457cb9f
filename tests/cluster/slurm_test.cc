// Slurm as the resource manager end to end (issue 37), against a real Slurm started by each
// test on loopback (src/slurm/testing/slurm_cluster.h: munged, slurmctld and one slurmd per
// node, Debian's slurm-wlm): a real cohort-master with --resource-manager slurm and no agent,
// the real CLI, real batch jobs running cohort-slurm-node on each node. Cases: the Fashion-MNIST
// example across two Slurm nodes reaches the accuracy it reaches on two agents with the same
// seed; a grid search whose trials queue in Slurm (its reason shown); kill; a job cancelled
// from outside and a node that dies mid-trial, each restarted from the checkpoint; pause and
// activate (the partition's nodes in `agent list` and `slot list` meanwhile); a master
// SIGKILLed mid-trial re-adopts its job; sbatch_args honoured, and refused where Cohort must
// keep control of the job.

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "slurm/slurm_client.h"
#include "slurm/testing/slurm_cluster.h"
#include "tests/testing/cluster_fixture.h"
#include "tests/testing/worker_group.h"

namespace cohort {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using testing::BinaryPath;
using testing::LaunchResult;

class SlurmTest : public testing::ClusterFixture {
 protected:
  SlurmTest() : ClusterFixture("slurm_test") {}

  // A Slurm cluster of `nodes` nodes, and the master's environment pointing at it.
  void StartSlurm(int nodes) {
    absl::StatusOr<std::unique_ptr<slurm::testing::SlurmCluster>> cluster =
        slurm::testing::SlurmCluster::Start(nodes);
    ASSERT_TRUE(cluster.ok()) << cluster.status();
    slurm_ = std::move(*cluster);
    for (const auto& [name, value] : slurm_->env()) setenv(name.c_str(), value.c_str(), 1);
    client_ = std::make_unique<slurm::SlurmClient>(slurm_->options());
  }
  std::vector<std::string> SlurmFlags(int slots_per_node = 1) const {
    return {"--resource-manager", "slurm", "--slurm-slots-per-node",
            std::to_string(slots_per_node), "--slurm-node-work-dir", (dir_ / "nodes").string()};
  }
  void StartSlurmMaster(int slots_per_node = 1, const std::string& data_dir = "master") {
    StartMaster(SlurmFlags(slots_per_node), data_dir);
  }
  int64_t CreateFrom(const std::string& name, const std::string& body,
                     const std::string& context = "") {
    const fs::path config = dir_ / (name + ".yaml");
    std::ofstream(config) << "name: " << name << "\n" << body;
    LaunchResult r = Cohort({"experiment", "create", config.string(),
                             context.empty() ? (dir_ / "context").string() : context});
    EXPECT_EQ(r.status, 0) << r.out << r.err;
    const size_t at = r.out.find("created experiment ");
    return at == std::string::npos ? -1 : std::stoll(r.out.substr(at + 19));
  }
  // The live Slurm jobs of this master (named cohort-ALLOCATION).
  std::vector<slurm::JobInfo> LiveJobs() {
    absl::StatusOr<std::vector<slurm::JobInfo>> jobs = client_->JobsNamed("cohort-");
    EXPECT_TRUE(jobs.ok()) << jobs.status();
    return jobs.ok() ? *jobs : std::vector<slurm::JobInfo>{};
  }
  // A trial that stores a checkpoint at step 1, then waits (here Slurm or the test ends it);
  // restarted from that checkpoint, it stores step 2 and completes.
  void WaitingCheckpointScript(const std::string& name) {
    Script(name, absl::StrCat("if [ -z \"$COHORT_LATEST_CHECKPOINT\" ]; then\n  ",
                              BinaryPath("checkpoint_trial"),
                              " --steps 1 --bytes 1024 || exit 1\n"
                              "  echo waiting after step 1; sleep 300; exit 1\nfi\nexec ",
                              BinaryPath("checkpoint_trial"), " --steps 2 --bytes 1024\n"));
  }

  std::unique_ptr<slurm::testing::SlurmCluster> slurm_;
  std::unique_ptr<slurm::SlurmClient> client_;
};

constexpr char kFashionMnist[] =
    "entrypoint: ./fashion_mnist_trial\n"
    "data: {dir: /usr/share/datasets/fashion-mnist}\n"
    "reproducibility: {experiment_seed: 7}\n"
    "hyperparameters: {global_batch_size: 64, learning_rate: 0.02, momentum: 0.9,\n"
    "  n_filters1: 32, n_filters2: 64, dropout1: 0.25, dropout2: 0.5}\n"
    "searcher: {name: single, metric: validation_loss, max_length: {batches: 10}}\n"
    "resources: {slots_per_trial: 2}\nmax_restarts: 0\n";

TEST_F(SlurmTest, FashionMnistAcrossTwoSlurmNodesMatchesTwoAgentsWithTheSameSeed) {
  const fs::path context = dir_ / "fm_context";
  fs::create_directories(context);
  fs::copy_file(BinaryPath("fashion_mnist_trial"), context / "fashion_mnist_trial");
  // On two one-slot agents.
  StartMaster();  // on dir_/master, where StartAgent finds the agent secret
  StartAgent("a1");
  StartAgent("a2");
  const int64_t on_agents = CreateFrom("fm-agents", kFashionMnist, context.string());
  WaitUntil([&] { return State(on_agents) != "ACTIVE"; }, "the agents' run", absl::Seconds(240));
  ASSERT_EQ(State(on_agents), "COMPLETED") << Logs(Trial(on_agents)["id"]);
  const json agents_trial = Json({"trial", "describe", TrialId(on_agents)});
  KillMaster();
  for (auto& agent : agents_) agent.reset();
  agents_.clear();

  // On two one-slot Slurm nodes, no agent running.
  StartSlurm(2);
  StartSlurmMaster(1, "slurm-master");
  const int64_t on_slurm = CreateFrom("fm-slurm", kFashionMnist, context.string());
  WaitUntil([&] { return State(on_slurm) != "ACTIVE"; }, "the Slurm run", absl::Seconds(240));
  const std::string logs = Logs(Trial(on_slurm)["id"]);
  ASSERT_EQ(State(on_slurm), "COMPLETED") << logs;
  const json slurm_trial = Json({"trial", "describe", TrialId(on_slurm)});
  // Both nodes ran, each on its own Slurm node.
  EXPECT_NE(logs.find("node 0 (slurm-t1-0) starts on n"), std::string::npos) << logs;
  EXPECT_NE(logs.find("node 1 (slurm-t1-1) starts on n"), std::string::npos) << logs;
  EXPECT_NE(logs.find("node 1 (agent slurm-t1-1) exited with status 0"), std::string::npos)
      << logs;
  ASSERT_EQ(slurm_trial["validation"].size(), 1u) << slurm_trial.dump();
  ASSERT_EQ(agents_trial["validation"].size(), 1u) << agents_trial.dump();
  const double slurm_accuracy = slurm_trial["validation"][0]["metrics"]["accuracy"];
  const double agents_accuracy = agents_trial["validation"][0]["metrics"]["accuracy"];
  std::printf("validation accuracy: %.6f on two agents, %.6f on two Slurm nodes\n",
              agents_accuracy, slurm_accuracy);
  EXPECT_GT(slurm_accuracy, 0.3);
  // The same seed, data and ranks: the same model up to the order of floating-point sums
  // (each worker's thread count may differ between an agent and a Slurm task).
  EXPECT_NEAR(slurm_accuracy, agents_accuracy, 0.002);  // 20 of the 10,000 test images
  EXPECT_NEAR(slurm_trial["validation"][0]["metrics"]["validation_loss"].get<double>(),
              agents_trial["validation"][0]["metrics"]["validation_loss"].get<double>(), 0.02);
  // The master ends a trial on its node's report; Slurm may list the job (COMPLETING) a moment
  // longer.
  WaitUntil([&] { return LiveJobs().empty(); }, "the jobs to leave Slurm", absl::Seconds(30));
}

TEST_F(SlurmTest, AGridSearchQueuesInSlurmAndEveryTrialCompletes) {
  // One node of two CPUs, two slots a node: each 2-slot trial takes the whole node.
  StartSlurm(1);
  StartSlurmMaster(2);
  Script("step.sh", "echo step for $COHORT_TRIAL_ID; sleep 5\n");
  const int64_t id = CreateFrom(
      "grid",
      "entrypoint: ./step.sh\nmax_restarts: 0\nresources: {slots_per_trial: 2}\n"
      "hyperparameters: {global_batch_size: 16, x: {type: categorical, vals: [1, 2, 3]}}\n"
      "searcher: {name: grid, metric: loss, max_length: {batches: 1}}\n");
  // Every trial is submitted at once: one job runs while the others pend in Slurm, which
  // says why (its scheduler sets the reason when it next considers them).
  bool queued = false;  // a trial pending in Slurm while another runs
  bool reason = false;  // Slurm's reason shown
  std::set<std::string> seen;
  WaitUntil(
      [&] {
        bool running = false;
        bool pending = false;
        const json tasks = Json({"task", "list"});  // kept: the loop reads into it
        for (const json& t : tasks["tasks"]) {
          const std::string why = t.value("reason", "");
          seen.insert(why);
          running |= t["state"] == "RUNNING" && why.empty();
          pending |= why.find(" is pending") != std::string::npos;
          reason |= why.find("is pending (Slurm's reason: Resources)") != std::string::npos ||
                    why.find("is pending (Slurm's reason: Priority)") != std::string::npos;
        }
        queued |= running && pending;
        return State(id) != "ACTIVE";
      },
      "the grid to end", absl::Seconds(120));
  EXPECT_TRUE(queued) << "reasons seen: [" << absl::StrJoin(seen, "] [") << "]";
  EXPECT_TRUE(reason) << "reasons seen: [" << absl::StrJoin(seen, "] [") << "]";
  const json described = Json({"experiment", "describe", std::to_string(id)});
  EXPECT_EQ(described["state"], "COMPLETED") << Logs(Trial(id)["id"]);
  ASSERT_EQ(described["trials"].size(), 3u) << described.dump();
  for (const json& t : described["trials"]) EXPECT_EQ(t["state"], "COMPLETED") << t.dump();
  // The master ends a trial on its node's report; Slurm may list the job (COMPLETING) a moment
  // longer.
  WaitUntil([&] { return LiveJobs().empty(); }, "the jobs to leave Slurm", absl::Seconds(30));
}

TEST_F(SlurmTest, KillEndsTheJobAndAJobCancelledFromOutsideRestartsFromItsCheckpoint) {
  StartSlurm(2);
  StartSlurmMaster();
  WaitingCheckpointScript("ckpt.sh");
  // Cancelled by an operator: the run fails with Slurm's words and restarts from step 1.
  const int64_t outside = CreateFrom(
      "outside", "entrypoint: ./ckpt.sh\nmax_restarts: 1\nhyperparameters: {global_batch_size: 16}\n"
                 "searcher: {name: single, metric: loss, max_length: {batches: 2}}\n");
  const int64_t trial = Trial(outside)["id"];
  WaitUntil([&] { return Logs(trial).find("waiting after step 1") != std::string::npos; },
            "the first run to store its checkpoint", absl::Seconds(60));
  std::vector<slurm::JobInfo> jobs = LiveJobs();
  ASSERT_EQ(jobs.size(), 1u);
  ASSERT_TRUE(client_->Cancel(jobs[0].id).ok());
  WaitUntil([&] { return State(outside) != "ACTIVE"; }, "the restarted run", absl::Seconds(120));
  const std::string logs = Logs(trial);
  EXPECT_EQ(State(outside), "COMPLETED") << logs;
  EXPECT_NE(logs.find("was ended by Slurm"), std::string::npos) << logs;
  EXPECT_NE(logs.find("resumed from "), std::string::npos) << logs;
  EXPECT_EQ(Trial(outside)["restarts"], 1) << logs;

  // Killed through Cohort: the job leaves Slurm and the trial is canceled.
  const int64_t killed = CreateFrom(
      "killed", "entrypoint: ./ckpt.sh\nmax_restarts: 3\nhyperparameters: {global_batch_size: 16}\n"
                "searcher: {name: single, metric: loss, max_length: {batches: 2}}\n");
  const int64_t killed_trial = Trial(killed)["id"];
  WaitUntil([&] { return Logs(killed_trial).find("waiting after step 1") != std::string::npos; },
            "the trial to run", absl::Seconds(60));
  ASSERT_EQ(Cohort({"experiment", "kill", std::to_string(killed)}).status, 0);
  WaitUntil([&] { return State(killed) == "CANCELED"; }, "the kill", absl::Seconds(60));
  WaitUntil([&] { return LiveJobs().empty(); }, "the job to leave Slurm", absl::Seconds(30));
  EXPECT_EQ(Trial(killed)["restarts"], 0);
}

TEST_F(SlurmTest, PauseStopsTheJobThroughTheTrialAndActivateResumesFromItsCheckpoint) {
  StartSlurm(2);
  StartSlurmMaster();
  WaitingCheckpointScript("ckpt.sh");
  const int64_t id = CreateFrom(
      "paused", "entrypoint: ./ckpt.sh\nmax_restarts: 0\nhyperparameters: {global_batch_size: 16}\n"
                "searcher: {name: single, metric: loss, max_length: {batches: 2}}\n");
  const int64_t trial = Trial(id)["id"];
  WaitUntil([&] { return Logs(trial).find("waiting after step 1") != std::string::npos; },
            "the first run to store its checkpoint", absl::Seconds(60));
  // While it runs, the partition's nodes are the cluster's agents and slots.
  const json nodes = Json({"agent", "list"});
  ASSERT_EQ(nodes["agents"].size(), 2u) << nodes.dump();
  EXPECT_EQ(nodes["agents"][0]["id"], "n1");
  const json slots = Json({"slot", "list"});
  int held = 0;
  for (const json& slot : slots["slots"]) held += slot.contains("allocation") ? 1 : 0;
  EXPECT_EQ(held, 1) << slots.dump();
  // Pause: the trial is told to stop (SIGUSR1 to the job), its job ends, nothing is lost.
  ASSERT_EQ(Cohort({"experiment", "pause", std::to_string(id)}).status, 0);
  WaitUntil([&] { return Trial(id)["state"] == "PAUSED"; }, "the trial to pause",
            absl::Seconds(60));
  WaitUntil([&] { return LiveJobs().empty(); }, "the job to leave Slurm", absl::Seconds(30));
  ASSERT_EQ(Cohort({"experiment", "activate", std::to_string(id)}).status, 0);
  WaitUntil([&] { return State(id) != "ACTIVE"; }, "the resumed run", absl::Seconds(90));
  const std::string logs = Logs(trial);
  EXPECT_EQ(State(id), "COMPLETED") << logs;
  EXPECT_EQ(Trial(id)["restarts"], 0) << logs;
  EXPECT_NE(logs.find("resumed from "), std::string::npos) << logs;
  EXPECT_EQ(logs.find("was ended by Slurm"), std::string::npos) << logs;
}

TEST_F(SlurmTest, ANodeThatDiesMidTrialFailsTheRunWhichRestartsFromItsCheckpoint) {
  StartSlurm(3);
  StartSlurmMaster();
  WaitingCheckpointScript("ckpt.sh");
  const int64_t id = CreateFrom(
      "nodefail",
      "entrypoint: ./ckpt.sh\nmax_restarts: 1\nresources: {slots_per_trial: 2}\n"
      "hyperparameters: {global_batch_size: 16}\n"
      "searcher: {name: single, metric: loss, max_length: {batches: 2}}\n");
  const int64_t trial = Trial(id)["id"];
  WaitUntil([&] { return Logs(trial).find("waiting after step 1") != std::string::npos; },
            "the first run to store its checkpoint", absl::Seconds(60));
  std::vector<slurm::JobInfo> jobs = LiveJobs();
  ASSERT_EQ(jobs.size(), 1u);
  ASSERT_EQ(jobs[0].nodes.size(), 2u);
  // The job's second node dies with everything on it.
  const std::string victim = jobs[0].nodes[1];
  ASSERT_TRUE(slurm_->KillNode(std::stoi(victim.substr(1))).ok()) << victim;
  WaitUntil([&] { return State(id) != "ACTIVE"; }, "the restarted run", absl::Seconds(180));
  const std::string logs = Logs(trial);
  EXPECT_EQ(State(id), "COMPLETED") << logs;
  EXPECT_EQ(Trial(id)["restarts"], 1) << logs;
  EXPECT_NE(logs.find("resumed from "), std::string::npos) << logs;
}

TEST_F(SlurmTest, AMasterKilledMidTrialReadoptsItsJobAndSubmitsNothingTwice) {
  StartSlurm(2);
  StartSlurmMaster();
  Script("long.sh", "for i in 1 2 3 4 5 6 7 8 9 10 11 12; do echo tick $i; sleep 1; done\n");
  const int64_t id = CreateFrom(
      "readopt", "entrypoint: ./long.sh\nmax_restarts: 0\nhyperparameters: {global_batch_size: 16}\n"
                 "searcher: {name: single, metric: loss, max_length: {batches: 1}}\n");
  const int64_t trial = Trial(id)["id"];
  WaitUntil([&] { return Logs(trial).find("tick 2") != std::string::npos; }, "the trial to run",
            absl::Seconds(60));
  const std::vector<slurm::JobInfo> before = LiveJobs();
  ASSERT_EQ(before.size(), 1u);
  KillMaster();
  StartMaster([&] {
    std::vector<std::string> flags = SlurmFlags();
    flags.insert(flags.end(), {"--readopt-grace", "20"});
    return flags;
  }(), "master", port_);
  WaitUntil([&] { return State(id) != "ACTIVE"; }, "the trial to end", absl::Seconds(90));
  const std::string logs = Logs(trial);
  EXPECT_EQ(State(id), "COMPLETED") << logs;
  EXPECT_EQ(Trial(id)["restarts"], 0) << logs;
  EXPECT_NE(logs.find("reclaimed node 0"), std::string::npos) << logs;
  EXPECT_NE(logs.find("tick 12"), std::string::npos) << logs;
  // One allocation, one job: nothing was submitted again.
  EXPECT_EQ(logs.find("master: allocation "), logs.rfind("master: allocation ")) << logs;
  // The master ends a trial on its node's report; Slurm may list the job (COMPLETING) a moment
  // longer.
  WaitUntil([&] { return LiveJobs().empty(); }, "the jobs to leave Slurm", absl::Seconds(30));
}

TEST_F(SlurmTest, SbatchArgsAreHonouredAndThoseThatWouldTakeTheJobAwayAreRefused) {
  StartSlurm(1);
  StartSlurmMaster();
  Script("long.sh", "sleep 30\n");
  const int64_t id = CreateFrom(
      "timed", "entrypoint: ./long.sh\nmax_restarts: 0\nslurm: {sbatch_args: [--time=7]}\n"
               "hyperparameters: {global_batch_size: 16}\n"
               "searcher: {name: single, metric: loss, max_length: {batches: 1}}\n");
  std::vector<slurm::JobInfo> jobs;
  WaitUntil([&] { return !(jobs = LiveJobs()).empty(); }, "the job", absl::Seconds(30));
  // RunToCompletion execs a path; env finds scontrol on the PATH.
  const LaunchResult show = testing::RunToCompletion(
      {"/usr/bin/env", "scontrol", "show", "job", std::to_string(jobs[0].id)}, {},
      absl::Seconds(30));
  EXPECT_NE(show.out.find("TimeLimit=00:07:00"), std::string::npos) << show.out << show.err;
  ASSERT_EQ(Cohort({"experiment", "kill", std::to_string(id)}).status, 0);

  const fs::path bad = dir_ / "bad.yaml";
  std::ofstream(bad) << "name: bad\nentrypoint: ./long.sh\nslurm: {sbatch_args: [--wrap=x]}\n"
                        "hyperparameters: {global_batch_size: 16}\n"
                        "searcher: {name: single, metric: loss, max_length: {batches: 1}}\n";
  LaunchResult refused = Cohort({"experiment", "create", bad.string(), (dir_ / "context").string()});
  EXPECT_NE(refused.status, 0);
  EXPECT_NE(refused.err.find("slurm.sbatch_args"), std::string::npos) << refused.err;
  EXPECT_NE(refused.err.find("--wrap"), std::string::npos) << refused.err;
}

}  // namespace
}  // namespace cohort
