#include "cohort/core/object_store.h"

#include <filesystem>

#include "absl/strings/str_cat.h"
#include "cohort/status.h"
#include "common/beneath.h"
#include "objstore/s3_client.h"
#include "objstore/s3_credentials.h"

namespace cohort::core {
namespace {

namespace fs = std::filesystem;

constexpr int64_t kMaxObjects = 100000;

// A key's part below the prefix as a relative path: plain components only.
bool SafeRelative(const std::string& rel) { return !rel.empty() && IsPlainRelativePath(rel); }

class S3ObjectStore final : public ObjectStore {
 public:
  explicit S3ObjectStore(std::unique_ptr<objstore::S3Client> client) : client_(std::move(client)) {}

  absl::Status Download(const std::string& key, const std::string& path) override {
    std::error_code ec;
    const fs::path parent = fs::path(path).parent_path();
    if (!parent.empty()) fs::create_directories(parent, ec);
    if (ec) return absl::UnavailableError(absl::StrCat("creating ", parent.string(), ": ",
                                                       ec.message()));
    return client_->GetFile(key, path);
  }

  absl::StatusOr<int64_t> DownloadPrefix(const std::string& prefix,
                                         const std::string& into_dir) override {
    COHORT_ASSIGN_OR_RETURN(std::vector<objstore::ObjectInfo> objects,
                            client_->List(prefix, kMaxObjects));
    int64_t files = 0;
    for (const objstore::ObjectInfo& o : objects) {
      std::string rel = o.key.substr(prefix.size());
      while (!rel.empty() && rel.front() == '/') rel.erase(0, 1);
      if (!rel.empty() && rel.back() == '/') continue;  // a "directory" placeholder
      if (!SafeRelative(rel)) {
        return absl::InvalidArgumentError(absl::StrCat(
            client_->Url(o.key), ": its key below the prefix is not a plain relative path"));
      }
      COHORT_RETURN_IF_ERROR(Download(o.key, (fs::path(into_dir) / rel).string()));
      ++files;
    }
    return files;
  }

  absl::Status Upload(const std::string& path, const std::string& key) override {
    return client_->PutFile(key, path);
  }

 private:
  std::unique_ptr<objstore::S3Client> client_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<ObjectStore>> ObjectStore::Create(
    const ObjectStoreOptions& options) {
  const objstore::CredentialSources sources = objstore::CredentialSources::FromProcess();
  objstore::S3Options s3;
  s3.bucket = options.bucket;
  s3.endpoint_url = options.endpoint_url;
  s3.region = objstore::ResolveS3Region(std::nullopt, sources);
  COHORT_ASSIGN_OR_RETURN(s3.credentials, objstore::ResolveS3Credentials(
                                              options.access_key, options.secret_key, sources));
  COHORT_ASSIGN_OR_RETURN(std::unique_ptr<objstore::S3Client> client,
                          objstore::S3Client::Create(std::move(s3)));
  return std::unique_ptr<ObjectStore>(std::make_unique<S3ObjectStore>(std::move(client)));
}

absl::StatusOr<std::unique_ptr<ObjectStore>> ObjectStore::FromJson(const config::Json& section) {
  if (!section.is_object()) {
    return absl::InvalidArgumentError("the object store's section must be a mapping");
  }
  ObjectStoreOptions options;
  for (const char* field : {"bucket", "endpoint_url", "access_key", "secret_key"}) {
    if (!section.contains(field)) continue;
    if (!section[field].is_string()) {
      return absl::InvalidArgumentError(absl::StrCat(field, ": must be a string"));
    }
  }
  options.bucket = section.value("bucket", "");
  options.endpoint_url = section.value("endpoint_url", "");
  if (section.contains("access_key")) options.access_key = section["access_key"].get<std::string>();
  if (section.contains("secret_key")) options.secret_key = section["secret_key"].get<std::string>();
  return Create(options);
}

}  // namespace cohort::core
