#include "master/db/sql/driver.h"

#include <algorithm>
#include <random>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace cohort::master::sql {

std::string Placeholders(int first, size_t count) {
  std::string out;
  for (size_t i = 0; i < count; ++i) {
    absl::StrAppend(&out, i == 0 ? "" : ", ", "?", first + static_cast<int>(i));
  }
  return out;
}

std::string ValuesRows(size_t rows, size_t per_row, int first, absl::string_view tail) {
  std::string out;
  for (size_t r = 0; r < rows; ++r) {
    absl::StrAppend(&out, r == 0 ? "(" : ", (",
                    Placeholders(first + static_cast<int>(r * per_row), per_row), tail, ")");
  }
  return out;
}

absl::Status FailureStatus(Failure kind, std::string message) {
  switch (kind) {
    case Failure::kNone:
      return absl::OkStatus();
    case Failure::kUniqueViolation:
      return absl::AlreadyExistsError(message);
    case Failure::kForeignKeyViolation:
      return absl::FailedPreconditionError(message);
    case Failure::kSerialization:
      return absl::AbortedError(message);
    case Failure::kConnectionLost:
      return absl::UnavailableError(message);
    case Failure::kOther:
      return absl::InternalError(message);
  }
  return absl::InternalError(message);
}

absl::Status CheckTextParameter(absl::string_view what, int index, absl::string_view value) {
  if (value.find('\0') == absl::string_view::npos) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat(what, ": parameter ?", index,
                   " holds a NUL byte, which PostgreSQL text cannot store: clean the value where "
                   "it comes in"));
}

absl::Status RunTransaction(Connection& connection, absl::FunctionRef<absl::Status()> body,
                            Isolation isolation, int attempts) {
  absl::Status status;
  absl::Duration pause = absl::Milliseconds(1);
  for (int attempt = 0; attempt < std::max(attempts, 1); ++attempt) {
    if (attempt > 0) {
      // Writers that collided once collide again if they start again together: each waits a
      // random part of a pause that doubles (1, 2, 4, ... ms, at most 64).
      thread_local std::minstd_rand random(std::random_device{}());
      absl::SleepFor(pause * std::uniform_real_distribution<double>(0.5, 1.0)(random));
      pause = std::min(pause * 2, absl::Milliseconds(64));
    }
    {
      Transaction transaction(connection, isolation);
      status = transaction.status();
      if (status.ok()) status = body();
      if (status.ok()) status = transaction.Commit();
    }
    if (!absl::IsAborted(status)) return status;
  }
  return status;
}

void Query::BindInt64OrNull(int index, std::optional<int64_t> value) {
  value ? s_->BindInt64(index, *value) : s_->BindNull(index);
}

void Query::BindDoubleOrNull(int index, std::optional<double> value) {
  value ? s_->BindDouble(index, *value) : s_->BindNull(index);
}

void Query::BindTextOrNull(int index, const std::optional<std::string>& value) {
  value ? s_->BindText(index, *value) : s_->BindNull(index);
}

absl::Status Query::RunOnRow(absl::string_view row) {
  absl::Status status = s_->Run();
  if (status.ok() && s_->Changes() == 0) {
    return absl::NotFoundError(absl::StrCat(row, " not found"));
  }
  return status;
}

absl::StatusOr<int64_t> Query::RunReturningInt64() {
  absl::StatusOr<bool> row = s_->Step();
  if (!row.ok()) return row.status();
  if (!*row) {
    s_->Reset();
    return absl::InternalError("an INSERT ... RETURNING returned no row");
  }
  const int64_t value = s_->Int64(0);
  s_->Reset();
  return value;
}

}  // namespace cohort::master::sql
