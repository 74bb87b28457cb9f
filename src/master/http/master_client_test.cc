// MasterClient's kept connection against the master's real server (MasterServer): one
// connection for a client's requests, replaced when the master restarts, and nothing of one
// request's credentials left on it for the next.
#include "client/master_client.h"

#include <memory>
#include <set>
#include <string>

#include "gtest/gtest.h"
#include "master/http/testing/master_server.h"

namespace cohort::master::http {
namespace {

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
               }});
}

TEST(MasterClientTest, KeepsOneConnectionForItsRequests) {
  auto server = Serve(MakeTempDir("client_keep"));
  client::MasterClient client(server->url(), absl::Seconds(10));
  std::set<int> ports;
  for (int i = 0; i < 20; ++i) {
    absl::StatusOr<Json> peer = client.Get("/api/v1/test/peer");
    ASSERT_TRUE(peer.ok()) << peer.status();
    ports.insert((*peer)["port"].get<int>());
    // An error answer leaves the connection usable.
    EXPECT_EQ(client.Post("/api/v1/test/none").status().code(), absl::StatusCode::kNotFound);
  }
  EXPECT_EQ(ports.size(), 1u) << "a new connection per request";
}

TEST(MasterClientTest, AConnectionToAMasterThatRestartedIsReplaced) {
  const std::string dir = MakeTempDir("client_restart");
  auto server = Serve(dir);
  const int port = server->port();
  client::MasterClient client(server->url(), absl::Seconds(10));
  ASSERT_TRUE(client.Get("/api/v1/test/peer").ok());
  server.reset();  // the kept connection is closed by the master's stop
  server = Serve(dir, port);
  ASSERT_EQ(server->port(), port);
  absl::StatusOr<Json> again = client.Get("/api/v1/test/peer");
  EXPECT_TRUE(again.ok()) << again.status();
}

TEST(MasterClientTest, ATokenClearedIsNotSentOnTheKeptConnection) {
  auto server = Serve(MakeTempDir("client_token"));
  client::MasterClient client(server->url(), absl::Seconds(10));
  client.set_bearer_token("first");
  absl::StatusOr<Json> with = client.Get("/api/v1/test/peer");
  ASSERT_TRUE(with.ok()) << with.status();
  EXPECT_EQ((*with)["authorization"], "Bearer first");
  client.set_bearer_token("");
  absl::StatusOr<Json> without = client.Get("/api/v1/test/peer");
  ASSERT_TRUE(without.ok()) << without.status();
  EXPECT_EQ((*without)["authorization"], "");
}

}  // namespace
}  // namespace cohort::master::http
