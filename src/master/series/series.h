#pragma once
// Series: what the master serves of a trial's time series and step timelines
// (docs/observability.md): which series a trial has, their points by range and downsampled,
// followed as they arrive, one series across an experiment's trials (learning curves), each
// rank's timing per step phase and the trace of a batch range (Trace Event Format). And the pure
// rules the master applies when an agent's report arrives: which system metrics and step
// timelines fall inside the experiment's profiling window, and what is kept of them.
//
// Reads only: the rows are written in the master's output path (master_outputs.cc), which calls
// SystemPoints and StepProfiles below. Thread-safe: no state beyond the Database (thread-safe)
// and the FollowGate (its own lock); never needs the master's lock.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "cohort/config/experiment_config.h"
#include "master/db/database.h"
#include "master/series/follow_gate.h"
#include "nlohmann/json.hpp"
#include "wire/agent_protocol.h"
#include "wire/profile_bodies.h"
#include "wire/series_bodies.h"
#include "wire/trial_bodies.h"

namespace cohort::master::series {

// Which points of a trial's time series to read.
struct SeriesRequest {
  std::vector<std::string> names;  // at least one
  std::string label;               // empty: the metrics' own series
  std::optional<int64_t> min_batch, max_batch;
  std::optional<double> min_time, max_time;
  int max_points = 1000;  // per series, >= 4: downsampled past it
  int64_t after = 0;      // only points newer than this id (following)
};

// The trace of batches [min_batch, max_batch] defaults to the first profiled batch and the
// kTraceBatches after it, and holds at most kMaxTraceSteps timelines (the document says when it
// stops short).
inline constexpr int64_t kTraceBatches = 100;
inline constexpr int kMaxTraceSteps = 5000;
// A trial keeps at most this many step timelines (all ranks); later batches still count in the
// timings. About 1 KB each.
inline constexpr int64_t kMaxStepProfilesPerTrial = 50000;
// A rank's per-batch step series holds every profiled batch up to this many, then every n-th
// (an even sample) to stay under it: 5,000 batches of ~10 phases are ~300 KB of JSON per read
// and a few milliseconds for uPlot to draw, so the profiler tab can poll it; the route accepts
// up to kMaxStepSeriesPoints.
inline constexpr int kDefaultStepSeriesPoints = 5000;
inline constexpr int kMaxStepSeriesPoints = 20000;

class Series {
 public:
  Series(Database& db, FollowGate& follows) : db_(db), follows_(follows) {}

  // A page of the trial's metric rows (of one kind when given): at most `limit` rows after the
  // row `after` (0: from the first), with next_after set when more follow. NotFound for an
  // unknown trial; DataLoss for a stored row this master cannot read.
  absl::StatusOr<wire::MetricList> TrialMetrics(int64_t trial_id,
                                                std::optional<wire::MetricKind> kind, int64_t after,
                                                int limit);
  // The trial's series with their summaries; NotFound for an unknown trial.
  absl::StatusOr<wire::SeriesList> TrialSeries(int64_t trial_id);
  // The points of the requested series; with `wait`, waits that long for a point newer than
  // request.after (a follow through the FollowGate). InvalidArgument when no series is named.
  absl::StatusOr<wire::SeriesData> TrialSeriesData(int64_t trial_id, const SeriesRequest& request,
                                                   absl::Duration wait);
  // request.names[0] of every trial of the experiment, by trial id.
  absl::StatusOr<wire::ExperimentSeriesData> ExperimentSeries(int64_t experiment_id,
                                                              const SeriesRequest& request);
  // Each rank's timing per step phase over the profiled batches stored.
  absl::StatusOr<wire::StepTimings> TrialStepTimings(int64_t trial_id);
  // `rank`'s milliseconds per phase of each stored profiled batch (a phase that occurs twice in
  // a batch: summed), at most `max_points` (>= 1) batches: every one when the rank has that
  // few, else every stride-th. Empty for a rank without timelines; NotFound for an unknown
  // trial. Records this master cannot read any more are skipped.
  absl::StatusOr<wire::StepSeries> TrialStepSeries(int64_t trial_id, int rank, int max_points);
  // The trace of batches [min_batch, max_batch] as a Trace Event Format document
  // (wire/trace_events.h); defaults as kTraceBatches says.
  absl::StatusOr<nlohmann::json> TrialTrace(int64_t trial_id, std::optional<int64_t> min_batch,
                                            std::optional<int64_t> max_batch);

 private:
  absl::StatusOr<wire::SeriesData> ReadSeriesData(int64_t trial_id, const SeriesRequest& request);
  // The points of series `name`, or, when it has none and was renamed (free_memory), of its old
  // name (wire::OldSeriesName): a trial stored before the rename.
  absl::StatusOr<std::vector<PointRow>> PointsUnderEitherName(int64_t trial_id,
                                                              const std::string& name,
                                                              const SeriesRequest& request);

  Database& db_;
  FollowGate& follows_;
};

// Whether `batch` lies inside the profiling window.
bool InProfilingWindow(const config::Profiling& window, int64_t batch);

// The points of a node's system metrics to store for a trial at batch `batch`: none outside the
// profiling window; labelled by agent ("<agent>/<uuid>" for a GPU's).
std::vector<PointRow> SystemPoints(const config::Profiling& window, int64_t batch,
                                   const std::vector<wire::SystemMetricsRecord>& records);

// What is stored of a node's step timelines for a trial of `slots` ranks that has `stored`
// already: the rows (those of ranks the trial has, inside the window, up to
// kMaxStepProfilesPerTrial) and the timings they add (every kept record counts in these);
// `dropped` is how many were counted but not kept.
struct StepProfiles {
  std::vector<StepProfileRow> rows;
  std::vector<StepTimingRow> timings;
  int64_t dropped = 0;
};
StepProfiles SelectStepProfiles(const config::Profiling& window, int slots, int64_t stored,
                                const std::vector<wire::StepProfileRecord>& records);

}  // namespace cohort::master::series
