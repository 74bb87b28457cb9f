#include "master/webhooks/message.h"

#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "nlohmann/json.hpp"

namespace cohort::master::webhooks {
namespace {

std::vector<std::pair<std::string, std::string>> Fields(const Event& e) {
  return {{"{{experiment.id}}", std::to_string(e.experiment_id)},
          {"{{experiment.name}}", e.experiment_name},
          {"{{experiment.state}}", e.experiment_state},
          {"{{experiment.owner}}", e.experiment_owner},
          {"{{event}}", e.type}};
}

constexpr char kDefaultTemplate[] =
    "Experiment {{experiment.id}} ({{experiment.name}}) is {{experiment.state}}";

}  // namespace

std::string Render(const std::string& message_template, const Event& event) {
  // One pass over the template: a value that itself reads "{{...}}" is not substituted again.
  return absl::StrReplaceAll(message_template, Fields(event));
}

std::string Body(const std::string& webhook_type, const std::string& message_template,
                 const Event& event) {
  const std::string text =
      Render(message_template.empty() ? kDefaultTemplate : message_template, event);
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
  return body.dump(-1, ' ', false, kReplace);
}

absl::Status CheckTemplate(const std::string& message_template) {
  std::string rest = absl::StrReplaceAll(message_template, Fields(Event{}));
  const size_t open = rest.find("{{");
  if (open == std::string::npos) return absl::OkStatus();
  const size_t close = rest.find("}}", open);
  const std::string name = rest.substr(open, close == std::string::npos ? 32 : close + 2 - open);
  return absl::InvalidArgumentError(absl::StrCat(
      "template: unknown field ", name, " (known: {{experiment.id}}, {{experiment.name}}, ",
      "{{experiment.state}}, {{experiment.owner}}, {{event}})"));
}

}  // namespace cohort::master::webhooks
