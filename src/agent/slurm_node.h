#pragma once
// cohort-slurm-node: Cohort's part of a Slurm job (master/slurm/slurm_manager.h; docs/slurm.md).
// The master's Slurm resource manager submits each allocation as a batch job whose script runs
// `cohort-slurm-node job` on the job's first node: it picks a free port there for the trial's
// rendezvous store and starts one `cohort-slurm-node node` per node through srun. Each node
// process does for its node what cohort-agent does (agent/allocation_run.h): it fetches its
// start action and the context with the allocation's token (the only credential the job holds;
// never the agents' secret), runs cohort-launch, ships the output and reports the exit.
//
// Signals: SIGUSR1 is the master asking the trial to stop (pause, a searcher's stop): the
// launcher gets SIGTERM and the trial checkpoints. SIGTERM is Slurm ending the job (a time
// limit, scancel): the trial is stopped the same way, and an exit of 0 after it is reported as
// a failure (143) saying so, so the master restarts the trial from its checkpoint within
// max_restarts.
//
// What it reads from its environment (the job's, set by the master and by Slurm):
//   COHORT_MASTER, COHORT_ALLOCATION, COHORT_ALLOCATION_TOKEN, COHORT_SLURM_NNODES,
//   COHORT_TLS_CA (optional), COHORT_NODE_WORK_DIR (optional; else $TMPDIR, else /tmp),
//   COHORT_CHIEF_HOST (optional: how the other nodes reach the first; else its host name);
//   SLURM_JOB_ID, SLURM_NODEID, SLURMD_NODENAME, SLURM_CPUS_PER_TASK.

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace cohort::agent::slurm_node {

// What a node process knows from its environment.
struct NodeEnv {
  std::string master_url;
  std::string allocation;
  std::string token;
  std::string tls_ca_file;
  std::string work_dir;  // this node's directory for the allocation
  std::string node_name;  // SLURMD_NODENAME
  std::string chief_addr;  // COHORT_CHIEF_ADDR (set by the job step; empty for one node)
  int node_rank = 0;
  int nnodes = 1;
  int cpus = 1;  // SLURM_CPUS_PER_TASK
  std::string job_id;
};

// Reads and checks the environment (`get` returns a variable, nullopt when unset); the error
// names the variable that is missing or malformed.
using GetEnv = std::optional<std::string> (*)(const char*);
absl::StatusOr<NodeEnv> ReadNodeEnv(GetEnv get);

// The job step's srun command line for `env` (the program is `self`), with COHORT_CHIEF_ADDR
// to set in its environment.
struct JobStep {
  std::vector<std::string> argv;
  std::string chief_addr;
};
absl::StatusOr<JobStep> PlanJobStep(const std::string& self, GetEnv get);

// `cohort-slurm-node job`: runs the step (exec srun); returns only on failure.
int RunJob(const std::string& self);
// `cohort-slurm-node node`: this node's part; the exit status of the launcher (1 when it never
// started).
int RunNode(const std::string& self);

}  // namespace cohort::agent::slurm_node
