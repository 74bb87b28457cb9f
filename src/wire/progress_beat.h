#pragma once
// ProgressBeat: how far one rank of a trial has got, for its agent to tell a rank that makes no
// progress (docs/reliability.md, "A rank that makes no progress"). Each worker that uses the
// Core API (and so the Trial API) replaces RUN_DIR/progress/rank-<R>.json with its latest beat
// (core's ProgressBeacon, at most a few times a second); the agent of its node reads them:
//
//   {"rank":1,"pid":4242,"batch":120,"phase":"in allgather #37","time":1764380000.5}
//
// `phase` says where the rank is: "step" (a reported step), "in <collective> #N" while in the
// trial's Nth collective, "after <collective> #N" once it returned. `time` is the unix time of
// the beat; a rank whose last beat is old has made no progress since. `pid` is the worker's,
// so the agent can tell a stopped process (SIGSTOP) from a blocked one.
// Parsers name the field; unknown fields are ignored. Thread-compatible value type; the
// functions are thread-safe.

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"

namespace cohort::wire {

struct ProgressBeat {
  int rank = 0;
  int pid = 0;
  int64_t batch = 0;   // the last step reported (0: none yet)
  std::string phase;   // at most 128 bytes
  double time = 0;     // unix seconds

  nlohmann::json ToJson() const;
};
absl::StatusOr<ProgressBeat> ParseProgressBeat(const nlohmann::json& json);

// RUN_DIR-relative: "progress/rank-<R>.json".
std::string ProgressBeatPath(int rank);

}  // namespace cohort::wire
