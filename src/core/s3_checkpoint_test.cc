// CheckpointContext with an object store behind it (checkpoint_storage type s3): the chief's
// Commit uploads the checkpoint whole before reporting it, a restore on another node downloads
// it, and a store that is down fails the checkpoint without reporting it. Against a real
// S3-compatible server (npm's s3rver).
#include <filesystem>
#include <fstream>

#include "cohort/core/checkpoint_context.h"
#include "cohort/core/reporter.h"
#include "common/testing/status_matchers.h"
#include "common/testing/temp_dir.h"
#include "core/s3_checkpoint_remote.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "objstore/s3_checkpoints.h"
#include "objstore/testing/s3rver.h"

namespace cohort::core {
namespace {

namespace fs = std::filesystem;
using ::cohort::testing_support::StatusIs;
using ::testing::HasSubstr;

// Records the checkpoints reported.
class CheckpointLog : public Reporter {
 public:
  absl::Status ReportMetrics(const std::string&, int64_t, const nlohmann::json&) override {
    return absl::OkStatus();
  }
  absl::Status ReportCheckpoint(const std::string& id, const std::string& path,
                                const nlohmann::json&) override {
    reported.emplace_back(id, path);
    return absl::OkStatus();
  }
  absl::Status ReportProgress(const Progress&) override { return absl::OkStatus(); }
  absl::Status ReportCompleted(double, double) override { return absl::OkStatus(); }
  absl::Status ReportPreempted() override { return absl::OkStatus(); }
  bool PreemptionRequested() override { return false; }
  std::vector<std::pair<std::string, std::string>> reported;
};

class S3CheckpointTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_OK_AND_ASSIGN(server_, objstore::testing::S3rver::Start("ckpts"));
    storage_.type = "s3";
    storage_.bucket = "ckpts";
    storage_.prefix = "exp-7";
    storage_.endpoint_url = server_->endpoint();
    storage_.access_key = "S3RVER";
    storage_.secret_key = "S3RVER";
    ASSERT_OK_AND_ASSIGN(remote_, MakeCheckpointRemote(storage_));
    ASSERT_NE(remote_, nullptr);
  }
  std::unique_ptr<objstore::testing::S3rver> server_;
  config::CheckpointStorage storage_;
  std::shared_ptr<CheckpointRemote> remote_;
  testing_support::TempDir chief_dir_{"chief"}, other_dir_{"other_node"};
  CheckpointLog log_;
};

TEST_F(S3CheckpointTest, TheChiefUploadsBeforeReportingAndAnotherNodeRestores) {
  CheckpointContext chief(0, chief_dir_.path(), &log_, remote_);
  ASSERT_OK_AND_ASSIGN(CheckpointContext::Writer writer, chief.StorePath({{"steps_completed", 5}}));
  ASSERT_OK(writer.WriteFile("model/weights.bin", std::string(3 << 20, 'x')));
  ASSERT_OK_AND_ASSIGN(std::string id, writer.Commit());
  ASSERT_EQ(log_.reported.size(), 1u);
  EXPECT_EQ(log_.reported[0].second, "s3://ckpts/exp-7/" + id);
  EXPECT_FALSE(fs::exists(chief_dir_.path() + "/" + id)) << "the store is the checkpoint";

  CheckpointContext other(1, other_dir_.path(), nullptr, remote_);
  ASSERT_OK_AND_ASSIGN(std::string dir, other.RestorePath(id));
  EXPECT_EQ(dir, other_dir_.path() + "/" + id);
  EXPECT_EQ(fs::file_size(dir + "/model/weights.bin"), 3u << 20);
  ASSERT_OK_AND_ASSIGN(nlohmann::json metadata, other.GetMetadata(id));
  EXPECT_EQ(metadata["steps_completed"], 5);
  EXPECT_EQ(metadata["storage_id"], id);
  EXPECT_THAT(other.RestorePath("3f2b8c1e-9a4d-4e6f-b1a2-7c8d9e0f1a2b").status(),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("s3://ckpts")));
  // A warm start names the source by its location: one in this storage is restored.
  testing_support::TempDir third_dir{"third_node"};
  CheckpointContext third(0, third_dir.path(), nullptr, remote_);
  ASSERT_OK_AND_ASSIGN(std::string warm, third.RestorePath("s3://ckpts/exp-7/" + id));
  EXPECT_EQ(fs::file_size(warm + "/model/weights.bin"), 3u << 20);
  EXPECT_THAT(third.RestorePath("s3://ckpts/other-prefix/" + id).status(),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("same bucket and prefix")));
}

TEST_F(S3CheckpointTest, AStoreThatIsDownFailsTheCheckpointAndNothingIsReported) {
  CheckpointContext chief(0, chief_dir_.path(), &log_, remote_);
  ASSERT_OK_AND_ASSIGN(CheckpointContext::Writer writer, chief.StorePath({{"steps_completed", 1}}));
  ASSERT_OK(writer.WriteFile("state", "abc"));
  server_->Kill();
  const absl::StatusOr<std::string> id = writer.Commit();
  EXPECT_THAT(id.status(), StatusIs(absl::StatusCode::kUnavailable, HasSubstr("s3://ckpts")));
  EXPECT_TRUE(log_.reported.empty()) << "a checkpoint not in the store is never reported";
  EXPECT_THAT(id.status().message(), ::testing::Not(HasSubstr("S3RVER")));
}

TEST_F(S3CheckpointTest, GcsAndAzureAreRefusedNamingWhatIsSupported) {
  config::CheckpointStorage gcs;
  gcs.type = "gcs";
  EXPECT_THAT(MakeCheckpointRemote(gcs).status(),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("use s3, shared_fs")));
  config::CheckpointStorage shared;
  shared.type = "shared_fs";
  ASSERT_OK_AND_ASSIGN(std::shared_ptr<CheckpointRemote> none, MakeCheckpointRemote(shared));
  EXPECT_EQ(none, nullptr);
}

}  // namespace
}  // namespace cohort::core
