#include "core/s3_checkpoint_remote.h"

#include "absl/strings/str_cat.h"
#include "cohort/status.h"
#include "objstore/s3_checkpoints.h"
#include "objstore/s3_credentials.h"

namespace cohort::core {
namespace {

class S3CheckpointRemote final : public CheckpointRemote {
 public:
  explicit S3CheckpointRemote(objstore::S3Checkpoints checkpoints)
      : checkpoints_(std::move(checkpoints)) {}

  std::string Describe() const override { return checkpoints_.Describe(); }
  std::string Location(const std::string& storage_id) const override {
    return checkpoints_.Location(storage_id);
  }
  absl::Status Store(const std::string& storage_id, const std::string& from_dir) override {
    return checkpoints_.Store(storage_id, from_dir);
  }
  absl::Status Fetch(const std::string& storage_id, const std::string& into_dir) override {
    return checkpoints_.Fetch(storage_id, into_dir);
  }
  absl::Status PublishFile(const std::string& path, const std::string& relative) override {
    return checkpoints_.PutFile(relative, path);
  }

 private:
  mutable objstore::S3Checkpoints checkpoints_;
};

}  // namespace

absl::StatusOr<std::shared_ptr<CheckpointRemote>> MakeCheckpointRemote(
    const config::CheckpointStorage& storage) {
  if (storage.type != "s3") {
    if (storage.type == "gcs" || storage.type == "azure") {
      return absl::FailedPreconditionError(absl::StrCat(
          "checkpoint storage type ", storage.type, " is not supported by Cohort: use s3, "
          "shared_fs or directory"));
    }
    return std::shared_ptr<CheckpointRemote>();
  }
  const objstore::CredentialSources sources = objstore::CredentialSources::FromProcess();
  objstore::S3Options options;
  options.bucket = storage.bucket.value_or("");
  options.endpoint_url = storage.endpoint_url.value_or("");
  options.region = objstore::ResolveS3Region(std::nullopt, sources);
  COHORT_ASSIGN_OR_RETURN(options.credentials, objstore::ResolveS3Credentials(
                                                   storage.access_key, storage.secret_key,
                                                   sources));
  COHORT_ASSIGN_OR_RETURN(std::unique_ptr<objstore::S3Client> client,
                          objstore::S3Client::Create(std::move(options)));
  return std::shared_ptr<CheckpointRemote>(std::make_shared<S3CheckpointRemote>(
      objstore::S3Checkpoints(std::move(client), storage.prefix.value_or(""))));
}

}  // namespace cohort::core
