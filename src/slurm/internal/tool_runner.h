#pragma once
// Running one of Slurm's command-line tools for SlurmClient: a child process with a deadline, a
// bound on what it prints, and a small environment; and the error for a tool that failed.
// Thread-safe (each call has its own child process).

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "slurm/slurm_client.h"

namespace cohort::slurm::internal {

struct ToolResult {
  int status = 0;      // the exit status (128 + N: killed by signal N)
  std::string output;  // stdout and stderr together, at most options.max_output_bytes
};

// The variables of the master's environment a tool (or a job) may see; see slurm_client.h.
inline constexpr const char* kToolEnvironment[] = {
    "PATH", "HOME", "USER", "LOGNAME", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "TMPDIR", "SLURM_CONF"};

// The command as messages show it: "squeue -h -t all ...", control characters escaped, at most
// about 300 bytes.
std::string CommandText(const std::string& tool, const std::vector<std::string>& args);

// `tool` in options.bin_dir (or looked up in PATH when it is empty).
std::string ToolPath(const SlurmOptions& options, const std::string& tool);

// The changes to the master's environment that give a tool its own (kToolEnvironment, then
// `extra`): every other variable removed.
std::map<std::string, std::optional<std::string>> ToolEnvironment(
    const std::map<std::string, std::string>& extra);

// Runs `tool` with `args`, waiting at most options.timeout, and returns its exit status and
// output (a non-zero status is the caller's to judge: ToolFailure). FailedPrecondition when the
// tool cannot be executed ("install slurm-wlm ..."); DeadlineExceeded when it has not finished
// in time; ResourceExhausted when it prints more than options.max_output_bytes (the tool is
// killed in both cases); Unavailable when it cannot be started.
absl::StatusOr<ToolResult> RunTool(const SlurmOptions& options, const std::string& tool,
                                   const std::vector<std::string>& args);

// The error for a tool that exited with a non-zero status, naming the command and quoting what
// it printed (its last 1000 bytes): Unavailable when Slurm's message says the controller could
// not be reached (or authentication failed), FailedPrecondition when Slurm's configuration
// could not be read, else `otherwise`.
absl::Status ToolFailure(const std::string& tool, const std::vector<std::string>& args,
                         const ToolResult& result,
                         absl::StatusCode otherwise = absl::StatusCode::kUnavailable);

// What a tool printed, as one line of a message: control characters escaped, newlines as "; ",
// at most the last `max_bytes`.
std::string OutputText(const std::string& output, size_t max_bytes = 1000);

}  // namespace cohort::slurm::internal
