#pragma once
// What every verb that talks to a master shares: the master's client (from the root's
// --master), the --json flag, how a verb's exit status reaches main, and printing of values,
// JSON and errors. Each noun's *_commands.cc registers its verbs with one CommandContext.
// Not thread-safe (CLI setup and the one verb that runs share it on the main thread).

#include <cstdint>
#include <functional>
#include <string>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "client/master_client.h"

namespace CLI {
class App;
}  // namespace CLI

namespace cohort::cli {

using client::Json;

class CommandContext {
 public:
  // `master_flag`: the root's --master value, read when a verb runs. `exit_code`: where a
  // verb's exit status goes. Both must outlive the CLI11 app.
  CommandContext(const std::string* master_flag, int* exit_code)
      : master_flag_(master_flag), exit_code_(exit_code) {}

  // The root's --master value as given (empty when not set).
  const std::string& master_flag() const { return *master_flag_; }

  // A client of the master named by --master, else $COHORT_MASTER, else the local cluster's.
  // `timeout` applies to each request.
  client::MasterClient Client(absl::Duration timeout = absl::Seconds(30)) const;

  // Adds `--json` to `verb`; json() is true when it was given.
  void AddJsonFlag(CLI::App* verb, const std::string& help = "Print JSON instead of a table");
  bool json() const { return json_; }

  // When `verb` runs, `body` runs and its return value becomes the process's exit status.
  void OnRun(CLI::App* verb, std::function<int()> body);

  // Stores a verb's exit status directly (verbs whose callback does more than OnRun's).
  void SetExitCode(int code) { *exit_code_ = code; }

 private:
  const std::string* master_flag_;
  int* exit_code_;
  bool json_ = false;
};

// A JSON value as a table cell: null is "-", strings without quotes, floats with 6 significant
// digits, anything else as compact JSON.
std::string Str(const Json& v);

// Milliseconds since the epoch as local "YYYY-MM-DD HH:MM:SS".
std::string FormatTime(int64_t ms);

// Prints `value` as indented JSON on stdout; returns kExitOk.
int PrintJson(const Json& value);

// Prints a failed request's error ("cohort: error: " and the master's words, or what to do when
// it is unreachable) on stderr and returns the exit code of a failed command (kExitInvalid).
int Fail(const absl::Status& status);

}  // namespace cohort::cli
