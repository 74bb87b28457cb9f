#include "cli/webhook_commands.h"

#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "cli/exit_codes.h"
#include "cli/table.h"
#include "wire/webhook_bodies.h"

namespace cohort::cli {
namespace {

struct CreateArgs {
  std::string url;
  std::string type = "default";
  std::vector<std::string> triggers;  // states, each flag may hold several "A,B"
  std::string message_template;
  bool allow_local = false;
};

std::string TriggersCell(const std::vector<wire::WebhookTrigger>& triggers) {
  std::vector<std::string> states;
  for (const wire::WebhookTrigger& t : triggers) {
    states.push_back(t.condition.value("state", t.trigger_type));
  }
  return absl::StrJoin(states, ",");
}

int Create(const CommandContext& context, const CreateArgs& args) {
  wire::NewWebhook w{
      args.url, absl::AsciiStrToUpper(args.type), {}, args.message_template, args.allow_local};
  for (const std::string& flag : args.triggers) {
    for (absl::string_view state : absl::StrSplit(flag, ',', absl::SkipEmpty())) {
      w.triggers.push_back({"EXPERIMENT_STATE_CHANGE", {{"state", absl::AsciiStrToUpper(state)}}});
    }
  }
  absl::StatusOr<wire::Webhook> created =
      ParseAnswer("POST /api/v1/webhooks", context.Client().Post("/api/v1/webhooks", w.ToJson()),
                  wire::ParseWebhook);
  if (!created.ok()) return Fail(created.status());
  if (context.json()) return PrintJson(created->ToJson());
  std::cout << "webhook " << created->id << " created: " << created->webhook_type << " POSTs to "
            << created->url << " when an experiment is " << TriggersCell(created->triggers)
            << "\nsigning secret (shown only now; verify X-Cohort-Signature with it):\n  "
            << created->secret << "\n";
  return kExitOk;
}

int List(const CommandContext& context) {
  client::MasterClient client = context.Client();
  absl::StatusOr<wire::WebhookList> list =
      GetAs(client, "/api/v1/webhooks", wire::ParseWebhookList);
  if (!list.ok()) return Fail(list.status());
  if (context.json()) return PrintJson(list->ToJson());
  std::vector<std::vector<std::string>> rows;
  for (const wire::Webhook& w : list->webhooks) {
    rows.push_back({std::to_string(w.id), w.webhook_type, TriggersCell(w.triggers), w.url,
                    w.created_by, YesNo(w.allow_local)});
  }
  PrintTable(std::cout, {"id", "type", "states", "url", "created by", "local"}, rows);
  if (rows.empty()) std::cout << "no webhooks: `cohort webhook create --help` says how\n";
  return kExitOk;
}

int Deliveries(const CommandContext& context, int64_t id, int limit) {
  client::MasterClient client = context.Client();
  absl::StatusOr<wire::DeliveryList> list =
      GetAs(client, absl::StrCat("/api/v1/webhooks/", id, "/deliveries?limit=", limit),
            wire::ParseDeliveryList);
  if (!list.ok()) return Fail(list.status());
  if (context.json()) return PrintJson(list->ToJson());
  std::vector<std::vector<std::string>> rows;
  for (const wire::Delivery& d : list->deliveries) {
    rows.push_back({std::to_string(d.id), d.event, d.state, std::to_string(d.attempts),
                    FormatTime(d.created_ms), EmptyAsDash(d.last_error)});
  }
  PrintTable(std::cout, {"delivery", "event", "state", "attempts", "queued", "last error"}, rows);
  return kExitOk;
}

void AddCreate(CLI::App* group, CommandContext* context) {
  auto args = std::make_shared<CreateArgs>();
  CLI::App* sub = group->add_subcommand("create", "POST to a URL when experiments change state");
  sub->add_option("--url", args->url, "http(s) URL to POST to")->required();
  sub->add_option("--type", args->type, "default (the event as JSON) or slack ({\"text\": ...})")
      ->check(CLI::IsMember({"default", "slack", "DEFAULT", "SLACK"}));
  sub->add_option("--trigger", args->triggers,
                  "Experiment states that send, e.g. COMPLETED,ERROR (repeatable)")
      ->required();
  sub->add_option("--template", args->message_template,
                  "The message, with {{experiment.id}}, {{experiment.name}}, "
                  "{{experiment.state}}, {{experiment.owner}}, {{event}}");
  sub->add_flag("--allow-local", args->allow_local,
                "Allow loopback and link-local targets (refused otherwise: server-side request "
                "forgery)");
  context->AddJsonFlag(sub, "Print the webhook (with its secret) as JSON");
  sub->footer(
      "Each POST carries X-Cohort-Delivery (an id to dedupe on: a delivery may arrive twice), "
      "X-Cohort-Event and X-Cohort-Signature: t=UNIX,v1=HEX, HEX being HMAC-SHA-256 of "
      "\"UNIX.BODY\" with the secret printed at creation. Failed POSTs are retried with back-off "
      "for 24 hours.\nExample:\n  cohort webhook create --url "
      "https://hooks.slack.com/services/T/B/X "
      "--type slack --trigger COMPLETED,ERROR");
  context->OnRun(sub, [context, args] { return Create(*context, *args); });
}

}  // namespace

void AddWebhookCommands(CLI::App* root, CommandContext* context) {
  CLI::App* group = root->add_subcommand("webhook",
                                         "Webhooks: POSTs on experiments' state "
                                         "changes (admins)");
  group->require_subcommand(1);
  AddCreate(group, context);
  CLI::App* list = group->add_subcommand("list", "List webhooks");
  list->alias("ls");
  context->AddJsonFlag(list);
  context->OnRun(list, [context] { return List(*context); });
  auto id = std::make_shared<int64_t>(0);
  CLI::App* del = group->add_subcommand("delete", "Delete a webhook and its queued deliveries");
  del->add_option("id", *id, "Webhook id")->required();
  context->OnRun(del, [context, id] {
    absl::StatusOr<Json> r = context->Client().Delete(absl::StrCat("/api/v1/webhooks/", *id));
    if (!r.ok()) return Fail(r.status());
    std::cout << "webhook " << *id << " deleted\n";
    return kExitOk;
  });
  CLI::App* test = group->add_subcommand("test", "Queue a TEST delivery to a webhook");
  test->add_option("id", *id, "Webhook id")->required();
  test->footer("`cohort webhook deliveries ID` then shows whether it arrived.");
  context->OnRun(test, [context, id] {
    const std::string path = absl::StrCat("/api/v1/webhooks/", *id, "/test");
    absl::StatusOr<wire::Delivery> d =
        ParseAnswer("POST " + path, context->Client().Post(path), wire::ParseDelivery);
    if (!d.ok()) return Fail(d.status());
    std::cout << "delivery " << d->id << " queued (`cohort webhook deliveries " << *id
              << "` shows how it went)\n";
    return kExitOk;
  });
  auto limit = std::make_shared<int>(20);
  CLI::App* deliveries = group->add_subcommand("deliveries", "A webhook's latest deliveries");
  deliveries->add_option("id", *id, "Webhook id")->required();
  deliveries->add_option("--limit", *limit, "How many, newest first")->check(CLI::Range(1, 1000));
  context->AddJsonFlag(deliveries);
  context->OnRun(deliveries, [context, id, limit] { return Deliveries(*context, *id, *limit); });
}

}  // namespace cohort::cli
