#pragma once
// SlurmCluster: a real Slurm cluster inside one test, on loopback: its own munged (own key and
// socket), one slurmctld and one slurmd per node (n1..nN, all in the default partition
// `debug`), with a generated slurm.conf on free ports, everything under one temporary
// directory. Debian's slurm-wlm and munge (scripts/install.sh --test installs them); the
// recipe is docs/slurm.md's test setup. Test-only; not thread-safe (one test thread
// drives it).
//
// The daemons run in the foreground as this process's children (PR_SET_PDEATHSIG: they die
// with the test, however it ends). The destructor cancels every job, stops the daemons
// (SIGTERM, then SIGKILL) and kills whatever is left of this cluster's processes: job steps
// (slurmstepd), found by the working directory they inherit from their slurmd (beneath dir();
// their environment cannot be read, slurmstepd writes its process title over it), and the
// jobs' processes, found by this cluster's SLURM_CONF in their environment. Nothing of another
// cluster's is touched. Every wait has a deadline; none hangs.
//
// Timings seen on a 2-core machine: up and idle in about 0.5 s; a job's submission to its start
// 0.1-2 s; a killed node is "not responding" (state with '*') after 11-18 s and "down" after
// about 25 s, its jobs NODE_FAIL after about 28 s (SlurmdTimeout=10 here; 2 and 5 did no
// better: the controller's RPC to a dead node takes about 12 s to fail).
//
// Example:
//   COHORT_ASSIGN_OR_RETURN(auto cluster, SlurmCluster::Start(2));
//   SlurmClient slurm(cluster->options());

#include <sys/types.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/subprocess.h"
#include "common/testing/temp_dir.h"
#include "slurm/slurm_client.h"

namespace cohort::slurm::testing {

class SlurmCluster {
 public:
  // Brings the cluster up and waits (at most 30 s) until sinfo shows every node idle.
  // FailedPrecondition naming what is missing when Slurm's or munge's programs are not
  // installed ("run scripts/install.sh --test"); otherwise an error quoting the tails of the
  // daemons' logs.
  static absl::StatusOr<std::unique_ptr<SlurmCluster>> Start(int nodes, int cpus_per_node = 2);
  ~SlurmCluster();
  SlurmCluster(const SlurmCluster&) = delete;
  SlurmCluster& operator=(const SlurmCluster&) = delete;

  const std::string& dir() const { return dir_.path(); }
  std::string conf_path() const { return dir_.Join("slurm.conf"); }
  // The environment Slurm's tools need for this cluster: SLURM_CONF.
  std::map<std::string, std::string> env() const;
  // Options for a SlurmClient of this cluster (env(), 10 s per tool call).
  SlurmOptions options() const;
  int node_count() const { return static_cast<int>(slurmd_.size()); }
  static std::string NodeName(int k) { return "n" + std::to_string(k); }

  // As if node k (1-based) crashed: SIGKILL to its slurmd, then to its job steps (slurmstepd),
  // then to the processes of its jobs. Slurm notices on its own (see the timings above).
  absl::Status KillNode(int k);
  // Starts node k's slurmd again and waits (at most 30 s) until Slurm says the node is usable
  // (ReturnToService=2 brings a down node back when its slurmd registers).
  absl::Status RestartNode(int k);
  // Cancels every job of the cluster and waits (at most `timeout`) until none is live.
  absl::Status CancelAllJobs(absl::Duration timeout = absl::Seconds(15));
  // The last lines of every daemon's log, for a failure's message.
  std::string LogTails() const;

 private:
  SlurmCluster() = default;
  absl::Status Prepare(int nodes, int cpus_per_node);
  absl::Status StartMunge();
  absl::StatusOr<std::unique_ptr<Subprocess>> Launch(const std::string& name,
                                                     std::vector<std::string> argv,
                                                     const std::string& node);
  absl::Status StartSlurmd(int k);
  absl::Status WaitForNodes(absl::Duration timeout);
  // Node `node`'s slurmd's working directory, which its slurmstepd's inherit.
  std::string RunDir(const std::string& node) const;
  // SIGKILL to whatever is left of this cluster's processes: those working beneath dir() and
  // those with its SLURM_CONF in their environment (the jobs').
  void KillStragglers();

  testing_support::TempDir dir_{"slurm"};
  std::map<std::string, std::string> programs_;  // "slurmctld" -> its path
  std::unique_ptr<Subprocess> munged_;
  std::unique_ptr<Subprocess> slurmctld_;
  std::vector<std::unique_ptr<Subprocess>> slurmd_;  // node k at k-1; null while killed
};

}  // namespace cohort::slurm::testing
