// After training on a real cluster (issue 42, docs/design/0023): a real cohort-master and
// cohort-agent, a Core API trial that stores real checkpoints, and every `cohort model` verb
// through the real CLI, as the admin who owns the model and as another user who may only read;
// the checkpoint and experiment verbs that go with them (describe, delete, set, list --label).

#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "tests/testing/cluster_fixture.h"
#include "tests/testing/worker_group.h"

namespace cohort::testing {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

class ModelsTest : public ClusterFixture {
 protected:
  ModelsTest() : ClusterFixture("models_test") {}

  // Runs an experiment whose trial stores checkpoints at steps 1 and 2 (both kept) and returns
  // their UUIDs in step order.
  std::vector<std::string> TrainedCheckpoints() {
    Script("ckpt.sh",
           absl::StrCat("exec ", BinaryPath("checkpoint_trial"), " --steps 2 --bytes 4096\n"));
    const fs::path config = dir_ / "trained.yaml";
    std::ofstream(config) << "name: trained\nentrypoint: ./ckpt.sh\nmax_restarts: 0\n"
                             "hyperparameters: {global_batch_size: 16}\n"
                             "searcher: {name: single, metric: loss, max_length: {batches: 2}}\n"
                             "checkpoint_storage: {save_trial_best: 0, save_trial_latest: 2}\n";
    LaunchResult created =
        Cohort({"experiment", "create", config.string(), (dir_ / "context").string()});
    EXPECT_EQ(created.status, 0) << created.err;
    const int64_t id = std::stoll(created.out.substr(created.out.find("created experiment ") + 19));
    std::vector<std::string> ids;
    WaitUntil([&] { return State(id) == "COMPLETED" || State(id) == "ERROR"; },
              "the experiment to end", absl::Seconds(120));
    EXPECT_EQ(State(id), "COMPLETED") << Logs(Trial(id)["id"]);
    const json list = Json({"checkpoint", "list", std::to_string(id)});
    for (const json& c : list["checkpoints"]) {
      if (c["state"] == "ACTIVE") ids.push_back(c["storage_id"]);
    }
    return ids;
  }

  // `cohort ARGS...` as user `name` (password `name`-password), logged in from its own config.
  LaunchResult CohortAsUser(const std::string& name, std::vector<std::string> args) {
    auto env = CohortEnv();
    env["XDG_CONFIG_HOME"] = (dir_ / ("config-" + name)).string();
    env["COHORT_USER"] = name;
    env["COHORT_PASSWORD"] = name + "-password";
    return RunToCompletion(CohortArgv(std::move(args)), env);
  }

  void CreateUser(const std::string& name) {
    std::vector<std::string> argv = CohortArgv({"user", "create", name});
    std::string command;
    for (const std::string& a : argv) absl::StrAppend(&command, "'", a, "' ");
    absl::StrAppend(&command, "<<EOF\n", name, "-password\nEOF\n");
    LaunchResult created = RunToCompletion({"/bin/sh", "-c", command}, CohortEnv());
    ASSERT_EQ(created.status, 0) << created.out << created.err;
  }
};

// A finished experiment's checkpoints become versions 1 and 2 of a model without reading a
// log: create, register, list, describe (table and JSON), update, and the deletes; bad input is
// refused naming what is wrong; another user reads but cannot change.
TEST_F(ModelsTest, EveryVerbThroughTheCli) {
  StartMaster();
  StartAgent("a1");
  const std::vector<std::string> checkpoints = TrainedCheckpoints();
  ASSERT_EQ(checkpoints.size(), 2u);

  LaunchResult created = Cohort({"model", "create", "resnet", "--description", "the classifier",
                                 "--label", "vision", "--metadata", R"({"dataset": "v2"})"});
  ASSERT_EQ(created.status, 0) << created.err;
  EXPECT_NE(created.out.find("model resnet created"), std::string::npos) << created.out;
  LaunchResult v1 = Cohort({"model", "register-version", "resnet", checkpoints[0], "--comment",
                            "first try", "--notes", "# Notes\nfine"});
  ASSERT_EQ(v1.status, 0) << v1.err;
  EXPECT_NE(v1.out.find(absl::StrCat("checkpoint ", checkpoints[0],
                                     " registered as version 1 of model resnet")),
            std::string::npos)
      << v1.out;
  const json v2 = Json({"model", "register-version", "resnet", checkpoints[1], "--name", "best"});
  EXPECT_EQ(v2["version"], 2);
  EXPECT_EQ(v2["registered_by"], "admin");

  LaunchResult list = Cohort({"model", "list"});
  ASSERT_EQ(list.status, 0) << list.err;
  EXPECT_NE(list.out.find("name    versions  owner"), std::string::npos) << list.out;
  EXPECT_NE(list.out.find("resnet         2  admin"), std::string::npos) << list.out;
  const json described = Json({"model", "describe", "resnet"});
  EXPECT_EQ(described["model"]["metadata"]["dataset"], "v2");
  EXPECT_EQ(described["model"]["labels"], json({"vision"}));
  ASSERT_EQ(described["versions"].size(), 2u);
  EXPECT_EQ(described["versions"][0]["checkpoint"], checkpoints[0]);
  EXPECT_EQ(described["versions"][0]["notes"], "# Notes\nfine");
  EXPECT_EQ(described["versions"][1]["name"], "best");
  LaunchResult table = Cohort({"model", "describe", "resnet"});
  EXPECT_NE(table.out.find(absl::StrCat("      2  ", checkpoints[1], "  best")), std::string::npos)
      << table.out;

  // Bad input, each refused naming what is wrong; nothing is stored.
  LaunchResult bad_name = Cohort({"model", "create", "res/net"});
  EXPECT_NE(bad_name.status, 0);
  EXPECT_NE(bad_name.err.find("a model's name must be"), std::string::npos) << bad_name.err;
  LaunchResult taken = Cohort({"model", "create", "resnet"});
  EXPECT_NE(taken.err.find("a model named 'resnet' already exists"), std::string::npos)
      << taken.err;
  LaunchResult no_checkpoint = Cohort({"model", "register-version", "resnet", "nope"});
  EXPECT_NE(no_checkpoint.err.find("no checkpoint nope"), std::string::npos) << no_checkpoint.err;
  LaunchResult bad_metadata = Cohort({"model", "create", "m2", "--metadata", "[1]"});
  EXPECT_NE(bad_metadata.err.find("--metadata must be a JSON object"), std::string::npos)
      << bad_metadata.err;
  LaunchResult unknown = Cohort({"model", "describe", "nope"});
  EXPECT_NE(unknown.err.find("no model named 'nope' (`cohort model list` shows them)"),
            std::string::npos)
      << unknown.err;
  EXPECT_EQ(Json({"model", "list"})["models"].size(), 1u);

  // Another user reads, and is refused every change, naming the owner.
  CreateUser("alice");
  LaunchResult read = CohortAsUser("alice", {"model", "describe", "resnet", "--json"});
  ASSERT_EQ(read.status, 0) << read.err;
  EXPECT_NE(read.out.find(checkpoints[1]), std::string::npos);
  for (const std::vector<std::string>& change :
       {std::vector<std::string>{"model", "register-version", "resnet", checkpoints[0]},
        std::vector<std::string>{"model", "update", "resnet", "--description", "mine"},
        std::vector<std::string>{"model", "delete-version", "resnet", "1", "--yes"},
        std::vector<std::string>{"model", "delete", "resnet", "--yes"}}) {
    LaunchResult denied = CohortAsUser("alice", change);
    EXPECT_NE(denied.status, 0) << change[1];
    EXPECT_NE(denied.err.find("model 'resnet' belongs to 'admin'"), std::string::npos)
        << denied.err;
  }
  LaunchResult alices = CohortAsUser("alice", {"model", "create", "alices"});
  EXPECT_EQ(alices.status, 0) << alices.err;

  // Update, then the deletes: a deleted version's number is not given again.
  ASSERT_EQ(Cohort({"model", "update", "resnet", "--label", "prod", "--label", "vision"}).status,
            0);
  EXPECT_EQ(Json({"model", "describe", "resnet"})["model"]["labels"], json({"prod", "vision"}));
  LaunchResult asked = Cohort({"model", "delete-version", "resnet", "2"});
  EXPECT_NE(asked.err.find("pass --yes"), std::string::npos) << asked.err;
  ASSERT_EQ(Cohort({"model", "delete-version", "resnet", "2", "--yes"}).status, 0);
  EXPECT_EQ(Json({"model", "register-version", "resnet", checkpoints[1]})["version"], 3);
  ASSERT_EQ(Cohort({"model", "delete", "resnet", "--yes"}).status, 0);
  const json left = Json({"model", "list"});
  ASSERT_EQ(left["models"].size(), 1u);
  EXPECT_EQ(left["models"][0]["name"], "alices");
}

// A registered checkpoint outlives what would delete it: the checkpoint GC keeps it (saying
// why in the trial's log), `experiment delete` is refused naming the version, and `model
// download` streams it. Once the version is deleted, the experiment can go.
TEST_F(ModelsTest, ARegisteredCheckpointSurvivesTheGcAndBlocksDeletionAndDownloads) {
  StartMaster();
  StartAgent("a1");
  const fs::path release = dir_ / "release";
  Script("ckpt.sh",
         absl::StrCat(BinaryPath("checkpoint_trial"), " --steps 1 --bytes 4096 || ",
                      "exit 1\nwhile [ ! -e ", release.string(), " ]; do sleep 0.1; done\n"));
  const fs::path config = dir_ / "kept.yaml";
  // The GC's counts keep nothing: every checkpoint goes when the trial ends, unless registered.
  std::ofstream(config) << "name: kept\nentrypoint: ./ckpt.sh\nmax_restarts: 0\n"
                           "hyperparameters: {global_batch_size: 16}\n"
                           "searcher: {name: single, metric: loss, max_length: {batches: 1}}\n"
                           "checkpoint_storage: {save_experiment_best: 0, save_trial_best: 0, "
                           "save_trial_latest: 0}\n";
  LaunchResult created =
      Cohort({"experiment", "create", config.string(), (dir_ / "context").string()});
  ASSERT_EQ(created.status, 0) << created.err;
  const std::string id =
      std::to_string(std::stoll(created.out.substr(created.out.find("created experiment ") + 19)));
  std::string checkpoint;
  WaitUntil(
      [&] {
        const json list = Json({"checkpoint", "list", id});
        if (list.value("checkpoints", json::array()).empty()) return false;
        checkpoint = list["checkpoints"][0]["storage_id"];
        return true;
      },
      "the trial's checkpoint");
  ASSERT_EQ(Cohort({"model", "create", "keeper"}).status, 0);
  ASSERT_EQ(Cohort({"model", "register-version", "keeper", checkpoint}).status, 0);
  WriteFile(release, "");
  WaitUntil([&] { return State(std::stoll(id)) == "COMPLETED"; }, "the experiment to complete");

  // The GC let it go by its counts, and kept it for the registry.
  const json after = Json({"checkpoint", "list", id});
  ASSERT_EQ(after["checkpoints"].size(), 1u);
  EXPECT_EQ(after["checkpoints"][0]["state"], "ACTIVE");
  const std::string logs = Logs(Trial(std::stoll(id))["id"]);
  EXPECT_NE(logs.find(absl::StrCat("kept: checkpoint ", checkpoint,
                                   " is version 1 of model 'keeper' (the model registry)")),
            std::string::npos)
      << logs;

  // Deleting the experiment is refused, naming the version and what to do.
  LaunchResult refused = Cohort({"experiment", "delete", id, "--yes"});
  EXPECT_NE(refused.status, 0);
  EXPECT_NE(refused.err.find(absl::StrCat("experiment ", id, " cannot be deleted")),
            std::string::npos)
      << refused.err;
  EXPECT_NE(refused.err.find("is version 1 of model 'keeper'"), std::string::npos) << refused.err;
  EXPECT_NE(refused.err.find("cohort model delete-version"), std::string::npos) << refused.err;
  EXPECT_EQ(State(std::stoll(id)), "COMPLETED");

  // `model download` streams it, by name (the latest) and by number.
  LaunchResult latest = Cohort({"model", "download", "keeper", (dir_ / "latest").string()});
  ASSERT_EQ(latest.status, 0) << latest.err;
  EXPECT_NE(latest.out.find("model keeper version 1: checkpoint " + checkpoint), std::string::npos)
      << latest.out;
  EXPECT_EQ(ReadFile(dir_ / "latest" / "state").substr(0, 1), "1") << "the step, then padding";
  ASSERT_EQ(Cohort({"model", "download", "keeper:1", (dir_ / "v1").string()}).status, 0);
  EXPECT_EQ(ReadFile(dir_ / "v1" / "state"), ReadFile(dir_ / "latest" / "state"));
  LaunchResult no_version = Cohort({"model", "download", "keeper:7", (dir_ / "v7").string()});
  EXPECT_NE(no_version.err.find("'keeper' has no version 7"), std::string::npos) << no_version.err;
  EXPECT_FALSE(fs::exists(dir_ / "v7"));

  // `checkpoint describe` says what holds it; `checkpoint delete` is refused while it does.
  const json described = Json({"checkpoint", "describe", checkpoint});
  EXPECT_EQ(described["registered_as"], json({"keeper:1"}));
  EXPECT_EQ(described["experiment_id"], std::stoll(id));
  LaunchResult kept = Cohort({"checkpoint", "delete", checkpoint, "--yes"});
  EXPECT_NE(kept.status, 0);
  EXPECT_NE(kept.err.find("is version 1 of model 'keeper'"), std::string::npos) << kept.err;

  // Without the version, the checkpoint can go, and then the experiment.
  ASSERT_EQ(Cohort({"model", "delete-version", "keeper", "1", "--yes"}).status, 0);
  LaunchResult gone = Cohort({"checkpoint", "delete", checkpoint, "--yes"});
  ASSERT_EQ(gone.status, 0) << gone.err;
  EXPECT_EQ(Json({"checkpoint", "describe", checkpoint})["state"], "DELETED");
  WaitUntil([&] { return !fs::exists(dir_ / "master" / "checkpoints" / checkpoint); },
            "the checkpoint's files to be removed");
  LaunchResult deleted = Cohort({"experiment", "delete", id, "--yes"});
  ASSERT_EQ(deleted.status, 0) << deleted.err;
  WaitUntil(
      [&] {
        return Json({"experiment", "list", "--all"})["experiments"].empty();
      },
      "the experiment to be gone");
  EXPECT_FALSE(fs::exists(dir_ / "master" / "checkpoints" / checkpoint));
}

// `experiment set name|description|labels` writes what `experiment list` shows and filters on
// (--label, every label given); its owner or an admin only.
TEST_F(ModelsTest, ExperimentsAreRenamedRelabeledAndListedByLabel) {
  StartMaster();
  Script("ok.sh", "exit 0\n");
  const int64_t a = Create("first", "./ok.sh");
  const int64_t b = Create("second", "./ok.sh");
  const std::string ida = std::to_string(a);
  ASSERT_EQ(Cohort({"experiment", "set", "name", ida, "baseline-resnet"}).status, 0);
  ASSERT_EQ(Cohort({"experiment", "set", "description", ida, "the one to beat"}).status, 0);
  ASSERT_EQ(Cohort({"experiment", "set", "labels", ida, "baseline,resnet"}).status, 0);
  ASSERT_EQ(Cohort({"experiment", "set", "labels", std::to_string(b), "resnet"}).status, 0);
  const json both = Json({"experiment", "list", "--label", "resnet"});
  ASSERT_EQ(both["experiments"].size(), 2u);
  const json one = Json({"experiment", "list", "--label", "resnet", "--label", "baseline"});
  ASSERT_EQ(one["experiments"].size(), 1u);
  EXPECT_EQ(one["experiments"][0]["name"], "baseline-resnet");
  EXPECT_EQ(one["experiments"][0]["description"], "the one to beat");
  EXPECT_TRUE(Json({"experiment", "list", "--label", "nope"})["experiments"].empty());
  LaunchResult table = Cohort({"experiment", "list"});
  EXPECT_NE(table.out.find("baseline,resnet"), std::string::npos) << table.out;
  EXPECT_NE(
      Json({"experiment", "describe", ida})["config"].get<std::string>().find("the one to beat"),
      std::string::npos);

  ASSERT_EQ(Cohort({"experiment", "set", "labels", ida, ""}).status, 0);
  EXPECT_EQ(Json({"experiment", "list", "--label", "baseline"})["experiments"].size(), 0u);
  LaunchResult empty_name = Cohort({"experiment", "set", "name", ida, ""});
  EXPECT_NE(empty_name.err.find("\"name\" must not be empty"), std::string::npos) << empty_name.err;
  CreateUser("bob");
  LaunchResult denied = CohortAsUser("bob", {"experiment", "set", "name", ida, "mine"});
  EXPECT_NE(denied.err.find("belongs to 'admin'"), std::string::npos) << denied.err;
}

// `trial logs --level --grep --since --until`: the master sends only the lines kept.
TEST_F(ModelsTest, TrialLogsAreFilteredByTheMaster) {
  StartMaster();
  StartAgent("a1");
  Script("talk.sh",
         "echo 'step 1 fine'\necho 'ERROR loss is NaN' >&2\necho 'WARNING slow data'\n"
         "echo 'Out Of Memory on gpu 0'\n");
  const int64_t id = Create("talk", "./talk.sh", "max_restarts: 0\n");
  WaitUntil([&] { return State(id) == "COMPLETED" || State(id) == "ERROR"; }, "the end");
  const std::string trial = std::to_string(Trial(id)["id"].get<int64_t>());
  LaunchResult errors = Cohort({"trial", "logs", trial, "--level", "error"});
  ASSERT_EQ(errors.status, 0) << errors.err;
  EXPECT_NE(errors.out.find("ERROR loss is NaN"), std::string::npos) << errors.out;
  EXPECT_EQ(errors.out.find("step 1 fine"), std::string::npos) << errors.out;
  EXPECT_EQ(errors.out.find("WARNING slow data"), std::string::npos) << errors.out;
  LaunchResult warnings = Cohort({"trial", "logs", trial, "--level", "warning"});
  EXPECT_NE(warnings.out.find("WARNING slow data"), std::string::npos) << warnings.out;
  LaunchResult grep = Cohort({"trial", "logs", trial, "--grep", "out of memory"});
  EXPECT_NE(grep.out.find("Out Of Memory on gpu 0"), std::string::npos) << grep.out;
  EXPECT_EQ(grep.out.find("NaN"), std::string::npos) << grep.out;
  LaunchResult recent = Cohort({"trial", "logs", trial, "--since", "1h", "--grep", "fine"});
  EXPECT_NE(recent.out.find("step 1 fine"), std::string::npos) << recent.out;
  LaunchResult old = Cohort({"trial", "logs", trial, "--until", "2000-01-01T00:00:00Z"});
  ASSERT_EQ(old.status, 0) << old.err;
  EXPECT_EQ(old.out.find("fine"), std::string::npos) << old.out;
  LaunchResult bad = Cohort({"trial", "logs", trial, "--since", "yesterday"});
  EXPECT_NE(bad.err.find("--since: 'yesterday' is neither"), std::string::npos) << bad.err;
}

// `experiment continue`: a completed single-trial experiment trains further under its own id,
// its trial resuming from its latest checkpoint with the changed config (Determined's own test
// changes the length and an environment variable the same way); what cannot change is refused.
TEST_F(ModelsTest, AnEndedExperimentContinuesFromItsLatestCheckpoint) {
  StartMaster();
  StartAgent("a1");
  Script("steps.sh", absl::StrCat("exec ", BinaryPath("checkpoint_trial"),
                                  " --steps \"${STEPS:-2}\" --bytes 4096\n"));
  const int64_t id = Create("steps", "./steps.sh",
                            "max_restarts: 0\ncheckpoint_storage: {save_trial_latest: 1}\n");
  const std::string ids = std::to_string(id);
  WaitUntil([&] { return State(id) == "COMPLETED" || State(id) == "ERROR"; }, "the first run");
  ASSERT_EQ(State(id), "COMPLETED");
  const std::string trial = std::to_string(Trial(id)["id"].get<int64_t>());
  const std::string latest = Trial(id)["latest_checkpoint"];

  LaunchResult help = Cohort({"experiment", "continue", "--help"});
  EXPECT_NE(help.out.find("cohort experiment continue 7 --config"), std::string::npos) << help.out;
  LaunchResult fixed = Cohort({"experiment", "continue", ids, "--config", "searcher.name=grid"});
  EXPECT_NE(fixed.status, 0);
  EXPECT_NE(fixed.err.find("searcher.name: cannot change when experiment"), std::string::npos)
      << fixed.err;
  LaunchResult no_equals = Cohort({"experiment", "continue", ids, "--config", "max_restarts"});
  EXPECT_EQ(no_equals.status, 2) << no_equals.err;
  CreateUser("bob");
  LaunchResult denied = CohortAsUser("bob", {"experiment", "continue", ids});
  EXPECT_NE(denied.err.find("belongs to 'admin'"), std::string::npos) << denied.err;
  EXPECT_EQ(State(id), "COMPLETED") << "a refused continue changes nothing";

  LaunchResult continued =
      Cohort({"experiment", "continue", ids, "--config", "searcher.max_length.batches=4",
              "--config", "environment.environment_variables=[STEPS=4]", "--follow"});
  EXPECT_EQ(continued.status, 0) << continued.out << continued.err;
  EXPECT_NE(continued.out.find(absl::StrCat("experiment ", id, " continues")), std::string::npos)
      << continued.out;
  EXPECT_EQ(State(id), "COMPLETED");
  const json t = Trial(id);
  EXPECT_EQ(std::to_string(t["id"].get<int64_t>()), trial) << "the same trial trained on";
  EXPECT_EQ(t["total_batches"], 4);
  const std::string logs = Logs(t["id"]);
  EXPECT_NE(logs.find(absl::StrCat("continued by 'admin': resumes from checkpoint ", latest)),
            std::string::npos)
      << logs;
  EXPECT_NE(logs.find(absl::StrCat("resumed from ", latest, " at step 2")), std::string::npos)
      << logs;
  EXPECT_NE(logs.find("at step 4"), std::string::npos) << logs;
  EXPECT_EQ(logs.find("at step 1\n", logs.find("resumed from")), std::string::npos)
      << "it did not start over";
  // Ended again, it may continue again: already at step 4, its trial resumes and ends at once.
  const json again = Json({"experiment", "continue", ids, "--config", "max_restarts=1"});
  EXPECT_EQ(again["id"], id);
  WaitUntil([&] { return State(id) == "COMPLETED" || State(id) == "ERROR"; }, "the third run");
  EXPECT_EQ(State(id), "COMPLETED");
  EXPECT_EQ(Json({"experiment", "describe", ids})["max_restarts"], 1);
}

// Determined 0.38's adaptive search as its tutorials write it (max_time + time_metric, no
// max_length), from examples/ unchanged, validated by the CLI and run on a cluster: 8 trials in
// two brackets, those behind at their first rung stopped there, the others trained to 80.
TEST_F(ModelsTest, Determined038AdaptiveSearchExampleValidatesAndRuns) {
  StartMaster();
  StartAgent("a1");
  StartAgent("a2");
  const std::string example =
      absl::StrCat(COHORT_SOURCE_DIR, "/examples/core_api/3_hpsearch_adaptive.yaml");
  LaunchResult valid = Cohort({"experiment", "validate", example});
  ASSERT_EQ(valid.status, 0) << valid.out << valid.err;
  EXPECT_EQ(valid.err.find("warning"), std::string::npos) << valid.err;
  fs::copy_file(BinaryPath("core_api_3_hpsearch"), dir_ / "context" / "core_api_3_hpsearch");
  LaunchResult created =
      Cohort({"experiment", "create", example, (dir_ / "context").string(), "--follow"});
  EXPECT_EQ(created.status, 0) << created.out << created.err;
  const int64_t id = std::stoll(created.out.substr(created.out.find("created experiment ") + 19));
  EXPECT_EQ(State(id), "COMPLETED");
  const json trials = Json({"experiment", "trials", std::to_string(id)});
  ASSERT_EQ(trials["trials"].size(), 8u) << trials.dump();
  // One bracket (standard mode, 2 rungs), rungs at 40 and 80 batches: a trial's last validation
  // is at the rung where it stopped (a stop lands a few batches after the rung) or at 80.
  int full = 0, stopped_early = 0;
  std::set<int64_t> increments;
  for (const json& t : trials["trials"]) {
    const int64_t at = t["latest_validation"]["batches"];
    EXPECT_TRUE(at == 40 || at == 80) << t.dump();
    full += at == 80;
    stopped_early += at == 40;
    increments.insert(t["hparams"]["increment_by"].get<int64_t>());
  }
  EXPECT_GE(increments.size(), 4u) << "8 random draws of 1..20: " << trials.dump();
  EXPECT_GE(full, 1) << "the best trains to max_time: " << trials.dump();
  EXPECT_GE(stopped_early, 1) << "ASHA stops some at a rung: " << trials.dump();
}

}  // namespace
}  // namespace cohort::testing
