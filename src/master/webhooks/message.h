#pragma once
// What a webhook POSTs (docs/design/0023): the event as JSON for a DEFAULT webhook, Slack's
// {"text": ...} for a SLACK one, the text from the webhook's template when it has one (else
// Determined's default wording). Pure: no I/O, no clock; thread-safe.
//
// A template names an event's fields as {{experiment.id}}, {{experiment.name}},
// {{experiment.state}}, {{experiment.owner}}, {{event}}, and for a trial's events {{trial.id}},
// {{metric.name}}, {{metric.value}}, {{metric.threshold}} (METRIC_THRESHOLD_EXCEEDED) and
// {{log.line}}, {{log.regex}} (TASK_LOG); each is replaced by its value (inside a JSON string,
// so it is escaped where the body is built; empty where the event has none). An unknown name is
// left as it is.

#include <cstdint>
#include <string>

#include "absl/status/status.h"

namespace cohort::master::webhooks {

// An experiment's event, as a message shows it.
struct Event {
  std::string type;  // EXPERIMENT_STATE_CHANGE, METRIC_THRESHOLD_EXCEEDED, TASK_LOG, TEST
  int64_t experiment_id = 0;
  std::string experiment_name;
  std::string experiment_state;
  std::string experiment_owner;
  int64_t time_ms = 0;
  // A trial's events (METRIC_THRESHOLD_EXCEEDED, TASK_LOG); 0 and empty otherwise.
  int64_t trial_id = 0;
  std::string metric_name;
  double metric_value = 0;
  std::string condition;  // ABOVE or BELOW
  double threshold = 0;
  std::string log_line;  // at most kMaxLogLineBytes of the matching line
  std::string log_regex;
};

inline constexpr size_t kMaxLogLineBytes = 1024;

// `message_template` with the event's fields substituted.
std::string Render(const std::string& message_template, const Event& event);

// The body of a delivery: `webhook_type` DEFAULT or SLACK (as stored); an empty template gives
// the default wording of the event's type ("Experiment 7 (mnist) is COMPLETED"; "Experiment 7
// (mnist), trial 12: validation_accuracy 0.951 is ABOVE 0.95"; "Experiment 7 (mnist), trial 12
// logged a line matching 'CUDA out of memory': ..."). A DEFAULT body carries the trial's
// fields under "trial", "metric" and "log" when the event has them.
std::string Body(const std::string& webhook_type, const std::string& message_template,
                 const Event& event);

// OK, or InvalidArgument naming an unknown {{field}} (so that a typo is refused at creation).
absl::Status CheckTemplate(const std::string& message_template);

}  // namespace cohort::master::webhooks
