#pragma once
// Exit statuses of the `cohort` CLI, shared by every verb.

#include "common/command_line.h"

namespace cohort::cli {

inline constexpr int kExitOk = 0;
// The input was read but is invalid (a config that fails validation, malformed YAML).
inline constexpr int kExitInvalid = 1;
// Bad command line: unknown verb or flag, missing argument, a file that cannot be read.
inline constexpr int kExitUsage = kUsageExit;  // as every Cohort program's

}  // namespace cohort::cli
