#pragma once
// LaunchEnv: the per-worker environment of a job's worker process, the contract between
// cohort-launch (launch/launcher.cc), which writes it for every worker it starts, and the
// worker's communication layer (comm::TopologyFromEnv), which reads it. One struct writes and
// parses every variable:
//
//   COHORT_RANK, COHORT_SIZE              global rank and number of workers
//   COHORT_LOCAL_RANK, COHORT_LOCAL_SIZE  rank and number of workers on this machine
//   COHORT_CROSS_RANK, COHORT_CROSS_SIZE  index of this machine and number of machines
//   COHORT_CHIEF_ADDR                     host of rank 0's rendezvous store
//   COHORT_RENDEZVOUS_PORT                its port, in [0, 65535]
//   COHORT_NETWORK_INTERFACE              interface for traffic between machines
//   COHORT_LAUNCHER                       "1": started by cohort-launch
//   COHORT_HOST_STORE                     "1": rank 0 hosts the store itself even under
//                                         cohort-launch (for a launcher that does not host it)
//   COHORT_COLLECTIVE_TIMEOUT             deadline of every collective, seconds
//   COHORT_RENDEZVOUS_TIMEOUT             deadline for finding the peers at start, seconds
//   CUDA_VISIBLE_DEVICES                  the worker's GPU when its slot is one (cohort-launch
//                                         --gpus): CUDA then shows it as device 0
//   COHORT_GPU_SLOT                       "1": the slot is that GPU (the Trial API trains on
//                                         cuda:0); unset: a CPU slot, whatever
//                                         CUDA_VISIBLE_DEVICES passes through
//
// The trial-level variables (config, hyperparameters, seed, ...) and the thread counts are
// WorkerEnv's (wire/worker_env.h). The foreign launchers' equivalents (torchrun's RANK and
// WORLD_SIZE, OpenMPI's OMPI_COMM_WORLD_*, Slurm's SLURM_*) are not protocol between Cohort's
// components: comm::TopologyFromEnv reads them, with ReadRanks below for the checks.
//
// An empty value counts as unset. Unlike WorkerEnv::ToEnv, ToEnv leaves out what is unset
// instead of unsetting it: cohort-launch passes its own environment on to the workers, so a
// COHORT_NETWORK_INTERFACE or COHORT_COLLECTIVE_TIMEOUT the user gave the launcher reaches
// every worker.
// Thread-compatible value types.
//
// Example:
//   LaunchEnv env;
//   env.ranks = WorkerRanks{.rank = 3, .size = 4, .local_rank = 1, .local_size = 2,
//                           .cross_rank = 1, .cross_size = 2};
//   env.chief_addr = "node0";
//   env.rendezvous_port = 29400;
//   for (const auto& [name, value] : env.ToEnv()) ...;  // into the worker's environment
//   ...
//   COHORT_ASSIGN_OR_RETURN(LaunchEnv mine, LaunchEnv::FromProcessEnv());

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace cohort::wire {

// Reads one environment variable: its value, or nullopt when unset.
using EnvLookup = std::function<std::optional<std::string>(const char*)>;

// Where a worker sits in its job. Invariants (checked by ReadRanks): size >= 1, rank < size,
// 1 <= local_size <= size, local_rank < local_size, cross_rank < cross_size.
struct WorkerRanks {
  int rank = 0;
  int size = 1;
  int local_rank = 0;
  int local_size = 1;
  int cross_rank = 0;
  int cross_size = 1;
};

// The names under which one launcher passes WorkerRanks.
struct RankVariables {
  const char* launcher;  // named in errors: "cohort", "torchrun", ...
  const char* rank;      // required with `size`
  const char* size;
  const char* local_rank;  // unset: rank % local_size
  const char* local_size;  // unset: size (one machine)
  const char* cross_rank;  // null or unset: rank / local_size
  const char* cross_size;  // null or unset: ceil(size / local_size)
  // Slurm's SLURM_NTASKS_PER_NODE looks like "4(x2)": only its leading integer is read.
  bool local_size_leading_integer = false;
};

inline constexpr RankVariables kCohortRankVariables{"cohort",
                                                    "COHORT_RANK",
                                                    "COHORT_SIZE",
                                                    "COHORT_LOCAL_RANK",
                                                    "COHORT_LOCAL_SIZE",
                                                    "COHORT_CROSS_RANK",
                                                    "COHORT_CROSS_SIZE"};

// The foreign launchers' rank variables, so the same program runs under them
// (docs/architecture.md §3): torchrun, OpenMPI's mpirun and Slurm's srun.
inline constexpr RankVariables kTorchrunRankVariables{
    "torchrun", "RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "GROUP_RANK", nullptr};
inline constexpr RankVariables kOpenMpiRankVariables{"openmpi",
                                                     "OMPI_COMM_WORLD_RANK",
                                                     "OMPI_COMM_WORLD_SIZE",
                                                     "OMPI_COMM_WORLD_LOCAL_RANK",
                                                     "OMPI_COMM_WORLD_LOCAL_SIZE",
                                                     nullptr,
                                                     nullptr};
inline constexpr RankVariables kSlurmRankVariables{"slurm",
                                                   "SLURM_PROCID",
                                                   "SLURM_NTASKS",
                                                   "SLURM_LOCALID",
                                                   "SLURM_NTASKS_PER_NODE",
                                                   "SLURM_NODEID",
                                                   "SLURM_NNODES",
                                                   /*local_size_leading_integer=*/true};

// Reads one launcher's rank variables through `lookup`. nullopt when `names.rank` is unset
// (that launcher did not start this process). Values are integers in [0, 2^24]. A malformed
// value, a missing size, or values that break WorkerRanks' invariants are InvalidArgument naming
// the variables, e.g. "COHORT_RANK=4 is not below COHORT_SIZE=4".
absl::StatusOr<std::optional<WorkerRanks>> ReadRanks(const RankVariables& names,
                                                     const EnvLookup& lookup);

// A list of GPU ids as cohort-launch's --gpus and CUDA_VISIBLE_DEVICES take it: "0,1,3".
std::string FormatGpuList(const std::vector<int>& gpus);
// The inverse: distinct integers in [0, 4095] separated by commas (an empty text is no GPUs).
// Otherwise InvalidArgument naming `what` (a flag or variable) and the text, e.g.
// "--gpus must be distinct GPU ids separated by commas (e.g. 0,1), got '0,0'".
absl::StatusOr<std::vector<int>> ParseGpuList(absl::string_view what, absl::string_view text);

struct LaunchEnv {
  std::optional<WorkerRanks> ranks;    // COHORT_RANK ... COHORT_CROSS_SIZE; nullopt: not set
  std::string chief_addr;              // COHORT_CHIEF_ADDR; empty: not set
  std::optional<int> rendezvous_port;  // COHORT_RENDEZVOUS_PORT; nullopt: not set
  std::string network_interface;       // COHORT_NETWORK_INTERFACE; empty: detect
  bool launcher = false;               // COHORT_LAUNCHER=1
  bool host_store = false;             // COHORT_HOST_STORE=1
  std::optional<absl::Duration> collective_timeout;  // COHORT_COLLECTIVE_TIMEOUT
  std::optional<absl::Duration> rendezvous_timeout;  // COHORT_RENDEZVOUS_TIMEOUT
  // CUDA_VISIBLE_DEVICES, as given (CUDA also takes UUIDs there); empty: not set.
  std::string cuda_visible_devices;
  bool gpu_slot = false;  // COHORT_GPU_SLOT=1: the worker's slot is its CUDA device 0

  // The variables that are set, as SubprocessOptions::env takes them (every value present).
  // What is unset is left out, so the starter's own value (if any) passes through; launcher
  // and host_store are written only when true. Durations are written in seconds ("2.5").
  std::map<std::string, std::optional<std::string>> ToEnv() const;

  // Reads the variables through `lookup`. Malformed or inconsistent values are InvalidArgument
  // naming the variable and what is wrong, e.g. "COHORT_RANK=4 is not below COHORT_SIZE=4",
  // "COHORT_RENDEZVOUS_PORT must be an integer in [0, 65535], got '70000'",
  // "COHORT_COLLECTIVE_TIMEOUT must be a positive number of seconds, got '0'".
  static absl::StatusOr<LaunchEnv> FromEnv(const EnvLookup& lookup);
  // FromEnv over this process's environment.
  static absl::StatusOr<LaunchEnv> FromProcessEnv();
};

}  // namespace cohort::wire
