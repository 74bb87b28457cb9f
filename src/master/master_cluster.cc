// Master, part 2: agents, scheduling passes, allocations and what agents report about them
// (part 1, master.cc: experiments, trials, templates).
#include <algorithm>
#include <cmath>
#include <map>
#include <optional>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "common/logging.h"
#include "common/status_macros.h"
#include "config/asha.h"
#include "config/config_parser.h"
#include "config/length.h"
#include "config/yaml_json.h"
#include "master/master.h"

namespace cohort::master {
namespace {

constexpr int kErrorLines = 20;  // of a failed trial's log, kept with it

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

// --- agents -----------------------------------------------------------------------------------

std::vector<AgentState> Master::AgentStatesLocked() const {
  std::vector<AgentState> states;
  for (const auto& [id, a] : agents_) states.push_back(a.state);
  return states;
}

absl::Status Master::RegisterAgent(const Json& body) {
  if (!body.is_object() || !body.contains("id") || !body["id"].is_string() ||
      !body.contains("slots") || !body["slots"].is_number_integer() ||
      body["slots"].get<int>() < 1) {
    return absl::InvalidArgumentError(
        "agent registration needs {\"id\": string, \"slots\": integer >= 1, \"host\": string, "
        "\"port_range\": [lo, hi]}");
  }
  AgentRow row;
  row.id = body["id"].get<std::string>();
  row.slots = body["slots"].get<int>();
  row.host = body.value("host", "127.0.0.1");
  COHORT_RETURN_IF_ERROR(db_->UpsertAgent(row));
  COHORT_ASSIGN_OR_RETURN(std::vector<AgentRow> known, db_->ListAgents());
  bool enabled = true;
  for (const AgentRow& k : known) {
    if (k.id == row.id) enabled = k.enabled;
  }
  std::lock_guard<std::mutex> lock(mu_);
  // A re-registration of a known agent means it restarted: what it ran is gone.
  for (auto& [id, allocation] : allocations_) {
    for (size_t node = 0; node < allocation.agents.size(); ++node) {
      if (allocation.agents[node].first != row.id || allocation.exits[node]) continue;
      allocation.exits[node] = -1;
      if (allocation.stop == StopReason::kNone) StopAllocationLocked(allocation, StopReason::kLost);
    }
  }
  AgentLive& live = agents_[row.id];
  live.state = {row.id, row.slots, 0, enabled};
  live.host = row.host;
  if (body.contains("port_range") && body["port_range"].is_array() &&
      body["port_range"].size() == 2) {
    live.port_lo = body["port_range"][0].get<int>();
    live.port_hi = body["port_range"][1].get<int>();
  } else {
    live.port_lo = 29500;
    live.port_hi = 29599;
  }
  live.next_port = live.port_lo;
  live.last_seen = NowLocked();
  live.polling = 0;
  live.actions.clear();
  // Processes it still runs for allocations this master does not know (it restarted): stop
  // them, so they checkpoint and free the slots.
  if (body.contains("running") && body["running"].is_array()) {
    for (const Json& a : body["running"]) {
      if (a.is_string() && !allocations_.count(a.get<std::string>())) {
        live.actions.push_back({{"type", "stop"}, {"allocation", a}, {"mode", "preempt"}});
      }
    }
  }
  for (auto it = allocations_.begin(); it != allocations_.end();) {
    Allocation& a = it->second;
    ++it;
    if (std::all_of(a.exits.begin(), a.exits.end(), [](const auto& e) { return e.has_value(); })) {
      if (absl::Status s = FinishAllocationLocked(a); !s.ok()) {
        COHORT_LOG(ERROR) << "agent " << row.id << " re-registered: finishing allocation " << a.id
                          << ": " << s;
      }
    }
  }
  COHORT_LOG(INFO) << "agent " << row.id << " registered: " << row.slots << " slots at "
                   << row.host;
  ScheduleLocked();
  actions_cv_.notify_all();
  return absl::OkStatus();
}

absl::Status Master::Heartbeat(const std::string& agent_id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = agents_.find(agent_id);
  if (it == agents_.end()) {
    return absl::NotFoundError(absl::StrCat("agent ", agent_id, " is not registered"));
  }
  it->second.last_seen = NowLocked();
  return absl::OkStatus();
}

absl::StatusOr<Json> Master::ListAgents() {
  COHORT_ASSIGN_OR_RETURN(std::vector<AgentRow> known, db_->ListAgents());
  std::lock_guard<std::mutex> lock(mu_);
  Json out = Json::array();
  for (const AgentRow& k : known) {
    auto live = agents_.find(k.id);
    const bool connected = live != agents_.end();
    out.push_back({{"id", k.id},
                   {"host", k.host},
                   {"slots", k.slots},
                   {"used", connected ? live->second.state.used : 0},
                   {"enabled", k.enabled},
                   {"connected", connected}});
  }
  return Json{{"agents", out}};
}

absl::Status Master::SetAgentEnabled(const std::string& agent_id, bool enabled) {
  COHORT_RETURN_IF_ERROR(db_->SetAgentEnabled(agent_id, enabled));
  std::lock_guard<std::mutex> lock(mu_);
  if (auto it = agents_.find(agent_id); it != agents_.end()) it->second.state.enabled = enabled;
  ScheduleLocked();
  return absl::OkStatus();
}

absl::StatusOr<Json> Master::WaitForActions(const std::string& agent_id, absl::Duration wait) {
  std::unique_lock<std::mutex> lock(mu_);
  const auto deadline = absl::ToChronoTime(absl::Now() + wait);
  while (true) {
    auto it = agents_.find(agent_id);
    if (it == agents_.end()) {
      return absl::NotFoundError(
          absl::StrCat("agent ", agent_id, " is not registered (register again)"));
    }
    it->second.last_seen = NowLocked();
    if (!it->second.actions.empty() || stopping_ || std::chrono::system_clock::now() >= deadline) {
      Json actions = Json::array();
      for (Json& a : it->second.actions) actions.push_back(std::move(a));
      it->second.actions.clear();
      return Json{{"actions", actions}};
    }
    ++it->second.polling;
    actions_cv_.wait_until(lock, deadline);
    // The agent may have re-registered (or been dropped) while this poll waited.
    if (auto again = agents_.find(agent_id); again != agents_.end() && again->second.polling > 0) {
      --again->second.polling;
    }
  }
}

absl::StatusOr<Json> Master::ListSlots() {
  std::lock_guard<std::mutex> lock(mu_);
  Json out = Json::array();
  for (const auto& [id, agent] : agents_) {
    std::vector<std::pair<std::string, int64_t>> owners;  // allocation, trial per used slot
    for (const auto& [aid, a] : allocations_) {
      for (const auto& [agent_id, slots] : a.agents) {
        if (agent_id != id) continue;
        for (int s = 0; s < slots; ++s) owners.emplace_back(aid, a.trial_id);
      }
    }
    for (int s = 0; s < agent.state.slots; ++s) {
      Json slot = {{"agent", id}, {"slot", s}, {"enabled", agent.state.enabled}};
      if (s < static_cast<int>(owners.size())) {
        slot["allocation"] = owners[s].first;
        slot["trial_id"] = owners[s].second;
      }
      out.push_back(slot);
    }
  }
  return Json{{"slots", out}};
}

absl::StatusOr<Json> Master::ListTasks() {
  COHORT_ASSIGN_OR_RETURN(std::vector<TrialRow> trials, db_->ListTrials(std::nullopt));
  std::lock_guard<std::mutex> lock(mu_);
  Json out = Json::array();
  std::map<int64_t, ExperimentRow> experiments;
  for (const TrialRow& t : trials) {
    if (wire::IsTerminal(t.state)) continue;
    if (!experiments.count(t.experiment_id)) {
      COHORT_ASSIGN_OR_RETURN(experiments[t.experiment_id], db_->GetExperiment(t.experiment_id));
    }
    const ExperimentRow& e = experiments[t.experiment_id];
    Json task = {{"trial_id", t.id},
                 {"experiment_id", t.experiment_id},
                 {"slots", e.slots_per_trial},
                 {"priority", e.priority},
                 {"state", wire::Name(t.state)}};
    if (auto w = waiting_.find(t.id); w != waiting_.end() && t.state == TrialState::kQueued) {
      task["reason"] = w->second;
    } else if (t.state == TrialState::kPaused) {
      task["reason"] = "the experiment is paused";
    }
    if (auto a = trial_allocation_.find(t.id); a != trial_allocation_.end()) {
      Json agents = Json::array();
      for (const auto& [agent, slots] : allocations_.at(a->second).agents) agents.push_back(agent);
      task["agents"] = agents;
    }
    out.push_back(task);
  }
  return Json{{"tasks", out}};
}

// --- scheduling -------------------------------------------------------------------------------

void Master::ScheduleLocked() {
  absl::StatusOr<std::vector<TrialRow>> trials = db_->ListTrialsInStates({TrialState::kQueued, TrialState::kRunning});
  if (!trials.ok()) {
    COHORT_LOG(ERROR) << "scheduling: " << trials.status();
    return;
  }
  std::map<int64_t, ExperimentRow> experiments;
  std::map<int64_t, int64_t> active;  // experiment -> trials running or offered to the scheduler
  for (const TrialRow& t : *trials) {
    if (t.state == TrialState::kRunning) ++active[t.experiment_id];
  }
  std::vector<TaskRequest> queue;
  std::map<int64_t, std::string> held;  // trial -> why the experiment holds it back
  for (const TrialRow& t : *trials) {
    if (t.state != TrialState::kQueued) continue;
    if (!experiments.count(t.experiment_id)) {
      absl::StatusOr<ExperimentRow> e = db_->GetExperiment(t.experiment_id);
      if (!e.ok()) continue;
      experiments[t.experiment_id] = *e;
    }
    const ExperimentRow& e = experiments[t.experiment_id];
    if (e.state != ExperimentState::kActive) continue;
    const int64_t limit = SearcherLocked(e).max_concurrent_trials;
    if (limit > 0 && active[t.experiment_id] >= limit) {
      held[t.id] = absl::StrCat("the experiment already runs searcher.max_concurrent_trials (",
                                limit, ") trials");
      continue;
    }
    ++active[t.experiment_id];
    queue.push_back({std::to_string(t.id), e.slots_per_trial, e.priority, t.sequence});
  }
  ScheduleResult result = Schedule(AgentStatesLocked(), queue);
  waiting_ = std::move(held);
  for (const auto& [task, reason] : result.waiting) waiting_[std::stoll(task)] = reason;
  for (const Placement& p : result.placements) {
    if (absl::Status s = StartLocked(p); !s.ok()) {
      COHORT_LOG(ERROR) << "starting trial " << p.task_id << ": " << s;
    }
  }
}

absl::Status Master::StartLocked(const Placement& placement) {
  const int64_t trial_id = std::stoll(placement.task_id);
  COHORT_ASSIGN_OR_RETURN(TrialRow trial, db_->GetTrial(trial_id));
  COHORT_ASSIGN_OR_RETURN(ExperimentRow exp, db_->GetExperiment(trial.experiment_id));
  const config::SearcherConfig& searcher = SearcherLocked(exp);
  std::vector<int64_t> ops;
  std::string ops_note;
  if (searcher.name == "adaptive_asha") {
    COHORT_ASSIGN_OR_RETURN(std::vector<TrialRow> siblings, db_->ListTrials(exp.id));
    ops = config::SearcherOperations(searcher, IndexOf(siblings, trial_id));
    ops_note = absl::StrCat("; adaptive_asha rungs ", absl::StrJoin(ops, ", "), " ",
                            searcher.max_length ? config::UnitName(searcher.max_length->unit) : "");
  }
  Allocation allocation;
  allocation.id = absl::StrCat(trial_id, ".", boot_, ".", next_allocation_++);
  allocation.trial_id = trial_id;
  allocation.agents = placement.agents;
  allocation.exits.assign(placement.agents.size(), std::nullopt);
  AgentLive& chief = agents_.at(placement.agents[0].first);
  const int port = chief.next_port;
  chief.next_port = chief.next_port >= chief.port_hi ? chief.port_lo : chief.next_port + 1;
  const std::string chief_addr = absl::StrCat(chief.host, ":", port);
  std::vector<std::string> where;
  for (size_t node = 0; node < placement.agents.size(); ++node) {
    const auto& [agent_id, slots] = placement.agents[node];
    AgentLive& agent = agents_.at(agent_id);
    agent.state.used += slots;
    where.push_back(absl::StrCat(agent_id, " (", slots, " slot", slots == 1 ? "" : "s", ")"));
    PushActionLocked(agent_id,
                     {{"type", "start"},
                      {"allocation", allocation.id},
                      {"trial_id", trial_id},
                      {"experiment_id", exp.id},
                      {"node_rank", node},
                      {"nnodes", placement.agents.size()},
                      {"slots", slots},
                      {"chief_addr", chief_addr},
                      {"config", exp.config_yaml},
                      {"hparams", trial.hparams_json},
                      {"seed", trial.seed},
                      {"latest_checkpoint", trial.latest_checkpoint},
                      {"context", absl::StrCat("/api/v1/experiments/", exp.id, "/context")},
                      {"reports", node == 0},
                      {"searcher_ops", ops}});
  }
  COHORT_RETURN_IF_ERROR(MoveTrialLocked(trial, TrialState::kRunning));
  COHORT_RETURN_IF_ERROR(
      db_->AppendLogs(trial_id, {{-1, absl::StrCat("master: allocation ", allocation.id, " on ",
                                                   absl::StrJoin(where, ", "),
                                                   trial.latest_checkpoint.empty()
                                                       ? ""
                                                       : ", resuming from checkpoint " +
                                                             trial.latest_checkpoint,
                                                   ops_note)}})
          .status());
  trial_allocation_[trial_id] = allocation.id;
  last_allocation_[trial_id] = allocation.id;
  allocations_[allocation.id] = std::move(allocation);
  return absl::OkStatus();
}

void Master::AppendLogLocked(int64_t trial_id, const std::string& line) {
  absl::StatusOr<int64_t> seq = db_->AppendLogs(trial_id, {{-1, line}});
  // The line is the master's account of a decision already taken and stored; losing it must
  // not undo the decision, but it must not vanish silently either.
  if (!seq.ok()) {
    COHORT_LOG(ERROR) << TrialName(trial_id) << ": storing the log line '" << line
                      << "': " << seq.status();
  }
}

void Master::PushActionLocked(const std::string& agent_id, Json action) {
  auto it = agents_.find(agent_id);
  if (it == agents_.end()) return;
  it->second.actions.push_back(std::move(action));
  actions_cv_.notify_all();
}

void Master::StopAllocationLocked(Allocation& allocation, StopReason reason) {
  if (allocation.stop == StopReason::kNone) allocation.stop = reason;
  for (size_t node = 0; node < allocation.agents.size(); ++node) {
    if (allocation.exits[node]) continue;
    PushActionLocked(allocation.agents[node].first,
                     {{"type", "stop"},
                      {"allocation", allocation.id},
                      {"mode", reason == StopReason::kKill ? "kill" : "preempt"}});
  }
}

// --- reports from agents ----------------------------------------------------------------------

absl::Status Master::AllocationLogs(const std::string& allocation, const Json& body) {
  if (!body.is_object() || !body.contains("trial_id") || !body.contains("lines") ||
      !body["lines"].is_array()) {
    return absl::InvalidArgumentError("log batch needs {\"trial_id\": N, \"lines\": [...]}");
  }
  if (!body["trial_id"].is_number_integer()) {
    return absl::InvalidArgumentError("log batch: \"trial_id\" must be an integer");
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    // Lines of a superseded run are still the trial's: kept.
    COHORT_RETURN_IF_ERROR(
        CheckAllocationLocked(allocation, body["trial_id"].get<int64_t>(), /*latest=*/false));
  }
  std::vector<std::pair<int, std::string>> lines;
  for (const Json& l : body["lines"]) {
    lines.emplace_back(l.value("rank", -1), l.value("line", ""));
  }
  COHORT_RETURN_IF_ERROR(db_->AppendLogs(body["trial_id"].get<int64_t>(), lines).status());
  logs_cv_.notify_all();
  std::lock_guard<std::mutex> lock(mu_);
  if (!allocations_.count(allocation)) {
    return absl::NotFoundError(absl::StrCat("allocation ", allocation, " is not running"));
  }
  return absl::OkStatus();
}

absl::Status Master::AllocationReports(const std::string& allocation, const Json& body) {
  if (!body.is_object() || !body.contains("trial_id") || !body["trial_id"].is_number_integer()) {
    return absl::InvalidArgumentError("reports need {\"trial_id\": N, \"lines\": [...]}");
  }
  const int64_t trial_id = body["trial_id"].get<int64_t>();
  {
    std::lock_guard<std::mutex> lock(mu_);
    COHORT_RETURN_IF_ERROR(CheckAllocationLocked(allocation, trial_id, /*latest=*/true));
  }
  COHORT_ASSIGN_OR_RETURN(TrialRow trial, db_->GetTrial(trial_id));
  std::vector<MetricRow> metrics;
  std::vector<std::pair<double, double>> completed;  // (length, searcher metric)
  for (const Json& line : body.value("lines", Json::array())) {
    const std::string kind = line.value("kind", "");
    if (kind == "training" || kind == "validation") {
      metrics.push_back({trial_id, kind, line.value("steps_completed", int64_t{0}),
                         line.value("metrics", Json::object()).dump(), line.value("time", 0.0)});
    } else if (kind == "checkpoint") {
      absl::Status s = db_->InsertCheckpoint(
          {line.value("storage_id", ""), trial_id, line.value("steps_completed", int64_t{0}),
           line.value("path", ""), line.value("metadata", Json::object()).dump()});
      if (!s.ok() && !absl::IsAlreadyExists(s)) return s;
      trial.latest_checkpoint = line.value("storage_id", "");
    } else if (kind == "completed") {
      // A NaN metric arrives as null.
      const bool has_metric =
          line.contains("searcher_metric") && line["searcher_metric"].is_number();
      if (has_metric) trial.searcher_metric = line["searcher_metric"].get<double>();
      if (line.contains("length") && line["length"].is_number()) {
        completed.emplace_back(line["length"].get<double>(),
                               has_metric ? *trial.searcher_metric : std::nan(""));
      }
    }
  }
  COHORT_RETURN_IF_ERROR(db_->InsertMetrics(metrics));
  if (body.contains("progress") && body["progress"].is_object()) {
    const Json& p = body["progress"];
    if (p.contains("completed") && p.value("unit", std::string("batches")) == "batches") {
      trial.batches = static_cast<int64_t>(p["completed"].get<double>());
      trial.total_batches = static_cast<int64_t>(p.value("total", 0.0));
    }
  }
  std::lock_guard<std::mutex> lock(mu_);
  // Keep the state the master decided; only the report fields change here.
  COHORT_ASSIGN_OR_RETURN(TrialRow current, db_->GetTrial(trial_id));
  current.latest_checkpoint = trial.latest_checkpoint;
  current.searcher_metric = trial.searcher_metric;
  current.batches = trial.batches;
  current.total_batches = trial.total_batches;
  COHORT_RETURN_IF_ERROR(db_->UpdateTrial(current));
  for (const auto& [length, metric] : completed) {
    COHORT_RETURN_IF_ERROR(AshaRungLocked(current, length, metric, allocation));
  }
  return absl::OkStatus();
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
    auto running = trial_allocation_.find(trial.id);
    if (running != trial_allocation_.end() && running->second == allocation) {
      StopAllocationLocked(allocations_.at(allocation), StopReason::kSearcher);
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

absl::Status Master::CheckAllocationLocked(const std::string& allocation, int64_t trial_id,
                                           bool latest) const {
  // Allocation ids are "<trial>.<boot>.<n>" (StartLocked).
  if (!absl::StartsWith(allocation, absl::StrCat(trial_id, "."))) {
    return absl::InvalidArgumentError(
        absl::StrCat("allocation ", allocation, " does not belong to trial ", trial_id));
  }
  if (!latest) return absl::OkStatus();
  auto it = last_allocation_.find(trial_id);
  if (it != last_allocation_.end() && it->second != allocation) {
    return absl::FailedPreconditionError(absl::StrCat("allocation ", allocation, " of trial ",
                                                      trial_id, " was superseded by allocation ",
                                                      it->second, ": its reports are ignored"));
  }
  return absl::OkStatus();
}

absl::Status Master::AllocationExit(const std::string& allocation_id, int node, int status) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = allocations_.find(allocation_id);
  if (it == allocations_.end()) {
    return absl::NotFoundError(absl::StrCat("allocation ", allocation_id, " is not running"));
  }
  Allocation& a = it->second;
  if (node < 0 || node >= static_cast<int>(a.exits.size())) {
    return absl::InvalidArgumentError(
        absl::StrCat("allocation ", allocation_id, " has no node ", node));
  }
  a.exits[node] = status;
  AppendLogLocked(a.trial_id, absl::StrCat("master: node ", node, " (agent ", a.agents[node].first,
                                           ") exited with status ", status));
  logs_cv_.notify_all();
  if (status != 0 && a.stop == StopReason::kNone) StopAllocationLocked(a, StopReason::kFailure);
  if (std::all_of(a.exits.begin(), a.exits.end(), [](const auto& e) { return e.has_value(); })) {
    return FinishAllocationLocked(a);
  }
  return absl::OkStatus();
}

absl::Status Master::FinishAllocationLocked(Allocation& allocation) {
  const Allocation a = allocation;  // `allocation` is erased below
  allocations_.erase(a.id);
  trial_allocation_.erase(a.trial_id);
  for (const auto& [agent_id, slots] : a.agents) {
    if (auto agent = agents_.find(agent_id); agent != agents_.end()) {
      agent->second.state.used = std::max(0, agent->second.state.used - slots);
    }
  }
  COHORT_ASSIGN_OR_RETURN(TrialRow trial, db_->GetTrial(a.trial_id));
  COHORT_ASSIGN_OR_RETURN(ExperimentRow exp, db_->GetExperiment(trial.experiment_id));
  const bool all_ok = std::all_of(a.exits.begin(), a.exits.end(),
                                  [](const auto& e) { return e.has_value() && *e == 0; });
  const ExitDecision decision =
      DecideAfterExit({.stop = a.stop,
                       .all_exited_ok = all_ok,
                       .experiment = exp.state,
                       .stop_once = SearcherLocked(exp).stop_once,
                       .restarts = trial.restarts,
                       .max_restarts = exp.max_restarts});
  COHORT_RETURN_IF_ERROR(Transition(trial.state, decision.next, TrialName(trial.id)));
  if (decision.restart) ++trial.restarts;
  const std::string note = ExitNoteLocked(a.stop, exp, trial, decision);
  COHORT_RETURN_IF_ERROR(db_->UpdateTrial(trial));
  if (!note.empty()) AppendLogLocked(a.trial_id, note);
  // A trial stopped by the searcher may already be among the best again.
  COHORT_RETURN_IF_ERROR(AshaPromoteLocked(exp).status());
  COHORT_RETURN_IF_ERROR(UpdateExperimentStateLocked(trial.experiment_id));
  logs_cv_.notify_all();
  ScheduleLocked();
  return absl::OkStatus();
}

std::string Master::ExitNoteLocked(StopReason stop, const ExperimentRow& exp, TrialRow& trial,
                                   const ExitDecision& decision) {
  if (stop == StopReason::kSearcher && decision.next != TrialState::kCanceled) {
    return absl::StrCat("master: stopped early by adaptive_asha after ", trial.batches,
                        " batches; it is ", wire::Name(decision.next));
  }
  if (decision.restart) {
    return absl::StrCat(
        "master: the trial failed; restart ", trial.restarts, " of ", exp.max_restarts,
        trial.latest_checkpoint.empty() ? " from the beginning"
                                        : " from checkpoint " + trial.latest_checkpoint);
  }
  if (decision.next != TrialState::kError) return "";
  absl::StatusOr<std::vector<LogRow>> logs = db_->ListLogs(trial.id, 0, std::nullopt, 1 << 30);
  if (logs.ok()) {
    std::vector<std::string> last;
    for (size_t i = logs->size() > kErrorLines ? logs->size() - kErrorLines : 0; i < logs->size();
         ++i) {
      last.push_back((*logs)[i].line);
    }
    trial.error_lines = absl::StrJoin(last, "\n");
  } else {
    COHORT_LOG(ERROR) << TrialName(trial.id) << ": reading its last log lines: " << logs.status();
  }
  return absl::StrCat(
      "master: the trial failed",
      exp.max_restarts > 0 ? absl::StrCat(" after ", trial.restarts, " restart(s)") : "",
      "; it is ERROR");
}

absl::Status Master::UpdateExperimentStateLocked(int64_t experiment_id) {
  COHORT_ASSIGN_OR_RETURN(ExperimentRow exp, db_->GetExperiment(experiment_id));
  if (exp.state != ExperimentState::kActive) return absl::OkStatus();
  COHORT_ASSIGN_OR_RETURN(std::vector<TrialRow> trials, db_->ListTrials(experiment_id));
  // Trials the searcher stopped wait for a promotion only while others still run.
  const bool settled = std::none_of(trials.begin(), trials.end(), [](const TrialRow& t) {
    return t.state == TrialState::kQueued || t.state == TrialState::kRunning;
  });
  for (TrialRow& t : trials) {
    if (!settled || t.state != TrialState::kStopped) continue;
    COHORT_RETURN_IF_ERROR(MoveTrialLocked(t, TrialState::kCompleted));
    AppendLogLocked(t.id, "master: adaptive_asha promoted no further trial; the trial is COMPLETED");
  }
  bool all_done = true, any_error = false;
  for (const TrialRow& t : trials) {
    all_done = all_done && wire::IsTerminal(t.state);
    any_error = any_error || t.state == TrialState::kError;
  }
  if (!all_done) return absl::OkStatus();
  return MoveExperimentLocked(exp,
                              any_error ? ExperimentState::kError : ExperimentState::kCompleted);
}

void Master::MonitorAgents() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stopping_) {
    logs_cv_.wait_for(lock, std::chrono::seconds(1));
    if (stopping_) break;
    ExpireLostAgentsLocked();
  }
}

void Master::ExpireLostAgents() {
  std::lock_guard<std::mutex> lock(mu_);
  ExpireLostAgentsLocked();
}

void Master::ExpireLostAgentsLocked() {
  const absl::Time now = NowLocked();
  std::vector<std::string> lost;
  for (const auto& [id, agent] : agents_) {
    if (agent.polling == 0 && now - agent.last_seen > options_.agent_timeout) lost.push_back(id);
  }
  for (const std::string& id : lost) {
    COHORT_LOG(WARNING) << "agent " << id << " lost: no contact for "
                        << absl::FormatDuration(options_.agent_timeout);
    agents_.erase(id);
    std::vector<std::string> finished;
    for (auto& [aid, a] : allocations_) {
      for (size_t node = 0; node < a.agents.size(); ++node) {
        if (a.agents[node].first != id || a.exits[node]) continue;
        a.exits[node] = -1;
        AppendLogLocked(a.trial_id, absl::StrCat("master: agent ", id, " lost (no contact for ",
                                           absl::FormatDuration(options_.agent_timeout), ")"));
        if (a.stop == StopReason::kNone) StopAllocationLocked(a, StopReason::kLost);
      }
      if (std::all_of(a.exits.begin(), a.exits.end(),
                      [](const auto& e) { return e.has_value(); })) {
        finished.push_back(aid);
      }
    }
    for (const std::string& aid : finished) {
      if (auto it = allocations_.find(aid); it != allocations_.end()) {
        if (absl::Status s = FinishAllocationLocked(it->second); !s.ok()) {
          COHORT_LOG(ERROR) << "agent " << id << " lost: finishing allocation " << aid << ": "
                            << s;
        }
      }
    }
  }
  if (!lost.empty()) ScheduleLocked();
}

}  // namespace cohort::master
