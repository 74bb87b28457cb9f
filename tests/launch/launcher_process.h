#pragma once
// LauncherProcess: runs cohort-launch (or any command) as a child process for the launcher
// tests, capturing its stdout and stderr separately, with deadlines on every wait.
// Not thread-safe; one test thread drives it.

#include <sys/types.h>

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/time/time.h"

namespace cohort::testing {

struct LaunchResult {
  bool exited = false;  // false: still running at the deadline (then killed)
  int status = -1;      // exit code, or 128 + signal
  std::string out;
  std::string err;
  absl::Time end_time;
};

class LauncherProcess {
 public:
  // Starts argv (argv[0]: a path) with the test's environment changed by `env`: a value sets
  // the variable, nullopt removes it.
  LauncherProcess(const std::vector<std::string>& argv,
                  const std::map<std::string, std::optional<std::string>>& env = {});
  // Kills the process (SIGKILL to it) if it is still running.
  ~LauncherProcess();

  pid_t pid() const { return pid_; }
  const std::string& out() const { return out_; }
  const std::string& err() const { return err_; }

  // Reads output until `done(out, err)` holds (true) or `timeout` passes (false).
  bool WaitFor(const std::function<bool(const std::string& out, const std::string& err)>& done,
               absl::Duration timeout);

  // Reads all output and waits for the exit, at most `timeout`; then kills it.
  LaunchResult Wait(absl::Duration timeout);

 private:
  // Reads what is available within `timeout`; returns false once both pipes are closed.
  bool ReadSome(absl::Duration timeout);

  pid_t pid_ = -1;
  int out_fd_ = -1;
  int err_fd_ = -1;
  std::string out_;
  std::string err_;
};

// Runs argv to completion (at most `timeout`).
LaunchResult RunToCompletion(const std::vector<std::string>& argv,
                             const std::map<std::string, std::optional<std::string>>& env = {},
                             absl::Duration timeout = absl::Seconds(60));

// Number of occurrences of `needle` in `haystack`.
int CountOf(const std::string& haystack, const std::string& needle);

}  // namespace cohort::testing
