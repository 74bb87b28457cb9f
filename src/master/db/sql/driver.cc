#include "master/db/sql/driver.h"

#include <algorithm>
#include <random>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace cohort::master::sql {

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

namespace {

// The length of the valid UTF-8 sequence at text[i] (RFC 3629: no overlongs, no surrogates,
// nothing past U+10FFFF), or 0 when none starts there.
size_t Utf8SequenceAt(absl::string_view text, size_t i) {
  const auto byte = [&](size_t k) { return static_cast<unsigned char>(text[k]); };
  const unsigned char b = byte(i);
  size_t n = 0;
  unsigned char lo = 0x80, hi = 0xBF;  // the allowed range of the second byte
  if (b >= 0xC2 && b <= 0xDF) {
    n = 2;
  } else if (b >= 0xE0 && b <= 0xEF) {
    n = 3;
    if (b == 0xE0) lo = 0xA0;
    if (b == 0xED) hi = 0x9F;
  } else if (b >= 0xF0 && b <= 0xF4) {
    n = 4;
    if (b == 0xF0) lo = 0x90;
    if (b == 0xF4) hi = 0x8F;
  } else {
    return 0;
  }
  if (i + n > text.size() || byte(i + 1) < lo || byte(i + 1) > hi) return 0;
  for (size_t k = 2; k < n; ++k) {
    if ((byte(i + k) & 0xC0) != 0x80) return 0;
  }
  return n;
}

}  // namespace

// The length of the clean prefix of `text` (see CleanText).
size_t CleanPrefix(absl::string_view text) {
  size_t i = 0;
  while (i < text.size()) {
    const unsigned char b = static_cast<unsigned char>(text[i]);
    const size_t n = b == 0 ? 0 : (b < 0x80 ? 1 : Utf8SequenceAt(text, i));
    if (n == 0) break;
    i += n;
  }
  return i;
}

bool IsCleanText(absl::string_view text) { return CleanPrefix(text) == text.size(); }

std::string CleanText(absl::string_view text) {
  constexpr absl::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD
  size_t i = CleanPrefix(text);
  std::string clean(text.substr(0, i));
  clean.reserve(text.size() + 8);
  while (i < text.size()) {
    const unsigned char b = static_cast<unsigned char>(text[i]);
    const size_t n = b == 0 ? 0 : (b < 0x80 ? 1 : Utf8SequenceAt(text, i));
    if (n == 0) {
      clean.append(kReplacement.data(), kReplacement.size());
      ++i;
    } else {
      clean.append(text.data() + i, n);
      i += n;
    }
  }
  return clean;
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
