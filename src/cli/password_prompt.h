#pragma once
// Asking for a password: on a terminal, a prompt with echo turned off (restored even when the
// read fails); otherwise one line of standard input, so scripts can pipe it. Not thread-safe
// (it changes the terminal's mode).

#include <string>

#include "absl/status/statusor.h"

namespace cohort::cli {

// The password typed after `prompt` (on stderr), without its newline. InvalidArgument when
// standard input ends before a line.
absl::StatusOr<std::string> ReadPassword(const std::string& prompt);

// A new password, asked twice on a terminal (the two must match).
absl::StatusOr<std::string> ReadNewPassword(const std::string& prompt);

}  // namespace cohort::cli
