#pragma once
// What every verb that talks to a master shares: the master's client (from the root's
// --master), reading the master's answers as wire types, the --json flag, how a verb's exit
// status reaches main, and printing of values, JSON and errors. Each noun's *_commands.cc registers
// its verbs with one CommandContext. Not thread-safe (CLI setup and the one verb that runs share it
// on the main thread).

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "client/master_client.h"

namespace CLI {
class App;
}  // namespace CLI

namespace cohort::cli {

using client::Json;

class CommandContext {
 public:
  // `master_flag`, `tls_ca_flag`: the root's --master and --tls-ca values, read when a verb
  // runs. `exit_code`: where a verb's exit status goes. All must outlive the CLI11 app.
  CommandContext(const std::string* master_flag, const std::string* tls_ca_flag, int* exit_code)
      : master_flag_(master_flag), tls_ca_flag_(tls_ca_flag), exit_code_(exit_code) {}

  // The root's --master value as given (empty when not set).
  const std::string& master_flag() const { return *master_flag_; }

  // A client of the master named by --master, else $COHORT_MASTER, else the local cluster's,
  // presenting the user's stored login (LoggedInClient, login_store.h) and verifying an
  // https:// master against --tls-ca, else $COHORT_TLS_CA, else the system's store. `timeout`
  // applies to each request.
  client::MasterClient Client(absl::Duration timeout = absl::Seconds(30)) const;
  // The same master and TLS verification, without a login (for logging in).
  client::MasterClient AnonymousClient(absl::Duration timeout = absl::Seconds(30)) const;

  // Adds `--json` to `verb`; json() is true when it was given.
  void AddJsonFlag(CLI::App* verb, const std::string& help = "Print JSON instead of a table");
  bool json() const { return json_; }

  // When `verb` runs, `body` runs and its return value becomes the process's exit status.
  void OnRun(CLI::App* verb, std::function<int()> body);

  // Stores a verb's exit status directly (verbs whose callback does more than OnRun's).
  void SetExitCode(int code) { *exit_code_ = code; }

 private:
  const std::string* master_flag_;
  const std::string* tls_ca_flag_;
  int* exit_code_;
  bool json_ = false;
};

// The error for a master's answer to `request` ("GET /api/v1/tasks") that `parse_error` (a wire
// parser's) rejects: Internal "the master's answer to REQUEST: <the parser's message>".
absl::Status BadAnswer(absl::string_view request, const absl::Status& parse_error);

// The master's `answer` to `request`, parsed by `parse` (a wire Parse function: const Json& ->
// absl::StatusOr<T>). A failed request's error comes back as it is; an answer that does not parse
// is BadAnswer's error, naming the request and the field.
template <typename Parse>
auto ParseAnswer(absl::string_view request, const absl::StatusOr<Json>& answer, Parse parse)
    -> decltype(parse(*answer)) {
  if (!answer.ok()) return answer.status();
  auto value = parse(*answer);
  if (!value.ok()) return BadAnswer(request, value.status());
  return value;
}

// GETs `path` (with the client's timeout) and parses the answer with `parse`, as ParseAnswer
// does.
//
// Example:
//   absl::StatusOr<wire::TaskList> tasks = GetAs(client, "/api/v1/tasks", wire::ParseTaskList);
//   if (!tasks.ok()) return Fail(tasks.status());
template <typename Parse>
auto GetAs(client::MasterClient& client, const std::string& path, Parse parse)
    -> decltype(parse(std::declval<const Json&>())) {
  return ParseAnswer("GET " + path, client.Get(path), std::move(parse));
}

// A JSON value as a table cell: null is "-", strings without quotes, floats with 6 significant
// digits, anything else as compact JSON.
std::string Str(const Json& v);

// An optional text as a table cell: "-" when absent.
std::string Cell(const std::optional<std::string>& text);
// A number as a table cell: "-" when absent, else with 6 significant digits (as Str does).
std::string Cell(const std::optional<double>& number);
// A text as a table cell: "-" when empty (no template, no checkpoint).
std::string EmptyAsDash(const std::string& text);
// "yes" or "no".
std::string YesNo(bool value);

// `text` as a URL query value: RFC 3986's unreserved characters as they are, the rest %XX.
std::string UrlQueryValue(absl::string_view text);

// Milliseconds since the epoch as local "YYYY-MM-DD HH:MM:SS".
std::string FormatTime(int64_t ms);

// The delete verbs' flow: unless `yes`, asks `question` ("Delete experiment 7 ...?") on the
// terminal (y or yes goes on; anything else prints "<what>: not deleted"); without a terminal
// on stdin it fails saying that deleting `what` asks first and --yes deletes without asking.
// Then DELETEs `path` and prints `done`. Returns the exit code.
int DeleteAfterAsking(const CommandContext& context, bool yes, const std::string& what,
                      const std::string& question, const std::string& path,
                      const std::string& done);

// Prints `value` as indented JSON on stdout; returns kExitOk.
int PrintJson(const Json& value);

// Prints a failed request's error ("cohort: error: " and the master's words, or what to do when
// it is unreachable) on stderr and returns the exit code of a failed command (kExitInvalid).
int Fail(const absl::Status& status);

}  // namespace cohort::cli
