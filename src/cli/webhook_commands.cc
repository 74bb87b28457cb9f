#include "cli/webhook_commands.h"

#include <iostream>
#include <memory>
#include <optional>
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
  std::vector<std::string> triggers;     // states, each flag may hold several "A,B"
  std::string metric;                    // METRIC_THRESHOLD_EXCEEDED: the validation metric
  std::optional<double> above, below;    // its threshold, one of them
  std::vector<std::string> log_regexes;  // TASK_LOG, one trigger each
  std::string message_template;
  bool allow_local = false;
};

// A trigger as the list shows it: COMPLETED, validation_loss<0.2, log~'CUDA out of memory'.
std::string TriggerCell(const wire::WebhookTrigger& t) {
  if (t.trigger_type == "METRIC_THRESHOLD_EXCEEDED") {
    return absl::StrCat(t.condition.value("metricName", "?"),
                        t.condition.value("condition", "ABOVE") == "BELOW" ? "<" : ">",
                        t.condition.value("metricValue", Json()).dump());
  }
  if (t.trigger_type == "TASK_LOG")
    return absl::StrCat("log~'", t.condition.value("regex", ""), "'");
  return t.condition.value("state", t.trigger_type);
}

std::string TriggersCell(const std::vector<wire::WebhookTrigger>& triggers) {
  std::vector<std::string> cells;
  for (const wire::WebhookTrigger& t : triggers) cells.push_back(TriggerCell(t));
  return absl::StrJoin(cells, ",");
}

// The flags' triggers; InvalidArgument naming the flag when they do not go together.
absl::StatusOr<std::vector<wire::WebhookTrigger>> TriggersOf(const CreateArgs& args) {
  std::vector<wire::WebhookTrigger> out;
  for (const std::string& flag : args.triggers) {
    for (absl::string_view state : absl::StrSplit(flag, ',', absl::SkipEmpty())) {
      out.push_back({"EXPERIMENT_STATE_CHANGE", {{"state", absl::AsciiStrToUpper(state)}}});
    }
  }
  if (args.metric.empty() != (!args.above && !args.below)) {
    return absl::InvalidArgumentError(
        "--metric NAME goes with --above X or --below X (a metric threshold trigger)");
  }
  if (args.above && args.below) {
    return absl::InvalidArgumentError("give one of --above and --below (two webhooks for both)");
  }
  if (!args.metric.empty()) {
    out.push_back({"METRIC_THRESHOLD_EXCEEDED",
                   {{"metricName", args.metric},
                    {"metricValue", args.above ? *args.above : *args.below},
                    {"condition", args.above ? "ABOVE" : "BELOW"}}});
  }
  for (const std::string& regex : args.log_regexes) {
    out.push_back({"TASK_LOG", {{"regex", regex}}});
  }
  if (out.empty()) {
    return absl::InvalidArgumentError(
        "give a trigger: --trigger STATES, --metric NAME --above|--below X, or --log-regex RE");
  }
  return out;
}

int Create(const CommandContext& context, const CreateArgs& args) {
  absl::StatusOr<std::vector<wire::WebhookTrigger>> triggers = TriggersOf(args);
  if (!triggers.ok()) {
    std::cerr << "cohort: error: " << triggers.status().message() << "\n";
    return kExitUsage;
  }
  wire::NewWebhook w{args.url, absl::AsciiStrToUpper(args.type), *std::move(triggers),
                     args.message_template, args.allow_local};
  absl::StatusOr<wire::Webhook> created =
      ParseAnswer("POST /api/v1/webhooks", context.Client().Post("/api/v1/webhooks", w.ToJson()),
                  wire::ParseWebhook);
  if (!created.ok()) return Fail(created.status());
  if (context.json()) return PrintJson(created->ToJson());
  std::cout << "webhook " << created->id << " created: " << created->webhook_type << " POSTs to "
            << created->url << " on " << TriggersCell(created->triggers)
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
  PrintTable(std::cout, {"id", "type", "triggers", "url", "created by", "local"}, rows);
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
  CLI::App* sub = group->add_subcommand(
      "create",
      "POST to a URL when experiments change state, a metric crosses a threshold or a "
      "trial logs a pattern");
  sub->add_option("--url", args->url, "http(s) URL to POST to")->required();
  sub->add_option("--type", args->type, "default (the event as JSON) or slack ({\"text\": ...})")
      ->check(CLI::IsMember({"default", "slack", "DEFAULT", "SLACK"}));
  sub->add_option("--trigger", args->triggers,
                  "Experiment states that send, e.g. COMPLETED,ERROR (repeatable)");
  sub->add_option("--metric", args->metric,
                  "A validation metric whose value past --above or --below sends (once per "
                  "trial)");
  sub->add_option("--above", args->above, "--metric's threshold: sends when it is greater");
  sub->add_option("--below", args->below, "--metric's threshold: sends when it is less");
  sub->add_option("--log-regex", args->log_regexes,
                  "A pattern (RE2) whose first match in a trial's output sends (once per trial; "
                  "repeatable)");
  sub->add_option("--template", args->message_template,
                  "The message, with {{experiment.id}}, {{experiment.name}}, "
                  "{{experiment.state}}, {{experiment.owner}}, {{event}}, {{trial.id}}, "
                  "{{metric.name}}, {{metric.value}}, {{metric.condition}}, "
                  "{{metric.threshold}}, {{log.line}}, {{log.regex}}");
  sub->add_flag("--allow-local", args->allow_local,
                "Allow loopback and link-local targets (refused otherwise: server-side request "
                "forgery)");
  context->AddJsonFlag(sub, "Print the webhook (with its secret) as JSON");
  sub->footer(
      "Each POST carries X-Cohort-Delivery (an id to dedupe on: a delivery may arrive twice), "
      "X-Cohort-Event and X-Cohort-Signature: t=UNIX,v1=HEX, HEX being HMAC-SHA-256 of "
      "\"UNIX.BODY\" with the secret printed at creation. Failed POSTs are retried with back-off "
      "for 24 hours.\nExamples:\n  cohort webhook create --url "
      "https://hooks.slack.com/services/T/B/X "
      "--type slack --trigger COMPLETED,ERROR\n"
      "  cohort webhook create --url https://ci.example.com/hook --metric validation_loss "
      "--below 0.2\n"
      "  cohort webhook create --url https://ci.example.com/hook --log-regex 'CUDA out of "
      "memory'");
  context->OnRun(sub, [context, args] { return Create(*context, *args); });
}

}  // namespace

void AddWebhookCommands(CLI::App* root, CommandContext* context) {
  CLI::App* group = root->add_subcommand("webhook",
                                         "Webhooks: POSTs on experiments' state "
                                         "changes, metric thresholds and log patterns (admins)");
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
