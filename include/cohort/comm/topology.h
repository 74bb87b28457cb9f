#pragma once
// Topology: where this worker sits in the job (global, local and cross-machine rank and size)
// and how to reach the rendezvous store. Read from the worker environment that cohort-launch
// sets (wire::LaunchEnv, docs/architecture.md §3), or from torchrun's, OpenMPI's or Slurm's
// variables so the same worker binary runs under those launchers.
// Thread-compatible value type.

#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace cohort::comm {

struct Topology {
  int rank = 0;
  int size = 1;
  int local_rank = 0;
  int local_size = 1;
  int cross_rank = 0;
  int cross_size = 1;

  // Rendezvous store address (COHORT_CHIEF_ADDR:COHORT_RENDEZVOUS_PORT).
  std::string chief_addr = "127.0.0.1";
  int rendezvous_port = 0;
  // True when this process must host the store itself (rank 0 under a foreign launcher);
  // false when the launcher hosts it.
  bool host_store = false;

  // Network interface for cross-machine traffic; empty: detect.
  std::string network_interface;

  // Deadline of every collective (COHORT_COLLECTIVE_TIMEOUT, seconds; default 300).
  absl::Duration collective_timeout = absl::Seconds(300);
  // Deadline for finding the peers at start (COHORT_RENDEZVOUS_TIMEOUT, seconds; default 120).
  absl::Duration rendezvous_timeout = absl::Seconds(120);

  // Which launcher's variables were used: "cohort", "torchrun", "openmpi", "slurm", "none".
  std::string source = "none";

  std::string ToString() const;
};

// Reads the topology from the environment. The ranks come from the first launcher whose rank
// variable is set: cohort-launch (COHORT_*, read through wire::LaunchEnv), then torchrun
// (RANK/WORLD_SIZE/LOCAL_RANK/LOCAL_WORLD_SIZE/MASTER_ADDR/MASTER_PORT), then OpenMPI
// (OMPI_COMM_WORLD_*), then Slurm (SLURM_PROCID/SLURM_NTASKS/SLURM_LOCALID). LaunchEnv's
// COHORT_CHIEF_ADDR, COHORT_RENDEZVOUS_PORT, COHORT_NETWORK_INTERFACE and timeouts apply under
// every launcher. No variables at all: a single worker (rank 0 of 1). Inconsistent or malformed
// values: InvalidArgument naming the variable and what is wrong, e.g. "COHORT_RANK=4 is not
// below COHORT_SIZE=4".
absl::StatusOr<Topology> TopologyFromEnv();

}  // namespace cohort::comm
