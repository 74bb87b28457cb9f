// Master::StoreOutputs: an agent's allocations' output (its combined post, or one allocation's
// own post) in three steps whatever the number of items. At 200 agents a combined post of ~8
// items took the master's lock ~30 times and made ~18 commits; now it takes the lock twice
// and makes one commit for every item's lines, metrics and trial rows, none under the lock.
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/logging.h"
#include "master/master.h"

namespace cohort::master {

namespace {

// An item's parts in the order its own posts would come (the token first).
enum class Part { kToken, kLogs, kReports, kExit };

// wire::OutputResult's names of the parts ("" for the token).
const char* PartName(Part part) {
  switch (part) {
    case Part::kToken:
      return "";
    case Part::kLogs:
      return "logs";
    case Part::kReports:
      return "reports";
    case Part::kExit:
      return "exit";
  }
  return "";
}

}  // namespace

// One item on its way through StoreOutputs. Each part still to do is set; the first failure
// is kept (`stored.part` names it) and clears its part and every part after it.
struct Master::OutputWork {
  const OutputParts* parts = nullptr;
  OutputStored stored;
  bool logs = false, reports = false, exit = false;
  absl::StatusOr<LogPolicyContext> policies;
  std::vector<wire::LogPolicyMatch> found;  // the log policies' new matches in its lines
  ReportChanges changes;
  std::optional<TrialRow> trial;  // its row as its report left it (reports stored)
  bool stored_points = false;

  void Fail(Part part, absl::Status status) {
    stored = {std::move(status), PartName(part)};
    logs = logs && part > Part::kLogs;
    reports = reports && part > Part::kReports;
    exit = false;
  }
};

std::vector<Master::OutputStored> Master::StoreOutputs(const std::vector<OutputParts>& items) {
  std::vector<OutputWork> work(items.size());
  {
    MutexLock lock(&mu_);
    for (size_t i = 0; i < items.size(); ++i) CheckOutputLocked(items[i], work[i]);
  }
  std::vector<OutputRows> rows(items.size());
  bool any_rows = false;
  for (size_t i = 0; i < items.size(); ++i) {
    if (work[i].reports) rows[i] = RowsOfReports(*items[i].reports, &work[i].changes);
    if (work[i].logs) {
      rows[i].trial_id = items[i].logs->trial_id;
      for (const wire::LogLine& l : items[i].logs->lines)
        rows[i].lines.emplace_back(l.rank, l.line);
    }
    any_rows |= !rows[i].lines.empty() || rows[i].reports;
  }
  if (any_rows) {
    const std::vector<OutputRowsWritten> written = db_->WriteOutputs(rows);
    for (size_t i = 0; i < items.size(); ++i) StoredOutput(rows[i], written[i], work[i]);
    follows_.Notify();
  }
  std::vector<OutputStored> stored;
  stored.reserve(items.size());
  {
    MutexLock lock(&mu_);
    for (OutputWork& w : work) {
      FinishOutputLocked(w);
      stored.push_back(std::move(w.stored));
    }
  }
  return stored;
}

void Master::CheckOutputLocked(const OutputParts& parts, OutputWork& w) {
  w.parts = &parts;
  w.logs = parts.logs != nullptr;
  w.reports = parts.reports != nullptr;
  w.exit = parts.exit != nullptr;
  if (parts.token != nullptr) {
    absl::Status s = CheckAllocationTokenLocked(parts.allocation, *parts.token);
    if (absl::IsUnauthenticated(s)) {
      s = absl::UnauthenticatedError(absl::StrCat("output of allocation ", parts.allocation,
                                                  " without its token (the agent's start "
                                                  "action's)"));
    }
    if (!s.ok()) return w.Fail(Part::kToken, std::move(s));
  }
  if (w.logs) {
    if (absl::Status s = CheckLogsLocked(parts.allocation, *parts.logs, &w.policies); !s.ok()) {
      return w.Fail(Part::kLogs, std::move(s));
    }
  }
  if (w.reports) {
    if (absl::Status s = CheckReportsLocked(parts.allocation, *parts.reports); !s.ok()) {
      w.Fail(Part::kReports, std::move(s));  // its lines, checked, are still stored
    }
  }
}

void Master::StoredOutput(const OutputRows& rows, const OutputRowsWritten& written, OutputWork& w) {
  if (w.logs && !written.logs.ok()) w.Fail(Part::kLogs, written.logs);
  if (w.logs) {
    log_lines_stored_ += static_cast<int64_t>(w.parts->logs->lines.size());
    if (w.policies.ok()) w.found = MatchLogPolicies(*std::move(w.policies), *w.parts->logs);
    if (!w.policies.ok()) {
      COHORT_LOG(ERROR) << TrialName(w.parts->logs->trial_id)
                        << ": log policies: " << w.policies.status();
    }
  }
  if (w.reports && !written.reports.ok()) w.Fail(Part::kReports, written.reports);
  if (w.reports) {
    metric_reports_stored_ += static_cast<int64_t>(rows.metrics.size());
    w.stored_points = !rows.points.empty();
    w.trial = written.trial;
  }
}

void Master::FinishOutputLocked(OutputWork& w) {
  const OutputParts& parts = *w.parts;
  if (w.logs) {
    absl::Status s = LogsStoredLocked(parts.allocation, *parts.logs, std::move(w.found));
    if (!s.ok()) w.Fail(Part::kLogs, std::move(s));
  }
  if (w.reports && !w.trial) {  // cannot be: WriteOutputs returns the row of a part it stored
    w.Fail(Part::kReports, absl::InternalError("the report's trial row did not come back"));
  }
  if (w.reports) {
    absl::Status s =
        ReportsStoredLocked(parts.allocation, *parts.reports, w.changes, *w.trial, w.stored_points);
    if (!s.ok()) w.Fail(Part::kReports, std::move(s));
  }
  if (w.exit) {
    absl::Status s = AllocationExitLocked(parts.allocation, *parts.exit);
    if (!s.ok()) w.Fail(Part::kExit, std::move(s));
  }
}

}  // namespace cohort::master
