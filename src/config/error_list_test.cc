#include "config/error_list.h"

#include "common/testing/status_matchers.h"
#include "gtest/gtest.h"

namespace cohort::config {
namespace {

using ::cohort::testing_support::StatusIs;

TEST(ErrorListTest, ListsEveryErrorOnItsOwnLine) {
  ErrorList errors;
  EXPECT_OK(errors.ToStatus());
  errors.Add("resources.slots_per_trial", "must be >= 1, got -2");
  errors.Add("", "expected a map, got list");
  absl::Status status = errors.ToStatus();
  EXPECT_THAT(status, StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_EQ(status.message(),
            "resources.slots_per_trial: must be >= 1, got -2\nexpected a map, got list");
  EXPECT_EQ(ConfigErrors(status), errors.errors());
  EXPECT_TRUE(ConfigErrors(absl::OkStatus()).empty());
}

TEST(ErrorListTest, JoinsPaths) {
  EXPECT_EQ(JoinPath("", "name"), "name");
  EXPECT_EQ(JoinPath("resources", "devices"), "resources.devices");
  EXPECT_EQ(JoinPath("bind_mounts", "[0]"), "bind_mounts[0]");
}

TEST(ErrorListTest, EditDistanceCountsEdits) {
  EXPECT_EQ(EditDistance("", "abc"), 3);
  EXPECT_EQ(EditDistance("slot_per_trial", "slots_per_trial"), 1);
  EXPECT_EQ(EditDistance("kitten", "sitting"), 3);
  EXPECT_EQ(EditDistance("same", "same"), 0);
}

TEST(ErrorListTest, SuggestsOnlyCloseCandidates) {
  const std::vector<std::string> keys = {"slots_per_trial", "max_slots", "priority", "weight"};
  EXPECT_EQ(SuggestClosest("slot_per_trial", keys), "slots_per_trial");
  EXPECT_EQ(SuggestClosest("wieght", keys), "weight");
  EXPECT_EQ(SuggestClosest("completely_different", keys), "");
}

}  // namespace
}  // namespace cohort::config
