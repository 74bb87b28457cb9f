#include "common/env.h"

#include <cstdlib>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace cohort::env {

std::optional<std::string> Get(const char* name) {
  const char* value = std::getenv(name);
  if (value == nullptr) return std::nullopt;
  return std::string(value);
}

std::string GetOr(const char* name, absl::string_view fallback) {
  const char* value = std::getenv(name);
  if (value == nullptr || *value == '\0') return std::string(fallback);
  return std::string(value);
}

absl::StatusOr<std::optional<int64_t>> GetInt(const char* name) {
  const char* value = std::getenv(name);
  if (value == nullptr || *value == '\0') return std::optional<int64_t>();
  int64_t parsed = 0;
  if (!absl::SimpleAtoi(value, &parsed)) {
    return absl::InvalidArgumentError(
        absl::StrCat(name, ": expected an integer, got '", value, "'"));
  }
  return std::optional<int64_t>(parsed);
}

absl::StatusOr<int64_t> GetIntOr(const char* name, int64_t fallback) {
  auto value = GetInt(name);
  if (!value.ok()) return value.status();
  return value->value_or(fallback);
}

absl::StatusOr<absl::Duration> GetSecondsOr(const char* name, absl::Duration fallback) {
  const char* value = std::getenv(name);
  if (value == nullptr || *value == '\0') return fallback;
  double seconds = 0;
  if (!absl::SimpleAtod(value, &seconds) || seconds <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(name, ": expected a positive number of seconds, got '", value, "'"));
  }
  return absl::Seconds(seconds);
}

}  // namespace cohort::env
