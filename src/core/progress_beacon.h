#pragma once
// ProgressBeacon: this worker's progress beats (wire/progress_beat.h), for its agent to tell a
// rank that makes no progress: a reported step and every collective of the DistributedContext
// (before: "in allgather #N", after: "after allgather #N") replace RUN_DIR/progress/rank-<R>.json
// (written aside, then renamed: a reader never sees half a beat). Steps and returns from
// collectives are written at most once per kMinInterval; entering a collective always is, so a
// rank blocked in one names it. A write that fails is said once on
// stderr and does not fail the trial (the beats are advice to the agent).
// Thread-safe.

#include <cstdint>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/time/time.h"
#include "common/mutex.h"
#include "wire/progress_beat.h"

namespace cohort::core {

class ProgressBeacon {
 public:
  static constexpr absl::Duration kMinInterval = absl::Milliseconds(50);

  ProgressBeacon(std::string run_dir, int rank);

  void Step(int64_t batch) ABSL_LOCKS_EXCLUDED(mu_);
  void EnterCollective(const char* name) ABSL_LOCKS_EXCLUDED(mu_);
  void LeaveCollective(const char* name) ABSL_LOCKS_EXCLUDED(mu_);

 private:
  void BeatLocked(std::string phase, bool important) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const std::string path_, tmp_;
  Mutex mu_;  // also one write of the beat's file (tmp_, then the rename) at a time
  wire::ProgressBeat beat_ ABSL_GUARDED_BY(mu_);
  int64_t collectives_ ABSL_GUARDED_BY(mu_) = 0;
  absl::Time last_write_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
  bool warned_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace cohort::core
