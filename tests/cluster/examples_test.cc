// Issue 43: the examples a newcomer copies run as written on a real cluster. Every "cohort ..."
// line of the README and of every `cohort` help (cli/testing/help_examples.h finds them) runs,
// in the order the README tells its story, against a real cohort-master and two 1-slot
// cohort-agents (what `cohort cluster up --agents 2 --slots 1` starts), from a directory holding
// the repository's examples/ and build/ as a fresh clone after scripts/main.sh does.
//
// What the test changes, and only that:
// - Long training is cut short: a create of a config under examples/ (2,000 batches) trains 40
//   (`--config searcher.max_length.batches=40`; its profile still covers batches 20-30), and
//   `searcher.max_length.batches=4000` asks for 60.
// - Placeholders: a checkpoint UUID ("UUID", "3f6c9d0e-...", "5f0c...e1") is experiment 1's.
// - Files the examples name as the user's own (exp.yaml, team.yaml, changed.yaml, DIR, ...) are
//   made first: a one-trial experiment of the Core API's checkpoint stage, hyperparameter lr.
// - Not run here: --local runs and `trial profile --run-dir` (create_local_test runs them),
//   `cluster up/down` (cluster_test), and lines with <placeholders>.
// Experiments 2-9 come from the help's own `cohort experiment create exp.yaml DIR`, so that the
// ids the helps name (trial 3, experiment 7, ...) exist; deletions run after the rest (which
// names what they delete), user commands last (a login changes who the rest would run as).
// Each runs once the experiments the one before it started have ended.
// Each example must exit 0, or fail as `kRefused` says it must for the state it finds (killing
// an ended trial, ...), with exit 1 and those words: never a usage error (2), an unknown id or a
// missing file.

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "cli/testing/help_examples.h"
#include "gtest/gtest.h"
#include "tests/testing/cluster_fixture.h"
#include "tests/testing/worker_group.h"

namespace cohort::testing {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using cli::testing::ExampleCommands;
using cli::testing::HelpedCommands;

// Examples that must fail in the state the story leaves, and the words that say why.
const std::map<std::string, std::string>& Refused() {
  static const auto* refused = new std::map<std::string, std::string>{
      // The README's "pause 1, then activate 1 or kill 1" meets experiment 1 completed.
      {"cohort experiment pause 1", "cannot move from COMPLETED to PAUSED"},
      // The examples registered experiment 1's checkpoint as versions of two models: the
      // registry keeps it, and says which versions to delete first.
      {"cohort experiment delete 1 --yes", "the model registry holds its checkpoints"},
      {"cohort checkpoint delete 5f0c...e1 --yes", "(the model registry)"},
  };
  return *refused;
}

// Whether the test runs `command` (see the file's comment).
bool Runs(const std::string& command) {
  return command.find('<') == std::string::npos && command.find("--local") == std::string::npos &&
         command.find("--run-dir") == std::string::npos && command.rfind("cohort cluster ", 0) != 0;
}

class ExamplesTest : public ClusterFixture {
 protected:
  ExamplesTest() : ClusterFixture("examples_test") {}

  struct Ran {
    int status = -1;
    std::string said;
  };

  // Runs `command` (a line of shell, "cohort ..." first) in work_ as the admin, with `stdin_line`
  // (if any) on standard input; `login` leaves the admin's password out of the environment (the
  // command asks for its own). The master's and agents' output is read meanwhile.
  Ran RunExample(const std::string& command, const std::string& stdin_line = "",
                 bool login = false) {
    const fs::path out = dir_ / "example.out", rc = dir_ / "example.rc";
    fs::remove(rc);
    std::string line =
        absl::StrCat("cd '", work_.string(), "' && ", BinaryPath("cohort"), command.substr(6));
    absl::StrAppend(&line, stdin_line.empty() ? " </dev/null"
                                              : absl::StrCat(" <<EOF\n", stdin_line, "\nEOF\n"));
    std::ofstream(dir_ / "example.sh")
        << "(" << line << ") >'" << out.string() << "' 2>&1\necho $? >'" << rc.string() << "'\n";
    auto env = CohortEnv();
    env["COHORT_MASTER"] = url_;
    if (login) env["COHORT_PASSWORD"] = std::nullopt;
    LauncherProcess shell({"/bin/sh", (dir_ / "example.sh").string()}, env);
    WaitUntil([&] { return fs::exists(rc) && !ReadFile(rc).empty(); }, command, absl::Seconds(240));
    shell.Wait(absl::Seconds(5));
    return {ReadFile(rc).empty() ? -1 : std::stoi(ReadFile(rc)), ReadFile(out)};
  }

  // The user's own files the examples name, in work_.
  void MakeUsersFiles() {
    const std::string bin = fs::path(BinaryPath("cohort")).parent_path().string();
    fs::create_directories(work_);
    fs::create_directory_symlink(fs::path(COHORT_SOURCE_DIR) / "examples", work_ / "examples");
    fs::create_directory_symlink(fs::path(bin).parent_path(), work_ / "build");
    for (const char* context : {"DIR", "CONTEXT_DIR"}) {
      fs::create_directories(work_ / context);
      fs::copy_file(BinaryPath("core_api_2_checkpoints"),
                    work_ / context / "core_api_2_checkpoints");
    }
    const std::string config =
        "name: exp\nentrypoint: ./core_api_2_checkpoints\nmax_restarts: 0\n"
        "hyperparameters: {global_batch_size: 1, lr: 0.1}\n"
        "searcher: {name: single, metric: x, smaller_is_better: false, "
        "max_length: {batches: 5}}\n";
    std::ofstream(work_ / "exp.yaml") << config;
    std::ofstream(work_ / "changed.yaml") << absl::StrReplaceAll(config, {{"lr: 0.1", "lr: 0.2"}});
    for (const char* name : {"team.yaml", "team_defaults.yaml"}) {
      std::ofstream(work_ / name) << "description: the team's defaults\nmax_restarts: 1\n";
    }
  }

  // Every example once: the README's in its order, then each help's; then the deletions (the
  // others name what they delete) and the user commands (a login changes who the rest would
  // run as).
  std::vector<std::string> Examples() {
    std::vector<std::string> all =
        ExampleCommands(ReadFile(fs::path(COHORT_SOURCE_DIR) / "README.md"));
    for (const std::string& h :
         HelpedCommands([this](const std::string& command) { return Help(command); })) {
      for (const std::string& c : ExampleCommands(Help(h))) all.push_back(c);
    }
    std::vector<std::string> ordered, users, deletions;
    std::set<std::string> seen;
    for (const std::string& c : all) {
      if (!Runs(c) || !seen.insert(c).second) continue;
      if (c.rfind("cohort user ", 0) == 0) {
        users.push_back(c);
      } else if (absl::StrContains(c, " delete ")) {
        deletions.push_back(c);
      } else {
        ordered.push_back(c);
      }
    }
    ordered.insert(ordered.end(), deletions.begin(), deletions.end());
    ordered.insert(ordered.end(), users.begin(), users.end());
    return ordered;
  }

  std::string Help(const std::string& command) {
    std::vector<std::string> args = absl::StrSplit(command, ' ', absl::SkipEmpty());
    args.push_back("--help");
    LaunchResult r = Cohort(args);
    EXPECT_EQ(r.status, 0) << command;
    return r.out;
  }

  // `command` as the test runs it (the file's comment): long training cut, placeholders filled.
  std::string Adapted(std::string command) const {
    if ((command.rfind("cohort experiment create ", 0) == 0 ||
         command.rfind("cohort e create ", 0) == 0) &&
        command.find(" examples/") != std::string::npos &&
        command.find(" --test") == std::string::npos) {
      absl::StrAppend(&command, " --config searcher.max_length.batches=40");
    }
    return absl::StrReplaceAll(
        command, {{"searcher.max_length.batches=4000", "searcher.max_length.batches=60"},
                  {"3f6c9d0e-...", checkpoint_},
                  {"5f0c...e1", checkpoint_},
                  {" UUID", " " + checkpoint_}});
  }

  // Waits until no experiment is queued, active or paused, so that each example finds the
  // state the one before it left (a fork or continue trains before the next example runs).
  void WaitForQuiet(const std::string& after) {
    WaitUntil(
        [&] {
          const json list = Json({"experiment", "list", "--all"});
          for (const json& e : list["experiments"]) {
            const std::string state = e["state"];
            if (state != "COMPLETED" && state != "CANCELED" && state != "ERROR") return false;
          }
          return true;
        },
        "the experiments to end after " + after, absl::Seconds(180));
  }

  // A `create --test` with a master ran one trial of 10 batches, validated once.
  void ExpectSmokeTest(const std::string& said) {
    const std::string created = "created experiment ";
    ASSERT_TRUE(absl::StrContains(said, " (smoke test)")) << said;
    const int64_t id = std::stoll(said.substr(said.find(created) + created.size()));
    const json e = Json({"experiment", "describe", std::to_string(id)});
    ASSERT_EQ(e["trials"].size(), 1u) << e.dump();
    EXPECT_EQ(e["trials"][0]["total_batches"], 10) << e.dump();
    EXPECT_EQ(e["trials"][0]["batches"], 10) << e.dump();
    EXPECT_EQ(e["state"], "COMPLETED") << e.dump();
  }

  fs::path work_;
  std::string checkpoint_;  // experiment 1's
};

TEST_F(ExamplesTest, EveryExampleRunsAsWrittenOnARealCluster) {
  StartMaster();
  StartAgent("a1");
  StartAgent("a2");
  work_ = dir_ / "work";
  MakeUsersFiles();
  const std::vector<std::string> examples = Examples();
  ASSERT_GT(examples.size(), 70u) << "the examples were found";
  // The README's first example makes experiment 1 and its checkpoint; the help's
  // `experiment create exp.yaml DIR` makes experiments 2-9.
  const std::string first = examples.front();
  ASSERT_TRUE(absl::StrContains(first, "experiment create --follow")) << first;
  Ran made = RunExample(Adapted(first));
  ASSERT_EQ(made.status, 0) << first << "\n" << made.said;
  const json checkpoints = Json({"checkpoint", "list", "1"});
  ASSERT_FALSE(checkpoints["checkpoints"].empty()) << checkpoints.dump();
  checkpoint_ = checkpoints["checkpoints"][0]["storage_id"];
  for (int id = 2; id <= 9; ++id) {
    Ran created = RunExample("cohort experiment create exp.yaml DIR");
    ASSERT_EQ(created.status, 0) << created.said;
  }
  WaitForQuiet("experiments 2-9");
  for (int id = 2; id <= 9; ++id) EXPECT_EQ(State(id), "COMPLETED") << Logs(id);
  int ran = 1;
  for (size_t i = 1; i < examples.size(); ++i) {
    const std::string command = Adapted(examples[i]);
    const bool login = command == "cohort user login alice";
    const bool asks = login || command == "cohort user create alice";
    Ran r = RunExample(command, asks ? "alice-password" : "", login);
    ++ran;
    WaitForQuiet(command);
    auto refused = Refused().find(examples[i]);
    if (refused == Refused().end()) {
      EXPECT_EQ(r.status, 0) << command << "\n" << r.said;
    } else {
      EXPECT_EQ(r.status, 1) << command << "\n" << r.said;
      EXPECT_TRUE(absl::StrContains(r.said, refused->second)) << command << "\n" << r.said;
    }
    if (absl::StrContains(command, " create --test ")) ExpectSmokeTest(r.said);
  }
  EXPECT_GT(ran, 70);
}

// The commands of the README's "Running a job by hand" block, continuation lines joined, that
// start with build/bin/ (the benchmarks' Python scripts need `scripts/install.sh --bench`:
// bench/ tests them).
std::vector<std::string> ByHandCommands(const std::string& readme) {
  const size_t section = readme.find("## Running a job by hand");
  const size_t begin = readme.find("```sh\n", section) + 6;
  const std::string block = readme.substr(begin, readme.find("```", begin) - begin);
  std::vector<std::string> commands;
  std::istringstream in(block);
  std::string joined;
  for (std::string line; std::getline(in, line);) {
    const bool continued = !line.empty() && line.back() == '\\';
    if (continued) line.pop_back();
    joined += line.substr(joined.empty() ? 0 : line.find_first_not_of(' '));
    if (continued) continue;
    if (const size_t comment = joined.find("  # "); comment != std::string::npos) {
      joined.resize(comment);
    }
    if (joined.rfind("build/bin/", 0) == 0) commands.push_back(joined);
    joined.clear();
  }
  return commands;
}

// The README's "Running a job by hand" (no master): a config checked, local experiments, workers
// started with cohort-launch, a preempted run resumed from its checkpoint, the inference program
// on it, the Core API's stage 4 and the throughput benchmark, each as written in a directory
// holding examples/ and build/, but training cut short: the local Fashion-MNIST experiment
// trains 40 batches (--config searcher.max_length.batches=40), the launched trial 20
// (--max-batches 20) and its resumption 10 more; `<storage-id ...>` is the run's checkpoint.
TEST_F(ExamplesTest, EveryRunByHandExampleRunsAsWritten) {
  work_ = dir_ / "work";
  MakeUsersFiles();
  const std::vector<std::string> commands =
      ByHandCommands(ReadFile(fs::path(COHORT_SOURCE_DIR) / "README.md"));
  ASSERT_GE(commands.size(), 9u);
  int ran = 0;
  for (std::string command : commands) {
    if (absl::StrContains(command, "--local examples/fashion_mnist/distributed.yaml")) {
      absl::StrAppend(&command, " --config searcher.max_length.batches=40");
    }
    if (absl::StrContains(command, "fashion_mnist_trial") &&
        absl::StrContains(command, "--run-dir cohort-run")) {
      absl::StrAppend(&command, " --max-batches 20");
    }
    if (absl::StrContains(command, "<storage-id")) {
      std::string id;  // the last checkpoint metrics.jsonl records, as the README says
      std::istringstream lines(ReadFile(work_ / "cohort-run" / "metrics.jsonl"));
      for (std::string line; std::getline(lines, line);) {
        const json record = json::parse(line, nullptr, false);
        if (record.is_object() && record.value("kind", "") == "checkpoint") {
          id = record.value("storage_id", "");
        }
      }
      ASSERT_FALSE(id.empty()) << "the launched run left a checkpoint";
      const size_t open = command.find('<');
      command.replace(open, command.find('>', open) + 1 - open, id);
      if (absl::StrContains(command, "--restore")) absl::StrAppend(&command, " --max-batches 30");
    }
    const std::string shell =
        absl::StrCat("cd '", work_.string(), "' && ", command, " </dev/null >'",
                     (dir_ / "by_hand.out").string(), "' 2>&1");
    LaunchResult r = RunToCompletion({"/bin/sh", "-c", shell}, {}, absl::Seconds(300));
    ++ran;
    EXPECT_EQ(r.status, 0) << command << "\n" << ReadFile(dir_ / "by_hand.out");
  }
  EXPECT_GE(ran, 9);
  EXPECT_TRUE(fs::exists(work_ / "cohort-run" / "metrics.jsonl"));
  EXPECT_NE(ReadFile(work_ / "predictions.csv").find('\n'), std::string::npos)
      << "the inference program wrote its predictions";
  // A directory that is not a checkpoint is named, not a LibTorch abort and its backtrace.
  LaunchResult wrong = RunToCompletion(
      {BinaryPath("cohort-launch"), "--slots", "1", "--", BinaryPath("fashion_mnist_inference"),
       "--checkpoint", (work_ / "cohort-run" / "checkpoints" / "tensorboard").string()},
      {}, absl::Seconds(120));
  EXPECT_NE(wrong.status, 0);
  EXPECT_TRUE(absl::StrContains(wrong.out + wrong.err, "no model.pt in it")) << wrong.err;
  EXPECT_FALSE(absl::StrContains(wrong.out + wrong.err, "SIGABRT")) << wrong.err;
}

}  // namespace
}  // namespace cohort::testing
