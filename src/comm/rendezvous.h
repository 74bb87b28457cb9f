#pragma once
// Rendezvous: one per worker process. Joins the job's rendezvous store (hosting it first when
// this process is rank 0 under a foreign launcher), identifies this worker to it by rank, and
// watches it for failure notices so that every communicator of the process learns within
// milliseconds when a peer dies (see TcpStore: a ranked client that drops is reported).
//
// Group: the members of one communicator (all ranks, the ranks of one machine, or the ranks
// with one local rank across machines), with the store namespace their keys live in.
//
// Thread-safety: Rendezvous is thread-safe.

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "cohort/comm/topology.h"
#include "comm/store.h"
#include "comm/tcp_store.h"

namespace cohort::comm {

class Rendezvous {
 public:
  // Connects to (or hosts, see Topology::host_store) the store at topology.chief_addr:
  // rendezvous_port within topology.rendezvous_timeout. A single-worker job (size 1) gets an
  // in-process store. The error names the address and suggests what to check.
  static absl::StatusOr<std::shared_ptr<Rendezvous>> Join(const Topology& topology);

  ~Rendezvous();

  const Topology& topology() const { return topology_; }
  const std::shared_ptr<Store>& store() const { return store_; }

  // OK until a peer failure is known; then Unavailable with the notice, which names the rank
  // ("rank 2 (10.0.0.5) disconnected ... died or was killed").
  absl::Status failure() const;

  // Records a failure seen by this process (for example a broken Gloo connection) so that the
  // process's other communicators stop waiting too. The first failure recorded wins.
  void ReportFailure(const std::string& notice);

  // Registers a callback run (on the watcher thread) when a failure becomes known; used by
  // transports that must wake blocked waiters. Runs at once if a failure is already known.
  void OnFailure(std::function<void()> callback);

 private:
  Rendezvous() = default;
  Topology topology_;
  std::unique_ptr<TcpStoreServer> server_;  // when this process hosts the store
  std::shared_ptr<Store> store_;
  std::unique_ptr<FailureWatcher> watcher_;
  std::atomic<bool> failed_{false};
  mutable std::mutex mu_;
  std::string failure_notice_;
  std::vector<std::function<void()>> callbacks_;
};

// The members of one communicator.
struct Group {
  std::shared_ptr<Rendezvous> rendezvous;
  // Store namespace for the group's keys; unique per group within the job.
  std::string prefix;
  int rank = 0;  // within the group
  int size = 1;
  // Global rank of each member, indexed by group rank (for error messages).
  std::vector<int> global_ranks;

  // A store view with this group's prefix.
  std::shared_ptr<Store> store() const;
  // "rank 3" (global) for group member `group_rank`.
  std::string Name(int group_rank) const;
};

}  // namespace cohort::comm
