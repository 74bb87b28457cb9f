#include "master/webhooks/message.h"

#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "nlohmann/json.hpp"

namespace cohort::master::webhooks {
namespace {

std::string Number(double v) { return nlohmann::json(v).dump(); }

std::vector<std::pair<std::string, std::string>> Fields(const Event& e) {
  const bool metric = !e.metric_name.empty();
  return {{"{{experiment.id}}", std::to_string(e.experiment_id)},
          {"{{experiment.name}}", e.experiment_name},
          {"{{experiment.state}}", e.experiment_state},
          {"{{experiment.owner}}", e.experiment_owner},
          {"{{event}}", e.type},
          {"{{trial.id}}", e.trial_id > 0 ? std::to_string(e.trial_id) : ""},
          {"{{metric.name}}", e.metric_name},
          {"{{metric.value}}", metric ? Number(e.metric_value) : ""},
          {"{{metric.threshold}}", metric ? Number(e.threshold) : ""},
          {"{{metric.condition}}", e.condition},
          {"{{log.line}}", e.log_line},
          {"{{log.regex}}", e.log_regex}};
}

constexpr char kDefaultTemplate[] =
    "Experiment {{experiment.id}} ({{experiment.name}}) is {{experiment.state}}";
constexpr char kMetricTemplate[] =
    "Experiment {{experiment.id}} ({{experiment.name}}), trial {{trial.id}}: {{metric.name}} "
    "{{metric.value}} is {{metric.condition}} {{metric.threshold}}";
constexpr char kLogTemplate[] =
    "Experiment {{experiment.id}} ({{experiment.name}}), trial {{trial.id}} logged a line "
    "matching '{{log.regex}}': {{log.line}}";

const char* DefaultTemplate(const Event& e) {
  if (e.type == "METRIC_THRESHOLD_EXCEEDED") return kMetricTemplate;
  if (e.type == "TASK_LOG") return kLogTemplate;
  return kDefaultTemplate;
}

}  // namespace

std::string Render(const std::string& message_template, const Event& event) {
  // One pass over the template: a value that itself reads "{{...}}" is not substituted again.
  return absl::StrReplaceAll(message_template, Fields(event));
}

std::string Body(const std::string& webhook_type, const std::string& message_template,
                 const Event& event) {
  const std::string text =
      Render(message_template.empty() ? DefaultTemplate(event) : message_template, event);
  // Bytes that are not UTF-8 (a name) go as U+FFFD: a body always serializes.
  constexpr auto kReplace = nlohmann::json::error_handler_t::replace;
  if (webhook_type == "SLACK") return nlohmann::json{{"text", text}}.dump(-1, ' ', false, kReplace);
  nlohmann::json body = {{"event", event.type},
                         {"time_ms", event.time_ms},
                         {"message", text},
                         {"experiment",
                          {{"id", event.experiment_id},
                           {"name", event.experiment_name},
                           {"state", event.experiment_state},
                           {"owner", event.experiment_owner}}}};
  if (event.trial_id > 0) body["trial"] = {{"id", event.trial_id}};
  if (!event.metric_name.empty()) {
    body["metric"] = {{"name", event.metric_name},
                      {"value", event.metric_value},
                      {"condition", event.condition},
                      {"threshold", event.threshold}};
  }
  if (!event.log_regex.empty())
    body["log"] = {{"line", event.log_line}, {"regex", event.log_regex}};
  return body.dump(-1, ' ', false, kReplace);
}

absl::Status CheckTemplate(const std::string& message_template) {
  std::string rest = absl::StrReplaceAll(message_template, Fields(Event{}));
  const size_t open = rest.find("{{");
  if (open == std::string::npos) return absl::OkStatus();
  const size_t close = rest.find("}}", open);
  const std::string name = rest.substr(open, close == std::string::npos ? 32 : close + 2 - open);
  return absl::InvalidArgumentError(absl::StrCat(
      "template: unknown field ", name,
      " (known: {{experiment.id}}, {{experiment.name}}, {{experiment.state}}, "
      "{{experiment.owner}}, {{event}}, {{trial.id}}, {{metric.name}}, {{metric.value}}, "
      "{{metric.condition}}, {{metric.threshold}}, {{log.line}}, {{log.regex}})"));
}

}  // namespace cohort::master::webhooks
