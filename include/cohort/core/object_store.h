#pragma once
// Objects from an S3 bucket, for a trial's data (the seed's "Downloading Data": each rank
// downloads its training data into a directory of its own). The same client Cohort's S3
// checkpoints use: requests signed (SigV4), large objects in parallel ranges, retries with
// back-off, errors naming the bucket and the key but never a credential.
//
// Keys: `access_key`/`secret_key` when given, else AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY
// (AWS_SESSION_TOKEN), else ~/.aws/credentials (AWS_PROFILE); region: AWS_REGION or us-east-1.
// Thread-safe.
//
// Example (the config's `data: {bucket: ..., prefix: ..., endpoint_url: ...}`):
//   const cohort::config::Json& data = ctx.info().config->data;
//   COHORT_ASSIGN_OR_RETURN(auto store, cohort::core::ObjectStore::FromJson(data));
//   const std::string dir = ctx.info().run_dir + "/data-rank" + std::to_string(rank);
//   COHORT_ASSIGN_OR_RETURN(int64_t files, store->DownloadPrefix(data.value("prefix", ""), dir));

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "cohort/config/json.h"

namespace cohort::core {

struct ObjectStoreOptions {
  std::string bucket;
  std::string endpoint_url;  // an S3-compatible store's; empty: AWS
  std::optional<std::string> access_key;
  std::optional<std::string> secret_key;
};

class ObjectStore {
 public:
  // InvalidArgument for a missing bucket or a bad endpoint; NotFound naming every place looked
  // at when there are no keys.
  static absl::StatusOr<std::unique_ptr<ObjectStore>> Create(const ObjectStoreOptions& options);
  // From a config section: {"bucket", "endpoint_url", "access_key", "secret_key"} (strings; the
  // others are ignored). InvalidArgument naming a field of the wrong type.
  static absl::StatusOr<std::unique_ptr<ObjectStore>> FromJson(const config::Json& section);
  virtual ~ObjectStore() = default;

  // Downloads object `key` to the local file `path` (its directory created).
  virtual absl::Status Download(const std::string& key, const std::string& path) = 0;
  // Downloads every object whose key starts with `prefix` into `into_dir`, each at its key
  // relative to the prefix (a key with an empty, "." or ".." component is refused, naming it);
  // the number of files. At most 100,000 objects.
  virtual absl::StatusOr<int64_t> DownloadPrefix(const std::string& prefix,
                                                 const std::string& into_dir) = 0;
  // Uploads the local file `path` as object `key`.
  virtual absl::Status Upload(const std::string& path, const std::string& key) = 0;
};

}  // namespace cohort::core
