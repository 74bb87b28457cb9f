#pragma once
// ClusterFixture: the GoogleTest fixture the fault tests derive from (tests/cluster/faults_test,
// master_faults_test). It stages a real cluster in a temporary directory private to the test
// (dir_): a real cohort-master on dir_/master, real cohort-agents (1 slot each, work directory
// dir_/<id>), shell-script trials in dir_/context, and the real `cohort` CLI logged in as the
// first admin. Every wait has a deadline and fails the test (ASSERT) naming what it waited for.
//
// The master, the CLI and each agent may run inside a network namespace (tests/testing/
// network_namespaces.h): set master_exec_ / master_host_ and agent_exec_[id] before starting
// them. TearDown SIGKILLs the agents (their launchers and workers die with them), the processes
// a trial wrote to dir_/pids (PidsScript) and the master, then removes dir_.
// Not thread-safe: one test thread drives it.
//
// Example:
//   class MyTest : public ClusterFixture {
//    protected:
//     MyTest() : ClusterFixture("my_test") {}
//   };
//   TEST_F(MyTest, Runs) {
//     StartMaster();
//     StartAgent("a1");
//     Script("hello.sh", "echo hello\n");
//     const int64_t id = Create("hello", "./hello.sh", "max_restarts: 0\n");
//     WaitUntil([&] { return State(id) == "COMPLETED"; }, "the experiment to complete");
//   }

#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/launch/launcher_process.h"

namespace cohort::testing {

// The bytes of `path` (empty when it cannot be read).
std::string ReadFile(const std::filesystem::path& path);
// Replaces `path` with `bytes`.
void WriteFile(const std::filesystem::path& path, const std::string& bytes);
// Whether `pid` is a live process (a zombie, dead but not reaped, is not).
bool Alive(pid_t pid);
// The peak resident memory of `pid` in bytes (VmHWM), 0 when unreadable.
int64_t PeakRss(pid_t pid);
// The current resident memory of `pid` in bytes (VmRSS), 0 when unreadable.
int64_t Rss(pid_t pid);
// {1, 2, ..., n}.
std::vector<int> OneTo(int n);

class ClusterFixture : public ::testing::Test {
 protected:
  // `name` prefixes the test's directory: <TempDir>/<name>_<pid>_<test>.
  explicit ClusterFixture(std::string name) : name_(std::move(name)) {}

  void SetUp() override;
  void TearDown() override;

  // cohort-master on dir_/`data_dir` with --agent-timeout `agent_timeout_`, on `port` (0: the
  // OS's choice), database_flags_, and `extra` flags.
  std::vector<std::string> MasterArgv(const std::string& data_dir = "master", int port = 0,
                                      const std::vector<std::string>& extra = {}) const;
  // Starts the master and waits (30 s) until it listens; sets url_ and port_, and reads the
  // first admin's password from its data directory (kept from before when the master runs on
  // a copy of an earlier master's database, which writes none).
  void StartMaster(const std::vector<std::string>& extra = {},
                   const std::string& data_dir = "master", int port = 0);
  // SIGKILLs the master and waits for it.
  void KillMaster();
  // Starts the master again on the same port and data directory (--readopt-grace 20).
  void RestartMaster();
  // cohort-agent `id` with 1 slot on work directory `work_dir`, in agent_exec_[id] if set.
  std::vector<std::string> AgentArgv(const std::string& id, const std::string& work_dir,
                                     const std::vector<std::string>& extra = {}) const;
  // Starts agent `id` (work directory dir_/id) and waits until the master lists it connected.
  LauncherProcess& StartAgent(const std::string& id, const std::vector<std::string>& extra = {});
  // Whether `agent list` shows agent `id` connected.
  bool Connected(const std::string& id);

  // `cohort -m URL ARGS...` (in master_exec_), logged in as admin.
  std::vector<std::string> CohortArgv(std::vector<std::string> args) const;
  std::map<std::string, std::optional<std::string>> CohortEnv() const;
  LaunchResult Cohort(std::vector<std::string> args, absl::Duration timeout = absl::Seconds(120));
  // The same with --json, parsed (a failure or bad JSON fails the test).
  nlohmann::json Json(std::vector<std::string> args);

  // Reads the processes' output (so none blocks on a full pipe) while waiting for `done`.
  void WaitUntil(const std::function<bool()>& done, const std::string& what,
                 absl::Duration timeout = absl::Seconds(60));
  // Reads the master's and the agents' output for a moment.
  void Drain();

  // An executable shell script dir_/context/`name`.
  void Script(const std::string& name, const std::string& body);
  // Creates an experiment running `entrypoint` (searcher single, 10 batches) with the config
  // lines `extra`; returns its id (-1 when the CLI did not say it).
  int64_t Create(const std::string& name, const std::string& entrypoint,
                 const std::string& extra = "");
  std::string State(int64_t experiment);
  nlohmann::json Trial(int64_t experiment);  // its first trial
  std::string TrialId(int64_t experiment);
  // `cohort trial logs TRIAL`.
  std::string Logs(int64_t trial);
  // The numbers N of the log's lines that end in "<word> N" (after a space, a ']' or at the
  // start), in the order the master stored them.
  static std::vector<int> Numbered(const std::string& logs, const std::string& word);
  // The batches of the trial's `series` ("training/loss") points, in order.
  std::vector<int> SeriesBatches(int64_t trial, const std::string& series);
  // The pids a trial script wrote to dir_/pids, one a line.
  std::vector<pid_t> Pids();
  // A trial that writes its launcher's pid, its own and a background child's to dir_/pids,
  // then waits (ignoring SIGTERM when `stubborn`, its child too).
  void PidsScript(const std::string& name, bool stubborn);

  std::filesystem::path dir_;
  int agent_timeout_ = 5;  // seconds, the master's --agent-timeout
  // The master's database flags (empty: SQLite in its data directory; {"--db", URL}: another).
  std::vector<std::string> database_flags_;
  // Where the master and the CLI run (`ip netns exec NS`; empty: here) and the address the
  // master listens on (empty: its default, loopback); where each agent runs.
  std::vector<std::string> master_exec_;
  std::string master_host_;
  std::map<std::string, std::vector<std::string>> agent_exec_;
  std::string last_agents_;  // the last `agent list`
  std::string url_;
  int port_ = 0;
  std::string admin_password_;
  std::unique_ptr<LauncherProcess> master_;
  std::vector<std::unique_ptr<LauncherProcess>> agents_;

 private:
  std::string name_;
};

}  // namespace cohort::testing
