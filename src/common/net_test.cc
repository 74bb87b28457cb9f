#include "common/net.h"

#include <unistd.h>

#include "common/testing/status_matchers.h"
#include "gtest/gtest.h"

namespace cohort::net {
namespace {

using ::cohort::testing_support::StatusIs;

TEST(NetTest, ParsesHostPortForms) {
  auto a = ParseHostPort("example:123", 9);
  ASSERT_OK(a);
  EXPECT_EQ(a->host, "example");
  EXPECT_EQ(a->port, 123);
  auto b = ParseHostPort("10.0.0.1", 29400);
  ASSERT_OK(b);
  EXPECT_EQ(b->port, 29400);
  auto c = ParseHostPort("[::1]:80", 9);
  ASSERT_OK(c);
  EXPECT_EQ(c->host, "::1");
  EXPECT_EQ(c->ToString(), "[::1]:80");
  EXPECT_FALSE(ParseHostPort("host:99999", 1).ok());
  EXPECT_FALSE(ParseHostPort(":80", 1).ok());
}

TEST(NetTest, ConnectToClosedPortFailsAtDeadlineNamingTheAddress) {
  int port = 0;
  auto fd = Listen("127.0.0.1", 0, &port);
  ASSERT_OK(fd);
  ::close(*fd);  // nobody listens there now
  absl::Time start = absl::Now();
  auto conn = Connect({"127.0.0.1", port}, absl::Now() + absl::Milliseconds(300), "test service");
  ASSERT_FALSE(conn.ok());
  EXPECT_LT(absl::Now() - start, absl::Seconds(3));
  EXPECT_THAT(conn, StatusIs(absl::StatusCode::kDeadlineExceeded));
  EXPECT_NE(conn.status().message().find("test service at 127.0.0.1:" + std::to_string(port)),
            absl::string_view::npos)
      << conn.status();
}

TEST(NetTest, RecvReportsClosedPeerAndDeadline) {
  int port = 0;
  auto listen_fd = Listen("127.0.0.1", 0, &port);
  ASSERT_OK(listen_fd);
  auto client = Connect({"127.0.0.1", port}, absl::Now() + absl::Seconds(5), "test");
  ASSERT_OK(client);
  char byte;
  auto timed_out = RecvAll(*client, &byte, 1, absl::Now() + absl::Milliseconds(100));
  EXPECT_THAT(timed_out, StatusIs(absl::StatusCode::kDeadlineExceeded));
  ::close(*listen_fd);  // pending connection is reset
  auto closed = RecvAll(*client, &byte, 1, absl::Now() + absl::Seconds(5));
  EXPECT_FALSE(closed.ok());
  ::close(*client);
}

}  // namespace
}  // namespace cohort::net
