#pragma once
// WorkerGroup: starts N real worker processes the way cohort-launch would (COHORT_* worker
// environment, a rendezvous store hosted here), without depending on the launcher. For tests
// of the communicators. Each worker's stdout+stderr goes to a file that Result keeps.
// Not thread-safe; one test thread drives it.

#include <sys/types.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "comm/tcp_store.h"

namespace cohort::testing {

struct WorkerResult {
  int rank = 0;
  bool exited = false;     // false: still running at the deadline (then killed)
  int exit_code = -1;      // when exited normally
  int signal = 0;          // when killed by a signal
  absl::Time end_time;     // when the exit was observed
  std::string output;      // stdout + stderr
};

struct WorkerGroupOptions {
  int size = 2;
  // Machines the ranks pretend to be spread over (ranks are split in equal consecutive
  // blocks; size must be a multiple). Everything still runs on this machine.
  int machines = 1;
  std::map<std::string, std::string> env;  // extra environment for every worker
  // Extra environment for one rank, over `env`.
  std::map<int, std::map<std::string, std::string>> rank_env;
};

class WorkerGroup {
 public:
  // Starts `options.size` processes running argv (argv[0] is the program path).
  WorkerGroup(const std::vector<std::string>& argv, const WorkerGroupOptions& options);
  // Kills any worker still running.
  ~WorkerGroup();

  pid_t pid(int rank) const { return pids_[rank]; }

  // Waits for every worker to exit, at most `timeout`; workers still running are killed and
  // reported as not exited. Ranks in `stop_when_others_exit` (a stalled victim, say) are not
  // waited for: once every other rank has exited they are killed too.
  std::vector<WorkerResult> Wait(absl::Duration timeout,
                                 const std::vector<int>& stop_when_others_exit = {});

 private:
  std::unique_ptr<comm::TcpStoreServer> store_;
  std::vector<pid_t> pids_;
  std::vector<std::string> output_files_;
  std::string dir_;
};

// Path of a binary built into build/bin or build/tests (COHORT_BIN_DIR is set by ctest).
std::string BinaryPath(const std::string& name);

// Every worker's exit and output, for assertion messages.
std::string Describe(const std::vector<WorkerResult>& results);

// The first number after `marker` in `output` (workers print "VICTIM dying at 1795400000.123"),
// or -1 when the marker or a number is missing.
double NumberAfter(const std::string& output, const std::string& marker);

}  // namespace cohort::testing
