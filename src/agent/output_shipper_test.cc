// OutputShipper against a real HTTP server (the master's, MasterServer, on loopback) whose
// combined-output route a test route replaces: it notes the items of each post, can hold a post
// until the test lets it go, and answers each item with the code its allocation's name asks
// for ("code-404"). The master's own handling of the route is tested in master_http_test.
#include "agent/output_shipper.h"

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "common/testing/status_matchers.h"
#include "common/testing/temp_dir.h"
#include "gtest/gtest.h"
#include "master/http/testing/master_server.h"

namespace cohort::agent {
namespace {

using ::cohort::testing_support::StatusIs;
using ::cohort::testing_support::TempDir;
using master::http::MasterServer;
using master::http::Reply;
using master::http::Request;

class FakeOutputsRoute {
 public:
  // The route answers 404 "no such endpoint" as a master without it would.
  bool missing = false;
  // Held: each post waits for `release` (once the test notifies it, none waits).
  bool hold = false;
  absl::Notification release;
  std::atomic<int> arrived{0};

  std::unique_ptr<MasterServer> Serve() {
    return std::make_unique<MasterServer>(
        dir_.path(),
        MasterServer::Options{.intercept = [this](master::http::Router& router, master::Master&) {
          router.Post(R"(/api/v1/agents/([^/]+)/outputs)",
                      [this](const Request& req) { return Answer(req); },
                      {.require = master::http::Require::kAnyone});
        }});
  }
  std::vector<size_t> items_per_post() {
    std::lock_guard<std::mutex> lock(mu_);
    return items_per_post_;
  }

 private:
  absl::StatusOr<Reply> Answer(const Request& req) {
    if (missing) return absl::NotFoundError("no such endpoint");
    ++arrived;
    if (hold) release.WaitForNotification();
    absl::StatusOr<nlohmann::json> body = req.JsonBody();
    if (!body.ok()) return body.status();
    absl::StatusOr<std::vector<absl::StatusOr<wire::AllocationOutput>>> items =
        wire::ParseOutputBatch(*body);
    if (!items.ok()) return items.status();
    wire::OutputResults results;
    for (const auto& item : *items) {
      int code = 200;
      if (item.ok() && item->allocation.rfind("code-", 0) == 0) {
        EXPECT_TRUE(absl::SimpleAtoi(item->allocation.substr(5), &code));
      }
      results.results.push_back({code, code == 200 ? "" : "logs", "as asked"});
    }
    std::lock_guard<std::mutex> lock(mu_);
    items_per_post_.push_back(items->size());
    return Reply::Ok(results.ToJson());
  }

  TempDir dir_{"output_shipper"};  // the served master's; the route outlives its server
  std::mutex mu_;
  std::vector<size_t> items_per_post_;
};

wire::AllocationOutput LogItem(const std::string& allocation) {
  return wire::AllocationOutput{
      .allocation = allocation,
      .token = "t",
      .logs = wire::LogBatch{.trial_id = 1, .lines = {{0, "a line"}}, .node = 0}};
}

TEST(OutputShipperTest, ItemsHandedInWhileAPostIsOnItsWayGoTogetherInTheNext) {
  FakeOutputsRoute route;
  route.hold = true;
  auto server = route.Serve();
  OutputShipper shipper({.master_url = server->url(), .agent_id = "a1", .secret = "s"});
  std::vector<absl::Status> answers(5);
  std::vector<std::thread> runs;
  runs.emplace_back([&] { answers[0] = shipper.Ship(LogItem("alloc-0"), 64); });
  const absl::Time deadline = absl::Now() + absl::Seconds(10);
  while (route.arrived.load() < 1 && absl::Now() < deadline) absl::SleepFor(absl::Milliseconds(5));
  ASSERT_EQ(route.arrived.load(), 1) << "the first item's post did not arrive";
  for (int i = 1; i < 5; ++i) {
    runs.emplace_back(
        [&, i] { answers[i] = shipper.Ship(LogItem(absl::StrCat("alloc-", i)), 64); });
  }
  while (shipper.queued() < 4 && absl::Now() < deadline) absl::SleepFor(absl::Milliseconds(5));
  EXPECT_EQ(shipper.queued(), 4u);
  route.release.Notify();
  for (std::thread& t : runs) t.join();
  for (const absl::Status& s : answers) EXPECT_OK(s);
  EXPECT_EQ(route.items_per_post(), (std::vector<size_t>{1, 4}));
  EXPECT_EQ(shipper.posts(), 2);
}

TEST(OutputShipperTest, EachItemGetsTheStatusItsOwnPostWouldHaveHad) {
  FakeOutputsRoute route;
  auto server = route.Serve();
  OutputShipper shipper({.master_url = server->url(), .agent_id = "a1", .secret = "s"});
  EXPECT_OK(shipper.Ship(LogItem("code-200"), 64));
  EXPECT_THAT(shipper.Ship(LogItem("code-404"), 64), StatusIs(absl::StatusCode::kNotFound));
  EXPECT_THAT(shipper.Ship(LogItem("code-409"), 64),
              StatusIs(absl::StatusCode::kFailedPrecondition));
  EXPECT_THAT(shipper.Ship(LogItem("code-400"), 64), StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(shipper.Ship(LogItem("code-401"), 64), StatusIs(absl::StatusCode::kUnauthenticated));
  const absl::Status busy = shipper.Ship(LogItem("code-503"), 64);
  EXPECT_THAT(busy, StatusIs(absl::StatusCode::kUnavailable));
  EXPECT_NE(busy.message().find("logs: as asked"), absl::string_view::npos) << busy;
  EXPECT_THAT(shipper.Ship(LogItem("code-500"), 64), StatusIs(absl::StatusCode::kInternal));
}

TEST(OutputShipperTest, AMasterWithoutTheRouteIsAskedOnceThenEachRunPostsOnItsOwn) {
  FakeOutputsRoute route;
  route.missing = true;
  auto server = route.Serve();
  OutputShipper shipper({.master_url = server->url(), .agent_id = "a1", .secret = "s"});
  EXPECT_THAT(shipper.Ship(LogItem("alloc-1"), 64), StatusIs(absl::StatusCode::kUnimplemented));
  EXPECT_FALSE(shipper.supported());
  EXPECT_THAT(shipper.Ship(LogItem("alloc-2"), 64), StatusIs(absl::StatusCode::kUnimplemented));
  EXPECT_EQ(shipper.posts(), 1) << "asked again after the master said it has no such route";
}

TEST(OutputShipperTest, AMasterThatIsGoneMakesEveryItemUnavailable) {
  FakeOutputsRoute route;
  auto server = route.Serve();
  const std::string url = server->url();
  server.reset();
  OutputShipper shipper(
      {.master_url = url, .agent_id = "a1", .secret = "s", .timeout = absl::Seconds(5)});
  const absl::Status gone = shipper.Ship(LogItem("alloc-1"), 64);
  EXPECT_THAT(gone, StatusIs(absl::StatusCode::kUnavailable));
  EXPECT_TRUE(shipper.supported());
}

}  // namespace
}  // namespace cohort::agent
