#pragma once
// Subprocess: a child process started with its own argv, environment and working directory,
// its stdout and stderr merged into one pipe that the parent reads without blocking. For the
// CLI's local runs (and the agent's trial processes). Not thread-safe: one thread drives it.
//
// Example:
//   COHORT_ASSIGN_OR_RETURN(auto child, Subprocess::Start({.argv = {"/bin/echo", "hi"}}));
//   std::string out;
//   while (child->ReadAvailable(&out, absl::Milliseconds(100))) {}
//   COHORT_ASSIGN_OR_RETURN(int status, child->Wait(absl::Seconds(5)));

#include <sys/types.h>

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace cohort {

struct SubprocessOptions {
  std::vector<std::string> argv;  // argv[0]: the program (a path, or a name looked up in PATH)
  // Changes to the parent's environment: a value sets the variable, nullopt removes it.
  std::map<std::string, std::optional<std::string>> env;
  std::string cwd;  // empty: the parent's
  // A new process group (so a signal reaches the child's own children too).
  bool new_process_group = true;
  // The signal the child gets when the process that started it ends, however it ends (SIGKILL
  // included): PR_SET_PDEATHSIG. 0: none. A child whose parent is gone before it is set exits
  // at once, status 1. Kernels differ on whether the starting thread's own exit counts (the
  // man page says it does; 6.18 did not send it while the process lived on): keep the starting
  // thread alive while the child runs.
  int parent_death_signal = 0;
};

class Subprocess {
 public:
  // Starts the child. A program that cannot be executed is reported by the child's first
  // output line and exit status 127 (as a shell does), not here; a fork or pipe failure is
  // Unavailable.
  static absl::StatusOr<std::unique_ptr<Subprocess>> Start(const SubprocessOptions& options);
  // Kills the child (SIGKILL to its group) if it is still running, and reaps it.
  ~Subprocess();

  pid_t pid() const { return pid_; }
  // Appends what the child wrote, waiting at most `timeout` for something to arrive, and at
  // most `max_bytes` of it (what is left stays in the pipe for the next call, so a child that
  // writes faster than its reader cannot make the reader hold without bound). Returns false
  // once the output is closed (the child and its children are done writing).
  bool ReadAvailable(std::string* out, absl::Duration timeout,
                     size_t max_bytes = static_cast<size_t>(-1));
  // Sends `signal` to the child (its group when it has one).
  void Signal(int signal);
  // The exit status once the child has exited: its exit code, or 128 + the signal that killed
  // it; nullopt while it runs.
  std::optional<int> Poll();
  // Waits at most `timeout` for the exit; DeadlineExceeded names the pid.
  absl::StatusOr<int> Wait(absl::Duration timeout);

 private:
  Subprocess() = default;
  pid_t pid_ = -1;
  int out_fd_ = -1;
  bool group_ = false;
  std::optional<int> status_;
};

}  // namespace cohort
