// `checkpoint_storage`: Determined's union by `type`. shared_fs, directory and s3 are where
// Cohort writes checkpoints; gcs and azure are validated like Determined's (required fields,
// types, defaults) and accepted with a warning, and experiment creation refuses them
// (config/creation_check.h). Without `type` the block only sets the GC counts of the default
// storage (as Determined merges such a block into the cluster's): the master's shared_fs, a
// local run's directory; a field of a member then needs its `type`.

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "config/internal/object_reader.h"
#include "config/internal/section_parsers.h"

namespace cohort::config::internal {
namespace {

const std::vector<std::string> kStorageTypes = {"shared_fs", "directory", "s3", "gcs", "azure"};

// Every member's own fields, so that with an unknown type only the type is reported.
const std::vector<std::string> kMemberFields = {
    "host_path",         "storage_path",     "propagation",  "container_path",
    "checkpoint_path",   "tensorboard_path", "bucket",       "prefix",
    "access_key",        "secret_key",       "endpoint_url", "container",
    "connection_string", "account_url",      "credential"};

bool IsAbsolute(const std::string& p) { return !p.empty() && p[0] == '/'; }

// Determined: storage_path is relative to host_path or a directory under it.
void CheckStoragePath(ObjectReader& r, const std::string& host, const std::string& storage) {
  if (!IsAbsolute(storage)) return;
  const std::string prefix = host.empty() || host.back() == '/' ? host : host + "/";
  if (storage != host && !absl::StartsWith(storage, prefix)) {
    r.errors()->Add(r.PathOf("storage_path"),
                    absl::StrCat("must be a relative directory or a subdirectory of host_path (",
                                 host, "), got '", storage, "'"));
  }
}

void ReadSharedFs(ObjectReader& r, CheckpointStorage& c) {
  r.Require("host_path");
  if (auto host = r.String("host_path")) {
    c.host_path = *host;
    if (!IsAbsolute(c.host_path)) {
      r.errors()->Add(r.PathOf("host_path"),
                      absl::StrCat("must be an absolute path, got '", c.host_path, "'"));
    }
  }
  c.storage_path = r.String("storage_path");
  if (c.storage_path) CheckStoragePath(r, c.host_path, *c.storage_path);
  r.String("propagation", "rprivate");
  r.Ignored("container_path", "Cohort's trials see host_path itself (no container)",
            [&] { return r.String("container_path"); });
  for (const char* legacy : {"checkpoint_path", "tensorboard_path"}) {
    r.Ignored(legacy, "a legacy Determined field; checkpoints go under host_path/storage_path",
              [&] { return r.String(legacy); });
  }
}

void ReadCloud(ObjectReader& r, CheckpointStorage& c) {
  if (c.type == "s3" || c.type == "gcs") {
    r.Require("bucket");
    c.bucket = r.String("bucket");
    c.prefix = r.String("prefix");
  }
  if (c.type == "s3") {
    c.access_key = r.String("access_key");
    c.secret_key = r.String("secret_key");
    c.endpoint_url = r.String("endpoint_url");
  }
  if (c.type == "azure") {
    r.Require("container");
    c.container = r.String("container");
    const bool connection = r.String("connection_string").has_value();
    const bool account = r.String("account_url").has_value();
    const bool credential = r.String("credential").has_value();
    if (connection == account) {
      r.errors()->Add(r.path(), "exactly one of connection_string or account_url must be set");
    }
    if (connection && credential) {
      r.errors()->Add(r.path(), "credential and connection_string must not both be set");
    }
  }
  if (c.type != "s3") {
    r.errors()->AddWarning(r.PathOf("type"),
                           absl::StrCat("checkpoint storage type ", c.type,
                                        " is not supported by Cohort: experiment create refuses "
                                        "it (use s3, shared_fs or directory)"));
  }
}

// The garbage-collection counts, on every member: the master's checkpoint GC keeps that many
// (master/experiments/checkpoint_gc.h) when the experiment ends.
void ReadSaveCounts(ObjectReader& r, CheckpointStorage& c) {
  const std::pair<const char*, int64_t*> counts[] = {
      {"save_experiment_best", &c.save_experiment_best},
      {"save_trial_best", &c.save_trial_best},
      {"save_trial_latest", &c.save_trial_latest}};
  for (const auto& [key, count] : counts) {
    const int64_t fallback = *count;  // Determined's default, from CheckpointStorage
    *count = r.Int(key, fallback, AtLeast(0)).value_or(fallback);
  }
}

}  // namespace

CheckpointStorage ParseCheckpointStorage(const Json& node, ErrorList* errors, Json* effective) {
  CheckpointStorage c;
  ObjectReader r(node, "checkpoint_storage", errors, effective);
  const bool member_field =
      node.is_object() && std::any_of(kMemberFields.begin(), kMemberFields.end(),
                                      [&](const std::string& key) { return node.contains(key); });
  if (member_field) r.Require("type");
  std::optional<std::string> type = r.String("type", std::nullopt, kStorageTypes);
  c.type = type.value_or("");
  if (c.type == "shared_fs") {
    ReadSharedFs(r, c);
  } else if (c.type == "directory") {
    r.Require("container_path");
    c.container_path = r.String("container_path").value_or("");
  } else if (!c.type.empty()) {
    ReadCloud(r, c);
  } else {
    for (const std::string& key : kMemberFields) r.Get(key);
  }
  ReadSaveCounts(r, c);
  r.Finish();
  return c;
}

}  // namespace cohort::config::internal
