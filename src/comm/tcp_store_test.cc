#include "comm/tcp_store.h"

#include <thread>

#include "absl/synchronization/notification.h"
#include "common/testing/status_matchers.h"
#include "gtest/gtest.h"

namespace cohort::comm {
namespace {

using ::cohort::testing_support::StatusIs;

struct Fixture {
  std::unique_ptr<TcpStoreServer> server;
  net::HostPort address;
  Fixture() {
    server = TcpStoreServer::Start("127.0.0.1", 0).value();
    address = {"127.0.0.1", server->port()};
  }
  std::unique_ptr<TcpStore> Client(int rank = -1) {
    TcpStore::Options options;
    options.rank = rank;
    return TcpStore::Connect(address, options).value();
  }
};

TEST(TcpStoreTest, SetGetAddDeleteRoundTrip) {
  Fixture f;
  auto a = f.Client();
  auto b = f.Client();
  ASSERT_OK(a->Set("k", std::string("v\0w", 3)));
  auto got = b->Get("k", absl::Seconds(1));
  ASSERT_OK(got);
  EXPECT_EQ(*got, std::string("v\0w", 3));
  EXPECT_EQ(a->Add("n", 5).value(), 5);
  EXPECT_EQ(b->Add("n", -2).value(), 3);
  ASSERT_OK(a->Delete("k"));
  EXPECT_THAT(b->Get("k", absl::Milliseconds(50)), StatusIs(absl::StatusCode::kDeadlineExceeded));
}

TEST(TcpStoreTest, GetWaitsForAnotherClientsSet) {
  Fixture f;
  auto a = f.Client();
  auto b = f.Client();
  std::thread setter([&] {
    absl::SleepFor(absl::Milliseconds(50));
    ASSERT_OK(b->Set("late", "x"));
  });
  auto got = a->Get("late", absl::Seconds(10));
  setter.join();
  ASSERT_OK(got);
  EXPECT_EQ(*got, "x");
}

TEST(TcpStoreTest, WaitTimesOutListingMissingKeys) {
  Fixture f;
  auto a = f.Client();
  ASSERT_OK(a->Set("present", "1"));
  absl::Time start = absl::Now();
  absl::Status s = a->Wait({"present", "absent/1", "absent/2"}, absl::Milliseconds(200));
  EXPECT_THAT(s, StatusIs(absl::StatusCode::kDeadlineExceeded));
  EXPECT_GE(absl::Now() - start, absl::Milliseconds(190));
  EXPECT_NE(s.message().find("absent/1, absent/2"), absl::string_view::npos) << s;
  EXPECT_EQ(s.message().find("present,"), absl::string_view::npos) << s;
}

TEST(TcpStoreTest, ConnectFailsWithinDeadlineNamingTheAddress) {
  TcpStore::Options options;
  options.connect_timeout = absl::Milliseconds(300);
  int port = 0;
  {
    auto server = TcpStoreServer::Start("127.0.0.1", 0).value();
    port = server->port();
  }
  auto client = TcpStore::Connect({"127.0.0.1", port}, options);
  ASSERT_FALSE(client.ok());
  EXPECT_NE(client.status().message().find("rendezvous store at 127.0.0.1:" + std::to_string(port)),
            absl::string_view::npos)
      << client.status();
}

TEST(TcpStoreTest, RankedClientThatDropsWithoutClosingIsReportedDead) {
  Fixture f;
  std::string notice;
  absl::Notification got_notice;
  auto watcher = FailureWatcher::Start(f.address, kFailureKey, [&](const std::string& n) {
    notice = n;
    got_notice.Notify();
  });
  ASSERT_OK(watcher);
  {
    auto clean = f.Client(/*rank=*/1);  // closes cleanly: not a failure
  }
  auto doomed = f.Client(/*rank=*/3);
  // A crash closes the connection without the goodbye message; Interrupt does the same.
  doomed->Interrupt();
  ASSERT_TRUE(got_notice.WaitForNotificationWithTimeout(absl::Seconds(5)));
  EXPECT_NE(notice.find("rank 3"), std::string::npos) << notice;
}

}  // namespace
}  // namespace cohort::comm
