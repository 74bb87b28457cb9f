#include "cli/command_context.h"

#include <unistd.h>

#include <iostream>
#include <utility>

#include "CLI/CLI.hpp"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "cli/exit_codes.h"
#include "cli/login_store.h"

namespace cohort::cli {

client::MasterClient CommandContext::Client(absl::Duration timeout) const {
  return LoggedInClient(client::MasterUrl(*master_flag_), timeout,
                        client::TlsCaFile(*tls_ca_flag_));
}

client::MasterClient CommandContext::AnonymousClient(absl::Duration timeout) const {
  client::MasterClient client(client::MasterUrl(*master_flag_), timeout);
  client.set_tls_ca_file(client::TlsCaFile(*tls_ca_flag_));
  return client;
}

void CommandContext::AddJsonFlag(CLI::App* verb, const std::string& help) {
  verb->add_flag("--json", json_, help);
}

void CommandContext::OnRun(CLI::App* verb, std::function<int()> body) {
  verb->callback([exit_code = exit_code_, body = std::move(body)] { *exit_code = body(); });
}

std::string Str(const Json& v) {
  if (v.is_null()) return "-";
  if (v.is_string()) return v.get<std::string>();
  if (v.is_number_float()) return absl::StrFormat("%.6g", v.get<double>());
  return v.dump();
}

absl::Status BadAnswer(absl::string_view request, const absl::Status& parse_error) {
  return absl::InternalError(
      absl::StrCat("the master's answer to ", request, ": ", parse_error.message()));
}

std::string Cell(const std::optional<std::string>& text) { return text ? *text : "-"; }

std::string EmptyAsDash(const std::string& text) { return text.empty() ? "-" : text; }

std::string Cell(const std::optional<double>& number) {
  return number ? absl::StrFormat("%.6g", *number) : "-";
}

std::string YesNo(bool value) { return value ? "yes" : "no"; }

std::string UrlQueryValue(absl::string_view text) {
  std::string out;
  for (unsigned char c : text) {
    if (absl::ascii_isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~') {
      out.push_back(static_cast<char>(c));
    } else {
      absl::StrAppend(&out, absl::StrFormat("%%%02X", c));
    }
  }
  return out;
}

std::string FormatTime(int64_t ms) {
  return absl::FormatTime("%Y-%m-%d %H:%M:%S", absl::FromUnixMillis(ms), absl::LocalTimeZone());
}

int PrintJson(const Json& value) {
  std::cout << value.dump(2) << "\n";
  return kExitOk;
}

int Fail(const absl::Status& status) {
  std::cerr << "cohort: error: " << status.message() << "\n";
  return kExitInvalid;
}

namespace {

// Asks `question` on the terminal; true for y or yes. Without a terminal: FailedPrecondition
// saying that `action` asks first and that --yes does it without asking.
absl::StatusOr<bool> Confirm(absl::string_view action, absl::string_view question) {
  if (::isatty(STDIN_FILENO) != 1) {
    return absl::FailedPreconditionError(
        absl::StrCat(action, " asks for confirmation, and stdin is not a terminal: pass --yes to ",
                     "do it without asking"));
  }
  std::cerr << question << " [y/N] ";
  std::string answer;
  std::getline(std::cin, answer);
  return answer == "y" || answer == "Y" || answer == "yes";
}

}  // namespace

int DeleteAfterAsking(const CommandContext& context, bool yes, const std::string& what,
                      const std::string& question, const std::string& path,
                      const std::string& done) {
  if (!yes) {
    absl::StatusOr<bool> confirmed = Confirm("deleting " + what, question);
    if (!confirmed.ok()) return Fail(confirmed.status());
    if (!*confirmed) {
      std::cout << what << ": not deleted\n";
      return kExitOk;
    }
  }
  absl::StatusOr<Json> r = context.Client().Delete(path);
  if (!r.ok()) return Fail(r.status());
  std::cout << done << "\n";
  return kExitOk;
}

}  // namespace cohort::cli
