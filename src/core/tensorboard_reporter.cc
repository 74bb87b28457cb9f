#include "core/tensorboard_reporter.h"

#include <filesystem>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "cohort/status.h"
#include "common/logging.h"
#include "wire/reports.h"

namespace cohort::core {
TensorBoardReporter::TensorBoardReporter(std::unique_ptr<Reporter> inner,
                                         std::unique_ptr<tensorboard::EventWriter> writer,
                                         Publisher publish)
    : inner_(std::move(inner)), writer_(std::move(writer)), publish_(std::move(publish)) {
  if (writer_ != nullptr) event_file_ = writer_->path();
}

TensorBoardReporter::~TensorBoardReporter() {
  if (writer_ == nullptr) return;
  if (absl::Status closed = writer_->Close(); !closed.ok()) {
    COHORT_LOG(WARNING) << "TensorBoard: " << closed;
  }
  Publish();
}

void TensorBoardReporter::Publish() {
  if (!publish_ || event_file_.empty()) return;
  if (writer_ != nullptr) (void)writer_->Flush();  // a closed writer's file is flushed already
  if (absl::Status published = publish_(event_file_); !published.ok()) {
    COHORT_LOG(WARNING) << "TensorBoard event files are no longer copied to the checkpoint "
                           "storage for this run: "
                        << published;
    publish_ = nullptr;
  }
}

absl::Status TensorBoardReporter::ReportMetrics(const std::string& kind, int64_t steps_completed,
                                                const nlohmann::json& metrics) {
  COHORT_RETURN_IF_ERROR(inner_->ReportMetrics(kind, steps_completed, metrics));
  if (writer_ == nullptr) return absl::OkStatus();
  const std::map<std::string, double> scalars = wire::MetricSeries(kind, metrics);
  if (scalars.empty()) return absl::OkStatus();
  absl::Status written = writer_->WriteScalars(scalars, steps_completed, absl::Now());
  if (!written.ok()) {
    COHORT_LOG(WARNING) << "TensorBoard event files are off for this run: " << written;
    writer_.reset();
  }
  return absl::OkStatus();
}

}  // namespace cohort::core
