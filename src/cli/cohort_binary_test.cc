// Runs the real `cohort` binary (from COHORT_BIN_DIR) and checks exit statuses and output.

#include <sys/wait.h>

#include <array>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include "cli/testing/help_examples.h"
#include "common/testing/temp_dir.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace {

using ::cohort::cli::testing::ExampleCommands;
using ::cohort::cli::testing::HelpedCommands;
using ::cohort::testing_support::TempDir;
using ::testing::HasSubstr;

struct Result {
  int exit_code = -1;
  std::string out;
  std::string err;
};

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

class CohortBinaryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* bin_dir = std::getenv("COHORT_BIN_DIR");
    ASSERT_NE(bin_dir, nullptr) << "COHORT_BIN_DIR is set by ctest (cohort_cc_test)";
    bin_ = std::string(bin_dir) + "/cohort";
  }

  std::string Write(const std::string& name, const std::string& text) {
    std::string path = dir_ + "/" + name;
    std::ofstream(path) << text;
    return path;
  }

  Result Run(const std::string& args) {
    const std::string out = dir_ + "/stdout", err = dir_ + "/stderr";
    int status = std::system((bin_ + " " + args + " >" + out + " 2>" + err).c_str());
    Result r;
    r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    r.out = ReadFile(out);
    r.err = ReadFile(err);
    return r;
  }

  // `cohort COMMAND --help`'s output, for HelpedCommands.
  std::function<std::string(const std::string&)> HelpOf() {
    return [this](const std::string& command) { return Run(command + " --help").out; };
  }

  std::string bin_;
  TempDir temp_{"cohort_bin"};
  const std::string dir_ = temp_.path();
};

TEST_F(CohortBinaryTest, ValidConfigExitsZeroAndPrintsTheEffectiveConfig) {
  std::string path = Write("ok.yaml",
                           "name: t\nentrypoint: ./trial\n"
                           "searcher: {name: single, metric: validation_loss}\n"
                           "hyperparameters: {global_batch_size: 32}\n"
                           "reproducibility: {experiment_seed: 11}\n");
  Result r = Run("experiment validate " + path);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  EXPECT_THAT(r.out, HasSubstr("slots_per_trial: 1\n"));
  EXPECT_THAT(r.out, HasSubstr("experiment_seed: 11\n"));
  EXPECT_THAT(r.out, HasSubstr("mixed_precision: O0\n"));
}

TEST_F(CohortBinaryTest, InvalidConfigExitsOneWithEveryErrorOnStderr) {
  std::string path = Write("bad.yaml",
                           "entrypoint: ./trial\n"
                           "searcher: {name: single, metric: validation_loss}\n"
                           "hyperparameters: {global_batch_size: 32}\n"
                           "resources: {slots_per_trial: -2}\n"
                           "optimizations: {mixed_precison: O1}\n");
  Result r = Run("experiment validate " + path);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err, path + ": resources.slots_per_trial: must be >= 0, got -2\n" + path +
                       ": optimizations.mixed_precison: unknown field; did you mean "
                       "mixed_precision?\n");
}

TEST_F(CohortBinaryTest, ACyclicAliasIsAnInvalidConfigNotACrash) {
  std::string path = Write("cyclic.yaml", "a: &x [1, *x]");
  Result r = Run("experiment validate " + path);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out, "");
  EXPECT_THAT(r.err, HasSubstr(path + ": line 1, column 4: an alias is used inside the node it "
                                      "names (a cyclic alias)"));
}

TEST_F(CohortBinaryTest, DeeplyNestedOrOversizedYamlIsAnInvalidConfigNamingTheLimit) {
  Result deep = Run("experiment validate " + Write("deep.yaml", std::string(100000, '[')));
  EXPECT_EQ(deep.exit_code, 1);
  EXPECT_THAT(deep.err, HasSubstr("the YAML nests deeper than 128 levels"));
  std::string big = Write("big.yaml", "a: " + std::string(2 << 20, 'x') + "\n");
  Result large = Run("experiment validate " + big);
  EXPECT_EQ(large.exit_code, 1);
  EXPECT_THAT(large.err, HasSubstr(big + ": the file is longer than the limit of 1048576 bytes"));
}

TEST_F(CohortBinaryTest, AConfigThatIsADirectoryOrMissingIsNamedBeforeAnythingElse) {
  // A directory used to read as an empty file: "the config is empty".
  Result dir = Run("experiment validate " + dir_);
  EXPECT_EQ(dir.exit_code, 1);
  EXPECT_THAT(dir.err, HasSubstr(dir_ + ": is a directory; expected a YAML file"));
  // create reads the config before it packs the context or calls a master (none here).
  Result create = Run("experiment create " + dir_ + " " + dir_);
  EXPECT_EQ(create.exit_code, 1);
  EXPECT_THAT(create.err, HasSubstr("the config: " + dir_ + ": is a directory"));
  Result missing = Run("experiment create " + dir_ + "/none.yaml " + dir_);
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_THAT(missing.err, HasSubstr(dir_ + "/none.yaml does not exist"));
}

TEST_F(CohortBinaryTest, EveryProgramsBadArgumentExitsTwoNamingTheProgramAndTheRule) {
  // The master and the agent exited 105-109 (CLI11's own codes) with bare messages, and the
  // agent's --slots -1 named a range up to 1.79e308.
  const std::string bin_dir = std::getenv("COHORT_BIN_DIR");
  const std::string out = dir_ + "/out";
  for (const auto& [program, args, says] : std::vector<std::array<std::string, 3>>{
           {"cohort-master", "--port 99999", "--port: Value 99999 not in range 0 to 65535"},
           {"cohort-master", "--agent-timeout 0", "--agent-timeout: must be a positive number"},
           {"cohort-agent", "--slots -1", "--slots: must be a positive number, got -1"},
           {"cohort-agent", "--bogus", "The following argument was not expected: --bogus"},
           {"cohort-launch", "--slots 0 -- true", "--slots must be at least 1, got 0"}}) {
    const int status =
        std::system((bin_dir + "/" + program + " " + args + " >" + out + " 2>&1").c_str());
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 2) << program << " " << args;
    const std::string text = ReadFile(out);
    EXPECT_THAT(text, HasSubstr(program + ": error: " + says)) << program << " " << args;
    EXPECT_THAT(text, HasSubstr("Run '" + program + " --help' for usage.")) << text;
  }
}

TEST_F(CohortBinaryTest, AMasterUrlWithoutItsSchemeIsNamedWhenNothingAnswers) {
  // Port 1 on this machine: refused at once, no DNS involved.
  Result bare = Run("experiment list --master 127.0.0.1:1");
  EXPECT_EQ(bare.exit_code, 1);
  EXPECT_THAT(bare.err, HasSubstr("cannot reach the master at 127.0.0.1:1"));
  EXPECT_THAT(bare.err, HasSubstr("a master URL starts with http:// or https://"));
  Result full = Run("experiment list --master http://127.0.0.1:1");
  EXPECT_EQ(full.exit_code, 1);
  EXPECT_THAT(full.err, HasSubstr("is cohort-master running?"));
}

TEST_F(CohortBinaryTest, UsageErrorsExitTwoAndHelpIsUseful) {
  EXPECT_EQ(Run("experiment validate").exit_code, 2);
  EXPECT_EQ(Run("experiment frobnicate x").exit_code, 2);
  EXPECT_EQ(Run("").exit_code, 2);
  Result help = Run("--help");
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_THAT(help.out, HasSubstr("experiment"));
  Result validate_help = Run("experiment validate --help");
  EXPECT_EQ(validate_help.exit_code, 0);
  EXPECT_THAT(validate_help.out, HasSubstr("--template"));
  EXPECT_THAT(validate_help.out, HasSubstr("effective config"));
}

int UsageLines(const std::string& help) {
  int n = 0;
  std::istringstream in(help);
  for (std::string line; std::getline(in, line);) n += line.rfind("Usage:", 0) == 0;
  return n;
}

// Issue 43: every program's help, and every command's and verb's of `cohort`, has one Usage
// line; the examples in them name files that exist, and none sends build/bin (past the master's
// 96 MB context limit) to a cluster.
TEST_F(CohortBinaryTest, EveryHelpHasOneUsageAndItsExamplesNameRealFiles) {
  const std::string bin_dir = std::getenv("COHORT_BIN_DIR");
  for (const char* program : {"cohort-master", "cohort-agent", "cohort-launch"}) {
    const std::string out = dir_ + "/help";
    ASSERT_EQ(std::system((bin_dir + "/" + program + " --help >" + out + " 2>&1").c_str()), 0);
    EXPECT_EQ(UsageLines(ReadFile(out)), 1) << program << ":\n" << ReadFile(out);
  }
  const std::vector<std::string> commands = HelpedCommands(HelpOf());
  EXPECT_GT(commands.size(), 60u) << "every group and verb is walked";
  for (const std::string& command : commands) {
    Result help = Run(command + " --help");
    ASSERT_EQ(help.exit_code, 0) << command;
    EXPECT_EQ(UsageLines(help.out), 1) << "cohort " << command << " --help:\n" << help.out;
    std::istringstream in(help.out);
    for (std::string line; std::getline(in, line);) {
      if (line.find("cohort ") == std::string::npos) continue;
      std::istringstream words(line);
      for (std::string word; words >> word;) {
        if (word.rfind("examples/", 0) == 0 && word.size() > 5 &&
            word.substr(word.size() - 5) == ".yaml") {
          EXPECT_TRUE(std::filesystem::exists(std::string(COHORT_SOURCE_DIR) + "/" + word))
              << "cohort " << command << " --help names " << word;
        }
      }
      if (line.find("experiment create") != std::string::npos &&
          line.find("--local") == std::string::npos) {
        EXPECT_EQ(line.find(" build/bin"), std::string::npos)
            << "cohort " << command << " --help sends build/bin to a master: " << line;
      }
    }
  }
}

// Issue 43: every example in every help and in the README runs as written, up to the master: in
// a directory with the repository's examples/ and build/ and the files the examples name, with
// no master listening, each either succeeds (it needs none) or fails only for want of the master
// (exit 1, "cannot reach the master"), never with a usage error or a missing file. Skipped: what
// starts processes or asks for a password (cluster up/down, user login/create), --local runs
// (their files are checked above), and lines with placeholders in angle brackets.
TEST_F(CohortBinaryTest, EveryExampleRunsAsWrittenUpToTheMaster) {
  const std::string bin_dir = std::getenv("COHORT_BIN_DIR");
  namespace fs = std::filesystem;
  fs::create_directory_symlink(std::string(COHORT_SOURCE_DIR) + "/examples", dir_ + "/examples");
  fs::create_directory_symlink(fs::path(bin_dir).parent_path(), dir_ + "/build");
  for (const char* placeholder : {"DIR", "CONTEXT_DIR"})
    fs::create_directories(dir_ + "/" + placeholder);
  std::vector<std::string> commands =
      ExampleCommands(ReadFile(std::string(COHORT_SOURCE_DIR) + "/README.md"));
  for (const std::string& help : HelpedCommands(HelpOf())) {
    for (const std::string& c : ExampleCommands(Run(help + " --help").out)) commands.push_back(c);
  }
  int ran = 0;
  for (const std::string& command : commands) {
    if (command.find('<') != std::string::npos || command.find("--local") != std::string::npos ||
        command.find("cohort cluster ") == 0 || command.find("cohort user login") == 0 ||
        command.find("cohort user create") == 0 || command.find("cohort-") != std::string::npos) {
      continue;
    }
    std::istringstream words(command);
    for (std::string word; words >> word;) {  // a config the example names by itself
      if (word.find('/') == std::string::npos && word.size() > 5 &&
          word.substr(word.size() - 5) == ".yaml") {
        std::ofstream(dir_ + "/" + word)
            << "name: x\nentrypoint: ./trial\nhyperparameters: {global_batch_size: 1}\n"
               "searcher: {name: single, metric: loss, max_length: {batches: 1}}\n";
      }
    }
    const std::string out = dir_ + "/example.out";
    const int status = std::system(("cd '" + dir_ + "' && HOME='" + dir_ + "' XDG_CONFIG_HOME='" +
                                    dir_ + "/config' COHORT_MASTER=" + "http://127.0.0.1:1 " +
                                    bin_dir + "/" + command + " </dev/null >" + out + " 2>&1")
                                       .c_str());
    const int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    const std::string said = ReadFile(out);
    ++ran;
    if (code == 0) continue;
    EXPECT_EQ(code, 1) << command << "\n" << said;
    EXPECT_THAT(said, HasSubstr("cannot reach the master")) << command;
  }
  EXPECT_GT(ran, 80) << "the examples were found";
}

// Issue 34: a checkpoint id becomes part of a local file name (and a path on the master): one
// with a separator or '..' is a usage error, and nothing is written beside the directory.
TEST_F(CohortBinaryTest, ACheckpointIdThatIsAPathIsRefusedBeforeAnythingIsWritten) {
  Result r = Run("checkpoint download ../../etc " + dir_ + "/out --master http://127.0.0.1:1");
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_THAT(r.err, HasSubstr("a checkpoint id must be 1 to 128 characters"));
  EXPECT_FALSE(std::filesystem::exists(dir_ + "/out"));
}

// GPU slots for a local cluster: the agent's own (nvidia-smi), so neither CPU slots nor several
// agents (each would offer every GPU) go with --gpus; both refused before anything starts.
TEST_F(CohortBinaryTest, ClusterUpWithGpusRefusesSlotsAndSeveralAgents) {
  Result with_slots = Run("cluster up --gpus --slots 2");
  EXPECT_EQ(with_slots.exit_code, 2);
  EXPECT_THAT(with_slots.err, HasSubstr("--slots excludes --gpus"));
  Result two_agents = Run("cluster up --gpus --agents 2");
  EXPECT_EQ(two_agents.exit_code, 1);
  EXPECT_THAT(two_agents.err, HasSubstr("--gpus gives an agent every GPU of this machine"));
  EXPECT_THAT(Run("cluster up --help").out, HasSubstr("nvidia-smi"));
}

}  // namespace
