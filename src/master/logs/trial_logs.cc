#include "master/logs/trial_logs.h"

#include <vector>

#include "cohort/status.h"
#include "wire/states.h"

namespace cohort::master::logs {
namespace {

// A trial whose log takes no more lines (until it is activated again).
bool Ended(wire::TrialState state) {
  return wire::IsTerminal(state) || state == wire::TrialState::kPaused ||
         state == wire::TrialState::kStopped;
}

}  // namespace

absl::StatusOr<wire::LogsPage> TrialLogs::Read(int64_t trial_id, std::optional<int> rank,
                                               int64_t after, absl::Duration wait) {
  wire::LogsPage page;
  COHORT_RETURN_IF_ERROR(follows_.FollowUntil(wait, [&](bool last) -> absl::StatusOr<bool> {
    COHORT_ASSIGN_OR_RETURN(TrialRow t, db_.GetTrial(trial_id));
    COHORT_ASSIGN_OR_RETURN(std::vector<LogRow> rows, db_.ListLogs(trial_id, after, rank, kPage));
    const bool ended = Ended(t.state);
    if (rows.empty() && !ended && !last) return false;
    page.next = after;
    for (const LogRow& r : rows) {
      page.logs.push_back({r.seq, r.rank, r.line, static_cast<double>(r.time_ms) / 1000});
      page.next = r.seq;
    }
    page.done = ended && static_cast<int>(rows.size()) < kPage;
    page.state = t.state;
    return true;
  }));
  return page;
}

absl::StatusOr<wire::LogsPage> TrialLogs::Tail(int64_t trial_id, std::optional<int> rank,
                                               int lines) {
  COHORT_ASSIGN_OR_RETURN(TrialRow t, db_.GetTrial(trial_id));
  COHORT_ASSIGN_OR_RETURN(std::vector<LogRow> rows, db_.ListLastLogs(trial_id, lines, rank));
  wire::LogsPage page;
  for (const LogRow& r : rows) {
    page.logs.push_back({r.seq, r.rank, r.line, static_cast<double>(r.time_ms) / 1000});
  }
  // Lines of other ranks after the last one shown are skipped by a follow from here too.
  if (!rows.empty()) page.next = rows.back().seq;
  page.done = Ended(t.state);
  page.state = t.state;
  return page;
}

}  // namespace cohort::master::logs
