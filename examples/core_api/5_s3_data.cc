// Core API tutorial, stage 5: downloading data from S3 per rank (Determined's "Downloading
// Data": each worker downloads its training data from a bucket into a directory of its own, so
// ranks sharing a machine never write the same files).
//
// The config's `data` section names the bucket (as in Determined: `data: {bucket: ...}`), and
// here also the prefix and, for an S3-compatible store, its endpoint_url. Keys come from the
// environment (AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY) or ~/.aws/credentials, or from
// `data.access_key`/`data.secret_key`. Every rank downloads, then they agree on what they got
// (the file count and bytes, allgathered), and the chief reports it.
//
//   cohort-launch --slots 2 -- build/bin/core_api_5_s3_data --config examples/core_api/5_s3_data.yaml

#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "cohort/core.h"
#include "cohort/core/object_store.h"
#include "cohort/status.h"

namespace {

// The bytes of every regular file under `dir`.
int64_t BytesUnder(const std::string& dir) {
  int64_t bytes = 0;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(dir)) {
    if (entry.is_regular_file()) bytes += static_cast<int64_t>(entry.file_size());
  }
  return bytes;
}

absl::Status Run(const std::string& config) {
  COHORT_ASSIGN_OR_RETURN(std::unique_ptr<cohort::core::Context> ctx,
                          cohort::core::Init({.config_path = config}));
  if (!ctx->info().config) {
    return absl::InvalidArgumentError("no experiment config: pass --config FILE (a cluster sets it)");
  }
  const cohort::config::Json& data = ctx->info().config->data;
  COHORT_ASSIGN_OR_RETURN(std::unique_ptr<cohort::core::ObjectStore> store,
                          cohort::core::ObjectStore::FromJson(data));
  const int rank = ctx->distributed().rank();
  const std::string dir = ctx->info().run_dir + "/data-rank" + std::to_string(rank);
  COHORT_ASSIGN_OR_RETURN(int64_t files, store->DownloadPrefix(data.value("prefix", ""), dir));
  const int64_t bytes = BytesUnder(dir);
  std::printf("rank %d downloaded %lld file(s), %lld bytes, into %s\n", rank,
              static_cast<long long>(files), static_cast<long long>(bytes), dir.c_str());
  // Every rank must have the same data before training on it.
  COHORT_ASSIGN_OR_RETURN(std::vector<int64_t> all, ctx->distributed().Allgather(bytes));
  for (int64_t other : all) {
    if (other != bytes) return absl::DataLossError("the ranks downloaded different data");
  }
  if (ctx->distributed().is_chief()) {
    COHORT_RETURN_IF_ERROR(ctx->train().ReportTrainingMetrics(
        1, {{"files", files}, {"bytes", bytes}, {"ranks", static_cast<int64_t>(all.size())}}));
  }
  return absl::OkStatus();
}

}  // namespace

int main(int argc, char** argv) {
  const std::string config = argc > 2 && std::string(argv[1]) == "--config" ? argv[2] : "";
  if (absl::Status s = Run(config); !s.ok()) {
    std::fprintf(stderr, "core_api_5_s3_data: %s\n", s.ToString().c_str());
    return 1;
  }
  return 0;
}
