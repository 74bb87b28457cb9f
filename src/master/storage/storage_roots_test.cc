// StorageRoots against a real file system: the roots an administrator may allow, the
// experiments' storage directories it accepts, and the links and '..' it never follows.

#include "master/storage/storage_roots.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "common/testing/status_matchers.h"
#include "common/testing/temp_dir.h"

namespace cohort::master::storage {
namespace {

namespace fs = std::filesystem;
using ::cohort::testing_support::StatusIs;
using ::cohort::testing_support::TempDir;
using ::testing::HasSubstr;

class StorageRootsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    data_ = root_ / "master";
    shared_ = root_ / "shared";
    fs::create_directories(data_);
    fs::create_directories(shared_ / "team");
    std::ofstream(data_ / "master.db") << "secrets";
  }
  StorageRoots Roots() {
    absl::StatusOr<StorageRoots> roots = StorageRoots::Create(data_.string(), {shared_.string()});
    EXPECT_OK(roots);
    return *std::move(roots);
  }

  TempDir dir_{"cohort_storage_test"};  // removed with everything in it (links not followed)
  const fs::path root_ = dir_.path();
  fs::path data_, shared_;
};

TEST_F(StorageRootsTest, ARootMayNeitherHoldTheDataDirectoryNorLieInIt) {
  absl::StatusOr<StorageRoots> parent = StorageRoots::Create(data_.string(), {root_.string()});
  ASSERT_FALSE(parent.ok());
  EXPECT_THAT(parent.status().message(), HasSubstr("holds the master's data directory"));
  fs::create_directories(data_ / "sub");
  absl::StatusOr<StorageRoots> inside =
      StorageRoots::Create(data_.string(), {(data_ / "sub").string()});
  ASSERT_FALSE(inside.ok());
  EXPECT_THAT(inside.status().message(), HasSubstr("lies inside the master's data directory"));
  EXPECT_FALSE(StorageRoots::Create(data_.string(), {"relative/dir"}).ok());
  EXPECT_FALSE(StorageRoots::Create(data_.string(), {(root_ / "missing").string()}).ok());
  // Through a link to the data directory's parent: refused all the same.
  fs::create_directory_symlink(root_, root_ / "link");
  EXPECT_FALSE(StorageRoots::Create(data_.string(), {(root_ / "link").string()}).ok());
}

TEST_F(StorageRootsTest, OnlyStorageInsideARootIsAcceptedNamingTheRoots) {
  StorageRoots roots = Roots();
  EXPECT_OK(roots.CheckStorageDir("f", (shared_ / "team").string()));
  EXPECT_OK(roots.CheckStorageDir("f", shared_.string()));
  EXPECT_OK(roots.CheckStorageDir("f", (data_ / "checkpoints").string()));
  EXPECT_OK(roots.CheckStorageDir("f", (shared_ / "not-yet" / "made").string()));
  for (const std::string& bad :
       {root_.string(), data_.string(), (shared_ / ".." / "master").string(),
        (data_ / "checkpoints" / "..").string(), std::string("/etc"), std::string("relative")}) {
    absl::Status s = roots.CheckStorageDir("checkpoint_storage.host_path", bad);
    ASSERT_THAT(
        s, StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("checkpoint_storage.host_path")))
        << bad;
    EXPECT_THAT(s.message(), HasSubstr(shared_.string()));
    EXPECT_THAT(s.message(), HasSubstr("--checkpoint-storage-roots"));
  }
  // A link inside a root that leads to the data directory's parent.
  fs::create_directory_symlink(root_, shared_ / "escape");
  absl::Status linked = roots.CheckStorageDir("f", (shared_ / "escape").string());
  EXPECT_THAT(linked.message(), HasSubstr("symbolic link"));
}

TEST_F(StorageRootsTest, RemoveFollowsNoLinkAndStaysInTheStorage) {
  StorageRoots roots = Roots();
  const fs::path storage = shared_ / "team";
  fs::create_directories(storage / "ck-1" / "sub");
  std::ofstream(storage / "ck-1" / "sub" / "w.pt") << "weights";
  // A link inside the checkpoint to the master's data directory: removed, never followed.
  fs::create_directory_symlink(data_, storage / "ck-1" / "to-master");
  ASSERT_OK(roots.Remove(storage.string(), "ck-1"));
  EXPECT_FALSE(fs::exists(storage / "ck-1"));
  EXPECT_TRUE(fs::exists(data_ / "master.db"));
  // A checkpoint that is itself a link: the link goes, its target stays.
  fs::create_directory_symlink(data_, storage / "ck-2");
  ASSERT_OK(roots.Remove(storage.string(), "ck-2"));
  EXPECT_FALSE(fs::is_symlink(storage / "ck-2"));
  EXPECT_TRUE(fs::exists(data_ / "master.db"));
  // A storage directory swapped for a link to the data directory's parent: refused.
  fs::create_directory_symlink(root_, shared_ / "swapped");
  absl::Status s = roots.Remove((shared_ / "swapped").string(), "master");
  EXPECT_THAT(s, StatusIs(absl::StatusCode::kFailedPrecondition));
  EXPECT_TRUE(fs::exists(data_ / "master.db"));
  // '..' and separators never name an entry; outside every root is refused.
  EXPECT_FALSE(roots.Remove(storage.string(), "../../master").ok());
  EXPECT_FALSE(roots.Remove(root_.string(), "master").ok());
  EXPECT_TRUE(fs::exists(data_ / "master.db"));
  EXPECT_OK(roots.Remove(storage.string(), "never-there"));
}

TEST_F(StorageRootsTest, OpenDirRefusesALinkedCheckpointAndRenameStaysInside) {
  StorageRoots roots = Roots();
  const fs::path storage = shared_ / "team";
  fs::create_directory_symlink(data_, storage / "ck-link");
  absl::StatusOr<UniqueFd> linked = roots.OpenDir(storage.string(), "ck-link");
  EXPECT_THAT(linked, StatusIs(absl::StatusCode::kFailedPrecondition));
  fs::create_directories(storage / "ck-3");
  absl::StatusOr<UniqueFd> real = roots.OpenDir(storage.string(), "ck-3");
  ASSERT_OK(real);
  EXPECT_EQ(fs::canonical(real->ProcPath()), fs::canonical(storage / "ck-3"));
  EXPECT_THAT(roots.OpenDir(storage.string(), "absent"), StatusIs(absl::StatusCode::kNotFound));
  ASSERT_OK(roots.Rename(storage.string(), "ck-3", ".deleted-ck-3"));
  EXPECT_TRUE(fs::exists(storage / ".deleted-ck-3"));
  EXPECT_FALSE(roots.Rename(storage.string(), "ck-3", "../x").ok());
}

}  // namespace
}  // namespace cohort::master::storage
