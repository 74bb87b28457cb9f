// Master: the experiment's searcher: its config, and adaptive_asha's decisions at rungs.
#include <algorithm>
#include <cmath>
#include <map>
#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "cohort/status.h"
#include "common/logging.h"
#include "config/asha.h"
#include "config/config_parser.h"
#include "config/length.h"
#include "config/yaml_json.h"
#include "master/master.h"

namespace cohort::master {
namespace {

// Where trial `index` stands at the rung of `length` among the trials of its bracket that
// reached it (config::AshaPromotes; a missing metric ranks last).
struct AshaStanding {
  bool promoted = false;
  int64_t keep = 0;     // ceil(reached / divisor)
  int64_t reached = 0;  // trials of the bracket with a metric at this rung, itself included
};

AshaStanding Standing(const config::SearcherConfig& searcher,
                      const std::vector<std::map<int64_t, double>>& rungs, size_t index,
                      int64_t length) {
  const size_t brackets = std::max<size_t>(1, config::AshaBrackets(searcher).size());
  const double worst = searcher.smaller_is_better ? HUGE_VAL : -HUGE_VAL;
  auto value = [&](double m) { return std::isfinite(m) ? m : worst; };
  std::vector<double> others;
  for (size_t i = 0; i < rungs.size(); ++i) {
    if (i == index || i % brackets != index % brackets) continue;
    if (auto it = rungs[i].find(length); it != rungs[i].end()) others.push_back(value(it->second));
  }
  AshaStanding s;
  s.reached = static_cast<int64_t>(others.size()) + 1;
  s.keep = static_cast<int64_t>(std::ceil(s.reached / searcher.divisor));
  s.promoted = config::AshaPromotes(others, value(rungs[index].at(length)), searcher.divisor,
                                    searcher.smaller_is_better);
  return s;
}

// The position of trial `id` among its experiment's trials (by id): its creation order, which
// places it in an adaptive_asha bracket.
size_t IndexOf(const std::vector<TrialRow>& siblings, int64_t id) {
  size_t index = 0;
  while (index < siblings.size() && siblings[index].id != id) ++index;
  return index;
}

}  // namespace

absl::StatusOr<std::vector<int64_t>> Master::SearcherOpsLocked(const ExperimentRow& exp,
                                                               int64_t trial_id,
                                                               std::string* note) {
  const config::SearcherConfig& searcher = SearcherLocked(exp);
  if (searcher.name != "adaptive_asha") return std::vector<int64_t>{};
  COHORT_ASSIGN_OR_RETURN(std::vector<TrialRow> siblings, db_->ListTrials(exp.id));
  std::vector<int64_t> ops = config::SearcherOperations(searcher, IndexOf(siblings, trial_id));
  *note = absl::StrCat("; adaptive_asha rungs ", absl::StrJoin(ops, ", "), " ",
                       searcher.max_length ? config::UnitName(searcher.max_length->unit) : "");
  return ops;
}

const config::SearcherConfig& Master::SearcherLocked(const ExperimentRow& exp) {
  auto it = searchers_.find(exp.id);
  if (it != searchers_.end()) return it->second;
  config::SearcherConfig searcher;
  absl::StatusOr<config::Json> tree = config::ParseYaml(exp.config_yaml);
  absl::StatusOr<config::ExperimentConfig> cfg =
      tree.ok() ? config::ParseExperimentConfig(*tree) : tree.status();
  if (cfg.ok()) {
    searcher = cfg->searcher;
  } else {
    COHORT_LOG(ERROR) << "experiment " << exp.id << ": its stored config does not parse ("
                      << cfg.status() << "): scheduling it as a single search";
  }
  return searchers_.emplace(exp.id, std::move(searcher)).first->second;
}

absl::StatusOr<Master::RungMetrics> Master::RungMetricsLocked(const std::vector<TrialRow>& trials) {
  RungMetrics out(trials.size());
  for (size_t i = 0; i < trials.size(); ++i) {
    COHORT_ASSIGN_OR_RETURN(std::vector<MetricRow> rows,
                            db_->ListMetrics(trials[i].id, "searcher"));
    for (const MetricRow& row : rows) {
      Json m = Json::parse(row.metrics_json, nullptr, false);
      const double metric =
          m.is_object() && m.contains("searcher_metric") && m["searcher_metric"].is_number()
              ? m["searcher_metric"].get<double>()
              : std::nan("");
      out[i].emplace(row.steps_completed, metric);  // the first report of a rung counts
    }
  }
  return out;
}

absl::Status Master::AshaRungLocked(const TrialRow& trial, double length, double metric,
                                    const std::string& allocation) {
  COHORT_ASSIGN_OR_RETURN(ExperimentRow exp, db_->GetExperiment(trial.experiment_id));
  const config::SearcherConfig& searcher = SearcherLocked(exp);
  if (searcher.name != "adaptive_asha") return absl::OkStatus();
  const int64_t rung_length = std::llround(length);
  COHORT_ASSIGN_OR_RETURN(std::vector<TrialRow> siblings, db_->ListTrials(exp.id));
  COHORT_ASSIGN_OR_RETURN(RungMetrics rungs, RungMetricsLocked(siblings));
  const size_t index = IndexOf(siblings, trial.id);
  if (index == siblings.size() || rungs[index].count(rung_length)) {
    return absl::OkStatus();  // decided when it first got here (a resumed trial reports again)
  }
  Json stored = {{"searcher_metric", std::isfinite(metric) ? Json(metric) : Json(nullptr)}};
  COHORT_RETURN_IF_ERROR(db_->InsertMetrics(
      {{trial.id, "searcher", rung_length, stored.dump(), absl::ToUnixMillis(NowLocked()) / 1e3}}));
  rungs[index].emplace(rung_length, metric);

  const std::vector<int64_t> ops =
      config::SearcherOperations(searcher, static_cast<int64_t>(index));
  const auto rung = std::find(ops.begin(), ops.end(), rung_length);
  if (rung == ops.end() || rung + 1 == ops.end()) return absl::OkStatus();  // the last: done
  const AshaStanding standing = Standing(searcher, rungs, index, rung_length);
  const std::string unit =
      searcher.max_length ? config::UnitName(searcher.max_length->unit) : "batches";
  AppendLogLocked(trial.id, absl::StrCat("master: adaptive_asha rung ", rung - ops.begin() + 1, " of ", ops.size(),
                         " (", rung_length, " ", unit, "): searcher metric ",
                         std::isfinite(metric) ? absl::StrCat(metric) : "missing",
                         standing.promoted ? " is among" : " is not among", " the best ",
                         standing.keep, " of ", standing.reached, " trials of its bracket there; ",
                         standing.promoted ? "it goes on"
                         : searcher.stop_once
                             ? "the trial stops"
                             : "the trial stops (it resumes if later trials promote it)"));
  logs_cv_.notify_all();
  if (!standing.promoted) {
    Allocation* running = allocations_.OfTrial(trial.id);
    if (running != nullptr && running->id == allocation) {
      StopAllocationLocked(*running, StopReason::kSearcher);
    }
  }
  // A new metric at this rung may lift a stopped trial into the best 1/divisor.
  COHORT_ASSIGN_OR_RETURN(bool promoted_any, PromoteStoppedLocked(searcher, siblings, rungs));
  if (promoted_any) ScheduleLocked();
  return absl::OkStatus();
}

absl::StatusOr<bool> Master::AshaPromoteLocked(const ExperimentRow& exp) {
  const config::SearcherConfig& searcher = SearcherLocked(exp);
  if (searcher.name != "adaptive_asha" || searcher.stop_once) return false;
  COHORT_ASSIGN_OR_RETURN(std::vector<TrialRow> siblings, db_->ListTrials(exp.id));
  COHORT_ASSIGN_OR_RETURN(RungMetrics rungs, RungMetricsLocked(siblings));
  return PromoteStoppedLocked(searcher, siblings, rungs);
}

absl::StatusOr<bool> Master::PromoteStoppedLocked(const config::SearcherConfig& searcher,
                                                  std::vector<TrialRow>& siblings,
                                                  const RungMetrics& rungs) {
  if (searcher.name != "adaptive_asha" || searcher.stop_once) return false;
  bool promoted_any = false;
  for (size_t i = 0; i < siblings.size(); ++i) {
    TrialRow& t = siblings[i];
    if (t.state != TrialState::kStopped) continue;
    // Where it stopped: its highest rung with a metric (never the last one).
    const std::vector<int64_t> ops = config::SearcherOperations(searcher, static_cast<int64_t>(i));
    int64_t at = -1;
    for (size_t k = 0; k + 1 < ops.size(); ++k) {
      if (rungs[i].count(ops[k])) at = ops[k];
    }
    if (at < 0) continue;
    const AshaStanding standing = Standing(searcher, rungs, i, at);
    if (!standing.promoted) continue;
    COHORT_RETURN_IF_ERROR(MoveTrialLocked(t, TrialState::kQueued));
    AppendLogLocked(t.id, absl::StrCat(
                  "master: adaptive_asha promotes the trial at ", at, " ",
                  searcher.max_length ? config::UnitName(searcher.max_length->unit) : "batches",
                  ": it is now among the best ", standing.keep, " of ", standing.reached,
                  " trials of its bracket there; it resumes from its checkpoint"));
    promoted_any = true;
  }
  if (promoted_any) logs_cv_.notify_all();
  return promoted_any;
}

}  // namespace cohort::master
