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

TEST(TableTest, HeaderOnlyWhenThereAreNoRows) {
  std::ostringstream out;
  PrintTable(out, {"trial", "state"}, {});
  EXPECT_EQ(out.str(), "trial  state\n");
}

}  // namespace
}  // namespace cohort::cli
