#pragma once
// Reporter: where the chief's reports of a run go. The Core API's train, checkpoint, searcher
// and preempt contexts speak only to this interface, so a trial runs unchanged off-cluster
// (LocalReporter: files in the run directory) and, later, under a master (a REST reporter).
//
// Only the chief (rank 0) holds a Reporter; the contexts refuse reports from other ranks.
// Implementations are used from the training thread only (thread-compatible).

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "nlohmann/json.hpp"

namespace cohort::core {

struct Progress {
  double completed = 0;  // in `unit`s of the searcher operation
  double total = 0;
  std::string unit;  // "batches", "records" or "epochs"
};

class Reporter {
 public:
  virtual ~Reporter() = default;
  // kind: "training" or "validation". metrics: a JSON object of numbers (or nested objects).
  virtual absl::Status ReportMetrics(const std::string& kind, int64_t steps_completed,
                                     const nlohmann::json& metrics) = 0;
  // A checkpoint that is complete in storage.
  virtual absl::Status ReportCheckpoint(const std::string& storage_id, const std::string& path,
                                        const nlohmann::json& metadata) = 0;
  virtual absl::Status ReportProgress(const Progress& progress) = 0;
  // The searcher operation of `length` units finished with `searcher_metric` (the config's
  // searcher.metric).
  virtual absl::Status ReportCompleted(double searcher_metric, double length) = 0;
  // The workers agreed to stop early (preemption); the latest checkpoint will resume the run.
  virtual absl::Status ReportPreempted() = 0;
  // True once something outside the workers (a signal, the master) asked the run to stop.
  virtual bool PreemptionRequested() = 0;
};

}  // namespace cohort::core
