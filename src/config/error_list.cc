#include "config/error_list.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

namespace cohort::config {

void ErrorList::Add(absl::string_view path, absl::string_view message) {
  errors_.push_back(path.empty() ? std::string(message) : absl::StrCat(path, ": ", message));
}

void ErrorList::AddWarning(absl::string_view path, absl::string_view message) {
  warnings_.push_back(path.empty() ? std::string(message) : absl::StrCat(path, ": ", message));
}

absl::Status ErrorList::ToStatus() const {
  if (errors_.empty()) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrJoin(errors_, "\n"));
}

std::vector<std::string> ConfigErrors(const absl::Status& status) {
  if (status.ok()) return {};
  return absl::StrSplit(status.message(), '\n', absl::SkipEmpty());
}

std::string JoinPath(absl::string_view parent, absl::string_view child) {
  if (parent.empty()) return std::string(child);
  if (!child.empty() && child[0] == '[') return absl::StrCat(parent, child);
  return absl::StrCat(parent, ".", child);
}

int EditDistance(absl::string_view a, absl::string_view b) {
  std::vector<int> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = static_cast<int>(j);
  for (size_t i = 1; i <= a.size(); ++i) {
    int diagonal = row[0];
    row[0] = static_cast<int>(i);
    for (size_t j = 1; j <= b.size(); ++j) {
      const int above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

std::string SuggestClosest(absl::string_view word, const std::vector<std::string>& candidates) {
  const int limit = std::max<int>(2, static_cast<int>(word.size()) / 3);
  std::string best;
  int best_distance = limit + 1;
  for (const std::string& candidate : candidates) {
    const int distance = EditDistance(word, candidate);
    if (distance < best_distance) {
      best_distance = distance;
      best = candidate;
    }
  }
  return best;
}

}  // namespace cohort::config
