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

absl::StatusOr<wire::LogsPage> TrialLogs::Read(int64_t trial_id, const LogQuery& query,
                                               int64_t after, absl::Duration wait) {
  if (!query.FiltersLines()) return Read(trial_id, query.rank, after, wait);
  COHORT_ASSIGN_OR_RETURN(const LineFilter filter, LineFilter::Create(query));
  wire::LogsPage page;
  page.next = after;
  COHORT_RETURN_IF_ERROR(follows_.FollowUntil(wait, [&](bool last) -> absl::StatusOr<bool> {
    COHORT_ASSIGN_OR_RETURN(TrialRow t, db_.GetTrial(trial_id));
    const bool ended = Ended(t.state);
    bool at_end = false;
    for (int scanned = 0; scanned < kScan && static_cast<int>(page.logs.size()) < kPage;) {
      COHORT_ASSIGN_OR_RETURN(std::vector<LogRow> rows,
                              db_.ListLogs(trial_id, page.next, query.rank, kPage));
      for (const LogRow& r : rows) {
        page.next = r.seq;
        if (filter.Matches(r)) {
          page.logs.push_back({r.seq, r.rank, r.line, static_cast<double>(r.time_ms) / 1000});
        }
      }
      scanned += static_cast<int>(rows.size());
      if (static_cast<int>(rows.size()) < kPage) {
        at_end = true;
        break;
      }
    }
    // Nothing matched yet and the trial goes on: a follow waits for new lines.
    if (page.logs.empty() && at_end && !ended && !last) return false;
    page.done = ended && at_end;
    page.state = t.state;
    return true;
  }));
  return page;
}

absl::StatusOr<wire::LogsPage> TrialLogs::Tail(int64_t trial_id, const LogQuery& query, int lines) {
  if (!query.FiltersLines()) return Tail(trial_id, query.rank, lines);
  COHORT_ASSIGN_OR_RETURN(const LineFilter filter, LineFilter::Create(query));
  COHORT_ASSIGN_OR_RETURN(TrialRow t, db_.GetTrial(trial_id));
  COHORT_ASSIGN_OR_RETURN(std::vector<LogRow> rows, db_.ListLastLogs(trial_id, kScan, query.rank));
  wire::LogsPage page;
  std::vector<const LogRow*> kept;
  for (const LogRow& r : rows) {
    if (filter.Matches(r)) kept.push_back(&r);
  }
  const size_t first = kept.size() > static_cast<size_t>(lines) ? kept.size() - lines : 0;
  for (size_t i = first; i < kept.size(); ++i) {
    const LogRow& r = *kept[i];
    page.logs.push_back({r.seq, r.rank, r.line, static_cast<double>(r.time_ms) / 1000});
  }
  // A follow goes on after every line scanned, matched or not.
  if (!rows.empty()) page.next = rows.back().seq;
  page.done = Ended(t.state);
  page.state = t.state;
  return page;
}

}  // namespace cohort::master::logs
