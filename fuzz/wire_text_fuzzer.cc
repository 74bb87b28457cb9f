// Fuzz target: the wire's text parsers (src/wire): state and kind names, COHORT_SEARCHER_OPS,
// safe names, and the worker and launch environments (WorkerEnv, LaunchEnv, ReadRanks), which a
// trial's processes read from variables their starter wrote.
//
// Input: one byte choosing the parser ('a' to 'f' as in kChecks below; other bytes wrap
// around), then its text. The environments' text is NAME=VALUE lines (a line without '=' is
// ignored; a later line replaces an earlier one).
// Invariants: a refusal says what is wrong; an accepted value written back (Name, Format,
// ToEnv) parses again to the same value.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "fuzz/fuzz_check.h"
#include "wire/agent_protocol.h"
#include "wire/launch_env.h"
#include "wire/limits.h"
#include "wire/reports.h"
#include "wire/states.h"
#include "wire/trial_bodies.h"
#include "wire/worker_env.h"

namespace cohort::wire {
namespace {

using Env = std::map<std::string, std::optional<std::string>>;

// A name parser and Name(): an accepted text is the name of what it parsed.
template <typename T>
void CheckName(absl::string_view text, absl::StatusOr<T> (*parse)(absl::string_view)) {
  absl::StatusOr<T> value = parse(text);
  if (!value.ok()) {
    FUZZ_CHECK_REFUSAL(value.status());
    return;
  }
  FUZZ_CHECK(Name(*value) == text, std::string(text));
}

void CheckNames(absl::string_view text) {
  CheckName<TrialState>(text, ParseTrialState);
  CheckName<ExperimentState>(text, ParseExperimentState);
  CheckName<StopMode>(text, ParseStopMode);
  CheckName<ReportKind>(text, ParseReportKind);
  CheckName<MetricKind>(text, ParseMetricKind);
}

void CheckSearcherOps(absl::string_view text) {
  absl::StatusOr<std::vector<int64_t>> ops = ParseSearcherOps(std::string(text));
  if (!ops.ok()) {
    FUZZ_CHECK_REFUSAL(ops.status());
    return;
  }
  const std::string formatted = FormatSearcherOps(*ops);
  absl::StatusOr<std::vector<int64_t>> again = ParseSearcherOps(formatted);
  FUZZ_CHECK(again.ok() && *again == *ops, formatted);
}

void CheckSafeNames(absl::string_view text) {
  const absl::Status status = CheckSafeName("name", text);
  FUZZ_CHECK(status.ok() == IsSafeName(text), std::string(text));
  if (!status.ok()) FUZZ_CHECK_REFUSAL(status);
}

// NAME=VALUE lines as a lookup's variables.
Env ParseLines(absl::string_view text) {
  Env env;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    const size_t eq = line.find('=');
    if (eq == absl::string_view::npos) continue;
    env[std::string(line.substr(0, eq))] = std::string(line.substr(eq + 1));
  }
  return env;
}

EnvLookup Lookup(const Env& env) {
  return [&env](const char* name) -> std::optional<std::string> {
    auto it = env.find(name);
    return it == env.end() ? std::nullopt : it->second;
  };
}

std::string Describe(const Env& env) {
  return absl::StrJoin(env, "\n", [](std::string* out, const auto& kv) {
    absl::StrAppend(out, kv.first, "=", kv.second.value_or("(unset)"));
  });
}

// An environment type T (FromEnv, ToEnv): what it writes reads back as the same.
template <typename T>
void CheckEnv(absl::string_view text) {
  const Env input = ParseLines(text);
  absl::StatusOr<T> first = T::FromEnv(Lookup(input));
  if (!first.ok()) {
    FUZZ_CHECK_REFUSAL(first.status());
    return;
  }
  const Env written = first->ToEnv();
  absl::StatusOr<T> second = T::FromEnv(Lookup(written));
  FUZZ_CHECK(second.ok(), "ToEnv's variables are refused: " + second.status().ToString() + "\n" +
                              Describe(written));
  FUZZ_CHECK(second->ToEnv() == written,
             "the variables change:\n" + Describe(written) + "\n--\n" + Describe(second->ToEnv()));
}

// Slurm's variables, whose SLURM_NTASKS_PER_NODE looks like "4(x2)".
void CheckSlurmRanks(absl::string_view text) {
  const Env input = ParseLines(text);
  absl::StatusOr<std::optional<WorkerRanks>> ranks = ReadRanks(kSlurmRankVariables, Lookup(input));
  if (!ranks.ok()) {
    FUZZ_CHECK_REFUSAL(ranks.status());
    return;
  }
  if (!ranks->has_value()) return;
  const WorkerRanks& r = **ranks;
  FUZZ_CHECK(r.size >= 1 && r.rank >= 0 && r.rank < r.size && r.local_size >= 1 &&
                 r.local_size <= r.size && r.local_rank >= 0 && r.local_rank < r.local_size &&
                 r.cross_rank >= 0 && r.cross_rank < r.cross_size,
             "ranks that break WorkerRanks' invariants:\n" + Describe(input));
}

using Check = void (*)(absl::string_view);
constexpr Check kChecks[] = {
    CheckNames,          CheckSearcherOps,    CheckSafeNames,
    CheckEnv<WorkerEnv>, CheckEnv<LaunchEnv>, CheckSlurmRanks,
};

}  // namespace
}  // namespace cohort::wire

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  constexpr size_t kCount = sizeof(cohort::wire::kChecks) / sizeof(cohort::wire::kChecks[0]);
  const absl::string_view text(reinterpret_cast<const char*>(data) + 1, size - 1);
  cohort::wire::kChecks[static_cast<uint8_t>(data[0] - 'a') % kCount](text);
  return 0;
}
