// HttpServer (libmicrohttpd) under a Router, on a loopback port, with cpp-httplib's client and
// raw sockets: keep-alive, multipart forms, streamed answers, the engine's own limits, query
// parameters and the client's address as the routes see them, and a stop that does not wait
// for idle connections. The Router's chain itself is router_test.cc's.
#include "master/http/http_server.h"

#include <arpa/inet.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace cohort::master::http {
namespace {

using ::testing::HasSubstr;

constexpr size_t kStreamBytes = 3 << 20;

// A connection to 127.0.0.1:`port` whose sends and receives wait at most 5 s; -1 when it cannot
// connect.
int ConnectLoopback(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  timeval timeout{5, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof(timeout));
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// What comes back on `fd` until the server closes it (or 5 s pass); closes it.
std::string ReceiveAll(int fd) {
  std::string answer;
  char buffer[4096];
  ssize_t n = 0;
  while ((n = ::recv(fd, buffer, sizeof(buffer), 0)) > 0) answer.append(buffer, n);
  ::close(fd);
  return answer;
}

// Sends `raw` on a new connection to `port`; what comes back until it is closed (or 5 s).
std::string RawExchangeOn(int port, const std::string& raw) {
  const int fd = ConnectLoopback(port);
  if (fd < 0) return "";
  ::send(fd, raw.data(), raw.size(), MSG_NOSIGNAL);
  return ReceiveAll(fd);
}

class HttpServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Router router(std::make_unique<AllowEveryone>());
    router.Get("/who", [](const Request& req) -> absl::StatusOr<Reply> {
      return Reply::Ok(Json{{"addr", req.raw().remote_addr}, {"port", req.raw().remote_port}});
    });
    router.Get("/params", [](const Request& req) -> absl::StatusOr<Reply> {
      Json names = Json::array();
      for (size_t i = 0; i < req.raw().get_param_value_count("name"); ++i) {
        names.push_back(req.raw().get_param_value("name", i));
      }
      return Reply::Ok(Json{{"names", names}, {"follow", req.raw().has_param("follow")}});
    });
    router.Post("/form",
                [](const Request& req) -> absl::StatusOr<Reply> {
                  Json parts = Json::object();
                  for (const auto& [name, part] : req.raw().files) {
                    parts[name] =
                        Json{{"bytes", part.content.size()},
                             {"filename", part.filename},
                             {"nuls", std::count(part.content.begin(), part.content.end(), '\0')}};
                  }
                  return Reply::Ok(parts);
                },
                {.max_body = 4 << 20});
    router.Get("/stream", [this](const Request&) -> absl::StatusOr<Reply> {
      Reply reply;
      reply.content_type = "application/octet-stream";
      reply.stream = [this](httplib::DataSink& sink) {
        const std::string chunk(64 << 10, 'x');
        for (size_t sent = 0; sent < kStreamBytes; sent += chunk.size()) {
          if (!sink.write(chunk.data(), chunk.size())) {
            refused_write_ = true;
            return false;
          }
        }
        return true;
      };
      return reply;
    });
    // Writes until a write is refused: however much the socket buffers take in, a client that
    // leaves is still there to be noticed (a bounded answer may be all buffered by then).
    router.Get("/endless", [this](const Request&) -> absl::StatusOr<Reply> {
      Reply reply;
      reply.content_type = "application/octet-stream";
      reply.stream = [this](httplib::DataSink& sink) {
        const std::string chunk(64 << 10, 'x');
        while (sink.write(chunk.data(), chunk.size())) {
        }
        refused_write_ = true;
        return false;
      };
      return reply;
    });
    absl::StatusOr<std::unique_ptr<HttpServer>> server = HttpServer::Bind({});
    ASSERT_OK(server);
    server_ = *std::move(server);
    ASSERT_OK(server_->Serve(router.table()));
  }

  std::string RawExchange(const std::string& raw) const {
    return RawExchangeOn(server_->port(), raw);
  }
  httplib::Client Client() const { return httplib::Client("127.0.0.1", server_->port()); }

  std::unique_ptr<HttpServer> server_;
  std::atomic<bool> refused_write_{false};
};

Json Body(const httplib::Result& r) { return Json::parse(r->body, nullptr, false); }

TEST_F(HttpServerTest, AKeptAliveConnectionServesRequestAfterRequest) {
  httplib::Client client = Client();
  client.set_keep_alive(true);
  std::set<int> ports;
  for (int i = 0; i < 50; ++i) {
    httplib::Result r = client.Get("/who");
    ASSERT_TRUE(r) << "request " << i;
    ASSERT_EQ(r->status, 200);
    EXPECT_EQ(Body(r)["addr"], "127.0.0.1");
    ports.insert(Body(r)["port"].get<int>());
  }
  EXPECT_EQ(ports.size(), 1u) << "every request came over the one connection";
}

TEST_F(HttpServerTest, QueryParametersAreDecodedAndRepeatsKept) {
  httplib::Result r = Client().Get("/params?name=loss&name=val%20acc&follow");
  ASSERT_TRUE(r);
  EXPECT_EQ(Body(r)["names"], Json::array({"loss", "val acc"}));
  EXPECT_EQ(Body(r)["follow"], true);
}

TEST_F(HttpServerTest, MultipartPartsReachTheRouteWithTheirBytes) {
  std::string binary(300 << 10, 'a');
  for (size_t i = 0; i < binary.size(); i += 1000) binary[i] = '\0';
  httplib::MultipartFormDataItems items = {
      {"config", "name: x\n", "", "text/yaml"},
      {"context", binary, "context.tar.gz", "application/gzip"}};
  httplib::Result r = Client().Post("/form", items);
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(Body(r)["config"]["bytes"], 8);
  EXPECT_EQ(Body(r)["context"]["bytes"], binary.size());
  EXPECT_EQ(Body(r)["context"]["filename"], "context.tar.gz");
  EXPECT_EQ(Body(r)["context"]["nuls"], (binary.size() + 999) / 1000);
}

TEST_F(HttpServerTest, AStreamedAnswerArrivesWhole) {
  size_t received = 0;
  bool all_x = true;
  httplib::Result r = Client().Get("/stream", [&](const char* data, size_t size) {
    received += size;
    all_x = all_x && std::string(data, size).find_first_not_of('x') == std::string::npos;
    return true;
  });
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(received, kStreamBytes);
  EXPECT_TRUE(all_x);
}

TEST_F(HttpServerTest, AClientThatLeavesAStreamStopsItsProducer) {
  httplib::Result r =
      Client().Get("/endless", [&](const char*, size_t) { return false; });  // leaves at once
  EXPECT_FALSE(r);
  // The connection is closed: the producer's next write, once the buffers are full, fails.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!refused_write_ && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_TRUE(refused_write_) << "the producer's write was not refused within 10 s of its "
                                 "client leaving";
}

TEST_F(HttpServerTest, ABodyOverTheEnginesLimitIsRefusedBeforeItIsRead) {
  const std::string answer = RawExchange(
      "POST /form HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
      "Content-Length: 999999999999\r\n\r\n{");
  EXPECT_THAT(answer, HasSubstr("HTTP/1.1 413"));
  EXPECT_THAT(answer, HasSubstr("the request body is 999999999999 bytes; this endpoint "
                                "takes at most"));
  httplib::Result after = Client().Get("/who");
  ASSERT_TRUE(after);
  EXPECT_EQ(after->status, 200);
}

// Admits only "Authorization: Bearer good", as a user.
class OneToken : public Authenticator {
 public:
  absl::StatusOr<Caller> Authenticate(const httplib::Request& request, Require) override {
    if (request.get_header_value("Authorization") != "Bearer good") return Caller{};
    return Caller{.kind = Caller::Kind::kUser, .name = "u"};
  }
};

// Sends a chunked POST of up to `bytes` (64 KiB chunks) on a new connection with `headers`,
// until the server stops taking it (each send may wait 5 s); returns the bytes sent and what
// came back.
std::pair<size_t, std::string> ChunkedPost(int port, const std::string& path,
                                           const std::string& headers, size_t bytes) {
  const int fd = ConnectLoopback(port);
  if (fd < 0) return {0, ""};
  const std::string head = absl::StrCat("POST ", path, " HTTP/1.1\r\nHost: 127.0.0.1\r\n", headers,
                                        "Transfer-Encoding: chunked\r\n\r\n");
  ::send(fd, head.data(), head.size(), MSG_NOSIGNAL);
  const std::string chunk = absl::StrCat("10000\r\n", std::string(1 << 16, 'z'), "\r\n");
  const auto send_chunk = [&] {
    return ::send(fd, chunk.data(), chunk.size(), MSG_NOSIGNAL) ==
           static_cast<ssize_t>(chunk.size());
  };
  size_t sent = 0;
  while (sent < bytes && send_chunk()) sent += 1 << 16;
  if (sent >= bytes) ::send(fd, "0\r\n\r\n", 5, MSG_NOSIGNAL);
  return {sent, ReceiveAll(fd)};
}

// Issue 34: an unauthenticated request is refused from its head; its body is never read
// (before, the master read up to ~97 MB of it, then answered 401). An open route's body is cut
// at its small limit as it comes, chunked or not.
TEST(HttpServerAuthTest, AnUnauthenticatedBodyIsNeverRead) {
  std::atomic<int> served{0};
  Router router(std::make_unique<OneToken>());
  router.Post(
      "/upload",
      [&](const Request&) -> absl::StatusOr<Reply> {
        ++served;
        return Reply::Done();
      },
      {.max_body = 80 << 20});
  router.Post(
      "/open", [&](const Request&) -> absl::StatusOr<Reply> { return Reply::Done(); },
      {.require = Require::kAnyone});
  absl::StatusOr<std::unique_ptr<HttpServer>> server = HttpServer::Bind({});
  ASSERT_OK(server);
  ASSERT_OK((*server)->Serve(router.table()));
  const int port = (*server)->port();
  const size_t kBody = 64 << 20;
  std::vector<std::thread> senders;
  std::vector<std::pair<size_t, std::string>> results(4);
  for (int i = 0; i < 4; ++i) {
    senders.emplace_back([&, i] { results[i] = ChunkedPost(port, "/upload", "", kBody); });
  }
  for (std::thread& t : senders) t.join();
  for (const auto& [sent, answer] : results) {
    EXPECT_THAT(answer, HasSubstr("HTTP/1.1 401"));
    // What the kernel's socket buffers took is all that left the sender: never the body.
    EXPECT_LT(sent, size_t{16} << 20) << "the server read the unauthenticated body";
  }
  EXPECT_EQ(served, 0);
  // A client that declares its body (as the CLI's uploads do) reads its 401 whole, so it can
  // log in again and retry; the body was dropped, kept nowhere.
  const std::string declared_401 = RawExchangeOn(
      port, absl::StrCat("POST /upload HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 2000000\r\n"
                         "Connection: close\r\n\r\n",
                         std::string(2000000, 'x')));
  EXPECT_THAT(declared_401, HasSubstr("HTTP/1.1 401"));
  EXPECT_EQ(served, 0);
  // An open route's chunked body is cut at its limit as it comes: the connection is closed
  // there (libmicrohttpd cannot answer in the middle of a body), the sender stopped.
  const auto [open_sent, open_answer] = ChunkedPost(port, "/open", "", kBody);
  EXPECT_LT(open_sent, size_t{16} << 20) << "the server read the open route's body on";
  EXPECT_THAT(open_answer, ::testing::Not(HasSubstr("HTTP/1.1 200")));
  // Declared too large: 413 from the head; the declared body is dropped, so the client reads
  // the answer.
  const std::string declared = RawExchangeOn(
      port, absl::StrCat("POST /open HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 1000000\r\n"
                         "Connection: close\r\n\r\n",
                         std::string(1000000, 'x')));
  EXPECT_THAT(declared, HasSubstr("HTTP/1.1 413"));
  EXPECT_THAT(declared, HasSubstr(absl::StrCat("this endpoint takes at most ",
                                               kMaxOpenBodyBytes)));
  // The token opens the door: the same kind of body is read whole.
  const auto [ok_sent, ok_answer] =
      ChunkedPost(port, "/upload", "Authorization: Bearer good\r\nConnection: close\r\n", 4 << 20);
  EXPECT_EQ(ok_sent, size_t{4} << 20);
  EXPECT_THAT(ok_answer, HasSubstr("HTTP/1.1 200"));
  EXPECT_EQ(served, 1);
}

TEST_F(HttpServerTest, AnOversizedHeadOrAGarbledRequestIsRefusedAndTheServerLivesOn) {
  const std::string big_head = RawExchange(absl::StrCat(
      "GET /who HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: ", std::string(100 << 10, 'b'), "\r\n\r\n"));
  EXPECT_THAT(big_head, ::testing::ContainsRegex("^HTTP/1.1 4[0-9][0-9] "));
  const std::string garbled = RawExchange(std::string("\x16\x03\x01\x02\x00\n\x01\r\n\r\n", 11));
  EXPECT_THAT(garbled, ::testing::Not(HasSubstr("HTTP/1.1 200")));
  httplib::Result after = Client().Get("/who");
  ASSERT_TRUE(after);
  EXPECT_EQ(after->status, 200);
}

TEST_F(HttpServerTest, StopDoesNotWaitForIdleKeptAliveConnections) {
  httplib::Client client = Client();
  client.set_keep_alive(true);
  ASSERT_TRUE(client.Get("/who"));
  const auto start = std::chrono::steady_clock::now();
  server_->Stop();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5))
      << "Stop waited for a connection with nothing to do";
  EXPECT_FALSE(Client().Get("/who")) << "a stopped server answered";
}

}  // namespace
}  // namespace cohort::master::http
