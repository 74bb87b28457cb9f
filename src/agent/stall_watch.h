#pragma once
// StallWatch: whether a node's ranks make progress, from their progress beats
// (wire/progress_beat.h) and their processes' states (docs/reliability.md, "A rank that makes
// no progress"). A trial makes no progress when a rank has waited in a collective, or a rank's
// process has been stopped (SIGSTOP, a debugger), for longer than the warning: a rank busy
// between beats keeps nobody waiting, so a slow step never is a stall. Its note names the rank
// the others wait for (a stopped one, else the one whose last beat is oldest outside a
// collective) and where the waiting ranks wait; past the deadline the run is to be failed.
// When every rank of the node waits in a collective, the rank they wait for runs on another node,
// and the note says so ("rank 0 waits in allgather #22 for 62 s (for a rank on another node)");
// that node's agent names it. Pure: the caller reads the beats and the states.
// Thread-compatible.
//
// Example:
//   StallVerdict v = JudgeProgress(ranks, absl::Now(), absl::Minutes(10));
//   if (v.fail) control->Stop(wire::StopMode::kKill, grace);

#include <string>
#include <vector>

#include "absl/time/time.h"
#include "wire/progress_beat.h"

namespace cohort::agent {

struct RankState {
  wire::ProgressBeat beat;
  bool stopped = false;  // its process is stopped ('T' in /proc/PID/stat)
};

struct StallVerdict {
  std::string note;   // "rank 1 has made no progress for 62 s (...)"; empty: no stall
  bool fail = false;  // waited past the deadline: stop the run
};

// The warning shows after min(60 s, deadline / 2) of waiting; the run fails after `deadline`.
StallVerdict JudgeProgress(const std::vector<RankState>& ranks, absl::Time now,
                           absl::Duration deadline);

}  // namespace cohort::agent
