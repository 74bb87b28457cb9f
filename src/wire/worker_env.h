#pragma once
// WorkerEnv: the trial-level environment of a worker process, the contract between whoever
// starts a trial (the agent, `cohort experiment create --local`) and the worker that reads it
// (core::Init; runtime::TrialMain for its flags' defaults). One struct writes and parses every
// variable:
//
//   COHORT_CONFIG             path of the experiment config (YAML)
//   COHORT_RUN_DIR            the run directory (metrics.jsonl, progress.json)
//   COHORT_HPARAMS            the trial's hyperparameters, a JSON object
//   COHORT_TRIAL_SEED         the trial's seed, an integer >= 0
//   COHORT_TRIAL_ID           the trial's id, an integer >= 1
//   COHORT_LATEST_CHECKPOINT  the checkpoint to resume from (a storage id or a directory)
//   COHORT_SEARCHER_OPS       the searcher operations, "L1,L2,...": ascending lengths >= 1
//   COHORT_MASTER_URL         the master the trial belongs to (absent: a local run)
//   COHORT_ALLOCATION_TOKEN   the credential of this run (allocation) of the trial: it may post
//                             only this allocation's logs, reports and exit, while it runs
//   OMP_NUM_THREADS, OPENBLAS_NUM_THREADS, MKL_NUM_THREADS, COHORT_NUM_THREADS
//                             compute threads per worker (kThreadVariables)
//
// An empty value counts as unset, in both directions. The launcher's topology variables
// (COHORT_RANK, COHORT_SIZE, COHORT_LOCAL_*, COHORT_CROSS_*, COHORT_CHIEF_ADDR,
// COHORT_RENDEZVOUS_PORT, COHORT_NETWORK_INTERFACE, ...) are per worker, not per trial: they are
// LaunchEnv's (wire/launch_env.h), written by cohort-launch and read by comm::TopologyFromEnv.
// Thread-compatible value type.
//
// Example:
//   WorkerEnv env;
//   env.run_dir = "/tmp/run";
//   env.hparams = Json{{"lr", 0.1}};
//   SubprocessOptions options{.argv = argv, .env = env.ToEnv()};
//   ...
//   COHORT_ASSIGN_OR_RETURN(WorkerEnv mine, WorkerEnv::FromProcessEnv());

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"

namespace cohort::wire {

using Json = nlohmann::json;

// The compute-thread variables, all set to one count (OpenMP, OpenBLAS, MKL, LibTorch's).
inline constexpr std::array<const char*, 4> kThreadVariables = {
    "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "COHORT_NUM_THREADS"};

struct WorkerEnv {
  std::string config_path;            // COHORT_CONFIG; empty: no config
  std::string run_dir;                // COHORT_RUN_DIR; empty: the reader's default
  std::optional<Json> hparams;        // COHORT_HPARAMS; nullopt: none given
  std::optional<int64_t> trial_seed;  // COHORT_TRIAL_SEED; nullopt: derived by the reader
  std::optional<int64_t> trial_id;    // COHORT_TRIAL_ID; nullopt: run by hand
  std::string latest_checkpoint;      // COHORT_LATEST_CHECKPOINT; empty: start fresh
  std::string
      warm_start;  // COHORT_WARM_START: a checkpoint directory whose weights start a fresh run
  std::vector<int64_t> searcher_ops;  // COHORT_SEARCHER_OPS; empty: the config's length
  std::string master_url;             // COHORT_MASTER_URL; empty: a local run
  std::string allocation_token;       // COHORT_ALLOCATION_TOKEN; empty: a local run
  std::optional<int> num_threads;     // kThreadVariables; nullopt: leave them alone

  // The variables as SubprocessOptions::env takes them: every trial-level variable is present,
  // with nullopt (unset) for an empty field, so nothing leaks from the starter's own
  // environment. The thread variables are present only when num_threads is set.
  std::map<std::string, std::optional<std::string>> ToEnv() const;

  // Reads the variables through `lookup` (name -> value, nullopt when unset). Malformed values
  // are InvalidArgument naming the variable and the value, e.g. "COHORT_SEARCHER_OPS must be
  // ascending lengths >= 1 separated by commas, got '20,10'". num_threads is read from
  // COHORT_NUM_THREADS.
  static absl::StatusOr<WorkerEnv> FromEnv(
      const std::function<std::optional<std::string>(const char*)>& lookup);
  // FromEnv over this process's environment.
  static absl::StatusOr<WorkerEnv> FromProcessEnv();
};

// "10,20,40" for COHORT_SEARCHER_OPS.
std::string FormatSearcherOps(const std::vector<int64_t>& ops);
// The inverse: ascending lengths >= 1; an empty text is no operations.
absl::StatusOr<std::vector<int64_t>> ParseSearcherOps(const std::string& text);

}  // namespace cohort::wire
