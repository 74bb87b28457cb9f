#include "master/storage/directory_storage.h"

#include <filesystem>
#include <fstream>

#include "common/testing/status_matchers.h"
#include "common/testing/temp_dir.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "master/storage/checkpoint_storage_conformance.h"

namespace cohort::master::storage {
namespace {

namespace fs = std::filesystem;
using ::cohort::testing_support::StatusIs;
using ::cohort::testing_support::TempDir;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::UnorderedElementsAre;

// A data directory and an allowed root beside it, and a DirectoryStorage in the root.
struct DirectoryFixture {
  TempDir top;
  std::string data_dir, root, dir;
  std::unique_ptr<StorageRoots> roots;
  std::unique_ptr<DirectoryStorage> storage;

  DirectoryFixture() {
    data_dir = top.path() + "/data";
    root = top.path() + "/ckpt";
    dir = root + "/exp-1";
    fs::create_directories(data_dir);
    fs::create_directories(dir);
    absl::StatusOr<StorageRoots> made = StorageRoots::Create(data_dir, {root});
    EXPECT_TRUE(made.ok()) << made.status();
    roots = std::make_unique<StorageRoots>(*std::move(made));
    storage = std::make_unique<DirectoryStorage>(*roots, "shared_fs", dir);
  }
};

StorageUnderTest MakeDirectoryStorage() {
  auto fixture = std::make_shared<DirectoryFixture>();
  return {fixture, fixture->storage.get()};
}

INSTANTIATE_TEST_SUITE_P(Directory, CheckpointStorageConformance,
                         ::testing::Values(&MakeDirectoryStorage));

TEST(DirectoryStorageTest, ACheckpointThatIsALinkIsNeitherReadNorFollowedWhenDeleted) {
  DirectoryFixture f;
  std::ofstream(f.data_dir + "/secret") << "the master's";
  fs::create_directory_symlink(f.data_dir, f.dir + "/m1");
  EXPECT_THAT(f.storage->Open("m1", 100),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("symbolic link")));
  EXPECT_THAT(f.storage->Check("m1"), StatusIs(absl::StatusCode::kFailedPrecondition));
  ASSERT_OK_AND_ASSIGN(std::vector<std::string> ids, f.storage->List());
  EXPECT_TRUE(ids.empty()) << "a link is no checkpoint";
  EXPECT_THAT(f.storage->Delete("m1"),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("left as it is")));
  EXPECT_TRUE(fs::is_symlink(f.dir + "/m1")) << "refused, so left as it was";
  EXPECT_TRUE(fs::exists(f.data_dir + "/secret")) << "the link's target is untouched";
}

TEST(DirectoryStorageTest, ALinkInsideACheckpointIsNotRead) {
  DirectoryFixture f;
  fs::create_directories(f.dir + "/ck");
  fs::create_symlink(f.data_dir, f.dir + "/ck/escape");
  EXPECT_THAT(f.storage->Open("ck", 100),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("escape")));
}

TEST(DirectoryStorageTest, AStorageOutsideTheRootsIsRefused) {
  DirectoryFixture f;
  const std::string outside = f.top.path() + "/elsewhere";
  fs::create_directories(outside + "/ck");
  DirectoryStorage stray(*f.roots, "directory", outside);
  EXPECT_THAT(stray.Open("ck", 100), StatusIs(absl::StatusCode::kFailedPrecondition));
  EXPECT_THAT(stray.Delete("ck"), StatusIs(absl::StatusCode::kFailedPrecondition));
  EXPECT_TRUE(fs::exists(outside + "/ck"));
}

TEST(DirectoryStorageTest, SweepRemovesWhatACutShortStoreOrDeleteLeft) {
  DirectoryFixture f;
  const std::string local = f.top.path() + "/local";
  fs::create_directories(local);
  std::ofstream(local + "/model.pt") << "w";
  ASSERT_OK(f.storage->Store("kept", local));
  fs::create_directories(f.dir + "/.tmp-ck-9-123/meta");
  fs::create_directories(f.dir + "/.deleted-ck-8");
  ASSERT_OK_AND_ASSIGN(std::vector<std::string> ids, f.storage->List());
  EXPECT_THAT(ids, ElementsAre("kept"));
  ASSERT_OK_AND_ASSIGN(std::vector<std::string> swept, f.storage->SweepLeftovers());
  EXPECT_THAT(swept, UnorderedElementsAre(".tmp-ck-9-123", ".deleted-ck-8"));
  EXPECT_FALSE(fs::exists(f.dir + "/.tmp-ck-9-123"));
  EXPECT_TRUE(fs::exists(f.dir + "/kept"));
}

TEST(DirectoryStorageTest, AMissingStorageDirectoryHoldsNothing) {
  DirectoryFixture f;
  DirectoryStorage fresh(*f.roots, "shared_fs", f.root + "/not-yet");
  ASSERT_OK_AND_ASSIGN(std::vector<std::string> ids, fresh.List());
  EXPECT_TRUE(ids.empty());
  EXPECT_OK(fresh.Delete("ck"));
  EXPECT_THAT(fresh.Open("ck", 100), StatusIs(absl::StatusCode::kNotFound));
}

}  // namespace
}  // namespace cohort::master::storage
