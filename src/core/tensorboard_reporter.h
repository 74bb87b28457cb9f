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

#include <map>
#include <memory>
#include <string>

#include "cohort/core/reporter.h"
#include "tensorboard/event_writer.h"
#include "wire/storage_layout.h"

namespace cohort::core {

class TensorBoardReporter : public Reporter {
 public:
  // `inner` gets every report; `writer` (may be null: no TensorBoard) the metrics.
  TensorBoardReporter(std::unique_ptr<Reporter> inner,
                      std::unique_ptr<tensorboard::EventWriter> writer);
  ~TensorBoardReporter() override;

  absl::Status ReportMetrics(const std::string& kind, int64_t steps_completed,
                             const nlohmann::json& metrics) override;
  absl::Status ReportCheckpoint(const std::string& storage_id, const std::string& path,
                                const nlohmann::json& metadata) override {
    return inner_->ReportCheckpoint(storage_id, path, metadata);
  }
  absl::Status ReportProgress(const Progress& progress) override {
    return inner_->ReportProgress(progress);
  }
  absl::Status ReportCompleted(double searcher_metric, double length) override {
    return inner_->ReportCompleted(searcher_metric, length);
  }
  absl::Status ReportPreempted() override { return inner_->ReportPreempted(); }
  bool PreemptionRequested() override { return inner_->PreemptionRequested(); }

 private:
  std::unique_ptr<Reporter> inner_;
  std::unique_ptr<tensorboard::EventWriter> writer_;
};

// Where a trial's event files go: wire::TensorBoardDir (wire/storage_layout.h).
using wire::TensorBoardDir;

}  // namespace cohort::core
