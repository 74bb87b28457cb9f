#include "master/checkpoints/checkpoints.h"

#include <filesystem>
#include <fstream>
#include <memory>

#include "common/testing/status_matchers.h"
#include "common/testing/temp_dir.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "master/db/sqlite_database.h"
#include "master/db/testing/db_test_helpers.h"

namespace cohort::master::checkpoints {
namespace {

namespace fs = std::filesystem;
using ::cohort::testing_support::StatusIs;
using ::cohort::testing_support::TempDir;
using ::testing::Contains;
using ::testing::HasSubstr;
using ::testing::SizeIs;

class CheckpointsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    data_ = top_.path() + "/data";
    storage_ = top_.path() + "/ckpt/exp";
    fs::create_directories(data_);
    fs::create_directories(storage_);
    ASSERT_OK_AND_ASSIGN(storage::StorageRoots roots,
                         storage::StorageRoots::Create(data_, {top_.path() + "/ckpt"}));
    roots_ = std::make_unique<storage::StorageRoots>(std::move(roots));
    ASSERT_OK_AND_ASSIGN(db_, SqliteDatabase::Open(":memory:"));
    ExperimentRow e = MakeExperiment("e");
    e.config_yaml = "name: e\nentrypoint: ./train\n"
                    "searcher: {name: single, metric: loss, max_length: {batches: 10}}\n"
                    "checkpoint_storage: {type: shared_fs, host_path: " +
                    storage_ + "}\n";
    ASSERT_OK_AND_ASSIGN(int64_t experiment, db_->InsertExperiment(e));
    ASSERT_OK_AND_ASSIGN(trial_, db_->InsertTrial(MakeTrial(experiment)));
    checkpoints_ = std::make_unique<Checkpoints>(*db_, *roots_);
  }
  // A checkpoint reported at `path` whose directory holds model.pt.
  void Report(const std::string& id, const std::string& path) {
    fs::create_directories(path);
    std::ofstream(path + "/model.pt") << "weights";
    CheckpointRow row;
    row.storage_id = id;
    row.trial_id = trial_;
    row.steps_completed = 10;
    row.path = path;
    row.metadata_json = "{}";
    ASSERT_OK(db_->InsertCheckpoint(row));
  }
  TempDir top_;
  std::string data_, storage_;
  std::unique_ptr<storage::StorageRoots> roots_;
  std::unique_ptr<SqliteDatabase> db_;
  std::unique_ptr<Checkpoints> checkpoints_;
  int64_t trial_ = 0;
};

TEST_F(CheckpointsTest, ListsATrialsCheckpointsAndReadsOnesFiles) {
  Report("ck-1", storage_ + "/ck-1");
  ASSERT_OK_AND_ASSIGN(wire::CheckpointList list, checkpoints_->OfTrial(trial_));
  ASSERT_THAT(list.checkpoints, SizeIs(1));
  EXPECT_EQ(list.checkpoints[0].storage_id, "ck-1");
  ASSERT_OK_AND_ASSIGN(CheckpointFiles files, checkpoints_->Files("ck-1"));
  EXPECT_EQ(files.trial_id, trial_);
  EXPECT_EQ(files.steps_completed, 10);
  EXPECT_THAT(files.entries, Contains("model.pt"));
  EXPECT_EQ(files.bytes, 7);
  EXPECT_NE(files.handle, nullptr);
}

TEST_F(CheckpointsTest, RefusesUnknownDeletedAndOutsideCheckpointsSayingWhy) {
  EXPECT_THAT(checkpoints_->Files("nope"),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("cohort checkpoint list")));
  Report("ck-2", storage_ + "/ck-2");
  ASSERT_OK(db_->MarkCheckpointDeleted("ck-2"));
  EXPECT_THAT(checkpoints_->Files("ck-2"),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("checkpoint GC")));
  Report("ck-3", data_ + "/ck-3");  // a trial's word: a path outside its storage
  EXPECT_THAT(checkpoints_->Files("ck-3"),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("outside its experiment")));
  EXPECT_THAT(checkpoints_->OfTrial(trial_ + 5), StatusIs(absl::StatusCode::kNotFound));
}

TEST_F(CheckpointsTest, ACheckpointTheMasterCannotSeeSaysWhereItIs) {
  CheckpointRow row;
  row.storage_id = "ck-4";
  row.trial_id = trial_;
  row.path = storage_ + "/ck-4";  // reported, but not on this machine
  row.metadata_json = "{}";
  ASSERT_OK(db_->InsertCheckpoint(row));
  EXPECT_THAT(checkpoints_->Files("ck-4"),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("cannot see")));
}

TEST(StorageDirTest, FollowsTheWorkersLayout) {
  config::CheckpointStorage shared;
  shared.type = "shared_fs";
  shared.host_path = "/mnt/ckpt";
  EXPECT_EQ(StorageDir(shared), "/mnt/ckpt");
  shared.storage_path = "team";
  EXPECT_EQ(StorageDir(shared), "/mnt/ckpt/team");
  config::CheckpointStorage s3;
  s3.type = "s3";
  EXPECT_EQ(StorageDir(s3), "") << "not a directory";
}

TEST(IsOwnEntryTest, OnlyTheStoragesOwnLocationOfTheIdCounts) {
  TempDir top;
  std::filesystem::create_directories(top.path() + "/data");
  std::filesystem::create_directories(top.path() + "/ckpt/team");
  ASSERT_OK_AND_ASSIGN(storage::StorageRoots roots,
                       storage::StorageRoots::Create(top.path() + "/data", {top.path() + "/ckpt"}));
  const storage::DirectoryStorage dir(roots, "shared_fs", top.path() + "/ckpt/team");
  CheckpointRow row;
  row.storage_id = "ck";
  row.path = top.path() + "/ckpt/team/./ck";
  EXPECT_TRUE(IsOwnEntry(dir, row));
  row.path = top.path() + "/ckpt/other/ck";
  EXPECT_FALSE(IsOwnEntry(dir, row));
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<objstore::S3Client> client,
                       objstore::S3Client::Create({.bucket = "b", .endpoint_url = "http://h:1"}));
  const storage::S3Storage s3(objstore::S3Checkpoints(std::move(client), "p"));
  row.path = "s3://b/p/ck";
  EXPECT_TRUE(IsOwnEntry(s3, row));
  row.path = "s3://b/other/ck";
  EXPECT_FALSE(IsOwnEntry(s3, row));
  row.storage_id = "../ck";
  row.path = "s3://b/p/../ck";
  EXPECT_FALSE(IsOwnEntry(s3, row)) << "not a plain id";
}

}  // namespace
}  // namespace cohort::master::checkpoints
