#pragma once
// Agent: one per machine (several per machine for tests). Registers its slots with the master,
// long-polls for actions (the poll is its heartbeat; wire/agent_protocol.h has the bodies), and
// runs each "start" as an AllocationRun on its own thread: the context, cohort-launch with the
// worker environment, the logs and (node 0) the trial's reports, the exit report. "stop" sends
// the launcher SIGTERM (preempt: the trial checkpoints) or, for a kill, SIGKILL after a 10 s
// grace. A malformed action is logged and skipped; a malformed start whose allocation and node
// can be read is reported as that node's exit with status 1 (the reason in the trial's log),
// so the master's restart policy applies.
// When the master is unreachable the agent keeps its trials running, keeps what they report,
// retries registering every second and re-registers when the master forgot it (a 404 on its
// poll); posts are retried for up to 10 minutes (docs/design/0006-cluster.md).
// A master that refuses the agent's secret (401), or whose TLS certificate the agent does not
// trust (client::IsTlsFailure), ends Run() with that error: retrying cannot help.
// Stop() ends all of that within 10 s, master or not: running trials get SIGTERM and, 5 s
// later, SIGKILL; pending posts are tried once more, not retried.
// Run() first refuses an unsafe id, takes the work directory's lock and stops what an earlier
// run of an agent on it left running (leftovers.h); before each registration it delivers what
// an earlier run could not (an exit and its log tail, undelivered.h). Its registration names the
// allocations it runs, so a restarted master re-adopts them
// (docs/design/0011-master-restart-readoption.md).
// Time: every decision (back-off, grace, flush interval) is by AgentOptions::clock, so tests
// drive it with a FakeClock; sockets and pipes keep real time.
//
// Thread-safe: Run() drives the poll loop; each allocation runs on its own thread; Stop() may
// be called from any thread (not from a signal handler: it locks).

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "agent/allocation_run.h"
#include "agent/gpu_pool.h"
#include "agent/output_shipper.h"
#include "common/clock.h"
#include "common/mutex.h"
#include "nlohmann/json.hpp"
#include "wire/agent_protocol.h"

namespace cohort::agent {

struct AgentOptions {
  std::string master_url;
  // The cluster's agent secret, sent as a bearer token on every request (empty: none; a master
  // with agent authentication then refuses the agent).
  std::string secret;
  // The CA file an https:// master's certificate must chain to (MasterClient::set_tls_ca_file);
  // empty: the system's store. A certificate it does not trust ends Run() with that error.
  std::string tls_ca_file;
  std::string id;
  int slots = 1;
  std::string resource_pool = "default";  // the master's pool it joins (--resource-pool)
  // GPU slots: this machine's GPUs (nvidia-smi's ids), one per slot; each allocation gets as
  // many free ones as it has slots, passed to its launcher (cohort-launch --gpus, one
  // CUDA_VISIBLE_DEVICES per worker). Empty: CPU slots.
  std::vector<int> gpus;
  std::string host = "127.0.0.1";  // how other agents reach this one (the trial's chief)
  int port_lo = 29500, port_hi = 29599;
  std::string work_dir;
  std::string launcher;  // cohort-launch; empty: next to this executable, else PATH
  // Cores this agent's trials share (0: all of this machine's). Each worker gets
  // cpus / slots compute threads; several agents on one machine should split the cores.
  int cpus = 0;
  // Finished allocation directories (unpacked context, run directory) kept for inspection;
  // older ones are removed. Checkpoints live in checkpoint storage, not here.
  int keep_allocations = 20;
  // What the agent decides by: retry back-off, the kill's grace, flush intervals. Null:
  // RealClock(). With a FakeClock the agent's sleeps end only when the test advances it.
  // Must outlive the agent.
  Clock* clock = nullptr;
  // How long one long poll waits at the master for actions (real time: it is a socket). A
  // Stop() takes effect when the poll in flight returns; tests shorten it.
  absl::Duration poll_wait = absl::Seconds(5);
  // A rank of a trial that waits in a collective, or is stopped, this long fails its run
  // (AllocationRunOptions::progress_deadline; --progress-deadline).
  absl::Duration progress_deadline = absl::Minutes(10);
};

class Agent {
 public:
  explicit Agent(AgentOptions options);
  // Stops the agent and waits for its threads (see Stop()).
  ~Agent();
  // Runs until Stop(), then stops the running allocations and waits for them (SIGKILL after
  // the grace) before it returns. Errors only for unusable options (the work directory) and
  // when the master refuses the agent's secret (Unauthenticated, saying what to pass).
  absl::Status Run() ABSL_LOCKS_EXCLUDED(mu_, poll_mu_);
  void Stop() ABSL_LOCKS_EXCLUDED(poll_mu_);

 private:
  // Registers with the allocations it runs (wire::RunningAllocation), which a restarted master
  // re-adopts.
  absl::Status Register() ABSL_LOCKS_EXCLUDED(mu_);
  // Delivers what its previous run kept (undelivered.h), deleting each record the master took or
  // refused for good; Unavailable (the rest kept) when the master does not answer.
  absl::Status DeliverKept();
  // Registers until the master takes it; false when stopped first, refused for want of the
  // agent secret or failed by TLS (then refusal_ says why).
  bool RegisterPatiently() ABSL_LOCKS_EXCLUDED(mu_);
  // Polls once for actions and carries them out; false when the agent must register again.
  bool PollActions() ABSL_LOCKS_EXCLUDED(mu_, poll_mu_);
  void Carry(const nlohmann::json& raw, absl::StatusOr<wire::Action> action)
      ABSL_LOCKS_EXCLUDED(mu_);
  // Removes finished alloc-* directories beyond options_.keep_allocations, oldest first.
  void PruneWorkDir() ABSL_LOCKS_EXCLUDED(prune_mu_, mu_);
  void Start(wire::StartAction action) ABSL_LOCKS_EXCLUDED(mu_);
  // A start action that did not parse (`why`): when its allocation and node can be read from
  // `raw`, reports that node failed (AllocationRun::Fail); otherwise only logs it.
  void RefuseStart(const nlohmann::json& raw, const absl::Status& why);
  void StopAllocation(const wire::StopAction& action) ABSL_LOCKS_EXCLUDED(mu_);
  void RunAllocation(std::shared_ptr<AllocationControl> control, wire::StartAction action)
      ABSL_LOCKS_EXCLUDED(mu_, prune_mu_);
  // `gpus`: the allocation's GPU slots (empty: CPU slots).
  AllocationRunOptions RunOptions(std::vector<int> gpus = {});
  // Runs `work` on a thread of its own, joined by JoinFinished or StopAndJoinAll.
  void Spawn(std::function<void()> work);
  void JoinFinished();
  // Tells the master this agent leaves (POST /api/v1/agents/ID/leave), `when` for the log; a
  // failure is logged (the master then counts the agent lost after its timeout).
  void Leave(const char* when);
  // Stops every running allocation (SIGTERM, SIGKILL after the grace) and joins every thread.
  void StopAndJoinAll() ABSL_LOCKS_EXCLUDED(mu_);

  // Unguarded: Run() settles work_dir before it starts any thread; read-only after.
  AgentOptions options_;
  Clock& clock_;
  GpuPool gpu_pool_;  // options_.gpus and which allocation holds each
  // Every allocation's logs, reports and exit, in one post per flush (the runs' threads use it).
  OutputShipper shipper_;
  std::atomic<bool> stop_requested_{false};
  // The master refused the agent's secret, or TLS failed; Run() returns it (Run's thread).
  absl::Status refusal_;
  absl::Notification stop_;  // notified once by Stop(); cuts back-off sleeps and retries short
  absl::Time last_complaint_ = absl::InfinitePast();   // that registering failed (Run's thread)
  absl::Time last_registered_ = absl::InfinitePast();  // the last registration taken (Run's)
  // One PruneWorkDir at a time (it guards the work directory's alloc-* entries, no member);
  // taken before mu_.
  Mutex prune_mu_ ABSL_ACQUIRED_BEFORE(mu_);
  Mutex mu_;
  // By allocation id.
  std::map<std::string, std::shared_ptr<AllocationControl>> running_ ABSL_GUARDED_BY(mu_);
  Mutex poll_mu_;
  client::MasterClient* poll_client_ ABSL_GUARDED_BY(poll_mu_) = nullptr;  // for Stop() to abort
  // One thread per allocation (or refused start); touched by the thread in Run() only.
  struct Worker {
    std::shared_ptr<std::atomic<bool>> done;
    std::thread thread;
  };
  std::vector<Worker> threads_;
};

}  // namespace cohort::agent
