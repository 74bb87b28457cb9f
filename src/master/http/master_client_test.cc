// MasterClient's kept connection against the master's real server (MasterServer): one
// connection for a client's requests, replaced when the master restarts, and nothing of one
// request's credentials left on it for the next; and how its answers' codes become Statuses.
#include "client/master_client.h"

#include <memory>
#include <set>
#include <string>
#include <thread>

#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "common/testing/status_matchers.h"
#include "common/testing/temp_dir.h"
#include "gtest/gtest.h"
#include "master/http/testing/master_server.h"

namespace cohort::master::http {
namespace {

using ::cohort::testing_support::StatusIs;
using ::cohort::testing_support::TempDir;

// A master with two test routes: the caller's port, and the Authorization header it sent.
std::unique_ptr<MasterServer> Serve(const std::string& dir, int port = 0) {
  return std::make_unique<MasterServer>(
      dir, MasterServer::Options{
               .port = port, .intercept = [](Router& router, Master&) {
                 router.Get("/api/v1/test/peer",
                            [](const Request& req) -> absl::StatusOr<Reply> {
                              return Reply::Ok(Json{
                                  {"port", req.raw().remote_port},
                                  {"authorization", req.raw().get_header_value("Authorization")}});
                            },
                            {.require = Require::kAnyone});
                 router.Post("/api/v1/test/echo",
                             [](const Request& req) -> absl::StatusOr<Reply> {
                               absl::StatusOr<Json> body = req.JsonBody();
                               if (!body.ok()) return body.status();
                               return Reply::Ok(*body);
                             },
                             {.require = Require::kAnyone});
                 router.Get("/api/v1/test/slow",
                            [](const Request&) -> absl::StatusOr<Reply> {
                              absl::SleepFor(absl::Seconds(3));
                              return Reply::Ok(Json::object());
                            },
                            {.require = Require::kAnyone});
                 router.Get("/api/v1/test/busy",
                            [](const Request&) -> absl::StatusOr<Reply> {
                              return absl::UnavailableError("the master is shutting down");
                            },
                            {.require = Require::kAnyone});
                 router.Get("/api/v1/test/broken",
                            [](const Request&) -> absl::StatusOr<Reply> {
                              return absl::DataLossError("the database is corrupt");
                            },
                            {.require = Require::kAnyone});
               }});
}

TEST(MasterClientTest, KeepsOneConnectionForItsRequests) {
  const TempDir dir("client_keep");
  auto server = Serve(dir.path());
  client::MasterClient client(server->url(), absl::Seconds(10));
  std::set<int> ports;
  for (int i = 0; i < 20; ++i) {
    absl::StatusOr<Json> peer = client.Get("/api/v1/test/peer");
    ASSERT_OK(peer);
    ports.insert((*peer)["port"].get<int>());
    // An error answer leaves the connection usable.
    EXPECT_THAT(client.Post("/api/v1/test/none"), StatusIs(absl::StatusCode::kNotFound));
  }
  EXPECT_EQ(ports.size(), 1u) << "a new connection per request";
}

TEST(MasterClientTest, AConnectionToAMasterThatRestartedIsReplaced) {
  const TempDir temp("client_restart");
  const std::string dir = temp.path();
  auto server = Serve(dir);
  const int port = server->port();
  client::MasterClient client(server->url(), absl::Seconds(10));
  ASSERT_OK(client.Get("/api/v1/test/peer"));
  server.reset();  // the kept connection is closed by the master's stop
  server = Serve(dir, port);
  ASSERT_EQ(server->port(), port);
  absl::StatusOr<Json> again = client.Get("/api/v1/test/peer");
  EXPECT_OK(again);
}

TEST(MasterClientTest, ATokenClearedIsNotSentOnTheKeptConnection) {
  const TempDir dir("client_token");
  auto server = Serve(dir.path());
  client::MasterClient client(server->url(), absl::Seconds(10));
  client.set_bearer_token("first");
  absl::StatusOr<Json> with = client.Get("/api/v1/test/peer");
  ASSERT_OK(with);
  EXPECT_EQ((*with)["authorization"], "Bearer first");
  client.set_bearer_token("");
  absl::StatusOr<Json> without = client.Get("/api/v1/test/peer");
  ASSERT_OK(without);
  EXPECT_EQ((*without)["authorization"], "");
}

// A body with bytes that are not UTF-8 (a trial's output forwarded) is sent with U+FFFD in
// their place instead of throwing before the request leaves.
TEST(MasterClientTest, ABodyThatIsNotUtf8IsSentWithReplacementCharacters) {
  const TempDir dir("client_utf8");
  auto server = Serve(dir.path());
  client::MasterClient client(server->url(), absl::Seconds(10));
  absl::StatusOr<Json> echoed = client.Post("/api/v1/test/echo", Json{{"text", "bad \xff!"}});
  ASSERT_OK(echoed);
  EXPECT_EQ((*echoed)["text"], "bad \xEF\xBF\xBD!");
}

// Abort, from another thread, ends the request in flight at once (Unavailable), and the client
// works on: its next request opens a new connection.
TEST(MasterClientTest, AbortEndsTheRequestInFlightAndTheClientWorksOn) {
  const TempDir dir("client_abort");
  auto server = Serve(dir.path());
  client::MasterClient client(server->url(), absl::Seconds(10));
  client.Abort();  // nothing in flight, no connection yet: nothing happens
  ASSERT_OK(client.Get("/api/v1/test/peer"));
  absl::Notification begun;
  std::thread aborter([&] {
    begun.WaitForNotification();
    absl::SleepFor(absl::Milliseconds(300));
    client.Abort();
  });
  const absl::Time start = absl::Now();
  begun.Notify();
  const absl::Status slow = client.Get("/api/v1/test/slow").status();
  const absl::Duration took = absl::Now() - start;
  aborter.join();
  EXPECT_THAT(slow, StatusIs(absl::StatusCode::kUnavailable));
  EXPECT_LT(took, absl::Seconds(2)) << "the abort did not end the request";
  absl::StatusOr<Json> after = client.Get("/api/v1/test/peer");
  EXPECT_OK(after);
}

// A 503 (the master cannot answer now) is Unavailable, as no answer is: an agent keeps what it
// posted and tries again. Another 5xx is Internal: retrying would not help.
TEST(MasterClientTest, A503IsUnavailableAndAnother5xxIsInternal) {
  const TempDir dir("client_503");
  auto server = Serve(dir.path());
  client::MasterClient client(server->url(), absl::Seconds(10));
  const absl::Status busy = client.Get("/api/v1/test/busy").status();
  EXPECT_THAT(busy, StatusIs(absl::StatusCode::kUnavailable));
  EXPECT_NE(busy.message().find("the master is shutting down"), absl::string_view::npos) << busy;
  const absl::Status broken = client.Get("/api/v1/test/broken").status();
  EXPECT_THAT(broken, StatusIs(absl::StatusCode::kInternal));
  EXPECT_NE(broken.message().find("the database is corrupt"), absl::string_view::npos) << broken;
}

}  // namespace
}  // namespace cohort::master::http
