// Fuzz target: every JSON body of the wire protocols (src/wire), as the master reads requests
// and the CLI and agent read the master's answers: text -> ParseJsonBounded -> the body's parser.
//
// Input: one byte choosing the parser, then the JSON text. The byte is read as a letter: 'a' is
// the first parser of Parsers() below (AgentRegistration), 'b' the second, and so on to 'w'
// (ProgressRecord), then 'x' to '~' for the user bodies (MasterInfo to PasswordChange); other
// bytes wrap around, so every byte picks one.
// Invariants: a refusal says what is wrong; an accepted body's ToJson parses again, to a value
// whose ToJson is the same JSON (so what one side writes, the other reads unchanged), and can be
// dumped as text (valid UTF-8).

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "common/json_bounded.h"
#include "fuzz/fuzz_check.h"
#include "wire/agent_protocol.h"
#include "wire/cluster_bodies.h"
#include "wire/experiment_bodies.h"
#include "wire/reports.h"
#include "wire/trial_bodies.h"
#include "wire/user_bodies.h"

namespace cohort::wire {
namespace {

using ParserCheck = std::function<void(const Json&)>;

// Parses `json` with `parse`; when accepted, checks the round trip through ToJson.
template <typename T>
void RoundTrip(const Json& json, const std::function<absl::StatusOr<T>(const Json&)>& parse,
               const std::function<Json(const T&)>& write) {
  absl::StatusOr<T> first = parse(json);
  if (!first.ok()) {
    FUZZ_CHECK_REFUSAL(first.status());
    return;
  }
  const Json written = write(*first);
  const std::string text = written.dump();  // throws on invalid UTF-8
  absl::StatusOr<T> second = parse(written);
  FUZZ_CHECK(second.ok(),
             "ToJson's output is refused: " + second.status().ToString() + "\n" + text);
  FUZZ_CHECK(write(*second).dump() == text,
             "the body changes through ToJson:\n" + text + "\n" + write(*second).dump());
}

// A check for a body type with a ToJson() member and a parser taking the JSON alone.
template <typename T>
ParserCheck Body(absl::StatusOr<T> (*parse)(const Json&)) {
  return [parse](const Json& json) {
    RoundTrip<T>(json, parse, [](const T& value) { return value.ToJson(); });
  };
}

// The same for a parser that also takes the context its errors name.
template <typename T>
ParserCheck Body(absl::StatusOr<T> (*parse)(const Json&, absl::string_view)) {
  return [parse](const Json& json) {
    RoundTrip<T>(
        json, [parse](const Json& j) { return parse(j, "body"); },
        [](const T& value) { return value.ToJson(); });
  };
}

// An action batch: each action is parsed on its own; the accepted ones make a batch again.
void CheckActionBatch(const Json& json) {
  auto parse = [](const Json& j) -> absl::StatusOr<ActionBatch> {
    absl::StatusOr<std::vector<absl::StatusOr<Action>>> parsed = ParseActionBatch(j);
    if (!parsed.ok()) return parsed.status();
    ActionBatch batch;
    for (absl::StatusOr<Action>& action : *parsed) {
      if (action.ok()) {
        batch.actions.push_back(*std::move(action));
      } else {
        FUZZ_CHECK_REFUSAL(action.status());
      }
    }
    return batch;
  };
  RoundTrip<ActionBatch>(json, parse, [](const ActionBatch& b) { return b.ToJson(); });
}

const std::vector<ParserCheck>& Parsers() {
  static const auto* parsers = new std::vector<ParserCheck>{
      Body<AgentRegistration>(ParseAgentRegistration),
      [](const Json& json) {
        RoundTrip<Action>(
            json, [](const Json& j) { return ParseAction(j); },
            [](const Action& a) { return ToJson(a); });
      },
      Body<StartAction>(ParseStartAction),
      Body<StopAction>(ParseStopAction),
      CheckActionBatch,
      Body<LogBatch>(ParseLogBatch),
      Body<ReportBatch>(ParseReportBatch),
      Body<ExitReport>(ParseExitReport),
      Body<AgentList>(ParseAgentList),
      Body<SlotList>(ParseSlotList),
      Body<TaskList>(ParseTaskList),
      Body<ErrorBody>(ParseErrorBody),
      Body<CreatedExperiment>(ParseCreatedExperiment),
      Body<ExperimentList>(ParseExperimentList),
      Body<ExperimentDescription>(ParseExperimentDescription),
      Body<Template>(ParseTemplate),
      Body<TemplateList>(ParseTemplateList),
      Body<TrialDescription>(ParseTrialDescription),
      Body<MetricList>(ParseMetricList),
      Body<CheckpointList>(ParseCheckpointList),
      Body<LogsPage>(ParseLogsPage),
      Body<ReportRecord>(ParseReportRecord),
      Body<ProgressRecord>(ParseProgressRecord),
      Body<MasterInfo>(ParseMasterInfo),
      Body<LoginRequest>(ParseLoginRequest),
      Body<LoginResponse>(ParseLoginResponse),
      Body<UserSummary>(ParseUserSummary),
      Body<UserList>(ParseUserList),
      Body<NewUser>(ParseNewUser),
      Body<PasswordChange>(ParsePasswordChange),
  };
  return *parsers;
}

}  // namespace
}  // namespace cohort::wire

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const auto& parsers = cohort::wire::Parsers();
  const absl::string_view text(reinterpret_cast<const char*>(data) + 1, size - 1);
  absl::StatusOr<nlohmann::json> json = cohort::ParseJsonBounded(text);
  if (!json.ok()) {
    FUZZ_CHECK_REFUSAL(json.status());
    return 0;
  }
  parsers[static_cast<uint8_t>(data[0] - 'a') % parsers.size()](*json);
  return 0;
}
