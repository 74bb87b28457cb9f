#include "slurm/sbatch_args.h"

#include <string>
#include <vector>

#include "common/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace cohort::slurm {
namespace {

using ::cohort::testing_support::IsOk;
using ::cohort::testing_support::StatusIs;
using ::testing::AllOf;
using ::testing::HasSubstr;

TEST(CheckSbatchArgsTest, AllowsTheSafeOptionsInEveryForm) {
  EXPECT_OK(CheckSbatchArgs({}));
  EXPECT_OK(CheckSbatchArgs({"--time=1", "-t", "2:00:00", "--mem=4G", "--qos=high", "-q", "low",
                             "--account=ml", "-A", "ml", "--constraint=a100", "--exclusive",
                             "--exclusive=user", "--gres=gpu:2", "--signal=B:USR1@60", "--nice",
                             "--nice=5", "-s", "--comment=x y z"}));
  // A short option's value may itself start with '-': sbatch reads it as the value.
  EXPECT_OK(CheckSbatchArgs({"-x", "--weird-node-name"}));
}

TEST(CheckSbatchArgsTest, RefusesWhatWouldTakeTheJobAwayFromCohortNamingWhy) {
  struct Case {
    std::vector<std::string> args;
    const char* named;
    const char* why;
  };
  for (const Case& c : std::vector<Case>{
           {{"--wrap=rm -rf ~"}, "--wrap", "batch script"},
           {{"--parsable"}, "--parsable", "answer"},
           {{"--array=1-4"}, "--array", "job arrays"},
           {{"-a", "1-4"}, "-a", "job arrays"},
           {{"--export=ALL"}, "--export", "environment"},
           {{"--export-file=/etc/x"}, "--export-file", "environment"},
           {{"-o", "/tmp/x"}, "-o", "output"},
           {{"--error=/tmp/x"}, "--error", "output"},
           {{"-D", "/"}, "-D", "working directory"},
           {{"--job-name=x"}, "--job-name", "names its jobs"},
           {{"-J", "x"}, "-J", "names its jobs"},
           {{"-N", "4"}, "-N", "resources"},
           {{"--ntasks=8"}, "--ntasks", "resources"},
           {{"--ntasks-per-node=8"}, "--ntasks-per-node", "resources"},
           {{"--partition=gpu"}, "--partition", "slurm.partition"},
           {{"--hold"}, "--hold", "start"},
           {{"--test-only"}, "--test-only", "not be submitted"},
           {{"--wait"}, "--wait", "until the job ends"},
           {{"--dependency=afterok:1"}, "--dependency", "orders"},
           {{"--requeue"}, "--requeue", "no-requeue"},
           {{"--no-kill"}, "--no-kill", "node's failure"},
           {{"-M", "other"}, "-M", "one cluster"},
           {{"--uid=0"}, "--uid", "master's user"},
       }) {
    EXPECT_THAT(CheckSbatchArgs(c.args),
                StatusIs(absl::StatusCode::kInvalidArgument,
                         AllOf(HasSubstr(c.named), HasSubstr("refused"), HasSubstr(c.why))))
        << c.args[0];
  }
}

TEST(CheckSbatchArgsTest, RefusesUnknownOptionsAndAbbreviationsListingTheAllowedOnes) {
  for (const char* unknown : {"--par", "--wra=x", "--bogus", "--container=x", "-Z"}) {
    EXPECT_THAT(CheckSbatchArgs({unknown}),
                StatusIs(absl::StatusCode::kInvalidArgument,
                         AllOf(HasSubstr(unknown), HasSubstr("allowed: --account"))))
        << unknown;
  }
}

TEST(CheckSbatchArgsTest, RefusesMalformedForms) {
  // A bare word would be sbatch's batch script; a long option's value must follow '='.
  EXPECT_THAT(CheckSbatchArgs({"script.sh"}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("not an option")));
  EXPECT_THAT(CheckSbatchArgs({"--time", "10"}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("--time=VALUE")));
  EXPECT_THAT(CheckSbatchArgs({"-t"}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("needs a value")));
  EXPECT_THAT(CheckSbatchArgs({"-t", ""}), StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(CheckSbatchArgs({"-t10"}), StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(CheckSbatchArgs({"-st"}), StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(CheckSbatchArgs({"--time="}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("empty value")));
  EXPECT_THAT(CheckSbatchArgs({"--contiguous=yes"}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("takes no value")));
  for (const char* bad : {"", "-", "--", "---"}) {
    EXPECT_THAT(CheckSbatchArgs({bad}), StatusIs(absl::StatusCode::kInvalidArgument)) << bad;
  }
}

TEST(CheckSbatchArgsTest, RefusesControlCharactersAndOversizedInput) {
  EXPECT_THAT(CheckSbatchArgs({"--comment=a\nb"}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("control character")));
  EXPECT_THAT(CheckSbatchArgs({"-t", std::string("1\0", 2)}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("control character")));
  EXPECT_THAT(CheckSbatchArgs({"--comment=" + std::string(kMaxSbatchArgBytes, 'x')}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("longer than")));
  EXPECT_THAT(CheckSbatchArgs(std::vector<std::string>(kMaxSbatchArgs + 1, "--exclusive")),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("too many")));
  EXPECT_THAT(CheckSbatchArgs(std::vector<std::string>(kMaxSbatchArgs, "--exclusive")), IsOk());
}

}  // namespace
}  // namespace cohort::slurm
