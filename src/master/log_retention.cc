#include "master/log_retention.h"

#include <algorithm>
#include <vector>

#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "cohort/status.h"
#include "common/logging.h"

namespace cohort::master {
namespace {

std::string TrialReason(const LogRetentionPolicy& policy) {
  return absl::StrFormat(
      "a trial's log keeps its first %d and its newest %d lines "
      "(cohort-master --log-retention-lines-per-trial %d)",
      policy.lines_per_trial / 10, policy.lines_per_trial - policy.lines_per_trial / 10,
      policy.lines_per_trial);
}

// "4.0 GiB", "512.0 MiB", "15000 bytes".
std::string Size(int64_t bytes) {
  if (bytes >= (int64_t{1} << 30)) return absl::StrFormat("%.1f GiB", bytes / double{1 << 30});
  if (bytes >= (int64_t{1} << 20)) return absl::StrFormat("%.1f MiB", bytes / double{1 << 20});
  return absl::StrFormat("%d bytes", bytes);
}

std::string TotalReason(const LogRetentionPolicy& policy) {
  return absl::StrFormat(
      "the master keeps at most %s of log text, dropping the oldest trials' logs first "
      "(cohort-master --log-retention-total-bytes %d)",
      Size(policy.total_bytes), policy.total_bytes);
}

}  // namespace

LogRetention::LogRetention(Database& db, LogRetentionPolicy policy)
    : db_(db),
      policy_(policy),
      trial_reason_(TrialReason(policy)),
      total_reason_(TotalReason(policy)) {}

LogRetention::~LogRetention() { Stop(); }

absl::StatusOr<int64_t> LogRetention::TrimOnce() {
  COHORT_ASSIGN_OR_RETURN(std::vector<LogStatsRow> stats, db_.ListLogStats());
  int64_t dropped = 0;
  if (policy_.lines_per_trial > 0) {
    for (const LogStatsRow& trial : stats) {
      if (trial.lines <= policy_.lines_per_trial) continue;
      const int64_t excess = std::min(trial.lines - policy_.lines_per_trial, kBatchLines);
      COHORT_ASSIGN_OR_RETURN(dropped,
                              db_.DropLogLines(trial.trial_id, KeepFirst(), excess, trial_reason_));
      if (dropped > 0) break;
    }
  }
  int64_t total = 0;
  for (const LogStatsRow& trial : stats) total += trial.bytes;
  // The newest trial with lines is left to the per-trial limit.
  auto newest = std::find_if(stats.rbegin(), stats.rend(),
                             [](const LogStatsRow& trial) { return trial.lines > 0; });
  if (dropped == 0 && policy_.total_bytes > 0 && total > policy_.total_bytes &&
      newest != stats.rend()) {
    for (const LogStatsRow& trial : stats) {
      if (trial.trial_id == newest->trial_id) break;
      if (trial.lines == 0) continue;
      // As many lines as the excess takes at this trial's mean line size (at least one).
      const int64_t mean = std::max<int64_t>(1, trial.bytes / trial.lines);
      const int64_t excess = total - policy_.total_bytes;
      const int64_t lines =
          std::clamp<int64_t>((excess + mean - 1) / mean, 1, std::min(trial.lines, kBatchLines));
      COHORT_ASSIGN_OR_RETURN(dropped, db_.DropLogLines(trial.trial_id, 0, lines, total_reason_));
      break;
    }
  }
  MutexLock lock(&mu_);
  lines_dropped_ += dropped;
  return dropped;
}

absl::StatusOr<int64_t> LogRetention::Trim() {
  int64_t dropped = 0;
  while (!Stopping()) {
    COHORT_ASSIGN_OR_RETURN(int64_t batch, TrimOnce());
    if (batch == 0) break;
    dropped += batch;
  }
  return dropped;
}

void LogRetention::Start(absl::Duration period) {
  MutexLock lock(&mu_);
  if (thread_.joinable() || stopping_) return;
  thread_ = std::thread([this, period] { Run(period); });
}

void LogRetention::Stop() {
  {
    MutexLock lock(&mu_);
    stopping_ = true;
  }
  wake_.SignalAll();
  if (thread_.joinable()) thread_.join();
}

int64_t LogRetention::lines_dropped() const {
  MutexLock lock(&mu_);
  return lines_dropped_;
}

bool LogRetention::Stopping() {
  MutexLock lock(&mu_);
  return stopping_;
}

void LogRetention::Run(absl::Duration period) {
  while (!Stopping()) {
    absl::StatusOr<int64_t> dropped = Trim();
    if (!dropped.ok()) {
      COHORT_LOG(ERROR) << "log retention: " << dropped.status();
    }
    const absl::Time deadline = absl::Now() + period;
    MutexLock lock(&mu_);
    bool timed_out = false;
    while (!stopping_ && !timed_out) timed_out = wake_.WaitWithDeadline(&mu_, deadline);
  }
}

}  // namespace cohort::master
