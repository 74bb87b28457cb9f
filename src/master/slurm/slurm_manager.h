#pragma once
// SlurmManager: the resource manager that runs each allocation as one Slurm batch job
// (rm/resource_manager.h; docs/design/0018-slurm.md). Cohort decides what may start (an
// experiment's max_concurrent_trials, priorities, the searcher) and how a trial's slots split
// into nodes; Slurm decides where and when: a job without room pends in Slurm, and its reason
// ("Resources", "Priority") is the trial's waiting reason (Waiting).
//
// A job runs `cohort-slurm-node job` on its batch host, which runs one `cohort-slurm-node node`
// per node through srun; each fetches its start action with the allocation's token
// (NodeStart, GET /api/v1/allocations/ID/nodes/RANK/start) and does what an agent does for
// one node. Nothing of Cohort runs on a node between jobs.
//
// The manager's own thread (Monitor) does every Slurm call, never under a lock: it submits what
// Start queued, signals or cancels what Stop and Release asked for, follows the jobs (squeue,
// scontrol) and the partition's nodes (every poll_interval, or at once when woken). A job that
// ends before each of its nodes reported an exit (a time limit, a node failure, an operator's
// scancel, a failed submission) makes those nodes lost with Slurm's words (ExpireLost), so the
// master's restart policy applies. Jobs are named `<job_prefix>-<allocation>`: after a master
// restart, Restore finds each allocation's job by name (re-adopted: its nodes are claimed
// through Events::NodeJoined); a restored allocation whose job is gone is lost, one whose job
// still pends is cancelled (its start actions died with the old master) and queued again; a
// live job of this prefix that no allocation owns is cancelled once the restart's restores are
// in (never an orphan). Every submission carries --no-requeue: Slurm never runs one allocation
// twice.
//
// Node ids: a trial's placement names its nodes `slurm-t<TRIAL>-<RANK>` (a trial has one
// allocation at a time); where Slurm ran them is in Slots() and the trial's log.
//
// Thread-safe; lock order: the master's state lock, then mu_. Events are called without mu_.

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/mutex.h"
#include "master/rm/resource_manager.h"
#include "slurm/slurm_client.h"

namespace cohort::master::slurm_rm {

enum class SlotType { kCpu, kCuda };

struct SlurmManagerOptions {
  slurm::SlurmOptions slurm;  // where the tools are, SLURM_CONF
  std::string partition;      // the default partition (empty: Slurm's); resources.resource_pool
  int slots_per_node = 1;     // a trial of more slots takes slots / slots_per_node whole nodes
  SlotType slot_type = SlotType::kCpu;  // cpu: --cpus-per-task; cuda: --gres=gpu:N
  // The node program's path on the nodes (cohort-slurm-node; cohort-launch beside it).
  std::string node_program;
  std::string master_url;   // how the nodes reach the master
  std::string tls_ca_file;  // passed to the nodes for an https:// master (empty: none)
  // Where each node keeps its allocation's files (a directory of each job's own beneath it);
  // empty: the node's $TMPDIR or /tmp.
  std::string node_work_dir;
  std::string job_prefix = "cohort";  // job names: <job_prefix>-<allocation>
  absl::Duration poll_interval = absl::Seconds(2);
  // After this long, a live job of job_prefix that no allocation owns is cancelled.
  absl::Duration orphan_grace = absl::Seconds(20);
};

// The phases of an allocation's job; Transition holds the one table of moves.
enum class JobPhase {
  kSubmitting,  // Start queued it; Monitor submits it
  kRestored,    // Restore: its job is looked up by name
  kPending,     // submitted; Slurm has not started it
  kRunning,     // Slurm started it
  kEnded,       // over (or never submitted): its unreported nodes are lost
};
const char* JobPhaseName(JobPhase phase);
// OK when `from` may move to `to`; FailedPrecondition naming both otherwise.
absl::Status CheckTransition(JobPhase from, JobPhase to);

class SlurmManager : public rm::ResourceManager {
 public:
  // Checks that Slurm's tools answer (SlurmClient::Check) and starts the manager's thread.
  static absl::StatusOr<std::unique_ptr<SlurmManager>> Create(SlurmManagerOptions options,
                                                              rm::Events& events);
  ~SlurmManager() override;

  std::vector<AgentState> Offers() const override ABSL_LOCKS_EXCLUDED(mu_);
  // Every task whose shape the partition can hold is placed (Slurm queues what has no room):
  // `slots` <= slots_per_node on one node, else slots / slots_per_node whole nodes.
  ScheduleResult Place(const ScheduleInput& input) const override;
  absl::Status Feasible(int slots, const std::string& pool) const override ABSL_LOCKS_EXCLUDED(mu_);
  std::optional<std::string> Waiting(const std::string& allocation) const override
      ABSL_LOCKS_EXCLUDED(mu_);
  absl::StatusOr<wire::StartAction> NodeStart(const std::string& allocation, int node_rank,
                                              const std::string& host) override
      ABSL_LOCKS_EXCLUDED(mu_);
  bool Fits(const Placement& placement, const std::set<std::string>& excluded) const override;
  // Checks the experiment's slurm.sbatch_args and queues the submission (FailedPrecondition,
  // nothing held, for arguments Cohort cannot pass).
  absl::Status Start(const Placement& placement, std::vector<wire::StartAction> starts) override
      ABSL_LOCKS_EXCLUDED(mu_);
  void Stop(const std::string& allocation, const std::string& where, wire::StopMode mode) override
      ABSL_LOCKS_EXCLUDED(mu_);
  void Release(const std::string& allocation) override ABSL_LOCKS_EXCLUDED(mu_);
  void Restore(const std::string& allocation, int64_t trial_id,
               const std::vector<std::pair<std::string, int>>& nodes) override
      ABSL_LOCKS_EXCLUDED(mu_);
  std::vector<rm::LostNode> ExpireLost() override ABSL_LOCKS_EXCLUDED(mu_);
  wire::SlotList Slots() const override ABSL_LOCKS_EXCLUDED(mu_);
  void Shutdown() override ABSL_LOCKS_EXCLUDED(mu_);

  // The partition's nodes as Slurm last described them (cohort agent list).
  std::vector<slurm::NodeInfo> Nodes() const ABSL_LOCKS_EXCLUDED(mu_);
  // The placement node id of `rank` of trial `trial_id`'s allocation: "slurm-t5-0".
  static std::string NodeId(int64_t trial_id, int rank);

 private:
  struct Job {
    int64_t trial_id = 0;
    std::vector<std::pair<std::string, int>> nodes;  // placement ids and slots, node order
    std::vector<wire::StartAction> starts;           // empty when restored
    slurm::JobSpec spec;
    JobPhase phase = JobPhase::kSubmitting;
    int64_t job_id = 0;
    std::string reason;                    // Slurm's, while pending
    std::vector<std::string> slurm_nodes;  // where Slurm runs it
    std::optional<wire::StopMode> stop;    // asked for, not yet sent
    bool released = false;                 // the master is done with it; cancel, then forget
    absl::Time released_at;
    bool cancel_sent = false;
  };
  // What one pass of the monitor does without the lock.
  struct Work {
    std::vector<std::pair<std::string, slurm::JobSpec>> submit;
    std::vector<std::pair<int64_t, std::optional<int>>> signal;  // job, signal (none: cancel)
    std::vector<int64_t> follow;
    bool find_by_name = false;
  };
  SlurmManager(SlurmManagerOptions options, rm::Events& events);

  void Monitor() ABSL_LOCKS_EXCLUDED(mu_);
  // One round of Slurm calls for `work`, each without the lock; tells the master when the
  // offers or the lost nodes changed.
  void FollowOnce(const Work& work) ABSL_LOCKS_EXCLUDED(mu_);
  bool Stopping() const ABSL_LOCKS_EXCLUDED(mu_);
  Work CollectLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void SubmitAll(const Work& work) ABSL_LOCKS_EXCLUDED(mu_);
  void SignalAll(const Work& work) const;
  // Applies what Slurm says of the followed jobs (a job it no longer knows: ended).
  void ApplyJobs(const std::vector<int64_t>& followed, const std::vector<slurm::JobInfo>& jobs)
      ABSL_LOCKS_EXCLUDED(mu_);
  // Restored allocations found (or not) among the live jobs of job_prefix; orphans cancelled.
  void ApplyNamed(const std::vector<slurm::JobInfo>& live) ABSL_LOCKS_EXCLUDED(mu_);
  void Move(Job& job, JobPhase to) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Per slot that this master's jobs hold on Slurm node `node`: (allocation, trial).
  std::vector<std::pair<std::string, int64_t>> SlotOwnersLocked(const std::string& node) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The job ended: each of its nodes becomes lost with `why` (unless released).
  void EndLocked(const std::string& allocation, Job& job, const std::string& why)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::StatusOr<slurm::JobSpec> SpecFor(const std::vector<wire::StartAction>& starts,
                                         const Placement& placement) const;
  std::string Script() const;

  const SlurmManagerOptions options_;
  rm::Events& events_;
  const slurm::SlurmClient client_;
  const absl::Time created_;
  mutable Mutex mu_;
  CondVar wake_;
  std::map<std::string, Job> jobs_ ABSL_GUARDED_BY(mu_);  // by allocation id
  std::vector<rm::LostNode> lost_ ABSL_GUARDED_BY(mu_);
  std::vector<slurm::NodeInfo> nodes_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  bool woken_ ABSL_GUARDED_BY(mu_) = false;
  absl::Time last_orphan_sweep_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();  // work arrived while the monitor was busy
  std::thread monitor_;
};

}  // namespace cohort::master::slurm_rm
