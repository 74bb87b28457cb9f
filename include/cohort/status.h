#pragma once
// Propagation helpers for absl::Status / absl::StatusOr, in the style of Abseil's internal
// macros. Thread-safe (stateless).
//
// Example:
//   COHORT_ASSIGN_OR_RETURN(int fd, net::Connect(addr, deadline));
//   COHORT_RETURN_IF_ERROR(net::SendAll(fd, data, deadline));

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

#define COHORT_STATUS_CONCAT_INNER_(a, b) a##b
#define COHORT_STATUS_CONCAT_(a, b) COHORT_STATUS_CONCAT_INNER_(a, b)

#define COHORT_RETURN_IF_ERROR(expr)                 \
  do {                                               \
    ::absl::Status cohort_status_ = (expr);          \
    if (!cohort_status_.ok()) return cohort_status_; \
  } while (0)

#define COHORT_ASSIGN_OR_RETURN(lhs, expr) \
  COHORT_ASSIGN_OR_RETURN_IMPL_(COHORT_STATUS_CONCAT_(cohort_statusor_, __LINE__), lhs, expr)

#define COHORT_ASSIGN_OR_RETURN_IMPL_(statusor, lhs, expr) \
  auto statusor = (expr);                                  \
  if (!statusor.ok()) return std::move(statusor).status(); \
  lhs = std::move(statusor).value()

namespace cohort {

// Returns `status` with `context` prepended to its message ("context: message"), keeping the
// code. OK statuses pass through unchanged.
absl::Status Annotate(const absl::Status& status, absl::string_view context);

}  // namespace cohort
