#include "wire/webhook_bodies.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace cohort::wire {
namespace {

using ::testing::HasSubstr;

TEST(WebhookBodiesTest, EveryBodyRoundTripsAndTheSecretOnlyWhenSet) {
  Webhook w{7,
            "https://ci.example/hook",
            "SLACK",
            {{"EXPERIMENT_STATE_CHANGE", {{"state", "COMPLETED"}}}},
            "{{experiment.name}} is {{experiment.state}}",
            true,
            "root",
            5,
            "s3cr3t"};
  EXPECT_EQ(ParseWebhook(w.ToJson()).value().ToJson(), w.ToJson());
  w.secret.clear();
  EXPECT_FALSE(w.ToJson().contains("secret")) << "a listed webhook shows no secret";
  const WebhookList list{{w, w}};
  EXPECT_EQ(ParseWebhookList(list.ToJson()).value().ToJson(), list.ToJson());
  const NewWebhook n{
      "http://h/", "DEFAULT", {{"EXPERIMENT_STATE_CHANGE", {{"state", "ERROR"}}}}, "", false};
  EXPECT_EQ(ParseNewWebhook(n.ToJson()).value().ToJson(), n.ToJson());
  const DeliveryList d{{{3, 7, "TEST", "FAILED", 4, "HTTP 500", 1, 2, 3}}};
  EXPECT_EQ(ParseDeliveryList(d.ToJson()).value().ToJson(), d.ToJson());
}

TEST(WebhookBodiesTest, BadBodiesNameTheField) {
  EXPECT_THAT(ParseNewWebhook(Json{{"triggers", Json::array()}}).status().message(),
              HasSubstr("new webhook: missing \"url\""));
  EXPECT_THAT(ParseNewWebhook(Json{{"url", "http://h/"}}).status().message(),
              HasSubstr("missing \"triggers\""));
  EXPECT_THAT(ParseNewWebhook(Json{{"url", "http://h/"}, {"triggers", {{{"condition", 1}}}}})
                  .status()
                  .message(),
              HasSubstr("\"triggers\"[0]: missing \"trigger_type\""));
  EXPECT_THAT(ParseNewWebhook(Json{{"url", std::string(kMaxWebhookUrlBytes + 1, 'h')},
                                   {"triggers", Json::array()}})
                  .status()
                  .message(),
              HasSubstr("\"url\""));
}

}  // namespace
}  // namespace cohort::wire
