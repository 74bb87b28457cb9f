#pragma once
// TensorBoardReporter: a Reporter that passes every report on to another one (the run's real
// reporter) and also writes the training and validation metrics as TensorBoard scalars
// (tensorboard/event_writer.h), so `tensorboard --logdir STORAGE/tensorboard` shows a trial's
// curves. Tags are the metric series names of wire::MetricSeries (wire/reports.h), as the
// master's time series: {"loss": 0.3, "acc": {"top1": 0.9}} at kind "validation" becomes
// "validation/loss" and "validation/acc/top1"; values that are not numbers are left out.
// TensorBoard is a view: a failed write is logged once and turns the view off; it never fails
// the report (metrics.jsonl and the master keep the record).
// Thread-compatible, like every Reporter (the chief's training thread).

#include <functional>
#include <map>
#include <memory>
#include <string>

#include "cohort/core/reporter.h"
#include "cohort/status.h"
#include "tensorboard/event_writer.h"
#include "wire/storage_layout.h"

namespace cohort::core {

class TensorBoardReporter : public Reporter {
 public:
  // Copies the event file (its path) to where the checkpoints are, for a storage that is not
  // the local directory (an object store): called after each checkpoint, when the run
  // completes or is preempted, and when the reporter closes the file.
  using Publisher = std::function<absl::Status(const std::string& event_file)>;

  // `inner` gets every report; `writer` (may be null: no TensorBoard) the metrics; `publish`
  // (may be empty) copies the event file out.
  TensorBoardReporter(std::unique_ptr<Reporter> inner,
                      std::unique_ptr<tensorboard::EventWriter> writer, Publisher publish = {});
  ~TensorBoardReporter() override;

  absl::Status ReportMetrics(const std::string& kind, int64_t steps_completed,
                             const nlohmann::json& metrics) override;
  absl::Status ReportCheckpoint(const std::string& storage_id, const std::string& path,
                                const nlohmann::json& metadata) override {
    COHORT_RETURN_IF_ERROR(inner_->ReportCheckpoint(storage_id, path, metadata));
    Publish();
    return absl::OkStatus();
  }
  absl::Status ReportProgress(const Progress& progress) override {
    return inner_->ReportProgress(progress);
  }
  absl::Status ReportCompleted(double searcher_metric, double length) override {
    COHORT_RETURN_IF_ERROR(inner_->ReportCompleted(searcher_metric, length));
    Publish();
    return absl::OkStatus();
  }
  absl::Status ReportPreempted() override {
    COHORT_RETURN_IF_ERROR(inner_->ReportPreempted());
    Publish();
    return absl::OkStatus();
  }
  bool PreemptionRequested() override { return inner_->PreemptionRequested(); }

 private:
  // Copies the event file out (flushed first); a failure is logged once and turns publishing
  // off: TensorBoard is a view, it never fails a report.
  void Publish();

  std::unique_ptr<Reporter> inner_;
  std::unique_ptr<tensorboard::EventWriter> writer_;
  Publisher publish_;
  std::string event_file_;  // the writer's, kept for the publish after Close
};

// Where a trial's event files go: wire::TensorBoardDir (wire/storage_layout.h).
using wire::TensorBoardDir;

}  // namespace cohort::core
