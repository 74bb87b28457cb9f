#include "cli/table.h"

#include <sstream>

#include "gtest/gtest.h"

namespace cohort::cli {
namespace {

TEST(TableTest, AlignsTextLeftAndNumbersRightWithoutTrailingBlanks) {
  std::ostringstream out;
  PrintTable(out, {"id", "name", "slots", "reason"},
             {{"1", "fashion", "2", "-"}, {"12", "grid", "16", "waiting for 8 free slots"}});
  EXPECT_EQ(out.str(),
            "id  name     slots  reason\n"
            " 1  fashion      2  -\n"
            "12  grid        16  waiting for 8 free slots\n");
}

// Issue 34: an experiment named with terminal escapes (or a newline) cleared the screen and
// forged rows of `experiment list`; every cell is printed with its controls escaped.
TEST(TableTest, ControlCharactersInCellsAreEscaped) {
  std::ostringstream out;
  PrintTable(out, {"id", "name"}, {{"1", "\x1b[2J\x1b[Hnice\n2  forged"}});
  EXPECT_EQ(out.str(), "id  name\n 1  \\x1b[2J\\x1b[Hnice\\n2  forged\n");
}

TEST(TableTest, HeaderOnlyWhenThereAreNoRows) {
  std::ostringstream out;
  PrintTable(out, {"trial", "state"}, {});
  EXPECT_EQ(out.str(), "trial  state\n");
}

TEST(TableTest, NumbersFollowedByTheirUnitAreRightAlignedToo) {
  std::ostringstream out;
  PrintTable(out, {"series", "max", "range"},
             {{"memory_free", "22.6 GiB", "1-1004"},
              {"cpu_util_simple", "97.5%", "1-12"},
              {"disk_iops", "3.9/s", "-"}});
  EXPECT_EQ(out.str(),
            "series                max  range\n"
            "memory_free      22.6 GiB  1-1004\n"
            "cpu_util_simple     97.5%  1-12\n"
            "disk_iops           3.9/s  -\n");
}

TEST(TableTest, WordsAndIdsAreNotNumbers) {
  std::ostringstream out;
  PrintTable(out, {"agent", "n"}, {{"agent-1", "1"}, {"GiB", "22"}});
  EXPECT_EQ(out.str(),
            "agent     n\n"
            "agent-1   1\n"
            "GiB      22\n");
}

TEST(FormatQuantityTest, BytesTakeTheLargestBinaryUnitThatKeepsTheFigureAtLeastOne) {
  using wire::SeriesUnit;
  EXPECT_EQ(FormatQuantity(0, SeriesUnit::kBytes), "0 B");
  EXPECT_EQ(FormatQuantity(1023, SeriesUnit::kBytes), "1023 B");
  EXPECT_EQ(FormatQuantity(1024, SeriesUnit::kBytes), "1.0 KiB");
  EXPECT_EQ(FormatQuantity(2.42784e10, SeriesUnit::kBytes), "22.6 GiB");
  EXPECT_EQ(FormatQuantity(2.78533e8, SeriesUnit::kBytesPerSecond), "265.6 MiB/s");
  EXPECT_EQ(FormatQuantity(3e21, SeriesUnit::kBytes), "2602.1 EiB");
  EXPECT_EQ(FormatQuantity(97.4577, SeriesUnit::kPercent), "97.5%");
  EXPECT_EQ(FormatQuantity(3.93527, SeriesUnit::kPerSecond), "3.9/s");
  EXPECT_EQ(FormatQuantity(0.306637, SeriesUnit::kNone), "0.306637");
}

}  // namespace
}  // namespace cohort::cli
