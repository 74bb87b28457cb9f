#pragma once
// ErrorList collects every problem found in a config ("path: rule" lines) so that all of them are
// reported at once, and the warnings beside them ("path: why it is ignored" lines: fields that
// are valid but that Cohort does not act on); plus the did-you-mean helper used for unknown
// fields and enum values.
// Thread-compatible: one ErrorList per validation pass.
//
// Example:
//   ErrorList errors;
//   errors.Add("resources.slots_per_trial", "must be >= 1, got -2");
//   return errors.ToStatus();  // InvalidArgument, one error per line

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace cohort::config {

class ErrorList {
 public:
  // Records "<path>: <message>". An empty path records the message alone.
  void Add(absl::string_view path, absl::string_view message);

  // Records the warning "<path>: <message>" (the config stays valid).
  void AddWarning(absl::string_view path, absl::string_view message);

  bool empty() const { return errors_.empty(); }
  const std::vector<std::string>& errors() const { return errors_; }
  const std::vector<std::string>& warnings() const { return warnings_; }

  // OK when empty; otherwise InvalidArgument whose message is every error on its own line, in
  // the order they were added.
  absl::Status ToStatus() const;

 private:
  std::vector<std::string> errors_;
  std::vector<std::string> warnings_;
};

// The individual errors of a status made by ErrorList::ToStatus (its message split into lines).
// OK: empty.
std::vector<std::string> ConfigErrors(const absl::Status& status);

// Joins a field path: JoinPath("resources", "devices[0]") == "resources.devices[0]";
// JoinPath("", "name") == "name".
std::string JoinPath(absl::string_view parent, absl::string_view child);

// Levenshtein distance (insertions, deletions, substitutions), case-sensitive.
int EditDistance(absl::string_view a, absl::string_view b);

// The candidate closest to `word` when it is close enough to be a likely typo (distance at most
// max(2, |word| / 3)); ties go to the earlier candidate. Empty when none is close.
std::string SuggestClosest(absl::string_view word, const std::vector<std::string>& candidates);

}  // namespace cohort::config
