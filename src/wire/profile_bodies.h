#pragma once
// The profiler's REST bodies (docs/observability.md, "Step timeline"):
//
// GET /api/v1/trials/{id}/profile/timings -> StepTimings: each rank's timing of each step
// phase over the profiled batches the master stored, plus "gradient_communication" (the
// communication thread's time per step on gradient buckets: compare with backward for overlap):
//   {"trial_id":3,"profiled_steps":400,
//    "ranks":[{"rank":0,"phases":[{"name":"backward","count":200,"mean_ms":22.9,
//                                  "min_ms":20.1,"max_ms":31.0}, ...]}, ...]}
// GET /api/v1/trials/{id}/profile/steps?rank=R&max_points=N -> StepSeries: one rank's
// milliseconds in each phase of each profiled batch (from the step timelines, per batch where
// the reported training/timings/* are means over a report window), every `stride`-th batch so
// that there are at most N; a phase a batch did not have is null:
//   {"trial_id":3,"rank":0,"stride":1,"batches":[1,2,3],
//    "phases":[{"name":"forward","ms":[21.1,20.9,null]}, ...]}
// GET /api/v1/trials/{id}/trace answers a Trace Event Format document (wire/trace_events.h),
// not a type of this folder: its readers are Perfetto and chrome://tracing.
// Thread-compatible value types; the functions are thread-safe.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"

namespace cohort::wire {

using Json = nlohmann::json;

inline constexpr char kGradientCommunicationPhase[] = "gradient_communication";

struct PhaseTiming {
  std::string name;
  int64_t count = 0;  // batches that had the phase
  double mean_ms = 0, min_ms = 0, max_ms = 0;
};

struct RankTimings {
  int rank = 0;
  std::vector<PhaseTiming> phases;  // by name
};

struct StepTimings {
  int64_t trial_id = 0;
  int64_t profiled_steps = 0;      // step timelines stored (all ranks)
  std::vector<RankTimings> ranks;  // by rank

  Json ToJson() const;
};
absl::StatusOr<StepTimings> ParseStepTimings(const Json& json);

struct PhaseSeries {
  std::string name;
  std::vector<std::optional<double>> ms;  // one per StepSeries::batches; nullopt: not in it
};

struct StepSeries {
  int64_t trial_id = 0;
  int rank = 0;
  int64_t stride = 1;               // every stride-th batch (1: every profiled batch)
  std::vector<int64_t> batches;     // increasing
  std::vector<PhaseSeries> phases;  // in the order they first appear

  Json ToJson() const;
};
// InvalidArgument naming the field; also when a phase's ms and the batches differ in length.
absl::StatusOr<StepSeries> ParseStepSeries(const Json& json);

}  // namespace cohort::wire
