#include "master/storage/s3_storage.h"

#include <stdlib.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "cohort/status.h"

namespace cohort::master::storage {

absl::StatusOr<CheckpointListing> S3Storage::Open(const std::string& id, int64_t max_entries) {
  COHORT_RETURN_IF_ERROR(checkpoints_.CheckId(id));
  COHORT_ASSIGN_OR_RETURN(std::vector<objstore::S3Checkpoints::Entry> entries,
                          checkpoints_.Manifest(id, max_entries));
  std::string dir = (std::filesystem::temp_directory_path() / "cohort-s3-XXXXXX").string();
  if (::mkdtemp(dir.data()) == nullptr) {
    return absl::UnavailableError(
        absl::StrCat("a temporary directory for checkpoint ", id, ": ", std::strerror(errno)));
  }
  // Removed with the last copy of the listing.
  std::shared_ptr<const void> keep(new std::string(dir), [](const void* p) {
    const auto* path = static_cast<const std::string*>(p);
    std::error_code ignored;
    std::filesystem::remove_all(*path, ignored);
    delete path;
  });
  COHORT_RETURN_IF_ERROR(checkpoints_.Fetch(id, dir));
  CheckpointListing listing{.id = id, .local_dir = dir, .keep = std::move(keep)};
  for (const objstore::S3Checkpoints::Entry& e : entries) {
    listing.entries.push_back(e.path);
    listing.bytes += e.bytes;
  }
  return listing;
}

}  // namespace cohort::master::storage
