// S3Storage: the CheckpointStorage contract (checkpoint_storage_conformance.h) against a real
// S3-compatible server (npm's s3rver, one per test), then what only an object store does: a
// manifest a trial tampered with, a store that dies in the middle of a Store, and the objects
// a Delete leaves behind when the store fails half-way.
#include "master/storage/s3_storage.h"

#include <filesystem>
#include <fstream>

#include "common/testing/status_matchers.h"
#include "common/testing/temp_dir.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "master/storage/checkpoint_storage_conformance.h"
#include "objstore/testing/s3rver.h"

namespace cohort::master::storage {
namespace {

namespace fs = std::filesystem;
using ::cohort::testing_support::StatusIs;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

struct S3Fixture {
  std::unique_ptr<objstore::testing::S3rver> server;
  std::unique_ptr<S3Storage> storage;
  objstore::S3Client* client = nullptr;  // the storage's, for looking behind it

  S3Fixture() {
    absl::StatusOr<std::unique_ptr<objstore::testing::S3rver>> started =
        objstore::testing::S3rver::Start("checkpoints");
    EXPECT_TRUE(started.ok()) << started.status();
    if (!started.ok()) return;
    server = *std::move(started);
    absl::StatusOr<std::unique_ptr<objstore::S3Client>> client_or =
        objstore::S3Client::Create(server->ClientOptions());
    EXPECT_TRUE(client_or.ok()) << client_or.status();
    std::shared_ptr<objstore::S3Client> shared = *std::move(client_or);
    client = shared.get();
    storage = std::make_unique<S3Storage>(objstore::S3Checkpoints(shared, "team/exp-1/"));
  }
};

StorageUnderTest MakeS3Storage() {
  auto fixture = std::make_shared<S3Fixture>();
  return {fixture, fixture->storage.get()};
}

INSTANTIATE_TEST_SUITE_P(S3, CheckpointStorageConformance, ::testing::Values(&MakeS3Storage));

class S3StorageTest : public ::testing::Test {
 protected:
  std::string LocalCheckpoint(size_t bytes) {
    const fs::path dir = local_.path() + "/ck";
    fs::create_directories(dir / "meta");
    std::ofstream(dir / "model.pt", std::ios::binary) << std::string(bytes, 'w');
    std::ofstream(dir / "meta" / "step.json") << R"({"batch": 7})";
    return dir.string();
  }
  S3Fixture f_;
  testing_support::TempDir local_{"s3_storage"};
};

TEST_F(S3StorageTest, ACheckpointLivesUnderItsPrefixAndIsPublishedByItsManifest) {
  ASSERT_NE(f_.storage, nullptr);
  EXPECT_EQ(f_.storage->Describe(),
            "s3://checkpoints at " + f_.server->endpoint() + " prefix team/exp-1");
  ASSERT_OK(f_.storage->Store("ck-1", LocalCheckpoint(100)));
  ASSERT_OK_AND_ASSIGN(std::vector<objstore::ObjectInfo> objects, f_.client->List("team/", 10));
  ASSERT_EQ(objects.size(), 3u);
  EXPECT_EQ(objects[0].key, "team/exp-1/ck-1.cohort-checkpoint");
  EXPECT_EQ(objects[1].key, "team/exp-1/ck-1/meta/step.json");
  EXPECT_EQ(objects[2].key, "team/exp-1/ck-1/model.pt");
  // Files without a manifest (a Store cut short) are no checkpoint.
  ASSERT_OK(f_.client->PutString("team/exp-1/half/model.pt", "x"));
  ASSERT_OK_AND_ASSIGN(std::vector<std::string> ids, f_.storage->List());
  EXPECT_EQ(ids, std::vector<std::string>{"ck-1"});
  EXPECT_THAT(f_.storage->Check("half"), StatusIs(absl::StatusCode::kNotFound));
}

TEST_F(S3StorageTest, AManifestATrialTamperedWithIsDataLossAndNothingOutsideIsRead) {
  ASSERT_NE(f_.storage, nullptr);
  ASSERT_OK(f_.client->PutString("team/exp-1/evil.cohort-checkpoint",
                                 R"({"entries": [{"path": "../../other/secret", "bytes": 1}]})"));
  EXPECT_THAT(f_.storage->Open("evil", 100),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("plain relative path")));
  ASSERT_OK(f_.client->PutString("team/exp-1/junk.cohort-checkpoint", "not json"));
  EXPECT_THAT(f_.storage->Open("junk", 100), StatusIs(absl::StatusCode::kDataLoss));
}

TEST_F(S3StorageTest, AStoreWhoseStoreDiesPublishesNothingAndWorksOnceItIsBack) {
  ASSERT_NE(f_.storage, nullptr);
  const std::string from = LocalCheckpoint(1 << 20);
  f_.server->Kill();
  const absl::Status s = f_.storage->Store("ck-2", from);
  EXPECT_THAT(s, StatusIs(absl::StatusCode::kUnavailable, HasSubstr("s3://checkpoints")));
  EXPECT_THAT(s.message(), ::testing::Not(HasSubstr("S3RVER")));
  ASSERT_OK(f_.server->Restart());
  EXPECT_THAT(f_.storage->Check("ck-2"), StatusIs(absl::StatusCode::kNotFound));
  ASSERT_OK(f_.storage->Store("ck-2", from));
  testing_support::TempDir into;
  ASSERT_OK(f_.storage->Fetch("ck-2", into.path()));
  EXPECT_EQ(fs::file_size(into.path() + "/model.pt"), 1u << 20);
}

TEST_F(S3StorageTest, DeleteRemovesTheManifestFirstThenEveryObject) {
  ASSERT_NE(f_.storage, nullptr);
  ASSERT_OK(f_.storage->Store("ck-3", LocalCheckpoint(10)));
  ASSERT_OK(f_.storage->Delete("ck-3"));
  ASSERT_OK_AND_ASSIGN(std::vector<objstore::ObjectInfo> objects, f_.client->List("team/", 10));
  EXPECT_THAT(objects, IsEmpty());
}

TEST_F(S3StorageTest, FilesBesideTheCheckpointsAreDeletedByTheirDirectoryOnly) {
  ASSERT_NE(f_.storage, nullptr);
  ASSERT_OK(f_.storage->Store("ck-6", LocalCheckpoint(10)));
  ASSERT_OK(f_.client->PutString("team/exp-1/tensorboard/trial_1/events.out.tfevents.1", "e"));
  ASSERT_OK(f_.client->PutString("team/exp-1/tensorboard/trial_10/events.out.tfevents.1", "e"));
  ASSERT_OK(f_.storage->DeleteFiles("tensorboard/trial_1"));
  ASSERT_OK_AND_ASSIGN(std::vector<objstore::ObjectInfo> left,
                       f_.client->List("team/exp-1/tensorboard/", 10));
  ASSERT_EQ(left.size(), 1u);
  EXPECT_EQ(left[0].key, "team/exp-1/tensorboard/trial_10/events.out.tfevents.1");
  EXPECT_OK(f_.storage->Check("ck-6")) << "checkpoints are not files beside them";
  EXPECT_THAT(f_.storage->DeleteFiles("../team"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("plain names")));
}

TEST_F(S3StorageTest, ADeleteCutShortIsFinishedByTheSweep) {
  ASSERT_NE(f_.storage, nullptr);
  ASSERT_OK(f_.storage->Store("ck-4", LocalCheckpoint(10)));
  ASSERT_OK(f_.storage->Store("ck-5", LocalCheckpoint(10)));
  // What a master killed in the middle of deleting ck-4 leaves: its mark, its files.
  ASSERT_OK(f_.client->PutString("team/exp-1/ck-4.cohort-deleting", ""));
  ASSERT_OK_AND_ASSIGN(std::vector<std::string> ids, f_.storage->List());
  EXPECT_EQ(ids, std::vector<std::string>{"ck-5"}) << "one being deleted is not listed";
  ASSERT_OK_AND_ASSIGN(std::vector<std::string> swept, f_.storage->SweepLeftovers());
  EXPECT_EQ(swept, std::vector<std::string>{"ck-4"});
  ASSERT_OK_AND_ASSIGN(std::vector<objstore::ObjectInfo> objects,
                       f_.client->List("team/exp-1/ck-4", 10));
  EXPECT_THAT(objects, IsEmpty()) << "files, manifest and mark are gone";
  EXPECT_OK(f_.storage->Check("ck-5"));
}

}  // namespace
}  // namespace cohort::master::storage
