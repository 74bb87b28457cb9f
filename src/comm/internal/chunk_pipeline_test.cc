#include "comm/internal/chunk_pipeline.h"

#include <mutex>
#include <set>
#include <thread>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace cohort::comm::internal {
namespace {

using ::testing::ElementsAre;

// Each phase's calls, in the order they began, as "b0", "m0", "a0", ...
class Recorder {
 public:
  absl::Status Note(const char* phase, size_t i, absl::Status result = absl::OkStatus()) {
    std::lock_guard<std::mutex> lock(mu_);
    events_.push_back(absl::StrCat(phase, i));
    return result;
  }
  std::vector<std::string> Events() {
    std::lock_guard<std::mutex> lock(mu_);
    return events_;
  }
  // Index of `event` in the record; -1 when absent.
  int At(const std::string& event) {
    std::vector<std::string> e = Events();
    for (size_t i = 0; i < e.size(); ++i) {
      if (e[i] == event) return static_cast<int>(i);
    }
    return -1;
  }

 private:
  std::mutex mu_;
  std::vector<std::string> events_;
};

TEST(ChunkPipelineTest, EveryPhaseSeesEveryChunkInOrderAndAfterItsPredecessor) {
  Recorder r;
  ASSERT_OK(RunChunkPipeline(
      5, [&](size_t i) { return r.Note("b", i); }, [&](size_t i) { return r.Note("m", i); },
      [&](size_t i) { return r.Note("a", i); }));
  ASSERT_EQ(r.Events().size(), 15u);
  for (int i = 0; i < 5; ++i) {
    EXPECT_LT(r.At(absl::StrCat("b", i)), r.At(absl::StrCat("m", i))) << i;
    EXPECT_LT(r.At(absl::StrCat("m", i)), r.At(absl::StrCat("a", i))) << i;
    if (i > 0) {
      for (const char* p : {"b", "m", "a"}) {
        EXPECT_LT(r.At(absl::StrCat(p, i - 1)), r.At(absl::StrCat(p, i))) << p << i;
      }
    }
  }
}

TEST(ChunkPipelineTest, MiddlesRunOnOneWorkerThreadKeptAcrossPipelines) {
  std::mutex mu;
  std::set<std::thread::id> middles;
  for (int pipeline = 0; pipeline < 3; ++pipeline) {
    ASSERT_OK(RunChunkPipeline(
        4, [](size_t) { return absl::OkStatus(); },
        [&](size_t) {
          std::lock_guard<std::mutex> lock(mu);
          middles.insert(std::this_thread::get_id());
          return absl::OkStatus();
        },
        [](size_t) { return absl::OkStatus(); }));
  }
  ASSERT_EQ(middles.size(), 1u);
  EXPECT_NE(*middles.begin(), std::this_thread::get_id());
}

TEST(ChunkPipelineTest, PipelineNestedInAPhaseGetsAWorkerOfItsOwn) {
  std::vector<int> inner_sums;
  ASSERT_OK(RunChunkPipeline(
      3,
      [&](size_t) {
        int sum = 0;
        absl::Status s = RunChunkPipeline(
            4, [](size_t) { return absl::OkStatus(); },
            [&](size_t i) {
              sum += static_cast<int>(i);
              return absl::OkStatus();
            },
            [](size_t) { return absl::OkStatus(); });
        inner_sums.push_back(sum);
        return s;
      },
      [](size_t) { return absl::OkStatus(); }, [](size_t) { return absl::OkStatus(); }));
  EXPECT_THAT(inner_sums, ElementsAre(6, 6, 6));
}

TEST(ChunkPipelineTest, OneChunkRunsItsThreePhasesInTurn) {
  Recorder r;
  ASSERT_OK(RunChunkPipeline(
      1, [&](size_t i) { return r.Note("b", i); }, [&](size_t i) { return r.Note("m", i); },
      [&](size_t i) { return r.Note("a", i); }));
  EXPECT_THAT(r.Events(), ElementsAre("b0", "m0", "a0"));
}

TEST(ChunkPipelineTest, TheFirstErrorIsReturnedAndNoLaterChunkStarts) {
  Recorder r;
  absl::Status s = RunChunkPipeline(
      6, [&](size_t i) { return r.Note("b", i); },
      [&](size_t i) {
        return r.Note("m", i, i == 2 ? absl::UnavailableError("peer 1 left") : absl::OkStatus());
      },
      [&](size_t i) { return r.Note("a", i); });
  EXPECT_TRUE(absl::IsUnavailable(s)) << s;
  EXPECT_EQ(r.At("m3"), -1);
  EXPECT_EQ(r.At("a2"), -1);  // chunk 2 failed: not finished
  EXPECT_EQ(r.At("b4"), -1);
  EXPECT_NE(r.At("a1"), -1);
}

}  // namespace
}  // namespace cohort::comm::internal
