#include "cli/local_experiment.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <deque>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <sstream>
#include <variant>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "cli/config_overrides.h"
#include "cli/exit_codes.h"
#include "cli/local_profile.h"
#include "cli/progress_meter.h"
#include "cli/validate_command.h"
#include "common/json_lines_tail.h"
#include "common/sibling_program.h"
#include "common/subprocess.h"
#include "config/asha.h"
#include "config/config_parser.h"
#include "config/creation_check.h"
#include "config/entrypoint.h"
#include "config/error_list.h"
#include "config/length.h"
#include "config/yaml_json.h"
#include "master/experiments/exit_policy.h"
#include "master/experiments/lifecycle.h"
#include "master/searcher/searcher.h"
#include "wire/reports.h"
#include "wire/states.h"
#include "wire/worker_env.h"

namespace cohort::cli {
namespace {

namespace fs = std::filesystem;
namespace searcher = master::searcher;
using config::Json;
using wire::TrialState;

constexpr int kFailureLines = 20;
// The launcher's output read per look (then written to output.log): a trial that floods it is
// relayed at this pace, never gathered whole.
constexpr size_t kReadBytes = 1u << 20;

std::atomic<int> g_interrupts{0};
void OnInterrupt(int) { g_interrupts.fetch_add(1); }

// Installs the Ctrl-C/SIGTERM handlers for the run and restores the old ones after.
class InterruptScope {
 public:
  InterruptScope() {
    g_interrupts = 0;
    struct sigaction action = {};
    action.sa_handler = OnInterrupt;
    sigemptyset(&action.sa_mask);
    ::sigaction(SIGINT, &action, &old_int_);
    ::sigaction(SIGTERM, &action, &old_term_);
  }
  ~InterruptScope() {
    ::sigaction(SIGINT, &old_int_, nullptr);
    ::sigaction(SIGTERM, &old_term_, nullptr);
  }

 private:
  struct sigaction old_int_ = {}, old_term_ = {};
};

struct Trial {
  int id = 0;
  Json hparams;
  uint32_t seed = 0;
  fs::path dir;
  TrialState state = TrialState::kQueued;
  int64_t batches = 0;
  int restarts = 0;
  std::optional<double> searcher_metric;
  Json validation;                     // the last validation's metrics
  std::string latest_checkpoint;       // storage id
  std::string latest_checkpoint_path;  // its directory
  int64_t index = 0;                   // 0-based creation order: the searcher's name for it
  std::vector<int64_t> ops;            // adaptive_asha: the bracket's rungs; else empty
  bool preempted = false;              // this run checkpointed on a stop request and ended
  std::optional<bool> searcher_stop;   // the searcher stopped this run; true: for good
};

std::string Describe(const Json& metrics) {
  std::vector<std::string> parts;
  for (const auto& [name, value] : metrics.items()) {
    if (value.is_number_float())
      parts.push_back(absl::StrFormat("%s=%.4f", name, value.get<double>()));
    else if (value.is_number())
      parts.push_back(absl::StrCat(name, "=", value.dump()));
  }
  return absl::StrJoin(parts, " ");
}

std::string LastLines(const fs::path& path, int n) {
  std::ifstream in(path);
  std::deque<std::string> lines;
  for (std::string line; std::getline(in, line);) {
    lines.push_back(line);
    if (static_cast<int>(lines.size()) > n) lines.pop_front();
  }
  std::string text;
  for (const std::string& line : lines) absl::StrAppend(&text, "  | ", line, "\n");
  return text;
}

// The entrypoint's argv with its program resolved against the context directory.
std::optional<std::vector<std::string>> ResolveEntrypoint(const config::ExperimentConfig& cfg,
                                                          const fs::path& context,
                                                          std::ostream& err) {
  absl::StatusOr<std::vector<std::string>> argv =
      config::ResolveEntrypoint(cfg.entrypoint, context.string());
  if (!argv.ok()) {
    err << "cohort: error: " << argv.status().message() << "\n";
    return std::nullopt;
  }
  return *std::move(argv);
}

// The --test variant of the config tree: a few batches, validation and checkpoint at the end.
absl::StatusOr<config::ExperimentConfig> SmokeTestConfig(const config::ExperimentConfig& cfg) {
  Json tree = cfg.effective;
  int64_t batches = kSmokeTestBatches;
  if (cfg.searcher.max_length && cfg.searcher.max_length->unit == config::Length::Unit::kBatches) {
    batches = std::min(batches, cfg.searcher.max_length->value);
  }
  tree["searcher"]["max_length"] = Json{{"batches", batches}};
  tree.erase("min_validation_period");
  tree.erase("min_checkpoint_period");
  return config::ParseExperimentConfig(tree, {.seed_if_absent = cfg.experiment_seed});
}

// One local experiment: its trials run one at a time, in the order the searcher queues them
// (the QUEUED trial created first runs next, so a promoted trial resumes before later ones
// start, as under the master's FIFO scheduling).
class LocalRun {
 public:
  LocalRun(const CreateLocalArgs& args, config::ExperimentConfig cfg,
           std::unique_ptr<searcher::Searcher> searcher, std::vector<std::string> entry,
           fs::path exp_dir, std::ostream& out, std::ostream& err)
      : args_(args),
        cfg_(std::move(cfg)),
        searcher_(std::move(searcher)),
        entry_(std::move(entry)),
        exp_dir_(std::move(exp_dir)),
        out_(out),
        err_(err),
        interactive_(args.interactive.value_or(::isatty(STDERR_FILENO) == 1)),
        launcher_(args.launcher.empty() ? SiblingProgram("cohort-launch") : args.launcher) {}

  // `trials`: one per Create of the searcher's Start(), in index order.
  int Run(std::vector<Trial>& trials) {
    InterruptScope interrupts;
    trials_ = &trials;
    while (g_interrupts == 0) {
      auto next = std::find_if(trials.begin(), trials.end(),
                               [](const Trial& t) { return t.state == TrialState::kQueued; });
      if (next == trials.end()) break;
      RunTrial(*next, static_cast<int>(trials.size()));
      Apply(searcher_->TrialExited(next->index, next->state));
    }
    PrintSummary(trials);
    for (const Trial& t : trials) {
      if (t.state != TrialState::kCompleted) return kExitInvalid;
    }
    return kExitOk;
  }

 private:
  void RunTrial(Trial& trial, int count) {
    std::error_code ec;
    fs::create_directories(trial.dir, ec);
    trial.searcher_stop.reset();
    while (true) {
      trial.preempted = false;
      const int status = RunOnce(trial, count);
      if (status < 0) {
        Move(trial, TrialState::kError);
        return;
      }
      const master::ExitFacts facts = ExitFactsOf(trial, status);
      const master::ExitDecision decision = master::DecideAfterExit(facts);
      if (facts.stop == master::StopReason::kSearcher) {
        Move(trial, decision.next);
        err_ << "trial " << trial.id << ": "
             << searcher::StoppedEarlyLine(trial.batches, trial.state) << "\n";
        return;
      }
      if (facts.stop == master::StopReason::kPause) {
        Move(trial, decision.next);
        err_ << "trial " << trial.id << " stopped after " << trial.batches
             << " batches; its checkpoint " << trial.latest_checkpoint << " ("
             << trial.latest_checkpoint_path
             << ") holds the state to resume from (a Trial API program takes it as --restore)\n";
        return;
      }
      if (decision.next == TrialState::kCompleted) {
        Move(trial, decision.next);
        return;
      }
      err_ << "trial " << trial.id << " failed (cohort-launch exit status " << status
           << "); the last lines of " << (trial.dir / "output.log").string() << ":\n"
           << LastLines(trial.dir / "output.log", kFailureLines);
      if (!decision.restart) {
        Move(trial, decision.next);
        if (trial.restarts >= cfg_.max_restarts && cfg_.max_restarts > 0) {
          err_ << "trial " << trial.id << ": giving up after " << trial.restarts
               << " restart(s) (max_restarts " << cfg_.max_restarts << ")\n";
        }
        return;
      }
      ++trial.restarts;
      Move(trial, decision.next);
      err_ << "trial " << trial.id << ": restart " << trial.restarts << " of " << cfg_.max_restarts
           << (trial.latest_checkpoint.empty() ? " from the beginning (no checkpoint yet)"
                                               : " from checkpoint " + trial.latest_checkpoint)
           << "\n";
    }
  }

  // What the master's exit decision (master/experiments/exit_policy.h) needs to know of a run
  // that exited with `status`. This runner asks a trial to stop only for the searcher (a Stop)
  // or on Ctrl-C, which pauses the local experiment; a failure after Ctrl-C is not retried.
  master::ExitFacts ExitFactsOf(const Trial& trial, int status) const {
    const bool interrupted = g_interrupts > 0;
    master::ExitFacts facts;
    facts.stop = trial.searcher_stop ? master::StopReason::kSearcher
                 : trial.preempted   ? master::StopReason::kPause
                                     : master::StopReason::kNone;
    facts.all_exited_ok = status == 0;
    facts.experiment =
        interrupted ? wire::ExperimentState::kPaused : wire::ExperimentState::kActive;
    facts.stop_once = cfg_.searcher.stop_once;
    facts.restarts = trial.restarts;
    facts.max_restarts = interrupted ? 0 : static_cast<int>(cfg_.max_restarts);
    return facts;
  }

  // Starts cohort-launch for the trial with the worker environment, inside the context.
  absl::StatusOr<std::unique_ptr<Subprocess>> Launch(const Trial& trial) {
    std::vector<std::string> argv = {
        launcher_,        "--slots", std::to_string(cfg_.resources.slots_per_trial),
        "--grace-period", "60",      "--"};
    argv.insert(argv.end(), entry_.begin(), entry_.end());
    std::map<std::string, std::optional<std::string>> env;
    for (const auto& [name, value] : cfg_.environment_variables) env[name] = value;
    wire::WorkerEnv worker;
    worker.config_path = fs::absolute(exp_dir_ / "config.yaml").string();
    worker.run_dir = fs::absolute(trial.dir).string();
    worker.hparams = trial.hparams;
    worker.trial_seed = trial.seed;
    worker.trial_id = trial.id;
    worker.latest_checkpoint = trial.latest_checkpoint;
    worker.searcher_ops = trial.ops;
    for (auto& [name, value] : worker.ToEnv()) env[name] = std::move(value);
    return Subprocess::Start({.argv = argv, .env = env, .cwd = args_.context_dir});
  }

  // Ctrl-C once: the trial checkpoints and stops; twice: it is killed.
  void ForwardInterrupts(const Trial& trial, Subprocess& child, int* seen) {
    if (g_interrupts <= *seen) return;
    *seen = g_interrupts;
    ClearLine();
    if (*seen == 1) {
      err_ << "stopping: trial " << trial.id
           << " checkpoints and stops (Ctrl-C again to kill it now)\n";
      child.Signal(SIGTERM);
    } else {
      err_ << "killing trial " << trial.id << "\n";
      child.Signal(SIGKILL);
    }
  }

  // The trial's new report lines; a searcher stop becomes SIGTERM (the trial checkpoints).
  void ReadReports(Trial& trial, JsonLinesTail& metrics, Subprocess& child,
                   std::optional<double>* loss) {
    for (const nlohmann::json& raw : metrics.NewLines()) {
      absl::StatusOr<wire::ReportRecord> record =
          wire::ParseReportRecord(raw, (trial.dir / "metrics.jsonl").string());
      if (!record.ok()) {
        ClearLine();
        err_ << "trial " << trial.id << ": skipping a report: " << record.status().message()
             << "\n";
      } else if (HandleMetric(trial, *record, loss)) {
        child.Signal(SIGTERM);
      }
    }
  }

  // One cohort-launch of the trial. Returns its exit status (-1: it could not start).
  int RunOnce(Trial& trial, int count) {
    absl::StatusOr<std::unique_ptr<Subprocess>> child = Launch(trial);
    if (!child.ok()) {
      err_ << "cohort: error: trial " << trial.id << ": " << child.status().message() << "\n";
      return -1;
    }
    Move(trial, TrialState::kRunning);
    // Profiled: the machine's system metrics beside the ranks' step timelines (local_profile.h).
    std::unique_ptr<LocalSystemSampler> system =
        LocalSystemSampler::Start(trial.dir.string(), cfg_.profiling, err_);
    if (system != nullptr) system->SetBatch(trial.batches);
    std::ofstream log(trial.dir / "output.log", std::ios::app);
    JsonLinesTail metrics((trial.dir / "metrics.jsonl").string());
    metrics.NewLines();  // what earlier runs of this trial reported is not news
    ProgressMeter meter(absl::StrCat("trial ", trial.id, "/", count),
                        config::TrialGlobalBatchSize(cfg_, trial.hparams));
    std::optional<double> loss;
    absl::Time last_print = absl::InfinitePast();
    int interrupts_seen = 0;
    bool open = true;
    absl::Time exited_at = absl::InfiniteFuture();
    while (true) {
      std::string chunk;
      if (open)
        open = (*child)->ReadAvailable(&chunk, absl::Milliseconds(250), kReadBytes);
      else
        absl::SleepFor(absl::Milliseconds(50));
      log << chunk;
      log.flush();
      ForwardInterrupts(trial, **child, &interrupts_seen);
      ReadReports(trial, metrics, **child, &loss);
      if (std::optional<ProgressSnapshot> p = ReadProgress(trial.dir / "progress.json")) {
        p->loss = loss;
        meter.Update(*p, absl::Now());
        trial.batches = static_cast<int64_t>(p->completed);
        if (system != nullptr) system->SetBatch(trial.batches);
      }
      const std::optional<int> status = (*child)->Poll();
      if (status.has_value() && exited_at == absl::InfiniteFuture()) exited_at = absl::Now();
      // After the exit, drain the pipe (for at most 2 s: a stray grandchild may hold it).
      if (!status.has_value() || (open && absl::Now() - exited_at < absl::Seconds(2))) {
        if (status.has_value()) continue;
        if (interactive_) {
          err_ << "\r" << meter.Line() << "\x1b[K" << std::flush;
        } else if (absl::Now() - last_print >= absl::Seconds(10) && meter.has_snapshot()) {
          err_ << meter.Line() << "\n";
          last_print = absl::Now();
        }
        continue;
      }
      if (meter.has_snapshot()) {
        ClearLine();
        err_ << meter.Line() << "\n";
      }
      return *status;
    }
  }

  // True when the searcher stops the trial (adaptive_asha did not promote it).
  bool HandleMetric(Trial& trial, const wire::ReportRecord& record, std::optional<double>* loss) {
    switch (record.kind) {
      case wire::ReportKind::kTraining:
        if (record.metrics.contains("loss") && record.metrics["loss"].is_number()) {
          *loss = record.metrics["loss"].get<double>();
        }
        break;
      case wire::ReportKind::kValidation:
        trial.validation = record.metrics;
        ClearLine();
        err_ << "trial " << trial.id << ": validation after " << record.steps_completed.value_or(0)
             << " batches: " << Describe(record.metrics) << "\n";
        break;
      case wire::ReportKind::kCheckpoint:
        trial.latest_checkpoint = record.storage_id;
        trial.latest_checkpoint_path = record.path;
        break;
      case wire::ReportKind::kCompleted:
        if (!std::isnan(record.searcher_metric)) trial.searcher_metric = record.searcher_metric;
        if (record.length) {
          return AshaRung(trial, std::llround(*record.length), record.searcher_metric);
        }
        break;
      case wire::ReportKind::kPreempted:
        trial.preempted = true;
        break;
    }
    return false;
  }

  // The trial completed the searcher operation of `length` with `metric`: the searcher's
  // decisions (master/searcher), carried out and printed. True: it stops this trial.
  bool AshaRung(Trial& trial, int64_t length, double metric) {
    return Apply(searcher_->ValidationReported(trial.index, length, metric));
  }

  // Carries out the searcher's operations (a Stop only marks the running trial: the caller
  // signals it) and prints their lines. True when one of them is a Stop.
  bool Apply(const absl::StatusOr<std::vector<searcher::Operation>>& ops) {
    if (!ops.ok()) {
      ClearLine();
      err_ << "cohort: error: the searcher: " << ops.status().message() << "\n";
      return false;
    }
    bool stop = false;
    for (const searcher::Operation& op : *ops) {
      Trial& t = (*trials_)[static_cast<size_t>(searcher::TrialOf(op))];
      if (const auto* stop_op = std::get_if<searcher::Stop>(&op)) {
        t.searcher_stop = stop_op->final;
        stop = true;
      } else if (std::holds_alternative<searcher::Promote>(op)) {
        Move(t, TrialState::kQueued);
      } else if (std::holds_alternative<searcher::Complete>(op)) {
        Move(t, TrialState::kCompleted);
      }
      const std::string line = searcher::LogLine(op);
      if (line.empty()) continue;
      ClearLine();
      err_ << "trial " << t.id << ": " << line << "\n";
    }
    return stop;
  }

  // Moves the trial through the lifecycle (master/experiments/lifecycle.h), as the master does.
  void Move(Trial& trial, TrialState to) {
    // A refused move would be a bug of this runner: Transition logs it, naming the trial and
    // both states, and leaves the state as it was, which the summary then shows.
    master::Transition(trial.state, to, absl::StrCat("trial ", trial.id)).IgnoreError();
  }

  // The counts of the trial's progress.json (wire::ProgressRecord); nullopt while it has none,
  // or when the file is missing, too large or does not parse (the next poll reads it again).
  static std::optional<ProgressSnapshot> ReadProgress(const fs::path& path) {
    absl::StatusOr<wire::ProgressRecord> p = wire::ReadProgressFile(path.string());
    if (!p.ok() || p->unit.empty()) return std::nullopt;
    return ProgressSnapshot{.completed = p->completed, .total = p->total, .unit = p->unit};
  }

  void ClearLine() {
    if (interactive_) err_ << "\r\x1b[K";
  }

  void PrintSummary(const std::vector<Trial>& trials) {
    std::vector<std::vector<std::string>> rows = {{"trial", "state", "batches", "restarts",
                                                   "searcher metric", "hyperparameters",
                                                   "validation"}};
    for (const Trial& t : trials) {
      std::string metric = "-";
      if (t.searcher_metric && !std::isnan(*t.searcher_metric)) {
        metric = absl::StrFormat("%.6g", *t.searcher_metric);
      }
      rows.push_back({std::to_string(t.id), wire::Name(t.state), std::to_string(t.batches),
                      std::to_string(t.restarts), metric, t.hparams.dump(),
                      t.validation.is_object() ? Describe(t.validation) : "-"});
    }
    std::vector<size_t> widths(rows[0].size(), 0);
    for (const auto& row : rows) {
      for (size_t i = 0; i < row.size(); ++i) widths[i] = std::max(widths[i], row[i].size());
    }
    out_ << "\nexperiment " << cfg_.name.value_or("experiment") << " (seed " << cfg_.experiment_seed
         << "): " << exp_dir_.string() << "\n";
    for (const auto& row : rows) {
      std::string line;
      for (size_t i = 0; i < row.size(); ++i) {
        const bool numeric = i == 0 || i == 2 || i == 3 || i == 4;
        const std::string pad(widths[i] - row[i].size(), ' ');
        absl::StrAppend(&line, i > 0 ? "  " : "", numeric ? pad + row[i] : row[i] + pad);
      }
      while (!line.empty() && line.back() == ' ') line.pop_back();
      out_ << line << "\n";
    }
    // Where to look next: no master keeps series here, the run directories hold everything.
    out_ << "next: " << (exp_dir_ / "trial-<id>").string()
         << "/ holds each trial's metrics.jsonl, its checkpoints and, when profiled, "
            "profile/rank-<R>.jsonl  |  tensorboard --logdir "
         << exp_dir_.string() << "  (checkpoint storage elsewhere: --logdir STORAGE/tensorboard)\n";
  }

  const CreateLocalArgs& args_;
  config::ExperimentConfig cfg_;
  std::unique_ptr<searcher::Searcher> searcher_;
  std::vector<Trial>* trials_ = nullptr;  // Run's, indexed by creation index
  std::vector<std::string> entry_;
  fs::path exp_dir_;
  std::ostream& out_;
  std::ostream& err_;
  bool interactive_;
  std::string launcher_;
};

// Whether `cfg` can run without a master: what Cohort cannot run at all, and warm starts (their
// checkpoint is found through a master), are said on `err` naming the config.
bool RunnableHere(const config::ExperimentConfig& cfg, const std::string& config_path,
                  std::ostream& err) {
  if (absl::Status runnable = config::CheckRunnable(cfg); !runnable.ok()) {
    for (const std::string& line : config::ConfigErrors(runnable)) {
      err << config_path << ": " << line << "\n";
    }
    return false;
  }
  if (cfg.searcher.source_trial_id || cfg.searcher.source_checkpoint_uuid) {
    err << config_path << ": searcher."
        << (cfg.searcher.source_checkpoint_uuid ? "source_checkpoint_uuid" : "source_trial_id")
        << ": warm starts find their checkpoint through a master: create the experiment on a "
           "cluster (without --local), or start from scratch\n";
    return false;
  }
  return true;
}

// RUNS_DIR/<name>-<stamp>[-test|-N], made, with the effective config.yaml in it.
std::optional<fs::path> MakeExperimentDir(const CreateLocalArgs& args,
                                          const config::ExperimentConfig& cfg, std::ostream& err) {
  std::error_code ec;
  const std::string stamp = absl::FormatTime("%Y%m%d-%H%M%S", absl::Now(), absl::LocalTimeZone());
  fs::path exp_dir = fs::path(args.runs_dir) / absl::StrCat(cfg.name.value_or("experiment"), "-",
                                                            stamp, args.test ? "-test" : "");
  for (int n = 2; fs::exists(exp_dir, ec); ++n) {
    exp_dir =
        fs::path(args.runs_dir) / absl::StrCat(cfg.name.value_or("experiment"), "-", stamp, "-", n);
  }
  fs::create_directories(exp_dir, ec);
  if (ec) {
    err << "cohort: error: cannot create " << exp_dir.string() << ": " << ec.message() << "\n";
    return std::nullopt;
  }
  std::ofstream(exp_dir / "config.yaml") << config::ToYaml(cfg.effective);
  return exp_dir;
}

// The trials the searcher creates first, each with its directory under `exp_dir`.
std::vector<Trial> InitialTrials(searcher::Searcher& search, const fs::path& exp_dir) {
  std::vector<Trial> trials;
  for (const searcher::Operation& op : search.Start()) {
    const searcher::Create& create = std::get<searcher::Create>(op);
    Trial t;
    t.id = static_cast<int>(create.trial + 1);
    t.hparams = create.hparams;
    t.seed = create.seed;
    t.dir = exp_dir / absl::StrCat("trial-", t.id);
    t.index = create.trial;
    t.ops = create.rungs;
    trials.push_back(std::move(t));
  }
  return trials;
}

void PrintBrackets(const config::SearcherConfig& searcher, std::ostream& err) {
  std::vector<std::string> brackets;
  for (const std::vector<int64_t>& rungs : config::AshaBrackets(searcher)) {
    brackets.push_back(absl::StrJoin(rungs, ", "));
  }
  err << "adaptive_asha: " << brackets.size() << (brackets.size() == 1 ? " bracket" : " brackets")
      << " with rungs {" << absl::StrJoin(brackets, "}, {")
      << "}; trials run one at a time, and one not among the best 1/" << searcher.divisor
      << " of its bracket at a rung stops there"
      << (searcher.stop_once ? "" : " (it resumes from its checkpoint if later trials promote it)")
      << "\n";
}

}  // namespace

int RunCreateLocal(const CreateLocalArgs& args, std::ostream& out, std::ostream& err) {
  int exit_code = kExitOk;
  std::optional<config::ExperimentConfig> cfg =
      LoadExperimentConfig({.config_path = args.config_path,
                            .template_path = args.template_path,
                            .overrides = args.overrides},
                           err, &exit_code);
  if (!cfg) return exit_code;
  if (!RunnableHere(*cfg, args.config_path, err)) return kExitInvalid;
  std::error_code ec;
  if (!fs::is_directory(args.context_dir, ec)) {
    err << "cohort: error: context directory " << args.context_dir
        << " does not exist (it holds the trial program named by the config's entrypoint)\n";
    return kExitUsage;
  }
  std::optional<std::vector<std::string>> entry =
      ResolveEntrypoint(*cfg, fs::path(args.context_dir), err);
  if (!entry) return kExitUsage;
  if (args.test) {
    absl::StatusOr<config::ExperimentConfig> smoke = SmokeTestConfig(*cfg);
    if (!smoke.ok()) {
      err << "cohort: error: --test: " << smoke.status().message() << "\n";
      return kExitInvalid;
    }
    cfg = *std::move(smoke);
  }
  absl::StatusOr<std::unique_ptr<searcher::Searcher>> search = searcher::NewSearcher(
      *cfg, {.max_trials = args.test ? std::optional<int64_t>(1) : std::nullopt});
  if (!search.ok()) {
    err << args.config_path << ": " << search.status().message() << "\n";
    return kExitInvalid;
  }

  std::optional<fs::path> made = MakeExperimentDir(args, *cfg, err);
  if (!made) return kExitUsage;
  const fs::path exp_dir = *made;
  std::vector<Trial> trials = InitialTrials(**search, exp_dir);
  if (config::HasRungs(cfg->searcher)) PrintBrackets(cfg->searcher, err);
  err << "experiment " << cfg->name.value_or("experiment") << ": " << trials.size()
      << (trials.size() == 1 ? " trial" : " trials") << " on " << cfg->resources.slots_per_trial
      << (cfg->resources.slots_per_trial == 1 ? " slot" : " slots") << " each, seed "
      << cfg->experiment_seed << (args.test ? " (smoke test)" : "") << "; output in "
      << exp_dir.string() << "\n";
  LocalRun run(args, *std::move(cfg), *std::move(search), *std::move(entry), exp_dir, out, err);
  return run.Run(trials);
}

}  // namespace cohort::cli
