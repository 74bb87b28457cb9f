#pragma once
// Agent: one per machine (several per machine for tests). Registers its slots with the master,
// long-polls for actions (the poll is its heartbeat; wire/agent_protocol.h has the bodies), and
// runs each "start" as an AllocationRun on its own thread: the context, cohort-launch with the
// worker environment, the logs and (node 0) the trial's reports, the exit report. "stop" sends
// the launcher SIGTERM (preempt: the trial checkpoints) or, for a kill, SIGKILL after a short
// grace. A malformed action is logged and skipped.
// When the master is unreachable the agent keeps its trials running, keeps what they report,
// and re-registers when the master is back (docs/design/0006-cluster.md).
//
// Thread-safe: Run() drives the poll loop; each allocation runs on its own thread.

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "agent/allocation_run.h"
#include "wire/agent_protocol.h"

namespace cohort::agent {

struct AgentOptions {
  std::string master_url;
  std::string id;
  int slots = 1;
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
};

class Agent {
 public:
  explicit Agent(AgentOptions options);
  ~Agent();
  // Runs until Stop(). Errors only for unusable options.
  absl::Status Run();
  void Stop();

 private:
  absl::Status Register();
  // Polls once for actions and carries them out; false when the agent must register again.
  bool PollActions();
  // Removes finished alloc-* directories beyond options_.keep_allocations, oldest first.
  void PruneWorkDir();
  void Start(wire::StartAction action);
  void StopAllocation(const wire::StopAction& action);
  void RunAllocation(std::shared_ptr<AllocationControl> control, wire::StartAction action);

  AgentOptions options_;
  std::atomic<bool> stop_{false};
  std::mutex mu_;
  std::map<std::string, std::shared_ptr<AllocationControl>> running_;  // by allocation id
  std::mutex prune_mu_;                                                // one PruneWorkDir at a time
  // One thread per allocation; finished ones are joined by the poll loop.
  struct Worker {
    std::shared_ptr<std::atomic<bool>> done;
    std::thread thread;
  };
  std::vector<Worker> threads_;
  void JoinFinished();
};

}  // namespace cohort::agent
