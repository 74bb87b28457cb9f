// Webhooks on a real cluster (issue 42, docs/design/0023): a real cohort-master and agent,
// shell-script trials, `cohort webhook` through the real CLI, and a receiver on loopback in
// this process (cpp-httplib) that checks each POST's signature with OpenSSL's HMAC (not the
// master's code), answers 500 to the first one, and is away while the master is killed and
// restarted: every event arrives, once, signed.

#include <openssl/hmac.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "httplib.h"
#include "tests/testing/cluster_fixture.h"
#include "tests/testing/worker_group.h"

namespace cohort::testing {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

// HMAC-SHA-256 of "t.body" with `secret`, as hex: what X-Cohort-Signature's v1 must be.
std::string ExpectedMac(const std::string& secret, const std::string& t, const std::string& body) {
  const std::string text = t + "." + body;
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  HMAC(EVP_sha256(), secret.data(), static_cast<int>(secret.size()),
       reinterpret_cast<const unsigned char*>(text.data()), text.size(), mac, &n);
  return absl::BytesToHexString(std::string(reinterpret_cast<char*>(mac), n));
}

class Receiver {
 public:
  struct Post {
    std::string delivery;
    std::string body;
    bool signed_ok = false;
  };
  Receiver(int port, int failures) : failures_(failures) {
    server_.Post("/hook", [this](const httplib::Request& req, httplib::Response& res) {
      std::lock_guard<std::mutex> lock(mu_);
      if (failures_-- > 0) {
        res.status = 500;
        return;
      }
      std::string t, v1;
      for (absl::string_view part :
           absl::StrSplit(req.get_header_value("X-Cohort-Signature"), ',')) {
        if (absl::ConsumePrefix(&part, "t=")) t = std::string(part);
        if (absl::ConsumePrefix(&part, "v1=")) v1 = std::string(part);
      }
      posts_.push_back({req.get_header_value("X-Cohort-Delivery"), req.body,
                        !secret_.empty() && v1 == ExpectedMac(secret_, t, req.body)});
    });
    port_ = port == 0 ? server_.bind_to_any_port("127.0.0.1")
                      : (server_.bind_to_port("127.0.0.1", port) ? port : -1);
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    // stop() before the listen starts would be lost (and the join would wait forever).
    while (port_ > 0 && !server_.is_running())
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ~Receiver() {
    server_.stop();
    thread_.join();
  }
  int port() const { return port_; }
  void set_secret(const std::string& s) {
    std::lock_guard<std::mutex> lock(mu_);
    secret_ = s;
  }
  std::vector<Post> posts() {
    std::lock_guard<std::mutex> lock(mu_);
    return posts_;
  }

 private:
  httplib::Server server_;
  std::mutex mu_;
  int failures_;
  std::string secret_;
  std::vector<Post> posts_;
  int port_ = 0;
  std::thread thread_;
};

class WebhooksTest : public ClusterFixture {
 protected:
  WebhooksTest() : ClusterFixture("webhooks_test") {}
};

TEST_F(WebhooksTest, SignedPostsRetriedAfterA500AndNothingLostOverAMasterRestart) {
  StartMaster();
  StartAgent("a1");
  auto receiver = std::make_unique<Receiver>(0, /*failures=*/1);
  const int port = receiver->port();
  const std::string url = absl::StrCat("http://127.0.0.1:", port, "/hook");

  // Without --allow-local a loopback target is refused (a request forgery): the URL is
  // accepted, and its address refused at each attempt.
  const json local = Json({"webhook", "create", "--url", url, "--trigger", "COMPLETED"});
  const std::string local_id = std::to_string(local["id"].get<int64_t>());
  ASSERT_EQ(Json({"webhook", "list"})["webhooks"].size(), 1u);
  ASSERT_EQ(Cohort({"webhook", "test", local_id}).status, 0);
  WaitUntil(
      [&] {
        const json d = Json({"webhook", "deliveries", local_id});
        return !d["deliveries"].empty() && d["deliveries"][0]["last_error"].get<std::string>().find(
                                               "--allow-local") != std::string::npos;
      },
      "the loopback target's refusal in the delivery");
  EXPECT_TRUE(receiver->posts().empty());
  ASSERT_EQ(Cohort({"webhook", "delete", local_id}).status, 0);

  const json hook =
      Json({"webhook", "create", "--url", url, "--trigger", "COMPLETED,ERROR", "--allow-local",
            "--template", "{{experiment.name}} ended {{experiment.state}}"});
  receiver->set_secret(hook["secret"]);
  const std::string id = std::to_string(hook["id"].get<int64_t>());

  // 1. An experiment completes: one signed POST, after the receiver's 500.
  Script("ok.sh", "exit 0\n");
  const int64_t done = Create("done", "./ok.sh", "max_restarts: 0\n");
  WaitUntil([&] { return receiver->posts().size() == 1; }, "the COMPLETED POST");
  Receiver::Post post = receiver->posts()[0];
  EXPECT_TRUE(post.signed_ok) << post.body;
  const json body = json::parse(post.body);
  EXPECT_EQ(body["experiment"]["id"], done);
  EXPECT_EQ(body["message"], "done ended COMPLETED");
  const json deliveries = Json({"webhook", "deliveries", id});
  ASSERT_EQ(deliveries["deliveries"].size(), 1u);
  EXPECT_EQ(deliveries["deliveries"][0]["attempts"], 2) << "the 500, then the success";
  EXPECT_EQ(deliveries["deliveries"][0]["state"], "DELIVERED");

  // 2. The receiver goes away; an experiment fails; the master is killed and restarted; the
  // receiver comes back: the ERROR arrives, once.
  receiver.reset();
  Script("fail.sh", "exit 3\n");
  const int64_t failed = Create("failed", "./fail.sh", "max_restarts: 0\n");
  WaitUntil([&] { return State(failed) == "ERROR"; }, "the failing experiment to end");
  WaitUntil(
      [&] {
        const json d = Json({"webhook", "deliveries", id});
        return d["deliveries"].size() == 2 && d["deliveries"][0]["attempts"].get<int>() >= 1;
      },
      "a refused attempt while the receiver is away");
  KillMaster();
  receiver = std::make_unique<Receiver>(port, 0);
  ASSERT_EQ(receiver->port(), port) << "the receiver's port was taken meanwhile";
  receiver->set_secret(hook["secret"]);
  RestartMaster();
  WaitUntil([&] { return receiver->posts().size() == 1; }, "the ERROR POST after the restart",
            absl::Seconds(90));
  post = receiver->posts()[0];
  EXPECT_TRUE(post.signed_ok);
  EXPECT_EQ(json::parse(post.body)["experiment"]["id"], failed);
  EXPECT_EQ(json::parse(post.body)["experiment"]["state"], "ERROR");
  absl::SleepFor(absl::Seconds(2));
  EXPECT_EQ(receiver->posts().size(), 1u) << "nothing twice";
}

// A metric threshold and a log pattern through the CLI: the Core API tutorial's grid (x = 50 *
// increment_by at its validation) sends one POST for the one trial whose x is above 120, and a
// trial that logs the pattern three times sends one, naming the first line.
TEST_F(WebhooksTest, AMetricThresholdAndALogPatternSendOncePerTrial) {
  StartMaster();
  StartAgent("a1");
  Receiver receiver(0, /*failures=*/0);
  const std::string url = absl::StrCat("http://127.0.0.1:", receiver.port(), "/hook");
  LaunchResult lonely = Cohort({"webhook", "create", "--url", url, "--above", "3"});
  EXPECT_EQ(lonely.status, 2);
  EXPECT_NE(lonely.err.find("--metric NAME goes with --above X or --below X"), std::string::npos)
      << lonely.err;
  const json metric =
      Json({"webhook", "create", "--url", url, "--metric", "x", "--above", "120", "--allow-local"});
  receiver.set_secret(metric["secret"]);
  const json listed = Json({"webhook", "list"});
  ASSERT_EQ(listed["webhooks"].size(), 1u);
  EXPECT_EQ(listed["webhooks"][0]["triggers"][0]["trigger_type"], "METRIC_THRESHOLD_EXCEEDED");
  LaunchResult table = Cohort({"webhook", "list"});
  EXPECT_NE(table.out.find("x>120"), std::string::npos) << table.out;

  Script("hp.sh", absl::StrCat("exec ", BinaryPath("core_api_3_hpsearch"), "\n"));
  const fs::path config = dir_ / "grid.yaml";
  std::ofstream(config) << "name: grid\nentrypoint: ./hp.sh\nmax_restarts: 0\n"
                           "hyperparameters:\n  global_batch_size: 1\n"
                           "  increment_by: {type: categorical, vals: [1, 2, 3]}\n"
                           "searcher: {name: grid, metric: x, smaller_is_better: false,\n"
                           "  max_length: {batches: 50}, max_concurrent_trials: 1}\n";
  LaunchResult grid =
      Cohort({"experiment", "create", config.string(), (dir_ / "context").string(), "--follow"});
  ASSERT_EQ(grid.status, 0) << grid.out << grid.err;
  WaitUntil([&] { return receiver.posts().size() == 1; }, "the threshold's POST");
  const Receiver::Post post = receiver.posts()[0];
  EXPECT_TRUE(post.signed_ok);
  const json body = json::parse(post.body);
  EXPECT_EQ(body["event"], "METRIC_THRESHOLD_EXCEEDED");
  EXPECT_EQ(body["metric"]["value"], 150);
  EXPECT_GT(body["trial"]["id"].get<int64_t>(), 0);

  const json log = Json({"webhook", "create", "--url", url, "--log-regex", "out of memory",
                         "--allow-local", "--template", "{{trial.id}}: {{log.line}}"});
  receiver.set_secret(log["secret"]);
  Script("oom.sh",
         "echo 'step 1'\necho 'CUDA out of memory on rank 0'\necho 'out of memory'\n"
         "echo 'still out of memory'\n");
  const int64_t oom = Create("oom", "./oom.sh", "max_restarts: 0\n");
  WaitUntil([&] { return receiver.posts().size() == 2; }, "the pattern's POST");
  absl::SleepFor(absl::Seconds(2));
  const std::vector<Receiver::Post> posts = receiver.posts();
  ASSERT_EQ(posts.size(), 2u) << "one for the pattern, however often it is logged";
  const json logged = json::parse(posts[1].body);
  EXPECT_EQ(logged["event"], "TASK_LOG");
  EXPECT_EQ(logged["experiment"]["id"], oom);
  EXPECT_NE(logged["message"].get<std::string>().find(": CUDA out of memory on rank 0"),
            std::string::npos)
      << logged.dump();
  EXPECT_TRUE(posts[1].signed_ok);
}

}  // namespace
}  // namespace cohort::testing
