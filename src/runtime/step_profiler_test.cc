#include "runtime/step_profiler.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace cohort::runtime {
namespace {

namespace fs = std::filesystem;

std::vector<nlohmann::json> Lines(const std::string& path) {
  std::vector<nlohmann::json> lines;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) lines.push_back(nlohmann::json::parse(line));
  return lines;
}

class StepProfilerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = (fs::path(::testing::TempDir()) /
            absl::StrCat("step_profiler_", ::getpid(), "_", counter_++))
               .string();
  }
  void TearDown() override { fs::remove_all(dir_); }
  // Runs batches 0..n-1 through `profiler`, each with one 1 ms phase.
  static void RunBatches(StepProfiler& profiler, int64_t n) {
    const absl::Time t0 = absl::FromUnixSeconds(1700000000);
    for (int64_t b = 0; b < n; ++b) {
      const absl::Time start = t0 + absl::Seconds(b);
      profiler.Begin(b, start);
      profiler.Phase("forward", start + absl::Microseconds(10), start + absl::Microseconds(1010));
      profiler.Buckets(
          {{0, 4096, start + absl::Microseconds(500), start + absl::Microseconds(700)}});
      profiler.End();
    }
  }
  std::string dir_;
  static inline int counter_ = 0;
};

TEST_F(StepProfilerTest, WindowIsDeterminedsOneBasedInclusiveRange) {
  StepProfiler p({.enabled = true, .begin_on_batch = 3, .end_after_batch = 5, .run_dir = dir_});
  EXPECT_FALSE(p.Profiles(1));  // batch 2
  EXPECT_TRUE(p.Profiles(2));   // batch 3
  EXPECT_TRUE(p.Profiles(4));   // batch 5
  EXPECT_FALSE(p.Profiles(5));  // batch 6
  StepProfiler open_ended({.enabled = true, .begin_on_batch = 0, .run_dir = dir_});
  EXPECT_TRUE(open_ended.Profiles(0));
  EXPECT_TRUE(open_ended.Profiles(1000000));
}

TEST_F(StepProfilerTest, WritesOneRecordPerProfiledBatchWithSpansAfterItsStart) {
  StepProfiler p(
      {.enabled = true, .begin_on_batch = 2, .end_after_batch = 3, .rank = 4, .run_dir = dir_});
  RunBatches(p, 6);
  const std::vector<nlohmann::json> lines = Lines(dir_ + "/profile/rank-4.jsonl");
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0]["batch"], 2);  // numbered from 1: index 1 is batch 2
  EXPECT_EQ(lines[1]["batch"], 3);
  EXPECT_EQ(lines[0]["rank"], 4);
  EXPECT_DOUBLE_EQ(lines[0]["time"].get<double>(), 1700000001.0);
  EXPECT_EQ(lines[0]["phases"], nlohmann::json::parse(R"([["forward",10,1000]])"));
  EXPECT_EQ(lines[0]["buckets"], nlohmann::json::parse("[[0,4096,500,200]]"));
}

TEST_F(StepProfilerTest, OffWritesNothingAndIgnoresSpans) {
  StepProfiler p({.enabled = false, .run_dir = dir_});
  RunBatches(p, 3);
  EXPECT_FALSE(p.active());
  EXPECT_FALSE(fs::exists(dir_));
  StepProfiler no_dir({.enabled = true});
  EXPECT_FALSE(no_dir.Profiles(0));
}

TEST_F(StepProfilerTest, AnUnwritableDirectoryTurnsItOffWithoutFailing) {
  fs::create_directories(dir_);
  std::ofstream(dir_ + "/profile") << "a file where the directory should be";
  StepProfiler p({.enabled = true, .run_dir = dir_});
  RunBatches(p, 2);
  EXPECT_FALSE(p.Profiles(5));  // off after the failed write
}

}  // namespace
}  // namespace cohort::runtime
