#include "master/experiments/log_policies.h"

#include <string>
#include <vector>

#include "common/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace cohort::master {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;
using Action = config::LogPolicy::Action;

std::vector<config::LogPolicy> Policies() {
  return {{"CUDA OOM", ".*CUDA out of memory.*", Action::kNone, std::nullopt},
          {"assert", R"(assert 0 <= self\.metrics_sigma)", Action::kCancelRetries, std::nullopt},
          {std::nullopt, "ECC", Action::kExcludeNode, std::nullopt},
          {"turned off", std::nullopt, Action::kCancelRetries, std::nullopt}};
}

TEST(LogPolicyMatcherTest, MatchesAnywhereInTheLineAsGosMatchString) {
  auto matcher = LogPolicyMatcher::Create(Policies());
  ASSERT_OK(matcher);
  EXPECT_THAT((*matcher)->Match("RuntimeError: CUDA out of memory. Tried to allocate"),
              ElementsAre(0));
  EXPECT_THAT((*matcher)->Match("  File x.py: assert 0 <= self.metrics_sigma (failed)"),
              ElementsAre(1));
  EXPECT_THAT((*matcher)->Match("uncorrectable ECC error; CUDA out of memory"), ElementsAre(0, 2));
  EXPECT_THAT((*matcher)->Match("assert 0 <= selfXmetrics_sigma"), IsEmpty());  // \. is a dot
  EXPECT_THAT((*matcher)->Match(""), IsEmpty());
}

TEST(LogPolicyMatcherTest, LabelsAndActions) {
  auto matcher = LogPolicyMatcher::Create(Policies());
  ASSERT_OK(matcher);
  EXPECT_EQ((*matcher)->label(0), "CUDA OOM");
  EXPECT_EQ((*matcher)->label(2), "ECC");  // no name: its pattern
  EXPECT_EQ((*matcher)->action(1), wire::LogPolicyAction::kCancelRetries);
  EXPECT_EQ((*matcher)->action(2), wire::LogPolicyAction::kExcludeNode);
  EXPECT_FALSE((*matcher)->empty());
}

TEST(LogPolicyMatcherTest, APolicyWithoutAPatternMatchesNothing) {
  auto matcher = LogPolicyMatcher::Create({{"off", std::nullopt, Action::kNone, std::nullopt}});
  ASSERT_OK(matcher);
  EXPECT_TRUE((*matcher)->empty());
  EXPECT_THAT((*matcher)->Match("anything"), IsEmpty());
}

TEST(LogPolicyMatcherTest, ABadPatternIsRefusedNamingThePolicy) {
  auto matcher = LogPolicyMatcher::Create(
      {{"ok", "x", Action::kNone, std::nullopt}, {"bad", "(", Action::kNone, std::nullopt}});
  ASSERT_FALSE(matcher.ok());
  EXPECT_THAT(std::string(matcher.status().message()),
              ::testing::StartsWith("log_policies[1].pattern: not a valid regular expression"));
}

TEST(LogPolicyMatcherTest, PathologicalPatternsOnLongLinesTakeLinearTime) {
  // (a*)*b backtracks exponentially in a backtracking engine; RE2 does not.
  auto matcher = LogPolicyMatcher::Create({{"p", "(a*)*b", Action::kNone, std::nullopt}});
  ASSERT_OK(matcher);
  EXPECT_THAT((*matcher)->Match(std::string(16 << 10, 'a')), IsEmpty());
}

wire::LogPolicyMatch M(wire::LogPolicyAction action, std::string allocation, std::string agent) {
  return {.policy = "p", .action = action, .allocation = allocation, .agent = agent};
}

TEST(LogPolicyDecisionTest, CancelRetriesCountsOnlyMatchesOfTheRunThatEnded) {
  const std::vector<wire::LogPolicyMatch> matches = {
      M(wire::LogPolicyAction::kCancelRetries, "7.a.1", "a1"),
      M(wire::LogPolicyAction::kNone, "7.a.2", "a1"),
      M(wire::LogPolicyAction::kExcludeNode, "7.a.2", "a2")};
  ASSERT_NE(CancelRetriesMatch(matches, "7.a.1"), nullptr);
  EXPECT_EQ(CancelRetriesMatch(matches, "7.a.1")->agent, "a1");
  EXPECT_EQ(CancelRetriesMatch(matches, "7.a.2"), nullptr);
}

TEST(LogPolicyDecisionTest, ExcludedAgentsAreThoseOfExcludeNodeMatchesInAnyRun) {
  const std::vector<wire::LogPolicyMatch> matches = {
      M(wire::LogPolicyAction::kExcludeNode, "7.a.1", "a1"),
      M(wire::LogPolicyAction::kCancelRetries, "7.a.2", "a2"),
      M(wire::LogPolicyAction::kExcludeNode, "7.b.1", "a3")};
  EXPECT_THAT(ExcludedAgents(matches), ElementsAre("a1", "a3"));
}

}  // namespace
}  // namespace cohort::master
