#include "common/command_line.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace cohort {
namespace {

using ::testing::HasSubstr;
using ::testing::Optional;

struct Parsed {
  std::optional<int> exit;
  std::string err;
};

// Parses `args` (after the program name) into an app with --slots (> 0) and --keep (>= 0).
Parsed Parse(std::vector<const char*> args, int* slots, double* keep) {
  CLI::App app{"test program"};
  app.add_option("--slots", *slots, "slots")->check(PositiveNumber());
  app.add_option("--keep", *keep, "keep")->check(NonNegativeNumber());
  args.insert(args.begin(), "prog");
  ::testing::internal::CaptureStderr();
  Parsed p;
  p.exit = ParseCommandLine(app, "prog", static_cast<int>(args.size()), args.data());
  p.err = ::testing::internal::GetCapturedStderr();
  return p;
}

TEST(CommandLineTest, GoodArgumentsGoOn) {
  int slots = 0;
  double keep = -1;
  Parsed p = Parse({"--slots", "3", "--keep", "0"}, &slots, &keep);
  EXPECT_EQ(p.exit, std::nullopt);
  EXPECT_EQ(slots, 3);
  EXPECT_EQ(keep, 0);
  EXPECT_EQ(p.err, "");
}

TEST(CommandLineTest, ABadArgumentIsAUsageErrorNamingTheProgramAndTheRule) {
  int slots = 0;
  double keep = 0;
  Parsed p = Parse({"--slots", "-1"}, &slots, &keep);
  EXPECT_THAT(p.exit, Optional(kUsageExit));
  EXPECT_THAT(p.err, HasSubstr("prog: error: --slots: must be a positive number, got -1\n"));
  EXPECT_THAT(p.err, HasSubstr("Run 'prog --help' for usage."));
  p = Parse({"--keep", "-0.5"}, &slots, &keep);
  EXPECT_THAT(p.err, HasSubstr("--keep: must be a number >= 0, got -0.5"));
  p = Parse({"--keep", "nan"}, &slots, &keep);
  EXPECT_THAT(p.err, HasSubstr("--keep: must be a number >= 0, got nan"));
  p = Parse({"--bogus"}, &slots, &keep);
  EXPECT_THAT(p.exit, Optional(kUsageExit));
  EXPECT_THAT(p.err, HasSubstr("prog: error: The following argument was not expected: --bogus"));
}

TEST(CommandLineTest, AValueOfTheWrongTypeNamesTheTypeExpected) {
  // CLI11 says "Could not convert: --count = abc" (a value its validators, if any, passed).
  CLI::App app{"test"};
  int count = 0;
  double rate = 0;
  int64_t id = 0;
  app.add_option("--count", count, "count");
  app.add_option("--rate", rate, "rate");
  app.add_subcommand("logs", "logs")->add_option("id", id, "trial id");
  const auto parse = [&app](std::vector<const char*> args) {
    args.insert(args.begin(), "prog");
    ::testing::internal::CaptureStderr();
    EXPECT_THAT(ParseCommandLine(app, "prog", static_cast<int>(args.size()), args.data()),
                Optional(kUsageExit));
    return ::testing::internal::GetCapturedStderr();
  };
  EXPECT_THAT(parse({"--count", "abc"}), HasSubstr("prog: error: --count: expected an integer, "
                                                   "got abc\n"));
  EXPECT_THAT(parse({"--rate", "1x"}), HasSubstr("--rate: expected a number, got 1x"));
  EXPECT_THAT(parse({"logs", "abc"}), HasSubstr("prog: error: id: expected an integer, got abc"));
}

TEST(CommandLineTest, HelpExitsZero) {
  int slots = 0;
  double keep = 0;
  ::testing::internal::CaptureStdout();
  Parsed p = Parse({"--help"}, &slots, &keep);
  const std::string out = ::testing::internal::GetCapturedStdout();
  EXPECT_THAT(p.exit, Optional(0));
  EXPECT_THAT(out, HasSubstr("--slots"));
}

}  // namespace
}  // namespace cohort
