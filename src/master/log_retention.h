#pragma once
// LogRetention: keeps the trials' logs in the master's database within a policy, so that a
// trial printing without end cannot fill the disk. Lines are dropped in bounded batches
// (Database::DropLogLines: one transaction over a range of seqs, at most kBatchLines lines),
// from its own thread, never under the Master's lock; appends wait at most one batch.
//
// The policy (docs/reliability.md):
//  * per trial, at most lines_per_trial lines. Past it the trial keeps its first tenth (how it
//    started: the config, the first errors) and its newest nine tenths (where it is now, how it
//    ended); the lines in between are dropped, and one marker line in their place says how many
//    ("[cohort-master: N lines dropped here; ...]").
//  * in all, at most total_bytes of log text. Past it, whole trials' logs are dropped, the
//    oldest trial (lowest id) first, oldest line first, each leaving its marker; the newest
//    trial with lines is never dropped this way (the per-trial limit bounds it).
// Lines within both limits are never dropped. The limits are reached again within about a
// `period` of being passed (a flood may overshoot by what arrives meanwhile).
//
// Thread-safe. Example:
//   LogRetention retention(db, {.lines_per_trial = 1'000'000, .total_bytes = 4LL << 30});
//   retention.Start(absl::Seconds(1));  // Stop() or the destructor ends it

#include <cstdint>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/mutex.h"
#include "master/db/database.h"

namespace cohort::master {

struct LogRetentionPolicy {
  int64_t lines_per_trial = 1'000'000;     // 0: no limit
  int64_t total_bytes = int64_t{4} << 30;  // of log text; 0: no limit
};

class LogRetention {
 public:
  // The most lines one DropLogLines call drops: a few milliseconds of the database's lock.
  static constexpr int64_t kBatchLines = 5000;

  // `db` must outlive this.
  LogRetention(Database& db, LogRetentionPolicy policy);
  ~LogRetention();  // Stop()
  LogRetention(const LogRetention&) = delete;
  LogRetention& operator=(const LogRetention&) = delete;

  // One batch: drops at most kBatchLines lines of the first trial over the per-trial limit,
  // else of the oldest trial while the total is over its limit. Returns how many lines it
  // dropped: 0 when the logs are within the policy.
  absl::StatusOr<int64_t> TrimOnce();
  // TrimOnce until the logs are within the policy (or Stop); returns the lines dropped.
  absl::StatusOr<int64_t> Trim();

  // Runs Trim every `period` on a thread of its own until Stop. An error is logged and tried
  // again the next period.
  void Start(absl::Duration period);
  // Ends the thread, within one batch. Idempotent.
  void Stop() ABSL_LOCKS_EXCLUDED(mu_);

  // Lines dropped since this was made.
  int64_t lines_dropped() const ABSL_LOCKS_EXCLUDED(mu_);

  // How many of a trial's first lines the per-trial limit keeps (a tenth of it).
  int64_t KeepFirst() const { return policy_.lines_per_trial / 10; }

 private:
  void Run(absl::Duration period);
  bool Stopping() ABSL_LOCKS_EXCLUDED(mu_);

  Database& db_;
  const LogRetentionPolicy policy_;
  const std::string trial_reason_;  // the markers' reasons
  const std::string total_reason_;
  mutable Mutex mu_;
  CondVar wake_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  int64_t lines_dropped_ ABSL_GUARDED_BY(mu_) = 0;
  // Started by Start and joined by Stop, both called by the owner's thread, never at once.
  std::thread thread_;
};

}  // namespace cohort::master
