#include "cli/local_experiment.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <deque>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/json_lines_tail.h"
#include "cli/exit_codes.h"
#include "cli/progress_meter.h"
#include "cli/validate_command.h"
#include "common/sibling_program.h"
#include "common/subprocess.h"
#include "config/asha.h"
#include "config/config_parser.h"
#include "config/entrypoint.h"
#include "config/hparam_sampler.h"
#include "config/length.h"
#include "config/yaml_json.h"
#include "wire/reports.h"
#include "wire/worker_env.h"

namespace cohort::cli {
namespace {

namespace fs = std::filesystem;
using config::Json;

constexpr int64_t kTestBatches = 10;
constexpr int kFailureLines = 20;

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
  std::string state = "NOT STARTED";
  int64_t batches = 0;
  int restarts = 0;
  std::optional<double> searcher_metric;
  Json validation;                     // the last validation's metrics
  std::string latest_checkpoint;       // storage id
  std::string latest_checkpoint_path;  // its directory
  int64_t index = 0;                   // 0-based, creation order (adaptive_asha's bracket)
  std::vector<int64_t> ops;            // adaptive_asha: the bracket's rungs; else empty
  std::set<int64_t> judged;            // rungs decided for this trial
  bool stopped_by_searcher = false;
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
  int64_t batches = kTestBatches;
  if (cfg.searcher.max_length && cfg.searcher.max_length->unit == config::Length::Unit::kBatches) {
    batches = std::min(batches, cfg.searcher.max_length->value);
  }
  tree["searcher"]["max_length"] = Json{{"batches", batches}};
  tree.erase("min_validation_period");
  tree.erase("min_checkpoint_period");
  return config::ParseExperimentConfig(tree, {.seed_if_absent = cfg.experiment_seed});
}

class LocalRun {
 public:
  LocalRun(const CreateLocalArgs& args, config::ExperimentConfig cfg,
           std::vector<std::string> entry, fs::path exp_dir, std::ostream& out, std::ostream& err)
      : args_(args),
        cfg_(std::move(cfg)),
        entry_(std::move(entry)),
        exp_dir_(std::move(exp_dir)),
        out_(out),
        err_(err),
        interactive_(args.interactive.value_or(::isatty(STDERR_FILENO) == 1)),
        launcher_(args.launcher.empty() ? SiblingProgram("cohort-launch") : args.launcher),
        brackets_(std::max<size_t>(1, config::AshaBrackets(cfg_.searcher).size())),
        unit_(cfg_.searcher.max_length ? config::UnitName(cfg_.searcher.max_length->unit)
                                       : "batches") {}

  int Run(std::vector<Trial>& trials) {
    InterruptScope interrupts;
    for (Trial& trial : trials) {
      if (g_interrupts > 0) break;
      RunTrial(trial, static_cast<int>(trials.size()));
    }
    PrintSummary(trials);
    for (const Trial& t : trials) {
      if (t.state != "COMPLETED") return kExitInvalid;
    }
    return kExitOk;
  }

 private:
  void RunTrial(Trial& trial, int count) {
    std::error_code ec;
    fs::create_directories(trial.dir, ec);
    while (true) {
      const int status = RunOnce(trial, count);
      if (status < 0) {
        trial.state = "ERROR";
        return;
      }
      // A trial the searcher stopped has checkpointed ("preempted"); cohort-launch reports the
      // SIGTERM it passed on in its exit status.
      if ((status == 0 && trial.state != "PAUSED") ||
          (trial.stopped_by_searcher && trial.state == "PAUSED")) {
        trial.state = "COMPLETED";
        if (trial.stopped_by_searcher) {
          err_ << "trial " << trial.id << ": stopped early by adaptive_asha after " << trial.batches
               << " batches\n";
        }
        return;
      }
      if (trial.state == "PAUSED") {
        err_ << "trial " << trial.id << " stopped after " << trial.batches
             << " batches; its checkpoint " << trial.latest_checkpoint << " ("
             << trial.latest_checkpoint_path
             << ") holds the state to resume from (a Trial API program takes it as --restore)\n";
        return;
      }
      err_ << "trial " << trial.id << " failed (cohort-launch exit status " << status
           << "); the last lines of " << (trial.dir / "output.log").string() << ":\n"
           << LastLines(trial.dir / "output.log", kFailureLines);
      if (g_interrupts > 0 || trial.restarts >= cfg_.max_restarts) {
        trial.state = "ERROR";
        if (trial.restarts >= cfg_.max_restarts && cfg_.max_restarts > 0) {
          err_ << "trial " << trial.id << ": giving up after " << trial.restarts
               << " restart(s) (max_restarts " << cfg_.max_restarts << ")\n";
        }
        return;
      }
      ++trial.restarts;
      err_ << "trial " << trial.id << ": restart " << trial.restarts << " of " << cfg_.max_restarts
           << (trial.latest_checkpoint.empty() ? " from the beginning (no checkpoint yet)"
                                               : " from checkpoint " + trial.latest_checkpoint)
           << "\n";
    }
  }

  // One cohort-launch of the trial. Returns its exit status (-1: it could not start).
  int RunOnce(Trial& trial, int count) {
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
    auto child = Subprocess::Start({.argv = argv, .env = env, .cwd = args_.context_dir});
    if (!child.ok()) {
      err_ << "cohort: error: trial " << trial.id << ": " << child.status().message() << "\n";
      return -1;
    }
    trial.state = "RUNNING";
    std::ofstream log(trial.dir / "output.log", std::ios::app);
    JsonLinesTail metrics((trial.dir / "metrics.jsonl").string());
    metrics.NewLines();  // what earlier runs of this trial reported is not news
    ProgressMeter meter(absl::StrCat("trial ", trial.id, "/", count), cfg_.global_batch_size);
    std::optional<double> loss;
    absl::Time last_print = absl::InfinitePast();
    int interrupts_seen = 0;
    bool open = true;
    absl::Time exited_at = absl::InfiniteFuture();
    while (true) {
      std::string chunk;
      if (open)
        open = (*child)->ReadAvailable(&chunk, absl::Milliseconds(250));
      else
        absl::SleepFor(absl::Milliseconds(50));
      log << chunk;
      log.flush();
      if (g_interrupts > interrupts_seen) {
        interrupts_seen = g_interrupts;
        ClearLine();
        if (interrupts_seen == 1) {
          err_ << "stopping: trial " << trial.id
               << " checkpoints and stops (Ctrl-C again to kill it now)\n";
          (*child)->Signal(SIGTERM);
        } else {
          err_ << "killing trial " << trial.id << "\n";
          (*child)->Signal(SIGKILL);
        }
      }
      for (const nlohmann::json& raw : metrics.NewLines()) {
        absl::StatusOr<wire::ReportRecord> record =
            wire::ParseReportRecord(raw, (trial.dir / "metrics.jsonl").string());
        if (!record.ok()) {
          ClearLine();
          err_ << "trial " << trial.id << ": skipping a report: " << record.status().message()
               << "\n";
        } else if (HandleMetric(trial, *record, &loss)) {
          (*child)->Signal(SIGTERM);
        }
      }
      if (std::optional<ProgressSnapshot> p = ReadProgress(trial.dir / "progress.json")) {
        p->loss = loss;
        meter.Update(*p, absl::Now());
        trial.batches = static_cast<int64_t>(p->completed);
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
      case wire::ReportKind::kPreempted: trial.state = "PAUSED"; break;
    }
    return false;
  }

  // adaptive_asha, one trial at a time: the trial's metric at a rung against what the earlier
  // trials of its bracket had there (config/asha.h). True: stop it.
  bool AshaRung(Trial& trial, int64_t length, double metric) {
    if (trial.ops.empty() || length >= trial.ops.back() || trial.judged.count(length)) return false;
    const auto rung = std::find(trial.ops.begin(), trial.ops.end(), length);
    if (rung == trial.ops.end()) return false;
    trial.judged.insert(length);
    const bool smaller = cfg_.searcher.smaller_is_better;
    const double value = std::isfinite(metric) ? metric : (smaller ? HUGE_VAL : -HUGE_VAL);
    std::vector<double>& seen = rungs_[{trial.index % brackets_, length}];
    const bool promoted = config::AshaPromotes(seen, value, cfg_.searcher.divisor, smaller);
    const auto keep = static_cast<int64_t>(std::ceil((seen.size() + 1) / cfg_.searcher.divisor));
    ClearLine();
    err_ << "trial " << trial.id << ": adaptive_asha rung " << (rung - trial.ops.begin() + 1)
         << " of " << trial.ops.size() << " (" << length << " " << unit_
         << "): " << cfg_.searcher.metric << " " << metric
         << (promoted ? " is among" : " is not among") << " the best " << keep << " of "
         << seen.size() + 1 << "; " << (promoted ? "it goes on" : "it stops (after a checkpoint)")
         << "\n";
    seen.push_back(value);
    trial.stopped_by_searcher = !promoted;
    return !promoted;
  }

  static std::optional<ProgressSnapshot> ReadProgress(const fs::path& path) {
    std::ifstream in(path);
    if (!in) return std::nullopt;
    Json p = Json::parse(in, nullptr, /*allow_exceptions=*/false);
    if (p.is_discarded() || !p.contains("completed") || !p.contains("total")) return std::nullopt;
    return ProgressSnapshot{.completed = p["completed"].get<double>(),
                            .total = p["total"].get<double>(),
                            .unit = p.value("unit", "batches")};
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
      rows.push_back({std::to_string(t.id), t.state, std::to_string(t.batches),
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
  }

  const CreateLocalArgs& args_;
  config::ExperimentConfig cfg_;
  std::vector<std::string> entry_;
  fs::path exp_dir_;
  std::ostream& out_;
  std::ostream& err_;
  bool interactive_;
  std::string launcher_;
  size_t brackets_;   // adaptive_asha's brackets (1 for other searchers)
  std::string unit_;  // of searcher.max_length
  // adaptive_asha: (bracket, rung length) -> the metrics trials reported there, in order.
  std::map<std::pair<size_t, int64_t>, std::vector<double>> rungs_;
};

}  // namespace

int RunCreateLocal(const CreateLocalArgs& args, std::ostream& out, std::ostream& err) {
  int exit_code = kExitOk;
  std::optional<config::ExperimentConfig> cfg = LoadExperimentConfig(
      {.config_path = args.config_path, .template_path = args.template_path}, err, &exit_code);
  if (!cfg) return exit_code;
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
  absl::StatusOr<std::vector<Json>> samples =
      config::SampleHyperparameters(cfg->hyperparameters, cfg->searcher, cfg->experiment_seed);
  if (!samples.ok()) {
    err << args.config_path << ": " << samples.status().message() << "\n";
    return kExitInvalid;
  }
  if (args.test) samples->resize(std::min<size_t>(samples->size(), 1));

  const std::string stamp = absl::FormatTime("%Y%m%d-%H%M%S", absl::Now(), absl::LocalTimeZone());
  fs::path exp_dir = fs::path(args.runs_dir) / absl::StrCat(cfg->name.value_or("experiment"), "-",
                                                            stamp, args.test ? "-test" : "");
  for (int n = 2; fs::exists(exp_dir, ec); ++n) {
    exp_dir = fs::path(args.runs_dir) /
              absl::StrCat(cfg->name.value_or("experiment"), "-", stamp, "-", n);
  }
  fs::create_directories(exp_dir, ec);
  if (ec) {
    err << "cohort: error: cannot create " << exp_dir.string() << ": " << ec.message() << "\n";
    return kExitUsage;
  }
  std::ofstream(exp_dir / "config.yaml") << config::ToYaml(cfg->effective);

  std::vector<Trial> trials;
  for (size_t i = 0; i < samples->size(); ++i) {
    Trial t;
    t.id = static_cast<int>(i + 1);
    t.hparams = (*samples)[i];
    t.seed = config::TrialSeed(cfg->experiment_seed, i);
    t.dir = exp_dir / absl::StrCat("trial-", t.id);
    t.index = static_cast<int64_t>(i);
    if (cfg->searcher.name == "adaptive_asha") {
      t.ops = config::SearcherOperations(cfg->searcher, t.index);
    }
    trials.push_back(std::move(t));
  }
  if (cfg->searcher.name == "adaptive_asha") {
    std::vector<std::string> brackets;
    for (const std::vector<int64_t>& rungs : config::AshaBrackets(cfg->searcher)) {
      brackets.push_back(absl::StrJoin(rungs, ", "));
    }
    err << "adaptive_asha: " << brackets.size() << (brackets.size() == 1 ? " bracket" : " brackets")
        << " with rungs {" << absl::StrJoin(brackets, "}, {")
        << "}; trials run one at a time, and one not among the best 1/" << cfg->searcher.divisor
        << " of its bracket at a rung stops there"
        << (cfg->searcher.stop_once ? ""
                                    : " (for good: a local run does not resume stopped "
                                      "trials, as stop_once: true; a cluster does)")
        << "\n";
  }
  err << "experiment " << cfg->name.value_or("experiment") << ": " << trials.size()
      << (trials.size() == 1 ? " trial" : " trials") << " on " << cfg->resources.slots_per_trial
      << (cfg->resources.slots_per_trial == 1 ? " slot" : " slots") << " each, seed "
      << cfg->experiment_seed << (args.test ? " (smoke test)" : "") << "; output in "
      << exp_dir.string() << "\n";
  return LocalRun(args, *std::move(cfg), *std::move(entry), exp_dir, out, err).Run(trials);
}

}  // namespace cohort::cli
