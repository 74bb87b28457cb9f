#include "master/logs/policy_matches.h"

#include <memory>
#include <thread>

#include "common/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "master/db/sqlite_database.h"
#include "master/db/testing/db_test_helpers.h"

namespace cohort::master::logs {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::SizeIs;

wire::LogPolicyMatch Match(const std::string& policy, wire::LogPolicyAction action,
                           const std::string& allocation, const std::string& agent) {
  wire::LogPolicyMatch m;
  m.policy = policy;
  m.action = action;
  m.allocation = allocation;
  m.agent = agent;
  m.rank = 1;
  m.line = "CUDA error: out of memory";
  return m;
}

class PolicyMatchesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_OK_AND_ASSIGN(db_, SqliteDatabase::Open(":memory:"));
    ASSERT_OK_AND_ASSIGN(int64_t experiment, db_->InsertExperiment(MakeExperiment("e")));
    ASSERT_OK_AND_ASSIGN(trial_, db_->InsertTrial(MakeTrial(experiment)));
    matches_ = std::make_unique<PolicyMatches>(*db_, clock_);
  }
  FakeClock clock_{absl::FromUnixSeconds(1700000000)};
  std::unique_ptr<SqliteDatabase> db_;
  std::unique_ptr<PolicyMatches> matches_;
  int64_t trial_ = 0;
};

TEST_F(PolicyMatchesTest, RecordStoresStampsAndDescribesEachMatch) {
  ASSERT_OK_AND_ASSIGN(
      std::vector<std::string> notes,
      matches_->Record(trial_, {Match("oom", wire::LogPolicyAction::kCancelRetries, "a-1", "n1")}));
  ASSERT_THAT(notes, SizeIs(1));
  EXPECT_THAT(notes[0], HasSubstr("log policy \"oom\" (cancel_retries) matched on agent n1"));
  EXPECT_THAT(notes[0], HasSubstr("rank 1"));
  std::vector<wire::LogPolicyMatch> kept = matches_->Of(trial_);
  ASSERT_THAT(kept, SizeIs(1));
  EXPECT_EQ(kept[0].time_ms, 1700000000000);
  EXPECT_THAT(matches_->SeenIn(trial_, "a-1"), ElementsAre("oom"));
  EXPECT_THAT(matches_->SeenIn(trial_, "a-2"), IsEmpty()) << "another run has seen nothing";
}

TEST_F(PolicyMatchesTest, TheDecisionsReadTheirActions) {
  ASSERT_OK(
      matches_
          ->Record(trial_, {Match("bad-node", wire::LogPolicyAction::kExcludeNode, "a-1", "n1"),
                            Match("oom", wire::LogPolicyAction::kCancelRetries, "a-1", "n1")})
          .status());
  EXPECT_THAT(matches_->ExcludedAgents(trial_), ElementsAre("n1"));
  const std::map<int64_t, std::set<std::string>> all = matches_->AllExcludedAgents();
  ASSERT_EQ(all.size(), 1u);
  EXPECT_THAT(all.at(trial_), ElementsAre("n1"));
  std::optional<wire::LogPolicyMatch> cancel = matches_->CancelRetriesMatch(trial_, "a-1");
  ASSERT_TRUE(cancel.has_value());
  EXPECT_EQ(cancel->policy, "oom");
  EXPECT_FALSE(matches_->CancelRetriesMatch(trial_, "a-2").has_value())
      << "cancel_retries holds for the run it matched in";
  EXPECT_THAT(matches_->ExcludedAgents(trial_ + 1), IsEmpty());
}

TEST_F(PolicyMatchesTest, LoadReadsBackWhatWasStoredAndForgetDropsATrial) {
  ASSERT_OK(
      matches_->Record(trial_, {Match("p", wire::LogPolicyAction::kNone, "a-1", "n1")}).status());
  PolicyMatches restarted(*db_, clock_);
  ASSERT_OK(restarted.Load());
  ASSERT_THAT(restarted.Of(trial_), SizeIs(1));
  EXPECT_EQ(restarted.Of(trial_)[0].line, "CUDA error: out of memory");
  restarted.Forget(trial_);
  EXPECT_THAT(restarted.Of(trial_), IsEmpty());
}

TEST_F(PolicyMatchesTest, ATrialKeepsAtMostItsBound) {
  std::vector<wire::LogPolicyMatch> many;
  for (size_t i = 0; i < wire::kMaxLogPolicyMatches + 5; ++i) {
    many.push_back(Match("p" + std::to_string(i), wire::LogPolicyAction::kNone, "a-1", "n1"));
  }
  ASSERT_OK_AND_ASSIGN(std::vector<std::string> notes, matches_->Record(trial_, many));
  EXPECT_THAT(notes, SizeIs(wire::kMaxLogPolicyMatches));
  EXPECT_THAT(matches_->Of(trial_), SizeIs(wire::kMaxLogPolicyMatches));
  ASSERT_OK_AND_ASSIGN(auto stored, db_->ListLogPolicyMatches());
  EXPECT_THAT(stored, SizeIs(wire::kMaxLogPolicyMatches)) << "nothing past the bound is stored";
}

TEST_F(PolicyMatchesTest, AnUnknownTrialIsRefusedByTheDatabaseAndNothingIsKept) {
  absl::StatusOr<std::vector<std::string>> notes =
      matches_->Record(trial_ + 100, {Match("p", wire::LogPolicyAction::kNone, "a-1", "n1")});
  EXPECT_THAT(notes, testing_support::StatusIs(absl::StatusCode::kNotFound));
  EXPECT_THAT(matches_->Of(trial_ + 100), IsEmpty());
}

}  // namespace
}  // namespace cohort::master::logs
