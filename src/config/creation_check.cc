#include "config/creation_check.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "config/asha.h"
#include "config/error_list.h"

namespace cohort::config {

absl::Status CheckRunnable(const ExperimentConfig& config) {
  ErrorList errors;
  if (config.checkpoint_storage) {
    const std::string& type = config.checkpoint_storage->type;
    if (type == "gcs" || type == "azure") {  // empty: the default
      errors.Add("checkpoint_storage.type",
                 absl::StrCat("checkpoint storage type ", type,
                              " is not supported by Cohort: use s3, shared_fs or directory"));
    }
  }
  const std::string& searcher = config.searcher.name;
  if (searcher != "single" && searcher != "random" && searcher != "grid" &&
      !HasRungs(config.searcher)) {
    errors.Add("searcher.name",
               absl::StrCat("the ", searcher,
                            " searcher is not supported by Cohort: use single, random, grid, "
                            "adaptive_asha or async_halving"));
  }
  if (HasRungs(config.searcher) && !config.searcher.max_length) {
    errors.Add("searcher.max_length",
               absl::StrCat("Cohort's ", searcher,
                            " needs its length: max_length, or max_time with time_metric "
                            "batches, records or epochs (its rungs are lengths)"));
  }
  return errors.ToStatus();
}

}  // namespace cohort::config
