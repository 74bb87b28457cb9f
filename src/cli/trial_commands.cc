#include "cli/trial_commands.h"

#include <unistd.h>

#include <algorithm>
#include <iostream>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "cli/exit_codes.h"
#include "cli/profile_command.h"
#include "cli/search_commands.h"
#include "cli/table.h"
#include "cohort/status.h"
#include "common/command_line.h"
#include "common/terminal_text.h"
#include "wire/series_bodies.h"
#include "wire/states.h"
#include "wire/trial_bodies.h"

namespace cohort::cli {
namespace {

struct LogsArgs {
  int64_t trial_id = 0;
  int rank = -1;  // -1: every rank
  bool follow = false;
  int tail = 0;       // > 0: start with the last `tail` lines
  std::string level;  // warning, error
  std::string grep;
  std::string since;  // RFC 3339, or a duration ago ("15m")
  std::string until;
};

// --since/--until: an RFC 3339 time ("2026-11-30T07:00:00Z") or a duration before now ("90s",
// "15m", "2h") as unix milliseconds; InvalidArgument naming the flag.
absl::StatusOr<int64_t> TimeFlag(const char* flag, const std::string& text) {
  absl::Time t;
  std::string err;
  if (absl::ParseTime(absl::RFC3339_full, text, &t, &err)) return absl::ToUnixMillis(t);
  absl::Duration ago;
  if (absl::ParseDuration(text, &ago) && ago >= absl::ZeroDuration()) {
    return absl::ToUnixMillis(absl::Now() - ago);
  }
  return absl::InvalidArgumentError(
      absl::StrCat(flag, ": '", text,
                   "' is neither an RFC 3339 time (2026-11-30T07:00:00Z) nor a duration "
                   "before now (15m, 2h)"));
}

// The query of a logs request: rank and the filters, each "name=value&".
absl::StatusOr<std::string> LogsQuery(const LogsArgs& args) {
  std::string q = args.rank >= 0 ? absl::StrCat("rank=", args.rank, "&") : "";
  if (!args.level.empty()) absl::StrAppend(&q, "level=", args.level, "&");
  if (!args.grep.empty()) absl::StrAppend(&q, "grep=", UrlQueryValue(args.grep), "&");
  if (!args.since.empty()) {
    COHORT_ASSIGN_OR_RETURN(int64_t ms, TimeFlag("--since", args.since));
    absl::StrAppend(&q, "since_ms=", ms, "&");
  }
  if (!args.until.empty()) {
    COHORT_ASSIGN_OR_RETURN(int64_t ms, TimeFlag("--until", args.until));
    absl::StrAppend(&q, "until_ms=", ms, "&");
  }
  return q;
}

// A log line as `trial logs --json` prints it: {"line", "rank", "seq", "time"}, as in a LogsPage.
Json LogEntryJson(const wire::LogEntry& entry) {
  wire::LogsPage page;
  page.logs.push_back(entry);
  return page.ToJson()["logs"][0];
}

// Prints a page's lines: JSON lines with --json, else each rank's prefixed "[rank=R] ".
void PrintLogPage(const CommandContext& context, const wire::LogsPage& page) {
  for (const wire::LogEntry& l : page.logs) {
    if (context.json()) {
      std::cout << LogEntryJson(l).dump() << "\n";
    } else if (l.rank >= 0) {
      std::cout << "[rank=" << l.rank << "] " << EscapeControl(l.line) << "\n";
    } else {
      std::cout << EscapeControl(l.line) << "\n";
    }
  }
  std::cout.flush();
}

// Pages through the trial's logs (a long poll with --follow) until there is nothing more to
// print, or with --follow until the trial ends; with --tail, from its last lines.
int PrintLogs(const CommandContext& context, const LogsArgs& args) {
  client::MasterClient client = context.Client(absl::Seconds(90));
  absl::StatusOr<std::string> query = LogsQuery(args);
  if (!query.ok()) return Fail(query.status());
  const std::string base = absl::StrCat("/api/v1/trials/", args.trial_id, "/logs?", *query);
  int64_t after = 0;
  if (args.tail > 0) {
    absl::StatusOr<wire::LogsPage> last =
        GetAs(client, absl::StrCat(base, "tail=", args.tail), wire::ParseLogsPage);
    if (!last.ok()) return Fail(last.status());
    PrintLogPage(context, *last);
    if (!args.follow) return kExitOk;
    after = last->next;
  }
  while (true) {
    std::string path = absl::StrCat(base, "after=", after);
    if (args.follow) absl::StrAppend(&path, "&follow=1&timeout=30");
    absl::StatusOr<wire::LogsPage> page = GetAs(client, path, wire::ParseLogsPage);
    if (!page.ok()) return Fail(page.status());
    PrintLogPage(context, *page);
    // A filtered page may hold no line yet have scanned some (its next moved on): go on.
    const bool moved = page->next != after;
    after = page->next;
    if (page->logs.empty() && !moved && (!args.follow || page->done)) return kExitOk;
    if (page->logs.empty() && moved) continue;
    // An empty page while following: the long poll timed out, or the master had too many
    // followers to wait for this one; ask again after a pause rather than at once.
    if (page->logs.empty()) absl::SleepFor(absl::Seconds(1));
  }
}

void PrintValidations(const wire::MetricList& validations) {
  std::vector<std::vector<std::string>> rows;
  for (const wire::MetricEntry& v : validations.metrics) {
    std::vector<std::string> parts;
    for (const auto& [k, x] : v.metrics.items()) parts.push_back(absl::StrCat(k, "=", Str(x)));
    rows.push_back({absl::StrCat(v.steps_completed), absl::StrJoin(parts, " ")});
  }
  PrintTable(std::cout, {"batches", "metrics"}, rows);
}

void PrintCheckpoints(const wire::CheckpointList& checkpoints) {
  std::vector<std::vector<std::string>> rows;
  for (const wire::CheckpointEntry& c : checkpoints.checkpoints) {
    rows.push_back({c.storage_id, absl::StrCat(c.steps_completed), wire::Name(c.state), c.path});
  }
  PrintTable(std::cout, {"storage id", "batches", "state", "path"}, rows);
}

// Every metric row of `path` (".../metrics?kind=K"), page after page.
absl::StatusOr<wire::MetricList> AllMetrics(client::MasterClient& client, const std::string& path) {
  wire::MetricList all;
  int64_t after = 0;
  for (;;) {
    absl::StatusOr<wire::MetricList> page =
        GetAs(client, absl::StrCat(path, "&after=", after), wire::ParseMetricList);
    if (!page.ok()) return page.status();
    all.metrics.insert(all.metrics.end(), page->metrics.begin(), page->metrics.end());
    if (!page->next_after || *page->next_after <= after) return all;
    after = *page->next_after;
  }
}

}  // namespace

namespace {

// At most `max` bytes of `line` (cut at a UTF-8 character boundary, marked "...").
std::string Shortened(const std::string& line, size_t max) {
  if (line.size() <= max) return line;
  size_t end = max;
  while (end > 0 && (static_cast<unsigned char>(line[end]) & 0xC0) == 0x80) --end;
  return line.substr(0, end) + "...";
}

}  // namespace

void PrintLogPolicyMatches(std::ostream& out, const wire::TrialDescription& trial) {
  if (trial.log_policy_matches.empty()) return;
  std::vector<std::vector<std::string>> rows;
  for (const wire::LogPolicyMatch& m : trial.log_policy_matches) {
    const char* action = wire::Name(m.action);
    rows.push_back({m.policy, *action ? action : "-", m.agent,
                    m.rank < 0 ? "-" : absl::StrCat(m.rank), FormatTime(m.time_ms), m.allocation,
                    Shortened(m.line, 100)});
  }
  out << "\ntrial " << trial.id << ": log policies matched:\n";
  PrintTable(out, {"policy", "action", "agent", "rank", "time", "run", "line"}, rows);
}

namespace {

int DescribeTrial(const CommandContext& context, int64_t trial_id) {
  client::MasterClient client = context.Client();
  const std::string path = absl::StrCat("/api/v1/trials/", trial_id);
  absl::StatusOr<wire::TrialDescription> t =
      GetAs(client, path, [](const Json& j) { return wire::ParseTrialDescription(j); });
  if (!t.ok()) return Fail(t.status());
  absl::StatusOr<wire::MetricList> m = AllMetrics(client, path + "/metrics?kind=validation");
  absl::StatusOr<wire::CheckpointList> c =
      GetAs(client, path + "/checkpoints", wire::ParseCheckpointList);
  if (!m.ok()) return Fail(m.status());
  if (!c.ok()) return Fail(c.status());
  if (context.json()) {
    return PrintJson(Json{{"trial", t->ToJson()},
                          {"validation", m->ToJson()["metrics"]},
                          {"checkpoints", c->ToJson()["checkpoints"]}});
  }
  std::cout << "trial " << trial_id << " (experiment " << t->experiment_id
            << "): " << wire::Name(t->state) << ", " << t->batches << "/" << t->total_batches
            << " batches, " << t->restarts << " restart(s), hyperparameters " << Str(t->hparams)
            << "\n";
  if (t->waiting_reason) std::cout << "waiting: " << *t->waiting_reason << "\n";
  std::cout << "\nvalidation:\n";
  PrintValidations(*m);
  std::cout << "\ncheckpoints:\n";
  PrintCheckpoints(*c);
  PrintLogPolicyMatches(std::cout, *t);
  return kExitOk;
}

// `trial metrics`: the trial's series (training, validation; the profiler's), a row each; with
// --json the series' points too (at most 1000 per series, downsampled).
int PrintSeries(const CommandContext& context, int64_t trial_id) {
  client::MasterClient client = context.Client();
  const std::string path = absl::StrCat("/api/v1/trials/", trial_id, "/series");
  absl::StatusOr<wire::SeriesList> list = GetAs(client, path, wire::ParseSeriesList);
  if (!list.ok()) return Fail(list.status());
  if (context.json()) {
    Json out = Json::array();
    for (const wire::SeriesSummary& s : list->series) {
      absl::StatusOr<wire::SeriesData> data =
          GetAs(client,
                absl::StrCat(path, "/data?name=", client::QueryEscape(s.name),
                             "&label=", client::QueryEscape(s.label)),
                wire::ParseSeriesData);
      if (!data.ok()) return Fail(data.status());
      out.push_back(data->ToJson()["series"][0]);
    }
    return PrintJson(Json{{"trial_id", trial_id}, {"series", out}});
  }
  std::vector<std::vector<std::string>> rows;
  for (const wire::SeriesSummary& s : list->series) {
    const wire::SeriesUnit unit = wire::SystemSeriesUnit(s.name);
    rows.push_back({s.name, EmptyAsDash(s.label), absl::StrCat(s.points),
                    absl::StrCat(s.last_batch), FormatQuantity(s.last_value, unit),
                    FormatQuantity(s.min_value, unit), FormatQuantity(s.max_value, unit)});
  }
  if (rows.empty()) {
    std::cout << "trial " << trial_id << " has reported no metrics yet\n";
    return kExitOk;
  }
  PrintTable(std::cout, {"series", "label", "points", "last batch", "last", "min", "max"}, rows);
  return kExitOk;
}

int KillTrial(const CommandContext& context, int64_t trial_id) {
  absl::StatusOr<Json> r =
      context.Client().Post(absl::StrCat("/api/v1/trials/", trial_id, "/kill"));
  if (!r.ok()) return Fail(r.status());
  std::cout << "trial " << trial_id << ": kill requested\n";
  return kExitOk;
}

}  // namespace

void AddTrialCommands(CLI::App* root, CommandContext* context) {
  CLI::App* trial = root->add_subcommand("trial", "Trials: logs, details, metrics, profile, kill");
  trial->alias("t");
  trial->require_subcommand(1);
  AddTrialCompare(trial, context);

  auto logs_args = std::make_shared<LogsArgs>();
  CLI::App* logs = trial->add_subcommand("logs", "Print a trial's log lines (every rank, or one)");
  logs->add_option("id", logs_args->trial_id, "Trial id")->required();
  logs->add_option("--rank", logs_args->rank, "Only this rank's lines")->check(NonNegativeNumber());
  logs->add_flag("-f,--follow", logs_args->follow, "Keep printing new lines until the trial ends");
  logs->add_option("--tail", logs_args->tail, "Only the last N lines (then new ones with --follow)")
      ->check(CLI::Range(1, 10000));
  logs->add_option("--level", logs_args->level, "Only warnings and errors, or only errors")
      ->check(CLI::IsMember({"warning", "error"}));
  logs->add_option("--grep", logs_args->grep, "Only lines containing this text (any case)");
  logs->add_option("--since", logs_args->since,
                   "Only lines stored since: RFC 3339 (2026-11-30T07:00:00Z) or ago (15m, 2h)");
  logs->add_option("--until", logs_args->until, "Only lines stored before (as --since)");
  context->AddJsonFlag(logs, "One JSON object per line: {seq, rank, line}");
  logs->footer(
      "The master filters (--level, --grep, --since, --until, --rank) and sends only the lines "
      "kept.\nExamples:\n  cohort trial logs 3\n  cohort trial logs 3 --rank 1 --follow\n"
      "  cohort trial logs 3 --tail 20 -f\n  cohort trial logs 3 --level error --since 1h\n"
      "  cohort trial logs 3 --grep 'out of memory'");
  context->OnRun(logs, [context, logs_args] { return PrintLogs(*context, *logs_args); });

  auto trial_id = std::make_shared<int64_t>(0);
  CLI::App* describe =
      trial->add_subcommand("describe", "Show a trial with its metrics and checkpoints");
  describe->add_option("id", *trial_id, "Trial id")->required();
  context->AddJsonFlag(describe);
  context->OnRun(describe, [context, trial_id] { return DescribeTrial(*context, *trial_id); });

  auto metrics_id = std::make_shared<int64_t>(0);
  CLI::App* metrics = trial->add_subcommand(
      "metrics", "A trial's metric series (training, validation) with their latest values");
  metrics->add_option("id", *metrics_id, "Trial id")->required();
  context->AddJsonFlag(metrics, "Print every series with its points ([batch, time, value])");
  metrics->footer("Example:\n  cohort trial metrics 3\n  cohort trial metrics 3 --json");
  context->OnRun(metrics, [context, metrics_id] { return PrintSeries(*context, *metrics_id); });

  auto kill_id = std::make_shared<int64_t>(0);
  CLI::App* kill = trial->add_subcommand(
      "kill", "End a trial for good (CANCELED); its experiment goes on with the others");
  kill->add_option("id", *kill_id, "Trial id")->required();
  kill->footer(
      "A running trial gets SIGTERM, then SIGKILL after the agent's grace; a waiting, paused or "
      "stopped one ends at once. The experiment ends when its last trial does.\n"
      "Example:\n  cohort trial kill 3");
  context->OnRun(kill, [context, kill_id] { return KillTrial(*context, *kill_id); });

  AddProfileCommand(trial, context);
}

}  // namespace cohort::cli
