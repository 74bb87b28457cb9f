#pragma once
// Exit statuses of the `cohort` CLI, shared by every verb, and FailReading, the one place a file
// the command was given and could not take becomes one.

#include <iostream>
#include <ostream>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace cohort::cli {

inline constexpr int kExitOk = 0;
// The input was read but is invalid (a config that fails validation, malformed YAML).
inline constexpr int kExitInvalid = 1;
// Bad command line: unknown verb or flag, missing argument, a file that cannot be read.
inline constexpr int kExitUsage = 2;  // as every Cohort program's (common/command_line.h)

// Prints why a file given to the command cannot be taken ("cohort: error: ", `what` and ": " when
// not empty, then config::ReadYamlText's words) on `err`; returns kExitInvalid for a file that
// is there but unusable (a directory, too long: InvalidArgument), else kExitUsage (missing or
// unreadable, as a bad argument).
inline int FailReading(const absl::Status& status, absl::string_view what,
                       std::ostream& err = std::cerr) {
  err << "cohort: error: " << what << (what.empty() ? "" : ": ") << status.message() << "\n";
  return absl::IsInvalidArgument(status) ? kExitInvalid : kExitUsage;
}

}  // namespace cohort::cli
