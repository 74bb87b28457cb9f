// The top-level sections of Determined's experiment config that Cohort accepts but does not act
// on: each is type-checked as Determined's schema does, kept in the effective config when given,
// and reported with one warning that says why it is ignored.

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "config/internal/object_reader.h"
#include "config/internal/section_parsers.h"
#include "slurm/sbatch_args.h"

namespace cohort::config::internal {
namespace {

constexpr char kNoHpc[] = "Cohort runs trials on its own agents or through Slurm, not PBS";
constexpr char kSlurmOnly[] =
    "used only by a master that runs trials through Slurm (cohort-master --resource-manager "
    "slurm: sbatch_args and gpu_type); there, slots_per_node is the master's "
    "--slurm-slots-per-node";

// data_layer: Determined's union by `type` (shared_fs, s3, gcs) for its cached dataset layer.
void ReadDataLayer(ObjectReader& root, ErrorList* errors, Json* effective) {
  const Json* node = root.Get("data_layer");
  if (node == nullptr) return;
  ObjectReader r(*node, "data_layer", errors, &(*effective)["data_layer"]);
  std::optional<std::string> type = r.String("type", std::nullopt, {"shared_fs", "s3", "gcs"});
  const bool cloud = type != "shared_fs";
  if (type == "shared_fs" || !type) {
    r.String("container_storage_path");
    r.String("host_storage_path");
  }
  if (cloud) {
    if (type) {
      r.Require("bucket");
      r.Require("bucket_directory_path");
    }
    for (const char* key : {"bucket", "bucket_directory_path", "local_cache_container_path",
                            "local_cache_host_path"}) {
      r.String(key);
    }
  }
  if (type == "s3" || !type) {
    for (const char* key : {"access_key", "secret_key", "endpoint_url"}) r.String(key);
  }
  r.Finish();
  root.Warn("data_layer", "Cohort has no data layer; a trial reads its data itself (see `data`)",
            Json::object({{"type", "shared_fs"}}));
}

void ReadHpc(ObjectReader& root, const char* key, const char* args_key, ErrorList* errors,
             Json* effective) {
  const Json* node = root.Get(key);
  if (node == nullptr) return;
  ObjectReader r(*node, key, errors, &(*effective)[key]);
  r.Int("slots_per_node", std::nullopt, AtLeast(1));
  if (std::string(key) == "slurm") r.String("gpu_type");
  std::optional<std::vector<std::string>> args = r.StringList(args_key);
  r.Finish();
  if (std::string(key) == "slurm" && args) {
    // Checked here, so a Slurm master refuses them at creation rather than at submission.
    if (absl::Status s = slurm::CheckSbatchArgs(*args); !s.ok()) {
      errors->Add("slurm.sbatch_args", s.message());
    }
  }
  if (std::string(key) == "slurm") {
    root.Warn(key, kSlurmOnly);
  } else {
    root.Warn(key, kNoHpc);
  }
}

void ReadRetentionPolicy(ObjectReader& root, ErrorList* errors, Json* effective) {
  const Json* node = root.Get("retention_policy");
  if (node == nullptr) return;
  ObjectReader r(*node, "retention_policy", errors, &(*effective)["retention_policy"]);
  r.Int("log_retention_days", std::nullopt, Between(-1, 32767));
  r.Finish();
  root.Warn("retention_policy", "Cohort has no log retention policy");
}

}  // namespace

void ParseIgnoredSections(ObjectReader& root, ErrorList* errors, Json* effective) {
  ReadDataLayer(root, errors, effective);
  ReadHpc(root, "slurm", "sbatch_args", errors, effective);
  ReadHpc(root, "pbs", "pbsbatch_args", errors, effective);
  ReadRetentionPolicy(root, errors, effective);
  root.Ignored("tensorboard_storage",
               "Determined itself ignores it; TensorBoard files stay with the trial's files",
               [&] { return root.Map("tensorboard_storage"); });
  root.Ignored("security", "Determined itself ignores it; the master's users decide access",
               [&] { return root.Map("security"); });
  root.Ignored("integrations", "Cohort has no integrations (Pachyderm)",
               [&] { return root.Map("integrations"); });
  root.Ignored("internal", "Determined's internal settings have no meaning in Cohort",
               [&] { return root.Map("internal"); });
}

}  // namespace cohort::config::internal
