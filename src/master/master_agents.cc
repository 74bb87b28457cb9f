// Master: agents (registration, liveness, long polls for actions) and what the cluster looks
// like from them (agents, slots, tasks). The live state is in agents_ (agents/agent_registry.h)
// and allocations_ (agents/allocations.h), under mu_.
#include <algorithm>
#include <map>

#include "absl/strings/str_cat.h"
#include "cohort/status.h"
#include "common/logging.h"
#include "master/master.h"

namespace cohort::master {

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
  int port_lo = 29500, port_hi = 29599;
  if (body.contains("port_range") && body["port_range"].is_array() &&
      body["port_range"].size() == 2 && body["port_range"][0].is_number_integer() &&
      body["port_range"][1].is_number_integer()) {
    port_lo = body["port_range"][0].get<int>();
    port_hi = body["port_range"][1].get<int>();
  }
  COHORT_RETURN_IF_ERROR(db_->UpsertAgent(row));
  COHORT_ASSIGN_OR_RETURN(std::vector<AgentRow> known, db_->ListAgents());
  bool enabled = true;
  for (const AgentRow& k : known) {
    if (k.id == row.id) enabled = k.enabled;
  }
  std::lock_guard<std::mutex> lock(mu_);
  // A re-registration of a known agent means it restarted: what it ran is gone.
  FailAgentRunsLocked(row.id, absl::StrCat("agent ", row.id, " restarted"));
  AgentLive& live = agents_.Register(row.id, row.slots, row.host, port_lo, port_hi, enabled);
  // Processes it still runs for allocations this master does not know (it restarted): stop
  // them, so they checkpoint and free the slots.
  if (body.contains("running") && body["running"].is_array()) {
    for (const Json& a : body["running"]) {
      if (a.is_string() && allocations_.Find(a.get<std::string>()) == nullptr) {
        live.actions.push_back({{"type", "stop"}, {"allocation", a}, {"mode", "preempt"}});
      }
    }
  }
  COHORT_LOG(INFO) << "agent " << row.id << " registered: " << row.slots << " slots at "
                   << row.host;
  ScheduleLocked();
  actions_cv_.notify_all();
  return absl::OkStatus();
}

void Master::FailAgentRunsLocked(const std::string& agent_id, const std::string& why) {
  for (const std::string& id : allocations_.MarkAgentLost(agent_id)) {
    Allocation* a = allocations_.Find(id);
    AppendLogLocked(a->trial_id, absl::StrCat("master: ", why));
    if (a->stop == StopReason::kNone) StopAllocationLocked(*a, StopReason::kLost);
    if (!a->AllExited()) continue;
    if (absl::Status s = FinishAllocationLocked(*a); !s.ok()) {
      COHORT_LOG(ERROR) << why << ": finishing allocation " << id << ": " << s;
    }
  }
}

absl::Status Master::Heartbeat(const std::string& agent_id) {
  std::lock_guard<std::mutex> lock(mu_);
  return agents_.Touch(agent_id);
}

absl::StatusOr<Json> Master::ListAgents() {
  COHORT_ASSIGN_OR_RETURN(std::vector<AgentRow> known, db_->ListAgents());
  std::lock_guard<std::mutex> lock(mu_);
  Json out = Json::array();
  for (const AgentRow& k : known) {
    const AgentLive* live = agents_.Find(k.id);
    out.push_back({{"id", k.id},
                   {"host", k.host},
                   {"slots", k.slots},
                   {"used", live != nullptr ? live->state.used : 0},
                   {"enabled", k.enabled},
                   {"connected", live != nullptr}});
  }
  return Json{{"agents", out}};
}

absl::Status Master::SetAgentEnabled(const std::string& agent_id, bool enabled) {
  COHORT_RETURN_IF_ERROR(db_->SetAgentEnabled(agent_id, enabled));
  std::lock_guard<std::mutex> lock(mu_);
  if (AgentLive* live = agents_.Find(agent_id)) live->state.enabled = enabled;
  ScheduleLocked();
  return absl::OkStatus();
}

absl::StatusOr<Json> Master::WaitForActions(const std::string& agent_id, absl::Duration wait) {
  std::unique_lock<std::mutex> lock(mu_);
  const auto deadline = absl::ToChronoTime(absl::Now() + wait);
  while (true) {
    COHORT_RETURN_IF_ERROR(agents_.Touch(agent_id));
    AgentLive& agent = *agents_.Find(agent_id);
    if (!agent.actions.empty() || stopping_ || std::chrono::system_clock::now() >= deadline) {
      return Json{{"actions", agents_.TakeActions(agent)}};
    }
    ++agent.polling;
    actions_cv_.wait_until(lock, deadline);
    // The agent may have re-registered (or been dropped) while this poll waited.
    if (AgentLive* again = agents_.Find(agent_id); again != nullptr && again->polling > 0) {
      --again->polling;
    }
  }
}

absl::StatusOr<Json> Master::ListSlots() {
  std::lock_guard<std::mutex> lock(mu_);
  Json out = Json::array();
  for (const auto& [id, agent] : agents_.agents()) {
    const std::vector<std::pair<std::string, int64_t>> owners = allocations_.SlotOwners(id);
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
    if (const Allocation* a = allocations_.OfTrial(t.id)) {
      Json agents = Json::array();
      for (const auto& [agent, slots] : a->agents) agents.push_back(agent);
      task["agents"] = agents;
    }
    out.push_back(task);
  }
  return Json{{"tasks", out}};
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
  const std::vector<std::string> lost = agents_.Expired();
  for (const std::string& id : lost) {
    const std::string why = absl::StrCat("agent ", id, " lost (no contact for ",
                                         absl::FormatDuration(agents_.timeout()), ")");
    COHORT_LOG(WARNING) << why;
    agents_.Remove(id);
    FailAgentRunsLocked(id, why);
  }
  if (!lost.empty()) ScheduleLocked();
}

}  // namespace cohort::master
