#include "wire/storage_layout.h"

#include <filesystem>

#include "absl/strings/str_cat.h"

namespace cohort::wire {

std::string TensorBoardRelativeDir(const std::string& trial_id) {
  return absl::StrCat("tensorboard/", trial_id.empty() ? "trial_local" : "trial_" + trial_id);
}

std::string TensorBoardDir(const std::string& storage_dir, const std::string& trial_id) {
  return (std::filesystem::path(storage_dir) / TensorBoardRelativeDir(trial_id)).string();
}

}  // namespace cohort::wire
