#include "master/http/router.h"

#include <httplib.h>

#include <condition_variable>
#include <future>
#include <mutex>
#include <stdexcept>
#include <thread>

#include "absl/strings/str_cat.h"
#include "common/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "master/http/http_server.h"
#include "wire/limits.h"

namespace cohort::master::http {
namespace {

using ::cohort::testing_support::StatusIs;
using ::testing::HasSubstr;

// Refuses every request without the header `X-Test-Caller`; names the caller otherwise.
class HeaderAuthenticator : public Authenticator {
 public:
  absl::StatusOr<Caller> Authenticate(const httplib::Request& request, Require) override {
    if (!request.has_header("X-Test-Caller")) {
      return absl::UnauthenticatedError("no X-Test-Caller header");
    }
    return Caller{Caller::Kind::kUser, request.get_header_value("X-Test-Caller")};
  }
};

// A real server on a loopback port the OS picks, with routes that exercise the chain.
class RouterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Router router(std::make_unique<HeaderAuthenticator>(), BrowserGuard(true));
    router.Get(R"(/item/(\d+))", [](const Request& req) -> absl::StatusOr<Reply> {
      absl::StatusOr<int64_t> id = req.PathId();
      if (!id.ok()) return id.status();
      if (*id == 404) return absl::NotFoundError("item 404 not found");
      if (*id == 409) return absl::FailedPreconditionError("first line\nsecond\nthird");
      if (*id == 500) throw std::runtime_error("a bug");
      return Reply::Ok(Json{{"id", *id}, {"caller", req.caller().name}});
    });
    router.Post("/echo", [](const Request& req) -> absl::StatusOr<Reply> {
      absl::StatusOr<Json> body = req.JsonBody();
      if (!body.ok()) return body.status();
      return Reply::Ok(*body, 201);
    });
    router.Get("/wait", [](const Request& req) -> absl::StatusOr<Reply> {
      absl::StatusOr<absl::Duration> wait = req.QuerySeconds("timeout", 5, 60);
      if (!wait.ok()) return wait.status();
      return Reply::Ok(Json{{"seconds", absl::ToDoubleSeconds(*wait)}});
    });
    absl::StatusOr<std::unique_ptr<HttpServer>> server = HttpServer::Bind({});
    ASSERT_OK(server);
    server_ = *std::move(server);
    ASSERT_OK(server_->Serve(router.table()));
    port_ = server_->port();
  }
  httplib::Client Client() {
    httplib::Client client("127.0.0.1", port_);
    client.set_default_headers({{"X-Test-Caller", "ada"}});
    return client;
  }
  static Json Body(const httplib::Result& r) { return Json::parse(r->body, nullptr, false); }

  std::unique_ptr<HttpServer> server_;
  int port_ = 0;
};

TEST_F(RouterTest, ARouteSeesItsCallerAndAnswersJson) {
  httplib::Result r = Client().Get("/item/7");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(Body(r)["id"], 7);
  EXPECT_EQ(Body(r)["caller"], "ada");
}

TEST_F(RouterTest, AuthenticationRunsBeforeEveryRoute) {
  httplib::Client anonymous("127.0.0.1", port_);
  httplib::Result r = anonymous.Get("/item/7");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 401);
  EXPECT_EQ(Body(r)["error"], "no X-Test-Caller header");
}

TEST_F(RouterTest, StatusesMapToCodesAndMultiLineErrorsToAList) {
  httplib::Result missing = Client().Get("/item/404");
  ASSERT_TRUE(missing);
  EXPECT_EQ(missing->status, 404);
  EXPECT_EQ(Body(missing)["error"], "item 404 not found");
  httplib::Result conflict = Client().Get("/item/409");
  ASSERT_TRUE(conflict);
  EXPECT_EQ(conflict->status, 409);
  EXPECT_EQ(Body(conflict)["error"], "first line");
  EXPECT_EQ(Body(conflict)["errors"], Json::array({"second", "third"}));
  httplib::Result bad_id = Client().Get("/item/0");
  ASSERT_TRUE(bad_id);
  EXPECT_EQ(bad_id->status, 400);
  EXPECT_THAT(Body(bad_id)["error"].get<std::string>(), HasSubstr("'0' is not an id"));
}

TEST_F(RouterTest, AnExceptionInARouteIsA500NamingTheRouteAndTheServerLivesOn) {
  httplib::Result r = Client().Get("/item/500");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 500);
  EXPECT_THAT(Body(r)["error"].get<std::string>(), HasSubstr("GET /item/500"));
  EXPECT_THAT(Body(r)["error"].get<std::string>(), HasSubstr("a bug"));
  httplib::Result after = Client().Get("/item/8");
  ASSERT_TRUE(after);
  EXPECT_EQ(after->status, 200);
}

TEST_F(RouterTest, BodiesOverTheLimitAreRefusedBeforeTheRoute) {
  const std::string big(wire::kMaxJsonBodyBytes + 1, ' ');
  httplib::Result r = Client().Post("/echo", big, "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 413);
  EXPECT_THAT(Body(r)["error"].get<std::string>(), HasSubstr("takes at most"));
  httplib::Result ok = Client().Post("/echo", R"({"a": 1})", "application/json");
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 201);
  EXPECT_EQ(Body(ok)["a"], 1);
}

TEST_F(RouterTest, BadBodiesAndQueryParametersAreNamed) {
  httplib::Result not_json = Client().Post("/echo", "{nope", "application/json");
  ASSERT_TRUE(not_json);
  EXPECT_EQ(not_json->status, 400);
  EXPECT_EQ(Body(not_json)["error"], "the request body is not JSON");
  httplib::Result bad_wait = Client().Get("/wait?timeout=soon");
  ASSERT_TRUE(bad_wait);
  EXPECT_EQ(bad_wait->status, 400);
  EXPECT_THAT(Body(bad_wait)["error"].get<std::string>(), HasSubstr("timeout"));
  httplib::Result clamped = Client().Get("/wait?timeout=1e9");
  ASSERT_TRUE(clamped);
  EXPECT_EQ(Body(clamped)["seconds"], 60);
}

TEST_F(RouterTest, HeadIsServedByTheGetRouteWithoutABody) {
  httplib::Result r = Client().Head("/item/7");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_TRUE(r->body.empty());
  httplib::Result unknown = Client().Head("/nothing/here");
  ASSERT_TRUE(unknown);
  EXPECT_EQ(unknown->status, 404);
}

TEST_F(RouterTest, UnknownEndpointsSayWhichOne) {
  httplib::Result r = Client().Get("/nope");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 404);
  EXPECT_EQ(Body(r)["error"], "no such endpoint: GET /nope");
}

TEST_F(RouterTest, ANameThatIsNotLoopbackIsRefusedOnALoopbackMaster) {
  httplib::Client client = Client();
  httplib::Result rebound = client.Get("/item/7", {{"Host", "evil.example:8080"}});
  ASSERT_TRUE(rebound);
  EXPECT_EQ(rebound->status, 403);
  EXPECT_THAT(Body(rebound)["error"].get<std::string>(), HasSubstr("Host 'evil.example:8080'"));
  for (const char* name : {"localhost:1", "127.0.0.1", "[::1]:8080", "LOCALHOST"}) {
    httplib::Result ok = client.Get("/item/7", {{"Host", name}});
    ASSERT_TRUE(ok);
    EXPECT_EQ(ok->status, 200) << name;
  }
}

TEST_F(RouterTest, ARequestFromAnotherOriginIsRefusedAndTheSameOriginIsNot) {
  httplib::Client client = Client();
  httplib::Result foreign =
      client.Post("/echo", {{"Origin", "http://evil.example"}}, R"({"a": 1})", "text/plain");
  ASSERT_TRUE(foreign);
  EXPECT_EQ(foreign->status, 403);
  EXPECT_THAT(Body(foreign)["error"].get<std::string>(),
              HasSubstr("Origin 'http://evil.example' is not this master"));
  const std::string self = absl::StrCat("http://127.0.0.1:", port_);
  httplib::Result same = client.Post("/echo", {{"Origin", self}}, R"({"a": 1})",
                                     "application/json");
  ASSERT_TRUE(same);
  EXPECT_EQ(same->status, 201);
  // Issue 34: the scheme counts, an https:// page is another origin than this http:// master.
  httplib::Result other_scheme =
      client.Post("/echo", {{"Origin", absl::StrCat("https://127.0.0.1:", port_)}},
                  R"({"a": 1})", "application/json");
  ASSERT_TRUE(other_scheme);
  EXPECT_EQ(other_scheme->status, 403);
}

TEST(BrowserGuardTest, AnHttpsMasterTakesOnlyItsHttpsOrigin) {
  const BrowserGuard guard(false, /*https=*/true);
  httplib::Request request;
  request.headers.emplace("Host", "master.example:8443");
  request.headers.emplace("Origin", "https://master.example:8443");
  EXPECT_OK(guard.Check(request));
  request.headers.find("Origin")->second = "http://master.example:8443";
  EXPECT_THAT(guard.Check(request), StatusIs(absl::StatusCode::kPermissionDenied));
}

// A router admitting one handler at a time: a route that waits (a long poll) does not hold the
// slot, one that works does, and the next request waits for it.
TEST(RouterGateTest, OneHandlerAtATimeExceptRoutesThatWait) {
  Router router(std::make_unique<AllowEveryone>(), BrowserGuard(false),
                /*concurrent_handlers=*/1);
  std::mutex mu;
  std::condition_variable cv;
  bool release_poll = false, release_work = false;
  int entered = 0;  // handlers of /poll and /work that have started
  const auto hold = [&](bool* release) {
    std::unique_lock<std::mutex> lock(mu);
    ++entered;
    cv.notify_all();
    cv.wait_for(lock, std::chrono::seconds(20), [&] { return *release; });
    return Reply::Ok(Json{{"released", *release}});
  };
  const auto wait_entered = [&](int n) {
    std::unique_lock<std::mutex> lock(mu);
    return cv.wait_for(lock, std::chrono::seconds(10), [&] { return entered >= n; });
  };
  router.Get("/poll", [&](const Request&) { return hold(&release_poll); }, {.waits = true});
  router.Get("/work", [&](const Request&) { return hold(&release_work); });
  router.Get("/quick", [](const Request&) -> absl::StatusOr<Reply> { return Reply::Done(); });
  absl::StatusOr<std::unique_ptr<HttpServer>> server = HttpServer::Bind({});
  ASSERT_OK(server);
  ASSERT_OK((*server)->Serve(router.table()));
  const int port = (*server)->port();
  const auto get = [port](const char* path) {
    httplib::Client client("127.0.0.1", port);
    httplib::Result r = client.Get(path);
    return r ? r->status : -1;
  };

  std::future<int> poll = std::async(std::launch::async, get, "/poll");
  EXPECT_TRUE(wait_entered(1));
  std::future<int> beside_poll = std::async(std::launch::async, get, "/quick");
  EXPECT_EQ(beside_poll.wait_for(std::chrono::seconds(5)), std::future_status::ready)
      << "a waiting long poll must not hold the gate's only slot";

  std::future<int> work = std::async(std::launch::async, get, "/work");
  EXPECT_TRUE(wait_entered(2));  // /work holds the slot now
  std::future<int> queued = std::async(std::launch::async, get, "/quick");
  EXPECT_EQ(queued.wait_for(std::chrono::milliseconds(300)), std::future_status::timeout)
      << "a second handler ran while the only slot was held";
  double waiting = -1;
  for (const prometheus::MetricFamily& family : router.request_metrics()->Collect()) {
    if (family.name == "cohort_http_requests_waiting") waiting = family.metric.at(0).gauge.value;
  }
  EXPECT_EQ(waiting, 1) << "/metrics counts the request waiting for the slot";
  {
    std::lock_guard<std::mutex> lock(mu);
    release_work = release_poll = true;
  }
  cv.notify_all();
  EXPECT_EQ(work.get(), 200);
  EXPECT_EQ(queued.get(), 200);
  EXPECT_EQ(poll.get(), 200);
  EXPECT_EQ(beside_poll.get(), 200);
}

TEST(BrowserGuardTest, LoopbackNamesAreRecognised) {
  EXPECT_TRUE(IsLoopbackHost("127.0.0.1"));
  EXPECT_TRUE(IsLoopbackHost("127.0.1.1"));
  EXPECT_TRUE(IsLoopbackHost("localhost"));
  EXPECT_TRUE(IsLoopbackHost("::1"));
  EXPECT_FALSE(IsLoopbackHost("0.0.0.0"));
  EXPECT_FALSE(IsLoopbackHost("10.0.0.1"));
  EXPECT_FALSE(IsLoopbackHost("127.evil.example")) << "a name, not a loopback address";
}

}  // namespace
}  // namespace cohort::master::http
