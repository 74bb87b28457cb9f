#include "runtime/comm_worker.h"

#include <atomic>
#include <vector>

#include "absl/synchronization/notification.h"
#include "common/testing/status_matchers.h"
#include "gtest/gtest.h"

namespace cohort::runtime {
namespace {

using ::cohort::testing_support::StatusIs;

TEST(CommWorkerTest, RunsJobsInSubmissionOrder) {
  CommWorker worker("test");
  std::vector<int> ran;
  for (int i = 0; i < 100; ++i) {
    worker.Submit([&ran, i] {
      ran.push_back(i);
      return absl::OkStatus();
    });
  }
  ASSERT_OK(worker.Drain(absl::Seconds(10), "jobs"));
  ASSERT_EQ(ran.size(), 100u);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(ran[i], i);
}

TEST(CommWorkerTest, FirstFailureIsStickyAndLaterJobsAreSkipped) {
  CommWorker worker("test");
  std::atomic<int> ran{0};
  worker.Submit([] { return absl::UnavailableError("rank 3 died"); });
  worker.Submit([&] {
    ++ran;
    return absl::OkStatus();
  });
  absl::Status status = worker.Drain(absl::Seconds(10), "jobs");
  EXPECT_THAT(status, StatusIs(absl::StatusCode::kUnavailable));
  EXPECT_EQ(status.message(), "rank 3 died");
  EXPECT_EQ(ran.load(), 0);
  EXPECT_EQ(worker.Drain(absl::Seconds(1), "jobs").message(), "rank 3 died");
}

TEST(CommWorkerTest, DrainReportsWhatItWaitedForAtTheDeadline) {
  CommWorker worker("gradients");
  absl::Notification release;
  worker.Submit([&] {
    release.WaitForNotification();
    return absl::OkStatus();
  });
  absl::Status status = worker.Drain(absl::Milliseconds(50), "bucket allreduces");
  EXPECT_THAT(status, StatusIs(absl::StatusCode::kDeadlineExceeded));
  EXPECT_NE(status.message().find("gradients: bucket allreduces"), absl::string_view::npos)
      << status;
  EXPECT_NE(status.message().find("1 unfinished"), absl::string_view::npos) << status;
  release.Notify();
  EXPECT_OK(worker.Drain(absl::Seconds(10), "jobs"));
}

}  // namespace
}  // namespace cohort::runtime
