// SlurmClient against stand-in tools (shell scripts in a temporary bin_dir: what Submit passes,
// deadlines, output bounds, Slurm's error messages), then against a real two-node cluster.

#include "slurm/slurm_client.h"

#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/testing/status_matchers.h"
#include "common/testing/temp_dir.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "slurm/testing/slurm_cluster.h"

namespace cohort::slurm {
namespace {

using ::cohort::testing_support::IsOkAndHolds;
using ::cohort::testing_support::StatusIs;
using ::cohort::testing_support::TempDir;
using ::testing::AllOf;
using ::testing::AnyOf;
using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;
using ::testing::SizeIs;
using namespace std::string_literals;

void WriteFile(const std::string& path, const std::string& text, mode_t mode = 0644) {
  std::ofstream(path, std::ios::trunc) << text;
  ASSERT_EQ(::chmod(path.c_str(), mode), 0) << path;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

bool Exists(const std::string& path) { return ::access(path.c_str(), F_OK) == 0; }

// A squeue line in SlurmClient's format.
std::string SqueueLine(const std::string& id, const std::string& state, const std::string& name) {
  const std::string s(1, kFieldSeparator);
  return id + s + state + s + "None" + s + "0" + s + "UNLIMITED" + s + "n1" + s + name;
}

// ---------------------------------------------------------------------------------------------
// Stand-in tools.

class FakeToolsTest : public ::testing::Test {
 protected:
  // Writes bin/TOOL as a shell script with `body`.
  void Tool(const std::string& tool, const std::string& body) {
    ::mkdir(dir_.Join("bin").c_str(), 0755);
    WriteFile(dir_.Join("bin/" + tool), "#!/bin/sh\n" + body + "\n", 0755);
  }
  // Prints `text` (given here with printf's escapes) and exits with `status`.
  void Prints(const std::string& tool, const std::string& text, int status = 0) {
    WriteFile(dir_.Join(tool + ".out"), text);
    Tool(tool, absl::StrCat("cat '", dir_.Join(tool + ".out"), "'; exit ", status));
  }
  SlurmClient Client(absl::Duration timeout = absl::Seconds(5)) {
    SlurmOptions options;
    options.bin_dir = dir_.Join("bin");
    options.timeout = timeout;
    options.env = {{"SLURM_CONF", dir_.Join("slurm.conf")}};
    WriteFile(dir_.Join("slurm.conf"), "");
    return SlurmClient(options);
  }
  JobSpec Spec() {
    JobSpec spec;
    spec.name = "cohort-e1-t2";
    spec.script = "#!/bin/sh\necho hi\n";
    return spec;
  }

  TempDir dir_{"slurm_fake"};
};

TEST_F(FakeToolsTest, CheckNamesMissingToolsAndConfiguration) {
  SlurmOptions missing;
  missing.bin_dir = dir_.Join("nowhere");
  EXPECT_THAT(SlurmClient(missing).Check(),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       AllOf(HasSubstr(dir_.Join("nowhere/sinfo")), HasSubstr("slurm-wlm"))));
  Prints("sinfo", "slurm-wlm 22.05.8\n");
  SlurmOptions no_conf;
  no_conf.bin_dir = dir_.Join("bin");
  no_conf.env = {{"SLURM_CONF", dir_.Join("missing.conf")}};
  EXPECT_THAT(SlurmClient(no_conf).Check(),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       AllOf(HasSubstr("SLURM_CONF"), HasSubstr(dir_.Join("missing.conf")))));
  EXPECT_OK(Client().Check());
  Prints("sinfo", "sinfo: fatal: Could not establish a configuration source\n", 1);
  EXPECT_THAT(Client().Check(),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       AllOf(HasSubstr("sinfo --version"),
                             HasSubstr("Could not establish a configuration source"))));
}

TEST_F(FakeToolsTest, SubmitPassesTheSpecAndOnlyTheJobsOwnEnvironment) {
  const std::string record = dir_.Join("record");
  ::mkdir(record.c_str(), 0755);
  // Records its arguments, its environment and the files it is given; answers with a warning
  // line before the id, as sbatch may.
  Tool(
      "sbatch",
      absl::StrCat(
          "for a in \"$@\"; do echo \"$a\"; done > ", record, "/args\n", "env > ", record, "/env\n",
          "for a in \"$@\"; do case \"$a\" in --export-file=*) cp \"${a#--export-file=}\" ", record,
          "/job.env; echo \"${a#--export-file=}\" > ", record, "/env_path;; esac; done\n",
          "eval last=\\${$#}; cp \"$last\" ", record, "/job.sh; echo \"$last\" > ", record,
          "/script_path\n", "echo 'sbatch: warning: a warning'; echo 4242"));
  ::setenv("COHORT_TEST_SECRET", "do-not-leak", 1);
  ::setenv("SQUEUE_STATES", "RUNNING", 1);
  JobSpec spec = Spec();
  spec.nodes = 2;
  spec.tasks_per_node = 3;
  spec.cpus_per_task = 4;
  spec.partition = "gpu";
  spec.gres = "gpu:2";
  spec.work_dir = "/tmp";
  spec.output = "/tmp/out-%j.txt";
  spec.sbatch_args = {"--time=5", "-q", "high"};
  spec.env = {{"COHORT_MASTER", "http://m:8080"}, {"ODD", "a,b c\nd=e"}};
  EXPECT_THAT(Client().Submit(spec), IsOkAndHolds(4242));
  ::unsetenv("COHORT_TEST_SECRET");
  ::unsetenv("SQUEUE_STATES");

  const std::vector<std::string> args = absl::StrSplit(ReadFile(record + "/args"), '\n');
  EXPECT_THAT(args, AllOf(Contains("--parsable"), Contains("--no-requeue"),
                          Contains("--job-name=cohort-e1-t2"), Contains("--nodes=2"),
                          Contains("--ntasks-per-node=3"), Contains("--cpus-per-task=4"),
                          Contains("--partition=gpu"), Contains("--gres=gpu:2"),
                          Contains("--chdir=/tmp"), Contains("--output=/tmp/out-%j.txt")));
  EXPECT_THAT(std::vector<std::string>(args.begin(), args.begin() + 3),
              ElementsAre("--time=5", "-q", "high"));  // the user's first: Cohort's win
  EXPECT_EQ(ReadFile(record + "/job.sh"), spec.script);
  const std::string job_env = ReadFile(record + "/job.env");
  EXPECT_THAT(job_env, HasSubstr("COHORT_MASTER=http://m:8080\0"s));
  EXPECT_THAT(job_env, HasSubstr("ODD=a,b c\nd=e\0"s));
  EXPECT_THAT(job_env, HasSubstr("PATH="));
  EXPECT_THAT(job_env, Not(HasSubstr("do-not-leak")));
  const std::string sbatch_env = ReadFile(record + "/env");
  EXPECT_THAT(sbatch_env, HasSubstr("SLURM_CONF=" + dir_.Join("slurm.conf")));
  EXPECT_THAT(sbatch_env, AllOf(Not(HasSubstr("do-not-leak")), Not(HasSubstr("SQUEUE_STATES")),
                                Not(HasSubstr("http://m:8080"))));
  // The private files are gone once Submit returns.
  EXPECT_FALSE(
      Exists(std::string(absl::StripTrailingAsciiWhitespace(ReadFile(record + "/script_path")))));
  EXPECT_FALSE(
      Exists(std::string(absl::StripTrailingAsciiWhitespace(ReadFile(record + "/env_path")))));
}

TEST_F(FakeToolsTest, SubmitRefusesABadSpecBeforeRunningSbatch) {
  Tool("sbatch", absl::StrCat("touch ", dir_.Join("ran"), "; echo 1"));
  std::vector<std::pair<std::string, JobSpec>> cases;
  auto with = [&](const std::string& what, auto change) {
    JobSpec spec = Spec();
    change(spec);
    cases.emplace_back(what, spec);
  };
  with("name", [](JobSpec& s) { s.name = ""; });
  with("name", [](JobSpec& s) { s.name = "a\nb"; });
  with("name", [](JobSpec& s) { s.name = std::string(201, 'a'); });
  with("partition", [](JobSpec& s) { s.partition = "a b"; });
  with("size", [](JobSpec& s) { s.nodes = 0; });
  with("size", [](JobSpec& s) { s.cpus_per_task = -1; });
  with("script", [](JobSpec& s) { s.script = "echo no interpreter line"; });
  with("#SBATCH", [](JobSpec& s) { s.script = "#!/bin/sh\n#SBATCH --array=1-9\necho\n"; });
  with("Slurm's own", [](JobSpec& s) { s.env = {{"SLURM_NTASKS", "9"}}; });
  with("SBATCH_", [](JobSpec& s) { s.env = {{"SBATCH_WAIT", "1"}}; });
  with("[A-Za-z_]", [](JobSpec& s) { s.env = {{"1X", "a"}}; });
  with("[A-Za-z_]", [](JobSpec& s) { s.env = {{"A=B", "a"}}; });
  with("NUL", [](JobSpec& s) { s.env = {{"A", std::string("x\0y", 3)}}; });
  with("control character", [](JobSpec& s) { s.output = "/tmp/a\nb"; });
  with("--array", [](JobSpec& s) { s.sbatch_args = {"--array=1-3"}; });
  for (const auto& [what, spec] : cases) {
    EXPECT_THAT(Client().Submit(spec),
                StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr(what)))
        << what;
  }
  EXPECT_FALSE(Exists(dir_.Join("ran")));
}

TEST_F(FakeToolsTest, SubmitQuotesSlurmsRefusalAndDistrustsAnAnswerWithoutAnId) {
  Prints("sbatch", "sbatch: error: Batch job submission failed: Invalid partition name specified\n",
         1);
  EXPECT_THAT(Client().Submit(Spec()),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("sbatch "), HasSubstr("Invalid partition name specified"))));
  Prints("sbatch", "Submitted batch job\n");
  EXPECT_THAT(Client().Submit(Spec()),
              StatusIs(absl::StatusCode::kUnknown, HasSubstr("may have been submitted")));
  Prints("sbatch",
         "sbatch: error: Batch job submission failed: Unable to contact slurm controller (connect "
         "failure)\n",
         1);
  EXPECT_THAT(Client().Submit(Spec()), StatusIs(absl::StatusCode::kUnavailable));
}

TEST_F(FakeToolsTest, AToolThatHangsIsKilledAtTheDeadlineAndNamed) {
  Tool("squeue", "sleep 60");
  const absl::Time start = absl::Now();
  EXPECT_THAT(Client(absl::Milliseconds(300)).Jobs({1}),
              StatusIs(absl::StatusCode::kDeadlineExceeded,
                       AllOf(HasSubstr("squeue -h -t all -j 1"), HasSubstr("killed"))));
  EXPECT_LT(absl::Now() - start, absl::Seconds(5));
  // A tool that closes its output but does not exit is given up at the deadline too.
  Tool("squeue", "exec >/dev/null 2>&1; sleep 60");
  EXPECT_THAT(Client(absl::Milliseconds(300)).Jobs({1}),
              StatusIs(absl::StatusCode::kDeadlineExceeded, HasSubstr("squeue")));
}

TEST_F(FakeToolsTest, OutputPastTheBoundIsAnError) {
  Tool("squeue", "head -c 20000000 /dev/zero | tr '\\0' x");
  SlurmOptions options;
  options.bin_dir = dir_.Join("bin");
  options.max_output_bytes = 1 << 20;
  EXPECT_THAT(SlurmClient(options).Jobs({1}),
              StatusIs(absl::StatusCode::kResourceExhausted,
                       AllOf(HasSubstr("squeue"), HasSubstr("1048576"))));
}

TEST_F(FakeToolsTest, JobsSkipsMalformedLinesButDoesNotTakeThemForAnAbsence) {
  const std::string good = SqueueLine("5", "RUNNING", "a");
  Prints("squeue", absl::StrCat("squeue: warning: odd\n", good, "\n12_3garbage\n",
                                SqueueLine("77", "RUNNING", "not asked"), "\n", good, "\n"));
  absl::StatusOr<std::vector<JobInfo>> jobs = Client().Jobs({5});
  ASSERT_OK(jobs);
  ASSERT_THAT(*jobs, SizeIs(1));  // once, and not job 77
  EXPECT_EQ((*jobs)[0].id, 5);
  EXPECT_EQ((*jobs)[0].state, JobState::kRunning);
  EXPECT_THAT(Client().Jobs({5, 6}), StatusIs(absl::StatusCode::kUnavailable,
                                              AllOf(HasSubstr("6"), HasSubstr("cannot read"))));
  Prints("squeue", good + "\n");
  EXPECT_THAT(Client().Jobs({5, 6}), IsOkAndHolds(SizeIs(1)));
  EXPECT_THAT(Client().Jobs({}), IsOkAndHolds(IsEmpty()));
  EXPECT_THAT(Client().Jobs({0}), StatusIs(absl::StatusCode::kInvalidArgument));
}

TEST_F(FakeToolsTest, JobsTellsAnUnknownJobFromAnUnreachableController) {
  Prints("squeue", "slurm_load_jobs error: Invalid job id specified\n", 1);
  EXPECT_THAT(Client().Jobs({5}), IsOkAndHolds(IsEmpty()));
  Prints("squeue", "slurm_load_jobs error: Unable to contact slurm controller (connect failure)\n",
         1);
  EXPECT_THAT(Client().Jobs({5}), StatusIs(absl::StatusCode::kUnavailable,
                                           AllOf(HasSubstr("squeue -h"), HasSubstr("exit status 1"),
                                                 HasSubstr("Unable to contact slurm controller"))));
  Tool("squeue", "kill -9 $$");
  EXPECT_THAT(Client().Jobs({5}), StatusIs(absl::StatusCode::kUnavailable, HasSubstr("137")));
}

TEST_F(FakeToolsTest, JobsNamedKeepsLiveJobsWithThePrefix) {
  Prints("squeue", absl::StrCat(SqueueLine("1", "RUNNING", "cohort-a-1"), "\n",
                                SqueueLine("2", "PENDING", "cohort-a-2"), "\n",
                                SqueueLine("3", "COMPLETED", "cohort-a-3"), "\n",
                                SqueueLine("4", "RUNNING", "other"), "\n",
                                SqueueLine("x", "RUNNING", "cohort-a-bad"), "\n"));
  absl::StatusOr<std::vector<JobInfo>> jobs = Client().JobsNamed("cohort-a-");
  ASSERT_OK(jobs);
  ASSERT_THAT(*jobs, SizeIs(2));
  EXPECT_EQ((*jobs)[0].id, 1);
  EXPECT_EQ((*jobs)[1].id, 2);
}

TEST_F(FakeToolsTest, CancelPassesTheSignalAndAcceptsAJobAlreadyGone) {
  Tool("scancel", absl::StrCat("echo \"$@\" > ", dir_.Join("args")));
  EXPECT_OK(Client().Cancel(5, SIGTERM));
  EXPECT_EQ(ReadFile(dir_.Join("args")), "--signal=15 --full 5\n");
  EXPECT_OK(Client().Cancel(6));
  EXPECT_EQ(ReadFile(dir_.Join("args")), "6\n");
  EXPECT_THAT(Client().Cancel(0), StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(Client().Cancel(5, 99), StatusIs(absl::StatusCode::kInvalidArgument));
  Prints("scancel", "scancel: error: Kill job error on job id 5: Invalid job id specified\n", 1);
  EXPECT_OK(Client().Cancel(5, SIGTERM));
  Prints("scancel", "scancel: error: Kill job error on job id 5: Access/permission denied\n", 1);
  EXPECT_THAT(Client().Cancel(5),
              StatusIs(absl::StatusCode::kUnavailable, HasSubstr("Access/permission denied")));
}

TEST_F(FakeToolsTest, NodesMergesPartitionsAndNamesAnEmptyPartition) {
  const std::string s(1, kFieldSeparator);
  Prints("sinfo", absl::StrCat("n1", s, "idle", s, "0/2/0/2", s, "debug*", s, "none\n", "garbage\n",
                               "n1", s, "idle", s, "0/2/0/2", s, "gpu", s, "none\n", "n2", s,
                               "drained", s, "0/0/2/2", s, "debug*", s, "disk full\n"));
  absl::StatusOr<std::vector<NodeInfo>> nodes = Client().Nodes("");
  ASSERT_OK(nodes);
  ASSERT_THAT(*nodes, SizeIs(2));
  EXPECT_THAT((*nodes)[0].partitions, ElementsAre("debug", "gpu"));
  EXPECT_FALSE((*nodes)[1].usable);
  EXPECT_EQ((*nodes)[1].reason, "disk full");
  Prints("sinfo", "");
  EXPECT_THAT(Client().Nodes("nope"), StatusIs(absl::StatusCode::kNotFound, HasSubstr("nope")));
  EXPECT_THAT(Client().Nodes("a b"), StatusIs(absl::StatusCode::kInvalidArgument));
}

// ---------------------------------------------------------------------------------------------
// A real cluster: two nodes, two CPUs each, shared by the suite (each test cancels its jobs).

class SlurmClusterTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto started = testing::SlurmCluster::Start(2);
    if (started.ok()) {
      cluster_ = started->release();
      start_error_ = new absl::Status();
    } else {
      start_error_ = new absl::Status(started.status());
    }
  }
  static void TearDownTestSuite() {
    delete cluster_;
    cluster_ = nullptr;
    delete start_error_;
    start_error_ = nullptr;
  }
  void SetUp() override {
    ASSERT_OK(*start_error_);  // Slurm missing: fail (scripts/install.sh --test), never skip
    client_ = std::make_unique<SlurmClient>(cluster_->options());
  }
  void TearDown() override {
    if (cluster_ != nullptr) {
      EXPECT_OK(cluster_->CancelAllJobs());
    }
  }

  JobSpec Spec(const std::string& name, const std::string& body) {
    JobSpec spec;
    spec.name = name;
    spec.script = "#!/bin/sh\n" + body + "\n";
    spec.output = dir_.Join(name + "-%j.out");
    return spec;
  }

  // Polls Jobs({id}) until `done` holds (at most `timeout`); the last answer either way.
  template <typename Done>
  JobInfo WaitFor(int64_t id, Done done, absl::Duration timeout = absl::Seconds(30)) {
    JobInfo last;
    for (const absl::Time deadline = absl::Now() + timeout; absl::Now() < deadline;) {
      absl::StatusOr<std::vector<JobInfo>> jobs = client_->Jobs({id});
      if (jobs.ok() && jobs->size() == 1) {
        last = (*jobs)[0];
        if (done(last)) return last;
      }
      absl::SleepFor(absl::Milliseconds(100));
    }
    ADD_FAILURE() << "job " << id << " still " << last.state_text << " (" << last.reason
                  << ") after " << timeout << "; " << cluster_->LogTails();
    return last;
  }
  JobInfo WaitFinished(int64_t id) {
    return WaitFor(id, [](const JobInfo& j) { return IsFinished(j.state); });
  }
  JobInfo WaitRunning(int64_t id) {
    return WaitFor(id, [](const JobInfo& j) { return j.state == JobState::kRunning; });
  }
  bool WaitForFile(const std::string& path, absl::Duration timeout = absl::Seconds(20)) {
    for (const absl::Time deadline = absl::Now() + timeout; absl::Now() < deadline;) {
      if (Exists(path)) return true;
      absl::SleepFor(absl::Milliseconds(50));
    }
    return false;
  }

  static testing::SlurmCluster* cluster_;
  static absl::Status* start_error_;
  std::unique_ptr<SlurmClient> client_;
  TempDir dir_{"slurm_jobs"};
};

testing::SlurmCluster* SlurmClusterTest::cluster_ = nullptr;
absl::Status* SlurmClusterTest::start_error_ = nullptr;

TEST_F(SlurmClusterTest, ChecksAndListsBothNodesIdleWithTheirCpus) {
  EXPECT_OK(client_->Check());
  absl::StatusOr<std::vector<NodeInfo>> nodes = client_->Nodes("debug");
  ASSERT_OK(nodes);
  ASSERT_THAT(*nodes, SizeIs(2));
  for (int k = 0; k < 2; ++k) {
    EXPECT_EQ((*nodes)[k].name, testing::SlurmCluster::NodeName(k + 1));
    EXPECT_EQ((*nodes)[k].state, "idle");
    EXPECT_TRUE((*nodes)[k].usable);
    EXPECT_EQ((*nodes)[k].cpus, 2);
    EXPECT_EQ((*nodes)[k].cpus_allocated, 0);
    EXPECT_THAT((*nodes)[k].partitions, ElementsAre("debug"));
  }
  EXPECT_THAT(client_->Nodes("nope"), StatusIs(absl::StatusCode::kNotFound));
}

TEST_F(SlurmClusterTest, ATwoNodeJobRunsOnBothNodesWithItsEnvironmentToCompleted) {
  ::setenv("COHORT_TEST_SECRET", "do-not-leak", 1);
  JobSpec spec =
      Spec("cohort-two-nodes", absl::StrCat("srun sh -c 'echo \"$SLURMD_NODENAME $COHORT_VALUE "
                                            "${COHORT_TEST_SECRET:-none}\" > ",
                                            dir_.path(), "/node.$SLURM_NODEID'"));
  spec.nodes = 2;
  spec.env = {{"COHORT_VALUE", "a,b c"}};
  absl::StatusOr<int64_t> id = client_->Submit(spec);
  ::unsetenv("COHORT_TEST_SECRET");
  ASSERT_OK(id);
  const JobInfo job = WaitFinished(*id);
  EXPECT_EQ(job.state, JobState::kCompleted) << job.reason;
  EXPECT_EQ(job.state_text, "COMPLETED");
  EXPECT_EQ(job.name, "cohort-two-nodes");
  EXPECT_THAT(job.nodes, ElementsAre("n1", "n2"));
  EXPECT_EQ(job.exit_code, 0);
  EXPECT_EQ(ReadFile(dir_.Join("node.0")), "n1 a,b c none\n");
  EXPECT_EQ(ReadFile(dir_.Join("node.1")), "n2 a,b c none\n");
}

TEST_F(SlurmClusterTest, PendingJobsSayWhy) {
  JobSpec all = Spec("cohort-hog", "sleep 120");
  all.nodes = 2;
  all.tasks_per_node = 2;  // every CPU of both nodes
  ASSERT_OK_AND_ASSIGN(int64_t hog, client_->Submit(all));
  WaitRunning(hog);
  ASSERT_OK_AND_ASSIGN(int64_t waiting, client_->Submit(Spec("cohort-waits", "true")));
  JobInfo job = WaitFor(waiting, [](const JobInfo& j) { return j.reason != "None"; });
  EXPECT_EQ(job.state, JobState::kPending);
  EXPECT_EQ(job.reason, "Resources");
  EXPECT_THAT(job.nodes, IsEmpty());

  // More nodes than the partition has: accepted (EnforcePartLimits=NO), pending for ever. While
  // the partition is busy the first reason Slurm gives is PartitionConfig; a later pass of the
  // scheduler says PartitionNodeLimit.
  JobSpec too_big = Spec("cohort-too-big", "true");
  too_big.nodes = 3;
  ASSERT_OK_AND_ASSIGN(int64_t never, client_->Submit(too_big));
  job = WaitFor(never, [](const JobInfo& j) { return j.reason != "None"; });
  EXPECT_EQ(job.state, JobState::kPending);
  EXPECT_THAT(job.reason, AnyOf("PartitionConfig", "PartitionNodeLimit"));
}

TEST_F(SlurmClusterTest, CancelEndsARunningJobAndItsProcesses) {
  ASSERT_OK_AND_ASSIGN(
      int64_t id,
      client_->Submit(Spec("cohort-cancel",
                           absl::StrCat("sleep 300 & echo $$ $! > ", dir_.path(), "/pids.tmp; mv ",
                                        dir_.path(), "/pids.tmp ", dir_.path(), "/pids; wait"))));
  ASSERT_TRUE(WaitForFile(dir_.Join("pids")));
  std::vector<std::string> pids =
      absl::StrSplit(absl::StripTrailingAsciiWhitespace(ReadFile(dir_.Join("pids"))), ' ');
  ASSERT_THAT(pids, SizeIs(2));
  EXPECT_OK(client_->Cancel(id));
  const JobInfo job = WaitFinished(id);
  EXPECT_EQ(job.state, JobState::kCancelled);
  for (const std::string& pid : pids) {
    bool gone = false;
    for (const absl::Time deadline = absl::Now() + absl::Seconds(10);
         !gone && absl::Now() < deadline; absl::SleepFor(absl::Milliseconds(50))) {
      gone = ::kill(std::stoi(pid), 0) != 0;
    }
    EXPECT_TRUE(gone) << "process " << pid << " of the cancelled job lives on";
  }
  EXPECT_OK(client_->Cancel(id));  // already over
}

TEST_F(SlurmClusterTest, CancelWithSigtermReachesTheBatchScript) {
  ASSERT_OK_AND_ASSIGN(
      int64_t id,
      client_->Submit(Spec("cohort-sigterm",
                           absl::StrCat("trap 'echo term > ", dir_.path(), "/term; exit 7' TERM\n",
                                        "touch ", dir_.path(), "/started\nsleep 300 & wait"))));
  ASSERT_TRUE(WaitForFile(dir_.Join("started")));
  EXPECT_OK(client_->Cancel(id, SIGTERM));
  const JobInfo job = WaitFinished(id);
  EXPECT_EQ(ReadFile(dir_.Join("term")), "term\n");
  EXPECT_EQ(job.state, JobState::kFailed);
  EXPECT_EQ(job.exit_code, 7);
}

TEST_F(SlurmClusterTest, SbatchArgsAreHonouredAndARefusedOneNamesItself) {
  JobSpec spec = Spec("cohort-time-limit", "sleep 120");
  spec.sbatch_args = {"--time=1"};
  ASSERT_OK_AND_ASSIGN(int64_t id, client_->Submit(spec));
  const JobInfo job = WaitRunning(id);
  EXPECT_EQ(job.time_limit, absl::Minutes(1));
  spec.sbatch_args = {"--wrap=true"};
  EXPECT_THAT(client_->Submit(spec),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("--wrap")));
  spec.sbatch_args = {};
  spec.partition = "nope";
  EXPECT_THAT(client_->Submit(spec),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("Invalid partition")));
}

TEST_F(SlurmClusterTest, JobsNamedFindsLiveJobsByPrefixAndJobsOmitsUnknownIds) {
  ASSERT_OK_AND_ASSIGN(int64_t a, client_->Submit(Spec("cohort-x-1", "sleep 120")));
  ASSERT_OK_AND_ASSIGN(int64_t b, client_->Submit(Spec("cohort-x-2", "sleep 120")));
  ASSERT_OK_AND_ASSIGN(int64_t other, client_->Submit(Spec("other-1", "sleep 120")));
  absl::StatusOr<std::vector<JobInfo>> named = client_->JobsNamed("cohort-x-");
  ASSERT_OK(named);
  std::vector<int64_t> ids;
  for (const JobInfo& job : *named) ids.push_back(job.id);
  EXPECT_THAT(ids, ::testing::UnorderedElementsAre(a, b));
  EXPECT_THAT(client_->Jobs({999999}), IsOkAndHolds(IsEmpty()));
  absl::StatusOr<std::vector<JobInfo>> jobs = client_->Jobs({other, 999999});
  ASSERT_OK(jobs);
  ASSERT_THAT(*jobs, SizeIs(1));
  EXPECT_EQ((*jobs)[0].id, other);
}

TEST_F(SlurmClusterTest, AKilledNodeIsSoonNotUsableItsJobEndsNodeFailAndItComesBack) {
  JobSpec spec = Spec("cohort-on-n2", absl::StrCat("touch ", dir_.path(), "/started; sleep 300"));
  spec.sbatch_args = {"-w", "n2"};
  ASSERT_OK_AND_ASSIGN(int64_t id, client_->Submit(spec));
  ASSERT_TRUE(WaitForFile(dir_.Join("started")));
  const absl::Time start = absl::Now();
  ASSERT_OK(cluster_->KillNode(2));
  NodeInfo n2;
  while (absl::Now() < start + absl::Seconds(30)) {
    absl::SleepFor(absl::Milliseconds(250));
    absl::StatusOr<std::vector<NodeInfo>> nodes = client_->Nodes("");
    if (nodes.ok() && nodes->size() == 2) n2 = (*nodes)[1];
    if (n2.name == "n2" && !n2.usable) break;
  }
  EXPECT_FALSE(n2.usable) << "n2 still " << n2.state;
  std::cerr << "n2 read '" << n2.state << "' " << absl::Now() - start << " after its death\n";
  // The job ends when Slurm marks the node down, some seconds later. (Had its job step outlived
  // the script, Slurm would have heard of the script's death first and said FAILED,
  // JobLaunchFailure: what Slurm 22.05 says of a batch script killed by SIGKILL.)
  const JobInfo job = WaitFor(
      id, [](const JobInfo& j) { return IsFinished(j.state); }, absl::Seconds(45));
  EXPECT_EQ(job.state, JobState::kNodeFail) << job.state_text << " (" << job.reason << ")";
  EXPECT_EQ(job.reason, "NodeDown");
  std::cerr << "its job read " << job.state_text << " (" << job.reason << ") "
            << absl::Now() - start << " after its death\n";
  ASSERT_OK(cluster_->RestartNode(2));
}

}  // namespace
}  // namespace cohort::slurm
