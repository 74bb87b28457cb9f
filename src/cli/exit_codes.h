#pragma once
// Exit statuses of the `cohort` CLI, shared by every verb.

namespace cohort::cli {

inline constexpr int kExitOk = 0;
// The input was read but is invalid (a config that fails validation, malformed YAML).
inline constexpr int kExitInvalid = 1;
// Bad command line: unknown verb or flag, missing argument, a file that cannot be read.
inline constexpr int kExitUsage = 2;

}  // namespace cohort::cli
