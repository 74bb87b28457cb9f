// The web interface's routes on a real master: the page for its own paths (never cached), the
// assets under their version (cached for a year), and nothing else: no traversal, no shadowing
// of the API.
#include "master/http/web_routes.h"

#include <httplib.h>

#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "common/testing/temp_dir.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "master/http/testing/master_server.h"
#include "master/http/web_assets.h"

namespace cohort::master::http {
namespace {

using ::cohort::testing_support::TempDir;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

class WebRoutesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    server_ = std::make_unique<MasterServer>(dir_.path(), MasterServer::Options{});
    ASSERT_GT(server_->port(), 0);
    client_ = std::make_unique<httplib::Client>("127.0.0.1", server_->port());
  }
  std::string Asset(const std::string& path) {
    return absl::StrCat("/assets/", std::string(WebAssetsVersion()), "/", path);
  }

  TempDir dir_{"web_routes"};  // outlives server_
  std::unique_ptr<MasterServer> server_;
  std::unique_ptr<httplib::Client> client_;
};

TEST_F(WebRoutesTest, ThePageIsServedForItsOwnPathsAndNeverCached) {
  for (const char* path : {"/", "/login", "/experiments", "/experiments/3", "/trials/9?tab=logs",
                           "/cluster", "/no/such/page"}) {
    httplib::Result res = client_->Get(path);
    ASSERT_TRUE(res) << path;
    EXPECT_EQ(res->status, 200) << path;
    EXPECT_THAT(res->get_header_value("Content-Type"), StartsWith("text/html")) << path;
    EXPECT_EQ(res->get_header_value("Cache-Control"), "no-cache") << path;
    EXPECT_THAT(res->get_header_value("Content-Security-Policy"),
                HasSubstr("frame-ancestors 'none'"));
    EXPECT_EQ(res->get_header_value("X-Content-Type-Options"), "nosniff");
    EXPECT_THAT(res->body, HasSubstr(Asset("js/main.js"))) << "index.html names its version";
    EXPECT_THAT(res->body, Not(HasSubstr("{{ASSETS}}")));
  }
}

TEST_F(WebRoutesTest, AssetsAreServedUnderTheirVersionAndCachedForAYear) {
  httplib::Result js = client_->Get(Asset("js/main.js"));
  ASSERT_TRUE(js);
  EXPECT_EQ(js->status, 200);
  EXPECT_THAT(js->get_header_value("Content-Type"), StartsWith("text/javascript"));
  EXPECT_EQ(js->get_header_value("Cache-Control"), "public, max-age=31536000, immutable");
  EXPECT_EQ(js->body, std::string(FindWebAsset("js/main.js")->bytes));
  httplib::Result uplot = client_->Get(Asset("vendor/uplot/uPlot.iife.min.js"));
  ASSERT_TRUE(uplot);
  EXPECT_EQ(uplot->status, 200);
  EXPECT_GT(uplot->body.size(), 10000u);
  httplib::Result css = client_->Get(Asset("app.css"));
  ASSERT_TRUE(css);
  EXPECT_THAT(css->get_header_value("Content-Type"), StartsWith("text/css"));
}

TEST_F(WebRoutesTest, PathsOutsideTheAssetsAreNotFoundWhateverTheyTraverse) {
  for (const std::string& path :
       {Asset("../../../../etc/passwd"), Asset("%2e%2e/%2e%2e/%2e%2e/etc/passwd"),
        Asset("js/../../../CMakeLists.txt"), Asset("/etc/passwd"), Asset("js/"),
        Asset("js/main.js/"), Asset("index.html"), Asset("JS/MAIN.JS"),
        std::string("/assets/0123456789abcdef/js/main.js"), std::string("/assets/")}) {
    httplib::Result res = client_->Get(path);
    ASSERT_TRUE(res) << path;
    EXPECT_EQ(res->status, 404) << path;
    EXPECT_THAT(res->body, Not(HasSubstr("root:"))) << path;
    EXPECT_THAT(res->get_header_value("Content-Type"), StartsWith("application/json")) << path;
  }
  httplib::Result old = client_->Get("/assets/0123456789abcdef/js/main.js");
  ASSERT_TRUE(old);
  EXPECT_THAT(old->body, HasSubstr("reload the page"));
}

TEST_F(WebRoutesTest, TheApiAndMetricsAreNotShadowedByThePage) {
  httplib::Result unknown = client_->Get("/api/v1/no-such-thing");
  ASSERT_TRUE(unknown);
  EXPECT_EQ(unknown->status, 404);
  EXPECT_THAT(unknown->body, HasSubstr("no such endpoint"));
  httplib::Result api = client_->Get("/api");
  ASSERT_TRUE(api);
  EXPECT_EQ(api->status, 404);
  httplib::Result metrics = client_->Get("/metrics");
  ASSERT_TRUE(metrics);
  EXPECT_THAT(metrics->get_header_value("Content-Type"), Not(StartsWith("text/html")));
  httplib::Result experiments = client_->Get("/api/v1/experiments");
  ASSERT_TRUE(experiments);
  EXPECT_EQ(experiments->status, 200);
  EXPECT_THAT(experiments->get_header_value("Content-Type"), StartsWith("application/json"));
}

TEST_F(WebRoutesTest, TheVersionIsAHashOfTheFiles) {
  EXPECT_EQ(WebAssetsVersion().size(), 16u);
  EXPECT_EQ(WebAssetsVersion().find_first_not_of("0123456789abcdef"), std::string::npos);
  ASSERT_NE(FindWebAsset("index.html"), nullptr);
  EXPECT_EQ(FindWebAsset("js/../index.html"), nullptr);
  EXPECT_EQ(FindWebAsset(""), nullptr);
}

}  // namespace
}  // namespace cohort::master::http
