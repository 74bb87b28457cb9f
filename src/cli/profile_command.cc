#include "cli/profile_command.h"

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "cli/exit_codes.h"
#include "cli/local_profile.h"
#include "cli/table.h"
#include "cohort/status.h"
#include "wire/profile_bodies.h"
#include "wire/series_bodies.h"
#include "wire/states.h"
#include "wire/trace_events.h"
#include "wire/trial_bodies.h"

namespace cohort::cli {
namespace {

struct ProfileArgs {
  int64_t trial_id = 0;
  bool follow = false;
  bool all_ranks = false;
  std::string trace;                       // a file to write the trace to; empty: none
  int64_t from_batch = -1, to_batch = -1;  // -1: the master's default range
  std::string run_dir;                     // a local run's trial directory instead of an id
};

// The batches a trace covers by default: 100 from the first asked for (as the master's).
constexpr int64_t kTraceBatches = 100;

// The phases of a step in the order it runs them (train_batch's parts indented), then the
// others measured beside it.
const std::vector<std::string>& PhaseOrder() {
  static const auto* order = new std::vector<std::string>{"dataloader_next",
                                                          "to_device",
                                                          "train_batch",
                                                          "forward",
                                                          "backward",
                                                          "gradient_wait",
                                                          "optimizer_step",
                                                          "step_lr_schedulers",
                                                          "from_device",
                                                          "reduce_metrics",
                                                          "validation",
                                                          "checkpoint",
                                                          wire::kGradientCommunicationPhase};
  return *order;
}

bool IsTrainBatchPart(const std::string& phase) {
  return phase == "forward" || phase == "backward" || phase == "gradient_wait" ||
         phase == "optimizer_step";
}

// Mean milliseconds per phase, a column per rank.
struct TimingTable {
  std::string source;  // what the numbers are, for the heading
  std::vector<int> ranks;
  std::map<std::string, std::vector<std::optional<double>>> mean_ms;  // phase -> per rank

  // A step of rank column `i`: the measured "step", else the sum of its top-level phases.
  double StepMs(size_t i) const {
    auto at = [&](const std::string& p) {
      auto it = mean_ms.find(p);
      return it == mean_ms.end() ? 0.0 : it->second[i].value_or(0);
    };
    if (at("step") > 0) return at("step");
    return at("dataloader_next") + at("to_device") + at("train_batch") + at("step_lr_schedulers") +
           at("from_device");
  }
};

TimingTable FromStepTimings(const wire::StepTimings& t, bool all_ranks) {
  TimingTable table;
  for (const wire::RankTimings& r : t.ranks) {
    if (!all_ranks && !table.ranks.empty()) break;  // rank 0's (the lowest present)
    const size_t column = table.ranks.size();
    table.ranks.push_back(r.rank);
    for (const wire::PhaseTiming& p : r.phases) {
      auto& cells = table.mean_ms[p.name];
      cells.resize(column + 1);
      cells[column] = p.mean_ms;
    }
  }
  for (auto& [phase, cells] : table.mean_ms) cells.resize(table.ranks.size());
  const int64_t batches = t.profiled_steps / std::max<int64_t>(1, t.ranks.size());
  table.source = absl::StrCat("over ", batches, " profiled batches");
  return table;
}

// Without step timelines: the chief's reported timings (the series training/timings/<phase>).
TimingTable FromSeries(const wire::SeriesList& list) {
  constexpr absl::string_view kPrefix = "training/timings/";
  TimingTable table{.source = "the chief's reports", .ranks = {0}, .mean_ms = {}};
  for (const wire::SeriesSummary& s : list.series) {
    if (absl::StartsWith(s.name, kPrefix)) {
      table.mean_ms[s.name.substr(kPrefix.size())] = {s.mean_value};
    }
  }
  return table;
}

void PrintOverlap(const TimingTable& t, size_t i) {
  auto at = [&](const std::string& p) -> std::optional<double> {
    auto it = t.mean_ms.find(p);
    return it == t.mean_ms.end() ? std::nullopt : it->second[i];
  };
  const std::optional<double> wait = at("gradient_wait");
  const std::optional<double> comm = at(wire::kGradientCommunicationPhase);
  if (!wait) return;
  std::cout << "rank " << t.ranks[i] << ": gradient wait "
            << absl::StrFormat("%.1f%%", 100 * *wait / std::max(t.StepMs(i), 1e-9)) << " of a step";
  if (comm && *comm > 0) {
    const double hidden = std::clamp(1 - *wait / *comm, 0.0, 1.0);
    std::cout << absl::StrFormat("; communication %.3f ms per step, %.0f%% of it overlapped", *comm,
                                 100 * hidden);
  }
  std::cout << "\n";
}

void PrintTimingTable(const TimingTable& t) {
  if (t.mean_ms.empty() || t.ranks.empty() || t.StepMs(0) <= 0) return;
  std::vector<std::string> order = PhaseOrder();
  for (const auto& [phase, cells] : t.mean_ms) {
    if (phase != "step" && std::find(order.begin(), order.end(), phase) == order.end()) {
      order.push_back(phase);
    }
  }
  const bool one = t.ranks.size() == 1;
  std::vector<std::string> header = {"phase"};
  for (int rank : t.ranks) header.push_back(one ? "mean ms" : absl::StrCat("rank ", rank, " ms"));
  if (one) header.push_back("share");
  std::vector<std::vector<std::string>> rows;
  for (const std::string& phase : order) {
    auto it = t.mean_ms.find(phase);
    if (it == t.mean_ms.end()) continue;
    std::vector<std::string> row = {IsTrainBatchPart(phase) ? "  " + phase : phase};
    for (const std::optional<double>& ms : it->second) {
      row.push_back(ms ? absl::StrFormat("%.3f", *ms) : "-");
    }
    const bool in_step = phase != "reduce_metrics" && phase != "validation" &&
                         phase != "checkpoint" && phase != wire::kGradientCommunicationPhase;
    if (one) {
      row.push_back(in_step && it->second[0]
                        ? absl::StrFormat("%.1f%%", 100 * *it->second[0] / t.StepMs(0))
                        : "-");
    }
    rows.push_back(std::move(row));
  }
  std::cout << "\nstep timings (ms per batch, " << t.source << "; "
            << (one ? absl::StrCat("rank ", t.ranks[0], ", ") : "") << "a step is "
            << absl::StrFormat("%.2f", t.StepMs(0)) << " ms" << (one ? "" : " on the first rank")
            << "):\n";
  PrintTable(std::cout, header, rows);
  for (size_t i = 0; i < t.ranks.size(); ++i) PrintOverlap(t, i);
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

void PrintSystemTable(int64_t trial_id, const wire::SeriesList& profile) {
  if (profile.series.empty()) {
    std::cout << "trial " << trial_id
              << " has no system metrics yet: is profiling enabled in its config (profiling: "
                 "{enabled: true}), and its window reached?\n";
    return;
  }
  std::vector<std::vector<std::string>> rows;
  for (const wire::SeriesSummary& s : profile.series) {
    const wire::SeriesUnit unit = wire::SystemSeriesUnit(s.name);
    rows.push_back({s.name, s.label, absl::StrCat(s.points),
                    absl::StrCat(s.first_batch, "-", s.last_batch),
                    FormatQuantity(s.min_value, unit), FormatQuantity(s.mean_value, unit),
                    FormatQuantity(s.max_value, unit)});
  }
  PrintTable(std::cout, {"series", "machine", "samples", "batches", "min", "mean", "max"}, rows);
}

// What `trial profile` shows once: the trial, its system series, its step timings.
struct ProfileSnapshot {
  wire::TrialDescription trial;
  wire::SeriesList system;
  wire::SeriesList all;  // every series (the chief's timings are among them)
  wire::StepTimings timings;
};

absl::StatusOr<ProfileSnapshot> ReadSnapshot(client::MasterClient& client, int64_t trial_id) {
  const std::string path = absl::StrCat("/api/v1/trials/", trial_id);
  ProfileSnapshot s;
  COHORT_ASSIGN_OR_RETURN(
      s.trial, GetAs(client, path, [](const Json& j) { return wire::ParseTrialDescription(j); }));
  COHORT_ASSIGN_OR_RETURN(s.all, GetAs(client, path + "/series", wire::ParseSeriesList));
  s.system = ProfileSeries(s.all);
  COHORT_ASSIGN_OR_RETURN(s.timings,
                          GetAs(client, path + "/profile/timings", wire::ParseStepTimings));
  return s;
}

// The system table and the step timings (from the timelines when there are any); with
// `follow`, again every 2 s until the trial ends.
int PrintProfile(const CommandContext& context, const ProfileArgs& args) {
  client::MasterClient client = context.Client();
  const bool tty = ::isatty(STDOUT_FILENO) == 1;
  for (bool first = true;; first = false) {
    absl::StatusOr<ProfileSnapshot> s = ReadSnapshot(client, args.trial_id);
    if (!s.ok()) return Fail(s.status());
    const bool ended = wire::IsTerminal(s->trial.state);
    if (context.json()) {
      if (args.follow && !ended) {
        absl::SleepFor(absl::Seconds(2));
        continue;
      }
      Json out = s->system.ToJson();
      out["timings"] = s->timings.ToJson();
      return PrintJson(out);
    }
    if (args.follow && tty && !first) std::cout << "\x1b[H\x1b[2J";  // redraw in place
    if (args.follow) {
      std::cout << "trial " << args.trial_id << ": " << wire::Name(s->trial.state) << ", batch "
                << s->trial.batches << "/" << s->trial.total_batches << "\n";
    }
    PrintSystemTable(args.trial_id, s->system);
    PrintTimingTable(s->timings.ranks.empty() ? FromSeries(s->all)
                                              : FromStepTimings(s->timings, args.all_ranks));
    if (!args.follow || ended) return kExitOk;
    std::cout << std::flush;
    absl::SleepFor(absl::Seconds(2));
  }
}

// Writes `text` to `path` through a temporary file beside it, so a reader never sees half.
absl::Status WriteFile(const std::string& path, const std::string& text) {
  const std::string temp = path + ".part";
  std::ofstream out(temp, std::ios::binary | std::ios::trunc);
  out << text;
  out.close();
  std::error_code ec;
  if (out) std::filesystem::rename(temp, path, ec);
  if (!out || ec) {
    std::filesystem::remove(temp, ec);
    return absl::UnavailableError(
        absl::StrCat("cannot write ", path, ": check the directory exists and is writable"));
  }
  return absl::OkStatus();
}

int SaveTrace(const Json& trace, const ProfileArgs& args, const std::string& what, bool ranged);

// `--trace FILE`: the master's Trace Event Format document of the batch range, written as is.
int WriteTrace(const CommandContext& context, const ProfileArgs& args) {
  client::MasterClient client = context.Client(absl::Seconds(120));
  std::string path = absl::StrCat("/api/v1/trials/", args.trial_id, "/trace");
  std::vector<std::string> query;
  if (args.from_batch >= 0) query.push_back(absl::StrCat("min_batch=", args.from_batch));
  if (args.to_batch >= 0) query.push_back(absl::StrCat("max_batch=", args.to_batch));
  if (!query.empty()) absl::StrAppend(&path, "?", absl::StrJoin(query, "&"));
  absl::StatusOr<Json> trace = client.Get(path);
  if (!trace.ok()) return Fail(trace.status());
  return SaveTrace(*trace, args, absl::StrCat("trial ", args.trial_id), !query.empty());
}

// Writes `trace` (a Trace Event Format document) to args.trace and says what it holds; `what`
// names the trial (or the run) in the error when it holds no span.
int SaveTrace(const Json& trace, const ProfileArgs& args, const std::string& what, bool ranged) {
  std::set<int> ranks;
  std::set<int64_t> batches;
  int64_t spans = 0;
  for (const Json& e : trace.value("traceEvents", Json::array())) {
    if (e.value("ph", "") != "X") continue;
    ++spans;
    ranks.insert(e.value("pid", 0));
    if (e.contains("args")) batches.insert(e["args"].value("batch", int64_t{0}));
  }
  if (spans == 0) {
    return Fail(absl::FailedPreconditionError(absl::StrCat(
        what, " has no step timelines", ranged ? " in that batch range" : "",
        ": profile it with `profiling: {enabled: true, begin_on_batch: 1, end_after_batch: 50}` "
        "(the Trial API records them)")));
  }
  if (absl::Status s = WriteFile(args.trace, trace.dump()); !s.ok()) return Fail(s);
  const Json other = trace.value("otherData", Json::object());
  std::cout << "wrote " << args.trace << ": " << spans << " spans of rank"
            << (ranks.size() > 1 ? "s " : " ") << absl::StrJoin(ranks, ", ") << ", batches "
            << *batches.begin() << "-" << *batches.rbegin()
            << (other.value("truncated", false) ? " (cut short: ask for fewer batches)" : "")
            << "\nopen it in chrome://tracing or https://ui.perfetto.dev (Open trace file)\n";
  return kExitOk;
}

// `--run-dir DIR`: a local run's step timelines (local_profile.h), printed or traced as a
// master's are. A local run records no system metrics.
int LocalRunProfile(const CommandContext& context, const ProfileArgs& args) {
  std::optional<int64_t> from, to;
  if (args.from_batch >= 0) from = args.from_batch;
  if (args.to_batch >= 0) to = args.to_batch;
  absl::StatusOr<LocalProfile> p = ReadLocalProfile(args.run_dir, from, to);
  if (!p.ok()) return Fail(p.status());
  if (p->skipped_lines > 0) {
    std::cerr << "warning: " << p->skipped_lines << " line(s) of " << args.run_dir
              << "/profile did not parse and were skipped\n";
  }
  if (!args.trace.empty()) {
    std::vector<wire::StepProfileRecord> window;
    int64_t first = std::numeric_limits<int64_t>::max();
    for (const wire::StepProfileRecord& r : p->records) first = std::min(first, r.batch);
    for (wire::StepProfileRecord& r : p->records) {
      if (to || r.batch < first + kTraceBatches) window.push_back(std::move(r));
    }
    return SaveTrace(wire::TraceEvents(0, window, p->truncated), args,
                     absl::StrCat("the run in ", args.run_dir), from || to);
  }
  if (context.json()) {
    Json out = p->system.ToJson();
    out["timings"] = p->timings.ToJson();
    return PrintJson(out);
  }
  std::cout << "local run " << args.run_dir << (p->truncated ? " (its first 200000 records)" : "")
            << ":\n";
  if (p->system.series.empty()) {
    std::cout << "no system metrics (a run before they were sampled locally, or outside the "
                 "profiling window)\n";
  } else {
    PrintSystemTable(0, p->system);
  }
  PrintTimingTable(FromStepTimings(p->timings, args.all_ranks));
  return kExitOk;
}

}  // namespace

void AddProfileCommand(CLI::App* trial, CommandContext* context) {
  auto args = std::make_shared<ProfileArgs>();
  CLI::App* profile = trial->add_subcommand(
      "profile", "What the profiler measured: system metrics per machine, step timings, trace");
  profile->add_option("id", args->trial_id, "Trial id (on the master)");
  profile
      ->add_option("--run-dir", args->run_dir,
                   "Instead of an id: a local run's trial directory (cohort-runs/EXP/trial-ID), "
                   "whose profile/rank-<R>.jsonl are read")
      ->check(CLI::ExistingDirectory);
  profile->add_flag("-f,--follow", args->follow,
                    "Print it again every 2 seconds until the trial ends");
  profile->add_flag("--all-ranks", args->all_ranks,
                    "Step timings of every rank side by side (default: rank 0's)");
  profile->add_option("--trace", args->trace,
                      "Write the step timelines as a Trace Event Format file (Perfetto, "
                      "chrome://tracing) instead of printing the summary");
  profile
      ->add_option("--from-batch", args->from_batch,
                   "With --trace: the first batch (default: the first profiled one)")
      ->check(CLI::NonNegativeNumber);
  profile
      ->add_option("--to-batch", args->to_batch,
                   "With --trace: the last batch (default: 100 batches from the first)")
      ->check(CLI::NonNegativeNumber);
  context->AddJsonFlag(profile, "The system series and every rank's step timings as JSON");
  profile->footer(
      "Profile a trial with `profiling: {enabled: true, begin_on_batch: 1, end_after_batch: 100}` "
      "in its config.\nExamples:\n  cohort trial profile 1\n  cohort trial profile 1 --all-ranks\n"
      "  cohort trial profile 1 --trace trial1.json --from-batch 20 --to-batch 30\n"
      "  cohort trial profile --run-dir cohort-runs/mnist-20261130-101500/trial-1");
  context->OnRun(profile, [context, args] {
    if (args->run_dir.empty() == (args->trial_id == 0)) {
      std::cerr << "cohort: error: give a trial id, or --run-dir DIR for a local run (one of "
                   "them)\n";
      return kExitUsage;
    }
    if (!args->run_dir.empty()) return LocalRunProfile(*context, *args);
    return args->trace.empty() ? PrintProfile(*context, *args) : WriteTrace(*context, *args);
  });
}

}  // namespace cohort::cli
