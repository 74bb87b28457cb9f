// The master's real routes, served by an in-process Master on a loopback port, against bodies
// built to crash it: whatever a request carries, the master answers and lives on.
#include "master/http/routes.h"

#include <httplib.h>
#include <stdlib.h>

#include <memory>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "common/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "master/db/database.h"

namespace cohort::master::http {
namespace {

using ::testing::HasSubstr;

class RoutesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string dir = ::testing::TempDir() + "/routes_XXXXXX";
    ASSERT_NE(mkdtemp(dir.data()), nullptr);
    absl::StatusOr<std::unique_ptr<Master>> master =
        Master::Create(OpenSqliteDatabase(":memory:").value(), {.data_dir = dir, .clock = &clock_});
    ASSERT_TRUE(master.ok()) << master.status();
    master_ = *std::move(master);
    RegisterRoutes(server_, *master_, std::make_unique<AllowEveryone>());
    port_ = server_.bind_to_any_port("127.0.0.1");
    ASSERT_GT(port_, 0);
    thread_ = std::thread([this] { server_.listen_after_bind(); });
  }
  void TearDown() override {
    while (thread_.joinable() && !server_.is_running()) std::this_thread::yield();
    server_.stop();
    if (thread_.joinable()) thread_.join();
    master_.reset();  // after the server: its handlers call the master
  }

  FakeClock clock_;
  std::unique_ptr<Master> master_;
  httplib::Server server_;
  int port_ = 0;
  std::thread thread_;
};

TEST_F(RoutesTest, AReportWhoseMetricsNest200000DeepIsRefusedNamingTheLimit) {
  constexpr int kDepth = 200000;
  const std::string metrics = std::string(kDepth, '[') + "1" + std::string(kDepth, ']');
  const std::string body = absl::StrCat(
      R"({"trial_id": 1, "lines": [{"kind": "validation", "steps_completed": 1, "metrics": {"m": )",
      metrics, "}}]}");
  httplib::Client client("127.0.0.1", port_);
  httplib::Result r = client.Post("/api/v1/allocations/a1/reports", body, "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 400);
  EXPECT_THAT(r->body, HasSubstr("nests deeper than 128 levels"));
  httplib::Result after = client.Get("/api/v1/experiments");
  ASSERT_TRUE(after);
  EXPECT_EQ(after->status, 200);
}

TEST_F(RoutesTest, ATemplateWithACyclicAliasIsRefusedAndTheMasterLivesOn) {
  httplib::Client client("127.0.0.1", port_);
  httplib::Result r = client.Put("/api/v1/templates/loop", "a: &x [1, *x]", "application/yaml");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 400);
  EXPECT_THAT(r->body, HasSubstr("cyclic alias"));
  httplib::Result after = client.Get("/api/v1/templates");
  ASSERT_TRUE(after);
  EXPECT_EQ(after->status, 200);
}

}  // namespace
}  // namespace cohort::master::http
