#include "master/db/sql/driver.h"

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

}  // namespace cohort::master::sql
