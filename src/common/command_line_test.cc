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
