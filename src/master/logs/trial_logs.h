#pragma once
// TrialLogs: what the master serves of a trial's log (`cohort trial logs`, the web interface):
// pages of lines after a point, of one rank or all, followed as they arrive through the
// FollowGate, and the last lines (`--tail N`). A page says when the trial has ended and every
// line was returned ("done"), so a follower knows to stop.
//
// Reads only (the output path stores the lines); thread-safe: no state beyond the Database and
// the FollowGate; never needs the master's lock.

#include <cstdint>
#include <optional>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "master/db/database.h"
#include "master/logs/line_filter.h"
#include "master/series/follow_gate.h"
#include "wire/trial_bodies.h"

namespace cohort::master::logs {

class TrialLogs {
 public:
  // At most this many lines a page.
  static constexpr int kPage = 1000;

  TrialLogs(Database& db, series::FollowGate& follows) : db_(db), follows_(follows) {}

  // Lines after `after` (of one rank when given), at most kPage; waits up to `wait` for new
  // ones (a follow: at once when max_log_followers already wait). NotFound for an unknown
  // trial.
  absl::StatusOr<wire::LogsPage> Read(int64_t trial_id, std::optional<int> rank, int64_t after,
                                      absl::Duration wait);
  // The trial's last `lines` lines (of one rank when given), oldest first, as a page whose
  // `next` continues after them (`cohort trial logs --tail N [--follow]`); at once, no wait.
  absl::StatusOr<wire::LogsPage> Tail(int64_t trial_id, std::optional<int> rank, int lines);

  // As above, of the lines `query` keeps (line_filter.h; InvalidArgument for a bad query). A
  // filtered read scans at most kScan lines a call: a page may hold fewer lines than kPage, or
  // none, with `next` after the last line scanned, so a reader goes on from there until a page
  // scans nothing new. A filtered tail keeps the matches among the last kScan lines.
  static constexpr int kScan = 20 * kPage;
  absl::StatusOr<wire::LogsPage> Read(int64_t trial_id, const LogQuery& query, int64_t after,
                                      absl::Duration wait);
  absl::StatusOr<wire::LogsPage> Tail(int64_t trial_id, const LogQuery& query, int lines);

 private:
  Database& db_;
  series::FollowGate& follows_;
};

}  // namespace cohort::master::logs
