// The agent's retry policy against the master, timed by a FakeClock: ten minutes of patience
// pass in milliseconds.

#include "agent/retry.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <functional>
#include <future>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "client/master_client.h"
#include "common/testing/status_matchers.h"
#include "gtest/gtest.h"

namespace cohort::agent {
namespace {

using Json = nlohmann::json;

// Waits (real time, at most 10 s) until `done` holds; false when it never did.
bool Eventually(const std::function<bool()>& done) {
  const absl::Time deadline = absl::Now() + absl::Seconds(10);
  while (!done()) {
    if (absl::Now() > deadline) return false;
    absl::SleepFor(absl::Milliseconds(1));
  }
  return true;
}

// An attempt that fails Unavailable each time and records when (by the clock) it was made.
struct AwayMaster {
  explicit AwayMaster(const Clock& clock) : clock(clock) {}
  absl::StatusOr<Json> operator()() {
    std::lock_guard<std::mutex> lock(mu);
    times.push_back(clock.Now());
    return absl::UnavailableError("cannot reach the master");
  }
  size_t attempts() {
    std::lock_guard<std::mutex> lock(mu);
    return times.size();
  }
  const Clock& clock;
  std::mutex mu;
  std::vector<absl::Time> times;
};

TEST(RetryTest, RetriesUnavailableASecondApartAndGivesUpOnceTenMinutesHavePassed) {
  FakeClock clock;
  const absl::Time start = clock.Now();
  absl::Notification stop;
  AwayMaster master(clock);
  auto result = std::async(std::launch::async,
                           [&] { return RetryWhileUnavailable(std::ref(master), clock, stop); });
  ASSERT_TRUE(Eventually([&] { return master.attempts() == 1; }));
  clock.Advance(absl::Milliseconds(999));
  EXPECT_EQ(result.wait_for(std::chrono::milliseconds(50)), std::future_status::timeout);
  EXPECT_EQ(master.attempts(), 1u);  // not before the second is up
  clock.Advance(absl::Milliseconds(1));
  ASSERT_TRUE(Eventually([&] { return master.attempts() == 2; }));
  clock.Advance(absl::Minutes(9) + absl::Seconds(58));  // 9:59 after the first attempt
  ASSERT_TRUE(Eventually([&] { return master.attempts() == 3; }));
  EXPECT_EQ(result.wait_for(std::chrono::milliseconds(50)), std::future_status::timeout);
  clock.Advance(absl::Seconds(1));  // 10:00: one last attempt, then it gives up
  ASSERT_EQ(result.wait_for(std::chrono::seconds(10)), std::future_status::ready);
  EXPECT_TRUE(absl::IsUnavailable(result.get().status()));
  ASSERT_EQ(master.attempts(), 4u);
  EXPECT_EQ(master.times[1] - start, absl::Seconds(1));
  EXPECT_EQ(master.times[3] - start, absl::Minutes(10));
}

TEST(RetryTest, ReturnsTheFirstAnswerThatIsNotUnavailable) {
  FakeClock clock;
  absl::Notification stop;
  int calls = 0;
  auto result = std::async(std::launch::async, [&] {
    return RetryWhileUnavailable(
        [&]() -> absl::StatusOr<Json> {
          if (++calls < 3) return absl::UnavailableError("restarting");
          return Json{{"ok", true}};
        },
        clock, stop);
  });
  // Each retry waits for a second of the clock.
  while (result.wait_for(std::chrono::milliseconds(1)) != std::future_status::ready) {
    clock.Advance(absl::Seconds(1));
  }
  absl::StatusOr<Json> r = result.get();
  ASSERT_OK(r);
  EXPECT_EQ((*r)["ok"], true);
  EXPECT_EQ(calls, 3);
}

TEST(RetryTest, NeverRetriesAnAnswerOtherThanUnavailable) {
  FakeClock clock;  // never advanced: a retry would wait forever
  absl::Notification stop;
  for (const absl::Status& answer :
       {absl::NotFoundError("allocation 1.1.1 is not running"),
        absl::InvalidArgumentError("log batch: \"trial_id\" must be an integer >= 1"),
        absl::FailedPreconditionError("superseded"), absl::InternalError("the master failed")}) {
    int calls = 0;
    auto result = std::async(std::launch::async, [&] {
      return RetryWhileUnavailable(
          [&]() -> absl::StatusOr<Json> {
            ++calls;
            return answer;
          },
          clock, stop);
    });
    ASSERT_EQ(result.wait_for(std::chrono::seconds(10)), std::future_status::ready) << answer;
    EXPECT_EQ(result.get().status(), answer);
    EXPECT_EQ(calls, 1) << answer;
  }
}

TEST(RetryTest, AStoppingAgentTriesOnceAndAStopEndsAWaitingRetry) {
  FakeClock clock;
  absl::Notification stop;
  AwayMaster master(clock);
  auto result = std::async(std::launch::async,
                           [&] { return RetryWhileUnavailable(std::ref(master), clock, stop); });
  ASSERT_TRUE(Eventually([&] { return master.attempts() == 1; }));
  stop.Notify();  // the clock stands still: only the stop can end the wait
  ASSERT_EQ(result.wait_for(std::chrono::seconds(10)), std::future_status::ready);
  EXPECT_TRUE(absl::IsUnavailable(result.get().status()));
  EXPECT_EQ(master.attempts(), 1u);

  AwayMaster later(clock);
  EXPECT_TRUE(absl::IsUnavailable(RetryWhileUnavailable(std::ref(later), clock, stop).status()));
  EXPECT_EQ(later.attempts(), 1u);
}

// A port on 127.0.0.1 that refuses connections: bound (so no one else takes it), not listening.
class RefusingPort {
 public:
  RefusingPort() {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(addr);
    if (::bind(fd_, reinterpret_cast<sockaddr*>(&addr), len) == 0 &&
        ::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
      port_ = ntohs(addr.sin_port);
    }
  }
  ~RefusingPort() { ::close(fd_); }
  int port() const { return port_; }

 private:
  int fd_ = -1;
  int port_ = 0;
};

TEST(RetryTest, APostToAMasterThatIsNotThereGivesUpAfterItsPatience) {
  RefusingPort refusing;
  ASSERT_NE(refusing.port(), 0);
  client::MasterClient client(absl::StrCat("http://127.0.0.1:", refusing.port()));
  FakeClock clock;
  absl::Notification stop;
  const absl::Time start = clock.Now();
  auto result = std::async(std::launch::async, [&] {
    return RetryWhileUnavailable(
        [&] {
          return client.Post("/api/v1/allocations/1.1.1/exit", Json{{"node", 0}});
        },
        clock, stop, {.patience = absl::Seconds(30), .interval = absl::Seconds(1)});
  });
  // Each second of the clock is one more refused attempt.
  while (result.wait_for(std::chrono::milliseconds(1)) != std::future_status::ready) {
    ASSERT_LT(clock.Now() - start, absl::Minutes(1)) << "still retrying";
    clock.Advance(absl::Seconds(1));
  }
  EXPECT_GE(clock.Now() - start, absl::Seconds(30));
  absl::StatusOr<Json> r = result.get();
  EXPECT_TRUE(absl::IsUnavailable(r.status())) << r.status();
  EXPECT_NE(r.status().message().find("cannot reach the master"), absl::string_view::npos);
}

}  // namespace
}  // namespace cohort::agent
