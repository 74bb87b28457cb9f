#include "wire/storage_layout.h"

#include <filesystem>

#include "absl/strings/str_cat.h"

namespace cohort::wire {

std::string TensorBoardDir(const std::string& storage_dir, const std::string& trial_id) {
  return (std::filesystem::path(storage_dir) / "tensorboard" /
          (trial_id.empty() ? "trial_local" : absl::StrCat("trial_", trial_id)))
      .string();
}

}  // namespace cohort::wire
