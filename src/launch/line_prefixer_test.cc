#include "launch/line_prefixer.h"

#include <fcntl.h>
#include <unistd.h>

#include <string>

#include "absl/strings/str_split.h"
#include "common/testing/status_matchers.h"
#include "gtest/gtest.h"

namespace cohort::launch {
namespace {

TEST(LinePrefixerTest, PrefixesCompleteLinesAndKeepsThePartialOne) {
  LinePrefixer prefixer("[rank=3] ");
  std::string out;
  prefixer.Consume("hello\nwor", &out);
  EXPECT_EQ(out, "[rank=3] hello\n");
  EXPECT_EQ(prefixer.pending(), 3u);
  prefixer.Consume("ld\n\nx", &out);
  EXPECT_EQ(out, "[rank=3] hello\n[rank=3] world\n[rank=3] \n");
  prefixer.Finish(&out);
  EXPECT_EQ(out, "[rank=3] hello\n[rank=3] world\n[rank=3] \n[rank=3] x\n");
  EXPECT_EQ(prefixer.pending(), 0u);
}

TEST(LinePrefixerTest, FinishWithNothingPendingAddsNothing) {
  LinePrefixer prefixer("[rank=0] ");
  std::string out;
  prefixer.Consume("a\n", &out);
  prefixer.Finish(&out);
  EXPECT_EQ(out, "[rank=0] a\n");
}

TEST(LinePrefixerTest, ByteAtATimeGivesTheSameLines) {
  LinePrefixer whole("p ");
  LinePrefixer bytes("p ");
  const std::string input = "one\ntwo two\n\nthree";
  std::string expected, actual;
  whole.Consume(input, &expected);
  whole.Finish(&expected);
  for (char c : input) bytes.Consume(absl::string_view(&c, 1), &actual);
  bytes.Finish(&actual);
  EXPECT_EQ(actual, expected);
}

TEST(LinePrefixerTest, CutsLinesLongerThanTheLimitAndDropsTheirRest) {
  LinePrefixer prefixer("> ", 4);
  const std::string cut = LineSplitter::CutMarker(4);
  std::string out;
  prefixer.Consume("abcdefghij", &out);  // no newline: cut once the limit is passed
  EXPECT_EQ(out, "> abcd" + cut + "\n");
  EXPECT_EQ(prefixer.pending(), 0u);
  prefixer.Consume("k\nlmnopqrstu\nvw\n", &out);
  EXPECT_EQ(out, "> abcd" + cut + "\n> lmno" + cut + "\n> vw\n");
}

TEST(WriteLinesTest, WritesEverythingInWholeLines) {
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  std::string lines;
  for (int i = 0; i < 100; ++i) lines += std::string(50 + i, 'a' + i % 26) + "\n";
  ASSERT_OK(WriteLines(fds[1], lines));
  ::close(fds[1]);
  std::string read_back;
  char buf[4096];
  ssize_t n;
  while ((n = ::read(fds[0], buf, sizeof(buf))) > 0) read_back.append(buf, n);
  ::close(fds[0]);
  EXPECT_EQ(read_back, lines);
}

TEST(WriteLinesTest, ClosedReaderIsAnError) {
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  ::close(fds[0]);
  signal(SIGPIPE, SIG_IGN);
  absl::Status status = WriteLines(fds[1], "x\n");
  EXPECT_TRUE(absl::IsUnavailable(status)) << status;
  ::close(fds[1]);
}

}  // namespace
}  // namespace cohort::launch
