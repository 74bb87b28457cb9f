#pragma once
// Sizes and ranges both ends of the master's REST API agree on. A sender checks before sending
// (with an error that says what to shrink); the master refuses anything larger with 400.
// docs/security.md ("Range and work limits") lists them. Thread-safe functions.

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace cohort::wire {

// An experiment's context directory, as the tar.gz uploaded with it.
inline constexpr size_t kMaxContextBytes = 96u << 20;
// Any other request body (JSON): log batches, reports, registrations, templates.
inline constexpr size_t kMaxJsonBodyBytes = 16u << 20;

// A trial's progress.json (wire::ProgressRecord, a few counts), as the agent and the local
// runner read it: a larger one is refused, not read.
inline constexpr size_t kMaxProgressFileBytes = 64u << 10;

// The largest count or length a client may send as a double (progress completed/total, an
// operation's length): exact in a double and far inside int64, so converting is safe.
inline constexpr double kMaxCount = 1e15;
// The latest time a client may send, in unix seconds (the year 5138).
inline constexpr double kMaxUnixSeconds = 1e11;
// The largest id (trial, experiment) a client may send: 2^53 - 1, exact in a double (for JSON
// readers in other languages).
inline constexpr int64_t kMaxId = (int64_t{1} << 53) - 1;

// A report's metrics (training, validation): at most 1024 names of at most 256 bytes each.
inline constexpr size_t kMaxMetrics = 1024;
inline constexpr size_t kMaxMetricNameBytes = 256;

// Names that appear in URLs, file names and log lines: agent ids, template names.
inline constexpr size_t kMaxSafeNameBytes = 128;
// An experiment's display name (free text, not used in URLs).
inline constexpr size_t kMaxExperimentNameBytes = 256;

// Whether `value` is 1..kMaxSafeNameBytes bytes of [A-Za-z0-9._-] not starting with '.' or '-'
// (so it is safe in a URL path, a file name and a command line).
bool IsSafeName(absl::string_view value);
// "must be 1 to 128 characters of [A-Za-z0-9._-], not starting with '.' or '-', got "a/b" (3
// bytes)": why `value` is not a safe name (the value cut to 64 bytes and escaped).
std::string SafeNameError(absl::string_view value);
// OK for a safe name; otherwise InvalidArgument "<field> " + SafeNameError(value).
absl::Status CheckSafeName(absl::string_view field, absl::string_view value);

}  // namespace cohort::wire
