#include "common/line_splitter.h"

#include <functional>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace cohort {
namespace {

struct Lines {
  std::vector<std::string> lines;
  void operator()(absl::string_view line) { lines.emplace_back(line); }
};

TEST(LineSplitterTest, SplitsChunksIntoLinesAndKeepsThePartialOne) {
  LineSplitter splitter(100);
  Lines out;
  splitter.Consume("hello\nwor", std::ref(out));
  EXPECT_EQ(out.lines, std::vector<std::string>({"hello"}));
  EXPECT_EQ(splitter.pending(), 3u);
  splitter.Consume("ld\n\nx", std::ref(out));
  splitter.Finish(std::ref(out));
  EXPECT_EQ(out.lines, std::vector<std::string>({"hello", "world", "", "x"}));
}

TEST(LineSplitterTest, LineOfExactlyTheLimitIsWhole) {
  LineSplitter splitter(4);
  Lines out;
  splitter.Consume("abcd\nab", std::ref(out));
  splitter.Consume("cd\n", std::ref(out));
  EXPECT_EQ(out.lines, std::vector<std::string>({"abcd", "abcd"}));
  EXPECT_EQ(splitter.cut_lines(), 0u);
}

TEST(LineSplitterTest, CutsALongLineOnceWithAMarkerAndDropsItsRest) {
  LineSplitter splitter(4);
  Lines out;
  splitter.Consume("abcdefghij", std::ref(out));  // no newline yet: cut as soon as it is long
  ASSERT_EQ(out.lines.size(), 1u);
  EXPECT_EQ(out.lines[0], "abcd" + LineSplitter::CutMarker(4));
  EXPECT_EQ(splitter.pending(), 0u);
  splitter.Consume(std::string(1000, 'z'), std::ref(out));  // still the same line: dropped
  splitter.Consume("zz\nnext\n", std::ref(out));
  EXPECT_EQ(out.lines, std::vector<std::string>({"abcd" + LineSplitter::CutMarker(4), "next"}));
  EXPECT_EQ(splitter.dropped_bytes(), 6u + 1000u + 2u);
  EXPECT_EQ(splitter.cut_lines(), 1u);
}

TEST(LineSplitterTest, NeverHoldsMoreThanTheLimitWhateverTheChunks) {
  LineSplitter splitter(1000);
  Lines out;
  const std::string chunk(65536, 'x');
  for (int i = 0; i < 100; ++i) {
    splitter.Consume(chunk, std::ref(out));
    ASSERT_LE(splitter.pending(), 1000u);
  }
  splitter.Consume("\nafter\n", std::ref(out));
  ASSERT_EQ(out.lines.size(), 2u);
  EXPECT_EQ(out.lines[1], "after");
}

TEST(LineSplitterTest, PassesBytesOnAsTheyCame) {
  LineSplitter splitter(100);
  Lines out;
  splitter.Consume(std::string("a\0b\xff\n", 5), std::ref(out));
  EXPECT_EQ(out.lines, std::vector<std::string>({std::string("a\0b\xff", 4)}));
}

TEST(LineSplitterTest, ByteAtATimeGivesTheSameLines) {
  const std::string input = "one\ntwo two two two\n\nthree";
  LineSplitter whole(6), bytes(6);
  Lines expected, actual;
  whole.Consume(input, std::ref(expected));
  whole.Finish(std::ref(expected));
  for (char c : input) bytes.Consume(absl::string_view(&c, 1), std::ref(actual));
  bytes.Finish(std::ref(actual));
  EXPECT_EQ(actual.lines, expected.lines);
  EXPECT_EQ(actual.lines[1], "two tw" + LineSplitter::CutMarker(6));
}

}  // namespace
}  // namespace cohort
