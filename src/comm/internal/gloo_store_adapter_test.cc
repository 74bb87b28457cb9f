#include "comm/internal/gloo_store_adapter.h"

#include <atomic>
#include <thread>

#include "absl/strings/match.h"
#include "comm/tcp_store.h"
#include "common/testing/status_matchers.h"
#include "gtest/gtest.h"

namespace cohort::comm::internal {
namespace {

using ::cohort::testing_support::StatusIs;

struct Fixture {
  std::unique_ptr<TcpStoreServer> server = TcpStoreServer::Start("127.0.0.1", 0).value();
  std::shared_ptr<Store> Client() {
    return TcpStore::Connect({"127.0.0.1", server->port()}, TcpStore::Options()).value();
  }
};

GlooStoreAdapter::Options ShortTimeout() {
  GlooStoreAdapter::Options options;
  options.timeout = absl::Milliseconds(200);
  options.poll = absl::Milliseconds(20);
  return options;
}

TEST(GlooStoreAdapterTest, SetThenGetRoundTripsBinaryValues) {
  Fixture f;
  GlooStoreAdapter a(f.Client(), ShortTimeout());
  GlooStoreAdapter b(f.Client(), ShortTimeout());
  const std::vector<char> value = {'a', '\0', 'b', '\xff'};
  a.set("addr/0", value);
  EXPECT_EQ(b.get("addr/0"), value);
}

TEST(GlooStoreAdapterTest, GetWaitsForAKeyAnotherClientSetsLater) {
  Fixture f;
  GlooStoreAdapter::Options options;
  options.timeout = absl::Seconds(10);
  GlooStoreAdapter reader(f.Client(), options);
  GlooStoreAdapter writer(f.Client(), options);
  std::thread setter([&] { writer.set("late", {'x'}); });
  EXPECT_EQ(reader.get("late"), std::vector<char>{'x'});
  setter.join();
}

TEST(GlooStoreAdapterTest, WaitPastItsTimeoutThrowsDeadlineExceededNamingTheKey) {
  Fixture f;
  GlooStoreAdapter adapter(f.Client(), ShortTimeout());
  try {
    adapter.wait({"never-set"}, std::chrono::milliseconds(100));
    FAIL() << "wait returned";
  } catch (const GlooStoreError& e) {
    EXPECT_THAT(e.status(), StatusIs(absl::StatusCode::kDeadlineExceeded));
    EXPECT_TRUE(absl::StrContains(e.status().message(), "never-set")) << e.status();
  }
}

TEST(GlooStoreAdapterTest, GetWithoutTheKeyThrowsAfterTheDefaultTimeout) {
  Fixture f;
  GlooStoreAdapter adapter(f.Client(), ShortTimeout());
  absl::Time start = absl::Now();
  EXPECT_THROW(adapter.get("never-set"), GlooStoreError);
  EXPECT_LT(absl::Now() - start, absl::Seconds(5));
}

TEST(GlooStoreAdapterTest, InterruptionAbandonsAWaitWithItsStatus) {
  Fixture f;
  std::atomic<bool> peer_dead{false};
  GlooStoreAdapter::Options options;
  options.timeout = absl::Seconds(60);
  options.poll = absl::Milliseconds(20);
  options.interrupted = [&]() -> absl::Status {
    if (peer_dead.load()) return absl::UnavailableError("rank 1 died");
    return absl::OkStatus();
  };
  GlooStoreAdapter adapter(f.Client(), options);
  std::thread killer([&] { peer_dead.store(true); });
  absl::Time start = absl::Now();
  try {
    adapter.wait({"never-set"});
    FAIL() << "wait returned";
  } catch (const GlooStoreError& e) {
    EXPECT_THAT(e.status(), StatusIs(absl::StatusCode::kUnavailable));
    EXPECT_TRUE(absl::StrContains(e.status().message(), "rank 1")) << e.status();
  }
  EXPECT_LT(absl::Now() - start, absl::Seconds(10));
  killer.join();
}

}  // namespace
}  // namespace cohort::comm::internal
