// cohort-slurm-node: Cohort's part of a Slurm job (agent/slurm_node.h).
#include <cstring>
#include <iostream>
#include <string>

#include "agent/slurm_node.h"
#include "common/sibling_program.h"

namespace {

constexpr char kHelp[] = R"(cohort-slurm-node: runs one allocation of a Cohort trial inside a Slurm job

Usage:
  cohort-slurm-node job     the job's batch step: picks the rendezvous port on this node and
                            starts `cohort-slurm-node node` on every node of the job (srun)
  cohort-slurm-node node    one node: fetches its start action and the experiment's context
                            from the master with the allocation's token, runs cohort-launch
                            (installed beside this program), sends the output and the exit

cohort-master --resource-manager slurm submits the jobs that run this; nobody starts it by hand.
It reads COHORT_MASTER, COHORT_ALLOCATION, COHORT_ALLOCATION_TOKEN and COHORT_SLURM_NNODES
(set by the master), COHORT_TLS_CA, COHORT_NODE_WORK_DIR and COHORT_CHIEF_HOST (optional),
and Slurm's SLURM_JOB_ID, SLURM_NODEID, SLURMD_NODENAME, SLURM_CPUS_PER_TASK.
Signals: SIGUSR1 asks the trial to checkpoint and stop (the master's pause or a searcher's
stop); SIGTERM is Slurm ending the job: the trial checkpoints too, and the run counts as
failed, so the master restarts it from that checkpoint within max_restarts.
See docs/slurm.md.
)";

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  if (argc != 2 || mode == "--help" || mode == "-h" || (mode != "job" && mode != "node")) {
    const bool asked = argc == 2 && (mode == "--help" || mode == "-h");
    (asked ? std::cout : std::cerr) << kHelp;
    return asked ? 0 : 2;
  }
  const std::string self = cohort::SiblingProgram("cohort-slurm-node");
  if (mode == "job") return cohort::agent::slurm_node::RunJob(self);
  return cohort::agent::slurm_node::RunNode(self);
}
