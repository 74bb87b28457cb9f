#include "slurm/slurm_output.h"

#include <string>

#include "absl/strings/str_join.h"
#include "common/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace cohort::slurm {
namespace {

using ::cohort::testing_support::IsOkAndHolds;
using ::cohort::testing_support::StatusIs;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

// A squeue line in SlurmClient's format from its fields.
std::string Line(std::initializer_list<std::string> fields) {
  return absl::StrJoin(fields, std::string(1, kFieldSeparator));
}

TEST(JobStateTest, ReadsSlurmsWordsAndKnowsWhichAreFinished) {
  EXPECT_EQ(ParseJobState("PENDING"), JobState::kPending);
  EXPECT_EQ(ParseJobState("NODE_FAIL"), JobState::kNodeFail);
  EXPECT_EQ(ParseJobState("CANCELLED by 0"), JobState::kCancelled);
  EXPECT_EQ(ParseJobState("CANCELLED+"), JobState::kCancelled);
  EXPECT_EQ(ParseJobState("REQUEUE_HOLD"), JobState::kPending);
  EXPECT_EQ(ParseJobState("STOPPED"), JobState::kSuspended);
  EXPECT_EQ(ParseJobState("pending"), JobState::kUnknown);
  EXPECT_EQ(ParseJobState(""), JobState::kUnknown);
  EXPECT_EQ(ParseJobState("WHATEVER"), JobState::kUnknown);
  EXPECT_TRUE(IsFinished(JobState::kCompleted));
  EXPECT_TRUE(IsFinished(JobState::kNodeFail));
  EXPECT_TRUE(IsFinished(JobState::kOutOfMemory));
  EXPECT_FALSE(IsFinished(JobState::kCompleting));
  EXPECT_FALSE(IsFinished(JobState::kSuspended));
  EXPECT_FALSE(IsFinished(JobState::kUnknown));
}

TEST(JobStateTest, NamesEveryStateWithSlurmsWordAndReadsItBack) {
  for (int s = 0; s <= static_cast<int>(JobState::kUnknown); ++s) {
    const JobState state = static_cast<JobState>(s);
    const std::string_view name = JobStateName(state);
    EXPECT_EQ(ParseJobState(absl::string_view(name.data(), name.size())), state) << name;
  }
  EXPECT_EQ(JobStateName(JobState::kOutOfMemory), "OUT_OF_MEMORY");
}

TEST(ExpandHostListTest, ExpandsRangesListsAndPadding) {
  EXPECT_THAT(ExpandHostList("n[1-3,5]"), IsOkAndHolds(ElementsAre("n1", "n2", "n3", "n5")));
  EXPECT_THAT(ExpandHostList("gpu[08-11],login"),
              IsOkAndHolds(ElementsAre("gpu08", "gpu09", "gpu10", "gpu11", "login")));
  EXPECT_THAT(ExpandHostList("r[1-2]n[1-2]"),
              IsOkAndHolds(ElementsAre("r1n1", "r1n2", "r2n1", "r2n2")));
  EXPECT_THAT(ExpandHostList("n1"), IsOkAndHolds(ElementsAre("n1")));
  EXPECT_THAT(ExpandHostList("n[7]-ib"), IsOkAndHolds(ElementsAre("n7-ib")));
  EXPECT_THAT(ExpandHostList(""), IsOkAndHolds(IsEmpty()));
  EXPECT_THAT(ExpandHostList("(null)"), IsOkAndHolds(IsEmpty()));
}

TEST(ExpandHostListTest, RefusesMalformedListsWithoutCrashing) {
  for (const char* bad : {"n[1-3", "n1-3]", "n[[1]]", "n[]", "n[a-b]", "n[3-1]", "n[1-]", "n[-1]",
                          "n[1,,2]", "a,,b", ",", "n[99999999999999999999]", "n]1[", "n[1-2]]"}) {
    EXPECT_THAT(ExpandHostList(bad), StatusIs(absl::StatusCode::kInvalidArgument)) << bad;
  }
}

TEST(ExpandHostListTest, RefusesListsThatWouldExpandToTooManyNames) {
  EXPECT_THAT(ExpandHostList("n[1-999999999]"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("more than")));
  EXPECT_THAT(ExpandHostList("a[1-1000]b[1-1000]"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("more than")));
  EXPECT_THAT(ExpandHostList("n[1-65536]"), IsOkAndHolds(::testing::SizeIs(65536)));
  EXPECT_THAT(ExpandHostList("n[1-65536],x"), StatusIs(absl::StatusCode::kInvalidArgument));
  std::string many = "n[1-40000]";
  many += ",m[1-40000]";
  EXPECT_THAT(ExpandHostList(many), StatusIs(absl::StatusCode::kInvalidArgument));
}

TEST(ParseSqueueLineTest, ReadsEveryField) {
  absl::StatusOr<JobInfo> job =
      ParseSqueueLine(Line({"42", "FAILED", "NonZeroExitCode", "768", "1:00", "n[1-2]", "t-1"}));
  ASSERT_OK(job);
  EXPECT_EQ(job->id, 42);
  EXPECT_EQ(job->state, JobState::kFailed);
  EXPECT_EQ(job->state_text, "FAILED");
  EXPECT_EQ(job->reason, "NonZeroExitCode");
  EXPECT_EQ(job->exit_code, 3);
  EXPECT_EQ(job->exit_signal, 0);
  EXPECT_EQ(job->time_limit, absl::Minutes(1));
  EXPECT_THAT(job->nodes, ElementsAre("n1", "n2"));
  EXPECT_EQ(job->name, "t-1");
}

TEST(ParseSqueueLineTest, KeepsSeparatorsAndSpacesInTheNameAndReadsSignals) {
  const std::string name = std::string("a b") + kFieldSeparator + "c";
  absl::StatusOr<JobInfo> job =
      ParseSqueueLine(Line({"7", "CANCELLED", "None", "15", "UNLIMITED", "n1", name}));
  ASSERT_OK(job);
  EXPECT_EQ(job->name, name);
  EXPECT_EQ(job->exit_code, 0);
  EXPECT_EQ(job->exit_signal, 15);
  EXPECT_EQ(job->time_limit, absl::InfiniteDuration());
}

TEST(ParseSqueueLineTest, ReadsOddFieldsLeniently) {
  absl::StatusOr<JobInfo> job = ParseSqueueLine(
      Line({"9", "NEWSTATE", "ReqNodeNotAvail, UnavailableNodes:n2", "x", "soon", "n[1-", ""}));
  ASSERT_OK(job);
  EXPECT_EQ(job->state, JobState::kUnknown);
  EXPECT_EQ(job->state_text, "NEWSTATE");
  EXPECT_EQ(job->reason, "ReqNodeNotAvail, UnavailableNodes:n2");
  EXPECT_EQ(job->exit_code, 0);
  EXPECT_EQ(job->time_limit, absl::InfiniteDuration());
  EXPECT_THAT(job->nodes, IsEmpty());
  EXPECT_EQ(job->name, "");
}

TEST(ParseSqueueLineTest, RefusesLinesWithoutAFullRecordOrAPlainId) {
  for (const std::string& bad :
       {std::string(""), std::string("squeue: error: Invalid job id specified"),
        Line({"1", "RUNNING", "None", "0", "1:00", "n1"}),
        Line({"12_3", "RUNNING", "None", "0", "1:00", "n1", "array"}),
        Line({"abc", "RUNNING", "None", "0", "1:00", "n1", "x"}),
        Line({"-4", "RUNNING", "None", "0", "1:00", "n1", "x"}),
        Line({"0", "RUNNING", "None", "0", "1:00", "n1", "x"}),
        Line({"99999999999999999999999", "RUNNING", "None", "0", "1:00", "n1", "x"})}) {
    EXPECT_THAT(ParseSqueueLine(bad), StatusIs(absl::StatusCode::kInvalidArgument)) << bad;
  }
}

TEST(ParseSqueueLineTest, SurvivesAHugeLine) {
  const std::string huge(8 << 20, 'x');
  EXPECT_THAT(ParseSqueueLine(huge), StatusIs(absl::StatusCode::kInvalidArgument));
  absl::StatusOr<JobInfo> job = ParseSqueueLine(Line({"5", "PENDING", "None", "0", "1", "", huge}));
  ASSERT_OK(job);
  EXPECT_EQ(job->name.size(), huge.size());
  EXPECT_EQ(job->time_limit, absl::Minutes(1));
}

TEST(ParseSinfoLineTest, ReadsANodeInAPartition) {
  const std::string sep(1, kFieldSeparator);
  absl::StatusOr<NodeInfo> node =
      ParseSinfoLine("n1" + sep + "MIXED" + sep + "1/1/0/2" + sep + "debug*" + sep + "none");
  ASSERT_OK(node);
  EXPECT_EQ(node->name, "n1");
  EXPECT_EQ(node->state, "mixed");
  EXPECT_TRUE(node->usable);
  EXPECT_EQ(node->cpus, 2);
  EXPECT_EQ(node->cpus_allocated, 1);
  EXPECT_THAT(node->partitions, ElementsAre("debug"));
  EXPECT_EQ(node->reason, "");
  node = ParseSinfoLine("n2" + sep + "down*" + sep + "0/0/2/2" + sep + "gpu" + sep +
                        "Not responding" + sep + "really");
  ASSERT_OK(node);
  EXPECT_FALSE(node->usable);
  EXPECT_EQ(node->reason, "Not responding" + sep + "really");
}

TEST(ParseSinfoLineTest, RefusesMalformedLines) {
  const std::string sep(1, kFieldSeparator);
  for (const std::string& bad :
       {std::string(""), std::string("sinfo: error: something"),
        "n1" + sep + "idle" + sep + "0/2/0/2" + sep + "debug",
        sep + "idle" + sep + "0/2/0/2" + sep + "debug" + sep + "none",
        "n1" + sep + "idle" + sep + "0/2/0" + sep + "debug" + sep + "none",
        "n1" + sep + "idle" + sep + "a/b/c/d" + sep + "debug" + sep + "none",
        "n1" + sep + "idle" + sep + "0/2/0/99999999999999" + sep + "debug" + sep + "none"}) {
    EXPECT_THAT(ParseSinfoLine(bad), StatusIs(absl::StatusCode::kInvalidArgument)) << bad;
  }
}

TEST(IsUsableNodeStateTest, TakesOnlyRespondingNodesThatRunJobs) {
  for (const char* usable :
       {"idle", "mixed", "allocated", "completing", "idle$", "mixed-", "allocated@"}) {
    EXPECT_TRUE(IsUsableNodeState(usable)) << usable;
  }
  for (const char* not_usable :
       {"down",    "down*",   "idle*",    "allocated*",  "drained", "draining", "drained*", "fail",
        "failing", "unknown", "unknown*", "future",      "inval",   "maint",    "reserved", "idle~",
        "idle#",   "idle%",   "idle!",    "mixed+drain", "",        "planned"}) {
    EXPECT_FALSE(IsUsableNodeState(not_usable)) << not_usable;
  }
}

TEST(ParseSbatchAnswerTest, FindsTheIdAmongWarnings) {
  EXPECT_THAT(ParseSbatchAnswer("123\n"), IsOkAndHolds(123));
  EXPECT_THAT(ParseSbatchAnswer("77;cluster\n"), IsOkAndHolds(77));
  EXPECT_THAT(ParseSbatchAnswer("sbatch: warning: can't honor --ntasks-per-node\n88\n"),
              IsOkAndHolds(88));
}

TEST(ParseSbatchAnswerTest, RefusesAnswersWithoutExactlyOneId) {
  for (const char* bad : {"", "\n", "Submitted batch job 5", "sbatch: error: x", "1\n2\n", "-3",
                          "0", "12a", "99999999999999999999999"}) {
    EXPECT_THAT(ParseSbatchAnswer(bad), StatusIs(absl::StatusCode::kInvalidArgument)) << bad;
  }
}

TEST(ParseSlurmDurationTest, ReadsSlurmsForms) {
  EXPECT_THAT(ParseSlurmDuration("UNLIMITED"), IsOkAndHolds(absl::InfiniteDuration()));
  EXPECT_THAT(ParseSlurmDuration("5"), IsOkAndHolds(absl::Minutes(5)));
  EXPECT_THAT(ParseSlurmDuration("1:30"), IsOkAndHolds(absl::Seconds(90)));
  EXPECT_THAT(ParseSlurmDuration("2:00:01"), IsOkAndHolds(absl::Hours(2) + absl::Seconds(1)));
  EXPECT_THAT(ParseSlurmDuration("1-00:00:00"), IsOkAndHolds(absl::Hours(24)));
  EXPECT_THAT(ParseSlurmDuration("2-3"), IsOkAndHolds(absl::Hours(51)));
  EXPECT_THAT(ParseSlurmDuration("1-1:30"), IsOkAndHolds(absl::Minutes(25 * 60 + 30)));
}

TEST(ParseSlurmDurationTest, RefusesOtherText) {
  for (const char* bad : {"", "INVALID", "NOT_SET", "1:2:3:4", "-5", "a:b", "1-", "1-2-3", "1::2",
                          "9999999999", "12345678-00:00:00"}) {
    EXPECT_THAT(ParseSlurmDuration(bad), StatusIs(absl::StatusCode::kInvalidArgument)) << bad;
  }
}

}  // namespace
}  // namespace cohort::slurm
