// The Core API tutorial's stage 5 (examples/core_api/5_s3_data.cc) as its users run it: two
// workers under cohort-launch, each downloading the data under a bucket's prefix into its own
// directory, from a real S3-compatible server (npm's s3rver) holding objects this test put
// there. The example's own config is used, with only the bucket and the endpoint changed.

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "objstore/s3_client.h"
#include "objstore/testing/s3rver.h"
#include "tests/launch/launcher_process.h"
#include "tests/testing/cluster_fixture.h"
#include "tests/testing/worker_group.h"

namespace cohort {
namespace {

namespace fs = std::filesystem;
using testing::BinaryPath;
using testing::LaunchResult;
using testing::ReadFile;
using testing::RunToCompletion;

TEST(S3DataTest, EachWorkerDownloadsTheBucketsDataIntoItsOwnDirectory) {
  absl::StatusOr<std::unique_ptr<objstore::testing::S3rver>> server =
      objstore::testing::S3rver::Start("cohort-data");
  ASSERT_TRUE(server.ok()) << server.status();
  absl::StatusOr<std::unique_ptr<objstore::S3Client>> client =
      objstore::S3Client::Create((*server)->ClientOptions());
  ASSERT_TRUE(client.ok()) << client.status();
  std::string big(6 << 20, '\0');  // above the part size: ranged GETs in parallel
  for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<char>(i * 31 + 1);
  ASSERT_TRUE((*client)->PutString("fashion-mnist/train/part-0.bin", big).ok());
  ASSERT_TRUE((*client)->PutString("fashion-mnist/train/part-1.bin", "second part").ok());
  ASSERT_TRUE((*client)->PutString("fashion-mnist/labels.txt", "0\n1\n").ok());
  ASSERT_TRUE((*client)->PutString("other/ignored.txt", "not under the prefix").ok());

  const fs::path dir = fs::path(::testing::TempDir()) / absl::StrCat("s3_data_test_", ::getpid());
  fs::remove_all(dir);
  fs::create_directories(dir);
  // The example's config, pointed at this server's bucket.
  std::string yaml = ReadFile(fs::path(COHORT_SOURCE_DIR) / "examples/core_api/5_s3_data.yaml");
  yaml = absl::StrReplaceAll(
      yaml, {{"bucket: my-training-data", "bucket: cohort-data"},
             {"# endpoint_url: http://minio.internal:9000",
              "endpoint_url: " + (*server)->endpoint()}});
  ASSERT_NE(yaml.find("endpoint_url: http://127.0.0.1"), std::string::npos) << yaml;
  std::ofstream(dir / "config.yaml") << yaml;

  LaunchResult r = RunToCompletion(
      {BinaryPath("cohort-launch"), "--slots", "2", "--grace-period", "30", "--",
       BinaryPath("core_api_5_s3_data"), "--config", (dir / "config.yaml").string()},
      {{"COHORT_RUN_DIR", (dir / "run").string()},
       {"AWS_ACCESS_KEY_ID", "S3RVER"},
       {"AWS_SECRET_ACCESS_KEY", "S3RVER"},
       {"COHORT_HPARAMS", std::nullopt},
       {"COHORT_LATEST_CHECKPOINT", std::nullopt}},
      absl::Seconds(120));
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  for (int rank = 0; rank < 2; ++rank) {
    const fs::path mine = dir / "run" / absl::StrCat("data-rank", rank);
    EXPECT_NE(r.out.find(absl::StrCat("rank ", rank, " downloaded 3 file(s)")), std::string::npos)
        << r.out;
    EXPECT_TRUE(ReadFile(mine / "train/part-0.bin") == big) << "rank " << rank;
    EXPECT_EQ(ReadFile(mine / "train/part-1.bin"), "second part");
    EXPECT_EQ(ReadFile(mine / "labels.txt"), "0\n1\n");
    EXPECT_FALSE(fs::exists(mine / "ignored.txt"));
  }
  std::ifstream metrics(dir / "run" / "metrics.jsonl");
  std::string line;
  ASSERT_TRUE(std::getline(metrics, line));
  const nlohmann::json m = nlohmann::json::parse(line);
  EXPECT_EQ(m["metrics"]["files"], 3) << line;
  EXPECT_EQ(m["metrics"]["ranks"], 2) << line;
  fs::remove_all(dir);
}

}  // namespace
}  // namespace cohort
