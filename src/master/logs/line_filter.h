#pragma once
// LineFilter: which of a trial's log lines a reader asked for (`cohort trial logs --level
// --grep --since --until`, filtered by the master): a rank, a level (as the web interface reads
// levels: "warning" keeps warnings and errors, "error" errors; by the words loggers write,
// glog's "E1124"/"W1124" prefixes, Python's "Traceback"), a text the line contains (ignoring
// case) and a time window on when the master stored the line. Pure; thread-safe after Create.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "master/db/database.h"

namespace re2 {
class RE2;
}

namespace cohort::master::logs {

struct LogQuery {
  std::optional<int> rank;
  std::string level;                // "", "warning" or "error"
  std::string grep;                 // a text the line contains, any case; empty: any line
  std::optional<int64_t> since_ms;  // stored at or after (unix ms)
  std::optional<int64_t> until_ms;  // stored before
  // Whether anything beyond the rank is asked (the database filters the rank itself).
  bool FiltersLines() const { return !level.empty() || !grep.empty() || since_ms || until_ms; }
};

class LineFilter {
 public:
  // InvalidArgument naming the field: an unknown level, a grep over 1 KiB, since after until.
  static absl::StatusOr<LineFilter> Create(const LogQuery& query);
  bool Matches(const LogRow& row) const;

 private:
  LogQuery query_;
  std::string grep_lower_;
  std::shared_ptr<const re2::RE2> level_;  // null: any level
};

}  // namespace cohort::master::logs
