// The master's real routes, served by an in-process Master on a loopback port, against bodies
// built to crash it: whatever a request carries, the master answers and lives on.
#include "master/http/routes.h"

#include <httplib.h>

#include <memory>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "common/clock.h"
#include "common/testing/temp_dir.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "master/db/database.h"
#include "master/http/testing/master_server.h"

namespace cohort::master::http {
namespace {

using ::cohort::testing_support::TempDir;
using ::testing::HasSubstr;

class RoutesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    server_ = std::make_unique<MasterServer>(dir_.path(), MasterServer::Options{});
    port_ = server_->port();
    ASSERT_GT(port_, 0);
  }

  TempDir dir_{"routes"};  // outlives server_
  std::unique_ptr<MasterServer> server_;
  int port_ = 0;
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

TEST_F(RoutesTest, ALogTailOutsideItsRangeIsRefusedNamingIt) {
  httplib::Client client("127.0.0.1", port_);
  for (const char* tail : {"0", "10001"}) {
    httplib::Result r = client.Get(absl::StrCat("/api/v1/trials/1/logs?tail=", tail));
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 400) << tail;
    EXPECT_THAT(r->body, HasSubstr(absl::StrCat("query parameter tail must be an integer in [1, "
                                                "10000], got ",
                                                tail)));
  }
  httplib::Result missing = client.Get("/api/v1/trials/1/logs?tail=5");
  ASSERT_TRUE(missing);
  EXPECT_EQ(missing->status, 404) << missing->body;
}

}  // namespace
}  // namespace cohort::master::http
