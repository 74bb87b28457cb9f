// The webhooks component against a real HTTP receiver on loopback (cpp-httplib in this
// process) and a real SQLite database: messages, signatures, the SSRF rule, and deliveries that
// are signed, retried after a 500, kept in order, and picked up again by a new Webhooks (a
// restarted master).

#include "master/webhooks/webhooks.h"

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/testing/status_matchers.h"
#include "common/testing/temp_dir.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "httplib.h"
#include "master/db/sqlite_database.h"
#include "master/webhooks/message.h"
#include "master/webhooks/signing.h"
#include "master/webhooks/target.h"
#include "nlohmann/json.hpp"

namespace cohort::master::webhooks {
namespace {

using ::cohort::testing_support::StatusIs;
using ::cohort::testing_support::TempDir;
using ::testing::HasSubstr;
using Json = nlohmann::json;

TEST(MessageTest, DefaultAndSlackBodiesAndTemplates) {
  const Event e{"EXPERIMENT_STATE_CHANGE", 7, "mnist \"v2\"", "COMPLETED", "alice", 123};
  const Json slack = Json::parse(Body("SLACK", "", e));
  EXPECT_EQ(slack["text"], "Experiment 7 (mnist \"v2\") is COMPLETED");
  const Json plain = Json::parse(Body("DEFAULT", "{{experiment.owner}}: {{event}}", e));
  EXPECT_EQ(plain["message"], "alice: EXPERIMENT_STATE_CHANGE");
  EXPECT_EQ(plain["experiment"]["id"], 7);
  EXPECT_EQ(plain["experiment"]["state"], "COMPLETED");
  EXPECT_EQ(Render("{{experiment.name}}", {.experiment_name = "{{event}}"}), "{{event}}")
      << "a value is not substituted again";
  EXPECT_OK(CheckTemplate("run {{experiment.id}} {{experiment.state}}"));
  EXPECT_THAT(CheckTemplate("run {{experiment.nmae}} ok"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("{{experiment.nmae}}")));
}

TEST(SigningTest, ASignatureVerifiesOnlyWithItsSecretBodyAndTime) {
  const std::string secret = NewSecret();
  EXPECT_EQ(secret.size(), 64u);
  EXPECT_NE(secret, NewSecret());
  const std::string header = Signature(secret, 1000, "{\"a\":1}");
  EXPECT_THAT(header, HasSubstr("t=1000,v1="));
  EXPECT_TRUE(Verify(secret, header, "{\"a\":1}", 1010));
  EXPECT_FALSE(Verify(secret, header, "{\"a\":2}", 1010)) << "another body";
  EXPECT_FALSE(Verify(NewSecret(), header, "{\"a\":1}", 1010)) << "another secret";
  EXPECT_FALSE(Verify(secret, header, "{\"a\":1}", 2000)) << "a replay after 5 minutes";
  EXPECT_FALSE(Verify(secret, "t=1000,v1=00", "{\"a\":1}", 1010));
}

TEST(TargetTest, LocalTargetsAreRefusedUnlessAllowed) {
  for (const char* local : {"127.0.0.1", "127.9.9.9", "169.254.169.254", "0.0.0.0", "224.0.0.1",
                            "::1", "fe80::1", "::", "ff02::1", "::ffff:127.0.0.1"}) {
    EXPECT_TRUE(IsLocalAddress(local)) << local;
  }
  for (const char* remote : {"8.8.8.8", "10.1.2.3", "192.168.1.1", "2001:db8::1"}) {
    EXPECT_FALSE(IsLocalAddress(remote)) << remote;
  }
  EXPECT_THAT(ResolveTarget("http://169.254.169.254/latest/meta-data/", false),
              StatusIs(absl::StatusCode::kPermissionDenied, HasSubstr("--allow-local")));
  EXPECT_THAT(ResolveTarget("http://localhost:9/", false),
              StatusIs(absl::StatusCode::kPermissionDenied));
  EXPECT_THAT(ResolveTarget("http://[::1]:9/", false),
              StatusIs(absl::StatusCode::kPermissionDenied));
  ASSERT_OK_AND_ASSIGN(Target t, ResolveTarget("http://localhost:9/x", true));
  EXPECT_EQ(t.port, 9);
  EXPECT_THAT(t.pin, HasSubstr("localhost:9:")) << "pinned to the address checked";
  EXPECT_THAT(CheckUrl("ftp://h/"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("only http and https")));
  EXPECT_THAT(CheckUrl("https://user:pw@h/"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("credentials")));
  EXPECT_THAT(CheckUrl("not a url"), StatusIs(absl::StatusCode::kInvalidArgument));
}

// A receiver on loopback: answers 500 to the first `failures` POSTs, then 200; keeps the rest.
class Receiver {
 public:
  explicit Receiver(int failures) : failures_(failures) {
    server_.Post("/hook", [this](const httplib::Request& req, httplib::Response& res) {
      std::lock_guard<std::mutex> lock(mu_);
      if (failures_-- > 0) {
        res.status = 500;
        ++refused_;
        return;
      }
      posts_.push_back({req.get_header_value("X-Cohort-Delivery"),
                        req.get_header_value("X-Cohort-Signature"), req.body});
    });
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    // stop() before the listen starts would be lost (and the join would wait forever).
    while (port_ > 0 && !server_.is_running())
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ~Receiver() {
    server_.stop();
    thread_.join();
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_) + "/hook"; }
  struct Post {
    std::string delivery, signature, body;
  };
  std::vector<Post> posts() {
    std::lock_guard<std::mutex> lock(mu_);
    return posts_;
  }
  int refused() {
    std::lock_guard<std::mutex> lock(mu_);
    return refused_;
  }

 private:
  httplib::Server server_;
  std::mutex mu_;
  int failures_;
  int refused_ = 0;
  std::vector<Post> posts_;
  int port_ = 0;
  std::thread thread_;
};

class WebhooksTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_OK_AND_ASSIGN(db_, SqliteDatabase::Open(dir_.path() + "/master.db"));
  }
  std::unique_ptr<Webhooks> Open() {
    auto hooks = std::make_unique<Webhooks>(
        *db_, RealClock(),
        DeliveryPolicy{.first_retry = absl::Milliseconds(200), .poll = absl::Milliseconds(50)});
    EXPECT_OK(hooks->Load());
    return hooks;
  }
  static void WaitFor(const std::function<bool()>& done, const char* what) {
    const absl::Time deadline = absl::Now() + absl::Seconds(20);
    while (!done()) {
      ASSERT_LT(absl::Now(), deadline) << "waiting for " << what;
      absl::SleepFor(absl::Milliseconds(20));
    }
  }
  static wire::NewWebhook StateHook(const std::string& url, const std::string& state) {
    return {url, "DEFAULT", {{"EXPERIMENT_STATE_CHANGE", {{"state", state}}}}, "", true};
  }

  TempDir dir_;
  std::unique_ptr<SqliteDatabase> db_;
};

TEST_F(WebhooksTest, OnlyAdminsAndOnlyValidWebhooks) {
  std::unique_ptr<Webhooks> hooks = Open();
  EXPECT_THAT(hooks->Create(false, "alice", StateHook("http://h/", "COMPLETED")),
              StatusIs(absl::StatusCode::kPermissionDenied, HasSubstr("for admins")));
  EXPECT_THAT(hooks->List(false), StatusIs(absl::StatusCode::kPermissionDenied));
  EXPECT_THAT(hooks->Create(true, "root", StateHook("http://h/", "DONE")),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("triggers[0].condition.state: 'DONE'")));
  wire::NewWebhook typo = StateHook("http://h/", "ERROR");
  typo.webhook_type = "TEAMS";
  EXPECT_THAT(hooks->Create(true, "root", typo),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("DEFAULT or SLACK")));
  ASSERT_OK_AND_ASSIGN(wire::Webhook made,
                       hooks->Create(true, "root", StateHook("https://h/", "ERROR")));
  EXPECT_EQ(made.secret.size(), 64u) << "shown once, at creation";
  ASSERT_OK_AND_ASSIGN(wire::WebhookList list, hooks->List(true));
  ASSERT_EQ(list.webhooks.size(), 1u);
  EXPECT_TRUE(list.webhooks[0].secret.empty()) << "never listed";
  ASSERT_OK(hooks->Delete(true, made.id));
  EXPECT_THAT(hooks->Delete(true, made.id), StatusIs(absl::StatusCode::kNotFound));
}

// Metric-threshold and log-pattern triggers (Determined's condition fields) are checked at
// creation, each naming what is wrong.
TEST_F(WebhooksTest, MetricAndLogTriggersAreCheckedAtCreation) {
  std::unique_ptr<Webhooks> hooks = Open();
  auto with = [](const std::string& type, Json condition) {
    return wire::NewWebhook{"https://h/", "DEFAULT", {{type, std::move(condition)}}, "", false};
  };
  EXPECT_THAT(hooks->Create(true, "root", with("METRIC_THRESHOLD_EXCEEDED", {{"metricValue", 1}})),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("triggers[0].condition.metricName: needs the name")));
  EXPECT_THAT(
      hooks->Create(
          true, "root",
          with("METRIC_THRESHOLD_EXCEEDED", {{"metricName", "loss"}, {"metricValue", "low"}})),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("metricValue: needs a finite")));
  EXPECT_THAT(
      hooks->Create(true, "root",
                    with("METRIC_THRESHOLD_EXCEEDED",
                         {{"metricName", "loss"}, {"metricValue", 1}, {"condition", "SIDEWAYS"}})),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("must be ABOVE or BELOW")));
  EXPECT_THAT(hooks->Create(true, "root", with("TASK_LOG", {{"regex", "(unclosed"}})),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("triggers[0].condition.regex: missing )")));
  EXPECT_THAT(hooks->Create(true, "root", with("CUSTOM", Json::object())),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("'CUSTOM' is not one of")));
  EXPECT_OK(hooks->Create(true, "root", with("TASK_LOG", {{"regex", "CUDA out of memory"}})));
}

// A threshold crossed or a pattern logged sends once per trial and trigger, also after a
// restart (a new Webhooks on the same database), and carries the trial's fields.
TEST_F(WebhooksTest, MetricAndLogTriggersFireOncePerTrial) {
  std::unique_ptr<Webhooks> hooks = Open();
  wire::NewWebhook w{
      "http://127.0.0.1:1/hook",
      "DEFAULT",
      {{"METRIC_THRESHOLD_EXCEEDED",
        {{"metricName", "validation_loss"}, {"metricValue", 0.2}, {"condition", "BELOW"}}},
       {"TASK_LOG", {{"regex", "out of memory"}}}},
      "",
      true};
  ASSERT_OK_AND_ASSIGN(wire::Webhook made, hooks->Create(true, "root", w));
  const Event exp{"", 5, "mnist", "ACTIVE", "alice", 1000};
  ASSERT_OK(hooks->OnValidation(exp, 11, {{"validation_loss", 0.5}}));  // not below
  ASSERT_OK(hooks->OnValidation(exp, 11, {{"accuracy", 0.1}}));         // not named
  ASSERT_OK(hooks->OnValidation(exp, 11, {{"validation_loss", 0.15}}));
  ASSERT_OK(hooks->OnValidation(exp, 11, {{"validation_loss", 0.1}}));   // already sent
  ASSERT_OK(hooks->OnValidation(exp, 12, {{"validation_loss", 0.19}}));  // another trial
  ASSERT_OK(
      hooks->OnTrialLogs(exp, 11, {"step 1", "CUDA out of memory (rank 0)", "out of memory"}));
  ASSERT_OK(hooks->OnTrialLogs(exp, 11, {"out of memory again"}));
  hooks.reset();  // a restart: what was sent is known from the rows
  hooks = Open();
  ASSERT_OK(hooks->OnTrialLogs(exp, 11, {"out of memory after the restart"}));
  ASSERT_OK(hooks->OnValidation(exp, 12, {{"validation_loss", 0.01}}));
  // Forgetting a trial (its experiment deleted) frees memory, not the once-only rule: the
  // delivery's row still refuses a second one.
  hooks->ForgetTrials({11, 12});
  ASSERT_OK(hooks->OnTrialLogs(exp, 11, {"out of memory, forgotten"}));

  ASSERT_OK_AND_ASSIGN(wire::DeliveryList d, hooks->Deliveries(true, made.id, 100));
  ASSERT_EQ(d.deliveries.size(), 3u);
  ASSERT_OK_AND_ASSIGN(std::vector<DeliveryRow> rows, db_->ListDeliveries(made.id, 100));
  const Json log = Json::parse(rows[0].body);  // newest first
  EXPECT_EQ(log["event"], "TASK_LOG");
  EXPECT_EQ(log["trial"]["id"], 11);
  EXPECT_EQ(log["log"]["line"], "CUDA out of memory (rank 0)") << "the first matching line";
  EXPECT_EQ(log["message"],
            "Experiment 5 (mnist), trial 11 logged a line matching 'out of memory': CUDA out of "
            "memory (rank 0)");
  const Json second = Json::parse(rows[1].body);
  EXPECT_EQ(second["trial"]["id"], 12);
  EXPECT_EQ(second["metric"]["value"], 0.19);
  const Json first = Json::parse(rows[2].body);
  EXPECT_EQ(first["event"], "METRIC_THRESHOLD_EXCEEDED");
  EXPECT_EQ(first["message"], "Experiment 5 (mnist), trial 11: validation_loss 0.15 is BELOW 0.2");
  ASSERT_OK(hooks->OnValidation(exp, 13, {{"validation_loss", 0.1}}));  // remembered, then
  EXPECT_OK(hooks->Delete(true, made.id));                              // dropped with it
}

// One signed POST per event, retried after the receiver's 500s, and the events no trigger names
// send nothing.
TEST_F(WebhooksTest, EachEventIsPostedSignedOnceAndRetriedAfterA500) {
  Receiver receiver(/*failures=*/2);
  std::unique_ptr<Webhooks> hooks = Open();
  ASSERT_OK_AND_ASSIGN(wire::Webhook w,
                       hooks->Create(true, "root", StateHook(receiver.url(), "COMPLETED")));
  hooks->Start();
  const int64_t now = absl::ToUnixMillis(absl::Now());
  ASSERT_OK(hooks->OnExperimentState({"EXPERIMENT_STATE_CHANGE", 3, "a", "ACTIVE", "u", now}));
  ASSERT_OK(hooks->OnExperimentState({"EXPERIMENT_STATE_CHANGE", 3, "a", "COMPLETED", "u", now}));
  ASSERT_OK(hooks->OnExperimentState({"EXPERIMENT_STATE_CHANGE", 4, "b", "COMPLETED", "u", now}));
  WaitFor([&] { return receiver.posts().size() == 2; }, "two deliveries");
  absl::SleepFor(absl::Milliseconds(300));  // nothing more arrives
  const std::vector<Receiver::Post> posts = receiver.posts();
  ASSERT_EQ(posts.size(), 2u);
  EXPECT_EQ(receiver.refused(), 2) << "the first was refused twice, then sent again";
  for (size_t i = 0; i < posts.size(); ++i) {
    EXPECT_TRUE(
        Verify(w.secret, posts[i].signature, posts[i].body, absl::ToUnixSeconds(absl::Now())));
    EXPECT_EQ(Json::parse(posts[i].body)["experiment"]["id"], i == 0 ? 3 : 4) << "in order";
  }
  EXPECT_NE(posts[0].delivery, posts[1].delivery);
  ASSERT_OK_AND_ASSIGN(wire::DeliveryList d, hooks->Deliveries(true, w.id, 10));
  ASSERT_EQ(d.deliveries.size(), 2u);
  EXPECT_EQ(d.deliveries[1].attempts, 3);
  EXPECT_EQ(d.deliveries[1].state, "DELIVERED");
}

// Queued while the receiver is down and the master stops: a new Webhooks on the same database
// (a restarted master) delivers it.
TEST_F(WebhooksTest, NothingQueuedIsLostOverARestart) {
  std::string url;
  int64_t id = 0;
  {
    Receiver gone(0);
    url = gone.url();
  }  // nothing listens there now
  {
    std::unique_ptr<Webhooks> hooks = Open();
    ASSERT_OK_AND_ASSIGN(wire::Webhook w, hooks->Create(true, "root", StateHook(url, "ERROR")));
    id = w.id;
    hooks->Start();
    ASSERT_OK(hooks->OnExperimentState(
        {"EXPERIMENT_STATE_CHANGE", 9, "c", "ERROR", "u", absl::ToUnixMillis(absl::Now())}));
    WaitFor(
        [&] {
          absl::StatusOr<wire::DeliveryList> d = hooks->Deliveries(true, id, 1);
          return d.ok() && !d->deliveries.empty() && d->deliveries[0].attempts >= 1;
        },
        "a refused attempt");
    EXPECT_THAT(hooks->Deliveries(true, id, 1)->deliveries[0].last_error,
                HasSubstr("Couldn't connect"));
  }  // stopped: the master went away
  // The receiver comes back where it was.
  httplib::Server server;
  std::atomic<int> got{0};
  server.Post("/hook", [&](const httplib::Request&, httplib::Response&) { ++got; });
  const int port =
      std::stoi(url.substr(url.rfind(':') + 1, url.find("/hook") - url.rfind(':') - 1));
  if (!server.bind_to_port("127.0.0.1", port)) GTEST_SKIP() << "port " << port << " was taken";
  std::thread listen([&] { server.listen_after_bind(); });
  while (!server.is_running()) absl::SleepFor(absl::Milliseconds(1));
  std::unique_ptr<Webhooks> restarted = Open();
  restarted->Start();
  WaitFor([&] { return got.load() == 1; }, "the delivery after the restart");
  WaitFor(
      [&] {
        absl::StatusOr<wire::DeliveryList> d = restarted->Deliveries(true, id, 1);
        return d.ok() && !d->deliveries.empty() && d->deliveries[0].state == "DELIVERED";
      },
      "the delivery recorded");
  restarted->Stop();
  server.stop();
  listen.join();
}

TEST_F(WebhooksTest, StopAbortsAnAttemptInFlightAtOnce) {
  httplib::Server slow;
  slow.Post("/hook", [](const httplib::Request&, httplib::Response&) {
    std::this_thread::sleep_for(std::chrono::seconds(3));
  });
  const int port = slow.bind_to_any_port("127.0.0.1");
  std::thread listen([&] { slow.listen_after_bind(); });
  while (!slow.is_running()) absl::SleepFor(absl::Milliseconds(1));
  std::unique_ptr<Webhooks> hooks = Open();
  ASSERT_OK_AND_ASSIGN(
      wire::Webhook w,
      hooks->Create(true, "root",
                    StateHook("http://127.0.0.1:" + std::to_string(port) + "/hook", "COMPLETED")));
  hooks->Start();
  ASSERT_OK(hooks->Test(true, w.id).status());
  absl::SleepFor(absl::Milliseconds(500));  // the POST is in flight
  const absl::Time before = absl::Now();
  hooks->Stop();
  EXPECT_LT(absl::Now() - before, absl::Seconds(2));
  slow.stop();
  listen.join();
}

}  // namespace
}  // namespace cohort::master::webhooks
