#include "master/storage/checkpoint_storage_conformance.h"

#include <filesystem>

namespace cohort::master::storage {
namespace {

namespace fs = std::filesystem;
using ::cohort::testing_support::StatusIs;
using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

TEST_P(CheckpointStorageConformance, StoreThenOpenListsEveryFileWithItsBytes) {
  ASSERT_OK(storage().Store("ck-1", LocalCheckpoint("a", 1000)));
  ASSERT_OK_AND_ASSIGN(CheckpointListing files, storage().Open("ck-1", 100));
  EXPECT_EQ(files.id, "ck-1");
  EXPECT_EQ(files.bytes, 1000 + 12);
  EXPECT_THAT(files.entries, Contains("model.pt"));
  EXPECT_THAT(files.entries, Contains("meta/step.json"));
  // Each directory before what it holds.
  const auto meta = std::find(files.entries.begin(), files.entries.end(), "meta");
  const auto step = std::find(files.entries.begin(), files.entries.end(), "meta/step.json");
  ASSERT_NE(meta, files.entries.end());
  EXPECT_LT(meta, step);
  EXPECT_EQ(Read(files.local_dir + "/model.pt"), std::string(1000, 'w'));
}

TEST_P(CheckpointStorageConformance, CheckSaysWhetherACheckpointIsStored) {
  EXPECT_THAT(storage().Check("ck-9"), StatusIs(absl::StatusCode::kNotFound, HasSubstr("ck-9")));
  ASSERT_OK(storage().Store("ck-9", LocalCheckpoint("c", 1)));
  EXPECT_OK(storage().Check("ck-9"));
  EXPECT_THAT(storage().Check("../ck-9"), StatusIs(absl::StatusCode::kInvalidArgument));
  ASSERT_OK(storage().Delete("ck-9"));
  EXPECT_THAT(storage().Check("ck-9"), StatusIs(absl::StatusCode::kNotFound));
}

TEST_P(CheckpointStorageConformance, FetchCopiesTheCheckpointOut) {
  ASSERT_OK(storage().Store("ck-2", LocalCheckpoint("b", 10)));
  testing_support::TempDir into;
  ASSERT_OK(storage().Fetch("ck-2", into.path()));
  EXPECT_EQ(Read(into.path() + "/model.pt"), std::string(10, 'w'));
  EXPECT_EQ(Read(into.path() + "/meta/step.json"), R"({"batch": 7})");
}

TEST_P(CheckpointStorageConformance, ListNamesStoredCheckpointsSortedAndDeleteRemovesThem) {
  ASSERT_OK_AND_ASSIGN(std::vector<std::string> empty, storage().List());
  EXPECT_THAT(empty, IsEmpty());
  ASSERT_OK(storage().Store("ck-b", LocalCheckpoint("b", 1)));
  ASSERT_OK(storage().Store("ck-a", LocalCheckpoint("a", 1)));
  ASSERT_OK_AND_ASSIGN(std::vector<std::string> both, storage().List());
  EXPECT_THAT(both, ElementsAre("ck-a", "ck-b"));
  ASSERT_OK(storage().Delete("ck-a"));
  ASSERT_OK_AND_ASSIGN(std::vector<std::string> one, storage().List());
  EXPECT_THAT(one, ElementsAre("ck-b"));
  EXPECT_THAT(storage().Open("ck-a", 100), StatusIs(absl::StatusCode::kNotFound));
  EXPECT_OK(storage().Delete("ck-a")) << "deleting what is gone is done";
}

TEST_P(CheckpointStorageConformance, UnknownCheckpointsAreNotFoundNamingThem) {
  EXPECT_THAT(storage().Open("nope", 100),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("nope")));
  testing_support::TempDir into;
  EXPECT_THAT(storage().Fetch("nope", into.path()), StatusIs(absl::StatusCode::kNotFound));
  EXPECT_OK(storage().Delete("nope"));
}

TEST_P(CheckpointStorageConformance, IdsThatAreNotOnePlainNameAreRefusedBeforeAnything) {
  const std::string from = LocalCheckpoint("c", 1);
  for (const std::string& bad : {std::string(""), std::string(".."), std::string("../x"),
                                 std::string("a/b"), std::string(".hidden")}) {
    EXPECT_THAT(storage().Store(bad, from), StatusIs(absl::StatusCode::kInvalidArgument)) << bad;
    EXPECT_THAT(storage().Open(bad, 100), StatusIs(absl::StatusCode::kInvalidArgument)) << bad;
    EXPECT_THAT(storage().Delete(bad), StatusIs(absl::StatusCode::kInvalidArgument)) << bad;
  }
  ASSERT_OK_AND_ASSIGN(std::vector<std::string> ids, storage().List());
  EXPECT_THAT(ids, IsEmpty());
}

TEST_P(CheckpointStorageConformance, AStoredCheckpointIsNeverReplaced) {
  ASSERT_OK(storage().Store("ck-3", LocalCheckpoint("first", 5)));
  EXPECT_THAT(storage().Store("ck-3", LocalCheckpoint("second", 9)),
              StatusIs(absl::StatusCode::kAlreadyExists));
  ASSERT_OK_AND_ASSIGN(CheckpointListing files, storage().Open("ck-3", 100));
  EXPECT_EQ(files.bytes, 5 + 12) << "the first one stays";
}

TEST_P(CheckpointStorageConformance, AFailedStoreLeavesNothingUnderTheId) {
  const std::string from = LocalCheckpoint("linked", 3);
  fs::create_symlink("/etc/passwd", fs::path(from) / "meta" / "passwd");
  EXPECT_THAT(storage().Store("ck-4", from),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("passwd")));
  EXPECT_THAT(storage().Open("ck-4", 100), StatusIs(absl::StatusCode::kNotFound));
  ASSERT_OK_AND_ASSIGN(std::vector<std::string> ids, storage().List());
  EXPECT_THAT(ids, IsEmpty()) << "no half-written checkpoint is listed";
}

TEST_P(CheckpointStorageConformance, OpenRefusesACheckpointWithMoreEntriesThanAsked) {
  ASSERT_OK(storage().Store("ck-5", LocalCheckpoint("e", 1)));
  EXPECT_THAT(storage().Open("ck-5", 2),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("more than 2")));
}

}  // namespace
}  // namespace cohort::master::storage
