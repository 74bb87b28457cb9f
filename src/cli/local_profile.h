#pragma once
// A local run's profile (`cohort experiment create --local`, `cohort trial profile --run-dir
// DIR`): the step timelines its ranks wrote to DIR/profile/rank-<R>.jsonl (one
// wire::StepProfileRecord a line, runtime/step_profiler.h), summed up as the master serves a
// cluster trial's (wire::StepTimings) and kept for a trace (wire::TraceEvents); and the
// machine's system metrics, which LocalSystemSampler writes to DIR/profile/system.jsonl while a
// profiled run's batch is inside its window (one wire::SystemMetricsRecord a second, with its
// "batch"), summed up per series as the master's series list is. Files are untrusted: a line
// that does not parse is counted and skipped, a line longer than 1 MiB likewise, and at most
// kMaxLocalRecords records are read (the rest counted as cut).
// ReadLocalProfile is thread-safe; LocalSystemSampler as its comment says.
//
// Example:
//   COHORT_ASSIGN_OR_RETURN(LocalProfile p, ReadLocalProfile("cohort-runs/x/trial-1", {}, {}));
//   PrintTimings(p.timings);

#include <atomic>
#include <cstdint>
#include <fstream>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "cohort/config/experiment_config.h"
#include "sampler/system_sampler.h"
#include "wire/profile_bodies.h"
#include "wire/series_bodies.h"
#include "wire/step_profile.h"

namespace cohort::cli {

inline constexpr int64_t kMaxLocalRecords = 200000;

struct LocalProfile {
  wire::StepTimings timings;  // every record read, per rank and phase
  wire::SeriesList system;    // system.jsonl's series (label "local", a GPU's: its uuid)
  std::vector<wire::StepProfileRecord> records;  // those in [from_batch, to_batch]
  int64_t skipped_lines = 0;                     // lines that did not parse
  bool truncated = false;                        // more than kMaxLocalRecords records
};

// NotFound naming the directory when it holds no profile/rank-*.jsonl (saying how to profile a
// run); Unavailable when a file cannot be read.
absl::StatusOr<LocalProfile> ReadLocalProfile(const std::string& run_dir,
                                              std::optional<int64_t> from_batch,
                                              std::optional<int64_t> to_batch);

// What a profiled local run samples: sampler::SystemSampler's records, appended to
// RUN_DIR/profile/system.jsonl while SetBatch's batch is inside the profiling window (as the
// agent samples a cluster trial). Start returns nullptr when profiling is off, or, saying why on
// `err`, when the file or the sampler cannot start. The destructor stops it (within a sample).
// SetBatch may be called from any thread; the rest from one.
class LocalSystemSampler {
 public:
  static std::unique_ptr<LocalSystemSampler> Start(const std::string& run_dir,
                                                   const config::Profiling& profiling,
                                                   std::ostream& err);
  ~LocalSystemSampler();
  void SetBatch(int64_t batch) { batch_.store(batch); }

 private:
  explicit LocalSystemSampler(config::Profiling window) : window_(window) {}
  void Write(const sampler::SystemMetrics& m);

  const config::Profiling window_;
  std::atomic<int64_t> batch_{0};
  std::ofstream out_;  // the sampler's thread only
  std::unique_ptr<sampler::SystemSampler> sampler_;
};

}  // namespace cohort::cli
