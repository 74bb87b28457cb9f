#include "config/length.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace cohort::config {

absl::StatusOr<int64_t> LengthInBatches(const Length& length, const ExperimentConfig& config,
                                        const std::string& field) {
  return LengthInBatches(length, config, config.global_batch_size, field);
}

absl::StatusOr<int64_t> LengthInBatches(const Length& length, const ExperimentConfig& config,
                                        int64_t global_batch_size, const std::string& field) {
  const int64_t batch = std::max<int64_t>(1, global_batch_size);
  switch (length.unit) {
    case Length::Unit::kBatches:
      return length.value;
    case Length::Unit::kRecords:
      return std::max<int64_t>(1, length.value / batch);
    case Length::Unit::kEpochs:
      if (config.records_per_epoch <= 0) {
        return absl::InvalidArgumentError(
            absl::StrCat(field, " is in epochs: set records_per_epoch"));
      }
      return std::max<int64_t>(1, length.value * config.records_per_epoch / batch);
  }
  return absl::InternalError("unknown length unit");
}

int64_t TrialGlobalBatchSize(const ExperimentConfig& config, const Json& hparams) {
  if (config.global_batch_size > 0) return config.global_batch_size;
  if (!hparams.is_object()) return 0;
  auto it = hparams.find("global_batch_size");
  if (it == hparams.end() || !it->is_number_integer() || it->get<int64_t>() <= 0) return 0;
  return it->get<int64_t>();
}

const char* UnitName(Length::Unit unit) {
  switch (unit) {
    case Length::Unit::kBatches:
      return "batches";
    case Length::Unit::kRecords:
      return "records";
    case Length::Unit::kEpochs:
      return "epochs";
  }
  return "batches";
}

}  // namespace cohort::config
