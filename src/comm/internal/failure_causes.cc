#include "comm/internal/failure_causes.h"

#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace cohort::comm::internal {
namespace {

// "<code>:<message>", so the others fail with the same code.
std::string EncodeCause(const absl::Status& status) {
  return absl::StrCat(static_cast<int>(status.code()), ":", status.message());
}

absl::Status DecodeCause(absl::string_view text) {
  size_t colon = text.find(':');
  int code = 0;
  if (colon == absl::string_view::npos || !absl::SimpleAtoi(text.substr(0, colon), &code) ||
      code <= 0) {
    return absl::UnavailableError(text);
  }
  return absl::Status(static_cast<absl::StatusCode>(code), text.substr(colon + 1));
}

}  // namespace

FailureCauses::FailureCauses(const Group& group, std::string prefix)
    : group_(group),
      store_(group.store()),
      cause_key_(absl::StrCat(prefix, "/cause")),
      claim_key_(absl::StrCat(prefix, "/cause_claims")),
      timeout_prefix_(absl::StrCat(prefix, "/timeout/")) {}

void FailureCauses::Publish(const absl::Status& status) {
  absl::StatusOr<int64_t> claims = store_->Add(claim_key_, 1);
  // Best effort (the class comment): a failed Set leaves the others to their own account.
  if (claims.ok() && *claims == 1) store_->Set(cause_key_, EncodeCause(status)).IgnoreError();
}

absl::Status FailureCauses::Await() {
  const absl::Time deadline = absl::Now() + kWait;
  while (true) {
    absl::Status notice = group_.rendezvous->failure();
    if (!notice.ok()) return notice;
    absl::StatusOr<std::string> cause = store_->Get(cause_key_, kPoll);
    if (cause.ok()) return DecodeCause(*cause);
    if (!absl::IsDeadlineExceeded(cause.status()) || absl::Now() >= deadline) {
      return absl::OkStatus();
    }
  }
}

std::string FailureCauses::MissingMembers(int64_t op_number) {
  const std::string prefix = absl::StrCat(timeout_prefix_, op_number, "/");
  if (!store_->Set(absl::StrCat(prefix, group_.rank), "").ok()) return "";
  std::vector<std::string> keys;
  for (int r = 0; r < group_.size; ++r) {
    if (r != group_.rank) keys.push_back(absl::StrCat(prefix, r));
  }
  if (store_->Wait(keys, kWait).ok()) {
    return "; every member timed out in it (network trouble, or a member that is slow inside it)";
  }
  std::vector<std::string> missing;
  for (int r = 0; r < group_.size; ++r) {
    if (r != group_.rank && !store_->Get(absl::StrCat(prefix, r), absl::Milliseconds(1)).ok()) {
      missing.push_back(group_.Name(r));
    }
  }
  if (missing.empty()) return "";
  return absl::StrCat("; waiting for ", absl::StrJoin(missing, ", "),
                      " (not in this collective or not responding)");
}

}  // namespace cohort::comm::internal
