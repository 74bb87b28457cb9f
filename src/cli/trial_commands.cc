#include "cli/trial_commands.h"

#include <unistd.h>

#include <algorithm>
#include <iostream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "cli/exit_codes.h"
#include "cli/table.h"
#include "wire/series_bodies.h"
#include "wire/states.h"
#include "wire/trial_bodies.h"

namespace cohort::cli {
namespace {

struct LogsArgs {
  int64_t trial_id = 0;
  int rank = -1;  // -1: every rank
  bool follow = false;
};

// A log line as `trial logs --json` prints it: {"line", "rank", "seq"}, as in a LogsPage.
Json LogEntryJson(const wire::LogEntry& entry) {
  wire::LogsPage page;
  page.logs.push_back(entry);
  return page.ToJson()["logs"][0];
}

// Pages through the trial's logs (a long poll with --follow) until there is nothing more to
// print, or with --follow until the trial ends.
int PrintLogs(const CommandContext& context, const LogsArgs& args) {
  client::MasterClient client = context.Client(absl::Seconds(90));
  int64_t after = 0;
  while (true) {
    std::string path = absl::StrCat("/api/v1/trials/", args.trial_id, "/logs?after=", after);
    if (args.rank >= 0) absl::StrAppend(&path, "&rank=", args.rank);
    if (args.follow) absl::StrAppend(&path, "&follow=1&timeout=30");
    absl::StatusOr<wire::LogsPage> page = GetAs(client, path, wire::ParseLogsPage);
    if (!page.ok()) return Fail(page.status());
    for (const wire::LogEntry& l : page->logs) {
      if (context.json()) {
        std::cout << LogEntryJson(l).dump() << "\n";
      } else if (l.rank >= 0) {
        std::cout << "[rank=" << l.rank << "] " << l.line << "\n";
      } else {
        std::cout << l.line << "\n";
      }
    }
    std::cout.flush();
    after = page->next;
    if (page->logs.empty() && (!args.follow || page->done)) return kExitOk;
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
    rows.push_back({c.storage_id, absl::StrCat(c.steps_completed), c.path});
  }
  PrintTable(std::cout, {"storage id", "batches", "path"}, rows);
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
            << " batches, hyperparameters " << Str(t->hparams) << "\n\nvalidation:\n";
  PrintValidations(*m);
  std::cout << "\ncheckpoints:\n";
  PrintCheckpoints(*c);
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
    rows.push_back({s.name, EmptyAsDash(s.label), absl::StrCat(s.points),
                    absl::StrCat(s.last_batch), Cell(std::optional<double>(s.last_value)),
                    Cell(std::optional<double>(s.min_value)),
                    Cell(std::optional<double>(s.max_value))});
  }
  if (rows.empty()) {
    std::cout << "trial " << trial_id << " has reported no metrics yet\n";
    return kExitOk;
  }
  PrintTable(std::cout, {"series", "label", "points", "last batch", "last", "min", "max"}, rows);
  return kExitOk;
}

// The unit of a profiler series (Determined's names), for the profile table.
std::string UnitOf(const std::string& name) {
  if (name == "cpu_util_simple" || name == "gpu_util") return "%";
  if (name == "memory_free" || name == "gpu_free_memory") return "bytes";
  if (name == "disk_iops") return "1/s";
  if (absl::StartsWith(name, "net_throughput") || absl::StartsWith(name, "disk_throughput")) {
    return "bytes/s";
  }
  return "";
}

// The profiler's series of `list` (everything but the training and validation metrics).
wire::SeriesList ProfileSeries(const wire::SeriesList& list) {
  wire::SeriesList profile;
  for (const wire::SeriesSummary& s : list.series) {
    if (!absl::StartsWith(s.name, "training/") && !absl::StartsWith(s.name, "validation/")) {
      profile.series.push_back(s);
    }
  }
  return profile;
}

void PrintProfileTable(const wire::SeriesList& profile) {
  std::vector<std::vector<std::string>> rows;
  for (const wire::SeriesSummary& s : profile.series) {
    rows.push_back(
        {s.name, s.label, EmptyAsDash(UnitOf(s.name)), absl::StrCat(s.points),
         absl::StrCat(s.first_batch, "-", s.last_batch), Cell(std::optional<double>(s.min_value)),
         Cell(std::optional<double>(s.mean_value)), Cell(std::optional<double>(s.max_value))});
  }
  PrintTable(std::cout, {"series", "machine", "unit", "samples", "batches", "min", "mean", "max"},
             rows);
}

// The chief's per-batch timings (the series training/timings/<phase>): mean milliseconds and
// share of a step, the gradient wait called out. Nothing when the trial reported none.
void PrintTimings(const wire::SeriesList& list) {
  constexpr absl::string_view kPrefix = "training/timings/";
  std::map<std::string, double> mean_ms;
  for (const wire::SeriesSummary& s : list.series) {
    if (absl::StartsWith(s.name, kPrefix)) mean_ms[s.name.substr(kPrefix.size())] = s.mean_value;
  }
  double step = 0;  // a batch's phases, in order; train_batch holds forward .. optimizer_step
  for (const char* phase :
       {"dataloader_next", "to_device", "train_batch", "step_lr_schedulers", "from_device"}) {
    step += mean_ms.count(phase) ? mean_ms[phase] : 0;
  }
  if (mean_ms.empty() || step <= 0) return;
  // The phases in the order a batch runs them (train_batch's parts indented), then any other.
  std::vector<std::string> order = {
      "dataloader_next", "to_device",      "train_batch",        "forward",     "backward",
      "gradient_wait",   "optimizer_step", "step_lr_schedulers", "from_device", "reduce_metrics"};
  for (const auto& [phase, ms] : mean_ms) {
    if (std::find(order.begin(), order.end(), phase) == order.end()) order.push_back(phase);
  }
  std::vector<std::vector<std::string>> rows;
  for (const std::string& phase : order) {
    if (!mean_ms.count(phase)) continue;
    const double ms = mean_ms[phase];
    const bool part = phase == "forward" || phase == "backward" || phase == "gradient_wait" ||
                      phase == "optimizer_step";
    rows.push_back({part ? "  " + phase : phase, absl::StrFormat("%.3f", ms),
                    phase == "reduce_metrics" ? "-" : absl::StrFormat("%.1f%%", 100 * ms / step)});
  }
  std::cout << "\nstep timings (the chief's, ms per batch; a step is "
            << absl::StrFormat("%.2f", step) << " ms):\n";
  PrintTable(std::cout, {"phase", "mean ms", "share"}, rows);
  if (mean_ms.count("gradient_wait")) {
    std::cout << "gradient wait: "
              << absl::StrFormat("%.1f%%", 100 * mean_ms["gradient_wait"] / step)
              << " of a step waits for the gradient exchange (the rest of it overlaps backward)\n";
  }
}

// `trial profile`: the profiler's series of the trial, min / mean / max over the profiling
// window, per machine and GPU; with `follow`, again every 2 s until the trial ends.
int PrintProfile(const CommandContext& context, int64_t trial_id, bool follow) {
  client::MasterClient client = context.Client();
  const std::string path = absl::StrCat("/api/v1/trials/", trial_id);
  const bool tty = ::isatty(STDOUT_FILENO) == 1;
  for (bool first = true;; first = false) {
    absl::StatusOr<wire::TrialDescription> trial =
        GetAs(client, path, [](const Json& j) { return wire::ParseTrialDescription(j); });
    if (!trial.ok()) return Fail(trial.status());
    absl::StatusOr<wire::SeriesList> list = GetAs(client, path + "/series", wire::ParseSeriesList);
    if (!list.ok()) return Fail(list.status());
    const wire::SeriesList profile = ProfileSeries(*list);
    const bool ended = wire::IsTerminal(trial->state);
    if (context.json()) {
      if (!follow || ended) return PrintJson(profile.ToJson());
    } else {
      if (follow && tty && !first) std::cout << "\x1b[H\x1b[2J";  // redraw in place
      if (follow) {
        std::cout << "trial " << trial_id << ": " << wire::Name(trial->state) << ", batch "
                  << trial->batches << "/" << trial->total_batches << "\n";
      }
      if (profile.series.empty()) {
        std::cout << "trial " << trial_id
                  << " has no system metrics yet: is profiling enabled in its config (profiling: "
                     "{enabled: true}), and its window reached?\n";
      } else {
        PrintProfileTable(profile);
      }
      PrintTimings(*list);
      if (!follow || ended) return kExitOk;
    }
    std::cout << std::flush;
    absl::SleepFor(absl::Seconds(2));
  }
}

}  // namespace

void AddTrialCommands(CLI::App* root, CommandContext* context) {
  CLI::App* trial = root->add_subcommand("trial", "Trials: logs, details, metrics, profile");
  trial->alias("t");
  trial->require_subcommand(1);

  auto logs_args = std::make_shared<LogsArgs>();
  CLI::App* logs = trial->add_subcommand("logs", "Print a trial's log lines (every rank, or one)");
  logs->add_option("id", logs_args->trial_id, "Trial id")->required();
  logs->add_option("--rank", logs_args->rank, "Only this rank's lines")
      ->check(CLI::NonNegativeNumber);
  logs->add_flag("-f,--follow", logs_args->follow, "Keep printing new lines until the trial ends");
  context->AddJsonFlag(logs, "One JSON object per line: {seq, rank, line}");
  logs->footer("Examples:\n  cohort trial logs 3\n  cohort trial logs 3 --rank 1 --follow");
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

  auto profile_id = std::make_shared<int64_t>(0);
  auto profile_follow = std::make_shared<bool>(false);
  CLI::App* profile = trial->add_subcommand(
      "profile", "The profiler's system metrics of a trial: min, mean and max per machine");
  profile->add_option("id", *profile_id, "Trial id")->required();
  profile->add_flag("-f,--follow", *profile_follow,
                    "Print it again every 2 seconds until the trial ends");
  context->AddJsonFlag(profile);
  profile->footer(
      "Profile a trial with `profiling: {enabled: true, begin_on_batch: 0, end_after_batch: 100}` "
      "in its config.\nExample:\n  cohort trial profile 3");
  context->OnRun(profile, [context, profile_id, profile_follow] {
    return PrintProfile(*context, *profile_id, *profile_follow);
  });
}

}  // namespace cohort::cli
