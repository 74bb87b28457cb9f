#pragma once
// LocalReporter: the Reporter of a run without a master. Everything goes to the run directory:
//   metrics.jsonl   one wire::ReportRecord per line, appended and flushed as reported
//                   (training, validation, checkpoint, completed and preempted records; the
//                   format is in wire/reports.h)
//   progress.json   the latest wire::ProgressRecord, replaced atomically (rename) at most every
//                   `progress_interval` and always on the last report; read by
//                   `cohort experiment create --local` for its progress line and forwarded to
//                   the master by the agent
// Preemption is requested by SIGTERM to the process (the launcher forwards its own SIGTERM to
// every worker); see PreemptContext for how all workers agree.
// Thread-compatible (the training thread); the signal handler only sets a flag.

#include <chrono>
#include <fstream>
#include <string>

#include "absl/status/statusor.h"
#include "cohort/core/reporter.h"
#include "wire/reports.h"

namespace cohort::core {

class LocalReporter : public Reporter {
 public:
  // Creates `run_dir` if needed and opens metrics.jsonl for appending. handle_sigterm: install
  // the SIGTERM handler that requests preemption (once per process).
  static absl::StatusOr<std::unique_ptr<LocalReporter>> Create(const std::string& run_dir,
                                                               bool handle_sigterm);

  absl::Status ReportMetrics(const std::string& kind, int64_t steps_completed,
                             const nlohmann::json& metrics) override;
  absl::Status ReportCheckpoint(const std::string& storage_id, const std::string& path,
                                const nlohmann::json& metadata) override;
  absl::Status ReportProgress(const Progress& progress) override;
  absl::Status ReportCompleted(double searcher_metric, double length) override;
  absl::Status ReportPreempted() override;
  bool PreemptionRequested() override;

 private:
  explicit LocalReporter(std::string run_dir) : run_dir_(std::move(run_dir)) {}
  absl::Status Append(wire::ReportRecord record);
  absl::Status WriteProgress();

  std::string run_dir_;
  std::ofstream metrics_;
  wire::ProgressRecord progress_;
  std::chrono::steady_clock::time_point last_progress_write_{};
};

// Requests preemption of this process as SIGTERM would (for tests and embedding programs).
void RequestPreemption();
// Makes SIGTERM request preemption instead of ending the process (idempotent).
void InstallPreemptionSignalHandler();
// True once this process got SIGTERM (with the handler installed) or RequestPreemption.
bool PreemptionSignaled();

}  // namespace cohort::core
