#include "master/slurm/slurm_manager.h"

#include <algorithm>
#include <csignal>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "cohort/status.h"
#include "common/logging.h"
#include "config/yaml_json.h"

namespace cohort::master::slurm_rm {
namespace {

// A released job still live after this long is cancelled (its nodes have all reported their
// exits: srun is only finishing).
constexpr absl::Duration kReleaseGrace = absl::Seconds(30);
constexpr absl::Duration kOrphanSweepEvery = absl::Seconds(30);

// The single-quoted shell word for `text`.
std::string ShellQuote(const std::string& text) {
  std::string out = "'";
  for (char c : text) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  return out + "'";
}

// The experiment's slurm.sbatch_args and resources.resource_pool from its config (validated at
// creation: a missing or odd value is left out here).
struct ExperimentSlurm {
  std::vector<std::string> sbatch_args;
  std::string partition;
  std::string gpu_type;
};

ExperimentSlurm ReadExperimentSlurm(const std::string& config_yaml) {
  ExperimentSlurm out;
  absl::StatusOr<config::Json> tree = config::ParseYaml(config_yaml);
  if (!tree.ok() || !tree->is_object()) return out;
  if (auto s = tree->find("slurm"); s != tree->end() && s->is_object()) {
    if (auto a = s->find("sbatch_args"); a != s->end() && a->is_array()) {
      for (const config::Json& arg : *a) {
        if (arg.is_string()) out.sbatch_args.push_back(arg.get<std::string>());
      }
    }
    if (auto g = s->find("gpu_type"); g != s->end() && g->is_string()) {
      out.gpu_type = g->get<std::string>();
    }
  }
  if (auto r = tree->find("resources"); r != tree->end() && r->is_object()) {
    if (auto p = r->find("resource_pool"); p != r->end() && p->is_string()) {
      out.partition = p->get<std::string>();
    }
  }
  return out;
}

}  // namespace

const char* JobPhaseName(JobPhase phase) {
  switch (phase) {
    case JobPhase::kSubmitting: return "SUBMITTING";
    case JobPhase::kRestored: return "RESTORED";
    case JobPhase::kPending: return "PENDING";
    case JobPhase::kRunning: return "RUNNING";
    case JobPhase::kEnded: return "ENDED";
  }
  return "?";
}

absl::Status CheckTransition(JobPhase from, JobPhase to) {
  using P = JobPhase;
  static const std::set<std::pair<P, P>> kMoves = {
      {P::kSubmitting, P::kPending}, {P::kSubmitting, P::kEnded}, {P::kRestored, P::kPending},
      {P::kRestored, P::kRunning},   {P::kRestored, P::kEnded},   {P::kPending, P::kRunning},
      {P::kPending, P::kEnded},      {P::kRunning, P::kEnded},
  };
  if (from == to || kMoves.count({from, to}) > 0) return absl::OkStatus();
  return absl::FailedPreconditionError(absl::StrCat("a Slurm job cannot move from ",
                                                    JobPhaseName(from), " to ",
                                                    JobPhaseName(to)));
}

std::string SlurmManager::NodeId(int64_t trial_id, int rank) {
  return absl::StrCat("slurm-t", trial_id, "-", rank);
}

SlurmManager::SlurmManager(SlurmManagerOptions options, rm::Events& events)
    : options_(std::move(options)),
      events_(events),
      client_(options_.slurm),
      created_(absl::Now()) {}

absl::StatusOr<std::unique_ptr<SlurmManager>> SlurmManager::Create(SlurmManagerOptions options,
                                                                   rm::Events& events) {
  if (options.slots_per_node < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("slots per Slurm node must be at least 1, got ", options.slots_per_node));
  }
  if (options.master_url.empty() || options.node_program.empty()) {
    return absl::InvalidArgumentError(
        "a Slurm resource manager needs the master's URL as the nodes reach it and the path of "
        "cohort-slurm-node on the nodes");
  }
  std::unique_ptr<SlurmManager> manager(new SlurmManager(std::move(options), events));
  COHORT_RETURN_IF_ERROR(manager->client_.Check());
  absl::StatusOr<std::vector<slurm::NodeInfo>> nodes =
      manager->client_.Nodes(manager->options_.partition);
  if (!nodes.ok()) return nodes.status();
  if (nodes->empty()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "Slurm shows no node in partition '", manager->options_.partition,
        "': check --slurm-partition against `sinfo`"));
  }
  {
    MutexLock lock(&manager->mu_);
    manager->nodes_ = std::move(*nodes);
  }
  manager->monitor_ = std::thread([m = manager.get()] { m->Monitor(); });
  return manager;
}

SlurmManager::~SlurmManager() {
  Shutdown();
  if (monitor_.joinable()) monitor_.join();
}

void SlurmManager::Shutdown() {
  MutexLock lock(&mu_);
  stopping_ = true;
  woken_ = true;
  wake_.SignalAll();
}

std::vector<slurm::NodeInfo> SlurmManager::Nodes() const {
  MutexLock lock(&mu_);
  return nodes_;
}

std::vector<AgentState> SlurmManager::Offers() const {
  MutexLock lock(&mu_);
  std::vector<AgentState> out;
  for (const slurm::NodeInfo& node : nodes_) {
    AgentState state{.id = node.name, .slots = options_.slots_per_node, .enabled = node.usable};
    state.used = std::min(static_cast<int>(SlotOwnersLocked(node.name).size()), state.slots);
    out.push_back(std::move(state));
  }
  return out;
}

namespace {

// How a task of `slots` splits into nodes of `per_node` slots, or why it never can.
absl::StatusOr<std::vector<int>> Split(int slots, int per_node, size_t partition_nodes) {
  if (slots <= per_node) return std::vector<int>{slots};
  if (slots % per_node != 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("needs ", slots, " slots: not a multiple of the ", per_node,
                     " slots per Slurm node (cohort-master --slurm-slots-per-node)"));
  }
  const size_t nodes = static_cast<size_t>(slots / per_node);
  if (partition_nodes > 0 && nodes > partition_nodes) {
    return absl::FailedPreconditionError(
        absl::StrCat("needs ", slots, " slots: ", nodes, " Slurm nodes of ", per_node,
                     ", the partition has ", partition_nodes));
  }
  return std::vector<int>(nodes, per_node);
}

}  // namespace

ScheduleResult SlurmManager::Place(const ScheduleInput& input) const {
  ScheduleResult result;
  for (const TaskRequest& task : input.queue) {
    absl::StatusOr<std::vector<int>> split =
        Split(task.slots, options_.slots_per_node, input.agents.size());
    if (!split.ok()) {
      result.waiting[task.id] = std::string(split.status().message());
      continue;
    }
    int64_t trial_id = 0;
    if (!absl::SimpleAtoi(task.id, &trial_id)) continue;
    Placement placement{.task_id = task.id};
    for (size_t rank = 0; rank < split->size(); ++rank) {
      placement.agents.emplace_back(NodeId(trial_id, static_cast<int>(rank)), (*split)[rank]);
    }
    result.placements.push_back(std::move(placement));
  }
  return result;
}

// `pool` names a partition (resources.resource_pool; checked by the job's sbatch): the size
// check uses the default partition's nodes.
absl::Status SlurmManager::Feasible(int slots, const std::string& /*pool*/) const {
  size_t nodes = 0;
  {
    MutexLock lock(&mu_);
    nodes = nodes_.size();
  }
  return Split(slots, options_.slots_per_node, nodes).status();
}

bool SlurmManager::Fits(const Placement& /*placement*/,
                        const std::set<std::string>& /*excluded*/) const {
  return true;  // Slurm decides where; what has no room pends there
}

std::optional<std::string> SlurmManager::Waiting(const std::string& allocation) const {
  MutexLock lock(&mu_);
  const auto it = jobs_.find(allocation);
  if (it == jobs_.end()) return std::nullopt;
  const Job& job = it->second;
  switch (job.phase) {
    case JobPhase::kSubmitting: return "being submitted to Slurm";
    case JobPhase::kRestored: return "the master restarted: looking up its Slurm job";
    case JobPhase::kPending:
      if (job.reason.empty() || job.reason == "None") {
        return absl::StrCat("Slurm job ", job.job_id, " is pending");
      }
      return absl::StrCat("Slurm job ", job.job_id, " is pending (Slurm's reason: ", job.reason,
                          ")");
    default: return std::nullopt;
  }
}

absl::StatusOr<wire::StartAction> SlurmManager::NodeStart(const std::string& allocation,
                                                          int node_rank, const std::string& host) {
  MutexLock lock(&mu_);
  const auto it = jobs_.find(allocation);
  if (it == jobs_.end() || it->second.released || it->second.phase == JobPhase::kEnded) {
    return absl::NotFoundError(absl::StrCat("allocation ", allocation, " has no Slurm job"));
  }
  Job& job = it->second;
  if (job.starts.empty()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "allocation ", allocation, " was submitted by an earlier run of the master: its start "
        "actions are gone, so its nodes cannot start (the allocation is queued again)"));
  }
  if (node_rank < 0 || node_rank >= static_cast<int>(job.starts.size())) {
    return absl::NotFoundError(absl::StrCat("allocation ", allocation, " has no node ",
                                            node_rank));
  }
  if (job.phase == JobPhase::kPending) Move(job, JobPhase::kRunning);  // it runs: a node asks
  if (job.slurm_nodes.size() < job.starts.size()) job.slurm_nodes.resize(job.starts.size());
  if (job.slurm_nodes[node_rank].empty()) job.slurm_nodes[node_rank] = host;
  return job.starts[node_rank];
}


std::string SlurmManager::Script() const {
  // The batch step runs on the job's first node: it picks the rendezvous port there and starts
  // one node process per node through srun (cohort-slurm-node --help).
  return absl::StrCat("#!/bin/sh\n# Cohort: one allocation of a trial (cohort-slurm-node --help)\n",
                      "exec ", ShellQuote(options_.node_program), " job\n");
}

absl::StatusOr<slurm::JobSpec> SlurmManager::SpecFor(const std::vector<wire::StartAction>& starts,
                                                     const Placement& placement) const {
  const wire::StartAction& first = starts[0];
  const ExperimentSlurm exp = ReadExperimentSlurm(first.config);
  if (absl::Status args = slurm::CheckSbatchArgs(exp.sbatch_args); !args.ok()) {
    return absl::FailedPreconditionError(
        absl::StrCat("slurm.sbatch_args: ", args.message()));
  }
  slurm::JobSpec spec;
  spec.name = absl::StrCat(options_.job_prefix, "-", first.allocation);
  spec.partition = exp.partition.empty() ? options_.partition : exp.partition;
  spec.nodes = static_cast<int>(placement.agents.size());
  spec.tasks_per_node = 1;
  const int slots = placement.agents[0].second;
  if (options_.slot_type == SlotType::kCuda) {
    spec.gres = exp.gpu_type.empty() ? absl::StrCat("gpu:", slots)
                                     : absl::StrCat("gpu:", exp.gpu_type, ":", slots);
  } else {
    spec.cpus_per_task = slots;
  }
  spec.sbatch_args = exp.sbatch_args;  // Submit adds --no-requeue: never run twice
  spec.script = Script();
  spec.env = {{"COHORT_MASTER", options_.master_url},
              {"COHORT_ALLOCATION", first.allocation},
              {"COHORT_ALLOCATION_TOKEN", first.allocation_token},
              {"COHORT_SLURM_NNODES", absl::StrCat(spec.nodes)}};
  if (!options_.tls_ca_file.empty()) spec.env["COHORT_TLS_CA"] = options_.tls_ca_file;
  if (!options_.node_work_dir.empty()) spec.env["COHORT_NODE_WORK_DIR"] = options_.node_work_dir;
  if (options_.slot_type == SlotType::kCuda) spec.env["COHORT_SLOT_TYPE"] = "cuda";
  spec.output = "/dev/null";  // every line of the trial's goes to the master
  return spec;
}

absl::Status SlurmManager::Start(const Placement& placement,
                                 std::vector<wire::StartAction> starts) {
  if (starts.empty() || starts.size() != placement.agents.size()) {
    return absl::InvalidArgumentError(absl::StrCat("a start of ", starts.size(), " node(s) on ",
                                                   placement.agents.size()));
  }
  COHORT_ASSIGN_OR_RETURN(slurm::JobSpec spec, SpecFor(starts, placement));
  Job job{.trial_id = starts[0].trial_id, .nodes = placement.agents, .spec = std::move(spec)};
  job.starts = std::move(starts);
  MutexLock lock(&mu_);
  jobs_[job.starts[0].allocation] = std::move(job);
  woken_ = true;
  wake_.SignalAll();
  return absl::OkStatus();
}

void SlurmManager::Stop(const std::string& allocation, const std::string& /*where*/,
                        wire::StopMode mode) {
  MutexLock lock(&mu_);
  const auto it = jobs_.find(allocation);
  if (it == jobs_.end()) return;
  Job& job = it->second;
  if (!job.stop || mode == wire::StopMode::kKill) job.stop = mode;  // a kill overrides
  woken_ = true;
  wake_.SignalAll();
}

void SlurmManager::Release(const std::string& allocation) {
  MutexLock lock(&mu_);
  const auto it = jobs_.find(allocation);
  if (it == jobs_.end()) return;
  Job& job = it->second;
  if (job.phase == JobPhase::kEnded || job.phase == JobPhase::kSubmitting) {
    jobs_.erase(it);  // nothing of it runs (a submission not yet made is never made)
  } else if (!job.released) {
    job.released = true;
    job.released_at = absl::Now();
  }
  woken_ = true;
  wake_.SignalAll();
}

void SlurmManager::Restore(const std::string& allocation, int64_t trial_id,
                           const std::vector<std::pair<std::string, int>>& nodes) {
  MutexLock lock(&mu_);
  Job job{.trial_id = trial_id, .nodes = nodes, .phase = JobPhase::kRestored};
  jobs_[allocation] = std::move(job);
  woken_ = true;
  wake_.SignalAll();
}

std::vector<rm::LostNode> SlurmManager::ExpireLost() {
  MutexLock lock(&mu_);
  std::vector<rm::LostNode> out;
  out.swap(lost_);
  return out;
}

std::vector<std::pair<std::string, int64_t>> SlurmManager::SlotOwnersLocked(
    const std::string& node) const {
  std::vector<std::pair<std::string, int64_t>> owners;
  for (const auto& [id, job] : jobs_) {
    for (size_t i = 0; i < job.slurm_nodes.size() && i < job.nodes.size(); ++i) {
      if (job.slurm_nodes[i] != node) continue;
      for (int s = 0; s < job.nodes[i].second; ++s) owners.emplace_back(id, job.trial_id);
    }
  }
  return owners;
}

wire::SlotList SlurmManager::Slots() const {
  MutexLock lock(&mu_);
  wire::SlotList out;
  for (const slurm::NodeInfo& node : nodes_) {
    const std::vector<std::pair<std::string, int64_t>> owners = SlotOwnersLocked(node.name);
    for (int s = 0; s < options_.slots_per_node; ++s) {
      wire::SlotEntry slot{.agent = node.name, .slot = s, .enabled = node.usable};
      if (s < static_cast<int>(owners.size())) {
        slot.allocation = owners[s].first;
        slot.trial_id = owners[s].second;
      }
      out.slots.push_back(std::move(slot));
    }
  }
  return out;
}

void SlurmManager::Move(Job& job, JobPhase to) {
  if (absl::Status s = CheckTransition(job.phase, to); !s.ok()) {
    COHORT_LOG(ERROR) << "trial " << job.trial_id << ": " << s;
    return;
  }
  job.phase = to;
}

void SlurmManager::EndLocked(const std::string& allocation, Job& job, const std::string& why) {
  Move(job, JobPhase::kEnded);
  if (job.released) return;  // the master is done with it
  for (const auto& [node, slots] : job.nodes) lost_.push_back({node, why});
  COHORT_LOG(INFO) << "allocation " << allocation << ": " << why;
}

// --- the monitor's thread ------------------------------------------------------------------

SlurmManager::Work SlurmManager::CollectLocked() {
  Work work;
  const absl::Time now = absl::Now();
  for (auto& [id, job] : jobs_) {
    if (job.phase == JobPhase::kSubmitting) {
      if (job.stop) {
        EndLocked(id, job, "stopped before its Slurm job was submitted");
        job.stop.reset();
      } else {
        work.submit.emplace_back(id, job.spec);
      }
      continue;
    }
    if (job.phase == JobPhase::kRestored) work.find_by_name = true;
    if (job.job_id == 0 || job.phase == JobPhase::kEnded) continue;
    work.follow.push_back(job.job_id);
    if (job.released && now - job.released_at > kReleaseGrace && !job.cancel_sent) {
      work.signal.emplace_back(job.job_id, std::nullopt);
      job.cancel_sent = true;
    } else if (job.stop) {
      // A pending job, or a kill, is cancelled; a running one is asked to checkpoint and end.
      const bool preempt = job.stop == wire::StopMode::kPreempt && job.phase == JobPhase::kRunning;
      work.signal.emplace_back(job.job_id, preempt ? std::optional<int>(SIGUSR1) : std::nullopt);
      job.stop.reset();
    }
  }
  // Orphans (a live job of the prefix that no allocation owns) are looked for now and then,
  // after the restart's restores are in: squeue every poll is more than a site wants.
  if (now - created_ > options_.orphan_grace && now - last_orphan_sweep_ > kOrphanSweepEvery) {
    work.find_by_name = true;
    last_orphan_sweep_ = now;
  }
  return work;
}

void SlurmManager::SubmitAll(const Work& work) {
  for (const auto& [allocation, spec] : work.submit) {
    absl::StatusOr<int64_t> id = client_.Submit(spec);
    MutexLock lock(&mu_);
    const auto it = jobs_.find(allocation);
    if (!id.ok()) {
      COHORT_LOG(WARNING) << "allocation " << allocation << ": sbatch: " << id.status();
      if (it != jobs_.end()) {
        EndLocked(allocation, it->second,
                  absl::StrCat("Slurm refused the job: ", id.status().message()));
      }
      continue;
    }
    if (it == jobs_.end()) {  // released while submitting: never left to run
      if (absl::Status s = client_.Cancel(*id); !s.ok()) {
        COHORT_LOG(ERROR) << "cancelling Slurm job " << *id << ": " << s;
      }
      continue;
    }
    it->second.job_id = *id;
    Move(it->second, JobPhase::kPending);
  }
}

void SlurmManager::SignalAll(const Work& work) const {
  for (const auto& [job_id, signal] : work.signal) {
    if (absl::Status s = client_.Cancel(job_id, signal); !s.ok()) {
      COHORT_LOG(ERROR) << "Slurm job " << job_id << ": scancel: " << s;
    }
  }
}

void SlurmManager::ApplyJobs(const std::vector<int64_t>& followed,
                             const std::vector<slurm::JobInfo>& infos) {
  std::map<int64_t, const slurm::JobInfo*> by_id;
  for (const slurm::JobInfo& info : infos) by_id[info.id] = &info;
  MutexLock lock(&mu_);
  for (auto it = jobs_.begin(); it != jobs_.end();) {
    Job& job = it->second;
    const bool followed_now =
        job.job_id != 0 &&
        std::find(followed.begin(), followed.end(), job.job_id) != followed.end();
    if (followed_now && job.phase != JobPhase::kEnded) {
      const auto info = by_id.find(job.job_id);
      if (info == by_id.end()) {
        EndLocked(it->first, job, absl::StrCat("Slurm job ", job.job_id,
                                               " is no longer known to Slurm"));
      } else if (slurm::IsFinished(info->second->state)) {
        EndLocked(it->first, job,
                  absl::StrCat("Slurm job ", job.job_id, " ended: ", info->second->state_text,
                               info->second->reason.empty() || info->second->reason == "None"
                                   ? ""
                                   : " (" + info->second->reason + ")"));
      } else if (info->second->state == slurm::JobState::kPending) {
        job.reason = info->second->reason;
      } else {
        if (job.phase == JobPhase::kPending) Move(job, JobPhase::kRunning);
        if (!info->second->nodes.empty()) job.slurm_nodes = info->second->nodes;
      }
    }
    if (job.released && job.phase == JobPhase::kEnded) {
      it = jobs_.erase(it);
    } else {
      ++it;
    }
  }
}

void SlurmManager::ApplyNamed(const std::vector<slurm::JobInfo>& live) {
  std::vector<std::pair<std::string, std::vector<wire::RunningAllocation>>> claims;
  std::vector<int64_t> orphans;
  {
    MutexLock lock(&mu_);
    const std::string prefix = options_.job_prefix + "-";
    std::set<std::string> seen;
    for (const slurm::JobInfo& info : live) {
      if (!absl::StartsWith(info.name, prefix)) continue;
      const std::string allocation = info.name.substr(prefix.size());
      seen.insert(allocation);
      const auto it = jobs_.find(allocation);
      if (it == jobs_.end()) {
        if (absl::Now() - created_ > options_.orphan_grace) orphans.push_back(info.id);
        continue;
      }
      Job& job = it->second;
      if (job.phase != JobPhase::kRestored) continue;
      job.job_id = info.id;
      if (info.state == slurm::JobState::kPending) {
        // Its nodes would ask for start actions this master does not have.
        Move(job, JobPhase::kPending);
        job.stop = wire::StopMode::kKill;
        EndLocked(allocation, job, absl::StrCat("Slurm job ", info.id, " had not started when "
                                                "the master restarted: cancelled"));
        orphans.push_back(info.id);
        continue;
      }
      Move(job, JobPhase::kRunning);
      job.slurm_nodes = info.nodes;
      for (size_t rank = 0; rank < job.nodes.size(); ++rank) {
        claims.push_back({job.nodes[rank].first,
                          {{.allocation = allocation,
                            .trial_id = job.trial_id,
                            .node_rank = static_cast<int>(rank),
                            .slots = job.nodes[rank].second}}});
      }
    }
    for (auto& [id, job] : jobs_) {
      if (job.phase == JobPhase::kRestored && seen.count(id) == 0) {
        EndLocked(id, job, "its Slurm job ended while the master was away");
      }
    }
  }
  for (int64_t id : orphans) {
    COHORT_LOG(WARNING) << "cancelling Slurm job " << id << ": no allocation of this master owns it";
    if (absl::Status s = client_.Cancel(id); !s.ok()) {
      COHORT_LOG(ERROR) << "Slurm job " << id << ": scancel: " << s;
    }
  }
  for (const auto& [node, claim] : claims) events_.NodeJoined(node, claim, {});
}

bool SlurmManager::Stopping() const {
  MutexLock lock(&mu_);
  return stopping_;
}

void SlurmManager::Monitor() {
  for (;;) {
    Work work;
    {
      MutexLock lock(&mu_);
      if (stopping_) return;
      work = CollectLocked();
    }
    FollowOnce(work);
    MutexLock lock(&mu_);
    if (stopping_) return;
    if (!woken_) wake_.WaitWithTimeout(&mu_, options_.poll_interval);
    woken_ = false;
  }
}

void SlurmManager::FollowOnce(const Work& work) {
  SubmitAll(work);
  SignalAll(work);
  if (Stopping()) return;
  absl::StatusOr<std::vector<slurm::JobInfo>> jobs = client_.Jobs(work.follow);
  if (jobs.ok()) {
    ApplyJobs(work.follow, *jobs);
  } else {
    COHORT_LOG(WARNING) << "following Slurm jobs: " << jobs.status();
  }
  if (work.find_by_name && !Stopping()) {
    absl::StatusOr<std::vector<slurm::JobInfo>> named =
        client_.JobsNamed(options_.job_prefix + "-");
    if (named.ok()) {
      ApplyNamed(*named);
    } else {
      COHORT_LOG(WARNING) << "listing Slurm jobs: " << named.status();
    }
  }
  if (Stopping()) return;
  absl::StatusOr<std::vector<slurm::NodeInfo>> nodes = client_.Nodes(options_.partition);
  bool changed = !work.submit.empty();
  {
    MutexLock lock(&mu_);
    if (nodes.ok()) nodes_ = std::move(*nodes);
    changed |= !lost_.empty();
  }
  if (changed) events_.OffersChanged();  // the master's monitor takes the lost nodes
}

}  // namespace cohort::master::slurm_rm
