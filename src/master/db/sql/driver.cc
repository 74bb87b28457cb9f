#include "master/db/sql/driver.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace cohort::master::sql {

absl::Status FailureStatus(Failure kind, std::string message) {
  switch (kind) {
    case Failure::kNone: return absl::OkStatus();
    case Failure::kUniqueViolation: return absl::AlreadyExistsError(message);
    case Failure::kForeignKeyViolation: return absl::FailedPreconditionError(message);
    case Failure::kSerialization: return absl::AbortedError(message);
    case Failure::kConnectionLost: return absl::UnavailableError(message);
    case Failure::kOther: return absl::InternalError(message);
  }
  return absl::InternalError(message);
}

absl::Status CheckTextParameter(absl::string_view what, int index, absl::string_view value) {
  if (value.find('\0') == absl::string_view::npos) return absl::OkStatus();
  return FailureStatus(Failure::kOther,
                       absl::StrCat(what, ": parameter ?", index,
                                    " holds a NUL byte, which PostgreSQL text cannot store: clean "
                                    "the value where it comes in"));
}

absl::Status RunTransaction(Connection& connection, absl::FunctionRef<absl::Status()> body,
                            int attempts) {
  absl::Status status;
  for (int attempt = 0; attempt < std::max(attempts, 1); ++attempt) {
    Transaction transaction(connection);
    status = transaction.status();
    if (status.ok()) status = body();
    if (status.ok()) status = transaction.Commit();
    if (!absl::IsAborted(status)) return status;
  }
  return status;
}

}  // namespace cohort::master::sql
