#include "wire/limits.h"

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace cohort::wire {
namespace {

bool SafeChar(char c) { return absl::ascii_isalnum(c) || c == '.' || c == '_' || c == '-'; }

}  // namespace

bool IsSafeName(absl::string_view value) {
  if (value.empty() || value.size() > kMaxSafeNameBytes) return false;
  if (value[0] == '.' || value[0] == '-') return false;
  for (char c : value) {
    if (!SafeChar(c)) return false;
  }
  return true;
}

std::string SafeNameError(absl::string_view value) {
  constexpr size_t kShown = 64;
  const std::string shown = value.size() > kShown
                                ? absl::StrCat(absl::CEscape(value.substr(0, kShown)), "...")
                                : absl::CEscape(value);
  return absl::StrFormat(
      "must be 1 to %d characters of [A-Za-z0-9._-], not starting with '.' or '-', got \"%s\" "
      "(%d bytes)",
      kMaxSafeNameBytes, shown, value.size());
}

absl::Status CheckSafeName(absl::string_view field, absl::string_view value) {
  if (IsSafeName(value)) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(field, " ", SafeNameError(value)));
}

}  // namespace cohort::wire
