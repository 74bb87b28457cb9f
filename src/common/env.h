#pragma once
// Typed access to environment variables, with errors that name the variable and the bad value.
// Thread-compatible: reads the process environment (getenv), which callers must not mutate
// concurrently.

#include <cstdint>
#include <optional>
#include <string>
#include "absl/strings/string_view.h"

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace cohort::env {

// The variable's value, or nullopt when unset. An empty value counts as set.
std::optional<std::string> Get(const char* name);

// The variable's value, or `fallback` when unset or empty.
std::string GetOr(const char* name, absl::string_view fallback);

// Parses the variable as a base-10 integer. Unset or empty: nullopt. Malformed:
// InvalidArgument naming the variable, e.g. "COHORT_RANK: expected an integer, got 'x'".
absl::StatusOr<std::optional<int64_t>> GetInt(const char* name);

// Like GetInt, with a fallback for unset/empty.
absl::StatusOr<int64_t> GetIntOr(const char* name, int64_t fallback);

// Parses the variable as seconds (a decimal number, e.g. "2.5"); fallback when unset.
absl::StatusOr<absl::Duration> GetSecondsOr(const char* name, absl::Duration fallback);

}  // namespace cohort::env
