// StorageRoots against a real file system: the roots an administrator may allow, the
// experiments' storage directories it accepts, and the links and '..' it never follows.

#include "master/storage/storage_roots.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include <cstdlib>

namespace cohort::master::storage {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

// A fresh directory, removed with everything in it (links are removed, not followed).
class ScratchDir {
 public:
  ScratchDir() {
    std::string pattern = (fs::temp_directory_path() / "cohort_storage_test_XXXXXX").string();
    path_ = ::mkdtemp(pattern.data());
  }
  ~ScratchDir() {
    std::error_code ignored;
    fs::remove_all(path_, ignored);
  }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

class StorageRootsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    data_ = dir_.path() / "master";
    shared_ = dir_.path() / "shared";
    fs::create_directories(data_);
    fs::create_directories(shared_ / "team");
    std::ofstream(data_ / "master.db") << "secrets";
  }
  StorageRoots Roots() {
    absl::StatusOr<StorageRoots> roots = StorageRoots::Create(data_.string(), {shared_.string()});
    EXPECT_TRUE(roots.ok()) << roots.status();
    return *std::move(roots);
  }

  ScratchDir dir_;
  fs::path data_, shared_;
};

TEST_F(StorageRootsTest, ARootMayNeitherHoldTheDataDirectoryNorLieInIt) {
  absl::StatusOr<StorageRoots> parent = StorageRoots::Create(data_.string(), {dir_.path().string()});
  ASSERT_FALSE(parent.ok());
  EXPECT_THAT(parent.status().message(), HasSubstr("holds the master's data directory"));
  fs::create_directories(data_ / "sub");
  absl::StatusOr<StorageRoots> inside =
      StorageRoots::Create(data_.string(), {(data_ / "sub").string()});
  ASSERT_FALSE(inside.ok());
  EXPECT_THAT(inside.status().message(), HasSubstr("lies inside the master's data directory"));
  EXPECT_FALSE(StorageRoots::Create(data_.string(), {"relative/dir"}).ok());
  EXPECT_FALSE(StorageRoots::Create(data_.string(), {(dir_.path() / "missing").string()}).ok());
  // Through a link to the data directory's parent: refused all the same.
  fs::create_directory_symlink(dir_.path(), dir_.path() / "link");
  EXPECT_FALSE(StorageRoots::Create(data_.string(), {(dir_.path() / "link").string()}).ok());
}

TEST_F(StorageRootsTest, OnlyStorageInsideARootIsAcceptedNamingTheRoots) {
  StorageRoots roots = Roots();
  EXPECT_TRUE(roots.CheckStorageDir("f", (shared_ / "team").string()).ok());
  EXPECT_TRUE(roots.CheckStorageDir("f", shared_.string()).ok());
  EXPECT_TRUE(roots.CheckStorageDir("f", (data_ / "checkpoints").string()).ok());
  EXPECT_TRUE(roots.CheckStorageDir("f", (shared_ / "not-yet" / "made").string()).ok());
  for (const std::string& bad :
       {dir_.path().string(), data_.string(), (shared_ / ".." / "master").string(),
        (data_ / "checkpoints" / "..").string(), std::string("/etc"), std::string("relative")}) {
    absl::Status s = roots.CheckStorageDir("checkpoint_storage.host_path", bad);
    ASSERT_FALSE(s.ok()) << bad;
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(s.message(), HasSubstr("checkpoint_storage.host_path"));
    EXPECT_THAT(s.message(), HasSubstr(shared_.string()));
    EXPECT_THAT(s.message(), HasSubstr("--checkpoint-storage-roots"));
  }
  // A link inside a root that leads to the data directory's parent.
  fs::create_directory_symlink(dir_.path(), shared_ / "escape");
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
  ASSERT_TRUE(roots.Remove(storage.string(), "ck-1").ok());
  EXPECT_FALSE(fs::exists(storage / "ck-1"));
  EXPECT_TRUE(fs::exists(data_ / "master.db"));
  // A checkpoint that is itself a link: the link goes, its target stays.
  fs::create_directory_symlink(data_, storage / "ck-2");
  ASSERT_TRUE(roots.Remove(storage.string(), "ck-2").ok());
  EXPECT_FALSE(fs::is_symlink(storage / "ck-2"));
  EXPECT_TRUE(fs::exists(data_ / "master.db"));
  // A storage directory swapped for a link to the data directory's parent: refused.
  fs::create_directory_symlink(dir_.path(), shared_ / "swapped");
  absl::Status s = roots.Remove((shared_ / "swapped").string(), "master");
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
  EXPECT_TRUE(fs::exists(data_ / "master.db"));
  // '..' and separators never name an entry; outside every root is refused.
  EXPECT_FALSE(roots.Remove(storage.string(), "../../master").ok());
  EXPECT_FALSE(roots.Remove(dir_.path().string(), "master").ok());
  EXPECT_TRUE(fs::exists(data_ / "master.db"));
  EXPECT_TRUE(roots.Remove(storage.string(), "never-there").ok());
}

TEST_F(StorageRootsTest, OpenDirRefusesALinkedCheckpointAndRenameStaysInside) {
  StorageRoots roots = Roots();
  const fs::path storage = shared_ / "team";
  fs::create_directory_symlink(data_, storage / "ck-link");
  absl::StatusOr<UniqueFd> linked = roots.OpenDir(storage.string(), "ck-link");
  EXPECT_EQ(linked.status().code(), absl::StatusCode::kFailedPrecondition);
  fs::create_directories(storage / "ck-3");
  absl::StatusOr<UniqueFd> real = roots.OpenDir(storage.string(), "ck-3");
  ASSERT_TRUE(real.ok()) << real.status();
  EXPECT_EQ(fs::canonical(real->ProcPath()), fs::canonical(storage / "ck-3"));
  EXPECT_EQ(roots.OpenDir(storage.string(), "absent").status().code(),
            absl::StatusCode::kNotFound);
  ASSERT_TRUE(roots.Rename(storage.string(), "ck-3", ".deleted-ck-3").ok());
  EXPECT_TRUE(fs::exists(storage / ".deleted-ck-3"));
  EXPECT_FALSE(roots.Rename(storage.string(), "ck-3", "../x").ok());
}

}  // namespace
}  // namespace cohort::master::storage
