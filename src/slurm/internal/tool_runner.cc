#include "slurm/internal/tool_runner.h"

#include <signal.h>

#include <algorithm>
#include <cstring>
#include <iterator>
#include <memory>
#include <set>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/strip.h"
#include "cohort/status.h"
#include "common/subprocess.h"
#include "common/terminal_text.h"

extern char** environ;

namespace cohort::slurm::internal {
namespace {

// Slurm's words (lowercase) for a controller it could not reach or a credential it could not
// use: worth trying again later.
constexpr const char* kUnreachable[] = {
    "unable to contact slurm controller", "socket timed out",   "connection refused",
    "zero bytes were transmitted",        "connection failure", "authentication",
    "resource temporarily unavailable"};
// Slurm's words (lowercase) for a configuration it could not read.
constexpr const char* kNoConfig[] = {"could not establish a configuration source",
                                     "unable to process configuration file"};

template <size_t N>
bool Mentions(const std::string& lowercase_output, const char* const (&words)[N]) {
  return std::any_of(std::begin(words), std::end(words),
                     [&](const char* word) { return absl::StrContains(lowercase_output, word); });
}

// Kills the tool (its process group) and reaps it, at most a few seconds.
void Stop(Subprocess* child) {
  child->Signal(SIGKILL);
  (void)child->Wait(absl::Seconds(5));
}

// Reads the tool's output until it closes, the deadline passes or it passes the bound.
absl::Status ReadAll(Subprocess* child, const SlurmOptions& options, absl::Time deadline,
                     const std::string& command, std::string* out) {
  for (;;) {
    const absl::Duration left = deadline - absl::Now();
    if (left <= absl::ZeroDuration()) {
      return absl::DeadlineExceededError(
          absl::StrCat(command, " did not finish within ", absl::FormatDuration(options.timeout),
                       " (killed); printed so far: ", OutputText(*out, 300)));
    }
    const bool open = child->ReadAvailable(out, std::min(left, absl::Milliseconds(100)),
                                           options.max_output_bytes + 1 - out->size());
    if (out->size() > options.max_output_bytes) {
      return absl::ResourceExhaustedError(absl::StrCat(
          command, " printed more than ", options.max_output_bytes, " bytes (killed)"));
    }
    if (!open) return absl::OkStatus();
  }
}

}  // namespace

std::string CommandText(const std::string& tool, const std::vector<std::string>& args) {
  std::string text = absl::StrCat(tool, " ", absl::StrJoin(args, " "));
  if (text.size() > 300) text = absl::StrCat(text.substr(0, 300), "...");
  return EscapeControl(text);
}

std::string ToolPath(const SlurmOptions& options, const std::string& tool) {
  if (options.bin_dir.empty()) return tool;
  return absl::StrCat(absl::StripSuffix(options.bin_dir, "/"), "/", tool);
}

std::map<std::string, std::optional<std::string>> ToolEnvironment(
    const std::map<std::string, std::string>& extra) {
  const std::set<std::string> kept(std::begin(kToolEnvironment), std::end(kToolEnvironment));
  std::map<std::string, std::optional<std::string>> changes;
  for (char** e = environ; *e != nullptr; ++e) {
    const char* eq = std::strchr(*e, '=');
    if (eq == nullptr) continue;
    std::string name(*e, static_cast<size_t>(eq - *e));
    if (kept.count(name) == 0) changes[name] = std::nullopt;
  }
  for (const auto& [name, value] : extra) changes[name] = value;
  return changes;
}

absl::StatusOr<ToolResult> RunTool(const SlurmOptions& options, const std::string& tool,
                                   const std::vector<std::string>& args) {
  const std::string command = CommandText(tool, args);
  SubprocessOptions spawn;
  spawn.argv = {ToolPath(options, tool)};
  spawn.argv.insert(spawn.argv.end(), args.begin(), args.end());
  spawn.env = ToolEnvironment(options.env);
  spawn.parent_death_signal = SIGKILL;  // the caller's thread waits for the tool's end
  absl::StatusOr<std::unique_ptr<Subprocess>> child = Subprocess::Start(spawn);
  if (!child.ok()) return Annotate(child.status(), command);
  const absl::Time deadline = absl::Now() + options.timeout;
  ToolResult result;
  if (absl::Status read = ReadAll(child->get(), options, deadline, command, &result.output);
      !read.ok()) {
    Stop(child->get());
    return read;
  }
  absl::StatusOr<int> status =
      (*child)->Wait(std::max(deadline - absl::Now(), absl::ZeroDuration()));
  if (!status.ok()) {
    Stop(child->get());
    return absl::DeadlineExceededError(absl::StrCat(
        command, " did not exit within ", absl::FormatDuration(options.timeout), " (killed)"));
  }
  result.status = *status;
  if (result.status == 127 && absl::StartsWith(result.output, "cannot execute ")) {
    return absl::FailedPreconditionError(absl::StrCat(
        "cannot run ", spawn.argv[0],
        ": install Slurm's tools (Debian: apt-get install "
        "slurm-wlm; for tests scripts/install.sh --test), or name their directory in bin_dir"));
  }
  return result;
}

absl::Status ToolFailure(const std::string& tool, const std::vector<std::string>& args,
                         const ToolResult& result, absl::StatusCode otherwise) {
  const std::string message = absl::StrCat(CommandText(tool, args), " failed (exit status ",
                                           result.status, "): ", OutputText(result.output));
  const std::string lowercase = absl::AsciiStrToLower(result.output);
  if (Mentions(lowercase, kNoConfig)) {
    return absl::FailedPreconditionError(
        absl::StrCat(message, " (is SLURM_CONF set to the cluster's slurm.conf?)"));
  }
  if (Mentions(lowercase, kUnreachable)) {
    return absl::UnavailableError(message);
  }
  return absl::Status(otherwise, message);
}

std::string OutputText(const std::string& output, size_t max_bytes) {
  absl::string_view text = absl::StripAsciiWhitespace(output);
  std::string prefix;
  if (text.size() > max_bytes) {
    text = text.substr(text.size() - max_bytes);
    prefix = "...";
  }
  return absl::StrCat(prefix, EscapeControl(absl::StrReplaceAll(text, {{"\n", "; "}})));
}

}  // namespace cohort::slurm::internal
