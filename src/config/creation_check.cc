#include "config/creation_check.h"

#include <string>

#include "absl/strings/str_cat.h"
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
      searcher != "adaptive_asha") {
    errors.Add("searcher.name",
               absl::StrCat("the ", searcher,
                            " searcher is not supported by Cohort: use single, random, grid or "
                            "adaptive_asha"));
  }
  if (searcher == "adaptive_asha" && !config.searcher.max_length) {
    errors.Add("searcher.max_length",
               "Cohort's adaptive_asha needs max_length (its rungs are lengths; time_metric and "
               "max_time are not supported)");
  }
  return errors.ToStatus();
}

}  // namespace cohort::config
